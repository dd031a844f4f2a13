"""FI012: calls of FlashInfer APIs whose behaviour a release of the range changed, with no
signature change to show it; and deprecated arguments passed."""

from __future__ import annotations

from functools import lru_cache, partial
from typing import TYPE_CHECKING, ClassVar

from migrate_fi.api.paths import is_flashinfer
from migrate_fi.base.messages import Said, join, say
from migrate_fi.base.results import FixAvailability
from migrate_fi.framework.rule import FileContext, Rule, RuleOption, RuleSetupError, RunOptions

from ._api import api_calls, paths_words, public_paths_to

if TYPE_CHECKING:
    import ast
    from collections.abc import Callable

    from migrate_fi.analysis.calls import CallArgs, CalleeCall
    from migrate_fi.analysis.scopes import Scope
    from migrate_fi.api.differ import Api, CallSignature
    from migrate_fi.api.notes import Behaviour, Deprecated


class BehaviourNotes(Rule):
    """What a release changed in a call's behaviour that no signature shows, from the reviewed
    release notes (`migrate_fi/data/notes/<release>.toml`, each entry with its source): a GPU
    architecture no longer served (0.7.4's `fp4_quantize` raises "requires SM100 or newer" on
    Hopper), an input format checked or read differently (0.6.11's `global_scale` of
    `fp4_quantize`: one element per row where only the first was read), numerics, an error where
    there was a silent fallback.

    The first call of each such API in a file is reported with the note's words, its release
    and its source, for a person to judge against the project's GPUs and inputs (nothing is
    rewritten); by default for the kinds that break or misread a call wherever it runs (a GPU
    architecture dropped, an input format), the option `kinds` adds the others. A call that passes an argument FlashInfer deprecated in the
    range (`BatchDecodeWithPagedKVCacheWrapper.run(q_len_per_req=...)`, which belongs to
    `plan()` now) is reported at each call, with where the argument goes; arguments a release
    deprecated together, for one reason, in one finding (`bench_gpu_time`'s three `l2_flush`
    arguments). Where what FlashInfer deprecated is leaving an argument out (an implicit
    default that warns and will change: `gated_delta_rule_mtp`'s `disable_state_update` since
    0.6.7), the calls that leave it out are reported, not those that pass it; where it is
    passing arguments by position (`BatchMLAPagedAttentionWrapper.plan(qo_indptr, ...)` warns
    since 0.7.0), the calls that do. A deprecated argument passed by position counts as passed
    (at its place in the signature the call is written for). The deprecations of one call are
    one finding. A function, method or class that the target release deprecates as a whole
    (every call warns: the release data records a `warnings.warn(..., DeprecationWarning)` of
    its body itself, `cute_dsl_fused_moe_nvfp4` since 0.7.0, or a `@typing_extensions.deprecated`
    decorator, `trtllm_allreduce_fusion` since 0.6.0) is reported at each call, with the
    warning's words.

    A note tied to arguments (`when`) leaves out a call that certainly cannot pass them (a
    literal of another value, another member of the FlashInfer enum named); a method's note
    tied to how its instance was made (`when_built`, `backend='cudnn'`) reads the constructions
    in sight (a name given only constants counts as each of them), and for an instance made out
    of sight (a parameter) the constructions of that class in the same file, where there are
    any. A method named again in its class body (`begin_forward = plan`) is that method. A
    note tied to GPUs (`gpus`: 0.6.12's change on SM10x) leaves out a call the code reaches
    only on other GPUs, by the tests of the compute capability before it (an `if` around it, an
    `if ...: raise` or `return` before it, a test in its class's `__init__` that raises, where
    the file's calls of its private function or method run; read through locals, `self.`
    attributes and functions of the file: `self.use_pool = sm_major != 9`, `use_fi_prefill()`
    true only on SM10x), and a wrapper made with the note's arguments only on other GPUs
    (`backend = "cutlass"` under `if is_sm100_supported():`).

    Left alone: calls that may be something other than FlashInfer's (the other rules' policy),
    and behaviour another rule of the range handles with a fix or a finding of its own (FI003
    for `global_scale`, FI004 for the all-reduce workspace's group, FI005 for the CuTe-DSL MoE
    wrapper's CUDA graphs).
    """

    code = "FI012"
    summary = (
        "Calls of APIs whose behaviour a release changed without a signature change (release notes)"
    )
    summary_zh = "某个版本在签名不变的情况下改变了行为的 API 调用（依据发布说明）"
    introduced_in = "*"
    data_driven: ClassVar[bool] = True
    fix_availability = FixAvailability.NONE  # (a person judges each: nothing is rewritten)
    triggers = ("flashinfer",)
    triggers_contain = "flashinfer"  # (every trigger is a FlashInfer path)
    needs_api_data = True
    reaches_by_import = True
    # behaviour another rule reports with more to say, when it runs: (API, kind) -> its id
    _OWNED: ClassVar[dict[tuple[str, str], str]] = {
        ("flashinfer.fp4_quantize", "input-format"): "fp4_global_scale_shape",
        ("flashinfer.comm.create_allreduce_fusion_workspace", "other"): "allreduce_workspace_group",
        ("flashinfer.CuteDslMoEWrapper", "other"): "graph_capture_tests",
    }

    options = (
        RuleOption(
            "kinds",
            ("architecture", "input-format"),
            "The kinds of behaviour change reported (architecture, input-format, numerics, error,"
            " other, fix); the others still show in `usage`, the report and `verify`. Numerics"
            " and errors are often tied to arguments a call may not pass (a backend, a layout);"
            " a fix only makes calls work that failed before.",
        ),
    )

    @classmethod
    def prepare(cls, options: RunOptions) -> None:
        from migrate_fi.api.notes import KINDS, readable_notes

        problem = readable_notes(options.from_version, options.to_version)
        if problem is not None:
            raise RuleSetupError(problem)
        try:
            kinds = options.settings(cls.id).option("kinds")
        except KeyError:
            return
        unknown = sorted(set(kinds) - set(KINDS))
        if unknown:
            raise RuleSetupError(
                f"{cls.code}: kinds: {unknown[0]!r} is not one of {', '.join(KINDS)}"
            )

    @classmethod
    def triggers_for(cls, options: RunOptions) -> tuple[str | tuple[str, ...], ...]:
        from migrate_fi.api.index import deprecated_in_range
        from migrate_fi.api.notes import Behaviour

        try:
            kinds = set(options.settings(cls.id).option("kinds"))
        except KeyError:
            kinds = {"architecture", "input-format"}  # (the option's default)
        apis = {
            n.api
            for n in _notes(str(options.from_version), str(options.to_version))
            if not isinstance(n, Behaviour) or n.kind in kinds
        }
        # (every public path of each API: a file imports it through any of them,
        # `flashinfer.decode.trtllm_batch_decode_with_kv_cache_mla` for `flashinfer.mla.`'s)
        paths = {*public_paths_to(str(options.from_version), frozenset(apis))}
        paths |= deprecated_in_range(str(options.from_version), str(options.to_version))
        return tuple(sorted(set(paths_words(sorted(paths)))))

    def find(self, ctx: FileContext) -> None:
        from migrate_fi.api.differ import api_for
        from migrate_fi.api.notes import Deprecated

        old_api = api_for(str(ctx.options.from_version))
        by_key = _by_key(ctx.options, tuple(ctx.option("kinds")), self.id)
        warning = _warning(str(ctx.options.from_version), str(ctx.options.to_version))
        if not by_key and not warning:
            return
        told: set[tuple[str, str]] = set()

        def member(value: ast.expr, scope: Scope) -> str | None:
            """The FlashInfer enum member ``value`` certainly is (``SfLayout.layout_8x4``)."""
            found = ctx.resolver.resolve(value, scope).qualnames
            if len(found) != 1:
                return None
            (only,) = found
            return only if is_flashinfer(only) else None

        for call in api_calls(ctx, old_api, by_key.keys() | warning.keys()):
            if not call.certain:
                continue
            if call.key in warning:  # (every call of it warns on the target)
                ctx.report(call.view.node, _warns_always(call.path, *warning[call.key]))
            if call.key not in by_key:
                continue
            # (the deprecated arguments the call passes, by keyword or at their place in the
            # signature it is written for: `wrapper.plan(qo_indptr, ...)`; those it leaves out
            # where leaving them out is what warns; any argument by position where that is
            # what warns. Together, for one reason, they are one part of the call's finding:
            # `l2_flush=`, `l2_flush_size_mb=` and `l2_flush_device=`)
            args = call.view.args
            before = old_api.callable(call.path)
            passed: dict[tuple[str, str, str | None, bool, bool], list[Deprecated]] = {}
            for note in by_key[call.key]:
                if not isinstance(note, Deprecated):
                    continue
                if note.positional:
                    if not _by_position(note.parameter, args, before):
                        continue
                elif note.parameter is None:
                    continue
                elif note.omitted:
                    given = _given(note.parameter, args, before)
                    if given is not None or args.opaque_kwargs or args.starred:
                        continue  # (passed, or may be: a `*args`, a `**kwargs` not read)
                elif _given(note.parameter, args, before) is None:
                    continue
                key = (note.release, note.why, note.moved_to, note.omitted, note.positional)
                passed.setdefault(key, []).append(note)
            if passed:  # (one finding for the call: what each deprecation says, in turn)
                said = [_deprecated(together) for together in passed.values()]
                ctx.report(call.view.node, join(said, " Also: ", "另外："))
            for note in by_key[call.key]:
                if isinstance(note, Deprecated):
                    continue
                if (
                    (call.key, note.what) in told
                    or not _may_apply(note, call.view, old_api.callable(call.path), member)
                    or not _built_with(ctx, note, call.view, old_api)
                    or _kept_out_by_dtype(ctx, note, call.view, old_api.callable(call.path))
                    or _elsewhere(ctx, note, call.view.node)
                ):
                    continue  # (the first call of the API in the file says it)
                told.add((call.key, note.what))
                ctx.report(call.view.node, _changed(note))


