"""What may an expression in a file refer to? Name resolution shared by every rule.

Built on Python's `ast` (not LibCST) so that `check` never needs LibCST, over the scopes of
`migrate_fi.analysis.scopes`. ``resolve(expr, scope)`` answers with the *candidates* for ``expr``: fully
qualified names where the binding is an import (or an alias of one), and opaque candidates where it
is a ``def``, a parameter, an assignment of some other value, and so on.

The rules, chosen so that a rule never rewrites something that may not be FlashInfer's:
- Imports in any form: ``import a.b``, ``import a.b as x``, ``from a import b as x``, relative imports
  (resolved against the file's own module path), imports inside functions and try/except.
- Aliases: ``x = flashinfer.fp4_quantize`` (also ``a = b = ...`` and ``x = A if c else B``), and
  modules imported by call: ``fi = pytest.importorskip("flashinfer")``, ``importlib.import_module``.
- Instances: ``w = Wrapper(...)`` resolves to ``<Wrapper>()``, and ``self.w`` in a method to what
  the class's methods assign to ``self.w``.
- A binding to the literal ``None`` (``except ImportError: fp4_quantize = None``) is not an alternative:
  nothing can be called through it, so it never makes a call ambiguous on its own.
- ``from m import *`` supplies ``m.<name>`` for names the module does not bind explicitly.
- The project's own re-exports (``project_aliases``): module B importing a FlashInfer name from
  the project's module A resolves to FlashInfer's name.
- ``isinstance`` tests that hold where a name is read narrow what it may be (`_narrowed`).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import NamedTuple

from migrate_fi.analysis import nodes
from migrate_fi.analysis.scopes import Binding, DictWrite, Scope, ScopeBuilder
from migrate_fi.base.modules import in_flashinfer

__all__ = ["Candidate", "NameResolver", "ProjectAliases", "Resolution"]


class Candidate(NamedTuple):
    """One thing a name may be bound to."""

    qualname: str | None  # fully qualified name for imports and their aliases; None when opaque
    line: int
    what: str  # for messages: "import", "def", "parameter", "assignment", ...

    def describe(self) -> str:
        target = f" of {self.qualname}" if self.qualname else ""
        return f"{self.what}{target} at line {self.line}"


class Resolution(NamedTuple):
    candidates: tuple[Candidate, ...] = ()

    @property
    def qualnames(self) -> frozenset[str]:
        return frozenset(c.qualname for c in self.candidates if c.qualname is not None)


# Calls that return a module by name.
_IMPORTERS = frozenset({"pytest.importorskip", "importlib.import_module"})


def _is_importer_call(value: ast.expr) -> bool:
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, (ast.Name, ast.Attribute))
        and len(value.args) >= 1
        and isinstance(value.args[0], ast.Constant)
        and isinstance(value.args[0].value, str)
    )


_OWN = frozenset({"def", "class"})  # bindings named ``<this module>.<name>``


def _arms(expr: ast.expr) -> list[ast.expr]:
    """The values a conditional expression may give, literal Nones left out (``x if c else
    None`` is x or nothing usable); any other expression is its own one arm."""
    if isinstance(expr, ast.IfExp):
        return _arms(expr.body) + _arms(expr.orelse)
    if isinstance(expr, ast.Constant) and expr.value is None:
        return []
    return [expr]


class ProjectAliases:
    """The project's own re-exports of FlashInfer names (``{"myproj.quant.q":
    "flashinfer.fp4_quantize"}``), as a resolver follows them; the only way they reach what it
    answers (`NameResolver.asked`)."""

    def __init__(self, aliases: Mapping[str, str]) -> None:
        self.aliases = aliases
        # name -> [(module, target)], for imports whose module name is longer than the one the
        # exporting file knows itself by (namespace packages have no `__init__.py` to count from)
        self._by_name: dict[str, list[tuple[str, str]]] = {}
        for key, target in aliases.items():
            module, _, name = key.rpartition(".")
            self._by_name.setdefault(name, []).append((module, target))
        self._followed: dict[str, str] = {}  # (``aliases`` does not change meanwhile)

    def follow(self, qualname: str) -> str:
        """What ``qualname`` names once the re-exports are followed (itself if none)."""
        if not self.aliases:
            return qualname
        found = self._followed.get(qualname)
        if found is None:
            found = self._followed[qualname] = self._follow(qualname)
        return found

    def _follow(self, qualname: str) -> str:
        for _ in range(8):
            target = self.aliases.get(qualname) or self._by_suffix(qualname)
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
            for exporting, target in self._by_name.get(name, ())
            if module.endswith("." + exporting)
        }
        return targets.pop() if len(targets) == 1 else None


class NameResolver:
    """Scopes and bindings of one module, and what names refer to. Build once per file; every
    rule shares it."""

    def __init__(
        self,
        tree: ast.Module,
        module_name: str | None = None,
        is_package: bool = False,
        project_aliases: Mapping[str, str] | None = None,
    ) -> None:
        self.tree = tree
        self.module_name = module_name
        self.is_package = is_package
        # Names other modules of the same project bind to FlashInfer:
        # {"myproj.quant.q": "flashinfer.fp4_quantize"} (see `exports`).
        self.project_aliases = ProjectAliases(project_aliases or {})
        self.scopes = ScopeBuilder(tree, module_name, is_package)
        self.module_scope = self.scopes.module_scope
        self.calls = self.scopes.calls  # every call with the scope it is evaluated in
        self.imports = self.scopes.imports  # every import statement, any depth
        self._resolved: dict[int, tuple[ast.expr, Resolution]] = {}
        # analyses of this module that helpers derive from it, computed once for every rule
        # that asks (`calls.callee_calls`): keyed by the helper's name and arguments
        self.derived: dict[tuple[object, ...], object] = {}
        # every qualified name looked up among the project's re-exports: where re-exports added
        # later follow each of them as before, this resolver answers as before
        # (`migrate_fi.run.reexports.unaffected`)
        self.asked: set[str] = set()
        self._names: dict[tuple[int, str], list[Candidate]] = {}
        # whether no other file of the project names a module-level function of this module
        # (so that its calls here are all of them): set by whoever can search the project
        # (`migrate_fi.codemods._callers.named_only_in`); None: never certain
        self.only_here: Callable[[str], bool] | None = None
        self._lazy_helpers: dict[int, tuple[int, int]] | None = None  # (`_helpers`)
        self._defs: dict[int, ast.FunctionDef] | None = None  # (`_top_defs`)
        self._classes: dict[str, ast.ClassDef] | None = None  # (`_inherited`)
        self._returns: dict[int, list[Candidate] | None] = {}  # (`_returned`, by function)
        # (`_narrowed`: the isinstance tests of each name, with the scope each is evaluated in)
        self._tested: dict[str, dict[int, Scope]] | None = None
        # (`_stores`: the attributes this file assigns, by name; None: it may set any)
        self._stored: dict[str, list[ast.Attribute]] | None = None
        self._stores_read = False
        self._closed_classes: dict[int, bool] = {}  # (`_closed`, by id of the class's scope)

    def release(self) -> None:
        """Done with this file: its tree and scopes are freed at once (`ScopeBuilder.release`).
        Nothing may ask this resolver afterwards."""
        self.scopes.release()
        self._resolved.clear()
        self.derived.clear()
        self._names.clear()
        self._lazy_helpers = None
        self._defs = None
        self._classes = None
        self._returns.clear()
        self._tested = None
        # (the tree and what points into it: a resolver kept a moment longer, by the loop that
        # releases it, must not keep the file's whole tree alive)
        self.tree = ast.Module(body=[], type_ignores=[])
        self.calls = []
        self.imports = []
        self.module_scope = Scope("module", None, self.tree)

    def lookup(self, name: str, scope: Scope) -> tuple[Scope, list[Binding]] | None:
        """The scope that binds ``name`` as seen from ``scope``, with its bindings."""
        return self.scopes.lookup(name, scope)

    def self_class(self, expr: ast.Attribute, scope: Scope) -> Scope | None:
        """For ``self.<attr>`` in a method (or a function or comprehension inside one), the
        scope of the method's class, whose ``attributes`` hold what its methods assign to
        ``self.<attr>``; None for any other attribute."""
        if not isinstance(expr.value, ast.Name):
            return None
        found = self.lookup(expr.value.id, scope)
        if found is None:
            return None
        owner, _ = found
        if owner.self_name != expr.value.id:
            return None
        return owner.owner_class

    def absolute_module(self, module: str | None, level: int) -> str | None:
        return self.scopes.absolute_module(module, level)

    def scope_of(self, node: ast.AST) -> Scope | None:
        """The scope a def, lambda or class statement opens."""
        return self.scopes.opened.get(id(node))

    def scope_at(self, node: ast.AST) -> Scope:
        """The innermost def or class scope whose source contains ``node`` (else the module)."""
        best, best_start = self.module_scope, (0, 0)
        where = (node.lineno, node.col_offset)  # type: ignore[attr-defined]
        end = (node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        for scope in self.scopes.opened.values():
            n = scope.node
            start = (n.lineno, n.col_offset)  # type: ignore[attr-defined]
            if start <= where and end <= (n.end_lineno, n.end_col_offset) and start > best_start:  # type: ignore[attr-defined]
                best, best_start = scope, start
        return best

    def dict_writes(self, name: str, owner: Scope) -> list[DictWrite]:
        """In-place changes of the ``name`` that ``owner`` binds."""
        out = []
        for w in self.scopes.dict_writes.get(name, ()):
            found = self.lookup(name, w.scope)
            if found is not None and found[0] is owner:
                out.append(w)
        return out

    # ----------------------------------------------------------------- queries

    def resolve(self, expr: ast.expr, scope: Scope) -> Resolution:
        """Cached per node: every rule asks about the same calls."""
        key = id(expr)
        cached = self._resolved.get(key)
        if cached is None or cached[0] is not expr:
            cached = (expr, Resolution(_distinct(self._resolve(expr, scope, frozenset()))))
            self._resolved[key] = cached
        return cached[1]

    def iter_calls(self) -> Iterator[tuple[ast.Call, Scope]]:
        return iter(self.calls)

    def exports(self, star_names: Callable[[str], Iterable[str]] | None = None) -> dict[str, str]:
        """Module-level names of this module that are bound to FlashInfer's API, and nothing
        else: ``{"<this module>.<name>": "<qualified name>"}``. Other modules importing them
        resolve through it (`project_aliases`). A def wrapping FlashInfer is not one of them.
        A module of FlashInfer's own tree exports nothing: its names are paths of the API, and
        the release data says where each leads (followed as a re-export, `flashinfer.jit.f`
        would be reported again at each use, under the path of its definition).

        ``from flashinfer import *`` exports every name ``star_names`` says that FlashInfer
        module gives a star import, except those the module binds itself; not where the module
        also star-imports something else (a name might come from either)."""
        if not self.module_name or in_flashinfer(self.module_name):
            return {}
        out = {}
        stars = self.module_scope.stars
        if star_names is not None and stars and all(in_flashinfer(m) for m, _ in stars):
            own = self.module_scope.bindings
            for module, _ in stars:
                for name in star_names(module):
                    if name not in own:
                        out[f"{self.module_name}.{name}"] = f"{module}.{name}"
        out.update(self._members())
        for name, bindings in self.module_scope.bindings.items():
            if len(bindings) == 1 and bindings[0].what == "def":
                # a factory: ``<this module>.<name>()`` is what a call of it returns
                made = self._returned([Candidate(None, bindings[0].line, "def")], frozenset())
                targets = {c.qualname for c in made or ()}
                if len(targets) == 1:
                    (target,) = targets
                    if target and _an_instance(target):
                        out[f"{self.module_name}.{name}()"] = target
                continue
            if all(b.what in _OWN or (b.qualname is None and b.alias_of is None) for b in bindings):
                continue  # (its own defs and classes, other values: nothing of FlashInfer's)
            quals = self._resolve_name(name, self.module_scope, frozenset())
            targets = {c.qualname for c in quals}
            if len(targets) == 1:
                (target,) = targets
                if target and in_flashinfer(target):
                    out[f"{self.module_name}.{name}"] = target
        return out

    def _member(self, key: str) -> str | None:
        """What a method or property of an instance of this module's class gives (``key``:
        ``<module>.<Class>().<name>[()]``), by its annotation; None for any other key (most:
        the classes' annotations are read only for a key of this module's instances)."""
        if not self.module_name or not key.startswith(self.module_name + ".") or "()." not in key:
            return None
        return self._members().get(key)

    def _members(self) -> dict[str, str]:
        """`_members_exported`, worked out once."""
        found = self.derived.get(("members",))
        if not isinstance(found, dict):
            self.derived[("members",)] = {}  # (none while they are worked out: a cycle ends)
            found = self.derived[("members",)] = (
                self._members_exported() if self.module_name else {}
            )
        return found

    def _members_exported(self) -> dict[str, str]:
        """The methods and properties of this module's top-level classes whose return
        annotation names one FlashInfer class: ``<module>.<Class>().<method>()`` (a property:
        without the call; a static or class method: also through the class) -> an instance of
        it. A caller holding an instance of the class, by its annotation or its construction,
        reaches FlashInfer through them."""
        out: dict[str, str] = {}
        for cls in self.tree.body:
            if not isinstance(cls, ast.ClassDef):
                continue
            for fn in cls.body:
                if not isinstance(fn, ast.FunctionDef) or not fn.returns:
                    continue  # (an `async def` gives a coroutine, whatever it is annotated)
                kinds = {d.id for d in fn.decorator_list if isinstance(d, ast.Name)}
                if len(kinds) != len(fn.decorator_list) or len(kinds) > 1:
                    continue  # (another decorator may change what a call gives)
                made = self._annotated(fn.returns, self.module_scope, fn.lineno, frozenset())
                targets = {c.qualname for c in made}
                if len(targets) != 1 or len(made) != 1:
                    continue
                (target,) = targets
                if not target or not _an_instance(target):
                    continue
                owner = f"{self.module_name}.{cls.name}"
                if kinds == {"property"}:
                    out[f"{owner}().{fn.name}"] = target
                elif kinds <= {"staticmethod", "classmethod"}:
                    out[f"{owner}().{fn.name}()"] = target
                    if kinds:
                        out[f"{owner}.{fn.name}()"] = target
        return out

    def _project(self, qualname: str | None) -> str | None:
        """Follow the project's own re-exports of FlashInfer names."""
        if qualname is None:
            return None
        self.asked.add(qualname)
        return self.project_aliases.follow(qualname)

    # ------------------------------------------------------------- resolution

    def _resolve(
        self, expr: ast.expr, scope: Scope, seen: frozenset[tuple[int, str]]
    ) -> list[Candidate]:
        if isinstance(expr, ast.Name):
            found = self._resolve_name(expr.id, scope, seen)
            if self._tested is None:  # (a file that never reads `isinstance`: nothing)
                read = "isinstance" in self.scopes.loads
                self._tested = _isinstance_tests(self.calls) if read else {}
            tests = self._tested.get(expr.id)
            if tests is not None and self._named_classes(expr.id, tests, seen):
                return self._narrowed(expr, scope, found, seen)
            return found
        if isinstance(expr, ast.Attribute):
            attribute = self._self_attribute(expr, scope, seen)
            if attribute is not None:
                return attribute
            held = self._class_attribute(expr, scope, seen)
            if held is not None:
                return held
            out = []
            for cand in self._resolve(expr.value, scope, seen):
                if cand.qualname is None:
                    out.append(cand)
                    continue
                held = self._held_by_own_class(cand, expr.attr, seen)
                if held is not None:
                    out.extend(held)
                    continue
                inherited = self._inherited(cand, expr.attr, seen)
                # (a property of a class of this module annotated with what it gives)
                own = self._member(f"{cand.qualname}.{expr.attr}")
                qual = inherited or own or self._project(f"{cand.qualname}.{expr.attr}")
                out.append(Candidate(qual, cand.line, cand.what))
            return out
        if isinstance(expr, ast.IfExp):  # `x if c else None`: None is no other implementation
            return [c for arm in _arms(expr) for c in self._resolve(arm, scope, seen)]
        if isinstance(expr, (ast.List, ast.Tuple)):  # a container: what its elements are
            elements = [e for e in expr.elts if not isinstance(e, ast.Starred)]
            if len(elements) != len(expr.elts) or not elements:
                return [Candidate(None, expr.lineno, "expression")]
            return _contained(c for e in elements for c in self._resolve(e, scope, seen))
        if isinstance(expr, ast.ListComp):
            inner = self.scopes.comprehensions.get(id(expr), scope)
            return _contained(self._resolve(expr.elt, inner, seen))
        if isinstance(expr, ast.Dict):  # a dict: what its values are (keys do not matter)
            if not expr.values or any(k is None for k in expr.keys):  # (`{**other}`: unknown)
                return [Candidate(None, expr.lineno, "expression")]
            return _contained(c for v in expr.values for c in self._resolve(v, scope, seen))
        if isinstance(expr, ast.DictComp):
            inner = self.scopes.comprehensions.get(id(expr), scope)
            return _contained(self._resolve(expr.value, inner, seen))
        if isinstance(expr, ast.Subscript):  # an element of a container of known elements
            place = _place(expr.slice)
            if place is not None:  # (`kernels()[1]`: the element at that place, where known)
                return self._unpacked(expr.value, place, scope, expr.lineno, seen)
            return _element(self._resolve(expr.value, scope, seen), expr.lineno)
        if isinstance(expr, ast.Call):
            if isinstance(expr.func, ast.Name) and expr.func.id == "super" and not expr.args:
                return self._super(scope, expr.lineno)
            attribute = self._getattr(expr, scope, seen)
            if attribute is not None:
                return attribute
            looked_up = self._dict_lookup(expr, scope, seen)
            if looked_up is not None:
                return looked_up
            funcs = self._resolve(expr.func, scope, seen)
            names = {c.qualname for c in funcs}
            if names and names <= _IMPORTERS and _is_importer_call(expr):
                # `pytest.importorskip("flashinfer")`, `importlib.import_module("flashinfer.comm")`
                return [Candidate(expr.args[0].value, expr.lineno, "import")]  # type: ignore[attr-defined]
            lazy = self._lazy_import(expr, funcs)
            if lazy is not None:
                found = [Candidate(self._project(lazy), expr.lineno, "lazy import")]
                if len(expr.args) > 2 or expr.keywords:  # (what else it gives it: a fallback)
                    found.append(Candidate(None, expr.lineno, "the helper's other arguments"))
                return found
            made = self._returned(funcs, seen)
            if made is not None:  # a factory of this module: what it returns
                return made
            given = [self._member(f"{c.qualname}()") if c.qualname else None for c in funcs]
            if given and all(given):
                # (a method of a class of this module whose annotation says what it returns)
                return [Candidate(q, c.line, c.what) for q, c in zip(given, funcs, strict=True)]
            # what a call returns: `X()` stands for "an instance of X" (or X's result; a
            # factory of another module of the project: what it returns, `exports`)
            return [
                Candidate(self._project(f"{c.qualname}()") if c.qualname else None, c.line, c.what)
                for c in funcs
            ]
        line = getattr(expr, "lineno", 0)
        return [Candidate(None, line, "expression")]

    def _named_classes(
        self, name: str, tests: dict[int, Scope], seen: frozenset[tuple[int, str]]
    ) -> bool:
        """Whether an isinstance test of ``name`` names a class this resolver reads
        (FlashInfer's, the project's): most test `torch.Tensor` or `dict`, and a read of such
        a name needs no walk up its tree. Worked out once per name."""
        memo = ("isinstance classes", name)
        known = self.derived.get(memo)
        if isinstance(known, bool):
            return known
        calls = {id(c): c for c, _ in self.calls if id(c) in tests}
        known = False
        for key, where in tests.items():
            classes = calls[key].args[1]
            arms = classes.elts if isinstance(classes, ast.Tuple) else [classes]
            if any(self._annotated(arm, where, 0, seen) for arm in arms):
                known = True
                break
        self.derived[memo] = known
        return known

    def _narrowed(
        self, name: ast.Name, scope: Scope, found: list[Candidate], seen: frozenset[tuple[int, str]]
    ) -> list[Candidate]:
        """``found``, what ``name`` may be bound to, as the ``isinstance`` tests that hold
        wherever this read of it runs narrow it, as type checkers do: ``assert isinstance(x,
        C)`` or ``if not isinstance(x, C): raise`` before it in its block (or in a block that
        holds it, a function defined after the test included), ``if isinstance(x, C):`` around
        it. An instance of the classes a test names, where ``found`` says nothing of
        FlashInfer's (a value out of sight: a registry's, a call's); the candidates of
        ``found`` that are such instances, where some are; without those a failed test names.
        Only a test of the same variable counts, with no assignment to it after the test."""
        looked_up = self.lookup(name.id, scope)
        if looked_up is None or name.lineno <= 0:
            return found
        owner, bindings = looked_up
        tested = self._tested[name.id] if self._tested else {}
        up = nodes.path_to(owner.node, name)
        if up is None:
            return found  # (a node of another tree: never narrowed)
        wanted: list[Candidate] | None = None
        out = found
        for test, holds in nodes.tests_before(name, up, stop=owner.node):
            for call, positive in _isinstance_facts(test, holds):
                target = call.args[0]
                if not (isinstance(target, ast.Name) and target.id == name.id):
                    continue
                if any(b.line >= call.lineno for b in bindings):
                    continue  # (assigned again after the test: the test says nothing of it)
                where = tested.get(id(call))
                if where is None or self.lookup("isinstance", where) is not None:
                    continue  # (not the builtin)
                classes = call.args[1]
                arms = classes.elts if isinstance(classes, ast.Tuple) else [classes]
                named = [c for arm in arms for c in self._annotated(arm, where, call.lineno, seen)]
                if not named or any(c.qualname is None for c in named):
                    continue
                quals = {c.qualname for c in named}
                if positive:
                    kept = [c for c in out if c.qualname in quals]
                    if kept:
                        out = kept
                    elif not any(c.qualname and in_flashinfer(c.qualname) for c in out):
                        wanted = named
                else:
                    left = [c for c in out if c.qualname not in quals]
                    if left:
                        out = left
        if wanted is not None and out is found:
            return [Candidate(c.qualname, c.line, "isinstance test") for c in wanted]
        return out

    def _dict_lookup(
        self, call: ast.Call, scope: Scope, seen: frozenset[tuple[int, str]]
    ) -> list[Candidate] | None:
        """``d.values()`` is a container of ``d``'s values; ``d.get(k)`` one of them (or its
        default), where ``d`` is a container of known values. None otherwise."""
        func = call.func
        if not isinstance(func, ast.Attribute) or call.keywords:
            return None
        if func.attr == "values" and not call.args:
            found = self._resolve(func.value, scope, seen)
            known = all(c.qualname is not None and c.qualname.endswith("[]") for c in found)
            return found if found and known else None
        if func.attr == "get" and len(call.args) in (1, 2):
            found = self._resolve(func.value, scope, seen)
            if not found or not all(c.qualname and c.qualname.endswith("[]") for c in found):
                return None
            out = _element(found, call.lineno)
            if len(call.args) == 2:
                out.extend(self._resolve(call.args[1], scope, seen))
            return out
        return None

    def _getattr(
        self, call: ast.Call, scope: Scope, seen: frozenset[tuple[int, str]]
    ) -> list[Candidate] | None:
        """``getattr(obj, "name")`` is ``obj.name``; with a default, ``getattr(obj, "name", d)``
        may also be ``d``. None when the call is not the builtin's with a literal name."""
        func, args = call.func, call.args
        if not (
            isinstance(func, ast.Name)
            and func.id == "getattr"
            and not call.keywords
            and len(args) in (2, 3)
            and not any(isinstance(a, ast.Starred) for a in args)
            and isinstance(args[1], ast.Constant)
            and isinstance(args[1].value, str)
            and args[1].value.isidentifier()
            and self.lookup("getattr", scope) is None  # (the builtin, not a name of the module)
        ):
            return None
        name = args[1].value
        out = []
        for cand in self._resolve(args[0], scope, seen):
            if cand.qualname is None:
                out.append(cand)
            else:
                out.append(
                    Candidate(self._project(f"{cand.qualname}.{name}"), cand.line, cand.what)
                )
        if len(args) == 3:
            out.extend(self._resolve(args[2], scope, seen))
        return out

    def _returned(
        self, funcs: list[Candidate], seen: frozenset[tuple[int, str]]
    ) -> list[Candidate] | None:
        """What a call of a top-level function of this module returns, where every ``return``
        of it gives something known (``return flashinfer.BatchDecodeWithPagedKVCacheWrapper(
        ...)``, or a local bound to it); a ``return None`` gives nothing that can be called.
        None when a return is unknown, or the callee is not such a function."""
        found = self._top_function(funcs)
        if found is None:
            return None
        fn, inner = found
        key = (id(fn), "<return>")
        if key in seen:
            return None
        if id(fn) in self._returns:  # (every call of the function asks the same)
            return self._returns[id(fn)]
        # (kept whatever led here: a return cut short by a cycle makes it None, unknown, which
        # only ever leaves a call alone)
        found_all = self._returns[id(fn)] = self._returns_of(fn, inner, seen | {key})
        return found_all

    def _returns_of(
        self, fn: ast.FunctionDef, inner: Scope, seen: frozenset[tuple[int, str]]
    ) -> list[Candidate] | None:
        out: list[Candidate] = []
        for node in inner.returns:  # (its own, as the scopes' walk found them)
            value = node.value
            if value is None or (isinstance(value, ast.Constant) and value.value is None):
                continue
            found = self._resolve(value, inner, seen)
            if not found or any(c.qualname is None for c in found):
                return None
            out.extend(found)
        return out or None

    def _unpacked(
        self, expr: ast.expr, place: int, scope: Scope, line: int, seen: frozenset[tuple[int, str]]
    ) -> list[Candidate]:
        """The element at ``place`` of what ``expr`` gives (``a, b = expr``, ``expr[1]``): read
        where the tuple is in sight (`_at_place`), else any element of it, as a container."""
        found = self._at_place(expr, place, scope, seen)
        if found is not None:
            return found
        return _element(self._resolve(expr, scope, seen), line)

    def _at_place(
        self,
        expr: ast.expr,
        place: int,
        scope: Scope,
        seen: frozenset[tuple[int, str]],
        lists: bool = True,
    ) -> list[Candidate] | None:
        """The element at ``place`` of a tuple written out: ``(a, b)`` itself, a call of a
        top-level function of this module whose every ``return`` gives one, and a name bound
        only to these; a list written out too (``lists``), but not through a name, which may
        change it in place. None where one of them cannot be read so (then the caller takes
        any element)."""
        if isinstance(expr, ast.Tuple) or (lists and isinstance(expr, ast.List)):
            elements = expr.elts
            if any(isinstance(e, ast.Starred) for e in elements):
                return None
            if not -len(elements) <= place < len(elements):
                return None  # (unpacking it fails: nothing is bound so)
            return self._resolve(elements[place], scope, seen)
        if isinstance(expr, ast.IfExp):
            out: list[Candidate] = []
            for arm in _arms(expr):
                found = self._at_place(arm, place, scope, seen, lists)
                if found is None:
                    return None
                out.extend(found)
            return out
        if isinstance(expr, ast.Name):
            looked_up = self.lookup(expr.id, scope)
            if looked_up is None:
                return None
            owner, bindings = looked_up
            key = (id(owner), expr.id)
            if key in seen:
                return None
            out = []
            for b in bindings:
                if b.what == "None":
                    continue
                if b.value is None or b.scope is None:
                    return None
                found = self._at_place(b.value, place, b.scope, seen | {key}, lists=False)
                if found is None:
                    return None
                out.extend(found)
            return out or None
        if not isinstance(expr, ast.Call):
            return None
        found_fn = self._top_function(self._resolve(expr.func, scope, seen))
        if found_fn is None or (id(found_fn[0]), "<return>") in seen:
            return None
        fn, inner = found_fn
        out = []
        for node in inner.returns:  # (its own, as the scopes' walk found them)
            value = node.value
            if value is None or (isinstance(value, ast.Constant) and value.value is None):
                continue  # (unpacking None fails: nothing is bound so)
            found = self._at_place(value, place, inner, seen | {(id(fn), "<return>")}, lists)
            if found is None:
                return None
            out.extend(found)
        return out or None

    def _class_attribute(
        self, expr: ast.Attribute, scope: Scope, seen: frozenset[tuple[int, str]]
    ) -> list[Candidate] | None:
        """``Holder.kind`` where ``Holder`` is bound only to a class of this module whose body
        binds ``kind`` to FlashInfer's (`_class_body_value`)."""
        if not isinstance(expr.value, ast.Name):
            return None
        found = self.lookup(expr.value.id, scope)
        if found is None or len(found[1]) != 1 or found[1][0].what != "class":
            return None
        cls = self._class_scope(expr.value.id, found[0])
        return None if cls is None else self._class_body_value(cls, expr.attr, False, seen)

    def _held_by_own_class(
        self, cand: Candidate, attr: str, seen: frozenset[tuple[int, str]]
    ) -> list[Candidate] | None:
        """``Holder().kind`` (or ``h.kind``, ``h = Holder()``, ``h: Holder``) where ``Holder``
        is a top-level class of this module: what its methods set on the instance
        (`_instance_attribute`: ``self.wrapper = Wrapper(...)`` in ``__init__``), else what its
        body binds ``kind`` to (`_class_body_value`), else the type its body declares for it
        (``state: State | None = None``, a dataclass's field)."""
        qual = cand.qualname
        if cand.what != "class" or not qual or not qual.endswith("()") or not self.module_name:
            return None
        owner, _, name = qual[:-2].rpartition(".")
        if owner != self.module_name:
            return None
        cls = self._class_scope(name, self.module_scope)
        if cls is None:
            return None
        if attr in cls.attributes:
            return self._instance_attribute(cls, attr, seen)
        held = self._class_body_value(cls, attr, True, seen)
        if held is None and attr in cls.bindings:
            held = self._declared(cls, attr, seen)
        if held is None and self._lacks(cls, attr):
            return []  # (no instance of it has the attribute: not what the expression holds)
        return held

    def _lacks(self, cls: Scope, attr: str) -> bool:
        """Whether an instance of the class ``cls`` of this module cannot have ``attr``, as a
        type checker reads a union (`Union[PrefillMetadata, DecodeMetadata]` and
        `.decode_wrapper`, a field of the second only): the class has no base, no subclass in
        this file and no decorator but `dataclass`, its body binds no such name and no
        `__getattr__`, no method of it
        sets it on `self`, and this file never assigns that attribute on another object (a
        method's `self.name = ...` sets it on its own class's instances; nor uses `setattr`,
        `__dict__` or `vars`)."""
        if attr in cls.bindings or not self._closed(cls):
            return False
        return not self._set_elsewhere(attr)

    def _closed(self, cls: Scope) -> bool:
        """Whether the attributes of an instance of ``cls`` are those its body and methods give
        it (`_lacks`), worked out once per class."""
        found = self._closed_classes.get(id(cls))
        if found is not None:
            return found
        node = cls.node
        found = (
            isinstance(node, ast.ClassDef)
            and not node.bases
            and not node.keywords
            and not any(n in cls.bindings for n in ("__getattr__", "__getattribute__", "__slots__"))
            and all(
                self.resolve(d.func if isinstance(d, ast.Call) else d, self.module_scope).qualnames
                == {"dataclasses.dataclass"}
                for d in node.decorator_list
            )
            and not any(  # (a subclass of it in this file may have the attribute)
                isinstance(base, ast.Name) and base.id == node.name
                for other in self.scopes.opened.values()
                if isinstance(other.node, ast.ClassDef)
                for base in other.node.bases
            )
        )
        self._closed_classes[id(cls)] = found
        return found

    def _on_own_instance(self, target: ast.Attribute) -> bool:
        """``self.name = ...`` in a method: set on an instance of the method's own class (which
        `Scope.attributes` holds), no other."""
        scope = self.scope_at(target)
        return (
            isinstance(target.value, ast.Name)
            and scope.owner_class is not None
            and target.value.id == scope.self_name
        )

    def _set_elsewhere(self, attr: str) -> bool:
        """Whether this file may set ``attr`` on an object other than a method's own instance
        (`x.name = ...`, or `del`): also wherever it uses `setattr`, `vars` or `__dict__`."""
        stores = self._stores()
        if stores is None:
            return True
        return not all(self._on_own_instance(a) for a in stores.get(attr, ()))

    def _stores(self) -> dict[str, list[ast.Attribute]] | None:
        """The attributes this file assigns or deletes, by name, found once (the scope of each
        is looked up only for the name asked); None where it may set any."""
        if not self._stores_read:
            self._stores_read = True
            loads = self.scopes.loads
            if "setattr" not in loads and "vars" not in loads:
                found: dict[str, list[ast.Attribute]] = {}
                for a in nodes.of_type(self.tree, ast.Attribute):
                    if a.attr == "__dict__":
                        break
                    if not isinstance(a.ctx, ast.Load):
                        found.setdefault(a.attr, []).append(a)
                else:
                    self._stored = found
        return self._stored

    def _class_body_value(
        self, cls: Scope, attr: str, through_instance: bool, seen: frozenset[tuple[int, str]]
    ) -> list[Candidate] | None:
        """What ``attr``, bound once in the body of the class ``cls`` (``kind = Wrapper``,
        ``quant = staticmethod(flashinfer.fp4_quantize)``), holds where all of it is
        FlashInfer's; None otherwise. Read through an instance, a function that is not a
        ``staticmethod`` becomes a method bound to it (its first argument the instance): an
        opaque candidate, unless its name is a class's (``CamelCase``: a class read through
        an instance is the class)."""
        bindings = cls.bindings.get(attr)
        if not bindings or len(bindings) != 1:
            return None
        (b,) = bindings
        value, where = b.value, b.scope
        if value is None or where is None or b.what in _OWN:
            return None
        static = False
        if (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id in ("staticmethod", "classmethod")
            and len(value.args) == 1
            and not value.keywords
            and self.lookup(value.func.id, where) is None
        ):
            if value.func.id == "classmethod":
                return None
            value, static = value.args[0], True
        key = (id(cls), "class." + attr)
        if key in seen:
            return None
        found = self._resolve(value, where, seen | {key})
        if not found or any(c.qualname is None or not in_flashinfer(c.qualname) for c in found):
            return None
        out = []
        for c in found:
            q = c.qualname
            assert q is not None
            last = q.rstrip("()[]").rpartition(".")[2]
            bound = through_instance and not static and not q.endswith(("()", "[]"))
            if bound and not last[:1].isupper():
                out.append(Candidate(None, b.line, "function bound to the instance"))
                continue
            out.append(Candidate(q, b.line, "class attribute"))
        return out

    def _inherited(
        self, instance: Candidate, attr: str, seen: frozenset[tuple[int, str]]
    ) -> str | None:
        """``w.end_forward`` where ``w`` is an instance of a class of this module that does not
        define ``end_forward`` and has one base, a FlashInfer class: that class's method
        (``flashinfer.X().end_forward``). None otherwise."""
        qual = instance.qualname
        if instance.what != "class" or not qual or not qual.endswith("()") or not self.module_name:
            return None
        owner, _, name = qual[:-2].rpartition(".")
        if owner != self.module_name:
            return None
        if self._classes is None:
            self._classes = {n.name: n for n in self.tree.body if isinstance(n, ast.ClassDef)}
        cls = self._classes.get(name)
        if cls is None or len(cls.bases) != 1 or cls.keywords:
            return None
        own = {
            t.id
            for stmt in cls.body
            for t in (
                [ast.Name(id=stmt.name)]
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                else getattr(stmt, "targets", [getattr(stmt, "target", None)])
            )
            if isinstance(t, ast.Name)
        }
        if attr in own:
            return None
        bases = self._resolve(cls.bases[0], self.module_scope, seen)
        if len(bases) != 1 or not bases[0].qualname or not in_flashinfer(bases[0].qualname):
            return None
        return f"{bases[0].qualname}().{attr}"

    def _top_function(self, funcs: list[Candidate]) -> tuple[ast.FunctionDef, Scope] | None:
        """The top-level function of this module (undecorated) that ``funcs``, what a call's
        callee resolved to, is alone, with its scope; None for anything else."""
        if len(funcs) != 1 or funcs[0].what != "def":
            return None
        fn = self._top_defs().get(funcs[0].line)
        inner = self.scope_of(fn) if fn is not None else None
        return None if fn is None or inner is None else (fn, inner)

    def _top_defs(self) -> dict[int, ast.FunctionDef]:
        """This module's top-level functions, by the line of their ``def``."""
        if self._defs is None:
            self._defs = {
                fn.lineno: fn
                for fn in self.tree.body
                if isinstance(fn, ast.FunctionDef) and not fn.decorator_list
            }
        return self._defs

    def _lazy_import(self, call: ast.Call, funcs: list[Candidate]) -> str | None:
        """``lazy_import("flashinfer.fused_moe", "trtllm_fp8_block_scale_moe")``: a call, with
        literal strings, of a function of this module whose body is ``return
        getattr(importlib.import_module(module), name)`` (or the module first bound to a local):
        the dotted name it returns."""
        if len(funcs) != 1 or funcs[0].what != "def":
            return None
        found = self._helpers().get(funcs[0].line)
        if found is None or any(a for a in call.args if isinstance(a, ast.Starred)):
            return None
        module_at, name_at = found
        if max(module_at, name_at) >= len(call.args) or any(k.arg is None for k in call.keywords):
            return None  # (the two given by position: a keyword for a later parameter is fine)
        module_arg, name_arg = call.args[module_at], call.args[name_at]
        if not all(
            isinstance(a, ast.Constant) and isinstance(a.value, str) for a in (module_arg, name_arg)
        ):
            return None
        module, name = module_arg.value, name_arg.value  # type: ignore[attr-defined]
        if not name.isidentifier() or not all(p.isidentifier() for p in module.split(".")):
            return None
        return f"{module}.{name}"

    def _helpers(self) -> dict[int, tuple[int, int]]:
        """This module's top-level lazy-import helpers: the line of each def -> the places of
        its module and name parameters (`_helper_places`)."""
        if self._lazy_helpers is not None:
            return self._lazy_helpers
        self._lazy_helpers = {}
        for fn in self._top_defs().values():
            if fn.args.vararg:
                continue
            places = self._helper_places(fn)
            if places is not None:
                self._lazy_helpers[fn.lineno] = places
        return self._lazy_helpers

    def _helper_places(self, fn: ast.FunctionDef) -> tuple[int, int] | None:
        """The places of the module and name parameters of ``fn`` where it is a lazy-import
        helper: it returns ``getattr(<module>, name)`` (``getattr(importlib.import_module(
        module), name)``, the module first bound to a local, a fallback value, a conditional),
        or a function of ``*args, **kwargs`` whose every return passes them on unchanged, to
        what such a ``getattr`` gives (vLLM's `_lazy_import_wrapper`: a fallback when FlashInfer
        is missing); ``<module>`` is ``importlib.import_module(module)`` or a call of a function
        of this module that returns that (`_module_importers`)."""
        inner = self.scope_of(fn)
        body = fn.body[1:] if ast.get_docstring(fn) is not None else fn.body
        if inner is None or not body or not isinstance(body[-1], ast.Return):
            return None
        params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
        got = body[-1].value
        where: ast.AST | None = got
        if isinstance(got, ast.Name):  # a function of *args, **kwargs made here
            made = [s for s in body if isinstance(s, ast.FunctionDef) and s.name == got.id]
            found = self.lookup(got.id, inner)
            if len(made) != 1 or found is None or len(found[1]) != 1 or not _forwards(made[0]):
                return None
            where = fn
        elif got is None or not all(_is_getattr(arm) for arm in _arms(got) or [got]):
            return None  # (what it returns must be the attribute itself, or None)
        places = set()
        for node in ast.walk(where) if where is not None else ():
            if (
                isinstance(node, ast.Call)
                and _is_getattr(node)
                and 2 <= len(node.args) <= 3
                and not node.keywords
            ):
                found_places = self._getattr_places(node, inner, params)
                if found_places is None:
                    return None
                places.add(found_places)
        return places.pop() if len(places) == 1 else None

    def _getattr_places(
        self, node: ast.Call, inner: Scope, params: list[str]
    ) -> tuple[int, int] | None:
        """For ``getattr(<module>, name)`` in the helper whose scope is ``inner``: the places
        of its module and name parameters; None when either is anything else."""
        scope = self.scope_at(node)
        module_expr, name_expr = node.args[0], node.args[1]

        def param(expr: ast.expr, at: Scope) -> int | None:
            if not isinstance(expr, ast.Name) or expr.id not in params:
                return None
            found = self.lookup(expr.id, at)
            if found is None or found[0] is not inner:
                return None
            return params.index(expr.id)

        name_at = param(name_expr, scope)
        if name_at is None:
            return None
        value, value_scope = module_expr, scope
        if isinstance(module_expr, ast.Name):  # `m = import_module(module)` first
            found = self.lookup(module_expr.id, scope)
            if found is None or len(found[1]) != 1 or found[1][0].value is None:
                return None
            value, value_scope = found[1][0].value, found[1][0].scope or scope
        if not (isinstance(value, ast.Call) and len(value.args) == 1 and not value.keywords):
            return None
        importer = {c.qualname for c in self._resolve(value.func, value_scope, frozenset())}
        own = isinstance(value.func, ast.Name) and value.func.id in self._module_importers()
        if importer != {"importlib.import_module"} and not own:
            return None
        module_at = param(value.args[0], value_scope)
        return None if module_at is None else (module_at, name_at)

    def _module_importers(self) -> frozenset[str]:
        """This module's top-level functions of one parameter whose returns are
        ``importlib.import_module(<the parameter>)`` and None (in a ``try``, say)."""
        found = self.derived.get(("module importers",))
        if isinstance(found, frozenset):
            return found
        out = set()
        for fn in self._top_defs().values():
            params = [a.arg for a in fn.args.args]
            inner = self.scope_of(fn)
            if len(params) != 1 or fn.args.vararg or fn.args.kwarg or inner is None:
                continue
            returns = [n.value for n in inner.returns]
            imports = [
                r
                for r in returns
                if isinstance(r, ast.Call)
                and len(r.args) == 1
                and isinstance(r.args[0], ast.Name)
                and r.args[0].id == params[0]
                and {c.qualname for c in self._resolve(r.func, inner, frozenset())}
                == {"importlib.import_module"}
            ]
            nones = [
                r for r in returns if r is None or (isinstance(r, ast.Constant) and r.value is None)
            ]
            if imports and len(imports) + len(nones) == len(returns):
                out.add(fn.name)
        frozen = frozenset(out)
        self.derived[("module importers",)] = frozen
        return frozen

    def _resolve_name(
        self, name: str, scope: Scope, seen: frozenset[tuple[int, str]]
    ) -> list[Candidate]:
        found = self.lookup(name, scope)
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
        self, name: str, owner: Scope, bindings: list[Binding], seen: frozenset[tuple[int, str]]
    ) -> list[Candidate]:
        out: list[Candidate] = []
        for b in bindings:
            if b.what == "None":
                continue
            if b.unpacked is not None and b.scope is not None:  # `a, b = <expr>`
                out.extend(self._unpacked(*b.unpacked, b.scope, b.line, seen))
                continue
            if b.what == "parameter":
                out.extend(self._parameter(name, owner, b, seen))
                continue
            if b.element_of is not None and b.scope is not None:  # `for x in <iterable>`
                out.extend(_element(self._resolve(b.element_of, b.scope, seen), b.line))
                continue
            if b.alias_of is not None:
                assert b.scope is not None
                for arm in _arms(b.alias_of):
                    if isinstance(arm, ast.Name) and arm.id == name:
                        found = self.lookup(name, b.scope)
                        if found is not None and found[0] is owner:
                            continue  # `x = x if c else None`: x's other bindings say what it is
                    out.extend(self._resolve(arm, b.scope, seen))
            else:
                out.append(Candidate(self._project(b.qualname), b.line, b.what))
        if not bindings and owner.stars:
            out.extend(Candidate(f"{mod}.{name}", line, "star import") for mod, line in owner.stars)
        return out

    def _self_attribute(
        self, expr: ast.Attribute, scope: Scope, seen: frozenset[tuple[int, str]]
    ) -> list[Candidate] | None:
        """``self.attr`` inside a method: what the class's methods assign to ``self.attr``
        (`_instance_attribute`)."""
        owner_class = self.self_class(expr, scope)
        if owner_class is None:
            return None
        return self._instance_attribute(owner_class, expr.attr, seen)

    def _instance_attribute(
        self, owner_class: Scope, attr: str, seen: frozenset[tuple[int, str]]
    ) -> list[Candidate] | None:
        """``attr`` of an instance of ``owner_class``, a class of this module: what its methods
        assign to ``self.attr``; a method or attribute the class (or a class of this module it
        derives from) defines is the project's own, never its FlashInfer base's."""
        bindings = owner_class.attributes.get(attr)
        if not bindings:
            for cls in self._own_classes(owner_class):
                if attr in cls.bindings or attr in cls.attributes:
                    held = self._class_body_value(cls, attr, True, seen)
                    if held is None:  # (`attr: T` in its body: the type it declares)
                        held = self._declared(cls, attr, seen)
                    if held is not None:
                        return held
                    line = cls.node.lineno  # type: ignore[attr-defined]
                    return [Candidate(None, line, "attribute of the project's class")]
            return None
        key = (id(owner_class), "self." + attr)
        if key in seen:
            return [Candidate(None, bindings[0].line, "circular alias")]
        out: list[Candidate] = []
        for b in bindings:
            if b.what == "None":
                continue
            if b.unpacked is not None and b.scope is not None:  # `self.a, self.b = <expr>`
                out.extend(self._unpacked(*b.unpacked, b.scope, b.line, seen | {key}))
            elif b.alias_of is not None and b.scope is not None:
                out.extend(self._resolve(b.alias_of, b.scope, seen | {key}))
            else:
                out.append(Candidate(b.qualname, b.line, b.what))
        if not any(c.qualname and in_flashinfer(c.qualname) for c in out):
            # (what is assigned is nothing of FlashInfer's that can be read here: the type the
            # class declares for it, where it names FlashInfer's or the project's classes)
            declared = self._declared(owner_class, attr, seen | {key})
            if declared:
                return declared
        return out

    def _declared(
        self, cls: Scope, attr: str, seen: frozenset[tuple[int, str]]
    ) -> list[Candidate] | None:
        """The instances the one annotation of ``attr`` in ``cls`` names (``attr: T`` in its
        body, or ``self.attr: T = ...`` in a method), where it names FlashInfer's or the
        project's classes. Worked out once for each (every ``self.attr`` of the class asks;
        one cut short by a cycle is kept as unknown, which only ever leaves a call alone)."""
        memo = ("declared", id(cls), attr)
        if memo in self.derived:
            known = self.derived[memo]
            return None if known is None else list(known)  # type: ignore[call-overload]
        annotated = [
            b
            for b in (*cls.bindings.get(attr, ()), *cls.attributes.get(attr, ()))
            if b.annotation is not None and b.scope is not None
        ]
        found = None
        if len(annotated) == 1:
            (b,) = annotated
            assert b.annotation is not None and b.scope is not None
            found = self._annotated(b.annotation, b.scope, b.line, seen) or None
        self.derived[memo] = found
        return None if found is None else list(found)

    # ------------------------------------------------------------- parameters

    def _parameter(
        self, name: str, owner: Scope, b: Binding, seen: frozenset[tuple[int, str]]
    ) -> list[Candidate]:
        """What a parameter holds, where that is certain enough to say: its annotation names
        FlashInfer classes; it is ``self`` in a class whose bases are FlashInfer's; or every
        call of its function in this module passes FlashInfer instances. Else one opaque
        candidate (the value a caller gives)."""
        opaque = [Candidate(None, b.line, "parameter")]
        if b.annotation is not None and b.scope is not None:
            return self._annotated(b.annotation, b.scope, b.line, seen) or opaque
        if owner.owner_class is not None and owner.self_name == name:
            return self._instances_of(owner.owner_class, b.line, seen) or opaque
        passed = self._passed(name, owner, b, seen)
        if passed:
            return passed
        if b.default is not None and b.scope is not None:
            # (``cls=Wrapper``, ``quant=flashinfer.fp4_quantize``: what a call that leaves it
            # out gets; a caller out of sight may pass something else)
            found = [
                Candidate(c.qualname, b.line, "parameter default")
                for c in self._resolve(b.default, b.scope, seen)
                if c.qualname is not None and in_flashinfer(c.qualname)
            ]
            if found:
                return [*found, Candidate(None, b.line, "parameter given other values")]
        return opaque

    def _annotated(
        self, annotation: ast.expr, scope: Scope, line: int, seen: frozenset[tuple[int, str]]
    ) -> list[Candidate]:
        """The instances an annotation names (``X``, ``Optional[X]``, ``X | None``,
        ``Union[X, Y]``, ``"X"``), when one of them is FlashInfer's or the project's (whose
        annotated methods may give FlashInfer's, `_members_exported`); an opaque candidate
        stands for each other type."""
        out: list[Candidate] = []
        for arm in self._type_arms(annotation, scope, seen):
            found = self._resolve(arm, scope, seen)
            quals = [c.qualname for c in found]
            if quals and all(q is not None and in_flashinfer(q) for q in quals):
                out += [Candidate(f"{q}()", line, "parameter annotated") for q in quals]
            elif found and all(self._project_class(c) for c in found):
                # (an instance of a class of this project: what its methods return may be
                # FlashInfer's, `exports`; one of this module keeps saying so, `_inherited`)
                out += [
                    Candidate(
                        f"{c.qualname}()", line, "class" if c.what == "class" else "annotated"
                    )
                    for c in found
                ]
            else:
                out.append(Candidate(None, line, "parameter annotated as another type"))
        return out if any(c.qualname for c in out) else []

    def _project_class(self, cand: Candidate) -> bool:
        """Whether ``cand`` names a class of this project: a name of this module's top package
        (its own classes, or one imported from a sibling module), written as classes are
        (``CamelCase``, ``_PrivateCase``)."""
        qual = cand.qualname
        if qual is None or not self.module_name or in_flashinfer(qual) or qual.endswith(")"):
            return False
        top = self.module_name.partition(".")[0]
        last = qual.rpartition(".")[2]
        return (
            qual.startswith(top + ".")
            and last.lstrip("_")[:1].isupper()
            and cand.what in ("class", "import")
        )

    def _type_arms(
        self, annotation: ast.expr, scope: Scope, seen: frozenset[tuple[int, str]]
    ) -> list[ast.expr]:
        if isinstance(annotation, ast.Constant):
            if annotation.value is None:
                return []
            if isinstance(annotation.value, str):
                try:
                    parsed = ast.parse(annotation.value, mode="eval").body
                except SyntaxError:
                    return [annotation]
                return self._type_arms(parsed, scope, seen)
            return [annotation]
        if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
            left = self._type_arms(annotation.left, scope, seen)
            return left + self._type_arms(annotation.right, scope, seen)
        if isinstance(annotation, ast.Subscript):
            kinds = {c.qualname for c in self._resolve(annotation.value, scope, seen)}
            if kinds and kinds <= _OPTIONAL_KINDS:
                inner = annotation.slice
                parts = inner.elts if isinstance(inner, ast.Tuple) else [inner]
                return [a for part in parts for a in self._type_arms(part, scope, seen)]
        return [annotation]

    def _own_classes(self, cls: Scope) -> list[Scope]:
        """``cls`` and the classes of this module it derives from (nearest first)."""
        out, todo = [], [cls]
        while todo:
            current = todo.pop(0)
            if current in out or not isinstance(current.node, ast.ClassDef):
                continue
            out.append(current)
            parent = current.parent or self.module_scope
            for base in current.node.bases:
                if isinstance(base, ast.Name):
                    found = self.lookup(base.id, parent)
                    for b in found[1] if found else ():
                        if b.what == "class" and b.scope is None:
                            opened = self._class_scope(base.id, found[0] if found else None)
                            if opened is not None:
                                todo.append(opened)
        return out

    def _class_scope(self, name: str, where: Scope | None) -> Scope | None:
        known = self.derived.get(("classes",))
        if not isinstance(known, dict):  # (the module's classes by name and parent, once)
            classes: dict[tuple[str, int], Scope] = {}
            for scope in self.scopes.opened.values():
                if scope.kind == "class" and isinstance(scope.node, ast.ClassDef):
                    classes.setdefault((scope.node.name, id(scope.parent)), scope)
            self.derived[("classes",)] = known = classes
        found = known.get((name, id(where)))
        return found if isinstance(found, Scope) else None

    def _instances_of(
        self, cls: Scope, line: int, seen: frozenset[tuple[int, str]]
    ) -> list[Candidate]:
        """``self`` of a method of ``cls``: an instance of FlashInfer's classes when every base
        of ``cls`` (through the classes of this module it derives from) is one of them."""
        if not getattr(cls.node, "bases", None):
            return []  # (most classes: no base to be FlashInfer's)
        memo = ("instances", id(cls))
        cached = self.derived.get(memo)
        if isinstance(cached, list):
            return [Candidate(c.qualname, line, c.what) for c in cached]
        found = self._bases_instances(cls, line, seen)
        self.derived[memo] = found
        return found

    def _bases_instances(
        self, cls: Scope, line: int, seen: frozenset[tuple[int, str]]
    ) -> list[Candidate]:
        bases: list[str] = []
        for own in self._own_classes(cls):
            parent = own.parent or self.module_scope
            for base in own.node.bases:  # type: ignore[attr-defined]
                quals = [c.qualname for c in self._resolve(base, parent, seen)]
                if any(q is None for q in quals) and self._is_own_class(base, parent):
                    continue  # (followed by `_own_classes`)
                if not quals or not all(q is not None and in_flashinfer(q) for q in quals):
                    return []
                bases += [q for q in quals if q is not None]
        return [Candidate(f"{q}()", line, "self") for q in dict.fromkeys(bases)]

    def _is_own_class(self, base: ast.expr, scope: Scope) -> bool:
        if not isinstance(base, ast.Name):
            return False
        found = self.lookup(base.id, scope)
        return found is not None and any(b.what == "class" for b in found[1])

    def _super(self, scope: Scope, line: int) -> list[Candidate]:
        """``super()`` in a method: the FlashInfer bases of its class, when all are."""
        while scope.kind == "comprehension" and scope.parent is not None:
            scope = scope.parent
        if scope.owner_class is None:
            return [Candidate(None, line, "super()")]
        own = self._own_classes(scope.owner_class)
        candidates = self._instances_of(scope.owner_class, line, frozenset())
        if len(own) > 1 or not candidates:
            return [Candidate(None, line, "super()")]  # (a class of this module in between)
        return [Candidate(c.qualname, line, "super()") for c in candidates]

    def _passed(
        self, name: str, owner: Scope, b: Binding, seen: frozenset[tuple[int, str]]
    ) -> list[Candidate]:
        """What the calls in this module of the function ``owner`` opens pass for its parameter
        ``name``, where one of them passes a FlashInfer instance: plain calls, and
        ``functools.partial(f, x)`` / ``types.MethodType(f, x)`` / ``f.__get__(x)`` binding
        its first parameters. A call that passes something else, a use that is no such call
        (the function handed around, decorated), or calls from other modules add an opaque
        candidate: the site is then reported with what else it may be, never rewritten.
        [] where no call in sight passes a FlashInfer instance."""
        node = owner.node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.decorator_list:
            return []
        outer = owner.parent
        if outer is None or outer.kind == "class":
            return []
        memo = ("passed", id(node), name)
        cached = self.derived.get(memo)
        if isinstance(cached, list):
            return cached
        self.derived[memo] = []  # (a recursive call passes the parameter on: neutral)
        values, complete = self._values_passed(node, outer, name, b.index, b.default)
        found: list[Candidate] = []
        for value, scope in values:
            if isinstance(value, ast.Name) and value.id == name:
                here = self.lookup(name, scope)
                if here is not None and here[0] is owner:
                    continue  # passed on to itself
            for c in self._resolve(value, scope, seen):
                q = c.qualname
                if q is not None and in_flashinfer(q):  # (an instance, a class, a function)
                    found.append(Candidate(q, b.line, "parameter"))
                else:
                    complete = False
        if found and complete and outer.kind == "module":
            # (other modules may import it and pass something else)
            complete = bool(self.only_here and self.only_here(node.name))
        if found and not complete:
            found.append(Candidate(None, b.line, "parameter given other values"))
        unique = list({c.qualname: c for c in found}.values())
        self.derived[memo] = unique
        return unique

    def _values_passed(
        self,
        node: ast.FunctionDef | ast.AsyncFunctionDef,
        outer: Scope,
        name: str,
        index: int | None,
        default: ast.expr | None = None,
    ) -> tuple[list[tuple[ast.expr, Scope]], bool]:
        """The value each use of ``node`` in this module passes for its parameter ``name`` (a
        call that leaves it out: its ``default``, in ``outer``), and whether those are all of
        its uses (a use that is not a call binding it, or that leaves it out with no default or
        hides it in ``*args``, makes them not all)."""
        refs = self.scopes.loads.get(node.name, [])
        uses = [
            (ref, scope)
            for ref, scope in refs
            if (found := self.lookup(node.name, scope)) is not None
            and found[0] is outer
            and any(b.what == "def" and b.line == node.lineno for b in found[1])
        ]
        complete = len(uses) == len(refs) and bool(uses)
        # the calls a name is the callee of, or the first argument of, or ``.__get__``'s object
        known = self.derived.get(("callers",))
        if not isinstance(known, dict):
            callers: dict[int, tuple[str, ast.Call]] = {}
            for call, _ in self.calls:
                callers[id(call.func)] = ("callee", call)
                if call.args:
                    callers.setdefault(id(call.args[0]), ("bound", call))
                if isinstance(call.func, ast.Attribute) and call.func.attr == "__get__":
                    callers.setdefault(id(call.func.value), ("get", call))
            self.derived[("callers",)] = known = callers
        out: list[tuple[ast.expr, Scope]] = []
        for ref, scope in uses:
            entry = known.get(id(ref))
            how, call = entry if entry is not None else ("", ast.Call(ast.Name(""), [], []))
            value: ast.expr | None = None
            if how == "callee":
                value = _bound(node, call.args, call.keywords, name, index)
                if value is None and default is not None and _left_out(call, name, index):
                    out.append((default, outer))
                    continue
            elif how == "bound":
                kind = {c.qualname for c in self._resolve(call.func, scope, frozenset())}
                if kind and kind <= _BINDERS:
                    value = _bound(node, call.args[1:], call.keywords, name, index)
            elif how == "get" and call.args:
                value = _bound(node, call.args[:1], [], name, index)
            if value is None:
                complete = False
            else:
                out.append((value, scope))
        return out, complete


