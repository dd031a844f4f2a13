"""How a rule finds the calls of FlashInfer's APIs: `api_calls`, one policy for every rule.

``api_calls(ctx, api)`` yields each call of the file (resolved through aliases, module
attributes, imports inside functions and `try`, instances, re-exports and partials:
`migrate_fi.analysis.calls`) whose callee may be a FlashInfer definition of the release ``api`` is,
as an `ApiCall`: the definition's key (`Api.key`: one key for every public path of one
definition), the path the file reaches it by, and what else the callee may be.

The ambiguity policy, the same for every rule: a call is *certain* when every binding its
callee may have is FlashInfer's, under a path the release knows, to that one definition.
Anything else a binding may be (a project function of the same name on another branch,
another FlashInfer definition, a FlashInfer path the release does not know) is in
``others``, and the call is yielded once per FlashInfer definition it may reach. A rule that
rewrites acts on certain calls only (`flashinfer_calls`); a rule may report the others, with
what else they may be (FI002, FI004), or leave them alone.
"""

from __future__ import annotations

import sys
from collections.abc import Collection, Iterable, Iterator, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, NamedTuple

from migrate_fi.analysis.calls import CalleeCall, callee_calls
from migrate_fi.analysis.resolver import Candidate
from migrate_fi.api.paths import ApiPath, is_flashinfer, is_public
from migrate_fi.framework.rule import FileContext

if TYPE_CHECKING:
    from migrate_fi.api.differ import Api

__all__ = [
    "ApiCall",
    "api_calls",
    "flashinfer_calls",
    "last_names",
    "path_words",
    "paths_words",
    "public_paths_to",
]


class ApiCall(NamedTuple):
    """A call whose callee may be one FlashInfer definition."""

    view: CalleeCall
    key: str  # the definition, on the first release asked that knows the path
    path: str  # the public path the file reaches it by (the first in order, when several do)
    others: tuple[Candidate, ...]  # what else the callee may be bound to; () when certain

    @property
    def certain(self) -> bool:
        return not self.others


def api_calls(
    ctx: FileContext,
    api: Api | Sequence[Api],
    keys: Collection[str] | None = None,
) -> Iterator[ApiCall]:
    """Every call of ``ctx``'s file that may reach a FlashInfer definition of ``api`` (or of
    the first of several releases that knows the path: FI004 asks the old and the new one),
    one `ApiCall` per definition, in source order; ``keys``: only those definitions."""
    apis = (api,) if not isinstance(api, Sequence) else tuple(api)
    for view, keyed, by_path in _keyed_calls(ctx, apis):
        by_key: dict[str, str] = {}
        for key, c in by_path:
            if key is not None and (keys is None or key in keys):
                by_key.setdefault(key, c.qualname or "")
        for key, path in by_key.items():
            others = tuple(c for k, c in keyed if k != key)
            yield ApiCall(view, key, path, others)


_Candidates = list[tuple[str | None, Candidate]]  # each with its key (None: not FlashInfer's)
_Keyed = list[tuple[CalleeCall, _Candidates, _Candidates]]


def _keyed_calls(ctx: FileContext, apis: tuple[Api, ...]) -> _Keyed:
    """Each call with its callee's candidates and their keys, as bound and sorted by path:
    computed once per file and releases for every rule that asks (kept on the resolver)."""
    resolver = ctx.resolver
    memo = ("api_calls", *(id(a) for a in apis))
    found = resolver.derived.get(memo)
    if isinstance(found, list):
        return found

    def key_of(path: str | None) -> str | None:
        if not is_flashinfer(path):
            return None
        return next((k for a in apis if (k := a.key(path)) is not None), None)

    if resolver.only_here is None:  # (a parameter is followed to this module's calls)
        from ._callers import named_only_in

        resolver.only_here = named_only_in(ctx.path)
    out: _Keyed = []
    for view in callee_calls(resolver):
        candidates = resolver.resolve(view.func, view.func_scope).candidates
        keyed = [(key_of(c.qualname), c) for c in candidates]
        out.append((view, keyed, sorted(keyed, key=lambda kc: kc[1].qualname or "")))
    resolver.derived[memo] = out
    return out