def _elsewhere(ctx: FileContext, note: Behaviour, node: ast.AST) -> bool:
    """Whether the code reaches the call only on GPUs other than those the note's change
    concerns (`Behaviour.gpus`), by the tests of the compute capability made before it."""
    from migrate_fi.analysis.gpus import reached_on

    if note.gpus is None or ctx.tree is None:
        return False
    return not (reached_on(ctx.resolver, ctx.tree, node) & note.gpus)


def _deprecated(notes: list[Deprecated]) -> Said:
    """One finding for the arguments of one call deprecated by one release for one reason."""
    note = notes[0]
    where = (
        say(" Pass it to {to}.", "请改为传给 `{to}`。", to=_short(note.moved_to))
        if note.moved_to
        else say("", "")
    )
    sources = "; ".join(dict.fromkeys(n.source for n in notes))
    if note.positional:
        return say(
            "{api}: passing {what} by position is deprecated since FlashInfer {release}: {why}"
            " Source: {source}",
            "{api}：自 FlashInfer {release} 起，按位置传入{what}已弃用：{why}来源：`{source}`",
            api=_short(note.api),
            what=Said(
                "arguments" if note.parameter is None else f"{note.parameter}=",
                "参数" if note.parameter is None else f" `{note.parameter}=` ",
            ),
            release=note.release,
            why=_told(note.why, note.why_zh),
            source=sources,
        )
    assert note.parameter is not None  # (only a note of passing by position names none)
    if note.omitted:
        return say(
            "{api}: leaving {parameters} out is deprecated since FlashInfer {release}: {why}"
            " Source: {source}",
            "{api}：自 FlashInfer {release} 起，不传 {parameters} 已弃用：{why}来源：`{source}`",
            api=_short(note.api),
            parameters=Said(
                " and ".join(f"{n.parameter}=" for n in notes),
                "、".join(f"`{n.parameter}=`" for n in notes),
            ),
            release=note.release,
            why=_told(note.why, note.why_zh),
            source=sources,
        )
    if len(notes) == 1:
        return say(
            "{api}: {parameter}= is deprecated since FlashInfer {release}: {why}{where} Source:"
            " {source}",
            "{api}：`{parameter}=` 自 FlashInfer {release} 起已弃用：{why}{where}来源：`{source}`",
            api=_short(note.api),
            parameter=note.parameter,
            release=note.release,
            why=_told(note.why, note.why_zh),
            where=where,
            source=sources,
        )
    names = [f"{n.parameter}=" for n in notes]
    return say(
        "{api}: {parameters} are deprecated since FlashInfer {release}: {why}{where} Source:"
        " {source}",
        "{api}：{parameters} 自 FlashInfer {release} 起已弃用：{why}{where}来源：`{source}`",
        api=_short(note.api),
        parameters=Said(
            ", ".join(names[:-1]) + " and " + names[-1], "、".join(f"`{n}`" for n in names)
        ),
        release=note.release,
        why=_told(note.why, note.why_zh),
        where=where,
        source=sources,
    )


