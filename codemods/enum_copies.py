"""FI016: a project's own copy of a FlashInfer enum, out of step with the target's numbers."""

from __future__ import annotations

import ast
import os
import re
from functools import lru_cache
from typing import TYPE_CHECKING, ClassVar, NamedTuple

from migrate_fi.analysis import nodes
from migrate_fi.base.messages import Said, say
from migrate_fi.base.modules import display_path, in_flashinfer
from migrate_fi.base.results import FixSafety
from migrate_fi.editing.edits import replace_with
from migrate_fi.framework.rule import FileContext, Rule, RunOptions

from . import _callers
from ._imports import IMPORT_ERRORS, catches

if TYPE_CHECKING:
    from migrate_fi.api.differ import EnumChange

__all__ = ["EnumCopies"]

# the bases of an enum class (`class RoutingMethodType(IntEnum)`), by the name they end in
_ENUM_BASES = ("Enum", "Flag")
_MIN_SHARED = 3  # members a copy shares with FlashInfer's enum, by name, at the least
_USES_SHOWN = 3  # places where a member is read, named in the message


class _Member(NamedTuple):
    value: int
    number: ast.Constant | None  # the literal to renumber (None: written otherwise, `-1`)
    node: ast.stmt


class EnumCopies(Rule):
    """A project's own copy of a FlashInfer enum whose numbers the target release changed
    (review fix).

    Serving projects keep copies of FlashInfer's enums, to name routing methods or activations
    without importing FlashInfer ("Please keep this in sync with the counterpart defined in
    flashinfer", vLLM's and SGLang's `RoutingMethodType(IntEnum)`), and pass their numbers to
    FlashInfer's kernels as plain integers (`routing_method_type=layer.routing_method_type`).
    When a release renumbers the enum (FlashInfer 0.6.11 gave 8 to a new `Sigmoid` and moved
    `Unspecified` to 9; 0.6.18 moved it to 10), a copy that still says `Unspecified = (8,)`
    selects `Sigmoid` there, with no error: vLLM 0.24 renumbered its copy with that upgrade.

    A class of the project is a copy when it derives from an enum (`IntEnum`, `Enum`,
    `IntFlag`...), has the name of a FlashInfer enum that the range renumbered, shares at least
    three members with it by name, and gives most of those FlashInfer's numbers (of the release
    migrated from, or of the target); its file names FlashInfer (the copy's comment, an import).
    Each member whose number differs from the target's, where the range changed that member's
    number or what its number means, and that the project reads (`RoutingMethodType.Unspecified`
    in any of its files), is reported with the places that read it and what its number selects
    on the target; the fix gives it the target's number, a review fix, since a number the
    project also stores or compares elsewhere changes with it. Left alone: members the project
    never reads, members the copy has and FlashInfer does not (`DeepseekV4 = (100,)`), classes
    that share a FlashInfer enum's name but not its numbers, FlashInfer's own modules, and a
    copy defined only where importing FlashInfer's enum failed, in the handler of a `try` whose
    imports the target release all has (`except ImportError: class ActivationType(IntEnum)`):
    where the target is installed the import binds FlashInfer's own enum. Where a new number
    would give two members of the copy the same number, it is reported only.
    """

    code = "FI016"
    summary = (
        "A project's own copy of a FlashInfer enum renumbered by the range: renumber it (review)"
    )
    summary_zh = "项目自己复制的 FlashInfer 枚举在此范围内被重新编号：请同步编号（需审阅）"
    introduced_in = "*"
    data_driven: ClassVar[bool] = True
    fix_safety = FixSafety.REVIEW
    triggers = ("flashinfer",)
    triggers_contain = "flashinfer"
    needs_api_data = True
    # (a copy is made so as not to import FlashInfer: its file names it in a comment)
    reaches_by_import = False
    via_reexports = False
    searches_project = True  # (which members the project reads)

    @classmethod
    def triggers_for(cls, options: RunOptions) -> tuple[str | tuple[str, ...], ...]:
        names = _renumbered_names(str(options.from_version), str(options.to_version))
        return tuple(("flashinfer", name) for name in sorted(names))

    @classmethod
    def wants(cls, data: bytes, path: str, options: RunOptions) -> bool:
        names = _renumbered_names(str(options.from_version), str(options.to_version))
        return any(b"class " + name.encode() in data for name in names)

    def find(self, ctx: FileContext) -> None:
        from migrate_fi.api.differ import changed_enums

        if in_flashinfer(ctx.module_name):
            return  # (FlashInfer's own modules: they are the release)
        old_v, new_v = str(ctx.options.from_version), str(ctx.options.to_version)
        by_name: dict[str, list[EnumChange]] = {}
        for change in changed_enums(old_v, new_v).values():
            if change.new:  # (an enum gone altogether: its imports are FI002's)
                by_name.setdefault(change.name, []).append(change)
        assert ctx.tree is not None  # (a Python file)
        # (the tree alone: a copy's class is read as written, no name resolved)
        for cls in nodes.of_type(ctx.tree, ast.ClassDef):
            changes = by_name.get(cls.name)
            if changes and _derives_from_enum(cls):
                members = _members(cls)
                copied = _copied(members, changes)
                if copied is not None and not _fallback_unused(ctx.tree, cls, new_v):
                    _check(ctx, cls, members, copied)


