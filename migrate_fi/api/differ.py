"""What changed in FlashInfer's public API between two releases, and what it means for a call.

The central question for a call written for release A and run on release B: do its positional
arguments bind to the same parameters? `compare_callables` answers it with the first positional
index that binds differently ("misbinding index"), or None. Renames at the same position do not
count (a positional call still reaches the same parameter); insertions, removals, reorders, and
parameters that became keyword-only do. Deprecation shims (``*deprecated_positional_args`` mapped by
the release's own legacy-name table, with ``**kwargs`` forwarded to the implementation) are read as
"still accepted, with a warning": the old positional names stay valid keywords.

`diff_releases` lists every change between two releases, classified, for `migrate-fi api-diff`.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any, NamedTuple

from migrate_fi.api.paths import CACHE_ATTRIBUTES, ApiPath, is_public
from migrate_fi.api.store import (
    Section,
    keys_ending_with,
    keys_holding,
    load_release,
    on_forget,
)
from migrate_fi.base import patterns
from migrate_fi.base.messages import Said, say

__all__ = [
    "Api",
    "CallSignature",
    "CallableDiff",
    "Change",
    "DefaultChange",
    "api_for",
    "changed_callables",
    "changed_defaults",
    "compare_callables",
    "defaults_of",
    "diff_releases",
    "enum_parameters_of",
    "is_cosmetic",
    "literal_default",
]


class Param(NamedTuple):
    name: str
    kind: str  # P positional-only, A positional-or-keyword, V *args, K keyword-only, W **kwargs
    default: str | None
    # what the function turns a ``None`` default into on every path (``if x is None: x = 1``)
    mapped: str | None = None

    @property
    def positional(self) -> bool:
        return self.kind in ("P", "A")

    @property
    def effective(self) -> str | None:
        """The value a call that leaves the parameter out gets."""
        return self.mapped if self.mapped is not None else self.default


class CallSignature(NamedTuple):
    """The parameters of a callable as a call site sees them (``self``/``cls`` already dropped),
    with the deprecation shim the release reads its ``*args`` through, if any."""

    path: str  # the public path the user wrote, e.g. flashinfer.BatchDecodeWithPagedKVCacheWrapper().plan
    params: tuple[Param, ...]
    shim: dict[str, Any] | None = None  # {"legacy": [...], "forwards": name}
    forward_params: tuple[Param, ...] = ()  # params of the function **kwargs are forwarded to
    # old keyword -> new name, declared by the release (`@deprecated_aliases(old="new")`):
    # the old keyword is still taken, with a warning
    aliases: tuple[tuple[str, str], ...] = ()
    # parameters the function warns about as deprecated when they are passed
    deprecated: frozenset[str] = frozenset()
    # parameters whose value the function never uses (at most to warn that it was passed)
    ignored: frozenset[str] = frozenset()
    # the message of the deprecation warning every call gives ("": not written out); None:
    # none (`migrate_fi.api.extract.warned_always`)
    warns: str | None = None

    @property
    def positional(self) -> list[Param]:
        return [p for p in self.params if p.positional]

    @property
    def varargs(self) -> Param | None:
        return next((p for p in self.params if p.kind == "V"), None)

    @property
    def varkw(self) -> bool:
        return any(p.kind == "W" for p in self.params)

    def keyword_names(self) -> set[str]:
        names = {p.name for p in self.params if p.kind in ("A", "K")}
        names |= {old for old, _ in self.aliases}
        if self.shim:
            names |= set(self.shim.get("legacy", ()))
            names |= {p.name for p in self.forward_params if p.kind in ("A", "K")}
        return names

    def accepts_keyword(self, name: str) -> bool:
        """Does a parameter of this name exist, taken by keyword? Only explicit parameters (and a
        deprecation shim's own names) count: where ``**kwargs`` would swallow it, nobody knows."""
        return name in self.keyword_names()

    def may_accept_keyword(self, name: str) -> bool:
        """Would ``name=`` get past the call without a TypeError? (``**kwargs`` swallows it)."""
        return self.accepts_keyword(name) or (
            self.varkw and not self.shim and not self.forward_params
        )

    def bound_name(self, index: int) -> str | None:
        """The parameter a positional argument at ``index`` binds to (through a shim's table)."""
        pos = self.positional
        if index < len(pos):
            return pos[index].name
        if self.shim and self.varargs is not None:
            legacy = self.shim.get("legacy", [])
            k = index - len(pos)
            return legacy[k] if k < len(legacy) else None
        return None


@dataclass
class CallableDiff:
    """How positional calls written for ``old`` bind on ``new``."""

    old: CallSignature
    new: CallSignature
    misbinding_index: int | None = None  # first positional index that binds differently
    deprecated_index: int | None = None  # first positional index accepted only through a shim
    renamed: dict[str, str] = field(default_factory=dict)
    # how each rename is known: "declared", "same", "place" or "likely" (`Rename.evidence`)
    rename_evidence: dict[str, str] = field(default_factory=dict)
    removed: list[str] = field(default_factory=list)
    newly_required: list[str] = field(default_factory=list)

    @property
    def declared_renames(self) -> dict[str, str]:
        """Renames the new release declares itself (the old keyword still works, deprecated)."""
        return {a: b for a, b in self.renamed.items() if self.rename_evidence[a] == "declared"}

    @property
    def affected_from(self) -> int | None:
        """Positional calls with more arguments than this need a rewrite."""
        indexes = [i for i in (self.misbinding_index, self.deprecated_index) if i is not None]
        return min(indexes) if indexes else None


_public = is_public  # (no component of the path starts with `_`)


class Api:
    """One release's API record (`migrate_fi.api.extract`), with lookups by public path."""

    def __init__(self, version: str, record: dict[str, Any]) -> None:
        self.version = version
        self.defs: Mapping[str, Any] = record["defs"]
        self.exports: Mapping[str, str] = record["exports"]
        # names a module imports but leaves out of `__all__`: reached, never suggested
        self.attrs: Mapping[str, str] = record.get("attrs") or {}
        self.modules: Mapping[str, Any] = record["modules"]
        self._names: dict[str, frozenset[str]] = {}
        self._asked: dict[str, list[str]] = {}  # (`_named`: the names asked, then the index)
        self._by_last_name: dict[str, list[str]] | None = None
        self._public: dict[str, str] | None = None
        self._folders: frozenset[str] | None = None  # (`_namespace`)

    def canonical(self, path: str) -> str | None:
        """The definition (or module) a public path reaches. A name a package binds shadows its
        submodule of the same name (``flashinfer.mamba.checkpointing_ssu`` is the function)."""
        if path in self.defs:
            return path
        if path in self.exports:
            return self.exports[path]
        if path in self.attrs:
            return self.attrs[path]
        return path if path in self.modules else None

    def kind(self, key: str) -> str | None:
        """A definition's kind (``"f"``, ``"c"``), None when there is none. Read from its text
        where the record's own ``"k"`` is found before any nested object (nothing decoded)."""
        if isinstance(self.defs, Section):
            if key not in self.defs:
                return None
            text = self.defs.text(key)
            at = text.find(b'"k":"')
            # (a string cannot hold `"k":"` unescaped; before it, only the record's own brace)
            if at > 0 and text.count(b"{", 0, at) == 1 and text[at + 6 : at + 7] == b'"':
                return chr(text[at + 5])
        record = self.defs.get(key)
        return None if record is None else record.get("k")

    def may_mention(self, key: str, words: tuple[bytes, ...]) -> bool:
        """False when the definition ``key`` certainly holds none of ``words`` (its text does
        not contain them); True otherwise (also when there is no such definition)."""
        if isinstance(self.defs, Section) and key in self.defs:
            text = self.defs.text(key)
            return any(w in text for w in words)
        return True

    def names(self, module: str) -> frozenset[str]:
        found = self._names.get(module)
        if found is None:
            found = frozenset(self.modules.get(module, {}).get("names", ()))
            self._names[module] = found
        return found

    def reads(self, module: str) -> frozenset[str] | None:
        """The names of ``module`` that its functions read from it when they run (what a patch
        ``module.f = g`` reaches); None for a module this release does not have, or whose
        names cannot all be listed."""
        entry = self.modules.get(module)
        if entry is None or entry.get("open"):
            return None
        names = entry.get("names", ())
        return frozenset(names[i] for i in entry.get("reads", ()))

    def method_named(self, cls_path: str, name: str, seen: frozenset[str] = frozenset()) -> str:
        """The method another name of it in a class body names (``begin_forward = plan``: a
        call of ``begin_forward`` is one of ``plan``), in the class or a base; else ``name``."""
        record = self.defs.get(cls_path) if cls_path not in seen else None
        if record is None or record.get("k") != "c" or name in record["methods"]:
            return name
        aliased = record.get("maliases", {}).get(name)
        if aliased is not None:
            return str(aliased)
        for base in record.get("bases", []):
            found = self.method_named(self.canonical(base) or base, name, seen | {cls_path})
            if found != name:
                return found
        return name

    def _method(self, cls_path: str, name: str, seen: frozenset[str] = frozenset()) -> Any | None:
        if cls_path in seen:
            return None
        record = self.defs.get(cls_path)
        if record is None or record.get("k") != "c":
            return None
        method = record["methods"].get(name)
        if method is not None:
            return method
        for base in record.get("bases", []):
            found = self._method(self.canonical(base) or base, name, seen | {cls_path})
            if found is not None:
                return found
        return None

    def exists(self, path: str) -> bool | None:
        """Does ``path`` exist in this release? True, False (certainly not: gone from the module
        that would hold it, from its ``__getattr__`` and star imports, or from the class and all
        its bases), or None when that cannot be known (an attribute of a value, a class with a
        base from another package, a module that binds names dynamically)."""
        dotted = ApiPath(path).dotted
        function = self.cache_owner(dotted)
        if function is not None:  # (what a cache gives the function it wraps)
            return self.cached(function)
        parts = dotted.split(".")
        if parts[0] != "flashinfer" or "flashinfer" not in self.modules:
            return None
        current, kind = "flashinfer", "module"
        for i in range(1, len(parts)):
            name, prefix, last = parts[i], ".".join(parts[: i + 1]), i == len(parts) - 1
            if kind == "module":
                found = self._module_member(current, name, prefix)
                if found is None or found is False:
                    return found
            else:
                found = self._class_member(current, name)
                if found is not True:
                    return found
                return True if last else None  # an attribute of a method or value
            if found is True:
                return True if last else None
            current, kind = found
        return True

    def _module_member(self, module: str, name: str, prefix: str) -> Any:
        """(path, kind) of ``module.name``; True for a value; False if surely not there; None
        when unknowable."""
        entry = self.modules.get(module)
        if entry is None:
            if not self._namespace(module):
                return None
            # (a namespace package binds nothing itself: its modules are all there is)
            return (
                (prefix, "module") if prefix in self.modules or self._namespace(prefix) else False
            )
        if name in self.names(module) or any(name in self.names(s) for s in entry.get("stars", ())):
            target = self.canonical(prefix)
            if target is None or (target not in self.defs and target not in self.modules):
                return True  # a value, or something of another package
            if target in self.modules:
                return target, "module"
            return target, ("class" if self.kind(target) == "c" else "function")
        if prefix in self.modules or self._namespace(prefix):
            return prefix, "module"
        if entry.get("open"):
            return None
        return False

    def _namespace(self, path: str) -> bool:
        """Whether ``path`` is a folder of the package with modules under it and no
        `__init__.py` of its own (a namespace package: ``import path.module`` works, and the
        record lists only the modules in it)."""
        if self._folders is None:
            folders = set()
            for m in self.modules:  # (each dot found, not each character looked at)
                i = m.find(".")
                while i != -1:
                    folders.add(m[:i])
                    i = m.find(".", i + 1)
            self._folders = frozenset(folders)
        return path in self._folders

    def instance_attributes(self, key: str) -> frozenset[str] | None:
        """The attributes instances of the class ``key`` set on themselves (``self.x = ...``
        in its methods, as extracted), or None when ``key`` is not a class of this release."""
        record = self.defs.get(key)
        if record is None or record.get("k") != "c":
            return None
        return frozenset(record.get("iattrs", ()))

    def _class_member(self, cls: str, name: str, seen: frozenset[str] = frozenset()) -> bool | None:
        record = self.defs.get(cls)
        if record is None or record.get("k") != "c" or cls in seen:
            return None
        if (
            name in record["methods"]
            or name in record.get("attrs", ())
            or name in record.get("iattrs", ())
        ):
            return True
        unknown = False
        for base in record.get("bases", []):
            target = self.canonical(base) or base
            if target not in self.defs:
                unknown = True  # a base of another package (torch.nn.Module, Enum...)
                continue
            found = self._class_member(target, name, seen | {cls})
            if found is True:
                return True
            unknown = unknown or found is None
        return None if unknown else False

    def surely_missing(self, path: str) -> bool:
        """True when ``path`` certainly does not exist in this release."""
        return self.exists(path) is False

    def method_names(self, cls_path: str, seen: frozenset[str] = frozenset()) -> list[str]:
        """Methods of a class, its bases' included (nearest first)."""
        record = self.defs.get(cls_path)
        if cls_path in seen or record is None or record.get("k") != "c":
            return []
        names = list(record["methods"])
        for base in record.get("bases", []):
            names += self.method_names(self.canonical(base) or base, seen | {cls_path})
        return list(dict.fromkeys(names))

    def key(self, path: str) -> str | None:
        """The definition a public call path reaches: ``canonical`` or ``canonical().method``
        (``X()``, an instance called, is ``X().__call__``)."""
        path = _instance_call(path)
        api_path = ApiPath(path)
        if api_path.is_method:
            cls = self.canonical(api_path.owner)
            if cls is None:
                return None
            return str(ApiPath.method_of(cls, self.method_named(cls, api_path.name)))
        found = self.canonical(path)
        if found is None:  # `Cls.method`, or `f.cache_clear` of a function
            owner, _, attribute = path.rpartition(".")
            cls = self.canonical(owner)
            if cls is not None and self.kind(cls) == "c":
                return str(ApiPath.method_of(cls, self.method_named(cls, attribute)))
            function = self.cache_owner(path)
            if function is not None:
                return f"{function}.{attribute}"
        return found

    def callable(self, path: str) -> CallSignature | None:
        """``path`` is a public path; ``X()`` stands for an instance of class X:
        ``flashinfer.Wrapper`` (the constructor), ``flashinfer.Wrapper().plan``, ``flashinfer.f``;
        ``flashinfer.Kernel()``, an instance called, is its ``__call__``."""
        path = _instance_call(path)
        api_path = ApiPath(path)
        if api_path.is_method:
            cls, method = self.canonical(api_path.owner), api_path.name
            if cls is None or "." in method:
                return None
            record = self._method(cls, self.method_named(cls, method))
            if record is None or record.get("dec") == "property":
                return None
            params = _params(record["sig"])
            if record.get("dec") != "static":
                params = params[1:]
            return self._with_shim(path, params, record, cls)
        target = self.canonical(path)
        if target is None:
            return self._class_attribute(path) or self._cache_attribute(path)
        record = self.defs.get(target)
        if record is None:
            return None
        if record["k"] == "f":
            return self._with_shim(path, _params(record["sig"]), record, None)
        init = self._method(target, "__init__")
        if init is None:
            return None
        return self._with_shim(path, _params(init["sig"])[1:], init, target)

    def same_definition(self, other: Api, path: str) -> str | None:
        """The definition ``path`` is read from when ``other`` records it alike, so that
        ``callable(path)`` is certainly the same on both: its function, or its class holding
        the method itself (``__init__`` for the constructor) and the method a deprecation shim
        forwards to. None says nothing (an inherited method, say): compare the signatures."""
        path = _instance_call(path)
        api_path = ApiPath(path)
        owner, method = (api_path.owner, api_path.name) if api_path.is_method else (path, None)
        target = self.canonical(owner)
        if target is None or target != other.canonical(owner):
            return None
        if not _same_entry(self.defs, other.defs, target):
            return None
        record = self.defs[target]
        if record.get("k") == "f":
            return target if method is None else None
        own = record.get("methods", {}) if record.get("k") == "c" else {}
        found = own.get("__init__" if method is None else method)
        if found is None:
            return None
        forwards = (found.get("shim") or {}).get("forwards")
        return target if forwards is None or forwards in own else None

    def _class_attribute(self, path: str) -> CallSignature | None:
        """``Cls.method`` called on the class: a static method binds as written, a class method
        without ``cls``, an instance method with the instance as its first argument."""
        cls_part, _, method = path.rpartition(".")
        cls = self.canonical(cls_part)
        if cls is None or self.kind(cls) != "c":
            return None
        record = self._method(cls, method)
        if record is None or record.get("dec") == "property":
            return None
        params = _params(record["sig"])
        if record.get("dec") == "class":
            params = params[1:]
        return self._with_shim(path, params, record, cls)

    def reads_location(self, path: str) -> bool:
        """Whether the definition at ``path`` depends on where its module is (``loc``)."""
        record = self.defs.get(self.canonical(path) or "")
        return bool(record and record.get("loc"))

    def cached(self, function: str) -> bool:
        """Whether the function ``function`` (a key of ``defs``) is wrapped by a cache."""
        record = self.defs.get(function)
        return bool(record and record.get("cache"))

    def cache_owner(self, path: str) -> str | None:
        """The function (its key in ``defs``) where ``path`` names what a cache would give it
        (``f.cache_clear``, ``cache_info``, ``cache_parameters``), cached or not; else None."""
        owner, _, attribute = path.rpartition(".")
        if attribute not in CACHE_ATTRIBUTES:
            return None
        function = self.canonical(owner)
        return function if function is not None and self.kind(function) == "f" else None

    def _cache_attribute(self, path: str) -> CallSignature | None:
        """``f.cache_clear`` (``cache_info``, ``cache_parameters``) of a cached function: a
        callable of no parameters."""
        function = self.cache_owner(path)
        if function is None or not self.cached(function):
            return None
        return CallSignature(path, (), None, (), (), frozenset(), frozenset())

    def _with_shim(
        self, path: str, params: tuple[Param, ...], record: dict[str, Any], cls: str | None
    ) -> CallSignature:
        shim = record.get("shim")
        forward: tuple[Param, ...] = ()
        if shim and shim.get("forwards") and cls is not None:
            target = self._method(cls, shim["forwards"])
            if target is not None:
                forward = _params(target["sig"])[1:]
        aliases = tuple(sorted(record.get("aliases", {}).items()))
        return CallSignature(
            path,
            params,
            shim,
            forward,
            aliases,
            frozenset(record.get("dep", ())),
            frozenset(record.get("ign", ())),
            record.get("warns"),
        )

    def public_paths(self) -> dict[str, str]:
        """Every public path (no component starting with `_`) of a def -> its canonical path
        (worked out once: do not change the dict)."""
        if self._public is None:
            # (a def's path is its own; an export's, what it names, when that is a def)
            out = {path: path for path in self.defs if _public(path)}
            for path, target in self.exports.items():
                if path not in out and _public(path) and target in self.defs:
                    out[path] = target
            self._public = out
        return self._public

    def same_name_elsewhere(self, path: str, kind: str | None = None) -> list[str]:
        """Where a definition named like ``path``'s last component lives in this release: one
        public path per definition, of the same kind (`"f"`, `"c"`) if given; ``path`` itself
        excluded. For "moved to" hints and fixes. Of a definition's paths, one through its own
        package (the module that defines it, or a package above it) before one through a
        module that only imports it for its own use (`flashinfer.autotuner.make_bucket_mapper`,
        not `flashinfer.mla.make_bucket_mapper`); then the shortest."""
        best: dict[str, tuple[int, int, str]] = {}
        for public in self._named(path.rpartition(".")[2]):
            if public == path or "._" in public or public.startswith("_"):
                continue  # (itself, or not public: a component starts with `_`)
            target = self.canonical(public)
            if target is None or target not in self.defs:
                continue
            if kind is not None and self.kind(target) != kind:
                continue
            home = target.startswith(public.rpartition(".")[0] + ".")
            rank = (0 if home else 1, len(public), public)
            if target not in best or rank < best[target]:
                best[target] = rank
        return sorted(public for _, _, public in best.values())

    def _named(self, name: str) -> list[str]:
        """The paths of ``defs`` and ``exports`` whose last component is ``name`` (some that
        are not public too). A run asks this of a few names, each found by going through the
        keys (indexing every public path by its last name cost 14 ms of 0.7.4 in each worker
        that gave a "moved to" hint on vLLM's tree); after `_FEW_NAMES`, the public paths are
        indexed."""
        if self._by_last_name is None and len(self._asked) >= _FEW_NAMES:
            index: dict[str, list[str]] = {}
            for public in self.public_paths():
                index.setdefault(public.rpartition(".")[2], []).append(public)
            self._by_last_name, self._asked = index, {}
        if self._by_last_name is not None:
            return self._by_last_name.get(name, [])
        found = self._asked.get(name)
        if found is None:
            suffix = "." + name
            found = [*keys_ending_with(self.defs, suffix), *keys_ending_with(self.exports, suffix)]
            if name in self.defs or name in self.exports:
                found.append(name)  # (a path of one component)
            self._asked[name] = found
        return found


_FEW_NAMES = 8  # names `Api._named` finds by going through the keys before it indexes them


def _same_entry(a: Mapping[str, Any], b: Mapping[str, Any], key: str) -> bool:
    """Do two releases record ``key`` alike? (Texts compared where both are kept as text.)"""
    if key not in a or key not in b:
        return False
    if isinstance(a, Section) and isinstance(b, Section):
        return a.text(key) == b.text(key)
    return bool(a[key] == b[key])


def moved_to(old: Api, new: Api, path: str) -> tuple[str | None, list[str]]:
    """Where ``path`` (gone from ``new``) went: ``(the public path of the same definition,
    the other definitions of its name and kind)``. The same definition is the one whose code
    hashes the same (`migrate_fi.api.extract.body_hash`), and only when there is one: a name
    several definitions share, or code that changed as it moved, is left for a person."""
    target = old.canonical(path) or ""
    record = old.defs.get(target, {})
    kind = record.get("k")
    if kind not in ("f", "c"):
        return None, []
    places = new.same_name_elsewhere(path, kind)
    code = record.get("h")
    same = [p for p in places if code and new.defs[new.canonical(p) or ""].get("h") == code]
    if len(same) == 1:
        return same[0], [p for p in places if p != same[0]]
    return None, places


def moved_alike(old: Api, new: Api, path: str) -> str | None:
    """Where the function ``path`` (gone from ``new``) went with its code changed but its
    signature the same: the one function of its name elsewhere that takes the same parameters
    (names, kinds, defaults). None when `moved_to` finds the same code, for a class, or when
    there is no such single one."""
    same, places = moved_to(old, new, path)
    before = old.callable(path)
    if same is not None or before is None or old.kind(old.canonical(path) or "") != "f":
        return None  # (a class is more than its constructor's parameters)
    alike = [
        p
        for p in places
        if (after := new.callable(p)) is not None and after.params == before.params
    ]
    return alike[0] if len(alike) == 1 else None


def moved_hint(old: Api, new: Api, path: str, limit: int = 3, since: str | None = None) -> Said:
    """A hint for a ``path`` that ``new`` no longer has: `` (moved to X: the same code)`` when
    `moved_to` finds the same definition, else `` (the same name is defined at X: compare before
    switching)`` for definitions (or modules) of the same name and kind; ``""`` when nowhere, or
    in more than ``limit`` places (a common name says nothing about where this one went); for
    ``f.cache_clear`` of a function still there, that its cache went (`cache_gone`; ``since``:
    the release that dropped it, where the caller knows it)."""
    function = cache_gone(old, new, path)
    if function is not None:
        return say(
            " ({function} is still there, no longer wrapped by functools.cache{since}: it has"
            " no cache, and .{attribute} raises AttributeError)",
            "（`{function}` 仍在，但{since}不再由 `functools.cache` 包装：它没有缓存，"
            "`.{attribute}` 会抛出 `AttributeError`）",
            function=function,
            since=say(" since {v}", "自 {v} 起", v=since) if since else say("", ""),
            attribute=path.rpartition(".")[2],
        )
    if path in old.modules:
        name = path.rsplit(".", 1)[-1]
        places = sorted(m for m in new.modules if m.rsplit(".", 1)[-1] == name and "._" not in m)
    else:
        same, places = moved_to(old, new, path)
        if same is not None and (old.reads_location(path) or new.reads_location(same)):
            return say(
                " (moved to {same}: the same code, but it reads where its module is, which moved:"
                " check what it computes from there)",
                "（移到了 `{same}`：代码相同，但它读取其模块所在的位置，而模块已移动："
                "请核对它据此计算的结果）",
                same=same,
            )
        if same is not None:
            return say(
                " (moved to {same}: the same code)", "（移到了 `{same}`：代码相同）", same=same
            )
    if not places or len(places) > limit:
        return say("", "")
    return say(
        " (the same name is defined at {places}: compare before switching)",
        "（同名定义位于 {places}：切换前请比较两者）",
        places=Said(" and ".join(places), "、".join(f"`{p}`" for p in places)),
    )


def cache_gone(old: Api, new: Api, path: str) -> str | None:
    """The function's name where ``path`` is ``function.cache_clear`` (or another attribute a
    cache gives) of a function cached on ``old`` and still a function, uncached, on ``new``."""
    before, after = old.cache_owner(path), new.cache_owner(path)
    if before is None or after is None or not old.cached(before) or new.cached(after):
        return None
    return path.rpartition(".")[0].rpartition(".")[2]


def _cache_key(api: Api, key: str) -> bool:
    """Whether ``key`` (of `_callable_paths`) is what a cache gives a function of ``api``."""
    return key.rpartition(".")[2] in CACHE_ATTRIBUTES and key not in api.defs


def _instance_call(path: str) -> str:
    """``X()`` (calling an instance of X, as the resolver names it) is ``X().__call__``."""
    return f"{path}.__call__" if path.endswith("()") else path


def _params(sig: list[list[Any]]) -> tuple[Param, ...]:
    return tuple(Param(*entry) for entry in sig)


@lru_cache(maxsize=6)  # a release's record is large: keep the few a run compares
def api_for(version: str) -> Api:
    return Api(version, load_release(version))


def _same_meaning(old: list[Param], new: list[Param], j: int, renames: dict[str, Rename]) -> bool:
    """Does position j reach the same parameter? Same name, or a rename the data proves
    (`match_renames`: the same place, kind and default, a name of the same words) or the release
    declares, in place."""
    if j >= len(new):
        return False
    if old[j].name == new[j].name:
        return True
    rename = renames.get(old[j].name)
    return rename is not None and rename.new == new[j].name and rename.evidence != "likely"


def safe_rename(evidence: str) -> bool:
    """Is a rename known well enough to rewrite the keyword without a person reading it?"""
    return evidence in ("declared", "same")


class Rename(NamedTuple):
    """A parameter that is called otherwise on the new release."""

    new: str
    # "declared": the release's own `@deprecated_aliases` (the old keyword still works there);
    # "same": the same place among the parameters, the same kind and default, and a name of the
    # same words (`sf_q` -> `q_sf`, `block_table` -> `block_tables`): the same parameter;
    # "place": the same place, kind and default, one name's words within the other's
    # (`comm_backend` -> `comm`, `scale_softmax_log2` -> `softmax_scale`): positional calls
    # still reach it, but a dropped word may be a changed meaning (a person reads the rename);
    # "likely": the same kind and default and the closest name, elsewhere in the signature
    evidence: str


_RENAME_EVIDENCE = {
    "declared": "declared by FlashInfer: the old keyword still works, deprecated",
    "same": "the same place, kind and default, the same words",
    "place": "the same place, kind and default, fewer or more words: check the meaning",
    "likely": "likely: the same kind and default and the closest name, elsewhere",
}
_CAMEL = patterns.compile(r"([a-z0-9])([A-Z])")


def _words(name: str) -> frozenset[str]:
    """The words of a parameter name, lower case, plurals made singular (`kvLens` and `kv_len`
    are the same words), torch's `dtype` the words it stands for (`kv_dtype` and
    `kv_data_type`)."""
    words: set[str] = set()
    for word in _CAMEL.sub(r"\1_\2", name).lower().split("_"):
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        if word == "dtype":
            words.update(("data", "type"))
        elif word:
            words.add(word)
    return frozenset(words)


def _likeness(a: str, b: str) -> float:
    """Shared words over all words of the two names (1.0: the same words)."""
    wa, wb = _words(a), _words(b)
    return len(wa & wb) / len(wa | wb) if wa or wb else 0.0


def words_within(a: str, b: str) -> bool:
    """The words of one name within the other's, and at least half of them shared
    (`max_seq_len_q` and `max_q_len`): the test of a rename in place (`match_renames`)."""
    wa, wb = _words(a), _words(b)
    return _likeness(a, b) >= _SAME_WORDS and (wa <= wb or wb <= wa)


def share_words(a: str, b: str) -> bool:
    """Two parameter names with a word in common (`seq_len_q` and `max_q_len`)."""
    return _likeness(a, b) > 0


def _same_default(p: Param, q: Param) -> bool:
    if p.default is None or q.default is None:
        return p.default == q.default
    return p.default == q.default or is_cosmetic(p.default, q.default)


_SAME_WORDS = 0.5  # at the same place: at least half the words shared
_LIKELY_WORDS = 1 / 3  # elsewhere, or fewer words shared: the unique closest name, for review


def _slots(old: CallSignature, new: CallSignature) -> Iterator[tuple[str, str, bool]]:
    """Pairs of an old and a new name that fill the same place: between the same two parameters
    kept on both sides (or an end), at the same distance from the kept parameter before or after
    them. The flag says whether the two stretches are as long as each other (every place kept)."""
    marks_old = [p.name if p.kind in "PAK" else f"*{p.kind}" for p in old.params]
    marks_new = [p.name if p.kind in "PAK" else f"*{p.kind}" for p in new.params]
    kept = set(marks_old) & set(marks_new)
    if [m for m in marks_old if m in kept] != [m for m in marks_new if m in kept]:
        return  # the kept parameters were reordered: no place is the same place

    def runs(marks: list[str]) -> list[list[str]]:
        out: list[list[str]] = [[]]
        for m in marks:
            if m in kept:
                out.append([])
            else:
                out[-1].append(m)
        return out

    for before, after in zip(runs(marks_old), runs(marks_new), strict=True):
        if len(before) == len(after):
            for g, f in zip(before, after, strict=True):
                yield g, f, True
            continue
        pairs = dict(zip(before, after, strict=False))  # from the kept parameter before them
        for g, f in zip(reversed(before), reversed(after), strict=False):  # and after them
            if pairs.setdefault(g, f) != f:
                yield g, f, False
        for g, f in pairs.items():
            yield g, f, False


def match_renames(old: CallSignature, new: CallSignature) -> dict[str, Rename]:
    """Parameters of ``old`` that ``new`` calls by another name: the release's declared aliases,
    then a gone parameter whose place a new one takes with the same kind and default and a name
    of mostly the same words ("same"), then, among those left, the unique closest name of the
    same kind and default ("likely"). A place taken by a parameter with another default, or an
    unrelated name, is not a rename: `window_left` -> `page_size`, `activation="silu"` ->
    `activation_type=ActivationType.Swiglu.value` (a value change no signature shows)."""
    new_names = {q.name for q in new.params}
    old_all = {p.name for p in old.params}
    gone = {
        p.name: p
        for p in old.params
        if p.kind in ("A", "K") and p.name not in new_names and not new.accepts_keyword(p.name)
    }
    fresh = {q.name: q for q in new.params if q.kind in ("A", "K") and q.name not in old_all}
    out: dict[str, Rename] = {}
    for old_name, new_name in new.aliases:
        if old_name in old_all and old_name not in new_names:
            out[old_name] = Rename(new_name, "declared")
    taken = {r.new for r in out.values()}
    if not gone or not fresh:
        return out
    taken = {r.new for r in out.values()}
    found: dict[str, list[tuple[str, str]]] = {}
    for g, f, whole in _slots(old, new):
        p, q = gone.get(g), fresh.get(f)
        if p is None or q is None or g in out or f in taken:
            continue
        if p.kind == q.kind and _same_default(p, q):
            likeness = _likeness(g, f)
            if likeness == 1.0:
                found.setdefault(g, []).append((f, "same"))
            elif words_within(g, f):
                found.setdefault(g, []).append((f, "place"))
            elif whole and likeness >= _LIKELY_WORDS:
                found.setdefault(g, []).append((f, "likely"))
    claimed = [f for options in found.values() for f, _ in options]
    for g, options in found.items():
        if len(options) == 1 and claimed.count(options[0][0]) == 1:  # (one partner, both ways)
            f, evidence = options[0]
            out[g] = Rename(f, evidence)
    taken = {r.new for r in out.values()}
    pairs = [
        (_likeness(g, f), g, f)
        for g, p in gone.items()
        if g not in out
        for f, q in fresh.items()
        if f not in taken and p.kind == q.kind and _same_default(p, q)
    ]
    pairs = sorted((t for t in pairs if t[0] >= _LIKELY_WORDS), key=lambda t: -t[0])
    blocked: set[str] = set()  # names with two equally close partners: no rename for them
    for score, g, f in pairs:  # (each name meets its closest partner first)
        if g in out or f in taken or g in blocked or f in blocked:
            continue
        ties = [
            t for t in pairs if t[0] == score and (t[1] == g) != (t[2] == f) and t[2] not in taken
        ]
        if ties:
            blocked.update((g, f))
            continue
        out[g] = Rename(f, "likely")
        taken.add(f)
    return out


def place_taken_by(old: CallSignature, new: CallSignature, name: str) -> tuple[Param, Param] | None:
    """``(old parameter, new parameter)`` when a parameter new on ``new`` takes the place of
    ``name`` (gone, not a rename: another kind or default, or an unrelated name)."""
    places = _places(old, new, name)
    # a name of shared words first; else the one place of a stretch as long as before
    ranked = [f for f, _ in places if _likeness(name, f) > 0] or [f for f, w in places if w]
    if not ranked:
        return None
    before = next(p for p in old.params if p.name == name)
    return before, next(q for q in new.params if q.name == ranked[0])


def split_into(old: CallSignature, new: CallSignature, name: str) -> list[Param]:
    """The new parameters that share the place of ``name`` and are all as like it as the
    likest, where there are several (`kv_dtype` split into `k_dtype` and `v_dtype`), in the
    new signature's order; empty otherwise."""
    alike = {f: _likeness(name, f) for f, _ in _places(old, new, name)}
    best = max(alike.values(), default=0.0)
    tied = [q for q in new.params if best > 0 and alike.get(q.name) == best]
    return tied if len(tied) > 1 else []


def _places(old: CallSignature, new: CallSignature, name: str) -> list[tuple[str, bool]]:
    """The parameters new on ``new`` at the place of ``name``, gone from it (`_slots`)."""
    before = {p.name for p in old.params}
    after = {q.name for q in new.params}
    return [
        (f, whole)
        for g, f, whole in _slots(old, new)
        if g == name and g in before and f in after and f not in before
    ]


@lru_cache(maxsize=4096)
def callable_diff(path: str, old_version: str, new_version: str) -> CallableDiff | None:
    """How ``path``'s signature changed between two releases; None when either release has no
    callable there. Cached: every call site of one API asks the same."""
    before = api_for(old_version).callable(path)
    after = api_for(new_version).callable(path)
    if before is None or after is None:
        return None
    return compare_callables(before, after)


def compare_callables(old: CallSignature, new: CallSignature) -> CallableDiff:
    result = CallableDiff(old, new)
    renames = match_renames(old, new)
    old_pos = old.positional
    new_pos = new.positional
    for j in range(len(old_pos)):
        if j < len(new_pos):
            if not _same_meaning(old_pos, new_pos, j, renames):
                result.misbinding_index = j
                break
            continue
        # beyond the new named positional parameters
        bound = new.bound_name(j)
        if bound == old_pos[j].name:
            result.deprecated_index = j  # accepted through the release's deprecation shim
            break
        if new.varargs is not None and not new.shim:
            result.misbinding_index = j  # swallowed by *args
            break
        # no parameter takes it positionally any more: a TypeError (loud), fixed by a keyword
        result.misbinding_index = j
        break
    # positional-only parameters are never passed by keyword: they cannot be "removed" keywords
    old_names = {p.name for p in old.params if p.kind in ("A", "K")}
    for name, rename in renames.items():
        if name in old_names:
            result.renamed[name] = rename.new
            result.rename_evidence[name] = rename.evidence
    for name in sorted(old_names):
        if name not in result.renamed and not new.may_accept_keyword(name):
            result.removed.append(name)
    # (a renamed parameter is not new: a call that passes it by its old name passes it)
    old_all = {p.name for p in old.params} | {r.new for r in renames.values()}
    for p in new.params:
        if p.kind in ("P", "A", "K") and p.default is None and p.name not in old_all:
            result.newly_required.append(p.name)
    return result


# every kind of change `diff_releases` reports (`migrate-fi api-diff --kind`)
CHANGE_KINDS = (
    "positional",
    "deprecated-positional",
    "renamed",
    "param-removed",
    "param-required",
    "param-added",
    "default",
    "keyword-only",
    "enum-value",
    "enum-removed",
    "moved",
    "removed",
    "added",
)


class Change(NamedTuple):
    symbol: str
    kind: str
    detail: str

    def to_json(self) -> dict[str, str]:
        return {"symbol": self.symbol, "kind": self.kind, "detail": self.detail}


def _callable_paths(api: Api) -> dict[str, str]:
    """Public call paths (functions, constructors, ``X().method``) -> a key that identifies the
    definition, with one public path kept per definition (the shortest)."""
    out: dict[str, str] = {}
    for target, path in _shortest_paths(api.version).items():
        out[path] = target
        kind = api.kind(target)
        if kind == "c":
            for name in api.method_names(target):
                if _called(name):
                    out[str(ApiPath.method_of(path, name))] = str(ApiPath.method_of(target, name))
        elif kind == "f" and api.cached(target):
            for name in CACHE_ATTRIBUTES:
                out[f"{path}.{name}"] = f"{target}.{name}"
    return out


def _called(method: str) -> bool:
    return not method.startswith("_") or method == "__call__"


@cache
def _shortest_paths(version: str) -> dict[str, str]:
    """Each definition of the release -> its shortest public path."""
    best: dict[str, str] = {}
    for path, target in api_for(version).public_paths().items():
        current = best.get(target)
        if current is None or (len(path), path) < (len(current), current):
            best[target] = path
    return best


def _callable_path(version: str, key: str) -> str | None:
    """The public path `_callable_paths` keeps for the definition ``key`` (None: it keeps
    none), found without listing every callable."""
    api_key = ApiPath(key)
    if not api_key.is_method:
        found = _shortest_paths(version).get(key)
        function, _, attribute = key.rpartition(".")
        if found is None and attribute in CACHE_ATTRIBUTES and api_for(version).cached(function):
            path = _shortest_paths(version).get(function)
            return f"{path}.{attribute}" if path is not None else None
        return found
    api, owner, name = api_for(version), api_key.owner, api_key.name
    path = _shortest_paths(version).get(owner)
    if path is None or not _called(name) or api.kind(owner) != "c":
        return None
    if str(ApiPath.method_of(owner, name)) != key or name not in api.method_names(owner):
        return None
    return str(ApiPath.method_of(path, name))


def patched_paths(old_version: str, new_version: str) -> list[str]:
    """``module.name`` of a FlashInfer function or class where a replacement assigned to the
    module's attribute (a patch) means something else on ``new_version``: ``module``'s
    functions read ``name`` when they run on ``old_version`` and no longer do on
    ``new_version`` (gone, or no longer used: the patch changes nothing), or ``name`` is a
    callable whose parameters changed (``module`` now calls it with others, which the
    replacement must take)."""
    old, new = api_for(old_version), api_for(new_version)
    out = []
    for module in old.modules:
        before = old.reads(module)
        after = new.reads(module) if before else None
        if not before or after is None:
            continue  # (nothing read, or the module gone: its imports are reported)
        for name in sorted(before):
            path = f"{module}.{name}"
            target = old.canonical(path)
            if target is None or target not in old.defs:
                continue  # (a module, a value, another package's: what a patch hardly means)
            if name not in after or parameters_changed(old, new, path):
                out.append(path)
    return out


def deprecated_callables(old_version: str, new_version: str) -> list[str]:
    """Keys of the public callables of ``old_version`` that warn they are deprecated on every
    call on ``new_version`` and did not on ``old_version`` (`CallSignature.warns`)."""
    old, new = api_for(old_version), api_for(new_version)
    out = set()
    for path, key in _callable_paths(old).items():
        after = new.callable(path)
        if after is None or after.warns is None:
            continue
        before = old.callable(path)
        if before is not None and before.warns is None:
            out.add(key)
    return sorted(out)


def private_names_gone(old_version: str, new_version: str) -> list[str]:
    """``module.name`` of FlashInfer's private names (``_name``: no release promises them, and
    the release data records them by name only) that a module of ``old_version`` binds and
    the same module of ``new_version``, still there, surely no longer has: reading one raises
    AttributeError, importing it ImportError. A private module's other names are mostly what
    it imports (`torch`, `logger`), which no project reads through it: left out."""
    old, new = api_for(old_version), api_for(new_version)
    out = []
    for module in old.modules:
        if new.exists(module) is False:
            continue  # (the module gone: its import is reported)
        for name in old.names(module):
            if not name.startswith("_") or name.startswith("__") or not name.strip("_"):
                continue
            path = f"{module}.{name}"
            if old.canonical(path) is None and new.exists(path) is False:
                out.append(path)
    return sorted(out)


def parameters_changed(old: Api, new: Api, path: str) -> bool:
    """Whether the callable ``path`` takes other parameters on ``new`` than on ``old`` (names,
    kinds, or which are required): what a replacement of it must take. False for what is not
    a callable on both, or the same definition on both."""
    if old.same_definition(new, path) is not None:
        return False
    before, after = old.callable(path), new.callable(path)
    if before is None or after is None:
        return False
    return _taken(before) != _taken(after)


def _taken(signature: CallSignature) -> tuple[tuple[str, str, bool], ...]:
    return tuple((p.name, p.kind, p.default is None) for p in signature.params)


def changed_callables(
    old_version: str, new_version: str
) -> dict[str, tuple[str, CallableDiff | None]]:
    """Callables whose calls may need attention: key -> (a public path, diff); the diff is None
    for a callable that no longer exists."""
    return _pair(old_version, new_version).callables


class DefaultChange(NamedTuple):
    """A parameter whose default is another value on the new release."""

    path: str  # a public path of the callable (on the old release)
    name: str
    old: str  # the defaults as FlashInfer's source writes them
    new: str
    keyword: bool  # it can be passed by keyword on both releases
    # what a call that leaves it out gets is the same on both: the function maps the new
    # default back to the old value (`Param.mapped`), or the other way round
    same: bool = False


def literal_default(text: str) -> tuple[bool, object]:
    """``(True, value)`` when a default as the data writes it is a Python literal."""
    try:
        return True, ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def is_cosmetic(old: str, new: str) -> bool:
    """The same value spelled differently (`1.0` and `1.`, quotes), or dataclass factories,
    whose values are not written in a signature."""
    if old.startswith("<factory") or new.startswith("<factory"):
        return True
    (a_ok, a), (b_ok, b) = literal_default(old), literal_default(new)
    return a_ok and b_ok and type(a) is type(b) and a == b


def changed_defaults(old_version: str, new_version: str) -> dict[str, tuple[DefaultChange, ...]]:
    """Callables a parameter of which has another default on ``new_version``, by the key of
    their definition on ``old_version``; cosmetic changes left out."""
    return _pair(old_version, new_version).defaults


def _default_changes(
    path: str, before: CallSignature, after: CallSignature
) -> tuple[DefaultChange, ...]:
    now = {p.name: p for p in after.params}
    found = []
    for p in before.params:
        q = now.get(p.name)
        if q is None or p.default is None or q.default is None or p.default == q.default:
            continue
        if is_cosmetic(p.default, q.default):
            continue
        keyword = p.kind in ("A", "K") and q.kind in ("A", "K")
        before_, after_ = p.effective, q.effective
        same = (
            before_ is not None
            and after_ is not None
            and (before_ == after_ or is_cosmetic(before_, after_))
        )
        found.append(DefaultChange(path, p.name, p.default, q.default, keyword, same))
    return tuple(found)


class EnumChange(NamedTuple):
    """An enum some of whose members are gone or numbered otherwise on the new release."""

    path: str  # its shortest public path on the old release (`flashinfer.ActivationType`)
    old: dict[str, Any]  # member -> value, on the old release
    new: dict[str, Any]  # on the new one (empty: the enum is gone)

    @property
    def name(self) -> str:
        return self.path.rsplit(".", 1)[-1]

    def member_of(self, value: object, members: dict[str, Any]) -> str | None:
        """The one member of ``members`` with ``value`` (an int passed for it), if one."""
        found = [m for m, v in members.items() if type(v) is type(value) and v == value]
        return found[0] if len(found) == 1 else None


_ENUM_WORD = b'"enum":'  # (what an enum's entry holds: one of `store.INDEXED`)


@cache
def changed_enums(old_version: str, new_version: str) -> dict[str, EnumChange]:
    """Enums of the old release (by definition) with a member removed or renumbered."""
    old, new = api_for(old_version), api_for(new_version)
    public = old.public_paths()
    targets = set(public.values())
    # (the definitions whose text says "enum", as the offsets file lists them: `store.INDEXED`)
    enums = {
        key
        for key in keys_holding(old.defs, _ENUM_WORD)
        if key in targets and old.defs[key].get("enum")
    }
    shortest: dict[str, str] = {}
    for path, target in public.items():
        if target in enums:
            current = shortest.get(target)
            if current is None or (len(path), path) < (len(current), current):
                shortest[target] = path
    out: dict[str, EnumChange] = {}
    for target, path in shortest.items():
        members = old.defs[target]["enum"]
        new_target = new.canonical(path)
        now = new.defs.get(new_target or "", {}).get("enum") or {}
        if any(now.get(m, _GONE) != v for m, v in members.items()):
            out[target] = EnumChange(path, dict(members), dict(now))
    return out


_GONE = object()


@dataclass(frozen=True)
class EnumParameter:
    """A parameter that takes an enum's value: its default names the enum
    (`activation_type=ActivationType.Swiglu.value`), or its name is the enum's in snake case
    (`routing_method_type` for `RoutingMethodType`, whose default is a plain 0)."""

    name: str
    index: int | None  # its position, on the old release, when it can be passed by position
    enum: str  # the enum's definition (a key of `changed_enums`)
    by_default: bool  # linked through the default (certain) or through the name only
    value: bool  # the parameter takes the number (`.value`, or a default written as a number)


@lru_cache(maxsize=4096)  # (asked for every parameter of every changed callable)
def _snake(name: str) -> str:
    return _CAMEL.sub(r"\1_\2", name).lower()


def enum_parameters(old_version: str, new_version: str) -> dict[str, tuple[EnumParameter, ...]]:
    """Callables (by key on the old release) with a parameter that takes the value of an enum
    `changed_enums` names, and which the new release still has under that name."""
    return _pair(old_version, new_version).enum_parameters


def enum_parameter_paths(old_version: str, new_version: str) -> tuple[str, ...]:
    """A public path of each callable `enum_parameters` names (what a file calling it names)."""
    return _pair(old_version, new_version).enum_paths


def defaults_of(old_version: str, new_version: str, key: str) -> tuple[DefaultChange, ...]:
    """``changed_defaults(...).get(key, ())``, computed for the one callable ``key``."""
    return _key_changes(old_version, new_version, key).defaults


def enum_parameters_of(old_version: str, new_version: str, key: str) -> tuple[EnumParameter, ...]:
    """``enum_parameters(...).get(key, ())``, computed for the one callable ``key``."""
    return _key_changes(old_version, new_version, key).enum_parameters


class _KeyChanges(NamedTuple):
    """What the pair's answers say of one callable (its key on the old release)."""

    callable: tuple[str, CallableDiff | None] | None  # its `changed_callables` entry, if one
    defaults: tuple[DefaultChange, ...]
    enum_parameters: tuple[EnumParameter, ...]


_UNCHANGED = _KeyChanges(None, (), ())


class _PairChanges(NamedTuple):
    """What `changed_callables`, `changed_defaults` and `enum_parameters` answer for a pair of
    releases: one pass over the old release's callables (each read once on either side)."""

    callables: dict[str, tuple[str, CallableDiff | None]]
    defaults: dict[str, tuple[DefaultChange, ...]]
    enum_parameters: dict[str, tuple[EnumParameter, ...]]
    enum_paths: tuple[str, ...]


@cache
def _pair(old_version: str, new_version: str) -> _PairChanges:
    old, new = api_for(old_version), api_for(new_version)
    enums = _enum_names(old_version, new_version)
    callables: dict[str, tuple[str, CallableDiff | None]] = {}
    defaults: dict[str, tuple[DefaultChange, ...]] = {}
    parameters: dict[str, tuple[EnumParameter, ...]] = {}
    paths: list[str] = []
    for path, key in _callable_paths(old).items():
        found = _changes_of(old, new, path, key, enums)
        if found.callable is not None:
            callables[key] = found.callable
        if found.defaults:
            defaults[key] = found.defaults
        if found.enum_parameters:
            parameters[key] = found.enum_parameters
            paths.append(path)
    return _PairChanges(callables, defaults, parameters, tuple(sorted(paths)))


@lru_cache(maxsize=4096)  # (asked for each FlashInfer callable a file calls, per rule)
def _key_changes(old_version: str, new_version: str, key: str) -> _KeyChanges:
    path = _callable_path(old_version, key)
    if path is None:
        return _UNCHANGED  # (not a public callable: no answer of the pair names it)
    old, new = api_for(old_version), api_for(new_version)
    return _changes_of(old, new, path, key, _enum_names(old_version, new_version))


_EnumNames = tuple[dict[str, list[str]], tuple[bytes, ...]]


@cache
def _enum_names(old_version: str, new_version: str) -> _EnumNames:
    """The changed enums by name (each name's definitions), and the words that name them as
    the data writes them (the name, and its snake case for a parameter named after it)."""
    by_name: dict[str, list[str]] = {}
    for enum_key, change in changed_enums(old_version, new_version).items():
        by_name.setdefault(change.name, []).append(enum_key)
    return by_name, tuple(w.encode() for n in by_name for w in (n, _snake(n)))


def _changes_of(old: Api, new: Api, path: str, key: str, enums: _EnumNames) -> _KeyChanges:
    """What changed for the callable ``key`` (compared by its public ``path``): every answer
    of the pair, for one callable (each side read at most once)."""
    if _cache_key(old, key):
        # (what a cache gives a function: gone where the function is there, uncached; a
        # function gone is an answer of its own; one recorded alike on both, read as text,
        # kept its cache)
        function = path.rpartition(".")[0]
        if old.same_definition(new, function) is not None or cache_gone(old, new, path) is None:
            return _UNCHANGED
        return _KeyChanges((path, None), (), ())
    by_name, words = enums
    before: CallSignature | None
    after: CallSignature | None
    entry: tuple[str, CallableDiff | None] | None = None
    changed: tuple[DefaultChange, ...] = ()
    definition = old.same_definition(new, path)
    if definition is not None:  # (most callables, between releases near each other)
        # nothing changed: a parameter that takes a changed enum is all there is to find
        if not (by_name and old.may_mention(definition, words)):
            return _UNCHANGED
        before = old.callable(path)
        if before is None:
            return _UNCHANGED
        after = before
    else:
        before, after = old.callable(path), new.callable(path)
        if before is not None and after is None and new.surely_missing(path):
            return _KeyChanges((path, None), (), ())
        if before is None or after is None:
            return _UNCHANGED
        d = compare_callables(before, after)
        if d.affected_from is not None or d.removed or d.newly_required or d.renamed:
            entry = (path, d)
        changed = _default_changes(path, before, after)
    linked = _enum_links(old, key, before, after, by_name) if by_name else ()
    if entry is None and not changed and not linked:
        return _UNCHANGED
    return _KeyChanges(entry, changed, linked)


def _enum_links(
    old: Api,
    key: str,
    before: CallSignature,
    after: CallSignature,
    by_name: dict[str, list[str]],
) -> tuple[EnumParameter, ...]:
    """The parameters of a callable that take the value of a changed enum (by enum name)."""
    module = _defining_module(old, key)
    found = []
    positional = [p.name for p in before.positional]
    for p in before.params:
        if not any(q.name == p.name for q in after.params):
            continue
        for enum_name, by_default in _linked(p, by_name):
            enum_key = _enum_key(old, module, enum_name, by_name[enum_name])
            if enum_key is None:
                continue
            d = p.default
            value = d is None or not d.startswith(f"{enum_name}.") or d.endswith(".value")
            index = positional.index(p.name) if p.name in positional else None
            found.append(EnumParameter(p.name, index, enum_key, by_default, value))
            break
    return tuple(found)


def _linked(p: Param, names: Collection[str]) -> list[tuple[str, bool]]:
    """The enums of ``names`` whose value parameter ``p`` may take, each with whether its
    default names it (certain) or only its name is the enum's in snake case."""
    if p.kind not in ("P", "A", "K"):
        return []
    head = (p.default or "").split(".", 1)[0]
    linked = [(head, True)] if head in names else []
    return linked + [(n, False) for n in names if _snake(n) == p.name and n != head]


def callable_parameters_naming(version: str, names: Collection[str]) -> Iterator[tuple[str, str]]:
    """``(path, name)`` for each public callable of ``version`` (as `_callable_paths` keeps
    them) with a parameter that may take the value of an enum of one of ``names``: the
    callables `enum_parameters` may name for any later release (the prefilter index's links)."""
    api = api_for(version)
    for path in _callable_paths(api):
        signature = api.callable(path)
        if signature is None:
            continue
        for name in dict.fromkeys(n for p in signature.params for n, _ in _linked(p, names)):
            yield path, name


def _defining_module(api: Api, key: str) -> str | None:
    parts = ApiPath(key).dotted.split(".")
    for i in range(len(parts) - 1, 0, -1):
        module = ".".join(parts[:i])
        if module in api.modules:
            return module
    return None


def _enum_key(api: Api, module: str | None, name: str, keys: list[str]) -> str | None:
    """Which enum named ``name`` a parameter of ``module`` means: the one the module binds
    under that name, else the package's own (`flashinfer.<name>`), else the only one."""
    for where in (module, "flashinfer"):
        if where is not None:
            target = api.canonical(f"{where}.{name}")
            if target in keys:
                return target
    return keys[0] if len(keys) == 1 else None


def diff_releases(old_version: str, new_version: str) -> list[Change]:
    old, new = api_for(old_version), api_for(new_version)
    changes: list[Change] = []
    old_paths = _callable_paths(old)
    new_public = new.public_paths()
    for path in sorted(old_paths):
        before = old.callable(path)
        is_method = ApiPath(path).is_method
        if _cache_key(old, old_paths[path]):
            # (what a cache gives a function still there, uncached; a function gone is listed)
            function = cache_gone(old, new, path)
            if function is not None:
                detail = f"no longer exists: {function} is no longer wrapped by functools.cache"
                changes.append(Change(path, "removed", detail))
            continue
        if (
            not is_method
            and path not in new_public
            and new.canonical(path) is None
            # (a name a module still gives by its `__getattr__`, a deprecated alias: there)
            and new.exists(path) is not True
        ):
            same, others = moved_to(old, new, path)
            if same is not None:
                changes.append(Change(path, "moved", f"moved to {same} (the same code)"))
            else:
                elsewhere = f" (other definitions of the name: {', '.join(others[:3])})"
                detail = "no longer exists" + (elsewhere if others else "")
                changes.append(Change(path, "removed", detail))
            continue
        after = new.callable(path)
        if before is None:
            continue
        if after is None:
            if is_method:
                changes.append(Change(path, "removed", "method no longer exists"))
            continue
        d = compare_callables(before, after)
        if d.misbinding_index is not None:
            i = d.misbinding_index
            was = ", ".join(p.name for p in before.positional[i:])
            now = ", ".join(p.name for p in after.positional[i:]) or "(nothing)"
            changes.append(
                Change(
                    path,
                    "positional",
                    f"positional argument {i + 1} on binds differently: was ({was}), now ({now})",
                )
            )
        if d.deprecated_index is not None:
            changes.append(
                Change(
                    path,
                    "deprecated-positional",
                    f"positional arguments from {d.deprecated_index + 1} on are deprecated"
                    " (accepted with a warning): pass them by keyword",
                )
            )
        for a, b in d.renamed.items():
            how = _RENAME_EVIDENCE[d.rename_evidence.get(a, "same")]
            changes.append(Change(path, "renamed", f"parameter {a} renamed to {b} ({how})"))
        for name in d.removed:
            changes.append(Change(path, "param-removed", f"parameter {name} no longer exists"))
        for name in d.newly_required:
            changes.append(Change(path, "param-required", f"new required parameter {name}"))
        old_by = {p.name: p for p in before.params}
        for p in after.params:
            q = old_by.get(p.name)
            if q is None:
                if p.kind not in ("V", "W") and p.default is not None:
                    changes.append(
                        Change(path, "param-added", f"new parameter {p.name}={p.default}")
                    )
                continue
            if (
                q.default is not None
                and p.default is not None
                and q.default != p.default
                and not is_cosmetic(q.default, p.default)
            ):
                kept = (
                    q.effective is not None
                    and p.effective is not None
                    and (q.effective == p.effective or is_cosmetic(q.effective, p.effective))
                )
                mapped = f" (None is {p.mapped} there: the same value)" if kept and p.mapped else ""
                back = f" ({q.default} was {q.mapped}: the same value)" if kept and q.mapped else ""
                changes.append(
                    Change(
                        path,
                        "default",
                        f"default of {p.name}: {q.default} -> {p.default}{mapped or back}",
                    )
                )
            if q.kind in ("P", "A") and p.kind == "K":
                changes.append(Change(path, "keyword-only", f"{p.name} became keyword-only"))
    # enums
    for path, target in sorted(old.public_paths().items()):
        members = old.defs[target].get("enum")
        if not members:
            continue
        new_target = new.canonical(path)
        new_members = new.defs.get(new_target or "", {}).get("enum", {})
        for name, value in sorted(members.items()):
            if name in new_members and new_members[name] != value:
                changes.append(
                    Change(path, "enum-value", f"{name}: {value} -> {new_members[name]}")
                )
            elif name not in new_members and new_target:
                changes.append(Change(path, "enum-removed", f"member {name} no longer exists"))
    for path in sorted(set(new.public_paths()) - set(old.public_paths())):
        if old.canonical(path) is None and path.count(".") <= 2:
            changes.append(Change(path, "added", "new public symbol"))
    return changes


@on_forget
def forget() -> None:
    """Drop every answer computed from the records (the data folders changed)."""
    for cached in (
        api_for,
        callable_diff,
        changed_enums,
        _pair,
        _key_changes,
        _shortest_paths,
        _enum_names,
    ):
        cached.cache_clear()
