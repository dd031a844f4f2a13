"""Name resolution shared by every codemod: what may an expression in this file refer to?

Built on Python's `ast` (not LibCST) so that `check` never needs LibCST. One pass over a module
builds its scopes (module, class, function, lambda, comprehension) with every binding of every
name, flow-insensitively: a name bound twice in one scope may be either. Then
``resolve(expr, scope)`` answers with the *candidates* for ``expr``: fully qualified names where the
binding is an import (or an alias of one), and opaque candidates where it is a ``def``, a parameter,
an assignment of some other value, and so on.

The rules, chosen so that a codemod never rewrites something that may not be FlashInfer's:
- Imports in any form: ``import a.b``, ``import a.b as x``, ``from a import b as x``, relative imports
  (resolved against the file's own module path), imports inside functions and try/except.
- Aliases: ``x = flashinfer.fp4_quantize`` (also ``a = b = ...`` and ``x = A if c else B``), and
  modules imported by call: ``fi = pytest.importorskip("flashinfer")``, ``importlib.import_module``.
- Python's scoping: function scopes shadow the module, class bodies are not visible from methods,
  ``global``/``nonlocal`` redirect bindings, comprehensions have their own scope.
- A binding to the literal ``None`` (``except ImportError: fp4_quantize = None``) is not an alternative:
  nothing can be called through it, so it never makes a call ambiguous on its own.
- ``from m import *`` supplies ``m.<name>`` for names the module does not bind explicitly.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

__all__ = [
    "Candidate",
    "NameResolver",
    "Resolution",
    "Scope",
    "dotted_name",
    "module_name_for_path",
]


@dataclass(frozen=True)
class Candidate:
    """One thing a name may be bound to."""

    qualname: str | None  # fully qualified name for imports and their aliases; None when opaque
    line: int
    what: str  # for messages: "import", "def", "parameter", "assignment", ...

    def describe(self) -> str:
        target = f" of {self.qualname}" if self.qualname else ""
        return f"{self.what}{target} at line {self.line}"


@dataclass(frozen=True)
class Resolution:
    candidates: tuple[Candidate, ...] = ()

    @property
    def qualnames(self) -> frozenset[str]:
        return frozenset(c.qualname for c in self.candidates if c.qualname is not None)

    def match(self, targets: frozenset[str] | set[str]) -> tuple[str | None, str | None]:
        """Match against a set of qualified names.

        Returns ``(target, None)`` when every candidate is one of ``targets`` (all the same API),
        ``(None, reason)`` when some candidate is a target and another is not (ambiguous), and
        ``(None, None)`` when no candidate is a target.
        """
        hits = [c for c in self.candidates if c.qualname in targets]
        if not hits:
            return None, None
        others = [c for c in self.candidates if c.qualname not in targets]
        if others:
            return None, "may also be bound to something else: " + ", ".join(
                c.describe() for c in others
            )
        return hits[0].qualname, None


# Methods that change a dict in place.
_MUTATORS = frozenset({"update", "pop", "popitem", "setdefault", "clear", "__setitem__"})

# Calls that return a module by name.
_IMPORTERS = frozenset({"pytest.importorskip", "importlib.import_module"})


def dotted_name(node: ast.expr) -> str | None:
    """``a.b.c`` for a chain of names and attributes; None for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted_name(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _is_importer_call(value: ast.expr) -> bool:
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, (ast.Name, ast.Attribute))
        and len(value.args) >= 1
        and isinstance(value.args[0], ast.Constant)
        and isinstance(value.args[0].value, str)
    )


def _skip(_self: object, _node: ast.AST) -> None:
    return None


_DISPATCH: dict[type, object] = {}


class Scope:
    __slots__ = (
        "attributes",
        "bindings",
        "declared_global",
        "declared_nonlocal",
        "kind",
        "owner_class",
        "parent",
        "self_name",
        "stars",
    )

    def __init__(self, kind: str, parent: Scope | None) -> None:
        self.kind = kind  # "module", "class", "function", "comprehension"
        self.parent = parent
        self.bindings: dict[str, list[_Binding]] = {}
        self.declared_global: set[str] = set()
        self.declared_nonlocal: set[str] = set()
        self.stars: list[tuple[str, int]] = []  # (module, line) of `from module import *`
        # A method's scope: its class's scope and the name of its first parameter (`self`).
        self.owner_class: Scope | None = None
        self.self_name: str | None = None
        # A class's scope: `self.<attr> = ...` assignments made in any of its methods.
        self.attributes: dict[str, list[_Binding]] = {}

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Scope({self.kind}, {sorted(self.bindings)})"


