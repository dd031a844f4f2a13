"""FI006: move every FlashInfer version the project writes down to the target release."""

from __future__ import annotations

import ast
import os
import re
from typing import Any, ClassVar, NamedTuple

from packaging.version import InvalidVersion, Version

from migrate_fi.api.releases import (
    FLASHINFER_INDEX,
    engine_releases,
    engine_requirements,
    engines_read,
    index_versions,
)
from migrate_fi.base import patterns
from migrate_fi.base.messages import Said, join, say
from migrate_fi.base.modules import is_python_path, is_test_file
from migrate_fi.base.results import FixSafety
from migrate_fi.framework.rule import FileContext, Rule, RuleOption, RunOptions
from migrate_fi.project.discovery import wanted_files
from migrate_fi.project.ownership import (
    Owner,
    Place,
    engines_by_url,
    engines_in,
    owner_of,
    toml_places,
)
from migrate_fi.project.pins import (
    CUBIN,
    DEPENDENCY_FILE_PATTERNS,
    JIT_CACHE,
    LOCK_FILES,
    MAIN,
    PIN_FILE_PATTERNS,
    Kind,
    LockDependents,
    VersionRef,
    lock_dependents,
    may_hold_versions,
    scan,
)

from ._engines import FAMILY, engine_list, package_requirements, split_pin

# the first release that ignores a flashinfer-cubin or flashinfer-jit-cache of another release
# (with a warning) where those before it raised RuntimeError: flashinfer-python 0.7.2 wheel,
# flashinfer/jit/env.py (`_get_cubin_dir`: "a mismatched wheel is ignored instead of failing")
_IGNORES_COMPANIONS = Version("0.7.2")
# files that declare dependencies (a pin there is installed by pip from PyPI)
_DECLARING = wanted_files(("setup.py",), DEPENDENCY_FILE_PATTERNS)
_INSTALL_FILES = patterns.compile(r"^(Dockerfile.*|.*\.dockerfile|.*\.Dockerfile|.*\.(sh|bash))$")
# a command line that installs packages: `pip install`, `RUN pip3 install`, `$PIP_CMD install`,
# `uv pip install`
_INSTALL = patterns.compile(
    r"^(?P<prefix>\s*(?:RUN\s+)?.*?(?:pip3?|PIP\w*\}?|uv)\s+(?:pip\s+)?install)\b"
)
_PYTHON_SPEC = patterns.compile(
    r"flashinfer[-_]python(?:\[[^\]]*\])?\s*==\s*(?P<version>[\"']?[\w.${}+-]+)"
)


_HASH = patterns.compile(r"\s+--hash[= ]\s*\S+")
_URL_HASHES = ("sha256", "sha384", "sha512", "sha1", "md5")  # `#sha256=...` of a direct URL


def _hashed(lines: list[str], number: int) -> int | None:
    """When the requirement on line ``number`` (1-based) carries ``--hash`` options: the last
    line they take (continuation lines of nothing but hashes); None when it has none."""
    last = number
    has = "--hash" in lines[number - 1]
    while lines[last - 1].rstrip("\r\n").rstrip().endswith("\\") and last < len(lines):
        following = lines[last].strip()
        if not following.startswith("--hash"):
            break
        has = True
        last += 1
    return last if has else None


_INDEX_OPTION = patterns.compile(r"(?:--(?:extra-)?index-url|--find-links|\s-[if])\b|PIP_\w*INDEX")
_VAR_NAME = patterns.compile(r"\b(?P<var>[A-Za-z_][A-Za-z0-9_]*)\b")
_CUBIN_FROM_VARIABLE = patterns.compile(
    r"(?P<spec>flashinfer[-_]cubin\s*==\s*[\"']?\$\{?(?P<var>[A-Za-z_][A-Za-z0-9_]*)\}?)"
)


def _command_at(lines: list[str], number: int) -> str:
    """The shell command that line ``number`` (1-based) is part of, over ``\\`` continuations."""
    start = number
    while start > 1 and lines[start - 2].rstrip().endswith("\\"):
        start -= 1
    end = number
    while end < len(lines) and lines[end - 1].rstrip().endswith("\\"):
        end += 1
    return "\n".join(lines[start - 1 : end])


class _Change(NamedTuple):
    ref: VersionRef
    new: str  # the version text to write
    message: Said
    safety: FixSafety = FixSafety.SAFE
    # never made, only said (its message says why: a version that disagrees with the run's
    # origin); a change still, so that what else the list pins is read for it
    said_only: bool = False


def _admits(operator: str, pinned: str, version: Version) -> bool:
    """Whether a flashinfer-python pin ``operator pinned`` admits ``version`` (a companion's
    release): exact, at least, compatible (``~=``, Poetry's ``^`` and ``~``); a pin written
    without an operator (a variable) is exact."""
    found = _public(pinned.rstrip(".*"))
    if found is None:
        return False
    if operator in ("", "==", "==="):
        if "*" in pinned:
            return str(version).startswith(pinned.rstrip("*"))
        return found == version
    if operator == ">=":
        return version >= found
    if operator in ("~=", "^", "~"):
        same = found.release[:2] if operator != "^" or found.major == 0 else found.release[:1]
        return version >= found and version.release[: len(same)] == same
    return False


def _later(version: str, than: str) -> bool:
    try:
        return Version(version) > Version(than)
    except InvalidVersion:
        return False


# a check named for "installed at least": `is_flashinfer_version_at_least`, `..._ge`
_AT_LEAST = re.compile(r"(?i)(at_?least|_ge|_gte|_min)$")


def _holds(call: ast.Call, ref: VersionRef) -> bool:
    """Whether ``call`` is the check ``ref`` was read from (its version string is an argument
    of it, at the ref's place)."""
    return any(
        isinstance(a, ast.Constant) and a.value == ref.version and a.lineno == ref.line
        for a in [*call.args, *(k.value for k in call.keywords)]
    )


def _dedented(lines: list[str], node: ast.If, kept: list[ast.stmt]) -> str | None:
    """The lines of ``kept`` (a branch of ``node``), comments between them included, moved
    out to the ``if``'s indentation; None where that cannot be done line by line (a branch on
    the ``if``'s own line, a line indented less than the branch, as in a string)."""
    first, last = kept[0].lineno, kept[-1].end_lineno or kept[-1].lineno
    if first <= node.lineno or kept[0].col_offset <= node.col_offset:
        return None
    if kept is node.orelse:  # (from the line after `else:`)
        head = lines[first - 2].strip() if first >= 2 else ""
        if not head.startswith("else"):
            return None
    else:
        first = node.lineno + 1
    cut = kept[0].col_offset - node.col_offset
    out = []
    for line in lines[first - 1 : last]:
        if not line.strip():
            out.append(line)
        elif line[:cut].strip() or len(line) - len(line.lstrip()) < cut:
            return None
        else:
            out.append(line[cut:])
    return "".join(out).rstrip("\r\n")


