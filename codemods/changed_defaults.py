"""FI008: calls that leave out an argument whose default changed between the two releases."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, ClassVar

from migrate_fi.analysis.calls import Via
from migrate_fi.api.paths import ApiPath
from migrate_fi.base.messages import say
from migrate_fi.base.results import FixSafety
from migrate_fi.editing.edits import add_keyword
from migrate_fi.framework.rule import FileContext, Rule, RuleOption, RuleSetupError, RunOptions

from ._api import flashinfer_calls, paths_words
from ._layout import overflows, quote_like

if TYPE_CHECKING:
    from migrate_fi.analysis.calls import CalleeCall
    from migrate_fi.api.differ import Api, DefaultChange


class ChangedDefaults(Rule):
    """Calls that leave out an argument whose default is another value on the target release.

    Read from the release data of `--from` and `--to` (`migrate-fi api-diff OLD NEW --kind
    default`): a changed default changes what a call does with no error. Between 0.6.8.post1 and
    0.7.4, for example, `fp4_quantize`, `nvfp4_quantize`, `mxfp4_quantize` and `mxfp8_quantize`
    went from `backend="cuda"` to `backend="auto"`, `BatchDecodeWithPagedKVCacheWrapper.run`
    from `q_len_per_req=1` to `None`, and `BatchPrefillCuteDSLWrapper.plan` from `sm_scale=1.0`
    to `None` (which now means `1/sqrt(head_dim_qk)`).

    Each call of such an API (resolved as the other rules resolve calls: aliases, module
    attributes, instances, partials) that neither passes the argument by keyword nor reaches its
    position is fixed by passing the old default explicitly (`backend="cuda"`), which keeps what
    the call did; the message says what the new default is, so that a person can drop the
    argument to take it. With the option `keep = false` the calls are only reported. Only
    reported, whatever the option: an old default that is not a plain literal (a module
    constant, a truncated or computed value), a parameter that cannot be passed by keyword, and
    calls through a `functools.partial`. Left alone: calls whose `*args` or `**kwargs` may pass
    it, spellings of the same value (`1.0` and `1.`), parameters another rule handles
    (FI005: `CuteDslMoEWrapper(max_num_tokens=)`, ignored since 0.6.14), defaults whose change
    the release notes say does not change what the call does (0.7.4's `backend="auto"` of
    `fp4_quantize` runs the CUDA kernel unless `batch_invariant=True`), defaults the notes say
    now follow a mode the user turns on elsewhere, as the user would want (0.7.4's
    `use_fused_finalize=None` of `cutlass_fused_moe`: the fused finalize as before, the
    deterministic one under `torch.use_deterministic_algorithms(True)`; FI012 has the note), and
    parameters FlashInfer deprecated where they are
    (`BatchDecodeWithPagedKVCacheWrapper.run(q_len_per_req=)` belongs to `plan()` now): passing
    the old value there would change nothing a user needs, undo what the user asked for, or add
    a deprecated argument. The notes are data with their sources (`migrate_fi/data/notes/`); the
    release data says the same where the code does: a default that names a module constant is
    its value (`max_blocks=AR_MAX_BLOCKS` is `128`), a `None` default the function replaces by
    the old value before anything reads it (`if next_n is None: next_n = 1`) is the old value,
    and a parameter the function warns about (`if x is not None: warnings.warn(...,
    DeprecationWarning)`) is deprecated there.
    """

    code = "FI008"
    summary = "Calls that leave out an argument whose default changed: pass the old value (from the API data)"
    summary_zh = "省略了默认值已变更的参数的调用：显式传入旧值（依据 API 数据）"
    introduced_in = "*"
    data_driven: ClassVar[bool] = True
    fix_safety = FixSafety.SAFE
    triggers = ("flashinfer",)
    triggers_contain = "flashinfer"  # (every trigger is a FlashInfer path)
    options = (
        RuleOption(
            "keep",
            True,
            "Pass the old default explicitly, keeping what the call did (false: only report the"
            " calls).",
        ),
    )

    needs_api_data = True
    reaches_by_import = True

    @classmethod
    def triggers_for(cls, options: RunOptions) -> tuple[str | tuple[str, ...], ...]:
        from migrate_fi.api.index import default_trigger_paths

        # (from the prefilter index: the pair's defaults are compared only for what is called)
        paths = default_trigger_paths(str(options.from_version), str(options.to_version))
        return tuple(sorted(set(paths_words(paths))))

    @classmethod
    def prepare(cls, options: RunOptions) -> None:
        from migrate_fi.api.notes import readable_notes

        problem = readable_notes(options.from_version, options.to_version)
        if problem is not None:
            raise RuleSetupError(problem)

    def find(self, ctx: FileContext) -> None:
        from migrate_fi.api.differ import api_for, defaults_of

        old_v, new_v = str(ctx.options.from_version), str(ctx.options.to_version)
        old_api = api_for(old_v)
        keep = bool(ctx.option("keep"))
        owned: set[tuple[str | None, str]] | None = None
        for view, key in flashinfer_calls(ctx, old_api):
            changes = defaults_of(old_v, new_v, key)
            if not changes or view.via is Via.PARTIAL:
                continue  # (a partial is judged where it is called)
            if owned is None:
                deferred = ctx.settings.deferred_parameters
                owned = {(old_api.key(path), name) for path, name in deferred}
                owned |= _noted(old_v, new_v)
            for change in changes:
                if (key, change.name) in owned:  # (another rule's, or deprecated there)
                    continue
                if change.same:
                    continue  # (the new release maps its new default back to the old value)
                if _kept(old_v, new_v, key, (change.name, change.old, change.new)):
                    continue  # (the release notes: the new default does what the old did)
                if _warns(new_v, change.path, change.name):
                    continue  # (passing it on the new release warns: deprecated there)
                self._check(ctx, view, change, old_api, keep, new_v)

    def _check(
        self,
        ctx: FileContext,
        view: CalleeCall,
        change: DefaultChange,
        old_api: Api,
        keep: bool,
        new_v: str,
    ) -> None:
        args = view.args
        if args.passed(change.name) is not None or args.starred or args.opaque_kwargs:
            return
        before = old_api.callable(change.path)
        if before is None:
            return
        index = next((i for i, p in enumerate(before.positional) if p.name == change.name), None)
        if index is not None and index < len(args.positional):
            return  # passed by position
        if before.varargs is not None and len(args.positional) > len(before.positional):
            return  # positional arguments into *args, which a shim may map onto it
        name = ApiPath(change.path).display()
        old, new = change.old, change.new
        told = say(
            "{name}: this call leaves out {param}, whose default is {new} in FlashInfer {new_v}"
            " ({old} in {old_v}), so it now runs with {param}={new}",
            "{name}：此调用没有传 `{param}`，它在 FlashInfer {new_v} 中的默认值是 `{new}`"
            "（{old_v} 中是 `{old}`），所以现在以 `{param}={new}` 运行",
            name=name,
            param=change.name,
            new=new,
            old=old,
            new_v=new_v,
            old_v=ctx.options.from_version,
        )
        plain, literal = _literal(old)
        if not keep or not plain or not change.keyword or view.via is not Via.DIRECT:
            ctx.report(
                view.node,
                say(
                    "{told}: pass {param}={old} to keep what it did",
                    "{told}：传入 `{param}={old}` 以保持原来的行为",
                    told=told,
                    param=change.name,
                    old=old,
                ),
            )
            return
        value = quote_like(literal, ctx.text)
        wrap = overflows(ctx.lines, view.node, f", {change.name}={value}", ctx.path)
        ctx.fix(
            view.node,
            say(
                "{told}: pass {param}={value} to keep what it did (drop it to take the new default)",
                "{told}：传入 `{param}={value}` 以保持原来的行为（去掉它则采用新的默认值）",
                told=told,
                param=change.name,
                value=value,
            ),
            ctx.replace(view.node, "Call", add_keyword(change.name, value, one_per_line=wrap)),
        )


@lru_cache(maxsize=16)
def _noted(old_v: str, new_v: str) -> frozenset[tuple[str | None, str]]:
    """(definition key on ``old_v``, parameter) of the parameters FlashInfer deprecated in the
    range where they are (passing them would add a deprecated argument), and of those whose
    new default a behaviour note says a caller wants as it is (FI012's, where it reports that
    kind; `migrate_fi.api.notes`)."""
    from migrate_fi.api.differ import api_for
    from migrate_fi.api.notes import Behaviour, Deprecated, notes_in_range

    old_api = api_for(old_v)
    return frozenset(
        (old_api.key(n.api), n.parameter)
        for n in notes_in_range(old_v, new_v)
        if isinstance(n, (Deprecated, Behaviour)) and n.parameter is not None
    )


@lru_cache(maxsize=16)
def _same_notes(old_v: str, new_v: str) -> dict[tuple[str | None, str], set[tuple[str, str]]]:
    """(definition key on ``old_v``, parameter) -> the (old, new) default changes the release
    notes of the range say keep what a call does (`migrate_fi.api.notes.Same`)."""
    from migrate_fi.api.differ import api_for
    from migrate_fi.api.notes import Same, notes_in_range

    old_api = api_for(old_v)
    out: dict[tuple[str | None, str], set[tuple[str, str]]] = {}
    for n in notes_in_range(old_v, new_v):
        if isinstance(n, Same):
            out.setdefault((old_api.key(n.api), n.parameter), set()).add((n.old, n.new))
    return out


def _warns(new_v: str, path: str, name: str) -> bool:
    """Whether the new release warns that ``name`` is deprecated when a call of ``path``
    passes it (the release data: an ``if`` on it around ``warnings.warn(...,
    DeprecationWarning)``)."""
    from migrate_fi.api.differ import api_for

    after = api_for(new_v).callable(path)
    return after is not None and name in after.deprecated


def _kept(old_v: str, new_v: str, key: str, change: tuple[str, str, str]) -> bool:
    """Whether the change ``(parameter, old, new)`` of ``key``'s default over the range keeps
    what a call does: the releases of the range changed it step by step from ``old`` to
    ``new`` (one release, or several in turn), and the notes of each step say the new default
    does what the old one did."""
    name, old, new = change
    steps = _same_notes(old_v, new_v).get((key, name), set())
    reached, current = {old}, old
    while current != new:
        following = [b for a, b in steps if a == current and b not in reached]
        if len(following) != 1:
            return False  # (a step the notes do not vouch for, or no single way on)
        current = following[0]
        reached.add(current)
    return True


def _literal(text: str) -> tuple[bool, object]:
    """``(True, value)`` when the old default is a plain literal (strings, numbers, booleans,
    None, tuples of them); ``(False, None)`` otherwise (a name, a call, a value the data
    truncated)."""
    from migrate_fi.api.differ import literal_default

    if text.endswith("..."):
        return False, None
    found, value = literal_default(text)
    return found and _plain(value), value


def _plain(value: object) -> bool:
    if isinstance(value, tuple):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, (str, int, float, bool))
