"""Who passes what to a parameter: every call of a function, in its own file and across the project.

A rule that meets a parameter (FI003: a global scale; FI004: a process group) asks what the
callers pass. The answer is all of them or none: `arguments` gives one `Passed` per call when
every use of the function in the project is a plain call whose arguments bind to it (a function
handed around as a value, called through ``*args``/``**kwargs``, a method, or decorated by
something that may change how it is called, gives None: "unknown", never a guess).

The project is searched from the top of the file's package (the folder above its outermost
`__init__.py`), or from the git work tree above it when there is one, so tests next to the
package count. Files that do not mention the function's name are never parsed; parsed files and
file lists are cached per process, so a rule pays for each searched file once per run. A result
that searched is reused (`migrate_fi.run.cache`) while no file under the root changed, or while the
files that mention the name are the same, with the same bytes (`mentions_hold`).
"""

from __future__ import annotations

import ast
import os
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import NamedTuple

from migrate_fi.analysis import nodes
from migrate_fi.analysis.resolver import NameResolver
from migrate_fi.analysis.scopes import Scope
from migrate_fi.base import depends
from migrate_fi.base.messages import Said, say
from migrate_fi.base.modules import display_path, module_identity
from migrate_fi.editing.sources import lines_at
from migrate_fi.project.discovery import (
    find_upward,
    python_files,
    tree_signature,
    tree_signature_with,
)

from ._values import parameter_default

__all__ = [
    "Function",
    "Passed",
    "arguments",
    "files_mentioning",
    "function_of_parameter",
    "named_only_in",
    "parents_of",
    "read_kept",
    "resolver_for",
]

Def = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
# decorators that keep how a function is called (its parameters, by position and keyword)
_KEEPING = frozenset(
    {
        "functools.cache",
        "functools.lru_cache",
        "functools.wraps",
        "torch.compile",
        "torch.no_grad",
        "torch.inference_mode",
        "torch.library.custom_op",
        "torch.compiler.disable",
        "staticmethod",
    }
)


class Function(NamedTuple):
    """A function whose parameter is asked about: its node, the name it is bound to, and where."""

    node: Def
    name: str | None  # the name it is bound to (a def's name, `f = lambda ...`'s target)
    owner: Scope  # the scope that binds that name
    resolver: NameResolver
    path: str


class Passed(NamedTuple):
    """What one call passes for the parameter."""

    value: ast.expr | None  # None: the call leaves it out, so the default applies
    scope: Scope  # where the value is evaluated
    resolver: NameResolver  # of the caller's file
    path: str  # the caller's file
    line: int  # the call's line
    caller: Function | None  # the function the call is made in, when it is one

    def where(self, seen_from: str) -> Said:
        """``line 12`` in the file it is seen from, else ``path:12``."""
        if os.path.abspath(self.path) == os.path.abspath(seen_from):
            return say("line {n}", "第 {n} 行", n=self.line)
        shown = f"{display_path(self.path)}:{self.line}"
        return Said(shown, f"`{shown}`")


def function_of_parameter(
    resolver: NameResolver, path: str, name: str, scope: Scope
) -> Function | None:
    """The function whose parameter ``name`` (seen from ``scope``) is, or None."""
    found = resolver.lookup(name, scope)
    if found is None:
        return None
    owner, bindings = found
    if not any(b.what == "parameter" for b in bindings):
        return None
    node = owner.node
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        return None
    outer = owner.parent
    if outer is None:
        return None
    if isinstance(node, ast.Lambda):
        bound = _lambda_name(node, outer)
        return None if bound is None else Function(node, bound, outer, resolver, path)
    return Function(node, node.name, outer, resolver, path)


def _lambda_name(node: ast.Lambda, outer: Scope) -> str | None:
    """`f = lambda ...`: the name it is bound to, when that is its only binding."""
    for name, bindings in outer.bindings.items():
        if any(b.value is node for b in bindings):
            return name if len(bindings) == 1 else None
    return None