@lru_cache(maxsize=8)
def _warning(old_v: str, new_v: str) -> dict[str, tuple[str, str]]:
    """The callables of ``old_v`` that warn they are deprecated on every call on ``new_v``
    and did not before (the release data: `migrate_fi.api.extract.warned_always`), by
    definition key: the first release of the range that warns, and the target's message."""
    from migrate_fi.api.differ import api_for
    from migrate_fi.api.index import deprecated_in_range, listed_in

    old_api, new_api = api_for(old_v), api_for(new_v)
    out: dict[str, tuple[str, str]] = {}
    for path in sorted(deprecated_in_range(old_v, new_v)):
        key = old_api.key(path)
        after = new_api.callable(path)
        before = old_api.callable(path)
        if key is None or after is None or after.warns is None:
            continue  # (a release of the range that warned, and one after it that no longer)
        if before is not None and before.warns is not None:
            continue
        releases = listed_in("deprecations", path, old_v, new_v)
        out.setdefault(key, (releases[0] if releases else new_v, after.warns))
    return out


def _warns_always(path: str, release: str, message: str) -> Said:
    said = message.strip() or "no message"
    return say(
        "{api} is deprecated since FlashInfer {release}: every call warns (DeprecationWarning:"
        " {message}); move to what the warning names before a release removes it",
        "{api} 自 FlashInfer {release} 起已弃用：每次调用都会警告（`DeprecationWarning`：{message}）；"
        "请在某个版本删除它之前改用警告中给出的替代",
        api=_short(path),
        release=release,
        message=said,
    )


