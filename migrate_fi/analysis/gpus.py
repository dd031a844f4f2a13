"""On which GPUs a call runs, read from the tests of the compute capability made before it.

Serving projects gate kernels by GPU: ``if torch.cuda.get_device_capability()[0] != 9: raise``,
``self.use_pool = sm_major != 9`` in ``__init__`` and ``if self.use_pool: raise`` in the method
that calls the kernel, vLLM's ``current_platform.is_device_capability(90)``, SGLang's
``is_sm100_supported()``. A change a release made on other GPUs does not touch such a call.

`reached_on` answers with a set of compute capabilities (`migrate_fi.base.gpus`): every GPU
unless a test the analysis reads says otherwise. What it reads, on the way from the call up to
the module:

- an ``if`` (or ``x if c else y``, or ``a and b``) the call is inside, and an ``assert``;
- a statement before the call, in the same block, ``if c: <ends in raise, return, break or
  continue>``: after it, ``c`` is false;
- in a method, a test at the top of its class's ``__init__`` that raises: no instance exists
  where it holds;
- the tests themselves: ``get_device_capability()`` (``[0]``, ``[1]``, ``.major``,
  ``.minor``, ``major * 10 + minor``, ``.to_int()``) compared with constants, also through a
  local, a module-level name or a ``self.`` attribute assigned once;
  ``get_device_properties(d).major``; vLLM's ``is_device_capability(N)``,
  ``has_device_capability(N)`` and ``is_device_capability_family(N)``; ``is_sm<NN>_supported()``
  (true only on major NN // 10; false anywhere, since they also test the CUDA version);
  ``not``, ``and``, ``or`` of them;
- ``f()`` of a function of the file (undecorated or cached): where its returns give a true or
  a false value; and, in a private function or method (``_name``) that no other file of the
  project names (the resolver's project search), where the file's calls of it run.

Anything else is a test that may go either way on any GPU: never a guess.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable
from typing import Any

from migrate_fi.analysis.nodes import COMPARE, exits, parents, path_to, tests_before
from migrate_fi.analysis.resolver import NameResolver
from migrate_fi.analysis.scopes import Scope
from migrate_fi.analysis.values import bound_values, keeps_returns
from migrate_fi.base.gpus import EVERY_GPU

__all__ = ["reached_on"]

_MAX_DEPTH = 6
_NONE: frozenset[int] = frozenset()

# what a test of the capability holds on each GPU: (GPUs where it may be true, where false)
Truth = tuple[frozenset[int], frozenset[int]]
_UNKNOWN: Truth = (EVERY_GPU, EVERY_GPU)

# a value computed from the capability: its value on each GPU (a number, a tuple)
Value = Callable[[int], object]

_ARITHMETIC: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
}
_SM_SUPPORTED = re.compile(r"_?is_sm(\d{2,3})_supported")


def reached_on(resolver: NameResolver, tree: ast.Module, node: ast.AST) -> frozenset[int]:
    """The compute capabilities of the GPUs on which ``node`` may run (`EVERY_GPU` where no
    test before it is read)."""
    reached = _Reader(resolver, tree).reached(node, frozenset())
    return reached if reached else EVERY_GPU  # (no GPU at all: a test misread, not a fact)


class _Reader:
    """The tests of one file, read for one question (a function's answer kept)."""

    def __init__(self, resolver: NameResolver, tree: ast.Module) -> None:
        self.resolver = resolver
        self.tree = tree
        # each node's parent, for the nodes on the way up from those asked of (`place`)
        self.up: dict[int, ast.AST] = {}
        self._whole = False  # (whether ``up`` is `parents` of the whole file: not changed)
        self.answers: dict[int, Truth] = {}  # a function's, by id of its def

    def place(self, node: ast.AST) -> None:
        """Learn the parents of ``node`` and of every node above it: found by going down to it
        (`path_to`), not by mapping the whole file (vLLM's `gdn_linear_attn.py`, 7,200 nodes:
        4-8 ms), unless its positions do not lead to it."""
        if self._whole or node is self.tree or id(node) in self.up:
            return
        found = path_to(self.tree, node)
        if found is None:
            self.up, self._whole = parents(self.tree), True
        else:
            self.up.update(found)

    def reached(self, node: ast.AST, calling: frozenset[int]) -> frozenset[int]:
        """Where ``node`` runs: the tests before it, its class's ``__init__``, and, in a
        private function or method (``_name``) that is only ever called in this file, where
        its calls run (``calling``: the functions on the way, not asked again)."""
        self.place(node)
        reached = EVERY_GPU
        for test, holds in tests_before(node, self.up):
            truth = self.truth(test, self.resolver.scope_at(test), 0)
            reached &= truth[0] if holds else truth[1]
        method = _method_of(node, self.up)
        if method is not None:
            reached &= _instances_on(self, method, self.up)
        function = _function_of(node, self.up)
        if function is not None and id(function) not in calling and len(calling) < 3:
            calls = _private_calls(self, function)
            if calls:
                inner = calling | {id(function)}
                reached &= frozenset().union(*(self.reached(c, inner) for c in calls))
        return reached

    def truth(self, test: ast.expr, scope: Scope, depth: int) -> Truth:
        return _truth(self, test, scope, depth)

    def answer(self, function: ast.FunctionDef, depth: int) -> Truth:
        """Where a call of ``function`` (a function of this file) may give a true value and
        where a false one: each ``return`` where it runs in the function; falling off its end
        gives None, false."""
        key = id(function)
        found = self.answers.get(key)
        if found is not None:
            return found
        self.answers[key] = _UNKNOWN  # (a function that calls itself: unknown)
        scope = self.resolver.scope_of(function)
        true, false = _NONE, _NONE
        if scope is None or any(
            isinstance(n, ast.Yield | ast.YieldFrom) for n in ast.walk(function)
        ):
            return _UNKNOWN  # (a generator's call gives a generator, whatever it returns)
        for ret in scope.returns:
            where = EVERY_GPU
            self.place(ret)
            for test, holds in tests_before(ret, self.up, stop=function):
                truth = self.truth(test, scope, depth + 1)
                where &= truth[0] if holds else truth[1]
            if ret.value is None:
                false |= where
                continue
            t, f = self.truth(ret.value, scope, depth + 1)
            true, false = true | (t & where), false | (f & where)
        if not exits(function.body):
            false = EVERY_GPU
        found = self.answers[key] = (true, false)
        return found


def _function_of(node: ast.AST, up: dict[int, ast.AST]) -> ast.FunctionDef | None:
    """The innermost def ``node`` is in."""
    parent = up.get(id(node))
    while parent is not None:
        if isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef):
            return parent  # type: ignore[return-value]
        parent = up.get(id(parent))
    return None


