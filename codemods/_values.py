"""Small facts about values that several rules need: literal None, literal strings, WORLD process
groups, and names narrowed to "not None" by an `assert` or an early exit.

Each answers only what the code says in plain sight (flow-insensitive where the scopes are, with
the one exception of narrowing, which reads the statements between a binding and a use). Anything
else is "unknown", and the rules then keep reporting.
"""

from __future__ import annotations

import ast

from migrate_fi.analysis import nodes
from migrate_fi.analysis.resolver import NameResolver
from migrate_fi.analysis.scopes import Scope
from migrate_fi.analysis.values import assigned_values, keeps_returns

__all__ = [
    "bound_function",
    "is_none",
    "is_world_group",
    "literal_string",
    "narrowed_not_none",
    "own_returns",
]

_WORLD = frozenset(
    {"torch.distributed.group.WORLD", "torch.distributed.distributed_c10d.GroupMember.WORLD"}
)
_DEPTH = 4


def bound_function(
    resolver: NameResolver, name: str, scope: Scope
) -> ast.FunctionDef | ast.Lambda | None:
    """The function ``name`` refers to from ``scope``, when it is bound once, by a def (not
    decorated, or only by decorators that keep what it returns: `torch.compile`,
    `functools.cache`...; any other may return anything) or to a lambda."""
    found = resolver.lookup(name, scope)
    if found is None:
        return None
    owner, bindings = found
    if len(bindings) != 1:
        return None
    if bindings[0].what == "assignment" and isinstance(bindings[0].value, ast.Lambda):
        return bindings[0].value
    if bindings[0].what != "def":
        return None
    for node in ast.walk(owner.node):
        if (
            isinstance(node, ast.FunctionDef)
            and node.name == name
            and node.lineno == bindings[0].line
            and all(keeps_returns(resolver, d, owner) for d in node.decorator_list)
        ):
            return node
    return None


