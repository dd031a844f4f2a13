"""Read a FlashInfer release's public Python API from its sources, with `ast` only.

The input is a `flashinfer-python` wheel (a zip of `.py` files) or a folder holding the
`flashinfer` package (an installed copy, found without importing it). Nothing is imported or run.

What is recorded, per release (format 6):
- ``modules``: every module, public or private, with every name it binds at import time
  (definitions, imports, assignments, names bound through ``global`` in a function, names its
  ``__getattr__`` serves), its star imports, and ``open`` when it may bind names that cannot be
  listed (``globals()[...] = ...``, a ``__getattr__`` that answers any name, a star import from
  another package). ``if TYPE_CHECKING:`` blocks never run and bind nothing. So "no longer exists"
  is said only when a name is gone from every way a release serves it.
- ``defs``: every function and class of every public module (no ``_``-prefixed component), at any
  depth, by its defining path, plus definitions of private modules that a public path re-exports
  and the bases of kept classes. A function's signature is a list of ``[name, kind, default]``
  with kind ``P`` positional-only, ``A`` positional-or-keyword, ``V`` ``*args``, ``K``
  keyword-only, ``W`` ``**kwargs``; default is its source text, or None when required, and a
  module constant's value where it names one (``max_blocks=AR_MAX_BLOCKS``: ``128``); a fourth
  item, where present, is the literal the body turns a ``None`` default into on every path
  before reading it (``if next_n is None: next_n = 1``). ``dep`` lists the parameters a function
  warns about as deprecated (an ``if`` on the parameter around ``warnings.warn(...,
  DeprecationWarning)``). ``loc`` marks a definition whose code depends on where its module is
  (``__file__``, a relative import: `reads_location`). ``cache`` marks a function wrapped by ``functools.cache`` or
  ``functools.lru_cache``: its ``cache_clear()``, ``cache_info()`` and ``cache_parameters()`` are
  API, gone where a later release drops the decorator. ``reads`` of a module: the names it
  binds that its functions read from it when they run, by their places in ``names`` (a patch
  ``module.f = g`` reaches them; where a release stops reading ``f``, the patch changes
  nothing). A class
  records its bases, its ``__init__``/``__call__``/public methods (``static``/``class``/
  ``property``), its methods named again in its body (``maliases``: ``begin_forward = plan``,
  a call of one is a call of the other), the other names its body binds, enum member values,
  and the ``__init__``
  Python synthesizes for ``@dataclass``, ``NamedTuple`` and ``attrs`` classes
  (`migrate_fi.api.synthesized`).
- Deprecation shims: a function taking ``*args`` and ``**kwargs`` whose body maps the ``*args`` onto
  a module-level tuple of parameter names (as ``BatchDecodeWithPagedKVCacheWrapper.plan`` does from
  0.6.15) records those legacy names and the function it forwards ``**kwargs`` to; a
  ``@deprecated_aliases(old="new")`` decorator records the keywords still taken under an old name.
- ``h`` of every function and class: a hash of its code (`body_hash`), so that "moved" means
  the same definition found at another path, never another one that shares the name.
- ``attrs``: the names a public module imports from FlashInfer but leaves out of its
  ``__all__`` (``flashinfer.norm.gemma_rmsnorm_trace``): attributes a caller still reaches,
  never suggested as where something moved.
- ``exports``: every public path bound to a FlashInfer definition or module defined elsewhere:
  re-exports through ``__init__`` files (conditional ones and ``try`` imports included),
  aliases, ``from x import *`` (honouring ``__all__``), names served by a module ``__getattr__``
  (`migrate_fi.api.lazy`). A package attribute shadows its submodule of the same name.
"""

from __future__ import annotations

import ast
import gc
import hashlib
import os
import warnings
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from migrate_fi.analysis.scopes import dotted_name
from migrate_fi.api.lazy import Served, served_names
from migrate_fi.api.synthesized import SynthesizedInit, synthesized_kind

__all__ = ["ExtractError", "extract_release", "read_sources"]

_DEFAULT_MAX = 60  # characters of a default's source kept


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


def _default(
    node: ast.expr | None, constant: Callable[[ast.expr], str | None] | None = None
) -> str | None:
    if node is None:
        return None
    found = constant(node) if constant is not None else None
    text = found if found is not None else ast.unparse(node)
    return text if len(text) <= _DEFAULT_MAX else text[: _DEFAULT_MAX - 3] + "..."