def _changed(note: Behaviour) -> Said:
    from migrate_fi.api.notes import kind_said

    return say(
        "{api}: FlashInfer {release} changed what it does ({kind}): {what} Source: {source}."
        " Check it against this project's GPUs and inputs, then mark the line"
        " `# migrate-fi: ignore[FI012]`",
        "{api}：FlashInfer {release} 改变了它的行为（{kind}）：{what}来源：`{source}`。"
        "请在本项目的 GPU 和输入上核对，然后给该行加上 `# migrate-fi: ignore[FI012]`",
        api=_short(note.api),
        release=note.release,
        kind=kind_said(note.kind),
        what=_told(note.what, note.what_zh),
        source=note.source,
    )


def _told(en: str, zh: str) -> Said:
    """A note's text as a sentence in both languages (its Chinese, where the notes give it;
    else a pointer to the source, which the message names)."""
    return Said(_sentence(en), _sentence_zh(zh) if zh else "具体变化见来源。")


@lru_cache(maxsize=8)
def _by_key(
    options: RunOptions, kinds: tuple[str, ...], rule_id: str
) -> dict[str, list[Behaviour | Deprecated]]:
    """The notes of the run's range this rule reports, by definition key on ``--from``
    (worked out once a run, not per file)."""
    from migrate_fi.api.differ import api_for
    from migrate_fi.api.notes import Behaviour, Deprecated

    old_v, new_v = str(options.from_version), str(options.to_version)
    old_api = api_for(old_v)
    # (a parameter another rule of the run handles: FI005 drops `max_num_tokens=`)
    deferred = {(old_api.key(p), n) for p, n in options.settings(rule_id).deferred_parameters}
    out: dict[str, list[Behaviour | Deprecated]] = {}
    for note in _notes(old_v, new_v):
        if _owned(note, options):
            continue
        if isinstance(note, Behaviour) and note.kind not in kinds:
            continue
        key = old_api.key(note.api)
        if key is None:
            continue
        if isinstance(note, Deprecated) and (key, note.parameter) in deferred:
            continue
        out.setdefault(key, []).append(note)
    return out


def _may_apply(
    note: Behaviour,
    view: CalleeCall,
    before: CallSignature | None,
    member: Callable[[ast.expr, Scope], str | None] | None = None,
) -> bool:
    """Whether the call may pass what the note's change is tied to (`Behaviour.when`): an
    argument passed at all, or with a value (by keyword, or at its place in ``before``, the
    signature the code is written for; one left out is its default there, where the condition
    names a value: `filter_apply_order='top_k_first'` is 0.7.0's default); unreadable
    arguments (``*args``, ``**kw``) may. A
    change of a parameter's default (`Behaviour.parameter`) never touches a call that passes
    it. ``member`` says which FlashInfer enum member an argument certainly is, for a
    condition on one (``sfLayout=SfLayout.layout_linear``)."""
    if note.parameter is not None and _given(note.parameter, view.args, before) is not None:
        return False  # (a change of the parameter's default: this call gives its own value)
    if not note.when:
        return True

    def is_member(value: ast.expr) -> str | None:
        return member(value, view.scope) if member is not None else None

    return _may_pass(note.when, view.args, before, defaults=True, member=is_member)


def _by_position(name: str | None, args: CallArgs, before: CallSignature | None) -> bool:
    """Whether a call with ``args`` certainly passes an argument by position: any (``name``
    None), or the one of the parameter ``name``, at its place in ``before`` (what a ``*args``
    holds, if anything, is not known)."""
    if name is None:
        return bool(args.positional)
    place = _place(name, before)
    return place is not None and place < len(args.positional)


def _place(name: str, before: CallSignature | None) -> int | None:
    """The index of the positional parameter ``name`` in ``before``; None."""
    names = [p.name for p in before.positional] if before is not None else []
    return names.index(name) if name in names else None


def _given(name: str, args: CallArgs, before: CallSignature | None) -> ast.expr | None:
    """What a call with ``args`` certainly passes for the parameter ``name``: by keyword, or at
    its place in ``before``; None where it is not seen passed."""
    passed = args.passed(name)
    place = _place(name, before) if passed is None else None
    if place is not None and place < len(args.positional):
        passed = args.positional[place]
    return passed