def _release(text: str) -> str:
    """A version as written, its local tag (`+cu130`) aside."""
    return text.split("+", 1)[0]


def _public(text: str) -> Version | None:
    try:
        return Version(_release(text))
    except InvalidVersion:
        return None


def _next_minor(v: Version) -> str:
    return f"{v.major}.{v.minor + 1}"


# the name of a version variable that holds a minimum (`MIN_FLASHINFER_VERSION`,
# `FLASHINFER_REQUIRED_VERSION`): a floor, not the release the code is written for
_FLOOR = patterns.compile(r"(?i)(?:^|_)(?:min|minimum|required|least|floor)(?:_|$)")


class FlashinferPins(Rule):
    """FlashInfer's version, wherever the project writes it, moved to the target release.

    Half of every FlashInfer upgrade is moving the version: the pins in `pyproject.toml`
    (`"flashinfer_python[cu13]==0.6.12"`), `requirements*.txt`, `setup.py`/`setup.cfg` and Poetry
    tables, `pip install` lines and `ARG FLASHINFER_VERSION=` in Dockerfiles and CI scripts, JSON
    and YAML version files, start-up checks such as `assert_pkg_version("flashinfer_python",
    "0.6.12", ...)`, and examples of the old version in comments and docstrings next to a
    FlashInfer mention. Missing one is a classic failed upgrade. This rule finds all of them
    (`flashinfer-python`, `flashinfer_python`, the old name `flashinfer`) and moves them, with
    `flashinfer-cubin` and `flashinfer-jit-cache` kept in step:

    - exact pins (`==`), lower bounds (`>=`, `~=`, Poetry's `^`), wildcards (`==0.6.*`), variables
      and checks move to the target; a range whose upper bound excludes the target gets the next
      minor release as its bound (a review fix); a local tag (`+cu128`) is kept (review: the
      index you install from must have it);
    - a version already newer than the target is never downgraded, and is reported;
    - a FlashInfer version that disagrees with the one the run migrates from (and its
      companions at the same version) is reported and never moved, not even as a review fix:
      which release the code there is written for decides, and on real trees such a version
      was another setup's pin, a record of what a test measured, or what a serving engine
      locked beside it requires;
    - a pin that is not the project's own requirement is left (`migrate_fi.project.ownership`):
      resolver overrides and constraints (`[tool.uv] override-dependencies`), metadata mirrors of
      another package (`[[tool.uv.dependency-metadata]]`), and an extra or dependency group
      that pins a serving engine exactly (`sglang==0.5.11` next to FlashInfer: that release
      requires its own FlashInfer); it is reported only where it excludes the target, with why;
    - what a serving engine release requires of FlashInfer is read from its metadata (the
      release data's `engines.json`, sglang's and vLLM's releases; `signatures update` adds the
      newer ones through pip, `check` itself never asks the network): the project's own pin is
      not moved where the same dependency list (a TOML array, a requirements file, a JSON
      array of requirement strings) pins an engine release that requires another FlashInfer
      (reported with the engine's first later release that accepts the target); beside a
      release the data does not know, it moves and the fix says it was not checked; beside an
      engine installed from a URL (`sglang @ git+https://...@<commit>`) it moves only in a
      review fix; an engine under another environment marker is installed apart and does not
      count;
    - flashinfer-python moves with its companions: where the same file pins flashinfer-cubin or
      flashinfer-jit-cache at its version and this run cannot move that pin safely, its own move
      is a review fix (FlashInfer before 0.7.2 raises RuntimeError with a companion of another
      release; later ones ignore it, downloading cubins and compiling kernels instead);
    - a version check an `if` or `while` decides on (`if is_flashinfer_version_at_least("0.6.4"):`)
      is a feature gate, not a pin: the target answers it the same way every time, so it is
      never raised to the target. Where the check is named for "at least" and is the whole test
      of a plain `if` (or its `not`, with an `else`), a review fix removes the gate and keeps
      the branch that runs; otherwise it is reported (remove the gate, keep that branch);
    - other packages' pins and checks are never touched, even on the same line.

    `flashinfer-cubin` is published on PyPI only up to 0.6.13 (see the release data): from 0.6.14
    on a dependency pin cannot simply move. It is reported with the two known ways out (drop it
    and install `flashinfer-cubin` from FlashInfer's wheel index in CI and Docker, or keep it with
    an extra index URL). With the option `cubin = "install-from-index"` the first is done: the pin
    is removed from dependency files, and a CI script or Dockerfile that installs
    `flashinfer-python` gets an install step for `flashinfer-cubin` from that index right after it.
    """

    code = "FI006"
    summary = "FlashInfer pins, install lines, variables and version checks moved to the target (cubin, jit-cache in step)"
    summary_zh = (
        "FlashInfer 的版本声明、安装命令、版本变量与版本检查随目标版本更新（cubin、jit-cache 同步）"
    )
    introduced_in = "*"
    data_driven: ClassVar[bool] = True
    fix_safety = FixSafety.SAFE
    suffixes = (".py",)
    file_patterns = (*PIN_FILE_PATTERNS, *LOCK_FILES)
    triggers = ("flashinfer", "FLASHINFER", "FlashInfer", "Flashinfer")
    options = (
        RuleOption(
            "cubin",
            "report",
            'What to do with a flashinfer-cubin pin the target has not published on PyPI: "report",'
            ' or "install-from-index" (drop it from dependency files, install it from'
            " FlashInfer's wheel index in the CI scripts and Dockerfiles that install FlashInfer).",
            choices=("report", "install-from-index"),
        ),
    )

    @classmethod
    def wants(cls, data: bytes, path: str, options: RunOptions) -> bool:
        # every module of a serving project says "flashinfer"; few write a version
        return may_hold_versions(path, data, str(options.from_version))

    def find(self, ctx: FileContext) -> None:
        self._places: tuple[str, list[str], list[Place]] | None = None
        mode = ctx.option("cubin")  # (checked against its choices with the configuration)
        self.target = ctx.options.to_version
        self.origin = ctx.options.from_version
        self.pinned = ctx.options.pinned
        self.cubin_published = self._published(CUBIN)
        self._text = ctx.text  # (a lock file's: who requires FlashInfer there, `_locked`)
        refs = scan(ctx.path, ctx.text, str(self.origin), tree=ctx.tree)
        base = os.path.basename(ctx.path)
        removed_lines: set[int] = set()
        changes: list[_Change] = []
        # flashinfer-python's pins here that disagree with the run's origin: they are left, and
        # their companions at the same release with them (kept in step; a local tag aside:
        # `flashinfer-jit-cache==0.6.11.post3+cu130` goes with `flashinfer-python==0.6.11.post3`)
        self._left = {
            _release(ref.version)
            for ref in refs
            if ref.package == MAIN
            and ref.kind is not Kind.EXAMPLE
            and not ref.in_comment
            and ref.operator in ("==", "===", "")
            and not self._in_step(ref.version)
        }
        # what flashinfer-python's pins here admit: a companion at such a version is in step
        self._main_specs = [
            (ref.operator, ref.version)
            for ref in refs
            if ref.package == MAIN and ref.kind is not Kind.EXAMPLE and not ref.in_comment
        ]
        declares = _DECLARING(ctx.path)
        # (Python code that is no dependency declaration: its pin strings are install steps,
        # or data such as a test's expected output)
        code = not declares and (is_python_path(ctx.path) or ctx.path.endswith(".ipynb"))
        # flashinfer-cubin and flashinfer-jit-cache requirements here that this run does not
        # move safely: flashinfer-python at their version moves with them, or in review
        held: list[VersionRef] = []
        for ref in refs:
            companion = (
                ref.package in (CUBIN, JIT_CACHE)
                and ref.kind is Kind.REQUIREMENT
                and not ref.in_comment
            )
            unpublished_pin = (
                ref.package == CUBIN
                and not self.cubin_published
                and ref.kind is Kind.REQUIREMENT
                and declares
                and not ref.in_comment
            )
            if unpublished_pin and self._cubin_dependency(ctx, ref, mode, removed_lines):
                continue
            if ref.line in removed_lines:
                continue
            if code and self._other_release(ref):
                self._data(ctx, ref)
                continue
            # (whatever the option, a command that installs flashinfer-cubin from PyPI is never
            # moved to a version PyPI lacks; with install-from-index, a cubin variable moves with
            # the install step from FlashInfer's index that the file gets)
            left = mode == "report" or ref.kind is Kind.REQUIREMENT
            if not declares and left and self._cubin_install_left(ctx, ref):
                if companion:
                    held.append(ref)
                continue
            owner = self._owner(ctx, ref)
            change: _Change | None = None
            if owner is None and ref.kind is Kind.CHECK and ref.gate and self._dead_gate(ctx, ref):
                continue  # (the gate removed, in a review fix)
            if owner is None:
                change, reports = self._plan(ref)
                if change is not None and ref.kind is Kind.REQUIREMENT and not ref.in_comment:
                    change, reports = self._beside_engines(ctx, ref, change, reports)
            else:  # (not the project's own requirement: never moved)
                reports = self._owned(ref, owner)
            if (
                companion
                and owner is None
                and (change is None or change.safety is not FixSafety.SAFE)
            ):
                held.append(ref)
            if change is not None and change.said_only:
                reports, change = [*reports, change.message], None
            if change is not None:
                changes.append(change)
            for message in reports:
                ctx.report(ref.span, message)
        self._apply(ctx, [self._in_step_with(c, held) for c in changes])
        if not declares and not self.cubin_published:
            self._shared_variables(ctx, changes)  # (a command that names no index: any option)
        if mode == "install-from-index" and not self.cubin_published and _INSTALL_FILES.match(base):
            self._install_step(ctx, refs)

    # ------------------------------------------------------------- dead gates

    def _dead_gate(self, ctx: FileContext, ref: VersionRef) -> bool:
        """A gate ``if is_flashinfer_version_at_least("0.6.4"):`` (a check named for "at
        least", the whole test of a plain ``if``, or its ``not``) that the target makes always
        true or always false: a review fix keeps the branch that runs and removes the gate.
        True when it made the fix; False leaves it to the report."""
        version = _public(ref.version)
        if ctx.tree is None or version is None or version >= self.target:
            return False
        lines = ctx.text.splitlines(keepends=True)
        for node in ast.walk(ctx.tree):
            if not isinstance(node, ast.If):
                continue
            test, negated = node.test, False
            if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
                test, negated = test.operand, True
            if not (isinstance(test, ast.Call) and _holds(test, ref)):
                continue
            func = test.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if not _AT_LEAST.search(name):
                return False  # (what the check answers is not known from its name)
            kept = node.orelse if negated else node.body
            if not lines[node.lineno - 1].lstrip().startswith("if") or (
                negated and (not kept or (len(kept) == 1 and isinstance(kept[0], ast.If)))
            ):
                return False  # an `elif`, a `not` with no plain `else`: reported
            text = _dedented(lines, node, kept)
            if text is None:
                return False
            end = lines[node.end_lineno - 1 if node.end_lineno else node.lineno - 1]
            span = (node.lineno, 0, node.end_lineno or node.lineno, len(end.rstrip("\r\n")))
            ctx.fix(
                ref.span,
                say(
                    "a gate on FlashInfer {version} ({context}): with the project on {target} it"
                    " is always {answer}, so the gate is removed and the branch that runs is kept"
                    " (check that the check means 'installed at least')",
                    "以 FlashInfer {version} 为界的版本判断（`{context}`）：项目升到 {target}"
                    " 后它总是 {answer}，所以去掉该判断，保留实际运行的分支（请确认这个检查的"
                    "含义是“已安装的版本至少为”）",
                    version=ref.version,
                    context=ref.context,
                    target=self.target,
                    answer=Said("false", "`False`") if negated else Said("true", "`True`"),
                ),
                ctx.replace_text(span, text),
                safety=FixSafety.REVIEW,
            )
            return True
        return False

    # ------------------------------------------------------------- ownership

    def _owner(self, ctx: FileContext, ref: VersionRef) -> Owner | None:
        """Why a requirement in a TOML file is not the project's own (`ownership`)."""
        if ref.kind is not Kind.REQUIREMENT or ref.in_comment or not ctx.path.endswith(".toml"):
            return None
        if self._places is None or self._places[0] != ctx.path:
            lines = [line.rstrip("\r\n") for line in ctx.lines]
            self._places = (ctx.path, lines, toml_places(lines))
        _, lines, places = self._places
        if ref.line > len(places):
            return None
        return owner_of(lines, places, ref.line, FAMILY)

    def _owned(self, ref: VersionRef, owner: Owner) -> list[Said]:
        """What to say of a pin that is not the project's own: nothing while it admits the
        target, else why it is left as it is."""
        from packaging.specifiers import InvalidSpecifier, SpecifierSet  # (costs start-up)

        try:
            admits = self.target in SpecifierSet(f"{ref.operator}{ref.version}", prereleases=True)
        except InvalidSpecifier:
            admits = False
        if admits:
            return []
        said = {
            "pin": f"{ref.package} {ref.operator}{ref.version}",
            "where": owner.where,
            "target": self.target,
        }
        if owner.kind == "override":
            return [
                say(
                    "{pin} in {where}: it bounds what every package of the environment may"
                    " require, not this project's own requirement, and it excludes the target"
                    " {target}: left as it is; widen it by hand if it must admit {target}",
                    "{where} 中的 `{pin}`：它约束的是环境里每个包可以要求的版本，不是本项目自己的"
                    "依赖，且它排除了目标版本 {target}：保持原样；如果它必须容纳 {target}，"
                    "请手动放宽",
                    **said,
                )
            ]
        if owner.kind == "mirror":
            return [
                say(
                    "{pin} in {where}: a copy of {mirrored}'s own requirements, which the"
                    " migration does not change: left as it is; that release of {mirrored} cannot"
                    " be installed with FlashInfer {target} (move it with a {mirrored} release"
                    " that requires the target)",
                    "{where} 中的 `{pin}`：它是 {mirrored} 自身依赖的副本，迁移不改它：保持原样；"
                    "{mirrored} 的这个版本不能与 FlashInfer {target} 一起安装（请随一个要求目标"
                    "版本的 {mirrored} 版本一起修改）",
                    mirrored=owner.detail or Said("another package", "另一个包"),
                    **said,
                )
            ]
        accepted, told = self._engine(owner.detail, ref.package)
        if accepted:
            return [
                say(
                    "{pin} in {where}, next to {detail}, which accepts FlashInfer {target}"
                    "{told}: left as it is, as the pin of {where}; move it by hand if {where}"
                    " should run {target}",
                    "{where} 中的 `{pin}`，与 `{detail}` 并列，而后者接受 FlashInfer {target}"
                    "{told}：作为 {where} 的版本约束保持原样；如果 {where} 应当使用 {target}，"
                    "请手动修改",
                    detail=owner.detail,
                    told=told,
                    **said,
                )
            ]
        return [
            say(
                "{pin} in {where}, next to {detail}: that release requires the FlashInfer it was"
                " built for, so this pin moves with it: left as it is; move both to a release"
                " that requires FlashInfer {target}{told}",
                "{where} 中的 `{pin}`，与 `{detail}` 并列：那个版本要求它构建时所用的 FlashInfer，"
                "所以这个版本约束随它而定：保持原样；请把两者一起改到要求 FlashInfer {target}"
                " 的版本{told}",
                detail=owner.detail,
                told=told,
                **said,
            )
        ]

    def _engine(self, pin: str, package: str) -> tuple[bool | None, Said]:
        """Whether the serving engine release ``pin`` (``sglang[srt]==0.4.3``) accepts the
        target of ``package`` (its metadata's requirement, with the extras the pin names; None:
        not recorded), and what to say of it: the requirement, and where it does not accept the
        target, the first later release that does."""
        engine, extras, version = split_pin(pin)

        def accepts(reqs: list[Any]) -> bool:  # (packaging's Requirement)
            return all(r.specifier.contains(self.target, prereleases=True) for r in reqs)

        lines = engine_requirements(engine, version)
        if lines is None:
            return None, say(
                " (not checked: what {engine} {version} requires of FlashInfer is not recorded;"
                " `migrate-fi signatures update` reads it)",
                "（未核对：没有记录 {engine} {version} 对 FlashInfer 的要求；"
                "`migrate-fi signatures update` 会读取它）",
                engine=engine,
                version=version,
            )
        reqs = package_requirements(lines, package, extras)
        shown = ", ".join(  # (as required, without the marker that made it apply)
            r.name + (f"[{','.join(sorted(r.extras))}]" if r.extras else "") + str(r.specifier)
            for r in reqs
        )
        if not reqs:
            return True, say(
                " ({engine} {version} requires no {package}, by its metadata)",
                "（按其元数据，{engine} {version} 不要求 {package}）",
                engine=engine,
                version=version,
                package=package,
            )
        if accepts(reqs):
            return True, say(
                " ({engine} {version} requires {shown}, by its metadata)",
                "（按其元数据，{engine} {version} 要求 `{shown}`）",
                engine=engine,
                version=version,
                shown=shown,
            )
        later = sorted(
            (
                v
                for v, found in engine_releases(engine).items()
                if _later(v, version)
                and (reqs_v := package_requirements(found, package, extras))
                and accepts(reqs_v)
            ),
            key=Version,
        )
        first = (
            say(
                "; {engine} {first} is its first release that accepts FlashInfer {target}",
                "；{engine} {first} 是它第一个接受 FlashInfer {target} 的版本",
                engine=engine,
                first=later[0],
                target=self.target,
            )
            if later
            else say(
                "; no {engine} release read ({read}) accepts FlashInfer {target} yet",
                "；截至 {read} 读取的 {engine} 版本都还不接受 FlashInfer {target}",
                engine=engine,
                read=engines_read(),
                target=self.target,
            )
        )
        return False, say(
            " ({engine} {version} requires {shown}, by its metadata{first})",
            "（按其元数据，{engine} {version} 要求 `{shown}`{first}）",
            engine=engine,
            version=version,
            shown=shown,
            first=first,
        )

    def _beside_engines(
        self, ctx: FileContext, ref: VersionRef, change: _Change, reports: list[Said]
    ) -> tuple[_Change | None, list[Said]]:
        """A move of the project's own pin where the same dependency list (a TOML array, a
        requirements file) pins a serving engine exactly: not made where that engine release
        requires another FlashInfer (the environment could not be installed), said where what
        it requires is not recorded."""
        lines = [line.rstrip("\r\n") for line in ctx.lines]
        places: list[Place] | None = None
        if ctx.path.endswith(".toml"):
            if self._places is None or self._places[0] != ctx.path:
                self._places = (ctx.path, lines, toml_places(lines))
            places = self._places[2]
        found = engine_list(ctx.path, lines, places, ref.line, ref.col)
        if found is None:
            return change, reports
        # (an engine installed under another environment marker is installed apart)
        text, marker = found
        for engine, url in engines_by_url(text, FAMILY, marker):
            # (a commit or an archive of the engine: what it requires of FlashInfer is not
            # recorded, and an exact pin beside it is most often the one it requires)
            told = say(
                "; the same list installs {engine} from {url}, whose FlashInfer requirement"
                " cannot be read: check that it accepts {target}",
                "；同一个依赖列表从 {url} 安装 {engine}，无法读取它对 FlashInfer 的要求："
                "请确认它接受 {target}",
                engine=engine,
                url=url,
                target=self.target,
            )
            change = change._replace(message=change.message + told, safety=FixSafety.REVIEW)
        for engine, extras, version in engines_in(text, FAMILY, marker):
            admits, told = self._engine(f"{engine}{extras}=={version}", ref.package)
            if admits is False:
                return None, [
                    *reports,
                    say(
                        "{package} {pin}: not moved to {target}: the same list pins {engine}"
                        "{told}; move both",
                        "{package} `{pin}`：未改为 {target}：同一个依赖列表固定了 `{engine}`"
                        "{told}；请把两者一起修改",
                        package=ref.package,
                        pin=f"{ref.operator}{ref.version}",
                        target=self.target,
                        engine=f"{engine}{extras}=={version}",
                        told=told,
                    ),
                ]
            if admits is None:
                change = change._replace(message=change.message + told)
        return change, reports

    # ------------------------------------------------------------------ data

    def _published(self, package: str) -> bool:
        versions, _ = index_versions(package)
        return not versions or str(self.target) in versions  # no data: assume published

    # ----------------------------------------------------------------- moves

    def _plan(self, ref: VersionRef) -> tuple[_Change | None, list[Said]]:
        """What to do with one version: a change (or None), and what to report."""
        target, origin = self.target, self.origin
        version = _public(ref.version.rstrip(".*")) if "*" in ref.version else _public(ref.version)
        where = ref.context or ref.version
        if ref.kind is Kind.EXAMPLE or ref.in_comment:
            if ref.version == str(origin) and origin < target:
                if ref.prose:
                    return _Change(
                        ref,
                        str(target),
                        say(
                            "{version}, the version being migrated from, in a comment that names"
                            " FlashInfer: now {target} if it says which version is used; keep it"
                            " (and mark the line) if it states a fact about that release",
                            "提到 FlashInfer 的注释里的 {version}，即迁移前的版本：如果它说明的是"
                            "所用的版本，现在改为 {target}；如果它陈述的是那个版本的事实，请保留"
                            "（并标记该行）",
                            version=ref.version,
                            target=target,
                        ),
                        FixSafety.REVIEW,
                    ), []
                return _Change(
                    ref,
                    str(target),
                    say(
                        "{version} in a comment or docstring next to a FlashInfer mention: the"
                        " version being migrated from, now {target}",
                        "提到 FlashInfer 的注释或文档字符串里的 {version}：迁移前的版本，现在改为"
                        " {target}",
                        version=ref.version,
                        target=target,
                    ),
                ), []
            return None, []
        if version is None:
            return None, []
        name = ref.package
        if ref.kind is Kind.LOCKED:
            if version >= target:
                return None, []
            return None, [self._locked(ref)]
        if ref.operator == "@":
            return self._direct_reference(ref, version)
        from packaging.specifiers import InvalidSpecifier, SpecifierSet  # (costs start-up)

        if ref.operator in ("<", "<="):
            allowed = SpecifierSet(f"{ref.operator}{ref.version}", prereleases=True)
            if target in allowed:
                return None, []
            return _Change(
                ref,
                _next_minor(target),
                say(
                    "{name}: the upper bound {bound} excludes the target {target}: raised to"
                    " <{raised} (check the range you mean)",
                    "{name}：上限 `{bound}` 排除了目标版本 {target}：已放宽到 `<{raised}`"
                    "（请确认这是你要的范围）",
                    name=name,
                    bound=f"{ref.operator}{ref.version}",
                    target=target,
                    raised=_next_minor(target),
                ),
                FixSafety.REVIEW,
            ), []
        if ref.operator in ("!=", ">"):
            return None, []
        if "*" in ref.version:
            try:
                matches = target in SpecifierSet(f"=={ref.version}")
            except InvalidSpecifier:
                return None, []
            if matches:
                return None, []
            parts = ref.version.count(".")
            new = ".".join(str(target).split(".")[:parts]) + ".*"
            return _Change(
                ref,
                new,
                say(
                    "{name} =={version} does not cover the target {target}: now =={new}",
                    "{name} `=={version}` 不包含目标版本 {target}：现在改为 `=={new}`",
                    name=name,
                    version=ref.version,
                    target=target,
                    new=new,
                ),
            ), []
        if version > target:
            return None, [
                say(
                    "{name} is at {version} here, newer than the target {target}: not downgraded"
                    " ({where})",
                    "{name} 在这里是 {version}，比目标版本 {target} 更新：不降级（`{where}`）",
                    name=name,
                    version=ref.version,
                    target=target,
                    where=where,
                )
            ]
        if version == target:
            return None, []
        if ref.kind is Kind.CHECK and ref.gate:
            return None, [
                say(
                    "a gate on FlashInfer {version} ({where}): with the project on {target} it"
                    " answers the same every time, so the branch it guards is dead code or the"
                    " only code: remove the gate and keep the branch that runs on {target}; not"
                    " moved (a raised threshold would say nothing)",
                    "以 FlashInfer {version} 为界的版本判断（`{where}`）：项目升到 {target}"
                    " 后它每次的结果都一样，所以它守护的分支要么是死代码，要么是唯一运行的代码："
                    "请去掉该判断，保留在 {target} 上运行的分支；未修改（提高阈值没有意义）",
                    version=ref.version,
                    where=where,
                    target=target,
                )
            ]
        pin = f"{ref.operator}{ref.version}"
        kind = {
            Kind.REQUIREMENT: (
                say("pin {pin}", "版本约束 `{pin}`", pin=pin)
                if ref.operator
                else say("pin", "版本约束")
            ),
            Kind.VARIABLE: say("version variable", "版本变量"),
            Kind.CHECK: say("version check", "版本检查"),
            Kind.SOURCE: say("source checkout (git tag)", "源码检出（git 标签）"),
            Kind.NOTICE: say("version in the third-party notices", "第三方声明中的版本"),
        }[ref.kind]
        local = "+" in ref.version
        new = str(target) + ("+" + ref.version.split("+", 1)[1] if local else "")
        note = (
            say(
                " (the local tag is kept: check that your index serves it)",
                "（保留了本地版本标签：请确认你的索引提供它）",
            )
            if local
            else say("", "")
        )
        facts = {"name": name, "kind": kind, "version": ref.version, "target": target}
        # a companion (cubin, jit-cache) at a release neither the run's origin nor a
        # flashinfer-python pin here names: another release's pin (test data, another setup)
        stray = self._stray(ref)
        if ref.kind is Kind.VARIABLE and version != origin and _FLOOR.search(ref.context):
            # (`MIN_FLASHINFER_VERSION = "0.7.2"`, read as a floor: below the target, it still
            # admits it; vLLM 0.34's, compared with `>=`, needs nothing on 0.7.4)
            return None, []
        if self._is_left(ref) or stray:
            # (never moved: which release the code there is written for decides, and on real
            # trees such a version was another setup's pin, a record of what was measured, or
            # what an engine locked beside it requires; a companion at the same version stays
            # with it)
            said = say(
                "FlashInfer versions disagree: this {kind} says {version}, the run migrates from"
                " {origin}: check which one the code was written for ({where})",
                "FlashInfer 版本不一致：这个{kind}写的是 {version}，而本次从 {origin} 迁移："
                "请确认代码是为哪个版本写的（`{where}`）",
                origin=origin,
                where=where,
                **facts,
            )
            if stray:
                said = say(
                    "FlashInfer versions disagree: this {name} {kind} is not the release the run"
                    " migrates from ({origin}), nor one a flashinfer-python pin here admits:"
                    " check which release it is for ({where})",
                    "FlashInfer 版本不一致：这个 {name} 的{kind}既不是本次迁移的起始版本"
                    "（{origin}），也不是这里的 flashinfer-python 约束所允许的版本：请确认它对应哪个版本"
                    "（`{where}`）",
                    origin=origin,
                    where=where,
                    **facts,
                )
            elif ref.package != MAIN:
                said = say(
                    "{name} {kind}, in step with a flashinfer-python pin here that disagrees",
                    "{name} 的{kind}，与这里一个版本不一致的 flashinfer-python 约束保持同步",
                    **facts,
                )
            return _Change(
                ref,
                new,
                say(
                    "{said}; not moved to {target}: move it by hand where the code there is"
                    " written for {origin}",
                    "{said}；未改为 {target}：若那里的代码是为 {origin} 写的，请手动修改",
                    said=said,
                    target=target,
                    origin=origin,
                ),
                FixSafety.REVIEW,
                said_only=True,
            ), []
        change = _Change(
            ref,
            new,
            say(
                "{name} {kind}: moved to the target {target}{note}",
                "{name} 的{kind}：已改为目标版本 {target}{note}",
                note=note,
                **facts,
            ),
            FixSafety.REVIEW if local else FixSafety.SAFE,
        )
        return change, []

    def _other_release(self, ref: VersionRef) -> bool:
        """A pin (``flashinfer-jit-cache==0.4.1+cu129``) that names another release than the
        run's origin, which no flashinfer-python pin here admits either."""
        return (
            ref.kind is Kind.REQUIREMENT
            and not ref.in_comment
            and (self._is_left(ref) or self._stray(ref))
        )

    def _data(self, ctx: FileContext, ref: VersionRef) -> None:
        """Such a pin in Python code: another setup's install step, or data (a test's expected
        output under a patched `__version__`, FlashInfer's own CLI tests): never moved, which
        would break the test or guess the setup; reported outside test modules."""
        if is_test_file(ctx.path):
            return
        ctx.report(
            ref.span,
            say(
                "FlashInfer versions disagree: this {name} {pin} in code is not the release the"
                " run migrates from ({origin}), nor one a flashinfer-python pin here admits: check"
                " which release it is for; not moved",
                "FlashInfer 版本不一致：代码里的这个 {name} `{pin}` 既不是本次迁移的起始版本"
                "（{origin}），也不是这里的 flashinfer-python 约束所允许的版本：请确认它对应哪个版本；"
                "未修改",
                name=ref.package,
                pin=f"{ref.operator}{ref.version}" if ref.operator else ref.version,
                origin=self.origin,
            ),
        )

    def _is_left(self, ref: VersionRef) -> bool:
        """Whether ``ref`` names the release of a flashinfer-python pin here that is left."""
        return _release(ref.version) in self._left

    def _stray(self, ref: VersionRef) -> bool:
        """A companion (cubin, jit-cache) pin at a release neither the run's origin nor a
        flashinfer-python pin here names or admits: another release's pin (test data, another
        setup), never moved as a safe fix."""
        version = _public(ref.version.rstrip(".*"))
        return (
            ref.package != MAIN
            and version is not None
            and not self._is_left(ref)
            and not self._in_step(ref.version)
            and not any(_admits(op, v, version) for op, v in self._main_specs)
        )

    def _in_step_with(self, change: _Change, held: list[VersionRef]) -> _Change:
        """A safe move of a flashinfer-python requirement is only a review fix where this file
        pins flashinfer-cubin or flashinfer-jit-cache at the same version and that pin is not
        moved safely: FlashInfer raises (before 0.7.2) or ignores it (from 0.7.2) where a cubin
        or JIT cache of another release is installed, so a plain `apply` must not leave them
        apart (xinference installs all three from one list)."""
        ref = change.ref
        if (
            ref.package != MAIN
            or ref.kind is not Kind.REQUIREMENT
            or change.safety is not FixSafety.SAFE
        ):
            return change
        apart = [h for h in held if _public(h.version) == _public(ref.version)]
        if not apart:
            return change
        refuses = self.target < _IGNORES_COMPANIONS
        does = (
            say(
                "FlashInfer {target} raises RuntimeError where one of another release is installed",
                "装有其他版本的配套包时 FlashInfer {target} 会抛出 RuntimeError",
                target=self.target,
            )
            if refuses
            else say(
                "FlashInfer {target} ignores one of another release (it downloads the cubins at"
                " first use, or compiles the kernels)",
                "FlashInfer {target} 会忽略其他版本的配套包（首次使用时下载 cubin，或编译内核）",
                target=self.target,
            )
        )
        told = say(
            "; moved only as a review fix: {companions} at the same version cannot be moved with"
            " it here, and {does}: move them together",
            "；仅作为需审阅的修复：同版本的 {companions} 无法在这里一起修改，而{does}：请一起修改",
            does=does,
            companions=join(
                (say("{package} (line {line})", "{package}（第 {line} 行）", package=h.package,
                     line=h.line) for h in apart),
                ", ",
                "、",
            ),
        )  # fmt: skip
        return _Change(ref, change.new, change.message + told, FixSafety.REVIEW)

    def _in_step(self, version: str) -> bool:
        """Whether a pin at ``version`` names the release the run migrates from (or the one a
        migration in progress pinned)."""
        found = _public(version)
        return found is not None and found in (self.origin, self.pinned)

    def _locked(self, ref: VersionRef) -> Said:
        """What to do with a lock file that holds an older FlashInfer: regenerate it once the
        pins say the target; where other packages locked there require it, those move first
        (a project that depends on it only through vLLM or SGLang moves them, not a pin)."""
        tool = LOCK_FILES.get(os.path.basename(ref.path), "its tool")
        facts = {"name": ref.package, "version": ref.version, "tool": tool, "target": self.target}
        dependents = (
            LockDependents((), None)  # (Pipfile.lock: JSON, and it lists no dependents)
            if os.path.basename(ref.path) == "Pipfile.lock"
            else lock_dependents(self._text, ref.package)
        )
        others = ", ".join(dependents.packages[:3]) + (
            " ..." if len(dependents.packages) > 3 else ""
        )
        if dependents.packages and dependents.project is False:
            return say(
                "this lock file holds {name} {version}, required here by {others} and not by the"
                " project itself: it moves when what requires it moves to a release that accepts"
                " {target}; then regenerate the lock (`{tool}`); a lock file is never edited by"
                " hand",
                "这个锁文件记录的是 {name} {version}，它由 {others} 依赖，而不是项目本身："
                "等依赖它的包升级到接受 {target} 的版本后它才会变；届时重新生成锁文件（`{tool}`）；"
                "锁文件不应手动编辑",
                others=others,
                **facts,
            )
        also = (
            say(
                " and what else requires it here ({others}) accepts it",
                "、且这里依赖它的其他包（{others}）接受该版本",
                others=others,
            )
            if dependents.packages
            else say("", "")
        )
        return say(
            "this lock file holds {name} {version}: regenerate it (`{tool}`) once the pins"
            " say {target}{also}; a lock file is never edited by hand",
            "这个锁文件记录的是 {name} {version}：等版本约束改为 {target}{also}后重新生成它"
            "（`{tool}`）；锁文件不应手动编辑",
            also=also,
            **facts,
        )

    def _direct_reference(
        self, ref: VersionRef, version: Version
    ) -> tuple[_Change | None, list[Said]]:
        """``name @ URL`` of a wheel, or of a release tag of FlashInfer's repository: the URL's
        version moved (review: nobody asked the server whether the new URL exists)."""
        if version >= self.target:
            return None, []
        url = ref.context.split("@", 1)[1].strip()
        new = url.replace(ref.version, str(self.target))
        said = say("", "")
        base, _, fragment = new.partition("#")
        if fragment and any(fragment.startswith(f"{h}=") for h in _URL_HASHES):
            # (a hash of the old wheel would make pip refuse the new one)
            new = base
            said = say(
                "; its #{hash} was the old wheel's and is dropped",
                "；它的 `#{hash}` 属于旧的 wheel，已去掉",
                hash=fragment.split("=", 1)[0],
            )
        facts = {"package": ref.package, "version": ref.version, "target": self.target}
        if url.startswith("git+"):  # (a build of a release tag of FlashInfer's sources)
            message = say(
                "{package} is built from the git tag of {version}: the URL now names the tag of"
                " {target}; check that it builds there (or pin {package}=={target})",
                "{package} 从 {version} 的 git 标签构建：URL 现在指向 {target} 的标签；请确认它在"
                "那里能构建（或改为约束 `{package}=={target}`）",
                **facts,
            )
        else:
            message = say(
                "{package} is installed from a direct URL of a {version} wheel: the URL now names"
                " {target}; check that it exists (or pin {package}=={target}){said}",
                "{package} 通过直接 URL 安装 {version} 的 wheel：URL 现在指向 {target}；请确认它"
                "存在（或改为约束 `{package}=={target}`）{said}",
                said=said,
                **facts,
            )
        return _Change(ref, new, message, FixSafety.REVIEW), []

    def _apply(self, ctx: FileContext, changes: list[_Change]) -> None:
        """One fix per requirement (its clauses move together: a lower bound never moves past
        an upper bound that a review fix would raise), one per other version."""
        groups: dict[tuple[int, str, str], list[_Change]] = {}
        for change in changes:
            ref = change.ref
            key = (
                (ref.line, ref.context, ref.package)
                if ref.kind is Kind.REQUIREMENT and not ref.in_comment
                else (ref.line, str(ref.col), "")
            )
            groups.setdefault(key, []).append(change)
        lines = ctx.text.splitlines(keepends=True)
        for group in groups.values():
            safety = min((c.safety for c in group), key=lambda s: s.rank)
            first = group[0].ref
            message = join(c.message for c in group)
            hashed = _hashed(lines, first.line) if first.kind is Kind.REQUIREMENT else None
            if hashed is not None and all(c.ref.line == first.line for c in group):
                self._move_hashed(ctx, lines, group, hashed, message)
                continue
            ctx.fix(
                first.span,
                message,
                *(ctx.replace_text(c.ref.span, c.new) for c in group),
                safety=safety,
            )

    def _move_hashed(
        self, ctx: FileContext, lines: list[str], group: list[_Change], last: int, message: Said
    ) -> None:
        """A requirement with ``--hash`` options (on its line and on the continuation lines up
        to ``last``): the old release's hashes cannot stay, and new ones cannot be made here,
        so they are dropped, in a review fix that says how to get them back."""
        first = group[0].ref.line
        line = lines[first - 1].rstrip("\r\n")
        for change in sorted(group, key=lambda c: c.ref.col, reverse=True):
            line = line[: change.ref.col] + change.new + line[change.ref.end_col :]
        kept = _HASH.sub("", line.rstrip().removesuffix("\\")).rstrip()
        end = lines[last - 1].rstrip("\r\n")
        ctx.fix(
            group[0].ref.span,
            say(
                "{message}; its --hash options were for the old release and are dropped:"
                " regenerate them (`pip-compile --generate-hashes`, `uv pip compile"
                " --generate-hashes`, or `pip hash` of the {target} wheels), or `pip install"
                " --require-hashes` fails",
                "{message}；它的 `--hash` 选项属于旧版本，已去掉：请重新生成（"
                "`pip-compile --generate-hashes`、`uv pip compile --generate-hashes`，或对 {target}"
                " 的 wheel 执行 `pip hash`），否则 `pip install --require-hashes` 会失败",
                message=message,
                target=self.target,
            ),
            ctx.replace_text((first, 0, last, len(end)), kept),
            safety=FixSafety.REVIEW,
        )

    # ----------------------------------------------------------------- cubin

    def _cubin_dependency(
        self, ctx: FileContext, ref: VersionRef, mode: str, removed: set[int]
    ) -> bool:
        """A dependency pin of flashinfer-cubin at a version PyPI does not serve. True when it
        was handled (reported, or removed)."""
        version = _public(ref.version)
        if version is None or version >= self.target:
            return False
        newest = index_versions(CUBIN)
        facts = {"target": self.target, "index": FLASHINFER_INDEX, "code": self.code}
        ways = say(
            "either drop this pin and install flashinfer-cubin from FlashInfer's wheel index in"
            " CI and Docker (pip install flashinfer-cubin=={target} --index-url {index}; option"
            ' cubin = "install-from-index" of {code} does that), or keep it and add'
            " --extra-index-url {index} wherever the project is installed",
            "要么去掉这个约束，在 CI 和 Docker 中从 FlashInfer 的 wheel 索引安装 flashinfer-cubin"
            "（`pip install flashinfer-cubin=={target} --index-url {index}`；{code} 的选项"
            ' `cubin = "install-from-index"` 会这样做），要么保留它，并在每个安装本项目的地方加上'
            " `--extra-index-url {index}`",
            **facts,
        )
        why = say(
            "flashinfer-cubin {target} is not published on PyPI (the newest there is {newest},"
            " read {read}), so this pin cannot simply move",
            "flashinfer-cubin {target} 没有发布在 PyPI 上（那里最新的是 {newest}，读取于"
            " {read}），所以这个约束不能直接改",
            newest=newest[0][-1] if newest[0] else Said("unknown", "未知"),
            read=newest[1],
            **facts,
        )
        lines = ctx.text.splitlines(keepends=True)
        line = lines[ref.line - 1] if ref.line <= len(lines) else ""
        whole = (
            re.match(r"^\s*[\"']?[^\"'#]*[\"']?,?\s*(#.*)?\r?\n?$", line)
            and line.count('"') + line.count("'") <= 2
        )
        if mode != "install-from-index" or not whole:
            ctx.report(ref.span, say("{why}: {ways}", "{why}：{ways}", why=why, ways=ways))
            return True
        ctx.fix(
            ref.span,
            say(
                "{why}: removed; install it from FlashInfer's wheel index ({index}) where"
                " FlashInfer is installed (the install scripts get that step)",
                "{why}：已去掉；请在安装 FlashInfer 的地方从 FlashInfer 的 wheel 索引（{index}）"
                "安装它（安装脚本会加上这一步）",
                why=why,
                **facts,
            ),
            ctx.replace_text((ref.line, 0, ref.line + 1, 0), ""),
        )
        removed.add(ref.line)
        return True

    def _cubin_install_left(self, ctx: FileContext, ref: VersionRef) -> bool:
        """A flashinfer-cubin version in an install script or Dockerfile (`pip install
        flashinfer-cubin==0.6.12`, `FLASHINFER_CUBIN_VERSION=0.6.12`) when the target is not on
        PyPI: moved only where the install names an index (FlashInfer's serves it); else
        reported, never moved to a version pip cannot find. True when reported."""
        if ref.package != CUBIN or self.cubin_published or ref.in_comment:
            return False
        if ref.kind not in (Kind.REQUIREMENT, Kind.VARIABLE):
            return False
        version = _public(ref.version)
        if version is None or version >= self.target:
            return False
        if ref.kind is Kind.REQUIREMENT:
            command = _command_at(ctx.text.splitlines(), ref.line)
            if _INDEX_OPTION.search(command):
                return False
        elif FLASHINFER_INDEX.split("://", 1)[1] in ctx.text:
            return False
        ctx.report(
            ref.span,
            say(
                "flashinfer-cubin {target} is not published on PyPI, and this install does not"
                " name an index: moving {version} to {target} would ask PyPI for it. Install it"
                " from FlashInfer's wheel index (add --extra-index-url {index} to the command that"
                " installs it), then move it",
                "flashinfer-cubin {target} 没有发布在 PyPI 上，而这里的安装没有指定索引：把"
                " {version} 改为 {target} 会向 PyPI 请求它。请从 FlashInfer 的 wheel 索引安装它"
                "（给安装它的命令加上 `--extra-index-url {index}`），然后再改版本",
                target=self.target,
                version=ref.version,
                index=FLASHINFER_INDEX,
            ),
        )
        return True

    def _shared_variables(self, ctx: FileContext, changes: list[_Change]) -> None:
        """`pip install flashinfer-python==${V} flashinfer-cubin==${V}`: moving V moves the
        cubin to a version PyPI does not serve. Reported at the cubin's use of V."""
        moved = {
            m.group("var")
            for c in changes
            if c.ref.kind is Kind.VARIABLE and c.ref.package == MAIN
            for m in _VAR_NAME.finditer(c.ref.context)
        }
        if not moved:
            return
        lines = ctx.text.splitlines()
        for number, line in enumerate(lines, 1):
            for m in _CUBIN_FROM_VARIABLE.finditer(line.split("#", 1)[0]):
                if m.group("var") not in moved:
                    continue
                if _INDEX_OPTION.search(_command_at(lines, number)):
                    continue
                ctx.report(
                    (number, m.start("spec"), number, m.end("spec")),
                    say(
                        "flashinfer-cubin takes its version from {var}, which moves to {target}"
                        " with flashinfer-python, and PyPI has no flashinfer-cubin {target}:"
                        " install it from FlashInfer's wheel index (add --extra-index-url {index}"
                        " to this command), or give it a version of its own",
                        "flashinfer-cubin 的版本取自 `{var}`，它会随 flashinfer-python 改为"
                        " {target}，而 PyPI 上没有 flashinfer-cubin {target}：请从 FlashInfer 的"
                        " wheel 索引安装它（给这条命令加上 `--extra-index-url {index}`），或给它"
                        "单独的版本",
                        var=m.group("var"),
                        target=self.target,
                        index=FLASHINFER_INDEX,
                    ),
                )

    def _install_step(self, ctx: FileContext, refs: list[VersionRef]) -> None:
        """After the command that installs flashinfer-python, install flashinfer-cubin from
        FlashInfer's index, unless the file installs it already. The version is written as the
        flashinfer-python install writes it (`${FLASHINFER_VERSION}` stays a variable); a
        command continued over several lines (`\\`) gets the step after its last line."""
        text = ctx.text
        code = "\n".join(line.split("#", 1)[0] for line in text.splitlines())
        if re.search(r"flashinfer[-_]cubin", code):  # (installed already; a comment is not)
            return
        lines = text.splitlines(keepends=True)
        start = 0
        while start < len(lines):
            end = start  # the command is lines[start:end + 1]
            while end + 1 < len(lines) and lines[end].rstrip("\r\n").endswith("\\"):
                end += 1
            command = "".join(lines[start : end + 1])
            code = "\n".join(line.split("#", 1)[0] for line in command.splitlines())
            head = _INSTALL.match(lines[start].split("#", 1)[0])
            found = _PYTHON_SPEC.search(code)
            if head is not None and found is not None:
                self._add_step(ctx, lines, end + 1, head.group("prefix"), found.group("version"))
                return
            start = end + 1

    def _add_step(
        self, ctx: FileContext, lines: list[str], after: int, prefix: str, version: str
    ) -> None:
        """Insert the cubin install command after line ``after`` (1-based)."""
        version = version.strip("\"'")
        if not version or _public(version) is not None:
            # a version written out is the one the migration moves to (the install line itself
            # moves there in the same fix); a variable (`${FLASHINFER_VERSION}`) stays one
            version = str(self.target)
        last = lines[after - 1]
        body = last.rstrip("\r\n")
        newline = last[len(body) :] or "\n"
        indent = re.match(r"\s*", prefix).group(0)  # type: ignore[union-attr]
        step = (
            f'{indent}{prefix.strip()} "flashinfer-cubin=={version}" --index-url {FLASHINFER_INDEX}'
        )
        edit = (
            ctx.replace_text((after + 1, 0, after + 1, 0), step + newline)
            if last != body
            else ctx.replace_text((after, len(body), after, len(body)), "\n" + step)
        )
        ctx.fix(
            (after, 0, after, len(body)),
            say(
                "flashinfer-cubin {target} is not on PyPI: installed from FlashInfer's wheel index"
                " right after FlashInfer",
                "flashinfer-cubin {target} 不在 PyPI 上：紧接着 FlashInfer 从 FlashInfer 的 wheel"
                " 索引安装它",
                target=self.target,
            ),
            edit,
        )
