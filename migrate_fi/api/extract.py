"""Read a FlashInfer release's public Python API from its sources, with `ast` only.

The input is a `flashinfer-python` wheel (a zip of `.py` files) or a folder holding the
`flashinfer` package (an installed copy, found without importing it). Nothing is imported or run.

What is recorded, per release:
- ``defs``: every module-level function and class, by its defining path
  (``flashinfer.quantization.fp4_quantization.fp4_quantize``). A function's signature is a list of
  ``[name, kind, default]`` with kind ``P`` positional-only, ``A`` positional-or-keyword,
  ``V`` ``*args``, ``K`` keyword-only, ``W`` ``**kwargs``; default is its source text, or None when
  the parameter is required. A class records its bases, its ``__init__``/``__call__``/public
  methods (with ``static``/``class``/``property`` decorators) and, for enums, member values.
- Deprecation shims: a function taking ``*args`` and ``**kwargs`` whose body maps the ``*args`` onto
  a module-level tuple of parameter names (as ``BatchDecodeWithPagedKVCacheWrapper.plan`` does from
  0.6.15) records those legacy names, and the function it forwards ``**kwargs`` to.
- Which definitions: every public one of packages and of modules down to ``flashinfer.a.b``
  (listed as ``complete``: a name missing there is really gone), and those that such a module
  re-exports from deeper kernel modules. ``modules`` lists every public module.
- ``exports``: every other path under which a definition is reachable: re-exports through
  ``__init__`` files, aliases, ``from x import *`` (honouring ``__all__``), imports in try/except.
"""

from __future__ import annotations

import ast
import hashlib
import os
import warnings
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from migrate_fi.scopes import dotted_name

__all__ = ["ExtractError", "extract_release", "read_sources"]

_DEFAULT_MAX = 60  # characters of a default's source kept
_COMPLETE_DEPTH = 2  # modules down to flashinfer.a.b have all their public definitions recorded


class ExtractError(Exception):
    pass


Sources = dict[str, tuple[str, bool]]  # module -> (source text, is a package)


def read_sources(path: str) -> tuple[Sources, str, str]:
    """``({module: (source, is_package)}, version, sha256)`` from a wheel or a folder."""
    if os.path.isfile(path):
        try:
            with open(path, "rb") as fh:
                digest = hashlib.sha256(fh.read()).hexdigest()
            zf = zipfile.ZipFile(path)
        except (OSError, zipfile.BadZipFile) as exc:
            raise ExtractError(f"{path}: not a readable wheel ({exc})") from None
        sources = {}
        for name in zf.namelist():
            module = _module_of(name)
            if module is not None:
                text = zf.read(name).decode("utf-8", errors="replace")
                sources[module] = (text, name.endswith("/__init__.py"))
        version = _version_from_wheel(zf, path)
        return sources, version, digest
    root = (
        os.path.join(path, "flashinfer")
        if os.path.isdir(os.path.join(path, "flashinfer"))
        else path
    )
    if not os.path.isfile(os.path.join(root, "__init__.py")):
        raise ExtractError(f"{path}: no flashinfer package here (no flashinfer/__init__.py)")
    sources = {}
    base = os.path.dirname(root)
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in ("data", "__pycache__"))
        for f in sorted(files):
            full = os.path.join(folder, f)
            module = _module_of(os.path.relpath(full, base).replace(os.sep, "/"))
            if module is not None:
                with open(full, encoding="utf-8", errors="replace") as fh:
                    sources[module] = (fh.read(), f == "__init__.py")
    version = _version_from_dist_info(base) or _version_from_sources(sources) or "unknown"
    return sources, version, ""


def _version_from_dist_info(site: str) -> str | None:
    """An installed copy: ``site-packages/flashinfer_python-X.dist-info/METADATA``."""
    try:
        names = sorted(os.listdir(site))
    except OSError:
        return None
    for name in names:
        if name.lower().startswith(("flashinfer_python-", "flashinfer-")) and name.endswith(
            ".dist-info"
        ):
            try:
                with open(os.path.join(site, name, "METADATA"), encoding="utf-8") as fh:
                    for line in fh:
                        if line.startswith("Version:"):
                            return line.split(":", 1)[1].strip()
            except OSError:
                continue
    return None


def _module_of(name: str) -> str | None:
    if not name.startswith("flashinfer/") or not name.endswith(".py"):
        return None
    parts = name[:-3].split("/")
    if len(parts) > 1 and parts[1] == "data":  # vendored third-party sources
        return None
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _version_from_wheel(zf: zipfile.ZipFile, path: str) -> str:
    for name in zf.namelist():
        if name.endswith(".dist-info/METADATA"):
            for line in zf.read(name).decode("utf-8", errors="replace").splitlines():
                if line.startswith("Version:"):
                    return line.split(":", 1)[1].strip()
    parts = os.path.basename(path).split("-")
    if len(parts) >= 2:
        return parts[1]
    raise ExtractError(f"{path}: cannot tell the release version")


