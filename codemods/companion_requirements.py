"""FI007: the project's pins of what the target FlashInfer requires must allow what it requires."""

from __future__ import annotations

import os
import re
from functools import lru_cache
from typing import TYPE_CHECKING, ClassVar

from packaging.version import InvalidVersion, Version

from migrate_fi.api.releases import requirements_of
from migrate_fi.base import depends, patterns
from migrate_fi.base.messages import Said, say
from migrate_fi.base.results import FixSafety
from migrate_fi.framework.rule import FileContext, Rule, RuleOption, RunOptions
from migrate_fi.project.current import pin_files, project_root
from migrate_fi.project.ownership import toml_places
from migrate_fi.project.pins import (
    DEPENDENCY_FILE_PATTERNS,
    Kind,
    VersionRef,
    canonical_name,
    may_hold_versions,
    scan,
)

from ._engines import held_by_engine

if TYPE_CHECKING:  # (imported where requirements are read: they cost start-up)
    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet


@lru_cache(maxsize=32)  # asked of every file the prefilter passes: parsed once per run
def _required(target: str, extras: frozenset[str] | None = frozenset()) -> dict[str, SpecifierSet]:
    """What the target release requires, with a version specifier: name -> specifier. With the
    requirements of the project's ``extras`` of flashinfer-python (``[cu13]``: a stricter
    ``nvidia-cutlass-dsl[cu13]>=4.7.0a0``) added to the others; ``None``: of every extra (the
    names a file must mention to be read)."""
    from packaging.requirements import InvalidRequirement, Requirement

    out: dict[str, SpecifierSet] = {}
    for line in requirements_of(target):
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if not req.specifier:
            continue
        if req.marker and "extra" in str(req.marker):
            wanted = extras is None or any(_evaluates(req, extra) for extra in (extras or ()))
            if not wanted:
                continue
        name = canonical_name(req.name)
        found = out.get(name)
        out[name] = req.specifier if found is None else found & req.specifier
    return out


_NAME = patterns.compile(r"\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(\[[^\]]*\])?\s*(.?)")


@lru_cache(maxsize=32)
def _required_names(target: str) -> frozenset[str]:
    """The names of `_required` of every extra, without parsing each requirement (importing
    `packaging.requirements` costs a run's start 12 ms, before any file can be read): a name
    is kept when its requirement has a version operator before its marker (a `name @ url` has
    none). Never fewer names than `_required` (what the prefilter looks for)."""
    out = set()
    for line in requirements_of(target):
        m = _NAME.match(line)
        if m is None or m.group(3) == "@":
            continue
        if any(op in line.split(";", 1)[0][m.end(1) :] for op in "<>=!~"):
            out.add(canonical_name(m.group(1)))
    return frozenset(out)


def _specifier(text: str) -> SpecifierSet:
    from packaging.specifiers import SpecifierSet

    return SpecifierSet(text)


def _evaluates(req: Requirement, extra: str) -> bool:
    assert req.marker is not None
    try:
        return bool(req.marker.evaluate({"extra": extra}))
    except Exception:  # (an odd marker: not one of this extra's requirements)
        return False


_EXTRAS = patterns.compile(r"flashinfer[-_.]python\s*\[([^\]]*)\]", re.IGNORECASE)


def _project_extras(text: str) -> frozenset[str]:
    """The extras of flashinfer-python the file installs (``flashinfer-python[cu13]==...``)."""
    return frozenset(
        e.strip().lower()
        for m in _EXTRAS.finditer(text)
        for e in m.group(1).split(",")
        if e.strip()
    )


def _lowest(spec: SpecifierSet) -> Version | None:
    """The lowest version ``spec`` names as its minimum (``>=X``, ``==X``, ``~=X``), if it allows it."""
    bounds = []
    for s in spec:
        if s.operator in (">=", "==", "~=", "==="):
            try:
                bounds.append(Version(s.version))
            except InvalidVersion:
                return None
    if not bounds:
        return None
    low = max(bounds)
    return low if spec.contains(low, prereleases=True) else None


