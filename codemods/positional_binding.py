"""FI002: every FlashInfer call whose positional arguments bind differently on the target release."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from migrate_fi.calls import keywordize
from migrate_fi.codemod import Codemod, CodemodSetupError, FileContext, RunOptions
from migrate_fi.names import CallArgs
from migrate_fi.results import FixSafety

if TYPE_CHECKING:
    from migrate_fi.api.differ import Api, CallableDiff


def _display(path: str) -> str:
    """``flashinfer.decode.Wrapper().plan`` -> ``Wrapper.plan``; ``flashinfer.x.f`` -> ``f``;
    ``flashinfer.x.Cls.static`` -> ``Cls.static``."""
    if "()." in path:
        cls, _, method = path.rpartition("().")
        return f"{cls.rsplit('.', 1)[-1]}.{method}"
    parts = path.split(".")
    if len(parts) >= 2 and parts[-2][:1].isupper():
        return ".".join(parts[-2:])
    return parts[-1]


@dataclass(frozen=True)
class _Site:
    """One call to a FlashInfer callable whose signature changed between the two releases."""

    call: ast.Call
    args: CallArgs
    diff: CallableDiff
    name: str  # for messages: `fp4_quantize`, `Wrapper.plan`
    old_v: str
    new_v: str


def _is_flashinfer(qualname: str | None) -> bool:
    return qualname is not None and (qualname == "flashinfer" or qualname.startswith("flashinfer."))


class PositionalBinding(Codemod):
    """Positional calls to any FlashInfer API whose parameters moved between `--from` and `--to`.

    Driven by the bundled API data of every release (`migrate-fi api-diff OLD NEW`), not by a
    hand-written table. For each call that resolves to a FlashInfer function, class constructor,
    or a method of an instance built in the same scope or assigned to `self.<attr>` in the same
    class (`w = flashinfer.BatchDecodeWithPagedKVCacheWrapper(...); w.plan(...)`):

    - If a parameter was inserted, removed or reordered before the positions the call fills, the
      call binds differently with no error. The fix names the arguments from the first affected
      position on by their OLD names, which binds as before on the new release:

          flashinfer.trtllm_fp4_block_scale_moe(a0, ..., a27, out)   # 29 positional, 0.6.10
          flashinfer.trtllm_fp4_block_scale_moe(a0, ..., a27, output=out)   # any release

    - Deprecation shims are read from the release's own code: from 0.6.15
      `BatchDecodeWithPagedKVCacheWrapper.plan(..., page_size, *deprecated_positional_args,
      **kwargs)` still maps old positional optionals by their old names, with a warning. Those
      arguments are named too (which silences the warning), and nothing is reported as missing.

    Reported, not rewritten: a call whose old positional name no longer exists on the new release,
    keywords that no longer exist (renamed or removed parameters), newly required parameters the
    call does not pass, APIs that were removed or moved, calls with `*args`, and names that may be
    bound to something else. APIs that have their own rule (`fp4_quantize`, FI001) are left to it.
    With `--keywords all` every positional argument of an affected call is named.
    """

    code = "FI002"
    summary = "Any FlashInfer call whose positional arguments bind differently: name them (from the API data)"
    introduced_in = "*"
    fix_safety = FixSafety.SAFE
    triggers = ("flashinfer",)
    data_driven: ClassVar[bool] = True

    @classmethod
    def prepare(cls, options: RunOptions) -> None:
        from migrate_fi.api.store import available_releases
        from migrate_fi.versions import parse_version

        known = {parse_version(v) for v in available_releases()}
        for v in (options.from_version, options.to_version):
            if v not in known:
                raise CodemodSetupError(
                    f"{cls.code} needs FlashInfer's API data for {v}, which is not bundled"
                    " (see `migrate-fi signatures list`; `migrate-fi signatures build` adds a release)"
                )

    @classmethod
    def triggers_for(cls, options: RunOptions) -> tuple[str | tuple[str, ...], ...]:
        from migrate_fi.api.index import trigger_paths

        # A file must name every part of a changed API's public path (`flashinfer`, `jit`,
        # `load`), however it imports it. Files that reach FlashInfer only through the project's
        # own re-exports are found by the engine's re-export pass.
        paths = trigger_paths(str(options.from_version), str(options.to_version))
        return tuple(tuple(path.split(".")) for path in paths)

    def find(self, ctx: FileContext) -> None:
        from migrate_fi.api.differ import api_for, compare_callables, first_change
        from migrate_fi.registry import all_codemods

        old_v, new_v = str(ctx.options.from_version), str(ctx.options.to_version)
        old_api, new_api = api_for(old_v), api_for(new_v)
        handled = {old_api.key(p) for c in all_codemods() if c is not type(self) for p in c.handles}
        resolver = ctx.resolver
        self._imports(ctx, old_api, new_api, new_v)
        for call, scope in resolver.iter_calls():
            candidates = resolver.resolve(call.func, scope).candidates
            paths = sorted(
                {c.qualname for c in candidates if c.qualname and _is_flashinfer(c.qualname)}
            )
            if not paths:
                continue
            others = [c for c in candidates if not _is_flashinfer(c.qualname)]
            args = CallArgs.of(call, resolver, scope)
            for path in paths:
                key = old_api.key(path)
                if key is None or key in handled:
                    continue
                before = old_api.callable(path)
                if before is None:
                    continue  # not a callable FlashInfer knew on --from (a module, a constant...)
                name = _display(path)
                after = new_api.callable(path)
                if after is None:
                    if new_api.surely_missing(path):  # not merely left out of the data
                        ctx.report(
                            call, f"{name} no longer exists in FlashInfer {new_v}: migrate by hand"
                        )
                    continue
                d = compare_callables(before, after)
                n = len(args.positional)
                start = d.affected_from
                affected = start is not None and (n > start or bool(args.starred))
                if others or len(paths) > 1:
                    if affected:
                        what = ", ".join(c.describe() for c in candidates if c.qualname != path)
                        ctx.report(
                            call,
                            f"this {name} may also be {what}; its positional arguments would bind"
                            f" differently on {new_v} if it is FlashInfer's: left unchanged",
                        )
                    continue
                site = _Site(call, args, d, name, old_v, new_v)
                self._keywords(ctx, site)
                if not affected:
                    continue
                assert start is not None
                if args.starred:
                    ctx.report(
                        call,
                        f"{name} called with *args: whether an argument reaches position"
                        f" {start + 1} (which binds differently on {new_v}) cannot be known;"
                        " check it by hand",
                    )
                    continue
                self._positional(ctx, site, first_change(path, old_v, new_v) or new_v)

    def _imports(self, ctx: FileContext, old_api: Api, new_api: Api, new_v: str) -> None:
        """Imports of FlashInfer names or modules that the new release no longer has."""
        resolver = ctx.resolver
        for node in resolver.imports:
            paths: list[str] = []
            if isinstance(node, ast.ImportFrom):
                module = resolver.absolute_module(node.module, node.level)
                if module is not None:
                    paths = [f"{module}.{a.name}" for a in node.names if a.name != "*"]
            elif isinstance(node, ast.Import):
                paths = [a.name for a in node.names]
            for path in paths:
                if not _is_flashinfer(path):
                    continue
                existed = old_api.canonical(path) is not None or old_api.key(path) is not None
                if existed and new_api.canonical(path) is None and new_api.surely_missing(path):
                    ctx.report(
                        node,
                        f"{path} no longer exists in FlashInfer {new_v}: this import fails there",
                    )

    def _keywords(self, ctx: FileContext, site: _Site) -> None:
        """Keywords that no longer exist, and newly required parameters the call lacks."""
        call, args, d, name, new_v = site.call, site.args, site.diff, site.name, site.new_v
        for kw in sorted(args.keyword_names()):
            if kw in d.renamed:
                ctx.report(
                    call,
                    f"{name}: parameter {kw} is called {d.renamed[kw]} in FlashInfer {new_v}:"
                    " rename the keyword",
                )
            elif kw in d.removed:
                ctx.report(call, f"{name}: parameter {kw} no longer exists in FlashInfer {new_v}")
        if args.opaque_kwargs:
            return  # a `**x` we cannot read may pass anything
        n = len(args.positional)
        after_pos = d.new.positional
        for req in d.newly_required:
            index = next((i for i, p in enumerate(after_pos) if p.name == req), None)
            if req in args.keyword_names() or (index is not None and index < n):
                continue
            ctx.report(
                call, f"{name}: FlashInfer {new_v} requires parameter {req}, not passed here"
            )

    def _positional(self, ctx: FileContext, site: _Site, since: str) -> None:
        """Name the positional arguments from the first affected one, by their old names."""
        call, args, d, name, old_v = site.call, site.args, site.diff, site.name, site.old_v
        start = d.affected_from
        assert start is not None
        n = len(args.positional)
        old_pos = d.old.positional
        if n > len(old_pos):
            ctx.report(
                call,
                f"{name} called with {n} positional arguments; its {old_v} signature takes"
                f" {len(old_pos)}: left unchanged",
            )
            return

        def keyword_ok(i: int) -> bool:
            return old_pos[i].kind != "P" and d.new.accepts_keyword(old_pos[i].name)

        first = start
        if ctx.options.keyword_style == "all":  # as far back as keywords are accepted
            while first > 0 and keyword_ok(first - 1):
                first -= 1
        names = {i: old_pos[i].name for i in range(first, n)}
        missing = [old_pos[i].name for i in range(start, n) if not keyword_ok(i)]
        if missing:
            ctx.report(
                call,
                f"{name}: positional arguments from {start + 1} on bind differently since"
                f" {since}, and {', '.join(missing)} cannot be passed by keyword there:"
                " migrate by hand",
            )
            return
        clash = sorted(set(names.values()) & args.keyword_names())
        if clash:
            ctx.report(
                call,
                f"{name} gets {', '.join(clash)} both by position and by keyword: left unchanged",
            )
            return
        moved = ", ".join(f"{old_pos[i].name}=" for i in range(start, n))
        if d.misbinding_index is not None and d.misbinding_index == start:
            new_name = d.new.bound_name(start) or "nothing"
            why = (
                f"positional argument {start + 1} binds to {new_name} instead of"
                f" {old_pos[start].name} since {since}"
            )
        else:
            why = f"passing arguments from {start + 1} on positionally is deprecated since {since}"
        ctx.fix(call, f"{name}: {why}; pass {moved} by keyword", "Call", keywordize(names))