def bound_argument(
    node: Def, call: ast.Call, param: str, skip: int = 0
) -> tuple[bool, ast.expr | None]:
    """What ``call`` binds to ``param`` of ``node``: ``(True, expr)``, ``(True, None)`` when it
    is left out (its default applies), ``(False, None)`` when it cannot be known (``*args``,
    ``**kwargs``, or arguments that do not bind at all). ``skip``: leading parameters the call
    does not spell (a method's ``self``)."""
    a = node.args
    positional = [p.arg for p in (*a.posonlyargs, *a.args)][skip:]
    for kw in call.keywords:
        if kw.arg is None:
            return False, None
        if kw.arg == param:
            return True, kw.value
    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            return False, None
        if i < len(positional) and positional[i] == param:
            return True, arg
    if param in positional[: len(call.args)]:
        return False, None
    return True, None


def arguments(function: Function, param: str, methods: bool = False) -> list[Passed] | None:
    """What every call of ``function`` in the project passes for ``param``; None when a use of
    it is not such a call, or the function is one whose calls cannot all be seen.

    With ``methods``, a method's calls are those in sight: ``<anything>.name(...)`` in its own
    file and in the files that name its class (an instance handed to a module that never names
    the class is not seen: use this for wording a report, never to stay silent on a doubt)."""
    if function.name is None:
        return None
    if function.owner.kind == "class":
        return _method_arguments(function, param) if methods else None
    if not _calls_visible(function):
        return None
    out: list[Passed] = []
    own = _uses_in_file(function, param, function.resolver, function.path)
    if own is None:
        return None
    out += own
    if function.owner.kind == "module" and function.resolver.module_name:
        qualname = f"{function.resolver.module_name}.{function.name}"
        words = {function.name.encode()} | {
            op.rsplit(".", 1)[-1].encode() for op in _op_names(function)
        }
        for path in _mentioning(search_root_noted(function.path), tuple(sorted(words))):
            if os.path.abspath(path) == os.path.abspath(function.path):
                continue
            parsed = resolver_for(path)
            if parsed is None:
                return None  # a file that mentions it but cannot be read: unknown
            resolver, data = parsed
            found = _uses_in_file(function, param, resolver, path, qualname, data)
            if found is None:
                return None
            out += found
    for passed in out:
        if passed.value is None and not _has_default(function.node, param):
            return None  # a call that leaves out a required parameter: not this function
    return out


def _method_arguments(function: Function, param: str) -> list[Passed] | None:
    node, cls = function.node, function.owner.node
    if isinstance(node, ast.Lambda) or not isinstance(cls, ast.ClassDef):
        return None
    kinds = {
        q
        for d in node.decorator_list
        for q in function.resolver.resolve(d, function.owner).qualnames | {ast.unparse(d)}
    }
    skip = 0 if "staticmethod" in kinds else 1
    if node.decorator_list and not kinds & {"staticmethod", "classmethod"}:
        return None  # a property, or a decorator that may change how it is called
    paths = [function.path] + [
        p
        for p in _mentioning(search_root_noted(function.path), (cls.name.encode(),))
        if os.path.abspath(p) != os.path.abspath(function.path)
        and node.name.encode() in (read_kept(p) or b"")
    ]
    module = function.resolver.module_name
    out: list[Passed] = []
    for path in paths:
        if path == function.path:
            resolver = function.resolver
        else:
            parsed = resolver_for(path)
            if parsed is None:
                return None
            resolver = parsed[0]
        if resolver is not function.resolver and not _names_class(resolver, f"{module}.{cls.name}"):
            continue  # another class of the same name
        called = nodes.called_by(resolver.tree)
        for attr in nodes.of_type(resolver.tree, ast.Attribute):
            if not (attr.attr == node.name and isinstance(attr.ctx, ast.Load)):
                continue
            call = called.get(id(attr))
            if call is None:
                return None  # handed around as a value
            through_class = isinstance(attr.value, ast.Name) and attr.value.id == cls.name
            known, value = bound_argument(node, call, param, 0 if through_class else skip)
            if not known:
                return None
            scope = resolver.scope_at(attr)
            out.append(
                Passed(value, scope, resolver, path, call.lineno, _caller(scope, resolver, path))
            )
    return out