def _may_pass(
    conditions: tuple[str, ...],
    args: CallArgs,
    before: CallSignature | None,
    defaults: bool,
    member: Callable[[ast.expr], str | None] | None = None,
    literals: Callable[[ast.expr], list[ast.expr] | None] | None = None,
) -> bool:
    """Whether a call with ``args`` may meet one of ``conditions`` ("name", "name=literal",
    "name=Enum.member"); with ``defaults``, an argument left out is its default in ``before``.
    A value that is certainly another member of the same enum (``member`` reads which) does
    not meet a condition on a member; a name given only constants (``literals`` reads which)
    meets a condition where one of them does."""
    import ast

    for condition in conditions:
        name, _, literal = condition.partition("=")
        passed = _given(name, args, before)
        written = passed is not None  # (else its default, as the signature writes it)
        if passed is None:
            if args.starred or args.opaque_kwargs:
                return True  # (it may be in ``*args`` or ``**kw``)
            default = next(
                (p.default for p in (before.params if before else ()) if p.name == name), None
            )
            if not (defaults and literal and default is not None):
                continue
            try:
                passed = ast.parse(default, mode="eval").body
            except SyntaxError:
                return True
        if not literal:
            return True
        if _is_member_name(literal):
            if not _other_member(passed, literal, member if written else None):
                return True
            continue
        given = literals(passed) if literals is not None else None
        if given is not None:  # (a name given only constants: each of them)
            if any(
                g.value == ast.literal_eval(literal) for g in given if isinstance(g, ast.Constant)
            ):
                return True
            continue
        try:
            if ast.literal_eval(passed) == ast.literal_eval(literal):
                return True
        except ValueError:
            return True  # (a value read at run time: it may be that one)
    return False


def _is_member_name(text: str) -> bool:
    """``Enum.member``: a condition on an enum member, not a literal."""
    parts = text.split(".")
    return len(parts) >= 2 and all(p.isidentifier() for p in parts)


def _other_member(
    passed: ast.expr, wanted: str, member: Callable[[ast.expr], str | None] | None
) -> bool:
    """Whether ``passed`` is certainly another member of the enum of ``wanted``
    (``SfLayout.layout_8x4`` for ``SfLayout.layout_linear``): resolved to a FlashInfer enum of
    that name (through ``member``), or, a default written in a signature, spelled so."""
    import ast

    enum, _, name = wanted.rpartition(".")
    enum = enum.rpartition(".")[2]
    if member is not None:
        found = member(passed)
    else:  # (a default of the signature: its text)
        found = ast.unparse(passed) if isinstance(passed, ast.Attribute) else None
    if found is None:
        return False
    owner, _, other = found.rpartition(".")
    return owner.rpartition(".")[2] == enum and other != name


def _kept_out_by_dtype(
    ctx: FileContext, note: Behaviour, view: CalleeCall, before: CallSignature | None
) -> bool:
    """Whether an argument the note names in `Behaviour.dtypes` keeps the call out of the
    change: certainly a tensor of that dtype (``cu_seqlens`` made as int64), or not passed at
    all (what the change is about is the dtype of what the caller gives)."""
    args = view.args
    for name, dtype in note.dtypes:
        passed = _given(name, args, before)
        if passed is None and not (args.starred or args.opaque_kwargs):
            return True
        if passed is not None and _of_dtype(ctx, passed, view.scope, dtype):
            return True
    return False


# the names torch gives a dtype besides its own (`torch.long`), which are also the tensor
# methods that convert to it (`x.long()`)
_ALIASES = {"long": "int64", "int": "int32", "half": "float16", "float": "float32"}
_CONVERSIONS = {**_ALIASES, "bfloat16": "bfloat16"}


def _of_dtype(
    ctx: FileContext,
    expr: ast.expr,
    scope: Scope,
    dtype: str,
    depth: int = 0,
    reading: frozenset[str] = frozenset(),
) -> bool:
    """Whether ``expr`` is certainly a tensor of the torch dtype ``dtype``: a call with
    ``dtype=torch.<dtype>`` (``torch.tensor(..., dtype=torch.int64)``), ``.to(torch.<dtype>)``
    or ``.long()`` of anything, a local every assignment of which is one, or a call of a
    function of this file that returns one on every path."""
    import ast

    from migrate_fi.analysis.values import assigned_values

    if depth > 4:
        return False
    if isinstance(expr, ast.Name):
        if expr.id in reading:
            return True  # (`x = x.cpu()`: x's other assignments decide)
        values = assigned_values(ctx.resolver, expr.id, scope)
        inner = reading | {expr.id}
        return bool(values) and all(
            _of_dtype(ctx, v, s, dtype, depth + 1, inner) for v, s in values or ()
        )
    if not isinstance(expr, ast.Call):
        return False
    given = next((k.value for k in expr.keywords if k.arg == "dtype"), None)
    func = expr.func
    if isinstance(func, ast.Attribute):
        if func.attr in _CONVERSIONS and not expr.args and not expr.keywords:
            return _CONVERSIONS[func.attr] == dtype
        moves = func.attr == "to" and given is None and _only_a_device(expr)
        if moves or (func.attr in _SAME_DTYPE and not expr.args):
            return _of_dtype(ctx, func.value, scope, dtype, depth + 1, reading)  # (same dtype)
        if func.attr == "to" and given is None and expr.args:
            given = expr.args[0]
    if given is not None:
        return _names_dtype(ctx, given, scope, dtype)
    if isinstance(func, ast.Name):
        returned = _returns(ctx, func, scope)
        return bool(returned) and all(
            _of_dtype(ctx, value, inner, dtype, depth + 1) for value, inner in returned
        )
    return False


