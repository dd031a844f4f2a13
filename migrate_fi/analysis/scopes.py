"""Scopes and bindings of one module: the single `ast` pass every analysis shares.

`ScopeBuilder` walks a module once and records its scopes (module, class, function, lambda,
comprehension) with every binding of every name, flow-insensitively: a name bound twice in one
scope may be either. It follows Python's rules: function scopes shadow the module, class bodies
are not visible from methods, ``global``/``nonlocal`` redirect bindings, comprehensions have their
own scope, walrus targets bind in the enclosing function. It also collects every call (with the
scope it is evaluated in), every import statement, and the names of dicts changed in place.

What a name *refers to* is the resolver's job (`migrate_fi.analysis.resolver`); reading the values bound
to names is `migrate_fi.analysis.values`.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from migrate_fi.base.modules import absolute_module

__all__ = ["Binding", "DictWrite", "Scope", "ScopeBuilder", "dotted_name"]

# Methods that change a dict in place.
_MUTATORS = frozenset({"update", "pop", "popitem", "setdefault", "clear", "__setitem__"})


def _str_key(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def dotted_name(node: ast.expr) -> str | None:
    """``a.b.c`` for a chain of names and attributes; None for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted_name(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


# per node type: the method that visits it (None: nothing in it to visit)
_DISPATCH: dict[type, Callable[[Any, ast.AST], None] | None] = {}
_UNKNOWN: Any = object()  # (a type not looked up yet)
# the fields of a node type that may hold nodes (`_fields` less those that hold names)
_FIELDS: dict[type, tuple[str, ...]] = {}
# fields that hold a name, a number or a flag, never a node, in every node type
_NAME_FIELDS = frozenset(
    {"id", "attr", "arg", "module", "level", "is_async", "simple", "conversion",
     "kind", "type_comment", "ctx", "op"}
)  # fmt: skip


def _method(cls: type) -> Callable[[Any, ast.AST], None] | None:
    found: Callable[[Any, ast.AST], None] | None = None
    if issubclass(cls, ast.AST) and not issubclass(cls, ScopeBuilder._SKIP):
        found = getattr(ScopeBuilder, "visit_" + cls.__name__, ScopeBuilder.generic_visit)
    _DISPATCH[cls] = found
    return found


class Scope:
    __slots__ = (
        "attributes",
        "bindings",
        "declared_global",
        "declared_nonlocal",
        "kind",
        "node",
        "owner_class",
        "parent",
        "returns",
        "self_name",
        "stars",
    )

    def __init__(self, kind: str, parent: Scope | None, node: ast.AST) -> None:
        self.kind = kind  # "module", "class", "function", "comprehension"
        self.parent = parent
        self.node = node  # what opened it: the Module, ClassDef, FunctionDef, Lambda, comprehension
        self.bindings: dict[str, list[Binding]] = {}
        self.declared_global: set[str] = set()
        self.declared_nonlocal: set[str] = set()
        self.stars: list[tuple[str, int]] = []  # (module, line) of `from module import *`
        # A method's scope: its class's scope and the name of its first parameter (`self`).
        self.owner_class: Scope | None = None
        self.self_name: str | None = None
        # A class's scope: `self.<attr> = ...` assignments made in any of its methods.
        self.attributes: dict[str, list[Binding]] = {}
        # A function's scope: its own `return` statements (not those of the functions in it).
        self.returns: list[ast.Return] = []

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Scope({self.kind}, {sorted(self.bindings)})"


# Values through which a name may alias something the resolver can follow (a list, tuple or
# list comprehension: what its elements are, `x = [W(), W()]` then `x[0]`).
_ALIASABLE = (
    ast.Name,
    ast.Attribute,
    ast.IfExp,
    ast.Call,
    ast.Dict,
    ast.List,
    ast.Tuple,
    ast.ListComp,
    ast.DictComp,
    ast.Subscript,
)


@dataclass
class Binding:
    what: str  # "import", "def", "class", "parameter", "assignment", "None", ...
    line: int
    qualname: str | None = None  # imports (and module-level defs of a known module)
    value: ast.expr | None = None  # plain assignments: the value assigned (`None` included)
    scope: Scope | None = None  # where `value` is evaluated (a parameter: its annotation)
    # a parameter's annotation, or a variable's or attribute's (``x: T = v``, ``self.x: T``,
    # ``x: T`` in a class body: evaluated in ``scope``)
    annotation: ast.expr | None = None
    index: int | None = None  # a positional parameter's place (``self`` is 0)
    element_of: ast.expr | None = None  # ``for x in <expr>``: what it iterates (in ``scope``)
    default: ast.expr | None = None  # a parameter's default value (evaluated in ``scope``)
    # ``a, b = <expr>``: what is unpacked (in ``scope``) and the place taken (``b``: 1; after a
    # starred target, from the end: ``*_, z``: -1)
    unpacked: tuple[ast.expr, int] | None = None

    @property
    def alias_of(self) -> ast.expr | None:
        """``x = <expr>`` where ``<expr>`` may name something: resolved lazily in ``scope``."""
        return self.value if isinstance(self.value, _ALIASABLE) else None


class DictWrite(NamedTuple):
    """An in-place change of a name's value: ``d["k"] = v``, ``d.update(k=v)`` and
    ``d.setdefault("k", v)`` (key and value known), or anything else (``del d[k]``, ``d.pop(k)``,
    ``d.update(other)``, ``d[expr] = v``: key None)."""

    scope: Scope  # where it happens
    node: ast.AST  # the statement (assignments) or the call
    key: str | None
    value: ast.expr | None


class ScopeBuilder(ast.NodeVisitor):
    """One pass over a module: its scopes, calls, imports and dicts changed in place."""

    def __init__(self, tree: ast.Module, module_name: str | None, is_package: bool) -> None:
        self.module_name = module_name
        self.is_package = is_package
        self.module_scope = Scope("module", None, tree)
        self._every_scope = [self.module_scope]
        self._scope = self.module_scope
        # Every call in the file with the scope it is evaluated in, in source order.
        self.calls: list[tuple[ast.Call, Scope]] = []
        self.imports: list[ast.Import | ast.ImportFrom] = []  # every import statement, any depth
        # in-place changes by name: `kw["k"] = v`, `kw.update(...)`, `del kw[k]`
        self.dict_writes: dict[str, list[DictWrite]] = {}
        # the scope each def, lambda and class opens, by id of its node
        self.opened: dict[int, Scope] = {}
        self.comprehensions: dict[int, Scope] = {}  # and each comprehension
        # every name read, by name, with the scope it is read in
        self.loads: dict[str, list[tuple[ast.Name, Scope]]] = {}
        self._assigning = False  # visiting the target of a recorded `d["k"] = v`
        self.visit(tree)
        self.calls.sort(key=lambda item: (item[0].lineno, item[0].col_offset))

    def release(self) -> None:
        """Forget every binding. A binding refers to its scope, which holds it: without this,
        the cycle collector, not reference counting, frees the file's whole tree (about a fifth
        of a run's time on FlashInfer's own sources). Nothing may ask this builder afterwards."""
        for scope in self._every_scope:
            scope.bindings.clear()
            scope.attributes.clear()
        self._every_scope.clear()
        self.comprehensions.clear()
        self.opened.clear()
        self.loads.clear()
        self.calls.clear()
        self.imports.clear()
        self.dict_writes.clear()
        self.module_scope = self._scope = Scope(
            "module", None, ast.Module(body=[], type_ignores=[])
        )

    def lookup(self, name: str, scope: Scope) -> tuple[Scope, list[Binding]] | None:
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

    def _bind(self, name: str, binding: Binding) -> None:
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
        return absolute_module(module, level, self.module_name, self.is_package)

    def _own_qualname(self, name: str) -> str | None:
        """A module-level def/class is ``<this module>.<name>`` (so FlashInfer's own sources resolve)."""
        if self._scope is self.module_scope and self.module_name:
            return f"{self.module_name}.{name}"
        return None

    # --------------------------------------------------------------- visitors

    # A faster walk than ast.NodeVisitor's: the method and the fields that may hold nodes are
    # looked up once per node type, and leaves that can neither bind a name nor hold a call
    # (constants, load/store markers, operators, and fields that hold names, not nodes) are
    # never visited. `generic_visit` inlines the dispatch, once for a list field and once for a
    # node (one loop over both is 12% slower): one Python call per node visited, not two.
    _SKIP = (ast.Constant, ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)

    def visit(self, node: ast.AST) -> None:
        method = _DISPATCH.get(type(node), _UNKNOWN)
        if method is _UNKNOWN:
            method = _method(type(node))
        if method is not None:
            method(self, node)

    def generic_visit(self, node: ast.AST) -> None:
        cls = type(node)
        fields = _FIELDS.get(cls)
        if fields is None:
            fields = _FIELDS[cls] = tuple(f for f in cls._fields if f not in _NAME_FIELDS)
        dispatch = _DISPATCH
        for name in fields:
            value = getattr(node, name, None)
            if value is None:
                continue
            if type(value) is list:
                for item in value:
                    method = dispatch.get(type(item), _UNKNOWN)
                    if method is _UNKNOWN:
                        method = _method(type(item))
                    if method is not None:
                        method(self, item)
            else:
                method = dispatch.get(type(value), _UNKNOWN)
                if method is _UNKNOWN:
                    method = _method(type(value))
                if method is not None:
                    method(self, value)

    def visit_Import(self, node: ast.Import) -> None:
        self.imports.append(node)
        for alias in node.names:
            if alias.asname:
                self._bind(alias.asname, Binding("import", node.lineno, alias.name))
            else:
                top = alias.name.split(".")[0]
                self._bind(top, Binding("import", node.lineno, top))

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
            self._bind(bound, Binding("import", node.lineno, qual))

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
            self._bind(node.name, Binding("def", node.lineno, self._own_qualname(node.name)))
        outer = self._scope
        self._scope = Scope("function", outer, node)
        self._every_scope.append(self._scope)
        self.opened[id(node)] = self._scope
        first = [*args.posonlyargs, *args.args]
        if (
            outer.kind == "class"
            and first
            and not isinstance(node, ast.Lambda)
            and not any(dotted_name(d) == "staticmethod" for d in node.decorator_list)
        ):
            self._scope.owner_class = outer
            self._scope.self_name = first[0].arg
        positional = [*args.posonlyargs, *args.args]
        with_default = positional[len(positional) - len(args.defaults) :]
        defaults: dict[int, ast.expr] = {
            id(a): d for a, d in zip(with_default, args.defaults, strict=True)
        }
        defaults.update(
            (id(a), d)
            for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
            if d is not None
        )
        for a in [*positional, *args.kwonlyargs, args.vararg, args.kwarg]:
            if a is not None:
                index = next((i for i, p in enumerate(positional) if p is a), None)
                binding = Binding(
                    "parameter", a.lineno, None, None, outer, a.annotation, index,
                    default=defaults.get(id(a)),
                )  # fmt: skip
                self._bind(a.arg, binding)
        if isinstance(node, ast.Lambda):
            self.visit(node.body)
        else:
            for stmt in node.body:
                self.visit(stmt)
        self._scope = outer

    def visit_Return(self, node: ast.Return) -> None:
        self._scope.returns.append(node)
        self.generic_visit(node)

    visit_FunctionDef = _visit_function
    visit_AsyncFunctionDef = _visit_function
    visit_Lambda = _visit_function

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for expr in [*node.decorator_list, *node.bases, *[k.value for k in node.keywords]]:
            self.visit(expr)
        self._bind(node.name, Binding("class", node.lineno, self._own_qualname(node.name)))
        outer = self._scope
        self._scope = Scope("class", outer, node)
        self._every_scope.append(self._scope)
        self.opened[id(node)] = self._scope
        for stmt in node.body:
            self.visit(stmt)
        self._scope = outer

    def _visit_comprehension(
        self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp
    ) -> None:
        gens = node.generators
        self.visit(gens[0].iter)  # the first iterable is evaluated in the enclosing scope
        outer = self._scope
        self._scope = Scope("comprehension", outer, node)
        self._every_scope.append(self._scope)
        self.comprehensions[id(node)] = self._scope
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
            if not self._record_key_write(target, node, node.value):
                self._bind_target(target, node.value, node.lineno)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.visit(node.annotation)
        if node.value is not None and self._record_key_write(node.target, node, node.value):
            return
        self._bind_target(node.target, node.value, node.lineno, node.annotation)

    def _record_key_write(self, target: ast.expr, stmt: ast.stmt, value: ast.expr) -> bool:
        """``d["k"] = v``: a key and its value (True when ``target`` is such a subscript)."""
        key = _str_key(target.slice) if isinstance(target, ast.Subscript) else None
        if not (key and isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)):
            return False
        self._dict_write(target.value.id, stmt, key, value)
        self._assigning = True
        self.visit(target)
        self._assigning = False
        return True

    def _value_binding(
        self, value: ast.expr | None, line: int, annotation: ast.expr | None = None
    ) -> Binding:
        if value is None:
            return Binding("annotation", line, scope=self._scope, annotation=annotation)
        if isinstance(value, ast.Constant) and value.value is None:
            return Binding("None", line, value=value, scope=self._scope, annotation=annotation)
        return Binding("assignment", line, value=value, scope=self._scope, annotation=annotation)

    def _bind_target(
        self,
        target: ast.expr,
        value: ast.expr | None,
        line: int,
        annotation: ast.expr | None = None,
    ) -> None:
        if isinstance(target, ast.Name):
            self._bind(target.id, self._value_binding(value, line, annotation))
        elif (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and self._record_self_attribute(target, self._value_binding(value, line, annotation))
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
        elif isinstance(target, (ast.Tuple, ast.List)) and value is not None:
            self._bind_unpacked(target, value, line)
        else:
            self.visit(target)

    def _bind_unpacked(self, target: ast.Tuple | ast.List, value: ast.expr, line: int) -> None:
        """``a, self.b, *rest = <expr>``: each name (or attribute of ``self``) is the element
        at its place of what ``<expr>`` gives, which `NameResolver` reads where it can (a tuple
        that a function of the module returns); a starred or nested target is unknown."""
        stars = [i for i, e in enumerate(target.elts) if isinstance(e, ast.Starred)]
        star = stars[0] if len(stars) == 1 else None
        for i, element in enumerate(target.elts):
            if stars and (star is None or i == star):
                self.visit(element)
                continue
            place = i if star is None or i < star else i - len(target.elts)
            binding = Binding("assignment", line, scope=self._scope, unpacked=(value, place))
            if isinstance(element, ast.Name):
                self._bind(element.id, binding)
            elif (
                isinstance(element, ast.Attribute)
                and isinstance(element.value, ast.Name)
                and self._record_self_attribute(element, binding)
            ):
                self.visit(element.value)
            else:
                self.visit(element)

    def _record_self_attribute(self, target: ast.Attribute, binding: Binding) -> bool:
        """`self.attr = value` in a method (or a function nested in one)."""
        assert isinstance(target.value, ast.Name)
        found = self.lookup(target.value.id, self._scope)
        if found is None:
            return False
        owner, _ = found
        if owner.self_name != target.value.id or owner.owner_class is None:
            return False
        owner.owner_class.attributes.setdefault(target.attr, []).append(binding)
        return True

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        """``for x in <iterable>``: ``x`` is an element of it (a name target only)."""
        self.visit(node.iter)
        if isinstance(node.target, ast.Name):
            binding = Binding("loop variable", node.lineno, scope=self._scope, element_of=node.iter)
            self._bind(node.target.id, binding)
        else:
            self.visit(node.target)
        for stmt in [*node.body, *node.orelse]:
            self.visit(stmt)

    visit_AsyncFor = visit_For

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.visit(node.value)
        self._bind(node.target.id, Binding("walrus target", node.lineno))

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            self.loads.setdefault(node.id, []).append((node, self._scope))
        elif isinstance(node.ctx, ast.Store):
            self._bind(node.id, Binding("assignment", node.lineno))
        elif isinstance(node.ctx, ast.Del):
            # (nothing can be used through a deleted name: no other value for its uses)
            self._bind(node.id, Binding("None", node.lineno))

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.type is not None:
            self.visit(node.type)
        if node.name:
            self._bind(node.name, Binding("exception variable", node.lineno))
        for stmt in node.body:
            self.visit(stmt)

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        if node.pattern is not None:
            self.visit(node.pattern)
        if node.name:
            self._bind(node.name, Binding("match capture", node.lineno))

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        if node.name:
            self._bind(node.name, Binding("match capture", node.lineno))

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        self.generic_visit(node)
        if node.rest:
            self._bind(node.rest, Binding("match capture", node.lineno))

    def visit_Call(self, node: ast.Call) -> None:
        self.calls.append((node, self._scope))
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.attr in _MUTATORS
        ):
            name = func.value.id
            if func.attr == "update" and not node.args and all(k.arg for k in node.keywords):
                for kw in node.keywords:
                    self._dict_write(name, node, kw.arg, kw.value)
            elif func.attr == "setdefault" and len(node.args) == 2 and _str_key(node.args[0]):
                self._dict_write(name, node, _str_key(node.args[0]), node.args[1])
            else:
                self._dict_write(name, node, None, None)
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        # `d["k"] = v` is recorded by the assignment, which knows the value
        recorded = isinstance(node.ctx, ast.Store) and self._assigning and _str_key(node.slice)
        if (
            isinstance(node.ctx, (ast.Store, ast.Del))
            and isinstance(node.value, ast.Name)
            and not recorded
        ):
            self._dict_write(node.value.id, node, None, None)
        self.generic_visit(node)

    def _dict_write(
        self, name: str, node: ast.AST, key: str | None, value: ast.expr | None
    ) -> None:
        self.dict_writes.setdefault(name, []).append(DictWrite(self._scope, node, key, value))