def _version_from_sources(sources: Sources) -> str | None:
    text = "".join(
        sources.get(m, ("", False))[0] + "\n"
        for m in ("flashinfer._build_meta", "flashinfer.version", "flashinfer")
    )
    for line in text.splitlines():
        if "__version__" in line and "=" in line:
            value = line.split("=", 1)[1].strip().strip("\"'")
            if value and value[0].isdigit():
                return value
    return None


# --------------------------------------------------------------------------- parsing


def _default(node: ast.expr | None) -> str | None:
    if node is None:
        return None
    text = ast.unparse(node)
    return text if len(text) <= _DEFAULT_MAX else text[: _DEFAULT_MAX - 3] + "..."


def signature_of(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[list[Any]]:
    a = fn.args
    out: list[list[Any]] = []
    positional = [*a.posonlyargs, *a.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(a.defaults)) + list(
        a.defaults
    )
    for i, (arg, default) in enumerate(zip(positional, defaults, strict=True)):
        kind = "P" if i < len(a.posonlyargs) else "A"
        out.append([arg.arg, kind, _default(default) if default is not None else None])
    if a.vararg is not None:
        out.append([a.vararg.arg, "V", None])
    for arg, default in zip(a.kwonlyargs, a.kw_defaults, strict=True):
        out.append([arg.arg, "K", _default(default)])
    if a.kwarg is not None:
        out.append([a.kwarg.arg, "W", None])
    return out


def _decorator_names(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    names = []
    for d in fn.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        try:
            names.append(ast.unparse(target))
        except Exception:  # pragma: no cover - unparse handles every expression
            continue
    return names


@dataclass
class _Module:
    name: str
    is_package: bool
    tree: ast.Module
    bindings: dict[str, str] = field(default_factory=dict)  # name -> absolute qualified target
    stars: list[str] = field(default_factory=list)
    all_names: list[str] | None = None
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = field(default_factory=dict)
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    constants: dict[str, list[str]] = field(default_factory=dict)  # tuples of strings

    def absolute(self, module: str | None, level: int) -> str | None:
        if level == 0:
            return module
        parts = self.name.split(".")
        if not self.is_package:
            parts = parts[:-1]
        if level - 1 > len(parts):
            return None
        parts = parts[: len(parts) - (level - 1)]
        return ".".join([*parts, module] if module else parts) or None


_TRY: tuple[type, ...] = (ast.Try, *([ast.TryStar] if hasattr(ast, "TryStar") else []))


def _module_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements that run at import time, through if/try/with blocks (not into defs)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If):
            yield from _module_statements(stmt.body)
            yield from _module_statements(stmt.orelse)
        elif isinstance(stmt, _TRY):
            yield from _module_statements(stmt.body)
            for handler in stmt.handlers:
                yield from _module_statements(handler.body)
            yield from _module_statements(stmt.orelse)
            yield from _module_statements(stmt.finalbody)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            yield from _module_statements(stmt.body)


def _string_tuple(node: ast.expr) -> list[str] | None:
    if isinstance(node, (ast.Tuple, ast.List)) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
    ):
        return [e.value for e in node.elts]  # type: ignore[attr-defined]
    return None


def _index(module: str, source: str, is_package: bool) -> _Module | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(source)
    except SyntaxError:
        return None
    m = _Module(module, is_package, tree)
    for stmt in _module_statements(tree.body):
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if "overload" in " ".join(_decorator_names(stmt)) and stmt.name in m.functions:
                continue
            m.functions[stmt.name] = stmt
            m.classes.pop(stmt.name, None)
            m.bindings.pop(stmt.name, None)
        elif isinstance(stmt, ast.ClassDef):
            m.classes[stmt.name] = stmt
            m.functions.pop(stmt.name, None)
            m.bindings.pop(stmt.name, None)
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname:
                    m.bindings.setdefault(alias.asname, alias.name)
                else:
                    top = alias.name.split(".")[0]
                    m.bindings.setdefault(top, top)
        elif isinstance(stmt, ast.ImportFrom):
            base = m.absolute(stmt.module, stmt.level)
            if base is None:
                continue
            for alias in stmt.names:
                if alias.name == "*":
                    m.stars.append(base)
                else:
                    # the first binding wins: in try/except ImportError the `try` one is the API
                    m.bindings.setdefault(alias.asname or alias.name, f"{base}.{alias.name}")
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            value = stmt.value
            for t in targets:
                if not isinstance(t, ast.Name) or value is None:
                    continue
                if t.id == "__all__":
                    m.all_names = _string_tuple(value)
                elif isinstance(value, (ast.Name, ast.Attribute)):
                    dotted = dotted_name(value)
                    if dotted:
                        head, _, rest = dotted.partition(".")
                        if head in m.bindings:
                            m.bindings.setdefault(
                                t.id, m.bindings[head] + (f".{rest}" if rest else "")
                            )
                        elif head in m.functions or head in m.classes:
                            m.bindings.setdefault(t.id, f"{module}.{dotted}")
                else:
                    names = _string_tuple(value)
                    if names is not None:
                        m.constants[t.id] = names
    return m