def _an_instance(qualname: str) -> bool:
    """Whether ``qualname`` is an instance of a FlashInfer class (``flashinfer.X()``, ``X`` a
    class by its ``CamelCase`` name), not what one of its functions returns."""
    if not qualname.endswith("()") or qualname.count("()") != 1 or not in_flashinfer(qualname):
        return False
    return qualname[:-2].rpartition(".")[2][:1].isupper()


def _isinstance_tests(calls: Iterable[tuple[ast.Call, Scope]]) -> dict[str, dict[int, Scope]]:
    """The file's ``isinstance(name, classes)`` calls, by the name they test, each (by id)
    with the scope it is evaluated in (a name never tested is never narrowed: most files test
    none that matters, `NameResolver._narrowed`)."""
    out: dict[str, dict[int, Scope]] = {}
    for call, scope in calls:
        func, args = call.func, call.args
        if (
            isinstance(func, ast.Name)
            and func.id == "isinstance"
            and len(args) == 2
            and not call.keywords
            and isinstance(args[0], ast.Name)
        ):
            out.setdefault(args[0].id, {})[id(call)] = scope
    return out


def _isinstance_facts(test: ast.expr, holds: bool) -> Iterator[tuple[ast.Call, bool]]:
    """The ``isinstance(name, classes)`` calls that ``test`` holding (or failing, ``holds``)
    makes certain, each with whether it is true: ``a and b`` that holds, ``a or b`` that
    fails, ``not a`` either way."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        yield from _isinstance_facts(test.operand, not holds)
    elif isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) is holds:
        for value in test.values:
            yield from _isinstance_facts(value, holds)
    elif (
        isinstance(test, ast.Call)
        and isinstance(test.func, ast.Name)
        and test.func.id == "isinstance"
        and len(test.args) == 2
        and not test.keywords
    ):
        yield test, holds


def _distinct(candidates: list[Candidate]) -> tuple[Candidate, ...]:
    """``candidates`` with one of each qualified name (a name imported in every one of 2,000
    blocks of a file is one candidate, not 2,000); opaque ones kept."""
    seen: set[str] = set()
    out = []
    for c in candidates:
        if c.qualname is not None:
            if c.qualname in seen:
                continue
            seen.add(c.qualname)
        out.append(c)
    return tuple(out)


def _contained(elements: Iterable[Candidate]) -> list[Candidate]:
    """A container of ``elements``: each known one as ``<qualname>[]``."""
    return [Candidate(f"{c.qualname}[]" if c.qualname else None, c.line, c.what) for c in elements]


def _element(containers: Iterable[Candidate], line: int) -> list[Candidate]:
    """An element of ``containers``: what a ``<qualname>[]`` holds; anything else is opaque."""
    out = []
    for c in containers:
        if c.qualname is not None and c.qualname.endswith("[]"):
            out.append(Candidate(c.qualname[:-2], c.line, c.what))
        else:
            out.append(Candidate(None, line, "element"))
    return out


# ``Optional[X]``, ``Union[X, Y]``: the types an annotation may hold
_OPTIONAL_KINDS = frozenset({"typing.Optional", "typing.Union", "typing_extensions.Optional"})
# calls that bind a function's first parameters: ``partial(f, x)``, ``MethodType(f, x)``
_BINDERS = frozenset({"functools.partial", "types.MethodType"})


def _place(index: ast.expr) -> int | None:
    """A subscript's index when it is a whole number written out (``x[1]``, ``x[-1]``)."""
    if isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub):
        inner = _place(index.operand)
        return None if inner is None else -inner
    if isinstance(index, ast.Constant) and type(index.value) is int:
        return index.value
    return None


