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
from typing import TYPE_CHECKING, Any

from migrate_fi.analysis.calls import CallArgs, CalleeCall, Via
from migrate_fi.api.paths import ApiPath, is_flashinfer
from migrate_fi.base.results import FixSafety
from migrate_fi.editing.edits import (
    TextEdit,
    Transform,
    keeps_arguments,
    keywordize,
    remove_arguments,
    remove_keyword,
    rename_keyword,
    set_import_module,
)
from migrate_fi.framework.rule import FileContext, KeywordStyle

from ._api import api_calls
from ._imports import import_guards

if TYPE_CHECKING:
    from migrate_fi.analysis.resolver import Candidate
    from migrate_fi.api.differ import Api, CallableDiff, CallSignature

__all__ = ["Site", "Wording", "check_calls", "ordinal"]


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


@dataclass(frozen=True)
class Site:
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

    def misbinding(self, site: Site, moved: str) -> str:
        start = site.start
        new_name = site.diff.new.bound_name(start) or "nothing"
        old_name = site.diff.old.positional[start].name
        return (
            f"{site.name}: positional argument {start + 1} binds to {new_name} instead of"
            f" {old_name} since {site.since}; pass {moved} by keyword"
        )

    def deprecated(self, site: Site, moved: str) -> str:
        return (
            f"{site.name}: passing arguments from {site.start + 1} on positionally is deprecated"
            f" since {site.since}; pass {moved} by keyword"
        )

    def star_args(self, site: Site) -> str:
        return (
            f"{site.name} called with *args: whether an argument reaches position"
            f" {site.start + 1} (which binds differently on {site.new_v}) cannot be known;"
            " check it by hand"
        )

    def ambiguous(self, site: Site, others: str) -> str:
        return (
            f"this {site.name} may also be {others}; its positional arguments would bind"
            f" differently on {site.new_v} if it is FlashInfer's: left unchanged"
        )

    def too_many(self, site: Site, n: int) -> str:
        return (
            f"{site.name} called with {n} positional arguments; its {site.old_v} signature takes"
            f" {len(site.diff.old.positional)}: left unchanged"
        )

    def clash(self, site: Site, names: list[str]) -> str:
        return (
            f"{site.name} gets {', '.join(names)} both by position and by keyword: left unchanged"
        )

    def partial_positional(self, site: Site, moved: str) -> str:
        return (
            f"functools.partial of {site.name} binds positional arguments from {site.start + 1}"
            f" on, which bind differently since {site.since}; named here, they would shift the"
            f" positional arguments of the partial's calls: pass {moved} by keyword where the"
            " partial is made and called"
        )

    def not_keyword(self, site: Site, missing: list[str]) -> str:
        return (
            f"{site.name}: positional arguments from {site.start + 1} on bind differently since"
            f" {site.since}, and {', '.join(missing)} cannot be passed by keyword there:"
            " migrate by hand"
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
    folded: dict[str, list[int]] = {path: [] for _, path, _ in missing}
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
                module, said, safety = moved[id(node)]
                ctx.fix(
                    node,
                    said,
                    ctx.replace(node, "ImportFrom", set_import_module(module)),
                    safety=safety,
                )
            continue
        lines = [] if path in re_pointed else sorted(set(folded[path]))
        if lines:
            where = ", ".join(str(n) for n in lines)
            message += f"; used at line{'s' if len(lines) > 1 else ''} {where}: migrate by hand"
        ctx.report(node, message)
    ctx.diagnostics.extend(calls)


def _check_call(
    ctx: FileContext,
    view: CalleeCall,
    path: ApiPath,
    ambiguous: object,
    candidates: tuple[Candidate, ...],
    wording: Wording,
    folded: dict[str, list[int]] | None = None,
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
                folded[imported].append(call.lineno)  # said where it is imported
                return
            ctx.report(
                call,
                f"{path.display()} ({path.dotted}) no longer exists in FlashInfer {new_v}"
                f"{moved_hint(old_api, new_api, str(path))}: migrate by hand",
            )
        return
    d = callable_diff(str(path), old_v, new_v)
    assert d is not None  # both releases have the callable
    start = d.affected_from
    n = len(args.positional)
    affected = start is not None and (n > start or bool(args.starred))
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


def _missing_imports(
    ctx: FileContext, old_api: Api, new_api: Api, owns: Callable[[str], bool]
) -> list[tuple[ast.stmt, str, str]]:
    """Imports of FlashInfer names or modules that the new release no longer has, with what to
    say about each: ``(import statement, path, message)``."""
    from migrate_fi.api.differ import moved_hint

    resolver = ctx.resolver
    new_v = str(ctx.options.to_version)
    out: list[tuple[ast.stmt, str, str]] = []
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
                if guarded is None:
                    guarded = import_guards(resolver.tree, resolver.imports)
                handler = guarded.get(id(node))
                fails = (
                    f"this import raises ImportError there, caught at line {handler}: the"
                    " fallback runs instead, silently"
                    if handler is not None
                    else "this import fails there"
                )
                out.append(
                    (node, path, f"{path} no longer exists in FlashInfer {new_v}: {fails}{hint}")
                )
    return out


def _moved_imports(
    ctx: FileContext, missing: list[tuple[ast.stmt, str, str]], old_api: Api, new_api: Api
) -> dict[int, tuple[str, str, FixSafety]]:
    """The ``from m import ...`` statements among ``missing`` whose every name went to one
    other module: id of the statement -> (that module, the fix's message, its safety). The same
    code there is a safe fix; the same signature with its code changed, a review fix."""
    from migrate_fi.api.differ import moved_alike, moved_to

    by_statement: dict[int, list[tuple[str, str]]] = {}
    nodes_by_id: dict[int, ast.stmt] = {}
    for node, path, message in missing:
        nodes_by_id[id(node)] = node
        by_statement.setdefault(id(node), []).append((path, message))
    out: dict[int, tuple[str, str, FixSafety]] = {}
    for key, found in by_statement.items():
        node = nodes_by_id[key]
        if (
            not isinstance(node, ast.ImportFrom)
            or node.level
            or any(a.name == "*" for a in node.names)
        ):
            continue
        if len(found) != len(node.names):
            continue  # some names are still there: splitting the import is for a person
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
        modules = {t.rsplit(".", 1)[0] for t in targets if t is not None}
        names = {path.rsplit(".", 1)[-1] for path, _ in found}
        if None in targets or len(modules) != 1:
            continue
        (module,) = modules
        if any(t.rsplit(".", 1)[-1] not in names for t in targets if t):
            continue
        old_module = found[0][0].rsplit(".", 1)[0]
        listed = ", ".join(sorted(names))
        gone = f"{listed}: gone from {old_module} in FlashInfer {ctx.options.to_version}"
        if changed:
            out[key] = (
                module,
                f"{gone}; {', '.join(sorted(changed))} at {module} takes the same parameters but"
                " its code changed: compare the two before importing it from there",
                FixSafety.REVIEW,
            )
        else:
            out[key] = (
                module,
                f"{gone}, the same code is at {module}: import it from there",
                FixSafety.SAFE,
            )
    return out


@dataclass
class Renames:
    """The keywords a call writes that the new release calls otherwise: ``safe`` ones are
    rewritten with the call's fix; ``review`` ones (a rename the data makes likely, not certain)
    get a fix of their own for a person to read, or a report when the call has a safe fix."""

    safe: dict[str, str]
    review: dict[str, str]
    # keywords of parameters the new release removed, passed their old default: dropped
    dropped: dict[str, str] = field(default_factory=dict)  # name -> the default, as written


_WHY = {
    "declared": "FlashInfer {v} renamed it and takes the old name, deprecated",
    "same": "FlashInfer {v} renamed it: the same place, kind, default and words",
    "place": (
        "renamed in FlashInfer {v}, likely: the same place, kind and default, but other words:"
        " check that the meaning is the same"
    ),
    "likely": (
        "renamed in FlashInfer {v}, likely: the closest name of the same kind and default,"
        " elsewhere in the signature: check that it is the same parameter"
    ),
}


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
    for kw in sorted(own.keyword_names() - owned):
        new_name = d.renamed.get(kw)
        if new_name is not None:
            evidence = d.rename_evidence.get(kw, "likely")
            if kw in own.keywords and new_name not in site.args.keywords:
                (renames.safe if safe_rename(evidence) else renames.review)[kw] = new_name
                continue
            how = (
                f"and {new_name} are both passed: drop {kw}="
                if new_name in site.args.keywords
                else f"is passed through a ** mapping: call it {new_name} there"
            )
            ctx.report(
                site.call,
                f"{site.name}: parameter {kw} {how} ({_WHY[evidence].format(v=site.new_v)})",
            )
        elif kw in d.removed:
            given = own.keywords.get(kw)
            default = _old_default_passed(site, kw, given)
            if default is not None:
                renames.dropped[kw] = default
                continue
            hint = _successor_hint(d, kw) or _old_default_hint(d, kw, given)
            ctx.report(
                site.call,
                f"{site.name}: parameter {kw} no longer exists in FlashInfer {site.new_v}{hint}",
            )
    return renames


def _old_default_passed(site: Site, name: str, given: ast.keyword | ast.expr | None) -> str | None:
    """The old default of the removed parameter ``name``, as the data writes it, when the call
    passes exactly that literal value for it (``tile_tokens_dim=None``) and no new parameter
    takes its place: the call behaved as if it had not passed it, and dropping the argument
    keeps that. None otherwise."""
    from migrate_fi.api.differ import literal_default, place_taken_by

    value = given.value if isinstance(given, ast.keyword) else given
    old = next((p for p in site.diff.old.params if p.name == name), None)
    if value is None or isinstance(value, ast.Starred) or old is None or old.default is None:
        return None
    if name not in site.diff.removed or place_taken_by(site.diff.old, site.diff.new, name):
        return None
    known, default = literal_default(old.default)
    try:
        passed = ast.literal_eval(value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    if not known or type(passed) is not type(default) or passed != default:
        return None
    return old.default


def _old_default_hint(d: CallableDiff, name: str, given: ast.keyword | None) -> str:
    """`` (its old default: None; ...)``: what a call that did not pass it behaved as."""
    old = next((p for p in d.old.params if p.name == name), None)
    if old is None or old.default is None:
        return ""
    if given is None:  # (passed through a ** mapping: its value is not read here)
        return f" (its old default: {old.default})"
    shown = ast.unparse(given.value)
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    return f" (its old default: {old.default}; this call passes {shown}: migrate by hand)"


def _successor_hint(d: CallableDiff, name: str) -> str:
    """`` (in its place: x, default None instead of 1)`` when a new parameter fills the removed
    one's place with another kind or default: maybe a rename, but not the same parameter."""
    from migrate_fi.api.differ import place_taken_by

    found = place_taken_by(d.old, d.new, name)
    if found is None:
        return ""
    old, new = found
    if old.default != new.default:
        was = "required" if old.default is None else old.default
        now = "required" if new.default is None else new.default
        change = f"{now}, not {was}"
        return f" (in its place: {new.name}, default {change}; not the same parameter for certain)"
    return f" (in its place: {new.name}, {_KINDS[new.kind]}, not {_KINDS[old.kind]})"


_KINDS = {"A": "positional or keyword", "K": "keyword-only", "P": "positional-only"}


def _rename_message(site: Site, renames: dict[str, str]) -> str:
    names = ", ".join(f"{old}= to {new}=" for old, new in renames.items())
    whys = sorted({_WHY[site.diff.rename_evidence.get(old, "likely")] for old in renames})
    return f"rename {names} ({'; '.join(w.format(v=site.new_v) for w in whys)})"


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


def _report_review(ctx: FileContext, site: Site, review: dict[str, str]) -> None:
    if review:
        ctx.report(site.call, f"{site.name}: {_rename_message(site, review)}")


def _fix_renames(ctx: FileContext, site: Site, renames: Renames) -> None:
    """One fix for the call's renamed keywords and dropped ones: the safe ones (the review ones
    reported beside it), or else the review ones, for a person to read."""
    todo, safety = renames.safe, FixSafety.SAFE
    if todo or renames.dropped:
        _report_review(ctx, site, renames.review)
    else:
        todo, safety = renames.review, FixSafety.REVIEW
    if todo or renames.dropped:
        said = [_rename_message(site, todo)] if todo else []
        said += [_drop_message(site, renames.dropped)] if renames.dropped else []
        ctx.fix(
            site.call,
            f"{site.name}: {'; '.join(said)}",
            ctx.replace(
                site.call,
                "Call",
                _with_renames(keeps_arguments(lambda call: call), todo, renames.dropped),
                None if renames.dropped else _as_text(ctx, site.call, {}, todo),
            ),
            safety=safety,
        )


def _drop_message(site: Site, dropped: Mapping[str, str]) -> str:
    """What dropping the arguments of removed parameters passed their old defaults says."""
    listed = ", ".join(f"{name}={default}" for name, default in dropped.items())
    them = "them" if len(dropped) > 1 else "it"
    return (
        f"drop {listed}: FlashInfer {site.new_v} removed the parameter"
        f"{'s' if len(dropped) > 1 else ''}, and the call passes the old default (as if it"
        f" did not pass {them})"
    )


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
    for req in missing:
        ctx.report(
            site.call,
            f"{site.name}: FlashInfer {site.new_v} requires parameter {req}, not passed here",
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
                default = _old_default_passed(site, old_pos[i].name, call.args[index])
                if default is not None:
                    dropped[i] = default
    names = {_written_at(site, i): old_pos[i].name for i in range(first, n) if i not in dropped}
    missing = [old_pos[i].name for i in range(start, n) if i not in dropped and not keyword_ok(i)]
    if missing:
        # (a likely rename is said: the person decides whether the new name is the same)
        said = [
            f"{p.name} (renamed {d.renamed[p.name]}, likely)"
            if p.name in d.renamed
            else f"{p.name} (removed, passed its old default {dropped[i]}: drop it)"
            if i in dropped
            else p.name
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
        message = f"{site.name}: {_drop_message(site, gone)}"
    elif d.misbinding_index is not None and d.misbinding_index == start:
        message = wording.misbinding(site, moved)
    else:
        message = wording.deprecated(site, moved)
    if moved and gone:
        message += f"; {_drop_message(site, gone)}"
    still = _required(ctx, site, first)
    if still:
        needs = ", ".join(f"{r}=" for r in still)
        message += (
            f" (fixed in part: on {site.new_v} the call still needs {needs}, reported here too)"
        )
    safe = renames.safe
    if safe:
        message += f"; also {_rename_message(site, safe)}"
    if renames.dropped:
        message += f"; also {_drop_message(site, renames.dropped)}"
    transform = _with_renames(keywordize(names), safe, renames.dropped)
    if dropped:
        transform = _then_drop(transform, [_written_at(site, i) for i in dropped])
    text = None if dropped or renames.dropped else _as_text(ctx, call, names, safe)
    ctx.fix(call, message, ctx.replace(call, "Call", transform, text))
    _report_review(ctx, site, renames.review)


def _then_drop(transform: Transform, indexes: list[int]) -> Transform:
    def both(call: Any) -> Any:
        return remove_arguments(indexes)(transform(call))

    # (the dropped arguments are literals: nothing inside them to edit)
    return keeps_arguments(both)