@lru_cache(maxsize=16)
def _renumbered_names(from_version: str, to_version: str) -> frozenset[str]:
    """The names of the enums the range may renumber (the prefilter index's, a superset), or
    of those it does, from the releases' data."""
    from migrate_fi.api.index import enum_triggers

    indexed = enum_triggers(from_version, to_version)
    if indexed is not None:
        return frozenset(name for name, _ in indexed[0])
    from migrate_fi.api.differ import changed_enums

    return frozenset(c.name for c in changed_enums(from_version, to_version).values())


def _fallback_unused(tree: ast.Module, cls: ast.ClassDef, target: str) -> bool:
    """Whether ``cls`` is a stand-in that never runs where the ``target`` release is installed:
    defined in the handler of a `try` that catches a failed import, whose body only imports
    FlashInfer names (the enum's own among them, under the class's name) that the target has
    (SGLang's `try: from flashinfer.fused_moe.core import ActivationType` / `except
    ImportError: class ActivationType(IntEnum): ...`). There the import binds FlashInfer's enum,
    and the copy's numbers reach nothing."""
    from migrate_fi.api.differ import api_for

    for node in nodes.of_type(tree, ast.Try):
        for handler in node.handlers:
            if not any(stmt is cls for stmt in handler.body):
                continue
            if not catches(handler, IMPORT_ERRORS):
                return False
            api = api_for(target)
            binds = False
            for stmt in node.body:
                if not isinstance(stmt, ast.ImportFrom) or stmt.level or not stmt.module:
                    return False
                if not in_flashinfer(stmt.module):
                    return False
                for alias in stmt.names:
                    if alias.name == "*" or api.exists(f"{stmt.module}.{alias.name}") is not True:
                        return False
                    binds = binds or (alias.asname or alias.name) == cls.name
            return binds
    return False


def _derives_from_enum(cls: ast.ClassDef) -> bool:
    for base in cls.bases:
        name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
        if name.endswith(_ENUM_BASES):
            return True
    return False


def _members(cls: ast.ClassDef) -> dict[str, _Member]:
    """The members of an enum class body that are whole numbers written out: ``A = 8``,
    ``A = (8,)`` (an `IntEnum` takes ``int(*value)``), ``A = -1``."""
    out: dict[str, _Member] = {}
    for stmt in cls.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
            if isinstance(target, ast.Name):
                found = _number(stmt.value)
                if found is not None:
                    out[target.id] = _Member(found[0], found[1], stmt)
    return out


def _number(value: ast.expr) -> tuple[int, ast.Constant | None] | None:
    if isinstance(value, ast.Tuple) and len(value.elts) == 1:
        return _number(value.elts[0])
    if isinstance(value, ast.Constant) and type(value.value) is int:
        return value.value, value
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub):
        inner = _number(value.operand)
        return None if inner is None else (-inner[0], None)
    return None


def _copied(members: dict[str, _Member], changes: list[EnumChange]) -> EnumChange | None:
    """The FlashInfer enum of those named alike that ``members`` copy: the one sharing the most
    members by name, most of them with its numbers (of either release); None if none does."""
    best: tuple[int, EnumChange] | None = None
    for change in changes:
        shared = [m for m in members if m in change.old or m in change.new]
        agree = sum(1 for m in shared if members[m].value in (change.old.get(m), change.new.get(m)))
        mirrors = len(shared) >= _MIN_SHARED and agree * 2 > len(shared)
        if mirrors and (best is None or agree > best[0]):
            best = (agree, change)
    return None if best is None else best[1]