# ------------------------------------------------------------------------- the model


class _LazyModules:
    """Modules parsed on first use: a release has thousands of kernel modules that no public
    path reaches, and parsing them all is most of the cost."""

    def __init__(self, sources: Sources) -> None:
        self.sources = sources
        self.parsed: dict[str, _Module | None] = {}

    def __contains__(self, name: object) -> bool:
        return name in self.sources and self.get(name) is not None  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self.sources))

    def get(self, name: str) -> _Module | None:
        if name not in self.parsed:
            entry = self.sources.get(name)
            self.parsed[name] = _index(name, *entry) if entry is not None else None
        return self.parsed[name]

    def __getitem__(self, name: str) -> _Module:
        m = self.get(name)
        if m is None:
            raise KeyError(name)
        return m


class _Release:
    def __init__(self, sources: Sources) -> None:
        self.modules = _LazyModules(sources)

    def sources_is_package(self, name: str) -> bool:
        entry = self.modules.sources.get(name)
        return bool(entry and entry[1])

    def canonical(self, path: str, seen: frozenset[str] = frozenset()) -> str | None:
        """The defining path of ``path``, a module's name for a module, or None."""
        if path in seen:
            return None
        seen = seen | {path}
        if path in self.modules:
            return path
        module, _, name = path.rpartition(".")
        m = self.modules.get(module)
        if m is None:
            return None
        if name in m.functions or name in m.classes:
            return path
        if name in m.bindings:
            return self.canonical(m.bindings[name], seen)
        for star in m.stars:
            s = self.modules.get(star)
            if s is not None and name in self.public_names(star):
                found = self.canonical(f"{star}.{name}", seen)
                if found:
                    return found
        return None

    def public_names(self, module: str, seen: frozenset[str] = frozenset()) -> list[str]:
        m = self.modules[module]
        if m.all_names is not None:
            return list(m.all_names)
        names = [*m.functions, *m.classes, *m.bindings]
        if module not in seen:
            for star in m.stars:
                if star in self.modules:
                    names += self.public_names(star, seen | {module})
        return [n for n in dict.fromkeys(names) if not n.startswith("_")]

    def class_record(self, m: _Module, cls: ast.ClassDef) -> dict[str, Any]:
        bases = []
        for b in cls.bases:
            dotted = dotted_name(b)
            if not dotted:
                continue
            head, _, rest = dotted.partition(".")
            if head in m.bindings:
                target = m.bindings[head] + (f".{rest}" if rest else "")
                bases.append(self.canonical(target) or target)
            elif head in m.classes:
                bases.append(f"{m.name}.{dotted}")
            else:
                bases.append(dotted)
        methods: dict[str, Any] = {}
        for stmt in _module_statements(cls.body):
            if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            # private helpers matter only as targets of a deprecation shim
            if (
                stmt.name.startswith("_")
                and stmt.name not in ("__init__", "__call__")
                and not any(
                    isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and _forwards_to(s) == stmt.name
                    for s in cls.body
                )
            ):
                continue
            record: dict[str, Any] = {"sig": signature_of(stmt)}
            decos = _decorator_names(stmt)
            for flag, names in (
                ("static", ("staticmethod",)),
                ("class", ("classmethod",)),
                ("property", ("property", "functools.cached_property", "cached_property")),
            ):
                if any(d in names for d in decos):
                    record["dec"] = flag
            shim = self.shim(m, stmt)
            if shim:
                record["shim"] = shim
            methods[stmt.name] = record
        out: dict[str, Any] = {"k": "c", "bases": bases, "methods": methods}
        if any(b.split(".")[-1].endswith(("Enum", "Flag")) for b in bases) or any(
            "Enum" in b for b in bases
        ):
            members = {}
            for stmt in cls.body:
                if (
                    isinstance(stmt, ast.Assign)
                    and len(stmt.targets) == 1
                    and isinstance(stmt.targets[0], ast.Name)
                ):
                    value = _int_value(stmt.value)
                    if value is not None:
                        members[stmt.targets[0].id] = value
            if members:
                out["enum"] = members
        return out

    def shim(self, m: _Module, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, Any] | None:
        """Legacy positional names a ``*args`` deprecation shim maps, and where ``**kwargs`` go."""
        a = fn.args
        if a.vararg is None or a.kwarg is None:
            return None
        varargs = a.vararg.arg
        legacy: list[str] | None = None
        for node in ast.walk(fn):
            if not isinstance(node, ast.Call):
                continue
            names = [x.id for x in node.args if isinstance(x, ast.Name)]
            if varargs in names:
                for n in names:
                    if n in m.constants:
                        legacy = m.constants[n]
        if legacy is None:
            return None
        out: dict[str, Any] = {"legacy": legacy}
        target = _forwards_to(fn)
        if target:
            out["forwards"] = target
        return out

    def to_json(self) -> dict[str, Any]:
        """The public API only: what a project can reach without a leading underscore, defined in
        a top-level module (``flashinfer.x``) or re-exported by a package; plus the bases of
        kept classes. Deep kernel internals that no package re-exports are left out."""
        public_modules = {
            n for n in self.modules if not any(p.startswith("_") for p in n.split(".")[1:])
        }
        # Where users import from: packages and modules down to `flashinfer.a.b`. Their public
        # definitions are all recorded ("complete"); deeper modules are parsed only when one of
        # these re-exports from them, and only the re-exported definitions are kept.
        entry_points = sorted(
            n
            for n in public_modules
            if n.count(".") <= _COMPLETE_DEPTH or self.sources_is_package(n)
        )
        exported: dict[str, str] = {}
        for name in entry_points:
            for public in self.public_names(name):
                path = f"{name}.{public}"
                target = self.canonical(path)
                if target and target != path:
                    exported[path] = target
        reexported_by_package = {
            t for p, t in exported.items() if self.modules[p.rpartition(".")[0]].is_package
        }
        defs: dict[str, Any] = {}
        defining = sorted(set(entry_points) | {t.rpartition(".")[0] for t in reexported_by_package})
        for name in defining:
            m = self.modules.get(name)
            if m is None:
                continue
            shallow = name.count(".") <= _COMPLETE_DEPTH or m.is_package
            for fname, fn in m.functions.items():
                path = f"{name}.{fname}"
                if fname.startswith("_") or not (shallow or path in reexported_by_package):
                    continue
                record: dict[str, Any] = {"k": "f", "sig": signature_of(fn)}
                shim = self.shim(m, fn)
                if shim:
                    record["shim"] = shim
                defs[path] = record
            for cname, cls in m.classes.items():
                path = f"{name}.{cname}"
                if cname.startswith("_") or not (shallow or path in reexported_by_package):
                    continue
                defs[path] = self.class_record(m, cls)
        # bases of kept classes, wherever they live, so that inherited methods resolve
        pending = [b for d in defs.values() for b in d.get("bases", [])]
        while pending:
            base = pending.pop()
            module, _, cname = base.rpartition(".")
            m = self.modules.get(module)
            if base in defs or m is None or cname not in m.classes:
                continue
            defs[base] = self.class_record(m, m.classes[cname])
            pending.extend(defs[base]["bases"])
        exports = {
            p: t for p, t in exported.items() if t in defs or (t in public_modules and t != p)
        }
        complete = [n for n in entry_points if self.modules.get(n) is not None]
        return {
            "modules": sorted(public_modules),
            "complete": complete,
            "defs": defs,
            "exports": exports,
        }


