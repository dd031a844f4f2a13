"""FI010: keywords whose values a release re-coded (from the value-change files, one per release)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, ClassVar

from migrate_fi.api.paths import ApiPath
from migrate_fi.base.messages import Said, say
from migrate_fi.base.results import FixSafety
from migrate_fi.editing.edits import AddImport, Edit, TextEdit, change_keyword
from migrate_fi.framework.rule import FileContext, Rule, RuleSetupError, RunOptions

from ._api import flashinfer_calls, path_words
from ._imports import flashinfer_name
from ._layout import overflows, quote_like

if TYPE_CHECKING:
    from packaging.version import Version

    from migrate_fi.analysis.calls import CalleeCall
    from migrate_fi.api.differ import Api
    from migrate_fi.api.value_changes import ValueChange, ValueMap


class ValueMigrations(Rule):
    """Keywords a release renamed and whose values it re-coded, as written in the value-change
    files (`migrate_fi/data/values/<release>.toml`; how to add one: CONTRIBUTING.md).

    No signature shows these: 0.6.15 replaced `CuteDslMoEWrapper(activation="silu")` and
    `cute_dsl_fused_moe_nvfp4(activation=...)` with `activation_type=ActivationType.Swiglu` (an
    enum member for a string; SGLang migrated it by hand), and 0.6.3 replaced
    `trtllm_fp4_block_scale_moe(gated_act_type=0)` (GatedActType.SwiGlu) with
    `activation_type=ActivationType.Swiglu.value`, which is 3: an old number passed as it was
    selects another activation. The API data only says that one keyword went and another came;
    the file says how the values map, why, and where FlashInfer did it.

    A call (resolved as the other rules resolve calls: aliases, module attributes, partials)
    that passes the old keyword with a value the file maps, as a literal (`"silu"`, `0`) or as
    the old enum member (`GatedActType.SwiGlu`, `.value` or not), is rewritten: the new keyword
    with the new value (`activation_type=ActivationType.Swiglu`), and the import the value
    needs (`from flashinfer import ActivationType`) when the name is not bound to it already.
    A value read at run time (a variable, an attribute, a subscript, a call) gets a review fix
    that maps it where it is read, with the file's table (`activation_type={"silu":
    ActivationType.Swiglu, ...}[act]`: any other value raises KeyError, as the new release
    would reject it). Only reported: a literal the file does not map, a keyword passed through
    a `**` mapping, a call that passes both names, and a file where the name the new value needs
    is bound to something else. Left alone: calls that leave the keyword out (the new default is the same activation),
    and releases the target undid the change in. While this rule runs, FI002 leaves these
    keywords to it (it would say only that the old keyword no longer exists).
    """

    code = "FI010"
    summary = "Keywords whose values a release re-coded (activation='silu' -> activation_type=ActivationType.Swiglu): map them"
    summary_zh = "取值被某个版本重新编码的关键字参数（activation='silu' -> activation_type=ActivationType.Swiglu）：映射取值"
    introduced_in = "*"
    data_driven: ClassVar[bool] = True
    fix_safety = FixSafety.SAFE
    triggers = ("flashinfer",)
    triggers_contain = "flashinfer"  # (every trigger is a FlashInfer path)
    needs_api_data = True
    reaches_by_import = True

    @classmethod
    def prepare(cls, options: RunOptions) -> None:
        from migrate_fi.api.value_changes import ValueDataError, load_value_changes

        try:
            load_value_changes()
        except ValueDataError as exc:
            raise RuleSetupError(str(exc)) from None

    @classmethod
    def parameters_owned(
        cls, from_version: Version, to_version: Version
    ) -> frozenset[tuple[str, str]]:
        from migrate_fi.api.value_changes import ValueDataError, changes_in_range

        try:
            changes = changes_in_range(str(from_version), str(to_version))
        except ValueDataError:
            return frozenset()  # (`prepare` says what is wrong with the file)
        return frozenset((api, c.keyword) for c in changes for api in c.apis)

    @classmethod
    def references(cls, from_version: Version, to_version: Version) -> tuple[str, ...]:
        from migrate_fi.api.value_changes import ValueDataError, changes_in_range

        try:
            changes = changes_in_range(str(from_version), str(to_version))
        except ValueDataError:
            return ()
        return tuple(
            f"{c.release}: {c.keyword}= became {c.new_keyword}= ({c.reason})"
            + (f" {c.link}" if c.link else "")
            for c in changes
        )

    @classmethod
    def triggers_for(cls, options: RunOptions) -> tuple[str | tuple[str, ...], ...]:
        from migrate_fi.api.value_changes import changes_in_range

        changes = changes_in_range(str(options.from_version), str(options.to_version))
        return tuple(sorted({(*path_words(api), c.keyword) for c in changes for api in c.apis}))

    def find(self, ctx: FileContext) -> None:
        from migrate_fi.api.differ import api_for
        from migrate_fi.api.value_changes import changes_in_range

        old_v, new_v = str(ctx.options.from_version), str(ctx.options.to_version)
        old_api, new_api = api_for(old_v), api_for(new_v)
        by_key: dict[str, list[tuple[str, ValueChange]]] = {}
        for change in changes_in_range(old_v, new_v):
            for api in change.apis:
                key = old_api.key(api)
                after = new_api.callable(api)
                if key is None or after is None:
                    continue  # not there on --from, or gone on --to (FI002 says so)
                if after.accepts_keyword(change.keyword) or not after.accepts_keyword(
                    change.new_keyword
                ):
                    continue  # the target took the change back, or moved on again
                by_key.setdefault(key, []).append((api, change))
        if not by_key:
            return
        for view, key in flashinfer_calls(ctx, old_api):
            for api, change in by_key.get(key, ()):
                self._check(ctx, view, api, change, old_api)

    def _check(
        self, ctx: FileContext, view: CalleeCall, api: str, change: ValueChange, old_api: Api
    ) -> None:
        own = view.own
        name = ApiPath(api).display()
        old, new = change.keyword, change.new_keyword
        link = f"; {change.link}" if change.link else ""
        since = say(
            "since FlashInfer {release} ({reason}{link})",
            "（自 FlashInfer {release} 起：{reason}{link}）",
            release=change.release,
            reason=Said(change.reason, change.reason_zh or change.reason),
            link=link,
        )
        table = ", ".join(f"{m.old!r} -> {m.new}" for m in change.values)
        said = {"name": name, "old": old, "new": new, "since": since, "table": table}
        if old in own.unpacked and old not in own.keywords:
            ctx.report(
                view.node,
                say(
                    "{name}: {old}= (passed through a ** mapping) is {new}= {since}; map its value"
                    " there ({table})",
                    "{name}：`{old}=`（经 `**` 映射传入）改名为 `{new}=`{since}；请在那里映射它的值"
                    "（`{table}`）",
                    **said,
                ),
            )
            return
        keyword = own.keywords.get(old)
        if keyword is None:
            return
        if new in own.keyword_names():
            ctx.report(
                view.node,
                say(
                    "{name}: {old}= and {new}= both passed; {old}= is {new}= {since}: drop {old}=",
                    "{name}：`{old}=` 和 `{new}=` 都传了；`{old}=` 改名为 `{new}=`{since}：请去掉"
                    " `{old}=`",
                    **said,
                ),
            )
            return
        source = ast.get_source_segment(ctx.text, keyword.value) or ast.unparse(keyword.value)
        mapped = self._mapped(ctx, view, change, keyword.value, old_api)
        computed = mapped is None and _computed(keyword.value) and "\n" not in source
        if mapped is None and not computed:
            ctx.report(
                view.node,
                say(
                    "{name}: {old}= is {new}= {since}; {old}={source} is not in the map ({table}):"
                    " map it by hand",
                    "{name}：`{old}=` 改名为 `{new}=`{since}；`{old}={source}` 不在映射表"
                    "（`{table}`）中：请手动映射",
                    source=source,
                    **said,
                ),
            )
            return
        imports: tuple[AddImport, ...] = ()
        placed: tuple[Edit, ...] = ()  # (an import put where the file imports FlashInfer)
        clash: Said | None = None
        written: str | None = None
        if change.import_module and change.import_name:
            written, imports, clash, placed = flashinfer_name(
                ctx, view.scope, change.import_module, change.import_name, view.node
            )

        def spell(text: str) -> str:
            """``text`` with the enum named as this file names it."""
            head, dot, rest = text.partition(".")
            if written is not None and head == change.import_name and written != head:
                return f"{written}{dot}{rest}"
            return text

        if mapped is not None:
            value = spell(mapped.new)
            told = say(
                "{name}: {old}={source} is {new}={value} {since}",
                "{name}：`{old}={source}` 改为 `{new}={value}`{since}",
                source=source,
                value=value,
                **said,
            )
            safety = FixSafety.SAFE
        else:
            # a value read at run time: mapped where it is read, with the table (a value
            # outside it raises KeyError there, as the new release would reject it)
            entries = [f"{quote_like(m.old, ctx.text)}: {spell(m.new)}," for m in change.values]
            # (lines of a value inside brackets are indented from the statement's own indent:
            # one step for the argument, one more for the entries)
            step = "    "
            value = "{\n" + "".join(f"{step}    {e}\n" for e in entries) + f"{step}}}[{source}]"
            told = say(
                "{name}: {old}= is {new}= {since}; {source} is read at run time: mapped with the"
                " table ({table}; any other value raises KeyError): check that it only ever holds"
                " those",
                "{name}：`{old}=` 改名为 `{new}=`{since}；`{source}` 在运行时才读到：按映射表"
                "（`{table}`；其他值会抛出 `KeyError`）转换：请确认它只会取这些值",
                source=source,
                **said,
            )
            safety = FixSafety.REVIEW
        if clash:
            ctx.report(view.node, say("{told}; {clash}", "{told}；{clash}", told=told, clash=clash))
            return
        # (a call on one line that the longer keyword pushes past the line length is laid out
        # one argument per line, as the formatters would)
        growth = len(new) + len(value) - len(old) - len(source)
        one_line = view.node.lineno == view.node.end_lineno
        wrap = ("\n" in value and one_line) or (
            growth > 0 and overflows(ctx.lines, view.node, " " * growth, ctx.path)
        )
        ctx.fix(
            view.node,
            told,
            ctx.replace(
                view.node,
                "Call",
                change_keyword(old, new, value, one_per_line=wrap),
                None if wrap or "\n" in value else _as_text(ctx, keyword, new, value),
            ),
            *placed,
            imports=imports,
            safety=safety,
        )

    @staticmethod
    def _mapped(
        ctx: FileContext, view: CalleeCall, change: ValueChange, value: ast.expr, old_api: Api
    ) -> ValueMap | None:
        try:
            literal = ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            pass
        else:
            return change.mapped(literal)
        # the old enum member, with `.value` or without
        member = value
        if isinstance(member, ast.Attribute) and member.attr == "value":
            member = member.value
        if not isinstance(member, ast.Attribute | ast.Name):
            return None
        found = ctx.resolver.resolve(member, view.scope).qualnames
        if len(found) != 1:
            return None
        (path,) = found
        for entry in change.values:
            if entry.old_member is not None and _same_member(old_api, path, entry.old_member):
                return entry
        return None


def _computed(value: ast.expr) -> bool:
    """A value read at run time (a name, an attribute, a subscript, a call), not a literal."""
    return isinstance(value, (ast.Name, ast.Attribute, ast.Subscript, ast.Call))


def _same_member(api: Api, path: str, member: str) -> bool:
    """Is ``path`` (what the call's value resolves to) the enum member ``member`` of ``api``?"""
    owner, _, name = path.rpartition(".")
    want_owner, _, want_name = member.rpartition(".")
    if name != want_name:
        return False
    mine = api.canonical(owner)
    return mine is not None and mine == api.canonical(want_owner)


def _as_text(
    ctx: FileContext, keyword: ast.keyword, new: str, value: str
) -> tuple[TextEdit, ...] | None:
    """The keyword's name and its value replaced as text, when both are plain to say."""
    line, col = ctx.span(keyword)[:2]
    old = keyword.arg or ""
    if ctx.text_between((line, col), (line, col + len(old))) != old:
        return None
    span = ctx.span(keyword.value)
    if span[0] != span[2]:
        return None  # (a value over several lines: LibCST keeps its layout)
    return (TextEdit((line, col, line, col + len(old)), new), TextEdit(span, value))