def _names_class(resolver: NameResolver, qualname: str) -> bool:
    """The file refers to the class ``qualname`` (imports it, or reaches it through its module)."""
    name = qualname.rsplit(".", 1)[-1]
    for node in nodes.walk(resolver.tree):
        named = (isinstance(node, ast.Name) and node.id == name) or (
            isinstance(node, ast.Attribute) and node.attr == name
        )
        if (
            named
            and isinstance(node, ast.expr)
            and qualname in resolver.resolve(node, resolver.scope_at(node)).qualnames
        ):
            return True
    return False


def parents_of(tree: ast.AST) -> dict[int, ast.AST]:
    """Each node's parent, by id of the node (built once per module: `migrate_fi.analysis.nodes`)."""
    return nodes.parents(tree)


def _calls_visible(function: Function) -> bool:
    node = function.node
    if function.owner.kind == "class":
        return False  # a method: `obj.method(...)` calls cannot be told apart
    if isinstance(node, ast.Lambda):
        return True
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        quals = function.resolver.resolve(target, function.owner).qualnames
        if len(quals) != 1 or next(iter(quals)) not in _KEEPING:
            return False
        if next(iter(quals)) == "torch.library.custom_op" and _op_name(decorator) is None:
            return False  # also called as `torch.ops.<namespace>.<name>`, by a name not known
    return True


def _op_name(decorator: ast.expr) -> str | None:
    """``@torch.library.custom_op("ns::name", ...)``: ``ops.ns.name``, as its calls spell it."""
    if not isinstance(decorator, ast.Call) or not decorator.args:
        return None
    first = decorator.args[0]
    if not isinstance(first, ast.Constant) or not isinstance(first.value, str):
        return None
    namespace, sep, name = first.value.partition("::")
    if not sep or not namespace.isidentifier() or not name.isidentifier():
        return None
    return f"ops.{namespace}.{name}"


def _op_names(function: Function) -> tuple[str, ...]:
    """How a custom op's calls through `torch.ops` spell it (``ops.vllm.quantize``)."""
    node = function.node
    if isinstance(node, ast.Lambda):
        return ()
    found = (_op_name(d) for d in node.decorator_list)
    return tuple(op for op in found if op is not None)


def _has_default(node: Def, param: str) -> bool:
    return parameter_default(node, param) is not None


def _uses_in_file(
    function: Function,
    param: str,
    resolver: NameResolver,
    path: str,
    qualname: str | None = None,
    data: bytes | None = None,
) -> list[Passed] | None:
    """The calls of ``function`` in one file (its own file when ``qualname`` is None: found by
    scope; another file: found by what its names resolve to); None when it is used there other
    than by a call, or by a call whose arguments cannot be bound. ``data``: the file's bytes,
    when known (only the lines that name the function are looked at)."""
    name = function.name
    assert name is not None
    ops = _op_names(function)
    words = {name.encode(), *(op.rsplit(".", 1)[-1].encode() for op in ops)}
    seen = None if data is None else _naming(resolver.tree, data, words)
    if seen is None:
        seen, called = nodes.walk(resolver.tree), nodes.called_by(resolver.tree)
    else:
        called = {id(c.func): c for c in seen if isinstance(c, ast.Call)}
    out: list[Passed] = []
    for node in seen:
        if not isinstance(node, (ast.Name, ast.Attribute)) or not isinstance(node.ctx, ast.Load):
            continue
        is_op = (
            bool(ops)
            and isinstance(node, ast.Attribute)
            and node.attr in {op.rsplit(".", 1)[-1] for op in ops}
            and any(ast.unparse(node).endswith(op) for op in ops)
        )
        if not is_op and (node.id if isinstance(node, ast.Name) else node.attr) != name:
            continue
        if not is_op and isinstance(node, ast.Attribute) and qualname is None:
            continue  # in its own file it is called by its name
        scope = resolver.scope_at(node)
        if is_op:
            pass  # `torch.ops.ns.name(...)`: a call of the custom op
        elif qualname is None:
            found = resolver.lookup(name, scope)
            if found is None or found[0] is not function.owner:
                continue
        else:
            quals = resolver.resolve(node, scope).qualnames
            if qualname not in quals:
                continue
            if len(quals) != 1:
                return None  # may be this function or another
        parent = called.get(id(node))
        if parent is None:
            return None  # handed around as a value: its calls cannot be followed
        known, value = bound_argument(function.node, parent, param)
        if not known:
            return None
        out.append(
            Passed(value, scope, resolver, path, parent.lineno, _caller(scope, resolver, path))
        )
    return out