# tensor methods that give a tensor of the same dtype (`cu_seqlens.cpu()`)
_SAME_DTYPE = frozenset({"cpu", "cuda", "contiguous", "clone", "detach", "pin_memory"})


def _only_a_device(call: ast.Call) -> bool:
    """Whether ``x.to(...)`` is given a device only: ``.to(q.device)``, ``.to(device=d)``,
    ``.to("cuda")`` (a dtype, or a tensor whose dtype it takes, is anything else)."""
    import ast

    return (
        len(call.args) + len(call.keywords) == 1
        and all(k.arg == "device" for k in call.keywords)
        and all(
            (isinstance(a, ast.Attribute) and a.attr == "device")
            or (isinstance(a, ast.Constant) and isinstance(a.value, str))
            for a in call.args
        )
    )


def _names_dtype(ctx: FileContext, expr: ast.expr, scope: Scope, dtype: str) -> bool:
    """Whether ``expr`` is torch's ``dtype`` (``torch.int64``, ``torch.long`` for int64)."""
    import ast

    if not isinstance(expr, ast.Attribute):
        return False
    names = {dtype, *(alias for alias, d in _ALIASES.items() if d == dtype)}
    return expr.attr in names and ctx.resolver.resolve(expr.value, scope).qualnames == {"torch"}


def _returns(ctx: FileContext, func: ast.Name, scope: Scope) -> list[tuple[ast.expr, Scope]]:
    """What a def of this file, called by ``func``, returns on every path (its ``return``
    values, with the function's scope); empty where that cannot be read (a function decorated
    otherwise than to be compiled or cached, a generator, a bare ``return``, a name bound
    otherwise)."""
    import ast

    from ._values import bound_function, own_returns

    defined = bound_function(ctx.resolver, func.id, scope)
    if not isinstance(defined, ast.FunctionDef):
        return []
    inner = ctx.resolver.scope_of(defined)
    returns = own_returns(defined)
    if inner is None or returns is None or any(r.value is None for r in returns):
        return []
    return [(r.value, inner) for r in returns if r.value is not None]


def _built_with(ctx: FileContext, note: Behaviour, view: CalleeCall, old_api: Api) -> bool:
    """Whether the instance a method is called on may have been made with what the note's
    change is tied to (`Behaviour.when_built`: `BatchPrefillWithPagedKVCacheWrapper(...,
    backend="cudnn")`): every construction of it in sight is read (a local assigned
    `Wrapper(...)`, a `self.w = Wrapper(...)` of the class), an argument left out as its
    default; an instance made out of sight, or otherwise, may."""
    import ast

    from migrate_fi.analysis.calls import CallArgs
    from migrate_fi.api.paths import ApiPath

    if not note.when_built or not isinstance(view.node.func, ast.Attribute):
        return True
    cls = str(ApiPath(note.api).owner).removesuffix("()")
    init = old_api.callable(cls)
    target = old_api.canonical(cls)
    if target is None:
        return True

    def makes(call: ast.Call, scope: Scope) -> bool:
        found = ctx.resolver.resolve(call.func, scope).qualnames
        return {old_api.canonical(q) for q in found} == {target}

    made = _constructions(ctx, view.node.func.value, view.scope)
    if made is not None and not all(makes(call, scope) for call, scope in made):
        held = ctx.resolver.resolve(view.node.func.value, view.scope).candidates
        if not held or not all(
            c.qualname and old_api.canonical(c.qualname.removesuffix("()")) == target for c in held
        ):
            return True  # (made by something else: a factory, another class)
        # (certainly of the class, an isinstance test says so: only its own constructions)
        made = [(call, scope) for call, scope in made if makes(call, scope)] or None
    if made is None:
        # (made out of sight, a parameter say: as the file makes that class, where it does)
        made = [(call, scope) for call, scope in ctx.resolver.iter_calls() if makes(call, scope)]
        if not made:
            return True
    for call, scope in made:
        if _elsewhere(ctx, note, call):
            continue  # (made only on other GPUs than the change's)
        args = CallArgs.of(call, ctx.resolver, scope)
        literals = partial(_literals, ctx, scope, gpus=note.gpus)
        if _may_pass(note.when_built, args, init, defaults=True, literals=literals):
            return True
    return False