def signature_of(
    fn: ast.FunctionDef | ast.AsyncFunctionDef,
    constant: Callable[[ast.expr], str | None] | None = None,
) -> list[list[Any]]:
    """``[name, kind, default]`` of each parameter; ``constant`` gives the literal a default
    that names a module constant stands for (``max_blocks=AR_MAX_BLOCKS``: ``128``), and a
    parameter whose default the body maps to a value on every path (``if x is None: x = 1``)
    gets that value as a fourth item (`mapped_defaults`)."""
    a = fn.args
    out: list[list[Any]] = []
    positional = [*a.posonlyargs, *a.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(a.defaults)) + list(
        a.defaults
    )
    for i, (arg, default) in enumerate(zip(positional, defaults, strict=True)):
        kind = "P" if i < len(a.posonlyargs) else "A"
        out.append([arg.arg, kind, _default(default, constant) if default is not None else None])
    if a.vararg is not None:
        out.append([a.vararg.arg, "V", None])
    for arg, default in zip(a.kwonlyargs, a.kw_defaults, strict=True):
        out.append([arg.arg, "K", _default(default, constant)])
    if a.kwarg is not None:
        out.append([a.kwarg.arg, "W", None])
    mapped = mapped_defaults(fn, constant) if any(e[2] == "None" for e in out) else {}
    for entry in out:
        effective = mapped.get(entry[0])
        if effective is not None and entry[2] == "None":
            entry.append(effective)
    return out


def mapped_defaults(
    fn: ast.FunctionDef | ast.AsyncFunctionDef,
    constant: Callable[[ast.expr], str | None] | None = None,
) -> dict[str, str]:
    """Parameters whose ``None`` the function replaces by one literal on every path, before
    anything else reads them: a statement of the body's top level (no branch or loop around
    it) ``if x is None: x = <literal>`` (or ``x = <literal> if x is None else x``), with no
    earlier statement that mentions ``x``. The literal as source text (a module constant: its
    value, through ``constant``)."""
    out: dict[str, str] = {}
    seen: set[str] = set()  # names an earlier statement mentions
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # (the docstring)
    for stmt in body:
        found = _maps_none(stmt)
        if found is not None:
            name, value = found
            text = constant(value) if constant is not None else None
            if text is None:
                try:
                    ast.literal_eval(value)
                except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                    text = None
                else:
                    text = ast.unparse(value)
            if text is not None and name not in seen and name not in out:
                out[name] = text
        seen.update(n.id for n in ast.walk(stmt) if isinstance(n, ast.Name))
    return out


def _maps_none(stmt: ast.stmt) -> tuple[str, ast.expr] | None:
    """``(x, value)`` for ``if x is None: x = value`` (no ``else``) and ``x = value if x is
    None else x``."""
    if (
        isinstance(stmt, ast.If)
        and not stmt.orelse
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], ast.Assign)
        and len(stmt.body[0].targets) == 1
    ):
        name = _is_none_test(stmt.test)
        target = stmt.body[0].targets[0]
        if name is not None and isinstance(target, ast.Name) and target.id == name:
            return name, stmt.body[0].value
    if (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
        and isinstance(stmt.value, ast.IfExp)
    ):
        name = _is_none_test(stmt.value.test)
        orelse = stmt.value.orelse
        if name == stmt.targets[0].id and isinstance(orelse, ast.Name) and orelse.id == name:
            return name, stmt.value.body
    return None


def _is_none_test(test: ast.expr) -> str | None:
    """``x`` for ``x is None``."""
    if (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Is)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    ):
        return test.left.id
    return None


_WARNINGS = ("DeprecationWarning", "FutureWarning", "PendingDeprecationWarning")


def deprecated_parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """Parameters the function warns about as deprecated: an ``if`` whose test names the
    parameter and whose body calls ``warnings.warn(..., DeprecationWarning)`` (or
    ``FutureWarning``, ``PendingDeprecationWarning``; by position or ``category=``). Nested
    functions are their own."""
    a = fn.args
    params = {x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
    found: set[str] = set()
    pending: list[ast.AST] = list(fn.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.If):
            named = {n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)} & params
            if named and any(_warns_deprecated(n) for b in node.body for n in ast.walk(b)):
                found |= named
        pending.extend(ast.iter_child_nodes(node))
    return sorted(found)