def _naming(tree: ast.AST, data: bytes, words: Iterable[bytes]) -> list[ast.AST]:
    """The nodes of ``tree`` (parsed from ``data``) whose source spans a line that holds one
    of ``words``, in `ast.walk`'s order (`nodes.on_lines`). A file a search found names the
    function on a few lines: `_custom_ops.py` of vLLM, 3,500 lines, walked whole took 10-15
    ms."""
    found: list[int] = []
    for word in words:
        at = data.find(word)
        while at >= 0:
            found.append(at)
            at = data.find(word, at + len(word))
    return nodes.on_lines(tree, lines_at(data, sorted(found)))


def _caller(scope: Scope, resolver: NameResolver, path: str) -> Function | None:
    """The function a call evaluated in ``scope`` is made in."""
    s = scope
    while s.kind == "comprehension" and s.parent is not None:
        s = s.parent
    node, outer = s.node, s.parent
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) or outer is None:
        return None
    bound = _lambda_name(node, outer) if isinstance(node, ast.Lambda) else node.name
    return Function(node, bound, outer, resolver, path)


def files_mentioning(path: str, word: bytes) -> list[str]:
    """The Python files of the project around ``path`` that contain ``word`` (their bytes kept:
    `read_kept`); the search is noted (`_mentioning`)."""
    return _mentioning(search_root_noted(path), (word,))


def named_only_in(path: str) -> Callable[[str], bool]:
    """Whether no file of the project but ``path`` names a word (a module-level function of
    ``path``, whose calls there are then all of its calls); the search is noted (`_mentioning`)."""
    here = os.path.abspath(path)

    def only_here(name: str) -> bool:
        return all(os.path.abspath(p) == here for p in files_mentioning(path, name.encode()))

    return only_here


def search_root_noted(path: str) -> str:
    """`search_root`, noted as a dependency of the analysis: a `.git` made above the project
    or an `__init__.py` that appears or goes moves it, and a result reused must search where
    the analysis would search now."""
    root = search_root(path)
    depends.note("search-root", path, root)
    return root


def search_root(path: str) -> str:
    """Where the project's callers of a function in ``path`` may be: the git work tree above its
    package, else the folder above its outermost package."""
    module, is_package = module_identity(path)
    top = os.path.dirname(os.path.abspath(path))
    # `a/b/c.py` is module `b.c`: one folder up from `b`; a package's `__init__.py` one more
    levels = 0 if module is None else module.count(".") + (1 if is_package else 0)
    for _ in range(levels):
        top = os.path.dirname(top)
    return find_upward(top, (".git",)) or top


_READ_BUDGET = 32 << 20  # bytes kept of the files searches found, and of those read to analyse
_kept: dict[str, bytes | None] = {}  # path -> its bytes (None: unreadable), oldest first
_kept_bytes = 0


def read_kept(path: str) -> bytes | None:
    """A file's bytes, kept while they fit in the budget (the oldest go first): the files a
    search found, and those whose callers are looked for, are asked again."""
    if path in _kept:
        return _kept[path]
    data = _read_once(path)
    _keep(path, data)
    return data


@depends.on_forget_stats
def _forget_kept() -> None:
    global _kept_bytes
    _kept.clear()
    _kept_bytes = 0


def _keep(path: str, data: bytes | None) -> None:
    global _kept_bytes
    size = len(data or b"")
    if path in _kept or size > _READ_BUDGET:
        return
    while _kept and _kept_bytes + size > _READ_BUDGET:
        _kept_bytes -= len(_kept.pop(next(iter(_kept))) or b"")
    _kept[path] = data
    _kept_bytes += size


# the searches of a run, by root and words: (the root's signature, what was found); a file
# analysed asks the same name again for each call it follows it from (FlashInfer's own tree:
# 26 searches, 12 of one name, 586 ms of 5.4 s with one process)
_searched_now: dict[tuple[str, tuple[bytes, ...]], tuple[str, list[tuple[str, bytes]]]] = {}
_SEARCHES_KEPT = 256