def _literals(
    ctx: FileContext,
    scope: Scope,
    value: ast.expr,
    depth: int = 0,
    gpus: frozenset[int] | None = None,
) -> list[ast.expr] | None:
    """The constants ``value`` may be where every value it is given is one: a local assigned
    only literals (`backend = "auto"`, then `backend = "fa2"` on some path, or
    `"trtllm-gen" if nvfp4 else "auto"`), a `self.<name>`
    the class assigns only literals, each of them read in turn where it is itself a name or an
    attribute (`self.backend = other.backend`, ``other`` a parameter of the class's
    `__init__`: what the file's constructions of the class pass for it, where no other file
    names the class), a test's parameter `@pytest.mark.parametrize` gives literals; None
    otherwise.
    With ``gpus`` (a note's), a constant given only on other GPUs (`backend = "cutlass"`
    under `if is_sm100_supported():`) is not one of them there."""
    import ast

    from migrate_fi.analysis.gpus import reached_on

    if depth > 4:
        return None
    values: list[tuple[ast.expr, Scope]] | None
    if isinstance(value, ast.IfExp):  # (`"trtllm-gen" if nvfp4 else "auto"`: either)
        values = [(value.body, scope), (value.orelse, scope)]
    else:
        values = _assigned(ctx, value, scope, keep_none=True)
    if values is None:
        values = _passed_in(ctx, value, scope)
    if values is None:
        values = _parametrized(ctx, value, scope)
    if not values:
        return None
    out: list[ast.expr] = []
    for given, where in values:
        if isinstance(given, ast.Constant):
            if gpus is None or ctx.tree is None or reached_on(ctx.resolver, ctx.tree, given) & gpus:
                out.append(given)
            continue
        inner = _literals(ctx, where, given, depth + 1, gpus)
        if inner is None:
            return None
        out.extend(inner)
    return out


def _passed_in(
    ctx: FileContext, expr: ast.expr, scope: Scope
) -> list[tuple[ast.expr, Scope]] | None:
    """For ``param`` or ``param.<attr>``, ``param`` a parameter of a function of the module or
    of a class's `__init__` that no other file of the project names: the argument each call of
    it in this file passes (``.<attr>`` of it), with the caller's scope; None where a call
    passes it out of sight (``*args``, a default) or the file calls it nowhere."""
    import ast

    attr, base = None, expr
    if isinstance(expr, ast.Attribute):
        attr, base = expr.attr, expr.value
    if not isinstance(base, ast.Name):
        return None
    found = ctx.resolver.lookup(base.id, scope)
    if found is None or len(found[1]) != 1:
        return None
    owner, (binding,) = found
    function = owner.node
    if (
        binding.what != "parameter"
        or binding.index is None
        or not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef)
    ):
        return None
    if owner.owner_class is not None and function.name == "__init__":
        callee, place, home = owner.owner_class.node, binding.index - 1, owner.owner_class.parent
    elif owner.owner_class is None and owner.parent is not None and owner.parent.kind == "module":
        callee, place, home = function, binding.index, owner.parent
    else:
        return None
    name = getattr(callee, "name", None)
    only_here = ctx.resolver.only_here  # (another file may call it with something else)
    if not isinstance(name, str) or only_here is None or not only_here(name):
        return None
    out: list[tuple[ast.expr, Scope]] = []
    for call, where in ctx.resolver.iter_calls():
        if not (isinstance(call.func, ast.Name) and call.func.id == name):
            continue
        named = ctx.resolver.lookup(call.func.id, where)
        if named is None or named[0] is not home:
            continue
        if any(isinstance(a, ast.Starred) for a in call.args) or any(
            k.arg is None for k in call.keywords
        ):
            return None
        given = next((k.value for k in call.keywords if k.arg == base.id), None)
        if given is None and 0 <= place < len(call.args):
            given = call.args[place]
        if given is None:  # (left out: the default, where the function has one)
            from ._values import parameter_default

            default = parameter_default(function, base.id)
            if default is None:
                return None
            out.append((default, owner.parent or where))
            continue
        if attr is not None:
            given = ast.copy_location(ast.Attribute(value=given, attr=attr, ctx=ast.Load()), given)
        out.append((given, where))
    return out or None


