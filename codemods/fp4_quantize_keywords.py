"""FI001: keep positional `fp4_quantize` calls binding as they did before FlashInfer 0.6.11."""

from __future__ import annotations

from migrate_fi.calls import keyword_indexes, keywordize
from migrate_fi.codemod import Codemod, FileContext
from migrate_fi.names import CallArgs
from migrate_fi.results import FixSafety

# Every public path of the function (flashinfer-facts.md section 1).
TARGETS = frozenset(
    {
        "flashinfer.fp4_quantize",
        "flashinfer.quantization.fp4_quantize",
        "flashinfer.quantization.fp4_quantization.fp4_quantize",
        "flashinfer.fp4_quantization.fp4_quantize",
    }
)
# The signature from 0.6.8.post1 to 0.6.10.
OLD_PARAMS = (
    "input",
    "global_scale",
    "sf_vec_size",
    "sf_use_ue8m0",
    "is_sf_swizzled_layout",
    "is_sf_8x4_layout",
    "enable_pdl",
    "backend",
)
# 0.6.11 inserted `is_global_scale_inversed` here, before `enable_pdl`.
FIRST_AFFECTED = 6
INSERTED = "is_global_scale_inversed"


class Fp4QuantizeKeywords(Codemod):
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

    Reported, not rewritten: calls that pass `*args` (their positions cannot be known), names that
    may be bound to another implementation (try/except fallbacks), calls with more positional
    arguments than the old signature takes, and calls that also pass a colliding keyword.
    """

    code = "FI001"
    summary = "fp4_quantize: 7+ positional arguments bind differently since 0.6.11; name them"
    introduced_in = "0.6.11"
    fix_safety = FixSafety.SAFE
    # a call to FlashInfer's fp4_quantize names flashinfer somewhere in the file (an import), or
    # reaches it through a project re-export (the engine's re-export pass finds those files)
    triggers = (("flashinfer", "fp4_quantize"),)
    handles = TARGETS

    def find(self, ctx: FileContext) -> None:
        resolver = ctx.resolver
        for call, scope in resolver.iter_calls():
            target, ambiguity = resolver.resolve(call.func, scope).match(TARGETS)
            if target is None and ambiguity is None:
                continue
            args = CallArgs.of(call, resolver, scope)
            n = len(args.positional)
            if args.starred:
                ctx.report(
                    call,
                    "fp4_quantize called with *args: whether an argument reaches position 7"
                    f" (`{INSERTED}` since 0.6.11) cannot be known; check it by hand",
                )
                continue
            if n <= FIRST_AFFECTED:
                continue  # binds the same on every release
            if ambiguity is not None:
                ctx.report(
                    call,
                    f"this `fp4_quantize` {ambiguity}; its {n} positional arguments would bind"
                    " differently since 0.6.11 if it is FlashInfer's: left unchanged",
                )
                continue
            if n > len(OLD_PARAMS):
                ctx.report(
                    call,
                    f"fp4_quantize called with {n} positional arguments; the old signature takes"
                    f" at most {len(OLD_PARAMS)}: left unchanged",
                )
                continue
            names = keyword_indexes(n, FIRST_AFFECTED, OLD_PARAMS, ctx.options.keyword_style)
            passed = args.keyword_names()
            clash = sorted(set(names.values()) & passed) + (
                [INSERTED] if INSERTED in passed else []
            )
            if clash:
                ctx.report(
                    call,
                    f"fp4_quantize gets {', '.join(clash)} both by position and by keyword:"
                    " left unchanged",
                )
                continue
            moved = ", ".join(f"{OLD_PARAMS[i]}=" for i in range(FIRST_AFFECTED, n))
            ctx.fix(
                call,
                f"fp4_quantize with {n} positional arguments: since 0.6.11 the 7th binds"
                f" to `{INSERTED}`; pass {moved} by keyword",
                "Call",
                keywordize(names),
            )
