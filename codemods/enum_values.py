"""FI011: FlashInfer enums renumbered or with members gone: numbers passed for them, and uses."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, ClassVar

from migrate_fi.analysis import nodes
from migrate_fi.analysis.calls import Via
from migrate_fi.api.paths import ApiPath
from migrate_fi.base.messages import say
from migrate_fi.base.results import FixSafety
from migrate_fi.editing.edits import replace_with, set_argument
from migrate_fi.framework.rule import FileContext, Rule, RunOptions

from ._api import flashinfer_calls, paths_words
from ._imports import flashinfer_name
from ._layout import line_length

if TYPE_CHECKING:
    from migrate_fi.analysis.calls import CalleeCall
    from migrate_fi.api.differ import Api, EnumChange, EnumParameter


class EnumValues(Rule):
    """FlashInfer's enums change their numbers between releases: `RoutingMethodType.Unspecified`
    was 6, then 8 (0.6.8), 9 (0.6.11), 10 (0.6.18); `ActivationType.Identity` went from 7 to 8
    (0.6.13) and 9 (0.6.14). Code that passes the number (`activation_type=7  # Identity`, as
    serving projects do next to a comment) selects another member on the new release, with no
    error; code that names a member that is gone fails there. Read from the enum members and
    values of the two releases' data (`migrate-fi api-diff OLD NEW --kind enum-value`).

    - A number passed for a parameter that takes an enum's value, by keyword or by position, is
      replaced by the member it meant on the old release (`activation_type=ActivationType.
      Identity.value`), with the import the member needs when its name is not bound already:
      that keeps the meaning on both releases. A parameter takes an enum when its default names
      it (`activation_type=ActivationType.Swiglu.value`): a safe fix; when only its name is the
      enum's in snake case (`routing_method_type`, default 0, for `RoutingMethodType`): a review
      fix.
    - An enum made from a number (`ActivationType(7)`, through any name the module binds it
      to) is replaced by the member it made on the old release (`ActivationType.Identity`),
      written through the callee as the call writes it: a safe fix. A number whose member is
      gone is reported (a ValueError there).
    - A use of a member the new release no longer has, of an enum it still has (`RouteImpl.
      LDG_PLUS_STS` in 0.7.2.post1), is reported, every one. (An enum gone altogether is
      FI002's: its import is reported, with the lines that use it.)

    Left alone: members used by name (their number follows them), numbers that mean the same
    member on both releases, numbers that were no member, and values read from variables.
    Reported, not rewritten: a number whose member is gone on the new release, a module where
    the enum's name is bound to something else, and calls through a `functools.partial`.
    """

    code = "FI011"
    summary = "Numbers passed for a FlashInfer enum that was renumbered: name the member (from the API data)"
    summary_zh = "为已重新编号的 FlashInfer 枚举传入的数字：改为枚举成员名（依据 API 数据）"
    introduced_in = "*"
    data_driven: ClassVar[bool] = True
    fix_safety = FixSafety.SAFE
    triggers = ("flashinfer",)
    triggers_contain = "flashinfer"  # (every trigger is a FlashInfer path)
    needs_api_data = True
    reaches_by_import = True

    @classmethod
    def triggers_for(cls, options: RunOptions) -> tuple[str | tuple[str, ...], ...]:
        from migrate_fi.api.index import enum_triggers

        old_v, new_v = str(options.from_version), str(options.to_version)
        # (from the prefilter index, a superset: the enums are compared when a file passes)
        indexed = enum_triggers(old_v, new_v)
        if indexed is not None:
            gone, paths = indexed
            words = set(paths_words(paths))
            # (a use of a gone member names it; a constructor call, `ActivationType(7)`, the enum)
            words.update(("flashinfer", name) for name, _ in gone)
            return tuple(sorted(words))
        # (an index without this release's links: the releases compared, here)
        from migrate_fi.api.differ import changed_enums, enum_parameter_paths

        words = set(paths_words(enum_parameter_paths(old_v, new_v)))
        words.update(("flashinfer", change.name) for change in changed_enums(old_v, new_v).values())
        return tuple(sorted(words))

    def find(self, ctx: FileContext) -> None:
        from migrate_fi.api.differ import api_for, changed_enums, enum_parameters_of

        old_v, new_v = str(ctx.options.from_version), str(ctx.options.to_version)
        enums = changed_enums(old_v, new_v)
        if not enums:
            return
        old_api = api_for(old_v)
        self._gone_members(ctx, enums, old_api)
        self._constructed(ctx, enums, old_api)
        for view, key in flashinfer_calls(ctx, old_api):
            for parameter in enum_parameters_of(old_v, new_v, key):
                self._check(ctx, view, parameter, enums[parameter.enum], key)

    @staticmethod
    def _gone_members(ctx: FileContext, enums: dict[str, EnumChange], old_api: Api) -> None:
        # (an enum gone altogether is FI002's: the name no longer exists, said at its import)
        gone = {
            (key, member)
            for key, change in enums.items()
            if change.new
            for member in change.old
            if member not in change.new
        }
        if not gone:
            return
        names = {member for _, member in gone}
        resolver = ctx.resolver
        for node in nodes.of_type(resolver.tree, ast.Attribute):
            if node.attr not in names or not isinstance(node.ctx, ast.Load):
                continue
            owner = resolver.resolve(node.value, resolver.scope_at(node)).qualnames
            if len(owner) != 1:
                continue
            key = old_api.canonical(next(iter(owner)))
            if key is not None and (key, node.attr) in gone:
                change = enums[key]
                ctx.report(
                    node,
                    say(
                        "{enum}.{member} no longer exists in FlashInfer {new_v} (an AttributeError"
                        " there); its members there: {members}",
                        "`{enum}.{member}` 在 FlashInfer {new_v} 中已不存在（那里会抛出"
                        " `AttributeError`）；那里的成员：{members}",
                        enum=change.name,
                        member=node.attr,
                        new_v=ctx.options.to_version,
                        members=", ".join(sorted(change.new)),
                    ),
                )

    @staticmethod
    def _constructed(ctx: FileContext, enums: dict[str, EnumChange], old_api: Api) -> None:
        """``ActivationType(7)``: the enum made from a number, which names the member that has
        that number on the release it runs on. Replaced by the member it meant on the old one
        (``ActivationType.Identity``), written through the callee as the call writes it."""
        names = {change.name for change in enums.values()}
        resolver = ctx.resolver
        names |= {  # (`from flashinfer.fused_moe import ActivationType as Act`)
            alias.asname
            for statement in resolver.imports
            if isinstance(statement, ast.ImportFrom)
            for alias in statement.names
            if alias.asname and alias.name in names
        }
        if not any(f"{name}(" in ctx.text for name in names):
            return  # (no call of one in the text: most files that name an enum use members)
        old_v, new_v = ctx.options.from_version, ctx.options.to_version
        for node, _ in resolver.iter_calls():  # (every call, as the one pass collected them)
            func = node.func
            spelled = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if spelled not in names or node.keywords or len(node.args) != 1:
                continue
            (value,) = node.args
            number = _int_literal(value)
            if number is None:
                continue
            found = resolver.resolve(func, resolver.scope_at(node))
            if len(found.candidates) != 1 or found.candidates[0].qualname is None:
                continue  # (bound to something else too, or unknown: another library's enum)
            key = old_api.canonical(found.candidates[0].qualname)
            change = enums.get(key) if key is not None else None
            if change is None:
                continue
            meant = _renumbered(change, number)
            if meant is None:
                continue  # no member (a ValueError on both), or the same member on both
            member, now = meant
            means = (
                say("{enum}.{now}", "`{enum}.{now}`", enum=change.name, now=now)
                if now
                else say("no member (a ValueError)", "没有对应成员（抛出 `ValueError`）")
            )
            told = say(
                "{enum}({number}) is {enum}.{member} on FlashInfer {old_v} but {means} on {new_v}",
                "`{enum}({number})` 在 FlashInfer {old_v} 上是 `{enum}.{member}`，在 {new_v} 上却是"
                "{means}",
                enum=change.name,
                number=number,
                member=member,
                old_v=old_v,
                means=means,
                new_v=new_v,
            )
            if member not in change.new:
                ctx.report(
                    node,
                    say(
                        "{told} ({member} is gone there): migrate by hand",
                        "{told}（那里已没有 `{member}`）：请手动迁移",
                        told=told,
                        member=member,
                    ),
                )
                continue
            told += say(
                " ({enum} was renumbered: {member} is {number} there)",
                "（`{enum}` 重新编号了：那里 `{member}` 是 {number}）",
                enum=change.name,
                member=member,
                number=change.new[member],
            )
            written = f"{ctx.text_between(ctx.span(func)[:2], ctx.span(func)[2:])}.{member}"
            if "\n" in written or "#" in written:
                ctx.report(
                    node,
                    say(
                        "{told}: write {enum}.{member}",
                        "{told}：请写成 `{enum}.{member}`",
                        told=told,
                        enum=change.name,
                        member=member,
                    ),
                )
                continue
            ctx.fix(
                node,
                say(
                    "{told}: write {written}, which means the same on both",
                    "{told}：写成 `{written}`，在两个版本上含义相同",
                    told=told,
                    written=written,
                ),
                ctx.replace(node, "Call", replace_with(written)),
            )

    def _check(
        self,
        ctx: FileContext,
        view: CalleeCall,
        parameter: EnumParameter,
        change: EnumChange,
        key: str,
    ) -> None:
        args = view.own
        value = args.keywords[parameter.name].value if parameter.name in args.keywords else None
        if value is None and parameter.index is not None and not args.starred:
            index = view.node_index(parameter.index)
            if index is not None and index < len(view.node.args):
                value = view.node.args[index]
        number = _int_literal(value)
        meant = None if number is None else _renumbered(change, number)
        if meant is None or value is None or number is None:
            return  # not a number, no member, or the same member on both releases
        member, now = meant
        old_v, new_v = ctx.options.from_version, ctx.options.to_version
        name = ApiPath(key).display()
        means = (
            say("{enum}.{now}", "`{enum}.{now}`", enum=change.name, now=now)
            if now
            else say("no member", "没有对应成员")
        )
        said = {
            "name": name,
            "parameter": parameter.name,
            "number": number,
            "enum": change.name,
            "member": member,
            "old_v": old_v,
            "means": means,
            "new_v": new_v,
        }
        if member not in change.new:
            ctx.report(
                value,
                say(
                    "{name}: {parameter}={number} is {enum}.{member} on FlashInfer {old_v} but"
                    " {means} on {new_v} ({enum} was renumbered; {member} is gone there): migrate"
                    " by hand",
                    "{name}：`{parameter}={number}` 在 FlashInfer {old_v} 上是 `{enum}.{member}`，"
                    "在 {new_v} 上却是{means}（`{enum}` 重新编号了；那里已没有 `{member}`）："
                    "请手动迁移",
                    **said,
                ),
            )
            return
        told = say(
            "{name}: {parameter}={number} is {enum}.{member} on FlashInfer {old_v} but {means} on"
            " {new_v} ({enum} was renumbered: {member} is {now_number} there)",
            "{name}：`{parameter}={number}` 在 FlashInfer {old_v} 上是 `{enum}.{member}`，在"
            " {new_v} 上却是{means}（`{enum}` 重新编号了：那里 `{member}` 是 {now_number}）",
            now_number=change.new[member],
            **said,
        )
        module = change.path.rsplit(".", 1)[0]
        spelled, imports, clash, placed = flashinfer_name(
            ctx, view.scope, module, change.name, view.node
        )
        written = f"{spelled}.{member}" + (".value" if parameter.value else "")
        if clash or view.via is not Via.DIRECT:
            why = clash or say(
                "a partial: pass it where the partial is made and called",
                "这是一个 partial：请在创建和调用 partial 的地方传入它",
            )
            ctx.report(
                value,
                say(
                    "{told}; pass {written}; {why}",
                    "{told}；请传入 `{written}`；{why}",
                    told=told,
                    written=written,
                    why=why,
                ),
            )
            return
        # a line the member pushes past the line length: the call one argument per line
        growth = len(written) - len(str(number))
        line = ctx.lines[value.lineno - 1].rstrip("\r\n") if value.lineno <= len(ctx.lines) else ""
        if len(line) + growth > line_length(ctx.path):
            keyword = parameter.name if parameter.name in view.own.keywords else None
            position = None if keyword else view.node.args.index(value)
            edit = ctx.replace(view.node, "Call", set_argument(position, keyword, written))
        else:
            edit = ctx.replace(value, "Integer", replace_with(written))
        ctx.fix(
            value,
            say(
                "{told}: pass {written}, which means the same on both",
                "{told}：传入 `{written}`，在两个版本上含义相同",
                told=told,
                written=written,
            ),
            edit,
            *placed,
            imports=imports,
            safety=FixSafety.SAFE if parameter.by_default else FixSafety.REVIEW,
        )


def _int_literal(value: ast.expr | None) -> int | None:
    """The number a literal integer argument writes (not a bool); None for anything else."""
    if (
        isinstance(value, ast.Constant)
        and isinstance(value.value, int)
        and not isinstance(value.value, bool)
    ):
        return value.value
    return None


def _renumbered(change: EnumChange, number: int) -> tuple[str, str | None] | None:
    """The member ``number`` named on the old release and the one it names on the new (None:
    none), where they differ; None when it named no member or names the same one."""
    member = change.member_of(number, change.old)
    if member is None or change.new.get(member) == number:
        return None
    return member, change.member_of(number, change.new)
