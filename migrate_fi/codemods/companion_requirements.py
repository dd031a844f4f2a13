"""FI007: the project's pins of what the target FlashInfer requires must allow what it requires."""

from __future__ import annotations

from typing import ClassVar

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from migrate_fi.api.releases import requirements_of
from migrate_fi.codemod import Codemod, FileContext, RuleOption, RunOptions
from migrate_fi.pins import (
    DEPENDENCY_FILE_PATTERNS,
    Kind,
    VersionRef,
    canonical_name,
    may_hold_versions,
    scan,
)
from migrate_fi.results import FixSafety


def _required(target: str) -> dict[str, SpecifierSet]:
    """What the target release requires, with a version specifier: name -> specifier."""
    out: dict[str, SpecifierSet] = {}
    for line in requirements_of(target):
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if req.specifier and not (req.marker and "extra" in str(req.marker)):
            out[canonical_name(req.name)] = req.specifier
    return out


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


class CompanionRequirements(Codemod):
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
    version it accepts (its minimum); an upper bound is only reported.
    """

    code = "FI007"
    summary = "Pins of FlashInfer's own requirements (nvidia-cutlass-dsl, apache-tvm-ffi...) checked against the target"
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
        names = _required(str(options.to_version))
        spellings = {n for name in names for n in (name, name.replace("-", "_"))}
        return tuple(sorted(spellings)) or cls.triggers

    @classmethod
    def wants(cls, data: bytes, path: str, options: RunOptions) -> bool:
        # `import torch` names a requirement; only a version of it matters here
        return may_hold_versions(path, data, None, _required(str(options.to_version)))

    def find(self, ctx: FileContext) -> None:
        target = str(ctx.options.to_version)
        required = _required(target)
        if not required:
            return
        refs = [
            r
            for r in scan(ctx.path, ctx.text, companions=required, tree=ctx.tree)
            if r.package in required and r.kind is Kind.REQUIREMENT and not r.in_comment
        ]
        groups: dict[tuple[int, str], list[VersionRef]] = {}
        for ref in refs:
            groups.setdefault((ref.line, ref.context), []).append(ref)
        move = bool(ctx.option("move"))
        for group in groups.values():
            self._check(ctx, group, required[group[0].package], target, move)

    def _check(
        self, ctx: FileContext, group: list[VersionRef], spec: SpecifierSet, target: str, move: bool
    ) -> None:
        name = group[0].package
        needs = f"FlashInfer {target} requires {name}{spec} (its wheel's metadata)"
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
                    and SpecifierSet(f"{ref.operator}{ref.version}").contains(
                        lowest, prereleases=True
                    )
                ):
                    continue  # a lower floor allows what FlashInfer needs: the resolver picks it
                if lowest is not None and version > lowest:
                    continue  # newer than the minimum but excluded (an upper bound): below
                what = f"{name}{ref.operator}{ref.version} here; {needs}"
                if move and lowest is not None and version < lowest:
                    ctx.fix(
                        ref.span,
                        f"{what}: moved to {lowest}, the lowest version it accepts",
                        ctx.replace_text(ref.span, str(lowest)),
                    )
                else:
                    hint = (
                        "" if move else f" (option move = true of {self.code} moves it to {lowest})"
                    )
                    ctx.report(ref.span, f"{what}: move the pin{hint if lowest else ''}")
            elif (
                ref.operator in ("<", "<=")
                and lowest is not None
                and not SpecifierSet(f"{ref.operator}{ref.version}").contains(
                    lowest, prereleases=True
                )
            ):
                ctx.report(
                    ref.span,
                    f"{name}{ref.operator}{ref.version} here excludes every version"
                    f" {needs.split(' requires ', 1)[0]} accepts ({needs}): raise the bound",
                )