def _private_calls(reader: _Reader, function: ast.FunctionDef) -> list[ast.Call] | None:
    """Every call of ``function`` in this file, where it is private (``_name``, not a
    dunder), defined in a class body (called as ``self._name(...)``) or at the top of the
    module (``_name(...)``), never named otherwise (passed, stored, patched) and named in no
    other file of the project (a subclass elsewhere may call it); None where any of that does
    not hold or it is never called here."""
    from migrate_fi.analysis.nodes import called_by, of_type

    name = function.name
    if not name.startswith("_") or name.startswith("__"):
        return None
    # (a subclass or another module may call it too: only where no other file of the project
    # names it, as the resolver's project search says)
    only_here = reader.resolver.only_here
    if only_here is None or not only_here(name):
        return None
    owner = reader.up.get(id(function))
    calls_of = called_by(reader.tree)
    found: list[ast.Call] = []
    if isinstance(owner, ast.ClassDef):
        lo, hi = owner.lineno, owner.end_lineno or owner.lineno
        for attribute in of_type(reader.tree, ast.Attribute):
            if attribute.attr != name:
                continue
            call = calls_of.get(id(attribute))
            inside = lo <= attribute.lineno <= hi
            if not (inside and call is not None and isinstance(attribute.value, ast.Name)):
                return None  # (named otherwise, or from outside the class: not followed)
            if attribute.value.id not in ("self", "cls"):
                return None
            found.append(call)
    elif isinstance(owner, ast.Module):
        for named in of_type(reader.tree, ast.Name):
            if named.id != name:
                continue
            call = calls_of.get(id(named))
            if call is None:
                return None
            found.append(call)
    else:
        return None
    return found or None


def _method_of(node: ast.AST, up: dict[int, ast.AST]) -> ast.FunctionDef | None:
    """The method (a def in a class body) ``node`` is in, other than ``__init__``."""
    child, parent = node, up.get(id(node))
    while parent is not None:
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            if isinstance(parent, ast.ClassDef) and child.name != "__init__":
                return child  # type: ignore[return-value]
            return None
        child, parent = parent, up.get(id(parent))
    return None


