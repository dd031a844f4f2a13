"""Positional binding: the one mechanism that checks FlashInfer calls against two releases.

For each call that resolves to a FlashInfer function, class constructor or method of a known
instance, the API data of ``--from`` and ``--to`` says whether its positional arguments still bind
to the same parameters (`migrate_fi.api.differ.compare_callables`). Rules use it through
`check_calls` with the APIs they own (FI002: all but those another selected rule owns; FI001:
``fp4_quantize``) and their own wording (`Wording`), so no site depends on which rule a user
selected, and no two rules report the same one.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, NamedTuple

from migrate_fi.analysis.calls import CallArgs, CalleeCall, Via
from migrate_fi.analysis.versiontests import Releases
from migrate_fi.api.paths import CACHE_ATTRIBUTES, ApiPath, is_flashinfer
from migrate_fi.api.store import on_forget
from migrate_fi.base import patterns
from migrate_fi.base.messages import Said, join, say
from migrate_fi.base.results import FixSafety
from migrate_fi.editing.edits import (
    TextEdit,
    Transform,
    keeps_arguments,
    keywordize,
    remove_arguments,
    remove_imported_names,
    remove_keyword,
    rename_keyword,
    set_import_module,
)
from migrate_fi.framework.rule import FileContext, KeywordStyle

from ._api import api_calls
from ._imports import import_guards
from ._layout import line_length

if TYPE_CHECKING:
    from packaging.version import Version

    from migrate_fi.analysis.resolver import Candidate, NameResolver
    from migrate_fi.api.differ import Api, CallableDiff, CallSignature

__all__ = ["Site", "Wording", "check_calls", "ordinal"]


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


class Site(NamedTuple):
    """One call to a FlashInfer callable whose signature changed between the two releases."""

    view: CalleeCall
    path: ApiPath
    diff: CallableDiff
    old_v: str
    new_v: str
    since: str  # the first release in the range where positional calls need a rewrite

    @property
    def call(self) -> ast.Call:
        """The call written in the file: reported, and edited."""
        return self.view.node

    @property
    def args(self) -> CallArgs:
        """Every argument that reaches the callee (a partial's included)."""
        return self.view.args

    @property
    def name(self) -> str:
        return self.path.display()

    @property
    def start(self) -> int:
        start = self.diff.affected_from
        assert start is not None
        return start


class Wording:
    """The messages of positional-binding findings. A rule that owns an API may word them its
    own way by overriding methods (FI001 does)."""

    def misbinding(self, site: Site, moved: str) -> Said:
        start = site.start
        return say(
            "{name}: positional argument {n} binds to {new} instead of {old} since {since}; pass"
            " {moved} by keyword",
            "{name}：自 {since} 起第 {n} 个位置参数绑定到 `{new}` 而不是 `{old}`；请用关键字传入"
            " `{moved}`",
            name=site.name,
            n=start + 1,
            new=site.diff.new.bound_name(start) or "nothing",
            old=site.diff.old.positional[start].name,
            since=site.since,
            moved=moved,
        )

    def deprecated(self, site: Site, moved: str) -> Said:
        return say(
            "{name}: passing arguments from {n} on positionally is deprecated since {since}; pass"
            " {moved} by keyword",
            "{name}：自 {since} 起，从第 {n} 个参数起按位置传参已弃用；请用关键字传入 `{moved}`",
            name=site.name,
            n=site.start + 1,
            since=site.since,
            moved=moved,
        )

    def star_args(self, site: Site) -> Said:
        return say(
            "{name} called with *args: whether an argument reaches position {n} (which binds"
            " differently on {new_v}) cannot be known; check it by hand",
            "{name} 以 `*args` 调用：无法知道是否有参数到达第 {n} 个位置（它在 {new_v}"
            " 上绑定到不同的参数）；请手动检查",
            name=site.name,
            n=site.start + 1,
            new_v=site.new_v,
        )

    def ambiguous(self, site: Site, others: str) -> Said:
        return say(
            "this {name} may also be {others}; its positional arguments would bind differently"
            " on {new_v} if it is FlashInfer's: left unchanged",
            "这个 {name} 也可能是 {others}；如果它是 FlashInfer 的，它的位置参数在 {new_v}"
            " 上会绑定到不同的参数：未修改",
            name=site.name,
            others=others,
            new_v=site.new_v,
        )

    def too_many(self, site: Site, n: int) -> Said:
        return say(
            "{name} called with {n} positional arguments; its {old_v} signature takes {most}:"
            " left unchanged",
            "{name} 以 {n} 个位置参数调用；它在 {old_v} 的签名接受 {most} 个：未修改",
            name=site.name,
            n=n,
            old_v=site.old_v,
            most=len(site.diff.old.positional),
        )

    def clash(self, site: Site, names: list[str]) -> Said:
        return say(
            "{name} gets {names} both by position and by keyword: left unchanged",
            "{name} 同时按位置和按关键字收到 `{names}`：未修改",
            name=site.name,
            names=", ".join(names),
        )

    def partial_positional(self, site: Site, moved: str) -> Said:
        return say(
            "functools.partial of {name} binds positional arguments from {n} on, which bind"
            " differently since {since}; named here, they would shift the positional arguments"
            " of the partial's calls: pass {moved} by keyword where the partial is made and"
            " called",
            "{name} 的 `functools.partial` 从第 {n} 个起按位置绑定参数，而它们自 {since}"
            " 起绑定到不同的参数；如果在这里改为关键字，会使 partial 的调用的位置参数错位："
            "请在创建和调用 partial 的地方用关键字传入 `{moved}`",
            name=site.name,
            n=site.start + 1,
            since=site.since,
            moved=moved,
        )

    def not_keyword(self, site: Site, missing: list[Said]) -> Said:
        return say(
            "{name}: positional arguments from {n} on bind differently since {since}, and"
            " {missing} cannot be passed by keyword there: migrate by hand",
            "{name}：自 {since} 起从第 {n} 个起的位置参数绑定到不同的参数，而 {missing}"
            " 在那里不能用关键字传入：请手动迁移",
            name=site.name,
            n=site.start + 1,
            since=site.since,
            missing=join(missing, ", ", "、"),
        )


def check_calls(ctx: FileContext, owns: Callable[[str], bool], wording: Wording) -> None:
    """Report or fix every call (and import) in ``ctx``'s file of an API whose definition key
    ``owns`` accepts."""
    from migrate_fi.api.differ import api_for

    old_v, new_v = str(ctx.options.from_version), str(ctx.options.to_version)
    old_api, new_api = api_for(old_v), api_for(new_v)
    resolver = ctx.resolver
    missing = _missing_imports(ctx, old_api, new_api, owns)
    moved = _moved_imports(ctx, missing, old_api, new_api)
    # uses of a name whose import is reported are listed in that finding, not one finding each
    # (and not at all when the import is fixed: the same code is imported from where it went)
    # (each use with the lines of the statements that bind what it calls: a use is listed under
    # the import statement it comes from, not under one of the same path in another function)
    folded: dict[str, list[tuple[int, frozenset[int]]]] = {path: [] for _, path, _ in missing}
    first = len(ctx.diagnostics)
    # (several paths to one definition, `from flashinfer import *` and `from
    # flashinfer.quantization import *`, are one API: one key)
    for call in api_calls(ctx, old_api):
        if owns(call.key):
            candidates = resolver.resolve(call.view.func, call.view.func_scope).candidates
            ambiguous = not call.certain
            _check_call(ctx, call.view, ApiPath(call.path), ambiguous, candidates, wording, folded)
    calls = ctx.diagnostics[first:]
    del ctx.diagnostics[first:]
    fixed: set[int] = set()
    # (a use of a path one fixed statement imports may come from it: listed nowhere)
    re_pointed = {path for node, path, _ in missing if id(node) in moved}
    for node, path, message in missing:  # (in source order, before the calls they fold)
        if id(node) in moved:
            if id(node) not in fixed:
                fixed.add(id(node))
                how = moved[id(node)]
                transforms = []
                if how.dropped:
                    transforms.append(remove_imported_names(how.dropped))
                if how.kept != getattr(node, "module", None):
                    transforms.append(set_import_module(how.kept))
                width = line_length(ctx.path) - node.col_offset
                ctx.fix(
                    node,
                    how.message,
                    *(ctx.replace(node, "ImportFrom", t) for t in transforms),
                    *(
                        ctx.insert_after(node, _import_code(module, aliases, width))
                        for module, aliases in how.elsewhere
                    ),
                    safety=how.safety,
                )
            continue
        lines = (
            []
            if path in re_pointed
            else sorted({n for n, bound in folded[path] if not bound or node.lineno in bound})
        )
        if lines:
            message += say(
                "; used at line{s} {where}: migrate by hand",
                "；用于第 {where} 行{s}：请手动迁移",
                s=Said("s" if len(lines) > 1 else "", ""),  # (English plural)
                where=", ".join(str(n) for n in lines),
            )
        ctx.report(node, message)
    ctx.diagnostics.extend(calls)


def _check_call(
    ctx: FileContext,
    view: CalleeCall,
    path: ApiPath,
    ambiguous: object,
    candidates: tuple[Candidate, ...],
    wording: Wording,
    folded: dict[str, list[tuple[int, frozenset[int]]]] | None = None,
) -> None:
    from migrate_fi.api.differ import api_for, callable_diff, moved_hint
    from migrate_fi.api.index import first_change

    old_v, new_v = str(ctx.options.from_version), str(ctx.options.to_version)
    old_api, new_api = api_for(old_v), api_for(new_v)
    before = old_api.callable(str(path))
    if before is None:
        return  # not a callable FlashInfer knew on --from (a module, a constant...)
    after = new_api.callable(str(path))
    call, args = view.node, view.args
    if after is None:
        # (a partial's calls are not the place: the partial that names it is)
        if view.via is not Via.PARTIAL_CALL and new_api.surely_missing(str(path)):
            dotted = path.dotted
            imported = max(
                (p for p in folded or () if dotted == p or dotted.startswith(p + ".")),
                key=len,
                default=None,
            )
            if imported is not None and folded is not None:
                bound = frozenset(c.line for c in candidates)
                folded[imported].append((call.lineno, bound))  # said where it is imported
                return
            ctx.report(
                call,
                say(
                    "{name} ({dotted}) no longer exists in FlashInfer {new_v}{hint}: migrate by"
                    " hand",
                    "{name}（`{dotted}`）在 FlashInfer {new_v} 中已不存在{hint}：请手动迁移",
                    name=path.display(),
                    dotted=path.dotted,
                    new_v=new_v,
                    hint=moved_hint(old_api, new_api, str(path), since=_went(path, old_v, new_v)),
                ),
            )
        return
    d = callable_diff(str(path), old_v, new_v)
    assert d is not None  # both releases have the callable
    start = d.affected_from
    n = len(args.positional)
    affected = start is not None and (n > start or _star_may_reach(view, d, start))
    since = (first_change(str(path), old_v, new_v) or new_v) if start is not None else new_v
    site = Site(view, path, d, old_v, new_v, since)
    if ambiguous:
        if affected:
            what = ", ".join(c.describe() for c in candidates if c.qualname != str(path))
            ctx.report(call, wording.ambiguous(site, what))
        return
    renames = _keywords(ctx, site)
    if not affected:
        _required(ctx, site, n)
        _fix_renames(ctx, site, renames)
        return
    if view.bound is not None and (view.bound_count > site.start or view.bound.starred):
        # the partial itself binds the affected positions: reported where it is made
        _fix_renames(ctx, site, renames)
        return
    if args.starred:
        ctx.report(call, wording.star_args(site))
        _fix_renames(ctx, site, renames)
        return
    if view.via is Via.PARTIAL:
        moved = ", ".join(f"{p.name}=" for p in d.old.positional[site.start : n])
        ctx.report(call, wording.partial_positional(site, moved))
        _fix_renames(ctx, site, renames)
        return
    _positional(ctx, site, wording, renames)


def _star_may_reach(view: CalleeCall, d: CallableDiff, start: int) -> bool:
    """Whether the call's ``*args`` may reach position ``start``. Not where the call passes by
    keyword a parameter the old signature has before it (at position ``i``): Python refuses
    positional arguments at ``i`` and after then ("got multiple values"), so the call, as it
    runs today, passes fewer than ``i`` (FlashInfer's tests: `moe(*args, top_k=...)`, `top_k`
    the 9th, a change at the 24th)."""
    args = view.args
    if not args.starred:
        return False
    if view.bound is not None:
        return True  # (a partial's own arguments come first: counted where it is made)
    places = {p.name: i for i, p in enumerate(d.old.positional)}
    named = [places[k] for k in args.keywords if k in places]
    return not named or min(named) > start


def _went(path: ApiPath, old_v: str, new_v: str) -> str | None:
    """The release of the range that dropped what a cache gave a function (``f.cache_clear``),
    as the prefilter index says; None for any other path."""
    from migrate_fi.api.index import listed_in

    if path.dotted.rpartition(".")[2] not in CACHE_ATTRIBUTES:
        return None
    return next(iter(listed_in("pairs", path.dotted, old_v, new_v)), None)


def _missing_imports(
    ctx: FileContext, old_api: Api, new_api: Api, owns: Callable[[str], bool]
) -> list[tuple[ast.stmt, str, Said]]:
    """Imports of FlashInfer names or modules that the new release no longer has, with what to
    say about each: ``(import statement, path, message)``."""
    from migrate_fi.api.differ import moved_hint

    resolver = ctx.resolver
    new_v = str(ctx.options.to_version)
    out: list[tuple[ast.stmt, str, Said]] = []
    guarded: dict[int, int] | None = None  # (looked up for the first missing import only)
    for node in resolver.imports:
        paths: list[str] = []
        if isinstance(node, ast.ImportFrom):
            module = resolver.absolute_module(node.module, node.level)
            if module is not None:
                paths = [f"{module}.{a.name}" for a in node.names if a.name != "*"]
        elif isinstance(node, ast.Import):
            paths = [a.name for a in node.names]
        for path in paths:
            if not is_flashinfer(path):
                continue
            key = old_api.key(path) or old_api.canonical(path)
            if key is None or not owns(key):
                continue
            if new_api.canonical(path) is None and new_api.surely_missing(path):
                hint = moved_hint(old_api, new_api, path)
                if not hint.en:
                    hint = _successor(path, old_api, new_v)
                if guarded is None:
                    guarded = import_guards(resolver.tree, resolver.imports)
                handler = guarded.get(id(node))
                fails = (
                    say(
                        "this import raises ImportError there, caught at line {handler}: what"
                        " that handler does runs instead, and the import itself reports nothing",
                        "这个导入在那里会抛出 `ImportError`，被第 {handler} 行捕获：转而运行该处理"
                        "代码，导入本身不报任何错误",
                        handler=handler,
                    )
                    if handler is not None
                    else _fails_unless(resolver, node, ctx.options.to_version, ctx.text)
                )
                out.append(
                    (
                        node,
                        path,
                        say(
                            "{path} no longer exists in FlashInfer {new_v}: {fails}{hint}",
                            "`{path}` 在 FlashInfer {new_v} 中已不存在：{fails}{hint}",
                            path=path,
                            new_v=new_v,
                            fails=fails,
                            hint=hint,
                        ),
                    )
                )
    return out


# where a release note says to go instead: "use flashinfer.moe_ep.NVLinkTwoSidedAlltoAll"
_USE = patterns.compile(r"\buse (flashinfer(?:\.\w+)+)")


def _successor(path: str, old_api: Api, new_v: str) -> Said:
    """For a ``path`` the new release no longer has, that nothing of the same name replaced:
    what a release up to ``new_v`` said to use instead where it deprecated it, or a class or
    function of it (0.7.2 deprecated `MnnvlMoe` for `flashinfer.moe_ep.NVLinkTwoSidedAlltoAll`
    before 0.7.4 removed its module); ``""`` where no note says."""
    from migrate_fi.base.versions import parse_version

    by_path, by_key = _successors(old_api.version, new_v)
    key = old_api.key(path)
    # what to use -> the release that said it (the first) and what of ``path`` it deprecated
    # (None: ``path`` itself; else the name in it: `MnnvlMoe` of a module imported whole)
    said: dict[str, tuple[str, str | None]] = {}
    for api, uses, release in (*by_path.get(path, ()), *(by_key.get(key, ()) if key else ())):
        member = None
        if api != path and api.startswith(f"{path}.") and path in old_api.modules:
            member = api[len(path) + 1 :].split(".")[0]
        for use in uses:
            said.setdefault(use, (release, member))
    if not said:
        return say("", "")
    release, member = min(said.values(), key=lambda v: parse_version(v[0]))
    return say(
        " (FlashInfer {release} deprecated {what} for {uses}, another API)",
        "（FlashInfer {release} 已弃用{what}，改用 {uses}，这是另一套 API）",
        release=release,
        what=Said(member, f"其中的 `{member}`") if member else Said("it", "它"),
        uses=Said(" or ".join(said), "或".join(f"`{u}`" for u in said)),
    )


# a note of a deprecation that names what to use: (its api, what to use, its release)
_Successor = tuple[str, tuple[str, ...], str]


@lru_cache(maxsize=4)
def _successors(
    old_v: str, new_v: str
) -> tuple[dict[str, list[_Successor]], dict[str, list[_Successor]]]:
    """The deprecations of the releases up to ``new_v`` that name what to use instead, once
    per run (a tree with many removed imports asked each of them again: 150 ms over
    FlashInfer 0.6.18's own tree), by each leading part of the api they concern and by the
    definition that part is in ``old_v`` (`flashinfer.comm.MoeAlltoAll` is also
    `flashinfer.comm.trtllm_moe_alltoall.MoeAlltoAll`)."""
    from migrate_fi.api.differ import api_for
    from migrate_fi.api.notes import Behaviour, Deprecated, load_notes
    from migrate_fi.base.versions import parse_version

    old_api, target = api_for(old_v), parse_version(new_v)
    by_path: dict[str, list[_Successor]] = {}
    by_key: dict[str, list[_Successor]] = {}
    for note in load_notes():
        if not isinstance(note, (Behaviour, Deprecated)) or parse_version(note.release) > target:
            continue
        uses = _USE.findall(note.what if isinstance(note, Behaviour) else note.why)
        if isinstance(note, Deprecated) and note.moved_to:
            uses.insert(0, note.moved_to)
        if not uses:
            continue
        entry = (note.api, tuple(u.rstrip(".") for u in uses), note.release)
        parts = note.api.split(".")
        for i in range(len(parts), 1, -1):
            prefix = ".".join(parts[:i])
            by_path.setdefault(prefix, []).append(entry)
            key = old_api.key(prefix)
            if key is not None:
                by_key.setdefault(key, []).append(entry)
    return by_path, by_key


on_forget(_successors.cache_clear)  # (a data folder that changes drops what was read of it)


class _Moved(NamedTuple):
    """Where the names a ``from m import ...`` statement imports went, as a fix: ``kept`` is
    the module the statement imports from after it (its own, when some of its names are still
    there; else where the first went), ``elsewhere`` each other module with the names (and
    aliases) to import from it, in a statement of their own after this one."""

    kept: str
    dropped: tuple[str, ...]  # the names the statement no longer imports
    elsewhere: tuple[tuple[str, tuple[ast.alias, ...]], ...]
    message: Said
    safety: FixSafety


def _moved_imports(
    ctx: FileContext, missing: list[tuple[ast.stmt, str, Said]], old_api: Api, new_api: Api
) -> dict[int, _Moved]:
    """The ``from m import ...`` statements among ``missing`` whose every missing name went
    to a module of the new release under the same name: id of the statement -> the fix. The
    same code there is a safe fix; the same signature with its code changed, a review fix.
    Names still there stay; the others are imported from where they went, in statements of
    their own after this one (where it is alone on its lines: not after a `;`)."""
    from migrate_fi.api.differ import moved_alike, moved_to

    by_statement: dict[int, list[tuple[str, Said]]] = {}
    nodes_by_id: dict[int, ast.stmt] = {}
    for node, path, message in missing:
        nodes_by_id[id(node)] = node
        by_statement.setdefault(id(node), []).append((path, message))
    out: dict[int, _Moved] = {}
    for key, found in by_statement.items():
        node = nodes_by_id[key]
        if (
            not isinstance(node, ast.ImportFrom)
            or node.level
            or node.module is None
            or any(a.name == "*" for a in node.names)
        ):
            continue
        targets = [moved_to(old_api, new_api, path)[0] for path, _ in found]
        changed = {
            path.rsplit(".", 1)[-1]
            for (path, _), target in zip(found, targets, strict=True)
            if target is None
        }
        targets = [
            target or moved_alike(old_api, new_api, path)
            for (path, _), target in zip(found, targets, strict=True)
        ]
        if any(
            t is None or t.rsplit(".", 1)[-1] != p.rsplit(".", 1)[-1]
            for (p, _), t in zip(found, targets, strict=True)
        ):
            continue  # (gone, or under another name: for a person)
        went = {
            p.rsplit(".", 1)[-1]: t.rsplit(".", 1)[0]
            for (p, _), t in zip(found, targets, strict=True)
            if t
        }
        modules = list(dict.fromkeys(went[a.name] for a in node.names if a.name in went))
        whole = all(a.name in went for a in node.names)
        kept = modules[0] if whole else node.module
        if (not whole or len(modules) > 1) and not _alone(ctx, node):
            continue  # (a statement after a `;` or a compound's colon: split by hand)
        elsewhere = tuple(
            (m, tuple(a for a in node.names if went.get(a.name) == m)) for m in modules if m != kept
        )
        dropped = tuple(sorted({a.name for a in node.names if went.get(a.name, kept) != kept}))
        old_module = found[0][0].rsplit(".", 1)[0]
        names = sorted(went)
        gone = say(
            "{listed}: gone from {old_module} in FlashInfer {new_v}",
            "`{listed}`：在 FlashInfer {new_v} 中已不在 `{old_module}` 里",
            listed=", ".join(names),
            old_module=old_module,
            new_v=ctx.options.to_version,
        )
        places = ", ".join(
            m if len(modules) == 1 else f"{m} ({', '.join(n for n in names if went[n] == m)})"
            for m in modules
        )
        located = sorted(
            p.rsplit(".", 1)[-1]
            for (p, _), t in zip(found, targets, strict=True)
            if t and (old_api.reads_location(p) or new_api.reads_location(t))
        )
        if located and not changed:
            message = say(
                "{gone}, the same code is at {places}; but {located} reads where its module is"
                " (`__file__`, a relative import), which moved: check what it computes from there"
                " before importing it from there",
                "{gone}，相同的代码在 `{places}`；但 `{located}` 读取其模块所在的位置"
                "（`__file__`、相对导入），而模块已移动：从那里导入之前请核对它据此计算的结果",
                gone=gone,
                places=places,
                located=", ".join(located),
            )
            safety = FixSafety.REVIEW
        elif changed:
            message = say(
                "{gone}; {changed} at {places} takes the same parameters but its code"
                " changed: compare the two before importing it from there",
                "{gone}；`{places}` 中的 `{changed}` 参数相同但代码变了：从那里导入之前请比较两者",
                gone=gone,
                changed=", ".join(sorted(changed)),
                places=places,
            )
            safety = FixSafety.REVIEW
        else:
            message = say(
                "{gone}, the same code is at {places}: import it from there",
                "{gone}，相同的代码在 `{places}`：请从那里导入",
                gone=gone,
                places=places,
            )
            safety = FixSafety.SAFE
        out[key] = _Moved(kept, dropped, elsewhere, message, safety)
    return out


def _alone(ctx: FileContext, node: ast.stmt) -> bool:
    """Whether the statement is alone on its lines (what a statement can be inserted after)."""
    lines = ctx.lines
    end = node.end_lineno or node.lineno
    if not 0 < node.lineno <= end <= len(lines):
        return False
    # (`ast` columns count UTF-8 bytes)
    before = lines[node.lineno - 1].encode()[: node.col_offset]
    after = lines[end - 1].encode()[node.end_col_offset or 0 :].strip()
    return not before.strip() and (not after or after.startswith(b"#"))


def _import_code(module: str, aliases: tuple[ast.alias, ...], width: int) -> str:
    """``from module import a, b as c`` (parenthesized, one name a line, past ``width``)."""
    names = [a.name if a.asname is None else f"{a.name} as {a.asname}" for a in aliases]
    one = f"from {module} import {', '.join(names)}"
    if len(one) <= width or len(names) == 1:
        return one
    listed = "".join(f"    {n},\n" for n in names)
    return f"from {module} import (\n{listed})"


@dataclass
class Renames:
    """The keywords a call writes that the new release calls otherwise: ``safe`` ones are
    rewritten with the call's fix; ``review`` ones (a rename the data makes likely, not certain)
    get a fix of their own for a person to read, or a report when the call has a safe fix."""

    safe: dict[str, str]
    review: dict[str, str]
    # keywords of parameters the new release removed, passed their old default: dropped
    dropped: dict[str, str] = field(default_factory=dict)  # name -> the default, as written
    # how a rename the data does not make is known (`_keywords`): keyword -> evidence
    evidence: dict[str, str] = field(default_factory=dict)


def _fails_unless(resolver: NameResolver, node: ast.stmt, to_version: Version, text: str) -> Said:
    """What a removed name's import does on the new release: it fails, unless the nearest
    ``if`` it is under skips it there (vLLM tests for the module first:
    ``if has_flashinfer_nvlink_two_sided():``), which then leaves the code that needs it without
    it; a test of FlashInfer's version that lets the new release through skips nothing."""
    at = _guarding_if(resolver.tree, node)
    tests = Releases(resolver, resolver.tree, (to_version,), text)
    if at is None or tests.holds_on(at.test, to_version):
        return say("this import fails there", "这个导入在那里会失败")
    return say(
        "this import fails there, unless the test at line {line} ({test}) skips it: then the"
        " code that needs it goes without it",
        "这个导入在那里会失败，除非第 {line} 行的判断（`{test}`）跳过它：那样需要它的代码就"
        "拿不到它",
        line=at.lineno,
        test=_short(ast.unparse(at.test)),
    )


def _guarding_if(tree: ast.Module, node: ast.stmt) -> ast.If | None:
    """The nearest ``if`` the statement ``node`` is under, inside its own function or class (a
    descent through the statements that hold its line: no map of the whole tree's parents)."""
    from migrate_fi.analysis import nodes

    found: ast.If | None = None
    body: list[ast.stmt] = tree.body
    while True:
        for stmt in body:
            if stmt is node:
                return found
            if stmt.lineno <= node.lineno <= (stmt.end_lineno or stmt.lineno):
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    found = None
                elif isinstance(stmt, ast.If):
                    found = stmt
                body = nodes.inner_statements(stmt)
                break
        else:
            return found


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _renamed_in(site: Site, old: str, new: str) -> str:
    """The release of the range that renamed the keyword ``old`` to ``new``."""
    from migrate_fi.api.index import renamed_in

    return renamed_in(str(site.path), old, new, site.old_v, site.new_v)


def _why(evidence: str, v: str) -> Said:
    """Why a keyword is taken for renamed, by the data's ``evidence``."""
    if evidence == "declared":
        return say(
            "FlashInfer {v} renamed it and takes the old name, deprecated",
            "FlashInfer {v} 给它改了名，旧名仍可用但已弃用",
            v=v,
        )
    if evidence == "same":
        return say(
            "FlashInfer {v} renamed it: the same place, kind, default and words",
            "FlashInfer {v} 给它改了名：位置、类别、默认值和说明都相同",
            v=v,
        )
    if evidence == "passed":
        return say(
            "renamed in FlashInfer {v}, likely: the same place and kind, and the words of one"
            " name within the other's; its default changed, which a call that passes its own"
            " value does not use",
            "可能在 FlashInfer {v} 中改了名：位置和类别相同，一个名字的词包含在另一个之中；"
            "它的默认值变了，但此调用传入自己的值，不受影响",
            v=v,
        )
    if evidence == "place":
        return say(
            "renamed in FlashInfer {v}, likely: the same place, kind and default, but other"
            " words: check that the meaning is the same",
            "可能在 FlashInfer {v} 中改了名：位置、类别和默认值相同，但说明不同：请确认含义相同",
            v=v,
        )
    return say(
        "renamed in FlashInfer {v}, likely: the closest name of the same kind and default,"
        " elsewhere in the signature: check that it is the same parameter",
        "可能在 FlashInfer {v} 中改了名：签名中别处有类别和默认值相同、名字最接近的参数："
        "请确认是同一个参数",
        v=v,
    )


def _keywords(ctx: FileContext, site: Site) -> Renames:
    """Keywords that no longer exist: renamed ones the call writes itself are returned, for a
    fix; the others (passed through a ``**`` dict, or both names passed) and removed ones are
    reported, removed ones with the parameter that took their place, if any."""
    from migrate_fi.api.differ import api_for, safe_rename

    renames = Renames({}, {})
    own = site.view.own  # a partial's keywords are checked where the partial is made
    d = site.diff
    old_api = api_for(site.old_v)
    key = old_api.key(str(site.path))
    # keywords another selected rule migrates (FI010: a value map the data does not show)
    owned = {n for p, n in ctx.settings.deferred_parameters if old_api.key(p) == key}
    plain: list[str] = []  # removed keywords with nothing more to say than that
    for kw in sorted(own.keyword_names() - owned):
        new_name = d.renamed.get(kw)
        if new_name is not None:
            evidence = d.rename_evidence.get(kw, "likely")
            if kw in own.keywords and new_name not in site.args.keywords:
                (renames.safe if safe_rename(evidence) else renames.review)[kw] = new_name
                continue
            how = (
                say(
                    "and {new} are both passed: drop {kw}=",
                    "和 `{new}` 都传了：请去掉 `{kw}=`",
                    new=new_name,
                    kw=kw,
                )
                if new_name in site.args.keywords
                else say(
                    "is passed through a ** mapping: call it {new} there",
                    "经 `**` 映射传入：请在那里改名为 `{new}`",
                    new=new_name,
                )
            )
            ctx.report(
                site.call,
                say(
                    "{name}: parameter {kw} {how} ({why})",
                    "{name}：参数 `{kw}` {how}（{why}）",
                    name=site.name,
                    kw=kw,
                    how=how,
                    why=_why(evidence, _renamed_in(site, kw, new_name)),
                ),
            )
        elif kw in d.removed:
            given = own.keywords.get(kw)
            default = _old_default_passed(site, kw, given)
            if default is not None:
                renames.dropped[kw] = default
                continue
            successor = _renamed_with_default(d, kw)
            if successor is not None and given is not None and successor not in site.args.keywords:
                # (the call passes its own value: the default that changed is not its)
                renames.review[kw] = successor
                renames.evidence[kw] = "passed"
                continue
            hint = (
                _successor_hint(d, kw)
                or (
                    say(
                        " (FlashInfer {old_v} did not use its value: drop the argument, and what"
                        " computes it if nothing else needs that)",
                        "（FlashInfer {old_v} 本就不使用它的值：去掉这个参数，如果没有别处需要，"
                        "也去掉计算它的代码）",
                        old_v=site.old_v,
                    )
                    if _unused_by_old(site, kw)
                    else say("", "")
                )
                or _old_default_hint(d, kw, given)
            )
            if not hint:
                plain.append(kw)  # (said together, below: nothing more to say of each)
                continue
            ctx.report(
                site.call,
                say(
                    "{name}: parameter {kw} no longer exists in FlashInfer {new_v}{hint}",
                    "{name}：参数 `{kw}` 在 FlashInfer {new_v} 中已不存在{hint}",
                    name=site.name,
                    kw=kw,
                    new_v=site.new_v,
                    hint=hint,
                ),
            )
    if plain:
        many = len(plain) > 1
        ctx.report(
            site.call,
            say(
                "{name}: {parameter} {kw} no longer {exists} in FlashInfer {new_v}",
                "{name}：参数 {kw} 在 FlashInfer {new_v} 中已不存在{parameter}{exists}",
                name=site.name,
                parameter=Said("parameters" if many else "parameter", ""),
                kw=Said(", ".join(plain), "、".join(f"`{k}`" for k in plain)),
                exists=Said("exist" if many else "exists", ""),
                new_v=site.new_v,
            ),
        )
    return renames


def _renamed_with_default(d: CallableDiff, name: str) -> str | None:
    """The parameter that took removed ``name``'s place with the same kind and a name of its
    words or more (`max_seq_len_q` -> `max_q_len`, 0.7.4's prims_ts decode `plan()`), but
    another default: a rename for a call that passes its own value, for a person to check.
    None otherwise."""
    from migrate_fi.api.differ import place_taken_by, words_within

    found = place_taken_by(d.old, d.new, name)
    if found is None:
        return None
    old, new = found
    if old.kind != new.kind or old.kind not in ("A", "K") or old.default == new.default:
        return None  # (the same default: the data's renames have judged it)
    before = {p.name for p in d.old.params}
    alike = [
        q.name
        for q in d.new.params
        if q.name not in before and q.kind == old.kind and words_within(name, q.name)
    ]
    # (one parameter split in two, `in_dtype` -> `in_qk_dtype` and `in_pv_dtype`: no rename)
    return new.name if alike == [new.name] else None


def _old_default_passed(
    site: Site, name: str, given: ast.keyword | ast.expr | None, by_keyword: bool = True
) -> str | None:
    """What the call passes for the removed parameter ``name`` (as the data writes the old
    default, or as the call writes its literal), when dropping the argument keeps what the call
    did and no new parameter takes its place: exactly the old default's literal value
    (``tile_tokens_dim=None``: as if it were not passed), or any literal passed by keyword
    (``by_keyword``) for a parameter whose value the old release's function never used
    (FlashInfer 0.5's `tile_tokens_dim` of the trtllm MoE functions, required there: only a
    warning that it was passed; not a method, which a subclass may override). Not by position:
    code already written for a later release (a wrong --from) puts another parameter's value
    there, and only the keyword says which parameter the call means. None otherwise."""
    from migrate_fi.api.differ import literal_default, place_taken_by

    value = given.value if isinstance(given, ast.keyword) else given
    old = next((p for p in site.diff.old.params if p.name == name), None)
    if value is None or isinstance(value, ast.Starred) or old is None:
        return None
    if name not in site.diff.removed or place_taken_by(site.diff.old, site.diff.new, name):
        return None
    try:
        passed = ast.literal_eval(value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    if old.default is not None:
        known, default = literal_default(old.default)
        if known and type(passed) is type(default) and passed == default:
            return old.default
    if by_keyword and _unused_by_old(site, name):
        return ast.unparse(value)
    return None


def _unused_by_old(site: Site, name: str) -> bool:
    """The old release's function never used the value of ``name`` (the data's `ign`); not
    said of a method, which a subclass may override."""
    return name in site.diff.old.ignored and "()." not in str(site.path)


def _unused(site: Site, name: str, passed: str) -> bool:
    """A dropped argument that is not the old default: one the old release never used."""
    old = next((p for p in site.diff.old.params if p.name == name), None)
    return old is None or old.default != passed


def _old_default_hint(d: CallableDiff, name: str, given: ast.keyword | None) -> Said:
    """`` (its old default: None; ...)``: what a call that did not pass it behaved as."""
    old = next((p for p in d.old.params if p.name == name), None)
    if old is None or old.default is None:
        return say("", "")
    if given is None:  # (passed through a ** mapping: its value is not read here)
        return say(" (its old default: {old})", "（它原来的默认值：`{old}`）", old=old.default)
    shown = ast.unparse(given.value)
    return say(
        " (its old default: {old}; this call passes {shown}: migrate by hand)",
        "（它原来的默认值：`{old}`；此调用传入 `{shown}`：请手动迁移）",
        old=old.default,
        shown=shown if len(shown) <= 40 else shown[:37] + "...",
    )


def _successor_hint(d: CallableDiff, name: str) -> Said:
    """`` (in its place: x, default None instead of 1)`` when a new parameter fills the removed
    one's place with another kind or default: maybe a rename, but not the same parameter."""
    from migrate_fi.api.differ import place_taken_by, share_words, split_into

    found = place_taken_by(d.old, d.new, name)
    if found is None:
        return say("", "")
    old, new = found
    split = split_into(d.old, d.new, name)
    if split and all((p.kind, p.default) == (old.kind, old.default) for p in split):
        # (one parameter split in several: `kv_dtype` into `k_dtype` and `v_dtype`)
        return say(
            " (in its place: {names}, each of the same kind and default: it may have been split"
            " in them)",
            "（取代它位置的是同类、同默认值的 {names}：它可能被拆分成了这几个参数）",
            names=", ".join(p.name for p in split),
        )
    if (
        old.kind == new.kind == "K"
        and old.default == new.default
        and not share_words(name, new.name)
    ):
        return say("", "")  # (no place among keywords, and nothing in common: unrelated)
    if old.default != new.default:
        return say(
            " (in its place: {new}, default {now}, not {was}; not the same parameter for certain)",
            "（取代它位置的是 `{new}`，默认值 {now}，而不是 {was}；不一定是同一个参数）",
            new=new.name,
            now=_default(new.default),
            was=_default(old.default),
        )
    if old.kind == new.kind:  # (another name of the same kind and default: maybe renamed)
        return say(
            " (in its place: {new}, of the same kind and default: check whether it means the same)",
            "（取代它位置的是同类、同默认值的 `{new}`：请核对含义是否相同）",
            new=new.name,
        )
    return say(
        " (in its place: {new}, {now}, not {was})",
        "（取代它位置的是 `{new}`，{now}，而不是{was}）",
        new=new.name,
        now=_KINDS[new.kind],
        was=_KINDS[old.kind],
    )


def _default(value: str | None) -> Said:
    return say("required", "必填") if value is None else Said(value, f"`{value}`")


_KINDS = {
    "A": say("positional or keyword", "位置或关键字参数"),
    "K": say("keyword-only", "仅限关键字参数"),
    "P": say("positional-only", "仅限位置参数"),
}


def _rename_message(
    site: Site, renames: dict[str, str], known: Mapping[str, str] | None = None
) -> Said:
    """``known``: the evidence of renames the data does not make (`Renames.evidence`). One
    reason for all the renames follows them; different reasons follow each its own rename
    (`max_seq_len_q= to max_q_len= (...its default changed...), o_data_type= to out_dtype=
    (...)`)."""
    known = known or {}
    why = {
        old: (
            known.get(old) or site.diff.rename_evidence.get(old, "likely"),
            _renamed_in(site, old, new),
        )
        for old, new in renames.items()
    }
    if len(set(why.values())) == 1:
        return say(
            "rename {names} ({why})",
            "把 {names} 改名（{why}）",
            names=join(
                (
                    say("{old}= to {new}=", "`{old}=` 改为 `{new}=`", old=old, new=new)
                    for old, new in renames.items()
                ),
                ", ",
                "，",
            ),
            why=_why(*next(iter(why.values()))),
        )
    return say(
        "rename {names}",
        "把 {names} 改名",
        names=join(
            (
                say(
                    "{old}= to {new}= ({why})",
                    "`{old}=` 改为 `{new}=`（{why}）",
                    old=old,
                    new=new,
                    why=_why(*why[old]),
                )
                for old, new in renames.items()
            ),
            ", ",
            "，",
        ),
    )


def _with_renames(
    transform: Transform, renames: dict[str, str], dropped: Collection[str] = ()
) -> Transform:
    def both(call: Any) -> Any:
        call = transform(call)
        for old, new in renames.items():
            call = rename_keyword(old, new)(call)
        for name in dropped:
            call = remove_keyword(name)(call)
        return call

    # (naming arguments and renaming keywords keep every argument's value; a dropped one is a
    # literal, with nothing inside it to edit)
    return keeps_arguments(both)


def _fix_renames(ctx: FileContext, site: Site, renames: Renames) -> None:
    """The call's renamed keywords and dropped ones: one fix for the safe ones, and one for
    the review ones, for a person to read (`apply --unsafe-fixes` merges the two)."""
    if renames.safe or renames.dropped:
        said = [_rename_message(site, renames.safe)] if renames.safe else []
        said += [_drop_message(site, renames.dropped)] if renames.dropped else []
        ctx.fix(
            site.call,
            say("{name}: {what}", "{name}：{what}", name=site.name, what=join(said)),
            ctx.replace(
                site.call,
                "Call",
                _with_renames(keeps_arguments(lambda call: call), renames.safe, renames.dropped),
                None if renames.dropped else _as_text(ctx, site.call, {}, renames.safe),
            ),
        )
    _fix_review(ctx, site, renames)


def _fix_review(ctx: FileContext, site: Site, renames: Renames) -> None:
    """The renames a person should read (`likely` ones) as a review fix of their own, which
    `apply --unsafe-fixes` merges with the call's other edits."""
    review = renames.review
    if review:
        ctx.fix(
            site.call,
            say(
                "{name}: {what}",
                "{name}：{what}",
                name=site.name,
                what=_rename_message(site, review, renames.evidence),
            ),
            ctx.replace(
                site.call,
                "Call",
                _with_renames(keeps_arguments(lambda call: call), review, {}),
                _as_text(ctx, site.call, {}, review),
            ),
            safety=FixSafety.REVIEW,
        )


def _drop_message(site: Site, dropped: Mapping[str, str]) -> Said:
    """What dropping the arguments of removed parameters passed their old defaults (or passed
    to a parameter the old release never used) says."""
    defaults: dict[str, str] = {}
    unused: dict[str, str] = {}
    for name, value in dropped.items():
        (unused if _unused(site, name, value) else defaults)[name] = value
    said = []
    if defaults:
        several = len(defaults) > 1
        said.append(
            say(
                "drop {listed}: FlashInfer {new_v} removed the parameter{s}, and the call passes"
                " the old default (as if it did not pass {them})",
                "去掉 `{listed}`：FlashInfer {new_v} 删除了这个参数{s}，而此调用传的是旧的默认值"
                "（等同于没有传{them}）",
                listed=", ".join(f"{name}={default}" for name, default in defaults.items()),
                new_v=site.new_v,
                # (English grammar: nothing in Chinese)
                s=Said("s" if several else "", ""),
                them=Said("them" if several else "it", ""),
            )
        )
    if unused:
        said.append(
            say(
                "drop {listed}: FlashInfer {new_v} removed the parameter{s}, whose value"
                " FlashInfer {old_v} did not use (at most it warned that it was passed)",
                "去掉 `{listed}`：FlashInfer {new_v} 删除了这个参数{s}，而 FlashInfer {old_v}"
                " 本就不使用它的值（至多警告它被传入）",
                listed=", ".join(f"{name}={value}" for name, value in unused.items()),
                new_v=site.new_v,
                old_v=site.old_v,
                s=Said("s" if len(unused) > 1 else "", ""),
            )
        )
    return join(said, "; ", "；")


def _as_text(
    ctx: FileContext, call: ast.Call, names: dict[int, str], renames: dict[str, str]
) -> tuple[TextEdit, ...] | None:
    """`keywordize(names)` and the keyword renames as text edits: ``name=`` inserted where each
    argument starts (before any parenthesis around it), a keyword's name replaced. None when the
    text between the arguments is not plain enough to say it (the LibCST transform does it)."""
    edits = []
    for index, name in names.items():
        if index >= len(call.args):
            return None
        arg = call.args[index]
        # a bare generator or assignment expression needs parentheses once named: LibCST's job
        if isinstance(arg, (ast.Starred, ast.GeneratorExp, ast.NamedExpr)):
            return None
        if any((k.lineno, k.col_offset) < (arg.lineno, arg.col_offset) for k in call.keywords):
            return None  # `f(k=1, *a)`: argument indices count differently in LibCST
        before = call.func if index == 0 else call.args[index - 1]
        point = _argument_start(ctx, before, arg, "(" if index == 0 else ",")
        if point is None:
            return None
        edits.append(TextEdit((*point, *point), f"{name}="))
    for kw in call.keywords:
        if kw.arg is None or kw.arg not in renames:
            continue
        line, col = ctx.span(kw)[:2]
        if ctx.text_between((line, col), (line, col + len(kw.arg))) != kw.arg:
            return None
        edits.append(TextEdit((line, col, line, col + len(kw.arg)), renames[kw.arg]))
    if len(edits) != len(names) + len(renames):
        return None  # (a keyword to rename not written in the call: LibCST says what to do)
    return tuple(edits)


def _argument_start(
    ctx: FileContext, before: ast.expr, arg: ast.expr, separator: str
) -> tuple[int, int] | None:
    """Where the argument ``arg`` starts, parentheses around it included: after ``separator``
    (the call's ``(`` or the ``,`` that follows ``before``, the callee or the previous argument),
    past blanks, line continuations and comments. None if anything else lies between."""
    start = ctx.span(before)[2:]
    gap = ctx.text_between(start, ctx.span(arg)[:2])
    i, seen = 0, False
    while i < len(gap):
        c = gap[i]
        if c == "#":
            end = gap.find("\n", i)
            i = len(gap) if end < 0 else end
        elif c in " \t\f\n\\":  # (outside a comment, a backslash only continues a line)
            i += 1
        elif not seen and c == separator:
            seen = True
            i += 1
        elif not seen and c == ")":  # closing parentheses around ``before``
            i += 1
        elif seen and c == "(":  # opening parentheses around ``arg``
            break
        else:
            return None
    if not seen:
        return None
    head = gap[:i]
    breaks = head.count("\n")
    if not breaks:
        return start[0], start[1] + i
    return start[0] + breaks, i - head.rfind("\n") - 1


def _written_at(site: Site, position: int) -> int:
    index = site.view.node_index(position)
    assert index is not None, "a position a partial binds is never this call's to name"
    return index


def _missing_required(site: Site, positional: int) -> list[str]:
    """Parameters the new release requires that the call does not pass, when its first
    ``positional`` arguments stay positional (the rest are passed by keyword)."""
    if site.args.opaque_kwargs or site.view.via is Via.PARTIAL:
        return []  # a `**x` we cannot read may pass anything; a partial's calls pass the rest
    after_pos = site.diff.new.positional
    missing = []
    for req in site.diff.newly_required:
        index = next((i for i, p in enumerate(after_pos) if p.name == req), None)
        if req in site.args.keyword_names() or (index is not None and index < positional):
            continue
        missing.append(req)
    return missing


def _binds(sig: CallSignature, positional: int, keywords: Collection[str]) -> bool:
    """Whether ``positional`` arguments and ``keywords`` bind to ``sig`` without a TypeError
    (too many positions, a parameter given twice, a keyword nothing takes)."""
    params = sig.positional
    if positional > len(params) and sig.varargs is None:
        return False
    by_position = {p.name for p in params[:positional] if p.kind != "P"}
    if by_position & set(keywords):
        return False
    return all(sig.may_accept_keyword(k) for k in keywords)


def _required(ctx: FileContext, site: Site, positional: int) -> list[str]:
    missing = _missing_required(site, positional)
    if missing:  # (one finding for all of them)
        ctx.report(
            site.call,
            say(
                "{name}: FlashInfer {new_v} requires parameter{s} {req}, not passed here",
                "{name}：FlashInfer {new_v} 要求参数{s} {req}，这里没有传",
                name=site.name,
                new_v=site.new_v,
                s=Said("s" if len(missing) > 1 else "", ""),  # (English plural)
                req=Said(", ".join(missing), "、".join(f"`{r}`" for r in missing)),
            ),
        )
    return missing


def _positional(ctx: FileContext, site: Site, wording: Wording, renames: Renames) -> None:
    """Name the positional arguments from the first affected one, by their old names (and
    rename the keywords the release renamed, in the same fix)."""
    call, args, d = site.call, site.args, site.diff
    start = site.start
    n = len(args.positional)
    old_pos = d.old.positional
    if _binds(d.new, n, args.keyword_names()) and not _binds(d.old, n, args.keyword_names()):
        return  # a call that binds only on the target: written for it already
    if n > len(old_pos):
        ctx.report(call, wording.too_many(site, n))
        _required(ctx, site, n)
        _fix_renames(ctx, site, renames)
        return

    def keyword_ok(i: int) -> bool:
        return old_pos[i].kind != "P" and d.new.accepts_keyword(old_pos[i].name)

    first = start
    if ctx.options.keyword_style is KeywordStyle.ALL:  # as far back as keywords are accepted
        # (not into what a partial binds: those are not this call's to name)
        while first > site.view.bound_count and keyword_ok(first - 1):
            first -= 1
    # removed parameters passed their old default by position: dropped (the later arguments
    # are named, so that nothing shifts)
    dropped: dict[int, str] = {}
    if site.view.via is not Via.PARTIAL:
        for i in range(start, n):
            index = site.view.node_index(i)
            if index is not None and not keyword_ok(i):
                default = _old_default_passed(site, old_pos[i].name, call.args[index], False)
                if default is not None:
                    dropped[i] = default
    names = {_written_at(site, i): old_pos[i].name for i in range(first, n) if i not in dropped}
    missing = [old_pos[i].name for i in range(start, n) if i not in dropped and not keyword_ok(i)]
    if missing:
        # (a likely rename is said: the person decides whether the new name is the same)
        said = [
            say(
                "{p} (renamed {new}, likely)",
                "`{p}`（可能改名为 `{new}`）",
                p=p.name,
                new=d.renamed[p.name],
            )
            if p.name in d.renamed
            else say(
                "{p} (removed, passed its old default {old}: drop it)",
                "`{p}`（已删除，传的是旧默认值 `{old}`：去掉它）",
                p=p.name,
                old=dropped[i],
            )
            if i in dropped
            else say(
                "{p} (removed; {old_v} did not use its value: if the call is written for"
                " {old_v}, drop that argument)",
                "`{p}`（已删除；{old_v} 本就不使用它的值：如果此调用是按 {old_v} 写的，"
                "去掉这个参数）",
                p=p.name,
                old_v=site.old_v,
            )
            if _unused_by_old(site, p.name)
            else Said(p.name, f"`{p.name}`")
            for i, p in enumerate(old_pos[:n])
            if i >= start and not keyword_ok(i)
        ]
        ctx.report(call, wording.not_keyword(site, said))
        _required(ctx, site, n)
        _fix_renames(ctx, site, renames)
        return
    # (any position: a call that passes one parameter twice fails today, as it is)
    by_position = {old_pos[i].name for i in range(n) if old_pos[i].kind != "P"}
    clash = sorted(by_position & args.keyword_names())
    if clash:
        ctx.report(call, wording.clash(site, clash))
        _required(ctx, site, n)
        _fix_renames(ctx, site, renames)
        return
    moved = ", ".join(f"{old_pos[i].name}=" for i in range(start, n) if i not in dropped)
    gone = {old_pos[i].name: default for i, default in dropped.items()}
    if not moved:
        message = say(
            "{name}: {what}", "{name}：{what}", name=site.name, what=_drop_message(site, gone)
        )
    elif d.misbinding_index is not None and d.misbinding_index == start:
        message = wording.misbinding(site, moved)
    else:
        message = wording.deprecated(site, moved)
    if moved and gone:
        message += say("; {what}", "；{what}", what=_drop_message(site, gone))
    still = _required(ctx, site, first)
    if still:
        message += say(
            " (fixed in part: on {new_v} the call still needs {needs}, reported here too)",
            "（只修复了一部分：在 {new_v} 上此调用仍需要 `{needs}`，也在这里报告）",
            new_v=site.new_v,
            needs=", ".join(f"{r}=" for r in still),
        )
    safe = renames.safe
    if safe:
        message += say("; also {what}", "；另外{what}", what=_rename_message(site, safe))
    if renames.dropped:
        message += say("; also {what}", "；另外{what}", what=_drop_message(site, renames.dropped))
    transform = _with_renames(keywordize(names), safe, renames.dropped)
    if dropped:
        transform = _then_drop(transform, [_written_at(site, i) for i in dropped])
    text = None if dropped or renames.dropped else _as_text(ctx, call, names, safe)
    ctx.fix(call, message, ctx.replace(call, "Call", transform, text))
    _fix_review(ctx, site, renames)


def _then_drop(transform: Transform, indexes: list[int]) -> Transform:
    def both(call: Any) -> Any:
        return remove_arguments(indexes)(transform(call))

    # (the dropped arguments are literals: nothing inside them to edit)
    return keeps_arguments(both)
