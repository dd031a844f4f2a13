"""Names a module serves through a module-level ``__getattr__`` (PEP 562), read with `ast`.

FlashInfer uses it for lazy re-exports and for deprecation shims::

    def __getattr__(name):
        if name == "CuteDslNvfp4Runner":          # a deprecated alias
            warnings.warn(...)
            return CuteDslRunner
        if name in _SWA_LAZY_EXPORTS:             # names of a constant set, from a submodule
            from . import _swa
            return getattr(_swa, name)
        module_name = _LAZY_EXPORTS.get(name)     # a constant dict: name -> module
        ...
        raise AttributeError(name)

`served_names` returns each name it serves, with what it resolves to when that can be read
(``None`` when not), and whether the hook may serve names it does not list (then nothing can be
said to be missing from the module).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

__all__ = ["Served", "served_names"]


@dataclass
class Served:
    names: dict[str, str | None] = field(default_factory=dict)  # name -> target path or None
    open: bool = False  # may serve names it does not list


def _collection(node: ast.expr | None) -> dict[str, object] | None:
    """String members of a literal collection (or a dict's keys, with their values)."""
    if node is None:
        return None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) == 1:
        if node.func.id in ("frozenset", "set", "tuple", "list"):
            return _collection(node.args[0])
        return None
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        out: dict[str, object] = {}
        for e in node.elts:
            if not (isinstance(e, ast.Constant) and isinstance(e.value, str)):
                return None
            out[e.value] = None
        return out
    if isinstance(node, ast.Dict):
        out = {}
        for k, v in zip(node.keys, node.values, strict=True):
            if not (isinstance(k, ast.Constant) and isinstance(k.value, str)):
                return None
            out[k.value] = _literal(v)
        return out
    return None


def _literal(node: ast.expr) -> object:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


