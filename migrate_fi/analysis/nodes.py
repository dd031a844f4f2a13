"""One walk of a parsed module for every rule that looks at all of its nodes.

`ast.walk` over a whole module costs the same each time it is asked, and several rules (and
their helpers) ask it of the same module. `walk(tree)` walks a module once and keeps its nodes,
in `ast.walk`'s order; `of_type(tree, ast.Call)` keeps the nodes of a type, in the same order.
The few modules in use at once are kept (the file being analysed, the other files a caller
search reads), until `release` (the end of each file: its tree is then freed); subtrees are walked
with `ast.walk` as before.
"""

from __future__ import annotations

import ast
import bisect
import operator
from collections import deque
from collections.abc import Callable, Collection
from typing import Any, TypeVar

__all__ = [
    "COMPARE",
    "blocks",
    "called_by",
    "exits",
    "guards",
    "of_type",
    "on_lines",
    "parents",
    "release",
    "tests_before",
    "walk",
]

N = TypeVar("N", bound=ast.AST)

# what each comparison operator a test may use does, on the values it compares
COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}

_KEPT = 16
_Entry = tuple[ast.AST, list[ast.AST], dict[object, object]]
# id(tree) -> (the tree, kept so that its id stays its own; its nodes; what was derived of them)
_walked: dict[int, _Entry] = {}


def _entry(tree: ast.AST) -> _Entry:
    found = _walked.get(id(tree))
    if found is not None and found[0] is tree:
        return found
    entry: _Entry = (tree, _all_nodes(tree), {})
    if len(_walked) >= _KEPT:
        del _walked[next(iter(_walked))]  # the oldest
    _walked[id(tree)] = entry
    return entry


def _all_nodes(tree: ast.AST) -> list[ast.AST]:
    """``list(ast.walk(tree))``, the same nodes in the same (breadth-first) order, 1.5x faster:
    no generators, the list is its own queue."""
    out = [tree]
    at = 0
    while at < len(out):
        node = out[at]
        at += 1
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, ast.AST):
                out.append(value)
            elif isinstance(value, list):
                out.extend(item for item in value if isinstance(item, ast.AST))
    return out


def release() -> None:
    """Forget every module walked (the pipeline calls it when a file is done)."""
    _walked.clear()


def walk(tree: ast.AST) -> list[ast.AST]:
    """Every node of ``tree``, in `ast.walk` order (do not change the list)."""
    return _entry(tree)[1]


def of_type(tree: ast.AST, kind: type[N]) -> list[N]:
    """The nodes of ``tree`` that are instances of ``kind``, in `ast.walk` order."""
    _, nodes, derived = _entry(tree)
    found = derived.get(kind)
    if found is None:
        found = derived[kind] = [n for n in nodes if isinstance(n, kind)]
    return found  # type: ignore[return-value]


def parents(tree: ast.AST) -> dict[int, ast.AST]:
    """Each node's parent, by id of the node (do not change the dict)."""
    _, nodes, derived = _entry(tree)
    found = derived.get("parents")
    if found is None:
        built: dict[int, ast.AST] = {}
        for node in nodes:
            for child in ast.iter_child_nodes(node):
                built[id(child)] = node
        found = derived["parents"] = built
    return found  # type: ignore[return-value]


def path_to(root: ast.AST, node: ast.AST) -> dict[int, ast.AST] | None:
    """The parents of the nodes from ``node`` up to ``root`` (by id of each node, as
    `parents` gives them), found by going down from ``root`` only into what holds ``node``'s
    place: a few nodes visited, where `parents` maps a whole tree. None when ``node`` is not
    under ``root``."""
    line, col = getattr(node, "lineno", None), getattr(node, "col_offset", None)
    if line is None or col is None:
        return None
    where: tuple[int, int] = (line, col)
    found: dict[int, ast.AST] = {}

    def holds(child: ast.AST) -> bool:
        start: int | None = getattr(child, "lineno", None)
        if start is None:
            return True  # (no place of its own: `arguments`, `comprehension`, `match_case`)
        first = (start, getattr(child, "col_offset", 0))
        for decorator in getattr(child, "decorator_list", ()):  # (above its `def` line)
            first = min(first, (decorator.lineno, decorator.col_offset))
        end: int = getattr(child, "end_lineno", None) or start
        end_col: int = getattr(child, "end_col_offset", None) or 0
        return first <= where <= (end, end_col)

    def down(current: ast.AST) -> bool:
        for child in ast.iter_child_nodes(current):
            if child is node or (holds(child) and down(child)):
                found[id(child)] = current
                return True
        return False

    return found if down(root) else None


def called_by(tree: ast.AST) -> dict[int, ast.Call]:
    """The call each callee expression is the ``func`` of, by id of the expression (cheaper
    than `parents` when that is all a rule asks of a node's parent; do not change the dict)."""
    _, _, derived = _entry(tree)
    found = derived.get("called by")
    if found is None:
        found = derived["called by"] = {id(c.func): c for c in of_type(tree, ast.Call)}
    return found  # type: ignore[return-value]