def _forwards_to(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """``self._impl(..., **kwargs)`` or ``_impl(..., **kwargs)``: the name kwargs are passed to."""
    kwarg = fn.args.kwarg.arg if fn.args.kwarg else None
    if kwarg is None:
        return None
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and any(
            k.arg is None and isinstance(k.value, ast.Name) and k.value.id == kwarg
            for k in node.keywords
        ):
            if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
                return node.func.attr
            if isinstance(node.func, ast.Name):
                return node.func.id
    return None


def _int_value(node: ast.expr) -> int | None:
    if (
        isinstance(node, ast.Tuple) and len(node.elts) == 1
    ):  # `Default = (0,)`: IntEnum takes int(*args)
        return _int_value(node.elts[0])
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int)
        and not isinstance(node.value, bool)
    ):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int_value(node.operand)
        return -inner if inner is not None else None
    return None


def extract_release(path: str) -> dict[str, Any]:
    """The API record of one release, from a wheel or a source folder."""
    sources, version, digest = read_sources(path)
    if "flashinfer" not in sources:
        raise ExtractError(f"{path}: no flashinfer/__init__.py inside")
    release = _Release(sources)
    record = release.to_json()
    record["provenance"] = {
        "version": version,
        "source": os.path.basename(os.path.normpath(path)),
        "sha256": digest,
    }
    return record