def deprecation_warned(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """The message of the deprecation warning the function gives on every call: a
    ``warnings.warn(..., DeprecationWarning)`` statement of its body itself (not under an
    ``if``, a ``try`` or a loop) before any ``return`` or ``raise`` of it (FlashInfer 0.7.0's
    `cute_dsl_fused_moe_nvfp4`); "" where its text is not written out. None when there is
    none."""
    for stmt in fn.body:
        if isinstance(stmt, (ast.Return, ast.Raise)):
            return None
        if isinstance(stmt, ast.Expr) and _warns_deprecated(stmt.value):
            call = stmt.value
            assert isinstance(call, ast.Call)  # (`_warns_deprecated` says so)
            message = call.args[0] if call.args else None
            for kw in call.keywords:
                if kw.arg == "message":
                    message = kw.value
            return _text_of(message)
    return None


# decorators that make every call warn it is deprecated (PEP 702's, and the Deprecated package's)
_DEPRECATING = frozenset(
    {
        "typing_extensions.deprecated",
        "warnings.deprecated",
        "deprecated.deprecated",
        "deprecated.classic.deprecated",
    }
)


def deprecated_by_decorator(
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef,
    resolve: Callable[[ast.expr], str | None],
) -> str | None:
    """The message of a decorator that makes every call (a class: every construction) warn
    it is deprecated: ``@typing_extensions.deprecated("use ...")`` (FlashInfer 0.6.0's
    `trtllm_allreduce_fusion`), ``warnings.deprecated``, the Deprecated package's; "" where
    its text is not written out. None when there is none, or it names no deprecation category
    (``category=None`` warns nothing)."""
    for d in node.decorator_list:
        call = d if isinstance(d, ast.Call) else None
        if resolve(call.func if call is not None else d) not in _DEPRECATING:
            continue
        if call is None:
            return ""
        message = call.args[0] if call.args else None
        for kw in call.keywords:
            if kw.arg in ("reason", "message"):
                message = kw.value
            elif kw.arg == "category" and (
                (dotted_name(kw.value) or "").rsplit(".", 1)[-1] not in _WARNINGS
            ):
                return None
        return _text_of(message)
    return None


def warned_always(
    fn: ast.FunctionDef | ast.AsyncFunctionDef, resolve: Callable[[ast.expr], str | None]
) -> str | None:
    """The message of the deprecation warning every call of ``fn`` gives, by a statement of
    its body (`deprecation_warned`) or its decorator (`deprecated_by_decorator`); None."""
    found = deprecation_warned(fn)
    return found if found is not None else deprecated_by_decorator(fn, resolve)


def _text_of(node: ast.expr | None) -> str:
    """A message as written: a string, or an f-string with its fields in braces; ""."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                parts.append(value.value)
            elif isinstance(value, ast.FormattedValue):
                parts.append("{" + ast.unparse(value.value) + "}")
        return "".join(parts)
    return ""


# what a function may do with a parameter and still ignore its value: warn or log that it was
# passed (FlashInfer 0.5's `tile_tokens_dim`: "planned for deprecation ... please remove it")
_SAYS = frozenset(
    {"warn", "warning", "warning_once", "warn_once", "info", "info_once", "debug", "log", "print"}
)
_PLAIN_DECORATORS = frozenset({"staticmethod", "classmethod"})


def ignored_parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """Parameters whose value the function never uses: not read at all, or read only to test
    whether it is None (or truthy) before a warning or a log line. A call may drop any value it
    passes for one, and behave the same. Not for a decorated function (the decorator may read
    its arguments) or one that reads its locals as a whole (`locals()`, `vars()`)."""
    if any((dotted_name(d) or "") not in _PLAIN_DECORATORS for d in fn.decorator_list):
        return []
    a = fn.args
    params = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    allowed: set[int] = set()  # the Name nodes of the tests that only say something
    loads: dict[str, list[ast.Name]] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if node.id in ("locals", "vars"):
                return []
            loads.setdefault(node.id, []).append(node)
        elif isinstance(node, ast.If) and _only_says(node):
            tested = _none_test(node.test)
            if tested is not None:
                allowed.add(id(tested))
    return [p for p in params if all(id(n) in allowed for n in loads.get(p, ()))]


def _none_test(test: ast.expr) -> ast.Name | None:
    """The name of ``x is None``, ``x is not None``, ``x`` or ``not x``."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    if isinstance(test, ast.Name):
        return test
    if (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and len(test.ops) == 1
        and isinstance(test.ops[0], (ast.Is, ast.IsNot))
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    ):
        return test.left
    return None


def _only_says(node: ast.If) -> bool:
    """An ``if`` whose branches only warn or log (or pass), with no `elif` chain of its own."""
    for stmt in (*node.body, *node.orelse):
        if isinstance(stmt, ast.Pass):
            continue
        if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
            return False
        name = dotted_name(stmt.value.func) or ""
        if name.rsplit(".", 1)[-1] not in _SAYS:
            return False
    return True


def _warns_deprecated(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = dotted_name(node.func) or ""
    if func.rsplit(".", 1)[-1] != "warn":
        return False
    category = node.args[1] if len(node.args) > 1 else None
    for kw in node.keywords:
        if kw.arg == "category":
            category = kw.value
    return (dotted_name(category) or "").rsplit(".", 1)[-1] in _WARNINGS if category else False


# decorators that give a function `cache_clear`, `cache_info` and `cache_parameters`
_CACHING = frozenset({"functools.cache", "functools.lru_cache"})


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
    local: set[str] = field(default_factory=set)  # names bound here (defs, classes, values)
    stars: list[str] = field(default_factory=list)
    all_names: list[str] | None = None
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = field(default_factory=dict)
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    constants: dict[str, list[str]] = field(default_factory=dict)  # tuples of strings
    values: dict[str, ast.expr] = field(default_factory=dict)  # every `name = value`
    rebound: set[str] = field(default_factory=set)  # names bound more than once (not constants)
    served: Served | None = None  # names served by a module-level __getattr__
    dynamic: bool = False  # binds names we cannot list (`globals()[...] = ...`)

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

    def names(self) -> set[str]:
        """Every name the module binds at import time (and serves through ``__getattr__``)."""
        out = set(self.local) | set(self.bindings)
        if self.served is not None:
            out |= set(self.served.names)
        return out

    def read_when_run(self) -> set[str]:
        """The module's names its functions and methods read from the module when they run
        (not their decorators and defaults, read at import): what a replacement assigned to the
        module's attribute (a patch: ``module.f = g``) changes."""
        loaded: set[str] = set()
        pending: list[ast.AST] = list(self.tree.body)
        while pending:  # (each outermost function's body walked once, the ones in it included)
            node = pending.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                body = node.body if isinstance(node.body, list) else [node.body]
                for stmt in body:
                    loaded.update(
                        n.id
                        for n in ast.walk(stmt)
                        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
                    )
            else:
                pending.extend(ast.iter_child_nodes(node))
        return loaded & self.names()

    @property
    def open(self) -> bool:
        """Whether it may have names we cannot list."""
        return self.dynamic or (self.served is not None and self.served.open)


_TRY: tuple[type, ...] = (ast.Try, *([ast.TryStar] if hasattr(ast, "TryStar") else []))


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _module_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements that run at import time, through if/try/with/for blocks (not into defs);
    ``if TYPE_CHECKING:`` bodies never run."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If):
            if not _type_checking(stmt.test):
                yield from _module_statements(stmt.body)
            yield from _module_statements(stmt.orelse)
        elif isinstance(stmt, ast.Try | getattr(ast, "TryStar", ast.Try)):
            yield from _module_statements(stmt.body)
            for handler in stmt.handlers:
                yield from _module_statements(handler.body)
            yield from _module_statements(stmt.orelse)
            yield from _module_statements(stmt.finalbody)
        elif isinstance(stmt, (ast.With, ast.AsyncWith, ast.For, ast.While)):
            yield from _module_statements(stmt.body)


def _string_tuple(node: ast.expr) -> list[str] | None:
    if isinstance(node, (ast.Tuple, ast.List)) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
    ):
        return [e.value for e in node.elts]  # type: ignore[attr-defined]
    return None


def _extends_all(stmt: ast.stmt) -> bool:
    """``__all__ += [...]``, ``__all__.extend([...])``, ``__all__.append("x")``."""
    if isinstance(stmt, ast.AugAssign):
        return isinstance(stmt.target, ast.Name) and stmt.target.id == "__all__"
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Call)
        and isinstance(stmt.value.func, ast.Attribute)
        and stmt.value.func.attr in ("extend", "append")
        and isinstance(stmt.value.func.value, ast.Name)
        and stmt.value.func.value.id == "__all__"
        and len(stmt.value.args) == 1
    )