class _Reader:
    def __init__(
        self,
        fn: ast.FunctionDef,
        constants: Mapping[str, ast.expr],
        resolve: Callable[[str | None, int], str | None],
        binding: Callable[[str], str | None],
    ) -> None:
        self.fn = fn
        self.param = fn.args.args[0].arg if fn.args.args else "name"
        self.constants = constants
        self.resolve = resolve  # (module, level) -> absolute module
        self.binding = binding  # module-level name -> target path
        self.served = Served()

    # -------------------------------------------------------------- names

    def _is_param(self, node: ast.expr) -> bool:
        return isinstance(node, ast.Name) and node.id == self.param

    def _tested(self, test: ast.expr) -> tuple[dict[str, object], bool] | None:
        """The names an ``if`` test admits, and whether the test is negated (``not in``)."""
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
            merged: dict[str, object] = {}
            for value in test.values:
                found = self._tested(value)
                if found is None or found[1]:
                    return None
                merged.update(found[0])
            return merged, False
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
            return None
        left, op, right = test.left, test.ops[0], test.comparators[0]
        if not self._is_param(left):
            return None
        if isinstance(op, ast.Eq) and isinstance(right, ast.Constant):
            return ({right.value: None}, False) if isinstance(right.value, str) else None
        if isinstance(op, (ast.In, ast.NotIn)):
            members = self._constant(right)
            return (members, isinstance(op, ast.NotIn)) if members is not None else None
        return None

    def _constant(self, node: ast.expr, depth: int = 0) -> dict[str, object] | None:
        if depth > 8:
            return None
        if isinstance(node, ast.Name) and node.id in self.constants:
            return self._constant(self.constants[node.id], depth + 1)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            # (`frozenset({...}) | _OTHER_EXPORTS`: 0.7.4's decode module)
            left = self._constant(node.left, depth + 1)
            right = self._constant(node.right, depth + 1)
            return None if left is None or right is None else {**left, **right}
        return _collection(node)

    def _lookup_of(self, node: ast.expr) -> dict[str, object] | None:
        """``C.get(name)`` or ``C[name]`` with a constant dict C: its items."""
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and node.args
            and self._is_param(node.args[0])
        ):
            return self._constant(node.func.value)
        if isinstance(node, ast.Subscript) and self._is_param(node.slice):
            return self._constant(node.value)
        return None

    # ------------------------------------------------------------- targets

    def _module_of_import(self, body: list[ast.stmt], alias: str) -> str | None:
        for stmt in ast.walk(ast.Module(body=body, type_ignores=[])):
            if isinstance(stmt, ast.ImportFrom):
                base = self.resolve(stmt.module, stmt.level)
                for a in stmt.names:
                    if (a.asname or a.name) == alias and base is not None:
                        return f"{base}.{a.name}"
            elif isinstance(stmt, ast.Import):
                for a in stmt.names:
                    if (a.asname or a.name.split(".")[0]) == alias:
                        return a.name
        return self.binding(alias)

    def _import_module_arg(self, call: ast.expr) -> str | None:
        """``importlib.import_module("x", __name__)`` / ``import_module(f"{__name__}.x")``."""
        if not (isinstance(call, ast.Call) and call.args):
            return None
        func = call.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name != "import_module":
            return None
        arg = call.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            text = arg.value
            level = len(text) - len(text.lstrip("."))
            return self.resolve(text[level:] or None, level) if level else text
        if isinstance(arg, ast.JoinedStr) and len(arg.values) == 2:
            head, tail = arg.values
            if (
                isinstance(head, ast.FormattedValue)
                and isinstance(head.value, ast.Name)
                and head.value.id == "__name__"
                and isinstance(tail, ast.Constant)
                and isinstance(tail.value, str)
                and tail.value.startswith(".")
            ):
                return self.resolve(tail.value[1:], 1)
        return None

    def _targets(self, body: list[ast.stmt], names: dict[str, object]) -> dict[str, str | None]:
        """What each of ``names`` resolves to in a branch ``body``."""
        out: dict[str, str | None] = dict.fromkeys(names)
        for node in ast.walk(ast.Module(body=body, type_ignores=[])):
            if isinstance(node, ast.Return) and isinstance(node.value, ast.Name):
                target = self.binding(node.value.id)
                if target is not None and len(names) == 1:
                    out = dict.fromkeys(names, target)
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            if node.func.id == "getattr" and len(node.args) == 2 and self._is_param(node.args[1]):
                holder = node.args[0]
                module = self._import_module_arg(holder)
                if module is None and isinstance(holder, ast.Name):
                    module = self._module_of_import(body, holder.id)
                if module is not None:
                    out = {n: f"{module}.{n}" for n in names}
        for name, value in names.items():
            if isinstance(value, str) and value.startswith("."):  # {"name": ".module"}
                level = len(value) - len(value.lstrip("."))
                module = self.resolve(value[level:] or None, level)
                out[name] = f"{module}.{name}" if module else None
            elif (
                isinstance(value, tuple)
                and len(value) == 2
                and all(isinstance(v, str) for v in value)
            ):
                mod, attr = value  # {"name": (".module", "attr")}
                level = len(mod) - len(mod.lstrip("."))
                module = self.resolve(mod[level:] or None, level) if level else mod
                out[name] = f"{module}.{attr}" if module else None
        return out

    # ------------------------------------------------------------------ body

    def read(self) -> Served:
        body = list(self.fn.body)
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]
        closed = False
        skip = -1  # (a statement read with the one before it)
        for i, stmt in enumerate(body):
            if i == skip:
                continue
            if isinstance(stmt, ast.Raise):
                closed = True
                break
            if isinstance(stmt, ast.If):
                tested = self._tested(stmt.test)
                if tested is not None:
                    names, negated = tested
                    if negated:
                        # `if name not in C: raise` guards everything after it
                        if stmt.body and isinstance(stmt.body[-1], ast.Raise):
                            self.served.names.update(self._targets(body[i + 1 :], names))
                            closed = True
                            break
                        break
                    self.served.names.update(self._targets(stmt.body, names))
                    continue
                if _always_raises(stmt.body) and not stmt.orelse:
                    continue  # `if name.startswith("__"): raise`
                break
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
                items = self._lookup_of(stmt.value)
                if items is not None:
                    after = body[i + 1] if i + 1 < len(body) else None
                    if _found_then_returns(after, stmt):
                        # `m = C.get(name)`, `if m is not None: return ...`: the hook goes on
                        assert isinstance(after, ast.If)
                        self.served.names.update(self._targets(after.body, items))
                        skip = i + 1
                        continue
                    # `m = C.get(name)`, then `if m is None: raise`
                    self.served.names.update(self._targets(body[i + 1 :], items))
                    closed = True
                    break
                continue
            if isinstance(stmt, ast.Try):
                items = next(
                    (
                        self._lookup_of(s.value)
                        for s in stmt.body
                        if isinstance(s, (ast.Assign, ast.AnnAssign)) and s.value is not None
                    ),
                    None,
                )
                if items is not None and all(_always_raises(h.body) for h in stmt.handlers):
                    self.served.names.update(self._targets(body[i:], items))
                    closed = True
                    break
                break
            if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Expr)):
                continue
            break
        self.served.open = not closed
        return self.served


def _found_then_returns(stmt: ast.stmt | None, lookup: ast.Assign | ast.AnnAssign) -> bool:
    """``if m is not None: ... return ...`` (or ``if m:``) right after ``m = C.get(name)``,
    with nothing else: the names of C are served there, and the hook goes on for the others."""
    target = lookup.targets[0] if isinstance(lookup, ast.Assign) else lookup.target
    if not (
        isinstance(stmt, ast.If)
        and not stmt.orelse
        and stmt.body
        and isinstance(stmt.body[-1], ast.Return)
        and isinstance(target, ast.Name)
    ):
        return False
    test = stmt.test
    if isinstance(test, ast.Name):
        return test.id == target.id
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == target.id
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.IsNot)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    )


def _always_raises(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], ast.Raise)


def served_names(
    fn: ast.FunctionDef,
    constants: Mapping[str, ast.expr],
    resolve: Callable[[str | None, int], str | None],
    binding: Callable[[str], str | None],
) -> Served:
    """Read a module-level ``__getattr__``. ``constants`` are the module's assignments by name,
    ``resolve`` turns a (possibly relative) module into an absolute one, ``binding`` gives the
    target of a module-level name."""
    return _Reader(fn, constants, resolve, binding).read()