def _check(
    ctx: FileContext, cls: ast.ClassDef, members: dict[str, _Member], change: EnumChange
) -> None:
    old_v, new_v = str(ctx.options.from_version), str(ctx.options.to_version)
    stale = {}
    for name, member in members.items():
        now = change.new.get(name)
        if now is None or now == member.value:
            continue
        # (what the range changed: the member's number, or what its number selects)
        moved = change.old.get(name) != now
        means = change.member_of(member.value, change.old) != change.member_of(
            member.value, change.new
        )
        if moved or means:
            stale[name] = now
    if not stale:
        return
    numbers = {name: stale.get(name, m.value) for name, m in members.items()}
    for name, now in stale.items():
        uses = _reads(ctx, name)
        if uses is None:
            continue  # (never read: no number of it reaches FlashInfer)
        member = members[name]
        told = _told(cls.name, name, member.value, now, change, old_v, new_v, uses)
        clash = [m for m, n in numbers.items() if m != name and n == now]
        if member.number is None or clash:
            why = (
                say(
                    "{other} of the copy has that number",
                    "副本中的 `{other}` 已是这个编号",
                    other=clash[0],
                )
                if clash
                else say("its number is not written as one", "它的编号不是直接写出的数字")
            )
            ctx.report(
                member.node,
                say(
                    "{told}: number it as {new_v} does ({why})",
                    "{told}：请按 {new_v} 的编号修改（{why}）",
                    told=told,
                    new_v=new_v,
                    why=why,
                ),
            )
            continue
        ctx.fix(
            member.node,
            say(
                "{told}: number it {now}, as {new_v} does, with the pin that requires it",
                "{told}：像 {new_v} 那样编为 {now}，并同时更新要求该版本的依赖约束",
                told=told,
                now=now,
                new_v=new_v,
            ),
            ctx.replace(member.number, "Integer", replace_with(str(now))),
        )


def _told(
    enum: str,
    name: str,
    value: int,
    now: int,
    change: EnumChange,
    old_v: str,
    new_v: str,
    uses: Said,
) -> Said:
    other = change.member_of(value, change.new)
    selects = (
        say("{enum}.{other}", "`{enum}.{other}`", enum=enum, other=other)
        if other is not None
        else say("no member", "不对应任何成员")
    )
    before = change.old.get(name)
    already = (
        say(
            " (FlashInfer {old_v} numbered it {before} already)",
            "（FlashInfer {old_v} 就已把它编为 {before}）",
            old_v=old_v,
            before=before,
        )
        if before is not None and before != value
        else say("", "")
    )
    return say(
        "{enum}.{name} = {value} copies FlashInfer's {path}, which {new_v} numbers {now}{already};"
        " the number {value} selects {selects} there, with no error, wherever the project passes"
        " {name} to FlashInfer (it is read at {uses})",
        "`{enum}.{name} = {value}` 复制自 FlashInfer 的 `{path}`，而 {new_v} 把它编为 {now}{already}；"
        "在那里数字 {value} 选中的是{selects}，不会报错，凡是项目把 `{name}` 传给 FlashInfer 的地方都是如此"
        "（读取它的位置：{uses}）",
        enum=enum,
        name=name,
        value=value,
        path=change.path,
        new_v=new_v,
        now=now,
        already=already,
        selects=selects,
        uses=uses,
    )


def _reads(ctx: FileContext, member: str) -> Said | None:
    """Where the project reads ``member`` of an enum (``<anything>.<member>``), in words: a few
    places and how many more, in this file, else in the project's other Python files (searched
    only then); None where it reads it nowhere."""
    attribute = re.compile(rb"\.\s*" + re.escape(member.encode()) + rb"\b")
    shown: dict[str, list[int]] = {}
    count = 0

    def look(path: str, data: bytes) -> None:
        nonlocal count
        for match in attribute.finditer(data):
            count += 1
            if count <= _USES_SHOWN:
                line = data.count(b"\n", 0, match.start()) + 1
                shown.setdefault(display_path(path), []).append(line)

    look(ctx.path, ctx.text.encode())
    if not count:
        here = os.path.abspath(ctx.path)
        for path in _callers.files_mentioning(ctx.path, member.encode()):
            data = _callers.read_kept(path) if os.path.abspath(path) != here else None
            if data is not None:
                look(path, data)
    if not count:
        return None
    places = "; ".join(f"{p}:{', '.join(map(str, lines))}" for p, lines in shown.items())
    more = count - min(count, _USES_SHOWN)
    if not more:
        return say("{places}", "{places}", places=places)
    return say("{places} and {more} more", "{places}，另有 {more} 处", places=places, more=more)