def _published_floor(
    name: str, spec: SpecifierSet, group: list[VersionRef], ref: VersionRef, lowest: Version
) -> Version | Said:
    """The lowest final release of ``name`` the package index serves (the bundled index data,
    or what `signatures update` read) that ``spec`` accepts and the requirement's other clauses
    (``group`` but ``ref``) allow; else why the pin is not moved."""
    from migrate_fi.api.releases import index_versions

    versions, read = index_versions(name)
    if not versions:
        return say(
            "move the pin to {lowest} or a later release (not checked against the package index:"
            " no data for {name}; `migrate-fi signatures update` reads it)",
            "请把版本约束改到 {lowest} 或更新的版本（未对照包索引核对：没有 `{name}` 的数据；"
            "`migrate-fi signatures update` 会读取它）",
            lowest=lowest,
            name=name,
        )
    others = _specifier(
        ",".join(f"{r.operator}{r.version}" for r in group if r is not ref and r.operator)
    )
    fitting = []
    for text in versions:
        try:
            v = Version(text)
        except InvalidVersion:
            continue
        if not v.is_prerelease and spec.contains(v) and others.contains(v, prereleases=True):
            fitting.append(v)
    if not fitting:
        bounds = (
            say(" and its other bounds ({others})", "以及它的其他约束（`{others}`）", others=others)
            if str(others)
            else say("", "")
        )
        return say(
            "no release on the package index (read {read}) fits both that{bounds}: change the"
            " pin by hand",
            "包索引上（读取于 {read}）没有同时满足这一要求{bounds}的版本：请手动修改版本约束",
            read=read,
            bounds=bounds,
        )
    return min(fitting)


_VENDOR_FOLDERS = ("third_party", "third-party", "vendor", "vendored", "_vendor", "external")


def _vendored(ctx: FileContext) -> Said:
    """`` (a vendored copy of X: ...)`` for a file under a vendor folder: its pins are that
    project's, which the project may not be free to change."""
    parts = os.path.normpath(ctx.path).split(os.sep)
    for i, part in enumerate(parts[:-2]):
        if part.lower() in _VENDOR_FOLDERS:
            owner = parts[i + 1]
            return say(
                " (this file is {owner}'s, vendored under {part}/: its pins are {owner}'s own;"
                " update the vendored {owner}, or install it without this requirements file)",
                "（此文件属于 {owner}，以内置副本放在 `{part}/` 下：其中的版本约束是 {owner}"
                " 自己的；请更新内置的 {owner}，或不用这个依赖文件来安装它）",
                owner=owner,
                part=part,
            )
    return say("", "")


_PINS_FLASHINFER = patterns.compile(r"flashinfer[-_.]python\b", re.IGNORECASE)
# the header pip-compile and `uv pip compile` write: the file is a whole environment, resolved
_COMPILED = patterns.compile(
    r"(?:\s*#[^\n]*\n)*?\s*# This file (?:was|is) autogenerated by (?:pip-compile|uv)\b"
)


def _extras_for(ctx: FileContext) -> frozenset[str]:
    """The extras of flashinfer-python that apply to ``ctx``'s file: its own, when it pins
    flashinfer-python itself (installed that way); else those of the project's pin files."""
    if _PINS_FLASHINFER.search(ctx.text):
        return _project_extras(ctx.text)
    root = project_root(ctx.path)
    around = project_extras_text(root)
    depends.note("flashinfer-extras", root, around)  # (a cached result holds while it does)
    return frozenset(e for e in around.split(",") if e)


def project_extras_text(root: str) -> str:
    """`_extras_in` of the project's pin files as they are now (asked again when one changed)."""
    files = []
    for path in pin_files([root]):
        try:
            st = os.stat(path)
        except OSError:
            continue
        files.append((path, st.st_size, st.st_mtime_ns))
    return _extras_in(tuple(files))


@lru_cache(maxsize=64)
def _extras_in(files: tuple[tuple[str, int, int], ...]) -> str:
    """The extras of flashinfer-python that ``files`` (a project's pin files: ``pyproject.toml``,
    ``requirements/*.txt``, Dockerfiles...) install, comma-separated: a
    requirements file that pins only ``nvidia-cutlass-dsl`` is checked against what
    ``flashinfer-python[cu13]`` in another file requires."""
    found: set[str] = set()
    for path, _, _ in files:
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        if b"flashinfer" in data.lower():
            found |= _project_extras(data.decode("utf-8", errors="replace"))
    return ",".join(sorted(found))