def path_words(path: object) -> tuple[str, ...]:
    """The prefilter trigger of a public path: every part of it is in a file that reaches it,
    however the file imports it (``flashinfer.Wrapper().run`` names ``Wrapper`` and ``run``)."""
    return paths_words((path,))[0]


def paths_words(paths: Iterable[object]) -> tuple[tuple[str, ...], ...]:
    """`path_words` of each of ``paths``, in order: the words of a module or class worked out
    once for a run of paths that share it, as sorted paths do (FI002's 7,500 paths of a range
    in 9.8 ms one by one, 5.7 ms so: before any file is read)."""
    out = []
    seen: str | None = None
    head: tuple[str, ...] = ()
    intern = sys.intern
    for path in paths:
        text = str(path)
        if "()" in text:
            text = text.replace("()", "")
        prefix, dot, last = text.rpartition(".")
        if prefix != seen:
            seen = prefix
            head = _prefix_words(prefix) if dot else ()
        out.append((*head, intern(last)))
    return tuple(out)


@lru_cache(maxsize=16)
def public_paths_to(version: str, paths: frozenset[str]) -> tuple[str, ...]:
    """``paths`` (public paths of ``version``'s definitions, methods as ``X().name``) with every
    other public path to the same definition (for a method, to its class), as the prefilter
    index lists them: what a file that calls one of them may name instead
    (`flashinfer.decode.f` for `flashinfer.mla.f`). (One pass over the release's exports for
    the few definitions asked: its public paths and their inversion cost a worker 5 MB.)"""
    from migrate_fi.api.differ import api_for

    api = api_for(version)
    out = set(paths)
    # the definitions asked, each with how a path to it is written: itself, or a method of it
    wanted: dict[str, set[str | None]] = {}
    for path in paths:
        key = api.key(path)
        if key is None:
            continue
        api_key = ApiPath(key)
        if api_key.is_method:
            wanted.setdefault(str(api_key.owner), set()).add(api_key.name)
        else:
            wanted.setdefault(key, set()).add(None)
    found: set[str] = set()

    def add(public: str, target: str) -> None:
        found.add(target)
        out.update(_written(public, wanted[target]))

    # (what `Api.public_paths` holds, read for these definitions only: a public definition is
    # its own path; a public export of one, unless the export's path is a definition itself)
    for target in wanted:
        if target in api.defs and is_public(target):
            add(target, target)
    for public, target in api.exports.items():
        if target in wanted and is_public(public) and target in api.defs and public not in api.defs:
            add(public, target)
    # (a name a module imports but leaves out of its `__all__` is reached as its attribute too)
    for public, target in api.attrs.items():
        if target in wanted and target in api.defs:
            add(public, target)
    for target in wanted.keys() - found:  # (no public path: the definition's own)
        out.update(_written(target, wanted[target]))
    return tuple(sorted(out))


def _written(path: str, names: set[str | None]) -> list[str]:
    """``path`` as the paths to it are written: itself, or ``path().name`` for a method."""
    return [path if name is None else str(ApiPath.method_of(path, name)) for name in names]


@lru_cache(maxsize=16)
def last_names(paths: frozenset[str]) -> tuple[frozenset[str], frozenset[bytes]]:
    """The last parts of ``paths`` (a range's from the prefilter index: one set object per
    range, kept), as text and encoded: what a rule's finer test meets in a file's bytes, and
    its analysis in the names a file uses."""
    names = frozenset(p.rpartition(".")[2] for p in paths)
    return names, frozenset(n.encode() for n in names)


@lru_cache(maxsize=8192)
def _prefix_words(prefix: str) -> tuple[str, ...]:
    """The words of a path's module or class, split once: a range's 7,500 paths of FI002 have
    1,000 of them. (Interned: a run holds thousands of these, made of a few hundred words.)"""
    return tuple(map(sys.intern, prefix.split(".")))


def flashinfer_calls(ctx: FileContext, api: Api) -> Iterator[tuple[CalleeCall, str]]:
    """``(call, key)`` for every certain call of a FlashInfer definition of ``api``'s release:
    what a rule that rewrites acts on."""
    for call in api_calls(ctx, api):
        if call.certain:
            yield call.view, call.key
