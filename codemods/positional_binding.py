"""FI002: every FlashInfer call whose positional arguments bind differently on the target release."""

from __future__ import annotations

from typing import ClassVar

from migrate_fi.base.results import FixSafety
from migrate_fi.framework.rule import FileContext, Rule, RunOptions

from ._api import paths_words
from ._positional import Wording, check_calls


class PositionalBinding(Rule):
    """Positional calls to any FlashInfer API whose parameters moved between `--from` and `--to`.

    Driven by the bundled API data of every release (`migrate-fi api-diff OLD NEW`), not by a
    hand-written table. For each call that resolves to a FlashInfer function, class constructor,
    or a method of an instance built in the same scope or assigned to `self.<attr>` in the same
    class (`w = flashinfer.BatchDecodeWithPagedKVCacheWrapper(...); w.plan(...)`), also through
    `functools.partial` (`q = partial(f, a); q(b, c)` calls `f(a, b, c)`: the call's own
    arguments are named; a partial that itself binds the affected positions is reported, since
    naming them there would shift the positional arguments of its calls):

    - If a parameter was inserted, removed or reordered before the positions the call fills, the
      call binds differently with no error. The fix names the arguments from the first affected
      position on by their OLD names, which binds as before on the new release:

          flashinfer.trtllm_fp4_block_scale_moe(a0, ..., a27, out)   # 29 positional, 0.6.10
          flashinfer.trtllm_fp4_block_scale_moe(a0, ..., a27, output=out)   # any release

    - Deprecation shims are read from the release's own code: from 0.6.15
      `BatchDecodeWithPagedKVCacheWrapper.plan(..., page_size, *deprecated_positional_args,
      **kwargs)` still maps old positional optionals by their old names, with a warning. Those
      arguments are named too (which silences the warning), and nothing is reported as missing.

    - Renamed keywords are renamed in the call (`sf_q=` -> `q_sf=` in 0.7.1). A rename is read
      from the two signatures: FlashInfer's own `@deprecated_aliases`, or a new parameter in
      the old one's place (between the same kept parameters) with the same kind and default
      and a name of the same words (torch's `dtype` is "data type": `q_data_type` -> `q_dtype`
      in 0.7.4): a safe fix. The same place, kind and default with words dropped or added
      (`comm_backend` -> `comm`, `in_kernel_fc2_reduce` -> `enable_in_kernel_fc2_reduce`), or
      the one closest name elsewhere in the signature, is a review fix (`--unsafe-fixes`,
      which merges it with the call's safe fix into one edit). A keyword the call passes
      whose parameter has a new name of its words in its place but another default
      (`max_seq_len_q=` -> `max_q_len=`, 1 -> None) is a review fix too: the call's own value
      never meets the default; never where one parameter became two (`in_dtype` ->
      `in_qk_dtype` and `in_pv_dtype`). A new parameter with another default or an unrelated
      name in the old one's place is no rename (`gated_act_type=0` ->
      `activation_type=ActivationType.Swiglu.value`): positional calls reaching it are
      reported, and the old keyword is said to be gone, naming what took its place (FI010 maps
      such values where a value-change file says how).

    - A removed parameter passed its old default (`bmm1_scale_log2_tensor=None` after 0.5.3,
      by keyword or by position) is dropped: the call behaved as if it had not passed it, and
      the later positional arguments are named so that nothing shifts. Only a literal equal to
      the old default, and only where no new parameter takes the removed one's place. So is a
      literal passed by keyword for a removed parameter whose value the old release's function
      never used (FlashInfer 0.5's `tile_tokens_dim` of the trtllm MoE functions, required
      there and only warned about); by position it is reported (code already written for a
      later release puts another parameter's value there).

    - An import of a name a release moved (the same code at another module:
      `flashinfer.mla.determine_mla_backend` is `flashinfer.utils`' in 0.7.0) is re-pointed
      there, a safe fix (a review fix where the code there changed). A statement whose other
      names are still where they were keeps them (its layout and comments too), and the moved
      ones are imported from where they went in a statement of their own right after it, one
      per module, in its block; one after a `;` or a compound statement's colon is reported.

    Reported, not rewritten: a call whose old positional name no longer exists on the new release,
    keywords that no longer exist (removed parameters passed another value: the report says the
    old default and what the call passes), newly required parameters the
    call does not pass (when a fixed call still needs one, the fix says so and the parameter is
    reported with it), APIs and imports that were removed (or moved under another name),
    `f.cache_clear()` (and
    `cache_info()`, `cache_parameters()`) of a function the target release no longer wraps in
    `functools.cache` (an AttributeError there), calls with `*args`, and names
    that may be bound to something else. A removed name is reported once, at its import, with the
    lines that use it (not once per use); an import inside `try: ... except ImportError:` is said
    to fall back silently, since it raises nothing anyone sees. An API that another rule selected for the same run owns
    (`fp4_quantize`, FI001) is left to that rule; when that rule is not selected, this one checks
    it too. With `--keywords all` every positional argument of an affected call is named.

    Left alone: a call that fails on `--from` (too many positional arguments, a parameter given
    by position and by keyword) and binds on `--to` is written for the target already; there is
    no old meaning to keep.
    """

    code = "FI002"
    summary = "Any FlashInfer call whose positional arguments bind differently: name them (from the API data)"
    summary_zh = "位置参数绑定方式改变的 FlashInfer 调用：改为关键字参数（依据 API 数据）"
    introduced_in = "*"
    fix_safety = FixSafety.SAFE
    triggers = ("flashinfer",)
    triggers_contain = "flashinfer"  # (every trigger is a FlashInfer path)
    data_driven: ClassVar[bool] = True

    needs_api_data = True
    reaches_by_import = True

    @classmethod
    def triggers_for(cls, options: RunOptions) -> tuple[str | tuple[str, ...], ...]:
        from migrate_fi.api.index import trigger_paths

        # A file must name every part of a changed API's public path (`flashinfer`, `jit`,
        # `load`), however it imports it. Files that reach FlashInfer only through the project's
        # own re-exports are found by the engine's re-export pass.
        paths = trigger_paths(str(options.from_version), str(options.to_version))
        return paths_words(paths)

    def find(self, ctx: FileContext) -> None:
        from migrate_fi.api.differ import api_for

        old_api = api_for(str(ctx.options.from_version))
        deferred = {old_api.key(p) for p in ctx.settings.deferred_apis} - {None}
        check_calls(ctx, lambda key: key not in deferred, Wording())