@dataclass
class _Binding:
    what: str
    line: int
    qualname: str | None = None  # imports
    alias_of: ast.expr | None = None  # `x = <expr>` aliases, resolved lazily in `scope`
    scope: Scope | None = None


def module_name_for_path(parts: tuple[str, ...]) -> tuple[str | None, bool]:
    """Module name and whether it is a package, from the path parts that lie inside packages.

    ``parts`` are the path components from the top-most folder that has an ``__init__.py`` down to
    the file, e.g. ``("flashinfer", "quantization", "fp4_quantization.py")``.
    """
    if not parts:
        return None, False
    *dirs, filename = parts
    stem = filename[:-3] if filename.endswith(".py") else filename
    if stem == "__init__":
        return (".".join(dirs) or None), True
    return ".".join([*dirs, stem]), False


class NameResolver(ast.NodeVisitor):
    """Scopes and bindings of one module. Build once per file; every codemod shares it."""

    def __init__(
        self,
        tree: ast.Module,
        module_name: str | None = None,
        is_package: bool = False,
        project_aliases: Mapping[str, str] | None = None,
    ) -> None:
        self.module_name = module_name
        # Names other modules of the same project bind to FlashInfer:
        # {"myproj.quant.q": "flashinfer.fp4_quantize"} (see `exports`).
        self.project_aliases = project_aliases or {}
        # name -> [(module, target)], for imports whose module name is longer than the one the
        # exporting file knows itself by (namespace packages have no `__init__.py` to count from)
        self._aliases_by_name: dict[str, list[tuple[str, str]]] = {}
        for key, target in self.project_aliases.items():
            module, _, name = key.rpartition(".")
            self._aliases_by_name.setdefault(name, []).append((module, target))
        self.is_package = is_package
        self.module_scope = Scope("module", None)
        self._scope = self.module_scope
        # Every call in the file with the scope it is evaluated in, in source order.
        self.calls: list[tuple[ast.Call, Scope]] = []
        self.imports: list[ast.Import | ast.ImportFrom] = []  # every import statement, any depth
        # names of dicts changed in place anywhere in the file: `kw[k] = v`, `kw.update(...)`
        self._mutated: set[str] = set()
        self._resolved: dict[int, tuple[ast.expr, Resolution]] = {}
        self._names: dict[tuple[int, str], list[Candidate]] = {}
        self.visit(tree)
        self.calls.sort(key=lambda item: (item[0].lineno, item[0].col_offset))

    # ----------------------------------------------------------------- queries

    def resolve(self, expr: ast.expr, scope: Scope) -> Resolution:
        """Cached per node: every codemod asks about the same calls."""
        key = id(expr)
        cached = self._resolved.get(key)
        if cached is None or cached[0] is not expr:
            cached = (expr, Resolution(tuple(self._resolve(expr, scope, frozenset()))))
            self._resolved[key] = cached
        return cached[1]

    def iter_calls(self) -> Iterator[tuple[ast.Call, Scope]]:
        return iter(self.calls)

    def exports(self, prefix: str = "flashinfer") -> dict[str, str]:
        """Module-level names of this module that are bound to ``prefix``'s API, and nothing
        else: ``{"<this module>.<name>": "<qualified name>"}``. Other modules importing them
        resolve through it (`project_aliases`). A def wrapping FlashInfer is not one of them."""
        if not self.module_name:
            return {}
        out = {}
        for name in self.module_scope.bindings:
            quals = self._resolve_name(name, self.module_scope, frozenset())
            targets = {c.qualname for c in quals}
            if len(targets) == 1:
                (target,) = targets
                if target and (target == prefix or target.startswith(prefix + ".")):
                    out[f"{self.module_name}.{name}"] = target
        return out

    def _project(self, qualname: str | None) -> str | None:
        """Follow the project's own re-exports of FlashInfer names."""
        for _ in range(8):
            if qualname is None or not self.project_aliases:
                return qualname
            target = self.project_aliases.get(qualname) or self._by_suffix(qualname)
            if target is None:
                return qualname
            qualname = target
        return qualname

    def _by_suffix(self, qualname: str) -> str | None:
        """``pkg.sub.mod.name`` matches an export ``mod.name`` (or ``sub.mod.name``) when exactly
        one target fits."""
        module, _, name = qualname.rpartition(".")
        targets = {
            target
            for exporting, target in self._aliases_by_name.get(name, ())
            if module.endswith("." + exporting)
        }
        return targets.pop() if len(targets) == 1 else None

    # ------------------------------------------------------------- resolution

    def _resolve(
        self, expr: ast.expr, scope: Scope, seen: frozenset[tuple[int, str]]
    ) -> list[Candidate]:
        if isinstance(expr, ast.Name):
            return self._resolve_name(expr.id, scope, seen)
        if isinstance(expr, ast.Attribute):
            attribute = self._self_attribute(expr, scope, seen)
            if attribute is not None:
                return attribute
            out = []
            for cand in self._resolve(expr.value, scope, seen):
                if cand.qualname is None:
                    out.append(cand)
                else:
                    qual = self._project(f"{cand.qualname}.{expr.attr}")
                    out.append(Candidate(qual, cand.line, cand.what))
            return out
        if isinstance(expr, ast.IfExp):
            return self._resolve(expr.body, scope, seen) + self._resolve(expr.orelse, scope, seen)
        if isinstance(expr, ast.Call):
            funcs = self._resolve(expr.func, scope, seen)
            names = {c.qualname for c in funcs}
            if names and names <= _IMPORTERS and _is_importer_call(expr):
                # `pytest.importorskip("flashinfer")`, `importlib.import_module("flashinfer.comm")`
                return [Candidate(expr.args[0].value, expr.lineno, "import")]  # type: ignore[attr-defined]
            # what a call returns: `X()` stands for "an instance of X" (or X's result)
            return [
                Candidate(f"{c.qualname}()" if c.qualname else None, c.line, c.what) for c in funcs
            ]
        line = getattr(expr, "lineno", 0)
        return [Candidate(None, line, "expression")]

    def _resolve_name(
        self, name: str, scope: Scope, seen: frozenset[tuple[int, str]]
    ) -> list[Candidate]:
        found = self._lookup(name, scope)
        if found is None:
            return []  # a builtin or an undefined name: nothing we know
        owner, bindings = found
        key = (id(owner), name)
        if key in seen:
            return [Candidate(None, bindings[0].line if bindings else 0, "circular alias")]
        if not seen and key in self._names:  # the scopes are final: a name resolves one way
            return self._names[key]
        out = self._resolve_bindings(name, owner, bindings, seen | {key})
        if not seen:
            self._names[key] = out
        return out

    def _resolve_bindings(
        self, name: str, owner: Scope, bindings: list[_Binding], seen: frozenset[tuple[int, str]]
    ) -> list[Candidate]:
        out: list[Candidate] = []
        for b in bindings:
            if b.what == "None":
                continue
            if b.alias_of is not None:
                assert b.scope is not None
                out.extend(self._resolve(b.alias_of, b.scope, seen))
            else:
                out.append(Candidate(self._project(b.qualname), b.line, b.what))
        if not bindings and owner.stars:
            out.extend(Candidate(f"{mod}.{name}", line, "star import") for mod, line in owner.stars)
        return out

    def _self_attribute(
        self, expr: ast.Attribute, scope: Scope, seen: frozenset[tuple[int, str]]
    ) -> list[Candidate] | None:
        """``self.attr`` inside a method: what the class's methods assign to ``self.attr``."""
        if not isinstance(expr.value, ast.Name):
            return None
        found = self._lookup(expr.value.id, scope)
        if found is None:
            return None
        owner, _ = found
        if owner.self_name != expr.value.id or owner.owner_class is None:
            return None
        bindings = owner.owner_class.attributes.get(expr.attr)
        if not bindings:
            return None
        key = (id(owner.owner_class), "self." + expr.attr)
        if key in seen:
            return [Candidate(None, bindings[0].line, "circular alias")]
        out: list[Candidate] = []
        for b in bindings:
            if b.what == "None":
                continue
            if b.alias_of is not None and b.scope is not None:
                out.extend(self._resolve(b.alias_of, b.scope, seen | {key}))
            else:
                out.append(Candidate(b.qualname, b.line, b.what))
        return out

    def _lookup(self, name: str, scope: Scope) -> tuple[Scope, list[_Binding]] | None:
        s: Scope | None = scope
        if name in scope.declared_global:
            s = self.module_scope
        first = True
        while s is not None:
            if (first or s.kind != "class") and name in s.bindings:
                return s, s.bindings[name]
            if s.kind == "module" and s.stars:
                return s, []
            first = False
            s = s.parent
        return None

    # ---------------------------------------------------------------- binding

    def _bind(self, name: str, binding: _Binding) -> None:
        scope = self._scope
        # Walrus targets inside a comprehension bind in the enclosing non-comprehension scope.
        if binding.what == "walrus target":
            while scope.kind == "comprehension" and scope.parent is not None:
                scope = scope.parent
        if name in scope.declared_global:
            scope = self.module_scope
        elif name in scope.declared_nonlocal:
            parent = scope.parent
            while parent is not None and (parent.kind == "class" or name not in parent.bindings):
                if parent.kind == "module":
                    break
                parent = parent.parent
            if parent is not None and parent.kind != "module":
                scope = parent
        scope.bindings.setdefault(name, []).append(binding)

    def absolute_module(self, module: str | None, level: int) -> str | None:
        if level == 0:
            return module
        if self.module_name is None:
            return None
        parts = self.module_name.split(".")
        if not self.is_package:
            parts = parts[:-1]
        if level > 1:
            if level - 1 > len(parts):
                return None
            parts = parts[: len(parts) - (level - 1)]
        if module:
            parts = [*parts, module]
        return ".".join(parts) or None

    def _own_qualname(self, name: str) -> str | None:
        """A module-level def/class is ``<this module>.<name>`` (so FlashInfer's own sources resolve)."""
        if self._scope is self.module_scope and self.module_name:
            return f"{self.module_name}.{name}"
        return None

    # --------------------------------------------------------------- visitors

    # A faster walk than ast.NodeVisitor's: dispatch cached per node type, and leaves that can
    # neither bind a name nor hold a call (constants, load/store markers, operators) skipped.
    _SKIP = (ast.Constant, ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)

    def visit(self, node: ast.AST) -> None:
        cls = type(node)
        method = _DISPATCH.get(cls)
        if method is None:
            if issubclass(cls, self._SKIP):
                method = _skip
            else:
                method = getattr(type(self), "visit_" + cls.__name__, NameResolver.generic_visit)
            _DISPATCH[cls] = method
        method(self, node)

    def generic_visit(self, node: ast.AST) -> None:
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST):
                        self.visit(item)
            elif isinstance(value, ast.AST):
                self.visit(value)

    def visit_Import(self, node: ast.Import) -> None:
        self.imports.append(node)
        for alias in node.names:
            if alias.asname:
                self._bind(alias.asname, _Binding("import", node.lineno, alias.name))
            else:
                top = alias.name.split(".")[0]
                self._bind(top, _Binding("import", node.lineno, top))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        self.imports.append(node)
        module = self.absolute_module(node.module, node.level)
        for alias in node.names:
            if alias.name == "*":
                if module is not None:
                    self._scope.stars.append((module, node.lineno))
                continue
            bound = alias.asname or alias.name
            qual = f"{module}.{alias.name}" if module is not None else None
            self._bind(bound, _Binding("import", node.lineno, qual))

    def visit_Global(self, node: ast.Global) -> None:
        self._scope.declared_global.update(node.names)

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        self._scope.declared_nonlocal.update(node.names)

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        args = node.args
        for default in [*args.defaults, *[d for d in args.kw_defaults if d is not None]]:
            self.visit(default)
        if not isinstance(node, ast.Lambda):
            for deco in node.decorator_list:
                self.visit(deco)
            for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
                if a is not None and a.annotation is not None:
                    self.visit(a.annotation)
            if node.returns is not None:
                self.visit(node.returns)
            self._bind(node.name, _Binding("def", node.lineno, self._own_qualname(node.name)))
        outer = self._scope
        self._scope = Scope("function", outer)
        first = [*args.posonlyargs, *args.args]
        if (
            outer.kind == "class"
            and first
            and not isinstance(node, ast.Lambda)
            and not any(dotted_name(d) == "staticmethod" for d in node.decorator_list)
        ):
            self._scope.owner_class = outer
            self._scope.self_name = first[0].arg
        for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
            if a is not None:
                self._bind(a.arg, _Binding("parameter", a.lineno))
        if isinstance(node, ast.Lambda):
            self.visit(node.body)
        else:
            for stmt in node.body:
                self.visit(stmt)
        self._scope = outer

    visit_FunctionDef = _visit_function
    visit_AsyncFunctionDef = _visit_function
    visit_Lambda = _visit_function

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for expr in [*node.decorator_list, *node.bases, *[k.value for k in node.keywords]]:
            self.visit(expr)
        self._bind(node.name, _Binding("class", node.lineno, self._own_qualname(node.name)))
        outer = self._scope
        self._scope = Scope("class", outer)
        for stmt in node.body:
            self.visit(stmt)
        self._scope = outer

    def _visit_comprehension(
        self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp
    ) -> None:
        gens = node.generators
        self.visit(gens[0].iter)  # the first iterable is evaluated in the enclosing scope
        outer = self._scope
        self._scope = Scope("comprehension", outer)
        for i, gen in enumerate(gens):
            if i:
                self.visit(gen.iter)
            self.visit(gen.target)
            for cond in gen.ifs:
                self.visit(cond)
        if isinstance(node, ast.DictComp):
            self.visit(node.key)
            self.visit(node.value)
        else:
            self.visit(node.elt)
        self._scope = outer

    visit_ListComp = _visit_comprehension
    visit_SetComp = _visit_comprehension
    visit_GeneratorExp = _visit_comprehension
    visit_DictComp = _visit_comprehension

    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        for target in node.targets:
            self._bind_target(target, node.value, node.lineno)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.visit(node.annotation)
        if node.value is not None:
            self.visit(node.value)
        self._bind_target(node.target, node.value, node.lineno)

    def _value_binding(self, value: ast.expr | None, line: int) -> _Binding:
        if value is None:
            return _Binding("annotation", line)
        if isinstance(value, ast.Constant) and value.value is None:
            return _Binding("None", line)
        if isinstance(value, (ast.Name, ast.Attribute, ast.IfExp, ast.Call, ast.Dict)):
            return _Binding("assignment", line, alias_of=value, scope=self._scope)
        return _Binding("assignment", line)

    def _bind_target(self, target: ast.expr, value: ast.expr | None, line: int) -> None:
        if isinstance(target, ast.Name):
            self._bind(target.id, self._value_binding(value, line))
        elif (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and self._record_self_attribute(target, value, line)
        ):
            self.visit(target.value)
        elif (
            isinstance(target, (ast.Tuple, ast.List))
            and isinstance(value, (ast.Tuple, ast.List))
            and len(target.elts) == len(value.elts)
            and not any(isinstance(e, ast.Starred) for e in target.elts + value.elts)
        ):
            for t, v in zip(target.elts, value.elts, strict=True):
                self._bind_target(t, v, line)
        else:
            self.visit(target)

    def _record_self_attribute(
        self, target: ast.Attribute, value: ast.expr | None, line: int
    ) -> bool:
        """`self.attr = value` in a method (or a function nested in one)."""
        assert isinstance(target.value, ast.Name)
        found = self._lookup(target.value.id, self._scope)
        if found is None:
            return False
        owner, _ = found
        if owner.self_name != target.value.id or owner.owner_class is None:
            return False
        owner.owner_class.attributes.setdefault(target.attr, []).append(
            self._value_binding(value, line)
        )
        return True

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.visit(node.value)
        self._bind(node.target.id, _Binding("walrus target", node.lineno))

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self._bind(node.id, _Binding("assignment", node.lineno))

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.type is not None:
            self.visit(node.type)
        if node.name:
            self._bind(node.name, _Binding("exception variable", node.lineno))
        for stmt in node.body:
            self.visit(stmt)

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        if node.pattern is not None:
            self.visit(node.pattern)
        if node.name:
            self._bind(node.name, _Binding("match capture", node.lineno))

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        if node.name:
            self._bind(node.name, _Binding("match capture", node.lineno))

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        self.generic_visit(node)
        if node.rest:
            self._bind(node.rest, _Binding("match capture", node.lineno))

    def visit_Call(self, node: ast.Call) -> None:
        self.calls.append((node, self._scope))
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.attr in _MUTATORS
        ):
            self._mutated.add(func.value.id)
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if isinstance(node.ctx, (ast.Store, ast.Del)) and isinstance(node.value, ast.Name):
            self._mutated.add(node.value.id)
        self.generic_visit(node)

    def dict_items(
        self, expr: ast.expr, scope: Scope, depth: int = 0
    ) -> dict[str, ast.expr] | None:
        """The keys and values of a dict built in plain sight: ``{"k": v}``, ``dict(k=v)``, or a
        local name bound once to one of those and never changed in place. None when unknown."""
        if depth > 4:
            return None
        if isinstance(expr, ast.Dict):
            out: dict[str, ast.expr] = {}
            for key, value in zip(expr.keys, expr.values, strict=True):
                if key is None:  # `{**other}`
                    inner = self.dict_items(value, scope, depth + 1)
                    if inner is None:
                        return None
                    out.update(inner)
                elif isinstance(key, ast.Constant) and isinstance(key.value, str):
                    out[key.value] = value
                else:
                    return None
            return out
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name):
            if expr.func.id != "dict" or self._lookup("dict", scope) is not None or expr.args:
                return None  # not the builtin, or built from an iterable
            out = {}
            for kw in expr.keywords:
                if kw.arg is None:
                    inner = self.dict_items(kw.value, scope, depth + 1)
                    if inner is None:
                        return None
                    out.update(inner)
                else:
                    out[kw.arg] = kw.value
            return out
        if isinstance(expr, ast.Name):
            assigned = self.assigned_values(expr.id, scope)
            if assigned is None or len(assigned) != 1 or expr.id in self._mutated:
                return None
            value, value_scope = assigned[0]
            return self.dict_items(value, value_scope, depth + 1)
        return None

    def assigned_values(
        self, name: str, scope: Scope, only_in: Scope | None = None
    ) -> list[tuple[ast.expr, Scope]] | None:
        """The value every binding of ``name`` (seen from ``scope``) assigns, with the scope it
        is evaluated in; None when a binding is not a plain assignment of a value (a parameter,
        an import, a loop variable...), or, with ``only_in``, the name lives in another scope."""
        found = self._lookup(name, scope)
        if found is None:
            return None
        owner, bindings = found
        if only_in is not None and owner is not only_in:
            return None
        values = [(b.alias_of, b.scope) for b in bindings if b.alias_of is not None and b.scope]
        if not values or len(values) != len(bindings):
            return None
        return values