def _extend_all(m: _Module, stmt: ast.stmt) -> None:
    """More public names (also when added under a condition, such as an optional dependency
    being importable: the API exists where it is installed). Names that cannot be read make
    every public-looking name count, as with an unreadable ``__all__``."""
    if isinstance(stmt, ast.AugAssign):
        added = _string_tuple(stmt.value) if isinstance(stmt.op, ast.Add) else None
    else:
        assert isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
        call, arg = stmt.value, stmt.value.args[0]
        if isinstance(call.func, ast.Attribute) and call.func.attr == "append":
            added = (
                [arg.value]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
                else None
            )
        else:
            added = _string_tuple(arg)
    if added is None or m.all_names is None:
        m.all_names = None
        return
    m.all_names = [*m.all_names, *(n for n in added if n not in m.all_names)]


def _target_names(target: ast.expr) -> Iterator[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for e in target.elts:
            yield from _target_names(e.value if isinstance(e, ast.Starred) else e)


def _is_globals_write(node: ast.AST) -> bool:
    """``globals()[k] = v`` or ``globals().update(...)``: names we cannot list."""
    if isinstance(node, ast.Subscript) or (
        isinstance(node, ast.Attribute) and node.attr in ("update", "setdefault")
    ):
        node = node.value
    else:
        return False
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "globals"
    )