def _instances_on(
    reader: _Reader, method: ast.FunctionDef, up: dict[int, ast.AST]
) -> frozenset[int]:
    """The GPUs on which an instance of the method's class can exist: those its ``__init__``
    does not refuse by a test at its top that raises (static and class methods: any)."""
    if any(
        isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod")
        for d in method.decorator_list
    ):
        return EVERY_GPU
    owner = up.get(id(method))
    init = next(
        (
            s
            for s in getattr(owner, "body", ())
            if isinstance(s, ast.FunctionDef) and s.name == "__init__"
        ),
        None,
    )
    if init is None:
        return EVERY_GPU
    scope = reader.resolver.scope_of(init)
    if scope is None:
        return EVERY_GPU
    on = EVERY_GPU
    for statement in init.body:
        if isinstance(statement, ast.If) and not statement.orelse:
            if isinstance(statement.body[-1], ast.Raise):
                on &= reader.truth(statement.test, scope, 0)[1]
        elif isinstance(statement, ast.Assert):
            on &= reader.truth(statement.test, scope, 0)[0]
    return on


def _truth(reader: _Reader, test: ast.expr, scope: Scope, depth: int) -> Truth:
    """Where ``test`` may be true and where it may be false."""
    if depth > _MAX_DEPTH:
        return _UNKNOWN
    if isinstance(test, ast.Constant):  # (`return False`: false on every GPU)
        return (EVERY_GPU, _NONE) if test.value else (_NONE, EVERY_GPU)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        true, false = _truth(reader, test.operand, scope, depth + 1)
        return false, true
    if isinstance(test, ast.BoolOp):
        parts = [_truth(reader, v, scope, depth + 1) for v in test.values]
        if isinstance(test.op, ast.And):
            true = EVERY_GPU
            for t, _ in parts:
                true &= t
            return true, frozenset().union(*(f for _, f in parts))
        false = EVERY_GPU
        for _, f in parts:
            false &= f
        return frozenset().union(*(t for t, _ in parts)), false
    if isinstance(test, ast.Compare):
        return _compared(reader.resolver, test, scope, depth)
    if isinstance(test, ast.Call):
        asked = _asked(test)
        if asked is _UNKNOWN:
            function = _module_function(reader, test, scope)
            if function is not None:
                return reader.answer(function, depth)
        return asked
    if isinstance(test, ast.Name | ast.Attribute):
        values = bound_values(reader.resolver, test, scope)
        if not values:
            return _UNKNOWN
        true, false = _NONE, _NONE
        for value, inner in values:
            if isinstance(value, tuple):
                return _UNKNOWN
            t, f = _truth(reader, value, inner, depth + 1)
            true, false = true | t, false | f
        return true, false
    return _UNKNOWN


def _compared(resolver: NameResolver, test: ast.Compare, scope: Scope, depth: int) -> Truth:
    """``a < b`` (each pair of a chain must hold) where a side is read from the capability."""
    sides = [test.left, *test.comparators]
    true = EVERY_GPU
    for left, op, right in zip(sides, test.ops, sides[1:], strict=False):
        a, b = _value(resolver, left, scope, depth), None
        if isinstance(op, ast.In | ast.NotIn):
            options = _members(right)
            if a is None or options is None:
                return _UNKNOWN
            if isinstance(op, ast.In):
                true &= frozenset(c for c in EVERY_GPU if a(c) in options)
            else:
                true &= frozenset(c for c in EVERY_GPU if a(c) not in options)
            continue
        compare = COMPARE.get(type(op))
        b = _value(resolver, right, scope, depth)
        if compare is None or a is None or b is None:
            return _UNKNOWN
        try:
            true &= frozenset(c for c in EVERY_GPU if compare(a(c), b(c)))
        except TypeError:
            return _UNKNOWN
    if len(test.ops) == 1:
        return true, EVERY_GPU - true
    return true, EVERY_GPU  # (a chain is false where any pair is: not tracked pair by pair)


def _module_function(reader: _Reader, call: ast.Call, scope: Scope) -> ast.FunctionDef | None:
    """The function of this module ``call`` calls with no arguments (``use_fi_prefill()``):
    a top-level def bound once, undecorated or only by decorators that keep what it returns
    (`functools.cache`: `migrate_fi.analysis.values.keeps_returns`)."""
    if not isinstance(call.func, ast.Name) or call.args or call.keywords:
        return None
    found = reader.resolver.lookup(call.func.id, scope)
    if found is None or found[0].kind != "module" or len(found[1]) != 1:
        return None
    if found[1][0].what != "def":
        return None
    for statement in reader.tree.body:
        if isinstance(statement, ast.FunctionDef) and statement.name == call.func.id:
            if all(keeps_returns(reader.resolver, d, found[0]) for d in statement.decorator_list):
                return statement
            return None
    return None