@dataclass
class CallArgs:
    """The argument structure of a call, as the binding rules see it."""

    positional: list[ast.expr] = field(default_factory=list)  # plain positional arguments, in order
    starred: list[ast.Starred] = field(default_factory=list)  # `*args`
    keywords: dict[str, ast.keyword] = field(default_factory=dict)
    double_starred: list[ast.expr] = field(default_factory=list)  # `**kwargs`
    # keys of `**{...}`, `**dict(...)` or `**kw` (a local dict built once and never changed)
    unpacked: dict[str, ast.expr] = field(default_factory=dict)
    opaque_kwargs: bool = False  # some `**x` whose keys cannot be known

    @classmethod
    def of(
        cls, call: ast.Call, resolver: NameResolver | None = None, scope: Scope | None = None
    ) -> CallArgs:
        out = cls()
        for arg in call.args:
            if isinstance(arg, ast.Starred):
                out.starred.append(arg)
            elif not out.starred:
                out.positional.append(arg)
            else:  # a positional argument after *args: its index is unknown too
                out.starred.append(ast.Starred(value=arg, ctx=ast.Load()))
        for kw in call.keywords:
            if kw.arg is None:
                out.double_starred.append(kw.value)
                keys = (
                    resolver.dict_items(kw.value, scope)
                    if resolver is not None and scope is not None
                    else None
                )
                if keys is None:
                    out.opaque_kwargs = True
                else:
                    out.unpacked.update(keys)
            else:
                out.keywords[kw.arg] = kw
        return out

    def passed(self, name: str) -> ast.expr | None:
        """The value passed for ``name`` by keyword, directly or through a readable ``**dict``."""
        if name in self.keywords:
            return self.keywords[name].value
        return self.unpacked.get(name)

    def keyword_names(self) -> set[str]:
        return set(self.keywords) | set(self.unpacked)