def _index(module: str, source: str, is_package: bool) -> _Module | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    m = _Module(module, is_package, tree)
    getattr_fn: ast.FunctionDef | None = None
    has_global = "global " in source
    for stmt in _module_statements(tree.body):
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            m.local.add(stmt.name)
            if stmt.name == "__getattr__" and isinstance(stmt, ast.FunctionDef):
                getattr_fn = stmt
            if "overload" in " ".join(_decorator_names(stmt)) and stmt.name in m.functions:
                continue
            m.functions[stmt.name] = stmt
            m.classes.pop(stmt.name, None)
            m.bindings.pop(stmt.name, None)
            if has_global:  # `global x` in a function binds a module name
                for node in ast.walk(stmt):
                    if isinstance(node, ast.Global):
                        m.local.update(node.names)
                        m.rebound.update(node.names)
        elif isinstance(stmt, ast.ClassDef):
            m.local.add(stmt.name)
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
        elif _extends_all(stmt):
            _extend_all(m, stmt)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            value = stmt.value
            for t in targets:
                if _is_globals_write(t):
                    m.dynamic = True
                names = list(_target_names(t))
                m.rebound.update(n for n in names if n in m.local or n in m.values)
                m.local.update(names)
                if not isinstance(t, ast.Name) or value is None or isinstance(stmt, ast.AugAssign):
                    m.rebound.update(names)
                    continue
                m.values.setdefault(t.id, value)
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
                    names_ = _string_tuple(value)
                    if names_ is not None:
                        m.constants[t.id] = names_
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            m.local.update(_target_names(stmt.target))
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                if item.optional_vars is not None:
                    m.local.update(_target_names(item.optional_vars))
        elif (
            isinstance(stmt, ast.Expr)
            and isinstance(stmt.value, ast.Call)
            and _is_globals_write(stmt.value.func)
        ):
            m.dynamic = True
    if getattr_fn is not None:
        m.served = served_names(
            getattr_fn, m.values, m.absolute, lambda name: _module_binding(m, name)
        )
    return m


def _module_binding(m: _Module, name: str) -> str | None:
    """The qualified target of a module-level name: an import's target or a local def."""
    if name in m.bindings:
        return m.bindings[name]
    if name in m.functions or name in m.classes:
        return f"{m.name}.{name}"
    return None


# ------------------------------------------------------------------------- the model


class _LazyModules:
    """Modules parsed on first use: a release has thousands of kernel modules that no public
    path reaches, and parsing them all is most of the cost."""

    def __init__(self, sources: Sources) -> None:
        self.sources = sources
        self.parsed: dict[str, _Module | None] = {}

    def __contains__(self, name: object) -> bool:
        return name in self.sources and self.get(name) is not None

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


def _public(path: str) -> bool:
    return not any(p.startswith("_") for p in path.split(".")[1:])