def _bound(
    node: ast.FunctionDef | ast.AsyncFunctionDef,
    args: list[ast.expr],
    keywords: list[ast.keyword],
    name: str,
    index: int | None,
) -> ast.expr | None:
    """What arguments bind to the parameter ``name`` (at ``index``): None when they leave it
    out or cannot be read (``*args``, ``**kwargs``)."""
    for kw in keywords:
        if kw.arg is None:
            return None
        if kw.arg == name:
            return kw.value
    if index is not None and index < len(args):
        for arg in args[: index + 1]:
            if isinstance(arg, ast.Starred):
                return None
        return args[index]
    return None


def _left_out(call: ast.Call, name: str, index: int | None) -> bool:
    """Whether ``call`` surely leaves the parameter ``name`` (at ``index``) to its default:
    neither passed nor possibly hidden in ``*args`` or ``**kwargs``."""
    if any(isinstance(a, ast.Starred) for a in call.args):
        return False
    if any(kw.arg is None or kw.arg == name for kw in call.keywords):
        return False
    return index is None or index >= len(call.args)


def _is_getattr(expr: ast.expr) -> bool:
    return (
        isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "getattr"
    )


def _forwards(fn: ast.FunctionDef) -> bool:
    """Whether ``fn`` is ``def f(*args, **kwargs)`` whose every return is a call given
    ``(*args, **kwargs)`` unchanged."""
    a = fn.args
    if a.posonlyargs or a.args or a.kwonlyargs or a.vararg is None or a.kwarg is None:
        return False
    returns = [n.value for n in _own_statements(fn) if isinstance(n, ast.Return)]
    star, double = a.vararg.arg, a.kwarg.arg
    return bool(returns) and all(
        isinstance(r, ast.Call)
        and len(r.args) == 1
        and isinstance(r.args[0], ast.Starred)
        and isinstance(r.args[0].value, ast.Name)
        and r.args[0].value.id == star
        and len(r.keywords) == 1
        and r.keywords[0].arg is None
        and isinstance(r.keywords[0].value, ast.Name)
        and r.keywords[0].value.id == double
        for r in returns
    )


def _own_statements(fn: ast.FunctionDef) -> Iterator[ast.AST]:
    """The nodes of ``fn``'s body, not those of the functions, lambdas and classes in it."""
    todo: list[ast.AST] = list(fn.body)
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
            ):
                todo.append(child)