@depends.on_forget_stats
def _forget_searches() -> None:  # (a run in the same process searches again)
    _searched_now.clear()


def _mentioning(root: str, words: tuple[bytes, ...]) -> list[str]:
    """The Python files under ``root`` that contain one of ``words``. Any file of the project
    may add a caller: the result holds while no file changed, or while the files that contain
    them are these, as they are (`mentions_hold`). Searched once per run and root (while the
    root's signature, worked out once a run, is the same)."""
    signature = tree_signature(root)  # (first: a file changed meanwhile changes it)
    before = _searched_now.get((root, words))
    if before is not None and before[0] == signature:
        found = before[1]
    else:
        (found,) = _containing(root, [words], kept=True)
        if len(_searched_now) >= _SEARCHES_KEPT:
            del _searched_now[next(iter(_searched_now))]  # (the oldest)
        _searched_now[root, words] = (signature, found)
    for path, data in found:  # (kept for what is asked of them next: their callers' analysis)
        _keep(path, data)
    depends.note("mentions", _searched(root, words), _found(signature, root, found))
    return [path for path, _ in found]


def _found(signature: str, root: str, files: Sequence[tuple[str, bytes]]) -> str:
    """The value of a search's note: the root's signature, a digest of the files found, and
    their paths (from the root)."""
    listed = "\0".join(os.path.relpath(path, root) for path, _ in files)
    return f"{signature} {_digest(files)}\0{listed}"


def mentions_hold(
    notes: Sequence[tuple[str, str]], changed: Mapping[str, depends.Change] | None = None
) -> list[str | None]:
    """Whether each search's note ``(argument, value)`` still holds
    (`migrate_fi.base.depends.current`): as noted while the stat of every file under its root is
    unchanged; else when the same files contain its words, with the same bytes (the value then
    says so with the files' stats now: a file edited elsewhere in the project re-reads the
    files, never re-analyses every function whose callers were searched); else None. The notes
    of one root are checked in one reading of its files, unless a replay knows the files that
    changed (``changed``) and no other did: those alone are looked at."""
    out: list[str | None] = []
    again: dict[str, list[tuple[int, tuple[bytes, ...], str]]] = {}  # root -> (place, words, seen)
    for i, (argument, value) in enumerate(notes):
        root, *words = argument.split("\0")
        head, listed, paths = value.partition("\0")
        signature, _, seen = head.rpartition(" ")
        wanted = tuple(w.encode("utf-8", "surrogateescape") for w in words)
        if tree_signature(root) == signature:
            out.append(value)
        elif listed and changed and _only(changed, root, signature, wanted, paths):
            out.append(f"{tree_signature(root)} {seen}\0{paths}")
        else:
            out.append(None)
            again.setdefault(root, []).append((i, wanted, seen))
    for root, asked in again.items():
        now = tree_signature(root)
        # (read again, not kept: this process holds the run)
        found = _containing(root, [wanted for _, wanted, _ in asked], kept=False)
        for files, (i, _, seen) in zip(found, asked, strict=True):
            if _digest(files) == seen:
                out[i] = _found(now, root, files)
    return out


def _only(
    changed: Mapping[str, depends.Change],
    root: str,
    signature: str,
    words: tuple[bytes, ...],
    paths: str,
) -> bool:
    """Whether a search under ``root`` that found ``paths`` (from the root, each after a NUL)
    holds when the files ``changed`` are the only ones under it that did (its ``signature``
    is the root's with their stats before): each has the same bytes, or neither was found nor
    contains ``words`` now."""
    top = os.path.join(root, "")
    inside = {path: c for path, c in changed.items() if path.startswith(top)}
    if tree_signature_with(root, {path: c.before for path, c in inside.items()}) != signature:
        return False
    found = set(paths.split("\0")) if paths else set()
    for path, c in inside.items():
        if c.same:
            continue
        if os.path.relpath(path, root) in found or any(w in c.data for w in words):
            return False
    return True