def _parametrized(
    ctx: FileContext, expr: ast.expr, scope: Scope
) -> list[tuple[ast.expr, Scope]] | None:
    """For ``name``, a parameter of a test function that
    ``@pytest.mark.parametrize("name", [...])`` (or ``"a, name"`` with tuples) gives its
    values: each value written there (``pytest.param(value, ...)``'s first), with the scope
    the decorator is evaluated in; None where it is not so given, is given through a fixture
    (``indirect``), or a value cannot be told apart (``*values``, a computed list)."""
    import ast

    if not isinstance(expr, ast.Name):
        return None
    found = ctx.resolver.lookup(expr.id, scope)
    if found is None or len(found[1]) != 1 or found[1][0].what != "parameter":
        return None
    owner = found[0]
    function = owner.node
    if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef) or owner.parent is None:
        return None
    where = owner.parent
    for decorator in function.decorator_list:
        if not isinstance(decorator, ast.Call) or len(decorator.args) < 2:
            continue
        if ctx.resolver.resolve(decorator.func, where).qualnames != {"pytest.mark.parametrize"}:
            continue
        if any(k.arg in ("indirect", None) for k in decorator.keywords):
            return None
        names, values = decorator.args[0], decorator.args[1]
        if isinstance(names, ast.Constant) and isinstance(names.value, str):
            listed = [n.strip() for n in names.value.split(",") if n.strip()]
        elif isinstance(names, ast.List | ast.Tuple) and all(
            isinstance(n, ast.Constant) and isinstance(n.value, str) for n in names.elts
        ):
            listed = [n.value for n in names.elts]  # type: ignore[attr-defined]
        else:
            return None
        if expr.id not in listed:
            continue
        if not isinstance(values, ast.List | ast.Tuple):
            return None
        place = listed.index(expr.id)
        out: list[tuple[ast.expr, Scope]] = []
        for element in values.elts:
            if (
                isinstance(element, ast.Call)
                and ctx.resolver.resolve(element.func, where).qualnames == {"pytest.param"}
                and element.args
            ):
                element = element.args[0] if len(listed) == 1 else ast.Tuple(elts=element.args)
            if len(listed) > 1:
                if not isinstance(element, ast.Tuple | ast.List) or len(element.elts) != len(
                    listed
                ):
                    return None
                element = element.elts[place]
            if isinstance(element, ast.Starred):
                return None
            out.append((element, where))
        return out or None
    return None


def _constructions(
    ctx: FileContext, receiver: ast.expr, scope: Scope
) -> list[tuple[ast.Call, Scope]] | None:
    """The calls that made ``receiver`` where every one is in sight: the values a local name
    is assigned, or those a class's methods assign to ``self.<name>``, or the receiver itself
    where it is a call; a call of a def of this file that returns only calls stands for them
    (`_ragged()`, a test helper that makes the wrapper); None otherwise."""
    import ast

    # (a `None` an attribute starts as is no instance a method is called on)
    if isinstance(receiver, ast.Call):
        values: list[tuple[ast.expr, Scope]] | None = [(receiver, scope)]
    else:
        values = _assigned(ctx, receiver, scope, keep_none=False)
    if not values:
        return None
    out: list[tuple[ast.Call, Scope]] = []
    for value, where in values:
        if not isinstance(value, ast.Call):
            return None
        if isinstance(value.func, ast.Name):
            made = _returns(ctx, value.func, where)
            if made and all(isinstance(m, ast.Call) for m, _ in made):
                out += [(m, w) for m, w in made if isinstance(m, ast.Call)]
                continue
        out.append((value, where))
    return out


def _assigned(
    ctx: FileContext, expr: ast.expr, scope: Scope, keep_none: bool
) -> list[tuple[ast.expr, Scope]] | None:
    """Every value given to ``expr`` with the scope it is evaluated in: a local name's
    assignments, or what a class's methods assign to ``self.<name>`` (its `None` ones too,
    with ``keep_none``); None where one of them cannot be read (a parameter, an annotation
    alone, anything else than a name or an attribute of ``self``)."""
    import ast

    from migrate_fi.analysis.values import assigned_values

    if isinstance(expr, ast.Name):
        return assigned_values(ctx.resolver, expr.id, scope)
    if not isinstance(expr, ast.Attribute):
        return None
    owner = ctx.resolver.self_class(expr, scope)
    if owner is None:
        return None
    bindings = [b for b in owner.attributes.get(expr.attr, []) if keep_none or b.what != "None"]
    if any(b.value is None or b.scope is None for b in bindings):
        return None
    return [(b.value, b.scope) for b in bindings if b.value is not None and b.scope is not None]


def _notes(old_v: str, new_v: str) -> list[Behaviour | Deprecated]:
    from migrate_fi.api.notes import Behaviour, Deprecated, notes_in_range

    return [n for n in notes_in_range(old_v, new_v) if isinstance(n, (Behaviour, Deprecated))]


def _owned(note: object, options: RunOptions) -> bool:
    """A behaviour another rule of the run reports with a finding of its own."""
    from migrate_fi.api.notes import Behaviour

    if not isinstance(note, Behaviour):
        return False
    owner = BehaviourNotes._OWNED.get((note.api, note.kind))
    return owner is not None and any(rule_id == owner for rule_id, _ in options.rules)


def _sentence(text: str) -> str:
    """``text`` as a sentence: its last stop kept or added."""
    text = text.strip()
    return text if text.endswith((".", "!", "?")) else text + "."


def _sentence_zh(text: str) -> str:
    text = text.strip()
    return text if text.endswith(("。", "！", "？")) else text + "。"


def _short(path: str | None) -> str:
    """``flashinfer.BatchDecodeWithPagedKVCacheWrapper().run`` as users write it."""
    if path is None:
        return ""
    from migrate_fi.api.paths import ApiPath

    return ApiPath(path).display()