def on_lines(tree: ast.AST, lines: Collection[int]) -> list[ast.AST]:
    """The nodes of ``tree`` whose source spans one of ``lines``, in `ast.walk`'s order (the
    subtrees that span none are not visited: in a large file, most of it). A def's or class's
    span starts at its first decorator (its own line is that of `def`); inside an f-string,
    every node is kept (the positions there are not trusted)."""
    ordered = sorted(lines)
    out: list[ast.AST] = []
    pending: deque[tuple[ast.AST, bool]] = deque([(tree, False)])
    while pending:
        node, whole = pending.popleft()
        first = getattr(node, "lineno", None)
        if first is not None and not whole:
            for decorator in getattr(node, "decorator_list", ()):
                first = min(first, decorator.lineno)
            last = getattr(node, "end_lineno", None) or first
            at = bisect.bisect_left(ordered, first)  # (the first of the lines from ``first``)
            if at == len(ordered) or ordered[at] > last:
                continue
        out.append(node)
        whole = whole or isinstance(node, ast.JoinedStr)
        pending.extend((child, whole) for child in ast.iter_child_nodes(node))
    return out


_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")  # (fields that hold statements)


def blocks(tree: ast.Module) -> list[ast.AST]:
    """Every node of ``tree`` that holds statements (a compound statement, an ``except``
    clause, a ``case``), the module first; expressions, which hold none, are not visited."""
    out: list[ast.AST] = [tree]
    at = 0
    while at < len(out):
        node = out[at]
        at += 1
        for name in _BLOCKS:
            value = getattr(node, name, None)
            if isinstance(value, list):
                out.extend(n for n in value if isinstance(n, ast.AST) and _holds_statements(n))
    return out


def inner_statements(stmt: ast.stmt) -> list[ast.stmt]:
    """The statements directly inside the compound statement ``stmt``, those of its ``except``
    clauses and ``case``s included (the fields `blocks` walks)."""
    out: list[ast.stmt] = []
    for name in _BLOCKS:
        for part in getattr(stmt, name, None) or ():
            out += [part] if isinstance(part, ast.stmt) else part.body
    return out


def exits(block: list[ast.stmt]) -> bool:
    """Whether a block never falls through to the statement after it: its last statement
    raises, returns, breaks or continues."""
    return bool(block) and isinstance(block[-1], ast.Raise | ast.Return | ast.Break | ast.Continue)


_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)


def tests_before(
    node: ast.AST, up: dict[int, ast.AST], stop: ast.AST | None = None
) -> list[tuple[ast.expr, bool]]:
    """The tests that hold (True) or fail (False) wherever ``node`` runs (up to ``stop``): the
    ``if``, ``x if c else y``, ``while``, ``a and b``, ``case ... if c:`` and comprehension ``if``
    it is inside, and the statements before it in each block on the way up (`guards`)."""
    out: list[tuple[ast.expr, bool]] = []
    child, parent = node, up.get(id(node))
    while parent is not None and child is not stop:
        if isinstance(parent, ast.If | ast.IfExp | ast.While) and child is not parent.test:
            body = parent.body if isinstance(parent.body, list) else [parent.body]
            out.append((parent.test, any(child is s for s in body)))
        elif isinstance(parent, ast.BoolOp) and isinstance(child, ast.expr):
            before = parent.values[: next(i for i, v in enumerate(parent.values) if v is child)]
            out.extend((v, isinstance(parent.op, ast.And)) for v in before)
        elif isinstance(parent, ast.match_case) and parent.guard is not None:
            if any(child is s for s in parent.body):
                out.append((parent.guard, True))  # (`case p if c:`: its body runs where c holds)
        elif isinstance(parent, _COMPREHENSIONS) and not isinstance(child, ast.comprehension):
            # (the element of `[f(x) for x in xs if c]` is made where each `if` holds)
            out.extend((test, True) for gen in parent.generators for test in gen.ifs)
        if isinstance(child, ast.stmt):
            out.extend(guards(parent, child))
        child, parent = parent, up.get(id(parent))
    return out


def guards(parent: ast.AST, statement: ast.stmt) -> list[tuple[ast.expr, bool]]:
    """What the statements before ``statement`` in its block leave true or false after them."""
    for field in ("body", "orelse", "finalbody"):
        block = getattr(parent, field, None)
        if isinstance(block, list) and any(s is statement for s in block):
            break
    else:
        return []
    out: list[tuple[ast.expr, bool]] = []
    for earlier in block[: next(i for i, s in enumerate(block) if s is statement)]:
        if isinstance(earlier, ast.Assert):
            out.append((earlier.test, True))
        elif isinstance(earlier, ast.If):
            body_ends, else_ends = exits(earlier.body), exits(earlier.orelse)
            if body_ends and not else_ends:
                out.append((earlier.test, False))
            elif else_ends and not body_ends:
                out.append((earlier.test, True))
    return out


def _holds_statements(node: ast.AST) -> bool:
    return any(isinstance(getattr(node, name, None), list) for name in _BLOCKS)