def _asked(call: ast.Call) -> Truth:
    """A call that asks about the capability by name (vLLM's platform, SGLang's helpers)."""
    name = _called_name(call.func)
    if name is None:
        return _UNKNOWN
    sm = _SM_SUPPORTED.fullmatch(name)
    if sm is not None and not call.args:
        major = int(sm.group(1)) // 10
        return frozenset(c for c in EVERY_GPU if c // 10 == major), EVERY_GPU
    if name not in ("is_device_capability", "has_device_capability", "is_device_capability_family"):
        return _UNKNOWN
    if len(call.args) != 1:
        return _UNKNOWN
    asked = _constant(call.args[0])
    if asked is None:
        return _UNKNOWN
    (value,) = asked
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, int) for v in value):
        at = value[0] * 10 + value[1]
    elif isinstance(value, int) and not isinstance(value, bool):
        at = value
    else:
        return _UNKNOWN
    if name == "is_device_capability":
        true = frozenset(c for c in EVERY_GPU if c == at)
    elif name == "has_device_capability":
        true = frozenset(c for c in EVERY_GPU if c >= at)
    else:
        true = frozenset(c for c in EVERY_GPU if c // 10 == at // 10)
    return true, EVERY_GPU - true


def _called_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _value(resolver: NameResolver, expr: ast.expr, scope: Scope, depth: int) -> Value | None:
    """``expr`` as a function of the GPU's capability (a constant is one too); None where it
    is not read from the capability or a constant."""
    if depth > _MAX_DEPTH:
        return None
    constant = _constant(expr)
    if constant is not None:
        return lambda _c: constant[0]
    if isinstance(expr, ast.Call):
        name = _called_name(expr.func)
        if name == "get_device_capability":
            return lambda c: (c // 10, c % 10)
        if name == "to_int" and isinstance(expr.func, ast.Attribute) and not expr.args:
            inner = _value(resolver, expr.func.value, scope, depth + 1)
            return _to_int(inner) if inner is not None else None
        return None
    if isinstance(expr, ast.Subscript):
        index = _constant(expr.slice)
        inner = _value(resolver, expr.value, scope, depth + 1)
        if inner is None or index is None or not isinstance(index[0], int):
            return None
        return _item(inner, index[0])
    if isinstance(expr, ast.BinOp):
        combine = _ARITHMETIC.get(type(expr.op))
        left = _value(resolver, expr.left, scope, depth + 1)
        right = _value(resolver, expr.right, scope, depth + 1)
        if combine is None or left is None or right is None:
            return None
        return _combined(combine, left, right)
    if isinstance(expr, ast.Attribute) and expr.attr in ("major", "minor"):
        place = 0 if expr.attr == "major" else 1
        base = expr.value
        if isinstance(base, ast.Call) and _called_name(base.func) == "get_device_properties":
            return _item(lambda c: (c // 10, c % 10), place)
        inner = _value(resolver, base, scope, depth + 1)
        return _item(inner, place) if inner is not None else None
    if isinstance(expr, ast.Name | ast.Attribute):
        found = bound_values(resolver, expr, scope, unpacked=True)
        if not found or len(found) != 1:
            return None
        ((value, inner_scope),) = found
        if isinstance(value, tuple):  # (an element of an unpacked value: its place)
            whole = _value(resolver, value[0], inner_scope, depth + 1)
            return _item(whole, value[1]) if whole is not None else None
        return _value(resolver, value, inner_scope, depth + 1)
    return None


def _item(value: Value, at: int) -> Value:
    def item(c: int) -> object:
        whole = value(c)
        return whole[at] if isinstance(whole, tuple) and -len(whole) <= at < len(whole) else None

    return item


def _to_int(value: Value) -> Value:
    def to_int(c: int) -> object:
        whole = value(c)
        if isinstance(whole, tuple) and len(whole) == 2:
            return whole[0] * 10 + whole[1]
        return None

    return to_int


def _combined(combine: Callable[[object, object], object], left: Value, right: Value) -> Value:
    def combined(c: int) -> object:
        try:
            return combine(left(c), right(c))
        except TypeError:
            return None

    return combined


def _constant(expr: ast.expr) -> tuple[object] | None:
    """``(value,)`` for a constant number or tuple of numbers; None for anything else."""
    try:
        value = ast.literal_eval(expr)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return (value,) if isinstance(value, int | tuple) else None


def _members(expr: ast.expr) -> set[object] | None:
    """The elements of a tuple, list or set of constants (the right side of ``in``)."""
    if not isinstance(expr, ast.Tuple | ast.List | ast.Set):
        return None
    found: set[object] = set()
    for element in expr.elts:
        constant = _constant(element)
        if constant is None:
            return None
        found.add(constant[0])
    return found
