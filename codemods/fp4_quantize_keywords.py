"""FI001: keep positional `fp4_quantize` calls binding as they did before FlashInfer 0.6.11."""

from __future__ import annotations

from migrate_fi.base.messages import Said, say
from migrate_fi.base.results import FixSafety
from migrate_fi.framework.rule import FileContext, Rule

from ._positional import Site, Wording, check_calls, ordinal

# Every public path of the function (all forms a project may import it by).
TARGETS = frozenset(
    {
        "flashinfer.fp4_quantize",
        "flashinfer.quantization.fp4_quantize",
        "flashinfer.quantization.fp4_quantization.fp4_quantize",
        "flashinfer.fp4_quantization.fp4_quantize",
    }
)


class _Fp4Wording(Wording):
    """FI001's own messages: the `fp4_quantize` story told in its terms."""

    def misbinding(self, site: Site, moved: str) -> Said:
        return say(
            "fp4_quantize with {n} positional arguments: since {since} the {nth} binds to"
            " `{inserted}`; pass {moved} by keyword",
            "`fp4_quantize` 有 {n} 个位置参数：自 {since} 起第 {nth} 个绑定到 `{inserted}`；"
            "请用关键字传入 `{moved}`",
            n=len(site.args.positional),
            since=site.since,
            nth=Said(ordinal(site.start + 1), str(site.start + 1)),  # (the 7th: 第 7 个)
            inserted=site.diff.new.bound_name(site.start),
            moved=moved,
        )

    def star_args(self, site: Site) -> Said:
        return say(
            "fp4_quantize called with *args: whether an argument reaches position {position}"
            " (`{inserted}` since {since}) cannot be known; check it by hand",
            "`fp4_quantize` 以 `*args` 调用：无法知道是否有参数到达第 {position} 个位置"
            "（自 {since} 起是 `{inserted}`）；请手动检查",
            position=site.start + 1,
            inserted=site.diff.new.bound_name(site.start),
            since=site.since,
        )

    def ambiguous(self, site: Site, others: str) -> Said:
        return say(
            "this `fp4_quantize` may also be bound to something else: {others}; its {n}"
            " positional arguments would bind differently since {since} if it is FlashInfer's:"
            " left unchanged",
            "这个 `fp4_quantize` 也可能绑定到别的东西：{others}；如果它是 FlashInfer 的，它的 {n}"
            " 个位置参数自 {since} 起会绑定到不同的参数：未修改",
            others=others,
            n=len(site.args.positional),
            since=site.since,
        )

    def too_many(self, site: Site, n: int) -> Said:
        return say(
            "fp4_quantize called with {n} positional arguments; the old signature takes at most"
            " {most}: left unchanged",
            "`fp4_quantize` 以 {n} 个位置参数调用；旧签名最多接受 {most} 个：未修改",
            n=n,
            most=len(site.diff.old.positional),
        )


class Fp4QuantizeKeywords(Rule):
    """`fp4_quantize`: positional arguments from the 7th on bind differently since 0.6.11.

    FlashInfer 0.6.11 inserted `is_global_scale_inversed=False` at positional index 6 of
    `flashinfer.fp4_quantize`, before `enable_pdl` and `backend`. An old call with 7 or more
    positional arguments still runs, with no error, but its 7th argument now sets
    `is_global_scale_inversed` and its 8th `enable_pdl`:

        fp4_quantize(x, gs, 16, False, True, False, True)
        # 0.6.10: enable_pdl=True    0.6.11 and later: is_global_scale_inversed=True

    The fix names those arguments by their OLD meaning, which binds the same on every release:

        fp4_quantize(x, gs, 16, False, True, False, enable_pdl=True)

    With `--keywords all` every positional argument of such a call is named (the style of the
    SGLang upgrade: `input=x, global_scale=gs, ...`). Calls with at most 6 positional arguments bind
    the same on both sides and are left alone.

    The callee is matched by qualified name (`flashinfer.fp4_quantize`,
    `flashinfer.quantization.fp4_quantize`, `flashinfer.quantization.fp4_quantization.fp4_quantize`,
    `flashinfer.fp4_quantization.fp4_quantize`), through any import form or alias. Look-alikes
    (`torch.ops.<lib>.fp4_quantize`, a project's own `fp4_quantize`) are never touched.

    The detection is the data-driven one of FI002 (the signatures of both releases, from the
    API data), worded for this function: when both rules run, FI001 owns `fp4_quantize`; when
    FI001 is not selected, FI002 reports the same sites under its own code.

    Reported, not rewritten: calls that pass `*args` (their positions cannot be known), names that
    may be bound to another implementation (try/except fallbacks), calls with more positional
    arguments than the old signature takes, and calls that also pass a colliding keyword.
    """

    code = "FI001"
    summary = "fp4_quantize: 7+ positional arguments bind differently since 0.6.11; name them"
    summary_zh = "fp4_quantize：自 0.6.11 起，7 个及以上位置参数的绑定方式改变；改为关键字参数"
    introduced_in = "0.6.11"
    fix_safety = FixSafety.SAFE
    # a call to FlashInfer's fp4_quantize names flashinfer somewhere in the file (an import), or
    # reaches it through a project re-export (the engine's re-export pass finds those files)
    triggers = (("flashinfer", "fp4_quantize"),)
    owns_apis = TARGETS
    concerns = TARGETS

    needs_api_data = True
    reaches_by_import = True

    def find(self, ctx: FileContext) -> None:
        from migrate_fi.api.differ import api_for

        old_api = api_for(str(ctx.options.from_version))
        owned = {old_api.key(p) for p in TARGETS} - {None}
        check_calls(ctx, owned.__contains__, _Fp4Wording())