def own_returns(function: ast.FunctionDef) -> list[ast.Return] | None:
    """The function's own ``return`` statements (not those of the functions and classes in
    it); None for a generator (what a call gives is not what it returns)."""
    returns: list[ast.Return] = []
    pending: list[ast.AST] = list(function.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue  # (their returns are their own)
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return None
        if isinstance(node, ast.Return):
            returns.append(node)
        pending.extend(ast.iter_child_nodes(node))
    return returns


def parameter_default(
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda, name: str
) -> ast.expr | None:
    """The default ``node`` gives its parameter ``name``; None where it has none."""
    a = node.args
    positional = [*a.posonlyargs, *a.args]
    for arg, default in zip(
        positional[len(positional) - len(a.defaults) :], a.defaults, strict=True
    ):
        if arg.arg == name:
            return default
    for arg, kw_default in zip(a.kwonlyargs, a.kw_defaults, strict=True):
        if arg.arg == name:
            return kw_default
    return None


def is_none(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _values(
    resolver: NameResolver, expr: ast.expr, scope: Scope
) -> list[tuple[ast.expr, Scope]] | None:
    """What a name may hold (every binding a plain assignment), or the expression itself."""
    if not isinstance(expr, ast.Name):
        return [(expr, scope)]
    return assigned_values(resolver, expr.id, scope)


def literal_string(
    resolver: NameResolver, expr: ast.expr, scope: Scope, depth: int = 0
) -> str | None:
    """The one string ``expr`` certainly is (a literal, or a name only ever assigned it)."""
    if isinstance(expr, ast.Constant):
        return expr.value if isinstance(expr.value, str) else None
    if depth >= _DEPTH:
        return None
    values = _values(resolver, expr, scope)
    if not values or values == [(expr, scope)]:
        return None
    found = {literal_string(resolver, v, s, depth + 1) for v, s in values}
    return found.pop() if len(found) == 1 else None


def is_world_group(resolver: NameResolver, expr: ast.expr, scope: Scope, depth: int = 0) -> bool:
    """``torch.distributed.group.WORLD`` (through any alias), or a name only ever assigned it."""
    if isinstance(expr, ast.Attribute) and expr.attr == "WORLD":
        return (
            bool(resolver.resolve(expr, scope).qualnames)
            and resolver.resolve(expr, scope).qualnames <= _WORLD
        )
    if depth >= _DEPTH or not isinstance(expr, ast.Name):
        return False
    values = _values(resolver, expr, scope)
    return (
        values is not None
        and bool(values)
        and all(is_world_group(resolver, v, s, depth + 1) for v, s in values)
    )


def _compares_to_none(test: ast.expr, name: str, op: type[ast.cmpop]) -> bool:
    """``name is None`` (``op`` Is) or ``name is not None`` (IsNot)."""
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == name
        and len(test.ops) == 1
        and isinstance(test.ops[0], op)
        and is_none(test.comparators[0])
    )


def _tests_not_none(test: ast.expr, name: str) -> bool:
    """``name is not None`` (or ``name``, or either as one operand of an ``and``)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(_tests_not_none(v, name) for v in test.values)
    if isinstance(test, ast.Name):
        return test.id == name
    return _compares_to_none(test, name, ast.IsNot)


def _tests_none(test: ast.expr, name: str) -> bool:
    """``name is None`` or ``not name`` (or either as one operand of an ``or``)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        return any(_tests_none(v, name) for v in test.values)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return isinstance(test.operand, ast.Name) and test.operand.id == name
    return _compares_to_none(test, name, ast.Is)


def _narrows(stmt: ast.stmt, name: str) -> bool:
    if isinstance(stmt, ast.Assert):
        return _tests_not_none(stmt.test, name)
    if isinstance(stmt, ast.If) and _tests_none(stmt.test, name) and nodes.exits(stmt.body):
        return True
    return (
        isinstance(stmt, ast.If) and _tests_not_none(stmt.test, name) and nodes.exits(stmt.orelse)
    )


def _binds(stmt: ast.stmt, name: str) -> bool:
    """The statement (at any depth) assigns ``name``."""
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store):
            return True
    return False


def _blocks(stmt: ast.stmt) -> list[tuple[list[ast.stmt], bool | None]]:
    """The statement lists inside a compound statement, each with what entering it says:
    True for the body of ``if name is not None:``, etc. (None: nothing; filled in by the caller)."""
    out: list[tuple[list[ast.stmt], bool | None]] = []
    for field in ("body", "orelse", "finalbody"):
        block = getattr(stmt, field, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            out.append((block, None))
    for handler in getattr(stmt, "handlers", ()):
        out.append((handler.body, None))
    return out


def narrowed_not_none(function: ast.AST, name: str, use: ast.AST) -> bool:
    """On the path of statements from ``function``'s body down to ``use``, after the last
    assignment of ``name`` before it: an ``assert name is not None``, an ``if name is None:``
    ending in ``raise``/``return``, or ``use`` inside ``if name is not None:``, guarantees that
    ``name`` is not None at ``use``."""
    line = getattr(use, "lineno", None)
    body: list[ast.stmt] | None = getattr(function, "body", None)
    if line is None or not isinstance(body, list):
        return False
    narrowed = False
    while body:
        container = None
        for stmt in body:
            if stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno):
                container = stmt
                break
            if stmt.lineno > line:
                break
            if _binds(stmt, name):
                narrowed = False
            if _narrows(stmt, name):
                narrowed = True
        if container is None:
            return narrowed
        inner = None
        for block, _ in _blocks(container):
            if block[0].lineno <= line <= (block[-1].end_lineno or block[-1].lineno):
                inner = block
                break
        if inner is None:
            return narrowed  # the use is in the statement's own header or expression
        if isinstance(container, ast.If):
            if inner is container.body and _tests_not_none(container.test, name):
                narrowed = True
            if inner is container.orelse and _tests_none(container.test, name):
                narrowed = True
        body = inner
    return narrowed