class _Release:
    def __init__(self, sources: Sources) -> None:
        self.modules = _LazyModules(sources)
        self.synthesized = SynthesizedInit(self._base_class)

    def canonical(self, path: str, seen: frozenset[str] = frozenset()) -> str | None:
        """The defining path of ``path`` (a def or class), a module's name for a module, the
        path itself for another value bound in a module, or None.

        A package attribute shadows its submodule of the same name: ``from .x import x`` in
        ``pkg/__init__.py`` makes ``pkg.x`` the function, as Python does."""
        if path in seen:
            return None
        seen = seen | {path}
        module, _, name = path.rpartition(".")
        m = self.modules.get(module) if module else None
        if m is not None:
            if name in m.functions or name in m.classes:
                return path
            if name in m.bindings:
                target = m.bindings[name]
                if target == path:  # `from . import sub` in the package itself
                    return path if path in self.modules else None
                found = self.canonical(target, seen)
                if found is not None:
                    return found
                if not target.startswith("flashinfer"):
                    return None  # something of another package
            if m.served is not None and name in m.served.names:
                served = m.served.names[name]
                found = self.canonical(served, seen) if served else None
                return found or path
        if path in self.modules:
            return path
        if m is None:
            return None
        if name in m.local:
            return path  # a value bound here (a constant, an instance)
        for star in m.stars:
            if star in self.modules and name in self.public_names(star):
                found = self.canonical(f"{star}.{name}", seen)
                if found:
                    return found
        return None

    def public_names(self, module: str, seen: frozenset[str] = frozenset()) -> list[str]:
        m = self.modules[module]
        if m.all_names is not None:
            return list(m.all_names)
        names = [*m.functions, *m.classes, *m.bindings, *sorted(m.local)]
        if module not in seen:
            for star in m.stars:
                if star in self.modules:
                    names += self.public_names(star, seen | {module})
        return [n for n in dict.fromkeys(names) if not n.startswith("_")]

    def _constant(self, m: _Module) -> Callable[[ast.expr], str | None]:
        """The literal a name or attribute of ``m`` stands for when it is a module constant
        of this release (bound once, to a literal: ``AR_MAX_BLOCKS = 128``, here or imported,
        or through other such names), as source text; None for anything else."""
        return lambda node: self._constant_value(m, node, 0)

    def _constant_value(self, m: _Module, node: ast.expr, depth: int) -> str | None:
        if not isinstance(node, (ast.Name, ast.Attribute)) or depth > 4:
            return None
        if isinstance(node, ast.Name) and node.id in m.values:
            owner, name = m, node.id
        else:
            target = self._resolver(m)(node)
            module, _, name = (target or "").rpartition(".")
            found = self.modules.get(module)
            if found is None or name not in found.values:
                return None
            owner = found
        if name in owner.rebound or name in owner.functions or name in owner.classes:
            return None
        bound = owner.values[name]
        if isinstance(bound, (ast.Name, ast.Attribute)):
            return self._constant_value(owner, bound, depth + 1)
        try:
            ast.literal_eval(bound)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None
        return ast.unparse(bound)

    def _resolver(self, m: _Module) -> Callable[[ast.expr], str | None]:
        def resolve(node: ast.expr) -> str | None:
            dotted = dotted_name(node)
            if not dotted:
                return None
            head, _, rest = dotted.partition(".")
            if head in m.bindings:
                return m.bindings[head] + (f".{rest}" if rest else "")
            if head in m.classes or head in m.functions:
                return f"{m.name}.{dotted}"
            return dotted

        return resolve

    def _base_class(
        self, cls: ast.ClassDef, base: ast.expr
    ) -> tuple[Callable[[ast.expr], str | None], ast.ClassDef] | None:
        """A base class defined in this release: its module's resolver and its ClassDef."""
        owner = self._owner.get(id(cls))
        if owner is None:
            return None
        target = self._resolver(owner)(base)
        target = self.canonical(target) if target else None
        if target is None:
            return None
        module, _, name = target.rpartition(".")
        m = self.modules.get(module)
        if m is None or name not in m.classes:
            return None
        self._owner[id(m.classes[name])] = m
        return self._resolver(m), m.classes[name]

    _owner: dict[int, _Module]

    def class_record(self, m: _Module, cls: ast.ClassDef) -> dict[str, Any]:
        resolve = self._resolver(m)
        bases = []
        for b in cls.bases:
            target = resolve(b)
            if target is None:
                continue
            bases.append(self.canonical(target) or target)
        methods: dict[str, Any] = {}
        # (a method's default names the class body's own names first: those are no constants)
        own = {
            n.id
            for stmt in cls.body
            if isinstance(stmt, (ast.Assign, ast.AnnAssign))
            for t in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target])
            for n in ast.walk(t)
            if isinstance(n, ast.Name)
        }
        module_constant = self._constant(m)

        def constant(node: ast.expr) -> str | None:
            if isinstance(node, ast.Name) and node.id in own:
                return None
            return module_constant(node)

        for stmt in _module_statements(cls.body):
            if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            # private helpers matter only as targets of a deprecation shim
            if (
                stmt.name.startswith("_")
                and stmt.name not in ("__init__", "__call__", "__new__")
                and not any(
                    isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and _forwards_to(s) == stmt.name
                    for s in cls.body
                )
            ):
                continue
            record: dict[str, Any] = {"sig": signature_of(stmt, constant)}
            warned = deprecated_parameters(stmt)
            if warned:
                record["dep"] = warned
            message = warned_always(stmt, resolve)
            if message is not None:
                record["warns"] = message
            ignored = ignored_parameters(stmt)
            if ignored:
                record["ign"] = ignored
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
        aliases = _declared_aliases(cls)
        if "__init__" not in methods:
            self._owner[id(cls)] = m
            kind = synthesized_kind(cls, resolve)
            sig = self.synthesized.signature(cls, resolve)
            if sig is not None and kind is not None:
                methods["__init__"] = {"sig": sig, "synth": kind[0]}
        if aliases and "__init__" in methods:
            methods["__init__"]["aliases"] = aliases
        message = deprecated_by_decorator(cls, resolve)
        if message is not None and "__init__" in methods:  # (constructing it warns)
            methods["__init__"]["warns"] = message
        out: dict[str, Any] = {"k": "c", "bases": bases, "methods": methods, "h": body_hash(cls)}
        if reads_location(cls):
            out["loc"] = 1
        aliased = _method_aliases(cls, methods)
        if aliased:
            out["maliases"] = aliased
        attrs = sorted(_class_attributes(cls) - set(methods))
        if attrs:
            out["attrs"] = attrs
        instance = sorted(_instance_attributes(cls))
        if instance:
            out["iattrs"] = instance
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
        """Every module with the names it binds (so that "no longer exists" is said only when
        a name is gone from every way a release serves it); the public API with signatures: every
        def and class of a public module (no `_` component), at any depth, those re-exported
        from private modules, and the bases of kept classes; and every public path that is bound
        to a FlashInfer definition or module defined elsewhere."""
        self._owner = {}
        modules: dict[str, Any] = {}
        defs: dict[str, Any] = {}
        exports: dict[str, str] = {}
        attrs: dict[str, str] = {}
        for name in self.modules:
            m = self.modules.get(name)
            if m is None:
                modules[name] = {"open": 1}  # does not parse: say nothing about its names
                continue
            names = sorted(m.names())
            entry: dict[str, Any] = {"names": names}
            read = m.read_when_run()
            if read:  # (by their places in ``names``: a fifth of the size as names)
                entry["reads"] = [i for i, n in enumerate(names) if n in read]
            if m.is_package:
                entry["p"] = 1
            if m.open or any(not s.startswith("flashinfer") for s in m.stars):
                entry["open"] = 1
            if m.stars:
                entry["stars"] = sorted(set(m.stars))
            modules[name] = entry
        for name in self.modules:
            m = self.modules.get(name)
            if m is None or not _public(name):
                continue
            for fname, fn in m.functions.items():
                if not fname.startswith("_"):
                    defs[f"{name}.{fname}"] = self._function_record(m, fn)
            for cname, cls in m.classes.items():
                if not cname.startswith("_"):
                    defs[f"{name}.{cname}"] = self.class_record(m, cls)
            served = list(m.served.names) if m.served is not None else []
            listed = dict.fromkeys([*self.public_names(name), *served])
            for public in listed:
                path = f"{name}.{public}"
                if public in m.functions or public in m.classes:
                    continue
                target = self.canonical(path)
                if target and target != path and target.startswith("flashinfer"):
                    exports[path] = target
            for imported in m.bindings:  # (imported but left out of `__all__`: `attrs`)
                if imported in listed or imported.startswith("_"):
                    continue
                path = f"{name}.{imported}"
                target = self.canonical(path)
                if target and target != path and target.startswith("flashinfer"):
                    attrs[path] = target
        # re-exported private definitions and the bases of kept classes
        pending = [t for t in exports.values() if t not in defs] + [
            b for d in defs.values() for b in d.get("bases", [])
        ]
        while pending:
            path = pending.pop()
            module, _, name = path.rpartition(".")
            m = self.modules.get(module)
            if path in defs or m is None:
                continue
            if name in m.classes:
                defs[path] = self.class_record(m, m.classes[name])
                pending.extend(defs[path]["bases"])
            elif name in m.functions:
                defs[path] = self._function_record(m, m.functions[name])
        attrs = {k: v for k, v in attrs.items() if k not in exports}
        return {"modules": modules, "defs": defs, "exports": exports, "attrs": attrs}

    def _function_record(
        self, m: _Module, fn: ast.FunctionDef | ast.AsyncFunctionDef
    ) -> dict[str, Any]:
        record: dict[str, Any] = {
            "k": "f",
            "sig": signature_of(fn, self._constant(m)),
            "h": body_hash(fn),
        }
        if reads_location(fn):
            record["loc"] = 1
        warned = deprecated_parameters(fn)
        if warned:
            record["dep"] = warned
        message = warned_always(fn, self._resolver(m))
        if message is not None:
            record["warns"] = message
        ignored = ignored_parameters(fn)
        if ignored:
            record["ign"] = ignored
        shim = self.shim(m, fn)
        if shim:
            record["shim"] = shim
        aliases = _declared_aliases(fn)
        if aliases:
            record["aliases"] = aliases
        if self._cached(m, fn):
            record["cache"] = 1
        return record

    def _cached(self, m: _Module, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        """Whether ``fn`` is wrapped by `functools.cache` or `functools.lru_cache` (however the
        module imports them): its `cache_clear`, `cache_info` and `cache_parameters` are API."""
        resolve = self._resolver(m)
        return any(
            resolve(d.func if isinstance(d, ast.Call) else d) in _CACHING for d in fn.decorator_list
        )


# module attributes that say where the module is (`os.path.dirname(__file__)`)
_LOCATION = frozenset({"__file__", "__spec__", "__path__", "__package__", "__loader__"})


def reads_location(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> bool:
    """Whether the definition's code depends on where its module is: it reads ``__file__``
    (and the like), or imports relatively. The same code moved to another module is then not
    the same behaviour (FlashInfer 0.6.13 moved `get_config_path`, which builds a path from
    ``__file__``, from `flashinfer/autotuner.py` to `flashinfer/autotuner/autotuner.py`)."""
    return any(
        (isinstance(n, ast.Name) and n.id in _LOCATION)
        or (isinstance(n, ast.ImportFrom) and n.level > 0)
        for n in ast.walk(node)
    )


def body_hash(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> str:
    """What the definition is, as code: its decorators, signature and body (docstrings left
    out, names and layout of the source ignored), hashed. Two releases' definitions with the same
    hash are the same code wherever each lives (a module renamed, a function moved)."""

    def strip(n: ast.AST) -> ast.AST:
        for child in ast.walk(n):
            body = getattr(child, "body", None)
            if (
                isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and isinstance(body, list)
                and body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                child.body = body[1:] or [ast.Pass()]
        return n

    import copy

    def canon(value: object) -> object:
        # (fields that are empty are left out: a Python that adds a field, such as 3.12's
        # `type_params`, hashes the same code the same)
        if isinstance(value, ast.AST):
            return (
                type(value).__name__,
                tuple(
                    (f, canon(v))
                    for f in value._fields
                    if (v := getattr(value, f, None)) is not None and v != []
                ),
            )
        if isinstance(value, list):
            return tuple(canon(v) for v in value)
        return repr(value)

    dumped = repr(canon(strip(copy.deepcopy(node))))
    return hashlib.blake2b(dumped.encode(), digest_size=8).hexdigest()


def _declared_aliases(
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef,
) -> dict[str, str]:
    """``@deprecated_aliases(old="new")`` and the like: keywords the release still takes under
    an old name, mapped to the new one."""
    out: dict[str, str] = {}
    for deco in node.decorator_list:
        if not isinstance(deco, ast.Call) or deco.args:
            continue
        name = (dotted_name(deco.func) or "").rsplit(".", 1)[-1].lower()
        if "alias" not in name:
            continue
        for kw in deco.keywords:
            if kw.arg and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
                out[kw.arg] = kw.value.value
    return out


def _instance_attributes(cls: ast.ClassDef) -> set[str]:
    """``self.<name> = ...`` in the class's methods: the attributes its instances carry (the
    private buffers a wrapper preallocates included)."""
    names: set[str] = set()
    for stmt in cls.body:
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) or not stmt.args.args:
            continue
        self_name = stmt.args.args[0].arg
        for node in ast.walk(stmt):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
                targets = [node.target]
            for t in targets:
                if (
                    isinstance(t, ast.Attribute)
                    and isinstance(t.value, ast.Name)
                    and t.value.id == self_name
                ):
                    names.add(t.attr)
    return names


def _method_aliases(cls: ast.ClassDef, methods: dict[str, Any]) -> dict[str, str]:
    """``begin_forward = plan`` in a class body: another name of one of its methods, by the
    names it gives (a call through it is a call of the method)."""
    out: dict[str, str] = {}
    for stmt in cls.body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, ast.Name)
            and stmt.value.id in methods
            and stmt.targets[0].id not in methods
        ):
            out[stmt.targets[0].id] = stmt.value.id
    return out


def _class_attributes(cls: ast.ClassDef) -> set[str]:
    """Names a class body binds: methods, nested classes, class attributes, annotated fields."""
    names: set[str] = set()
    for stmt in _module_statements(cls.body):
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(stmt.name)
        elif isinstance(stmt, ast.Assign):
            for t in stmt.targets:
                names.update(_target_names(t))
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            names.add(stmt.target.id)
    return names


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
    # every module's tree is kept until the record is built: millions of objects the cycle
    # collector would walk again and again (0.7.4's 3,300 modules: 102 s with it, 31 s without)
    enabled = gc.isenabled()
    gc.disable()
    try:
        record = _Release(sources).to_json()
    finally:
        if enabled:
            gc.enable()
    record["provenance"] = {
        "version": version,
        "source": os.path.basename(os.path.normpath(path)),
        "sha256": digest,
    }
    return record