def _containing(
    root: str, searches: list[tuple[bytes, ...]], kept: bool
) -> list[list[tuple[str, bytes]]]:
    """For each of ``searches`` (words), the Python files under ``root`` that contain one of
    them, with their bytes: each file read once, into one buffer (`_into_buffer`: no bytes
    object made, nor kept, for the thousands of files that contain none), unless ``kept`` and
    `_kept` holds it (an unreadable file contains nothing). (Read into one buffer for the
    whole root and kept, the files of vLLM's tree cost its first search 12 ms more and 25 MB,
    and its second 5 ms, not 20: the same for the two searches it makes, the most a tree of
    the benchmark makes.)"""
    found: list[list[tuple[str, bytes]]] = [[] for _ in searches]
    unread = _known_without(searches)
    for path in python_files(root):
        data: bytes | bytearray | None
        if path in unread:
            continue
        if kept and path in _kept:
            data = _kept[path]
            size = len(data or b"")
        else:
            data, size = _into_buffer(path)
        if data is None:
            continue
        hits = [
            i for i, words in enumerate(searches) if any(data.find(w, 0, size) >= 0 for w in words)
        ]
        if hits:
            whole = data if isinstance(data, bytes) else bytes(data[:size])
            for i in hits:
                found[i].append((path, whole))
    return found


def _known_without(searches: list[tuple[bytes, ...]]) -> frozenset[str]:
    """The files no search can find: this run's reading found each without a word that every
    word of every search contains (most often "flashinfer": a wrapper of FlashInfer's is named
    after it). Not read again: vLLM's two searches read 1,781 files each, now 140."""
    if not searches or not all(searches):
        return frozenset()
    each = [frozenset.intersection(*map(depends.absent, words)) for words in searches]
    return frozenset.intersection(*each)


_BUFFER = bytearray(1 << 20)  # (what `_into_buffer` reads a file into; one larger is read whole)


def _into_buffer(path: str) -> tuple[bytes | bytearray | None, int]:
    """The file's bytes, in `_BUFFER` (with their size) or, for a file larger than it, whole;
    (None, 0) when it cannot be read. A search reads every file of a project: 1,781 on vLLM's
    tree took 57 ms read whole (bytes objects made, a stat each, kept) and 18 ms so."""
    if not hasattr(os, "readv"):  # (Windows)
        whole = _read_once(path)
        return whole, len(whole or b"")
    try:
        # (not blocking: a named pipe among the files is opened at once, and left unread)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None, 0
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None, 0
        size = os.readv(fd, [_BUFFER])
    except OSError:
        return None, 0
    finally:
        os.close(fd)
    if size < len(_BUFFER):
        return _BUFFER, size
    whole = _read_once(path)
    return whole, len(whole or b"")


def _read_once(path: str) -> bytes | None:
    """A file's bytes, or None where it cannot be read (or is no regular file: a named pipe
    a search walks past would wait forever)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        return depends.read_bytes(path)
    except OSError:
        return None


def _searched(root: str, words: tuple[bytes, ...]) -> str:
    """The argument of a search's note: its root and its words."""
    return "\0".join([root, *(w.decode("utf-8", "surrogateescape") for w in words)])


def _digest(files: Iterable[tuple[str, bytes]]) -> str:
    """A digest of the paths, module names (the package layout around them: an `__init__.py`
    that appears or goes changes what their relative imports reach) and bytes of ``files``, in
    order."""
    h = depends.blake2b(digest_size=16)
    for path, data in files:
        module = repr(module_identity(path)).encode("utf-8", "surrogateescape")
        for part in (os.fsencode(path), module, data):
            h.update(len(part).to_bytes(8, "little"))
            h.update(part)
    return h.hexdigest()


def resolver_for(path: str) -> tuple[NameResolver, bytes] | None:
    """The resolver of another file of the project, with the bytes it was parsed from (kept
    for the process, and used again only for the same bytes and package layout: a run after a
    file changed, in the same process, parses it again)."""
    data = read_kept(path)
    if data is None:
        return None
    module, is_package = module_identity(path)
    return _parsed(path, data, module, is_package)


@lru_cache(maxsize=64)
def _parsed(
    path: str, data: bytes, module: str | None, is_package: bool
) -> tuple[NameResolver, bytes] | None:
    try:
        tree = ast.parse(data, filename=path)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return NameResolver(tree, module, is_package), data