class CompanionRequirements(Rule):
    """Pins of the packages FlashInfer itself requires, checked against the target release.

    Each FlashInfer release states what it needs beside torch in its wheel's metadata
    (`Requires-Dist`): 0.6.11 and 0.6.14 need `nvidia-cutlass-dsl>=4.5.0`, 0.7.4 needs
    `>=4.8.0`, `apache-tvm-ffi>=0.1.6,<0.2` (then `>=0.1.11` in 0.7.4), `cuda-tile>=1.4.0` from
    0.6.14, `nvidia-cudnn-frontend>=1.32.0` in 0.7.4. The SGLang upgrade to 0.6.11 had to move
    its own `nvidia-cutlass-dsl` pin from 4.4.2 to 4.5.0 by hand. This rule reads those
    requirements from the bundled release data and checks the project's pins of the same
    packages (`pyproject.toml`, `requirements*.txt`, `setup.cfg`): an exact pin the target does
    not accept, or an upper bound that excludes every version it accepts, is reported with what
    the target requires. A lower minimum (`>=4.5.2` where the target needs `>=4.8.0`) allows
    what the target needs, so the installer picks it and nothing is said. With the option
    `move = true`, an exact pin or minimum below what the target accepts moves to the lowest
    release the package index serves that the target accepts and the pin's other bounds allow
    (never to an unpublished version, never to an unsatisfiable requirement; the operator
    stays); without index data for the package, or where no release fits, it is reported. An
    upper bound is only reported.

    The requirements of the extras the project installs count too: `flashinfer-python[cu13]`
    0.7.1 requires `nvidia-cutlass-dsl[cu13]>=4.7.0a0` (`>=4.6.2a0` without it), so a 4.6.2
    pin is reported there. The extras are those of the file's own flashinfer-python pin, or,
    in a file that pins none (`requirements/cuda.txt` beside a `pyproject.toml`), those of the
    project's pin files.

    Not judged against the target: the pins of a dependency list that pins FlashInfer beside a
    serving engine release requiring another FlashInfer (`sglang==0.5.20` with
    `flashinfer-python==0.6.18`: FI006 leaves that pin, and the list keeps what goes with it),
    and those of an environment compiled whole (`pip-compile`, `uv pip compile`) that installs
    no FlashInfer at all.
    """

    code = "FI007"
    summary = "Pins of FlashInfer's own requirements (nvidia-cutlass-dsl, apache-tvm-ffi...) checked against the target"
    summary_zh = (
        "FlashInfer 自身依赖（nvidia-cutlass-dsl、apache-tvm-ffi 等）的版本声明，按目标版本核对"
    )
    introduced_in = "*"
    data_driven: ClassVar[bool] = True
    fix_safety = FixSafety.SAFE
    suffixes = ()
    file_patterns = DEPENDENCY_FILE_PATTERNS
    triggers = ("flashinfer",)  # the run's are the names of the target's requirements
    options = (
        RuleOption(
            "move",
            False,
            "Move a conflicting pin to the lowest version the target FlashInfer accepts (else"
            " only report it).",
        ),
    )

    @classmethod
    def triggers_for(cls, options: RunOptions) -> tuple[str | tuple[str, ...], ...]:
        names = _required_names(str(options.to_version))
        spellings = {n for name in names for n in (name, name.replace("-", "_"))}
        return tuple(sorted(spellings)) or cls.triggers

    @classmethod
    def wants(cls, data: bytes, path: str, options: RunOptions) -> bool:
        # `import torch` names a requirement; only a version of it matters here
        return may_hold_versions(path, data, None, _required_names(str(options.to_version)))

    def find(self, ctx: FileContext) -> None:
        target = str(ctx.options.to_version)
        extras = _extras_for(ctx)
        required = _required(target, extras)
        if not required:
            return
        refs = [
            r
            for r in scan(ctx.path, ctx.text, companions=required, tree=ctx.tree)
            if r.package in required and r.kind is Kind.REQUIREMENT and not r.in_comment
        ]
        if refs and _COMPILED.match(ctx.text) and not _PINS_FLASHINFER.search(ctx.text):
            return  # (an environment resolved whole, without FlashInfer: its pins are not ours)
        if refs and _PINS_FLASHINFER.search(ctx.text):
            # (a list whose FlashInfer an engine pinned beside it holds back keeps that
            # FlashInfer, FI006 says so, and its other pins with it: not the target's business)
            lines = [line.rstrip("\r\n") for line in ctx.lines]
            places = toml_places(lines) if ctx.path.endswith(".toml") else None  # (once a file)
            target_v = Version(target)
            refs = [
                r
                for r in refs
                if not held_by_engine(ctx.path, lines, places, r.line, r.col, target_v)
            ]
        groups: dict[tuple[int, str], list[VersionRef]] = {}
        for ref in refs:
            groups.setdefault((ref.line, ref.context), []).append(ref)
        move = bool(ctx.option("move"))
        plain = _required(target)  # (without the extras: to say where an extra matters)
        for group in groups.values():
            name = group[0].package
            spec = required[name]
            extra = (
                say(
                    " with the extra {extras}",
                    "（带 extra `{extras}`）",
                    extras=", ".join(sorted(extras)),
                )
                if extras and plain.get(name) != spec
                else say("", "")
            )
            needs = say(
                "FlashInfer {target} requires {name}{spec}{extra} (its wheel's metadata)",
                "FlashInfer {target} 要求 `{name}{spec}`{extra}（见其 wheel 的元数据）",
                target=target,
                name=name,
                spec=spec,
                extra=extra,
            )
            self._check(ctx, group, spec, needs, move)

    def _check(
        self, ctx: FileContext, group: list[VersionRef], spec: SpecifierSet, needs: Said, move: bool
    ) -> None:
        name = group[0].package
        lowest = _lowest(spec)
        for ref in group:
            try:
                version = Version(ref.version.split("+", 1)[0])
            except InvalidVersion:
                continue
            if ref.operator in ("==", "===", ">=", "~="):
                if spec.contains(version, prereleases=True):
                    continue
                if (
                    not move
                    and ref.operator in (">=", "~=")
                    and lowest is not None
                    and _specifier(f"{ref.operator}{ref.version}").contains(
                        lowest, prereleases=True
                    )
                ):
                    continue  # a lower floor allows what FlashInfer needs: the resolver picks it
                if lowest is not None and version > lowest:
                    continue  # newer than the minimum but excluded (an upper bound): below
                what = say(
                    "{pin} here; {needs}",
                    "这里是 `{pin}`；{needs}",
                    pin=f"{name}{ref.operator}{ref.version}",
                    needs=needs,
                )
                if move and lowest is not None and version < lowest:
                    found = _published_floor(name, spec, group, ref, lowest)
                    if isinstance(found, Version):
                        ctx.fix(
                            ref.span,
                            say(
                                "{what}: moved to {found}, the lowest version the package index"
                                " serves that it accepts",
                                "{what}：已改为 {found}，即包索引上满足要求的最低版本",
                                what=what,
                                found=found,
                            ),
                            ctx.replace_text(ref.span, str(found)),
                        )
                    else:
                        ctx.report(
                            ref.span,
                            say(
                                "{what}: {found}{vendored}",
                                "{what}：{found}{vendored}",
                                what=what,
                                found=found,
                                vendored=_vendored(ctx),
                            ),
                        )
                else:
                    # (what `move = true` would write: the lowest release the package index
                    # serves that fits, not the requirement's floor, which may be a
                    # pre-release such as 4.6.2a0)
                    to = (
                        _published_floor(name, spec, group, ref, lowest)
                        if lowest is not None and not move and version < lowest
                        else None
                    )
                    hint = (
                        say(
                            " (option move = true of {code} moves it to {to})",
                            "（{code} 的选项 `move = true` 会把它改为 {to}）",
                            code=self.code,
                            to=to,
                        )
                        if isinstance(to, Version)
                        else say("", "")
                    )
                    ctx.report(
                        ref.span,
                        say(
                            "{what}: move the pin{hint}{vendored}",
                            "{what}：请修改版本约束{hint}{vendored}",
                            what=what,
                            hint=hint,
                            vendored=_vendored(ctx),
                        ),
                    )
            elif (
                ref.operator in ("<", "<=")
                and lowest is not None
                and not _specifier(f"{ref.operator}{ref.version}").contains(
                    lowest, prereleases=True
                )
            ):
                ctx.report(
                    ref.span,
                    say(
                        "{pin} here excludes every version FlashInfer {target} accepts ({needs}):"
                        " raise the bound{vendored}",
                        "这里的 `{pin}` 排除了 FlashInfer {target} 接受的所有版本（{needs}）："
                        "请放宽上限{vendored}",
                        pin=f"{name}{ref.operator}{ref.version}",
                        target=ctx.options.to_version,
                        needs=needs,
                        vendored=_vendored(ctx),
                    ),
                )
