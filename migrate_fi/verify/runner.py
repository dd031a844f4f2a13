"""`migrate-fi verify`: run the migrated GPU tests and say plainly what was proven.

1. Which tests: those given with ``--tests``; else the test files the last `apply` rewrote, plus
   the test files of the project that import a module it rewrote (a static scan with `ast`).
2. The environment, read in a subprocess of the Python that will run the tests (migrate-fi
   itself never imports torch or FlashInfer): Python, torch and its CUDA, each GPU with its
   compute capability, the installed FlashInfer (``importlib.metadata``) against the migration's
   target, and the project's pins.
3. pytest in a subprocess with a JUnit XML report; the outcome of every test, each skip with its
   reason, each failure with its first lines.
4. ``--baseline REF``: the same tests on the tree as it was at git REF, in a temporary worktree,
   so that failures new after the migration are told from those that were there before.

An all-skipped run proves nothing: its verdict is "nothing verified", not a pass.
"""

from __future__ import annotations

import ast
import enum
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from migrate_fi import __version__
from migrate_fi.base.messages import Said, say
from migrate_fi.base.modules import is_test_file, module_identity
from migrate_fi.project.discovery import discover
from migrate_fi.verify.junit import Outcome, TestResult, parse_junit

__all__ = [
    "Environment",
    "Verdict",
    "VerifyError",
    "VerifyRun",
    "compare_baseline",
    "probe_environment",
    "run_tests",
    "select_tests",
]


class VerifyError(Exception):
    """verify cannot do what was asked; one line."""


class Verdict(str, enum.Enum):
    PASSED = "passed"  # every selected test that ran passed, and at least one ran
    FAILED = "failed"  # a test failed
    ERROR = "error"  # a test errored, or pytest could not run them
    NOTHING_VERIFIED = "nothing verified"  # everything was skipped, or nothing was collected


# ------------------------------------------------------------------ selection


def _imported_modules(tree: ast.Module, module: str | None, is_package: bool) -> set[str]:
    """Modules a file may import: ``import a.b`` gives a.b; ``from a import b`` a and a.b."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module
            if node.level:
                parts = (module or "").split(".")
                if not is_package:
                    parts = parts[:-1]
                parts = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
                base = ".".join([*parts, node.module] if node.module else parts) or None
            if base is None:
                continue
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names if a.name != "*")
    return out


def select_tests(root: str, changed: Iterable[str]) -> list[str]:
    """Test files (absolute) among ``changed`` (paths relative to ``root``), plus the project's
    test files that import a module among them."""
    changed_abs = [os.path.join(root, p) for p in changed]
    selected = {p for p in changed_abs if is_test_file(p) and os.path.isfile(p)}
    modules = {m for p in changed_abs if p.endswith(".py") for m in [module_identity(p)[0]] if m}
    if modules:
        for path in discover([root], (".py",)):
            if path in selected or not is_test_file(path):
                continue
            try:
                with open(path, "rb") as fh:
                    tree = ast.parse(fh.read())
            except (OSError, SyntaxError, ValueError):
                continue
            module, is_package = module_identity(path)
            if _imported_modules(tree, module, is_package) & modules:
                selected.add(path)
    return sorted(selected)


# ---------------------------------------------------------------- environment

_PROBE = r"""
import importlib.metadata as md, json, platform, sys
out = {"python": platform.python_version(), "executable": sys.executable}
for dist in ("flashinfer-python", "flashinfer_python", "flashinfer"):
    try:
        out["flashinfer"] = md.version(dist)
        break
    except md.PackageNotFoundError:
        continue
try:
    out["pytest"] = md.version("pytest")
except md.PackageNotFoundError:
    pass
try:
    import torch
    out["torch"] = torch.__version__
    out["torch_cuda"] = torch.version.cuda
    out["gpus"] = [
        {"name": torch.cuda.get_device_name(i),
         "capability": "%d.%d" % torch.cuda.get_device_capability(i)}
        for i in range(torch.cuda.device_count())
    ] if torch.cuda.is_available() else []
except Exception as exc:
    out["torch_error"] = f"{type(exc).__name__}: {exc}"
print(json.dumps(out))
"""


@dataclass
class Environment:
    python: str = ""
    executable: str = ""
    torch: str | None = None
    torch_cuda: str | None = None
    torch_error: str | None = None
    gpus: list[dict[str, str]] = field(default_factory=list)
    flashinfer: str | None = None
    pytest: str | None = None

    def to_json(self) -> dict[str, object]:
        return dict(self.__dict__)


def probe_environment(python: str) -> Environment:
    """What the Python that runs the tests has (in a subprocess: never imported here)."""
    try:
        done = subprocess.run(
            [python, "-c", _PROBE], capture_output=True, text=True, timeout=300, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise VerifyError(f"cannot run {python}: {exc}") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise VerifyError(f"{python} cannot report its environment: {last}")
    try:
        doc = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise VerifyError(f"{python} printed no environment report") from None
    known = set(Environment.__dataclass_fields__)
    return Environment(**{k: v for k, v in doc.items() if k in known})


# ------------------------------------------------------------------------ run


@dataclass
class VerifyRun:
    results: list[TestResult] = field(default_factory=list)
    pytest_exit: int = 0
    output_tail: str = ""

    def count(self, outcome: Outcome) -> int:
        return sum(1 for r in self.results if r.outcome is outcome)

    @property
    def verdict(self) -> Verdict:
        if self.count(Outcome.FAILED):
            return Verdict.FAILED
        if self.count(Outcome.ERROR) or self.pytest_exit in (2, 3, 4):
            return Verdict.ERROR
        if self.count(Outcome.PASSED) == 0:
            return Verdict.NOTHING_VERIFIED
        return Verdict.PASSED


def run_tests(
    python: str,
    tests: Sequence[str],
    cwd: str,
    extra: Sequence[str] = (),
    timeout: float | None = None,
) -> VerifyRun:
    """pytest over ``tests`` in a subprocess, with a JUnit XML report read back."""
    with tempfile.TemporaryDirectory(prefix="migrate-fi-verify-") as tmp:
        report = os.path.join(tmp, "junit.xml")
        command = [
            python,
            "-m",
            "pytest",
            *tests,
            f"--junitxml={report}",
            "-o",
            "junit_family=xunit1",
            "-p",
            "no:cacheprovider",
            "-rA",
            *extra,
        ]
        try:
            done = subprocess.run(
                command, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
            )
        except OSError as exc:
            raise VerifyError(f"cannot run pytest with {python}: {exc}") from None
        except subprocess.TimeoutExpired:
            raise VerifyError(f"the tests ran past {timeout} s") from None
        tail = (done.stdout + done.stderr)[-4000:]
        if not os.path.exists(report):
            if done.returncode == 5:
                return VerifyRun([], 5, tail)
            raise VerifyError(
                f"pytest wrote no report (exit {done.returncode}): {_pytest_reason(tail)}"
            )
        with open(report, encoding="utf-8") as fh:
            results = parse_junit(fh.read())
    return VerifyRun(results, done.returncode, tail)


def _pytest_reason(output: str) -> str:
    """The line of pytest's output that says why it stopped: its usage error ("unrecognized
    arguments: --x", followed by lines about its configuration), else its last line."""
    lines = [line.strip() for line in output.strip().splitlines() if line.strip()]
    for line in reversed(lines):
        if " error: " in line or line.startswith(("ERROR:", "error:")):
            return line.split("error: ", 1)[-1] if "error: " in line else line
    return lines[-1] if lines else "no output"


# ------------------------------------------------------------------- baseline


def _git(root: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", root, *args], capture_output=True, text=True, check=False)


def baseline_run(
    python: str, root: str, ref: str, tests: Sequence[str], extra: Sequence[str] = ()
) -> VerifyRun:
    """The same tests on the tree as it was at git ``ref``, in a temporary worktree."""
    top = _git(root, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise VerifyError(f"{root}: not in a git repository, so --baseline cannot check out {ref}")
    toplevel = top.stdout.strip()
    if _git(toplevel, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").returncode != 0:
        raise VerifyError(f"--baseline {ref}: no such commit")
    with tempfile.TemporaryDirectory(prefix="migrate-fi-baseline-") as tmp:
        worktree = os.path.join(tmp, "tree")
        added = _git(toplevel, "worktree", "add", "--detach", worktree, ref)
        if added.returncode != 0:
            raise VerifyError(f"--baseline {ref}: {added.stderr.strip().splitlines()[-1:]}")
        try:
            inside = os.path.relpath(root, toplevel)
            base_root = os.path.normpath(os.path.join(worktree, inside))
            there = [os.path.join(base_root, os.path.relpath(t, root)) for t in tests]
            present = [t for t in there if os.path.exists(t)]
            if not present:
                return VerifyRun([], 5, "")
            return run_tests(python, present, base_root, extra)
        finally:
            _git(toplevel, "worktree", "remove", "--force", worktree)


def compare_baseline(after: VerifyRun, before: VerifyRun) -> dict[str, list[str]]:
    """Failures new after the migration, those that were there before, and those fixed."""
    bad = (Outcome.FAILED, Outcome.ERROR)
    now = {r.test_id for r in after.results if r.outcome in bad}
    then = {r.test_id for r in before.results if r.outcome in bad}
    passed_then = {r.test_id for r in before.results if r.outcome is Outcome.PASSED}
    return {
        "new": sorted(now - then),
        "already_failing": sorted(now & then),
        "fixed": sorted(
            (then - now) & {r.test_id for r in after.results if r.outcome is Outcome.PASSED}
        ),
        "passed_before": sorted(passed_then),
    }


def default_python() -> str:
    return sys.executable


# -------------------------------------------------------------------- command


@dataclass
class VerifyOutcome:
    """Everything `verify` found, for the report."""

    root: str
    environment: Environment
    target: str | None
    pins: list[dict[str, object]]
    tests: list[str]
    run: VerifyRun | None = None
    baseline: dict[str, list[str]] | None = None
    baseline_ref: str | None = None
    problem: str | None = None  # why the tests were not run (version mismatch...)
    allow_skips: bool = False
    # what the release notes of the migration's range say of the APIs a failure names:
    # test id -> sentences ("FlashInfer 0.7.4: fp4_quantize ...")
    explained: dict[str, list[str]] = field(default_factory=dict)
    explained_zh: dict[str, list[str]] = field(default_factory=dict)  # the same, in Chinese

    @property
    def exit_code(self) -> int:
        if self.problem is not None or self.run is None:
            return 2
        verdict = self.run.verdict
        if verdict is Verdict.PASSED:
            return 0
        if verdict is Verdict.FAILED:
            return 1
        if verdict is Verdict.ERROR:
            return 2
        return 0 if self.allow_skips else 3


def _public(version: str) -> str:
    return version.split("+", 1)[0]


def verify_command(
    paths: Sequence[str],
    tests: Sequence[str],
    to_version: str | None,
    python: str | None,
    allow_version_mismatch: bool,
    allow_skips: bool,
    baseline: str | None,
    output_format: str,
    extra: Sequence[str],
) -> tuple[int, str]:
    """Run `verify`; returns the exit code and the report to print. Raises `VerifyError` (a
    one-line error) when it cannot start: a missing path, no record and no --tests, a damaged
    record, an interpreter that cannot report its environment."""
    from migrate_fi.base.versions import VersionError, parse_version
    from migrate_fi.project.current import find_pins, project_root
    from migrate_fi.project.record import RecordError, read_record

    for p in [*paths, *(t.split("::")[0] for t in tests)]:
        if not os.path.exists(p):
            raise VerifyError(f"{p}: no such file or folder")
    root = project_root(paths[0])
    try:
        record = read_record(root)
    except RecordError as exc:
        raise VerifyError(str(exc)) from None
    target = to_version or (record.to_version if record else None)
    if target is not None:
        try:
            target = str(parse_version(target))
        except VersionError as exc:
            raise VerifyError(str(exc)) from None
    if tests:
        selected = [
            os.path.abspath(t.split("::")[0]) + (("::" + t.split("::", 1)[1]) if "::" in t else "")
            for t in tests
        ]
    elif record is None:
        raise VerifyError(
            f"{root}: no record of an apply here ({os.path.join('.migrate-fi', 'last-apply.json')});"
            " run `migrate-fi apply` first, or name the tests with --tests"
        )
    else:
        selected = select_tests(root, record.written)
    env = probe_environment(python or default_python())
    pins = [
        {"path": os.path.relpath(p.path, root), "line": p.line, "pin": f"{p.operator}{p.version}"}
        for p in find_pins([root])
    ]
    outcome = VerifyOutcome(
        root,
        env,
        target,
        pins,
        [os.path.relpath(t, root) for t in selected],
        allow_skips=allow_skips,
    )
    if target is not None and not allow_version_mismatch:
        installed = env.flashinfer
        if installed is None:
            outcome.problem = (
                f"flashinfer-python is not installed for {env.executable or 'this Python'};"
                f" the migration's target is {target} (--allow-version-mismatch runs anyway)"
            )
        elif str(parse_version(_public(installed))) != target:
            outcome.problem = (
                f"the installed flashinfer-python is {installed}, the migration's target is"
                f" {target}: install {target} (or pass --allow-version-mismatch)"
            )
    if outcome.problem is None:
        if not selected:
            outcome.run = VerifyRun([], 5, "")
        else:
            try:
                outcome.run = run_tests(python or default_python(), selected, root, extra)
                if baseline is not None:
                    before = baseline_run(
                        python or default_python(), root, baseline, selected, extra
                    )
                    outcome.baseline = compare_baseline(outcome.run, before)
                    outcome.baseline_ref = baseline
            except VerifyError as exc:
                outcome.problem = str(exc)
    if outcome.run is not None and record is not None and target is not None:
        said = explain_failures(outcome.run, record.from_version, target)
        outcome.explained = {test: [w.en for w in whys] for test, whys in said.items()}
        outcome.explained_zh = {test: [w.zh for w in whys] for test, whys in said.items()}
    return outcome.exit_code, render_verify(outcome, output_format)


def explain_failures(run: VerifyRun, from_version: str, to_version: str) -> dict[str, list[Said]]:
    """For each failed or errored test whose report names an API a release of the range
    changed in behaviour (the release notes, `migrate_fi.api.notes`), what the note says: a
    GPU refused, an input checked, is then told as the reason, not only as "failed"."""
    from migrate_fi.api.notes import Behaviour, NotesError, kind_said, notes_in_range
    from migrate_fi.base.versions import VersionError

    try:
        notes = [n for n in notes_in_range(from_version, to_version) if isinstance(n, Behaviour)]
    except (NotesError, VersionError):
        return {}
    out: dict[str, list[Said]] = {}
    for r in run.results:
        if r.outcome not in (Outcome.FAILED, Outcome.ERROR) or not r.detail:
            continue
        for note in notes:
            name = note.api.rsplit(".", 1)[-1].replace("()", "")
            if re.search(rf"\b{re.escape(name)}\b", r.detail):
                out.setdefault(r.test_id, []).append(
                    say(
                        "FlashInfer {release} changed {name} ({kind}): {what}",
                        "FlashInfer {release} 改变了 `{name}`（{kind}）：{what}",
                        release=note.release,
                        name=name,
                        kind=kind_said(note.kind),
                        what=Said(note.what, note.what_zh or "具体变化见发布说明"),
                    )
                )
    return out


def render_verify(outcome: VerifyOutcome, fmt: str) -> str:
    """The report of `migrate-fi verify`: environment, tests, results, verdict."""
    run = outcome.run
    verdict = "not run" if run is None else run.verdict.value
    if fmt == "json":
        doc: dict[str, object] = {
            "tool": "migrate-fi",
            "version": __version__,
            "command": "verify",
            "root": outcome.root,
            "environment": outcome.environment.to_json(),
            "target": outcome.target,
            "pins": outcome.pins,
            "tests": outcome.tests,
            "problem": outcome.problem,
            "verdict": verdict,
            "exit_code": outcome.exit_code,
            "results": [
                {
                    **r.to_json(),
                    "why": outcome.explained.get(r.test_id, []),
                    "why_zh": outcome.explained_zh.get(r.test_id, []),
                }
                for r in run.results
            ]
            if run
            else [],
            "counts": {o.value: run.count(o) for o in Outcome} if run else {},
            "baseline": (
                {"ref": outcome.baseline_ref, **outcome.baseline} if outcome.baseline else None
            ),
        }
        return json.dumps(doc, indent=2) + "\n"
    env = outcome.environment
    lines = ["Environment"]
    lines.append(f"  python      {env.python} ({env.executable})")
    if env.torch:
        lines.append(f"  torch       {env.torch}, CUDA {env.torch_cuda or 'none'}")
    else:
        lines.append(f"  torch       not importable ({env.torch_error or 'not installed'})")
    if env.gpus:
        for i, gpu in enumerate(env.gpus):
            lines.append(f"  GPU {i}       {gpu['name']} (compute capability {gpu['capability']})")
    else:
        lines.append("  GPU         none visible")
    target = f" (the migration's target: {outcome.target})" if outcome.target else ""
    lines.append(f"  flashinfer  {env.flashinfer or 'not installed'}{target}")
    for pin in outcome.pins:
        lines.append(f"  pin         {pin['path']}:{pin['line']} {pin['pin']}")
    lines.append(f"Tests ({len(outcome.tests)})")
    lines += [f"  {t}" for t in outcome.tests] or ["  none selected"]
    if outcome.problem:
        lines.append(f"Not run: {outcome.problem}")
        lines.append("Verdict: error")
        return "\n".join(lines) + "\n"
    assert run is not None
    lines.append("Results")
    for r in run.results:
        lines.append(f"  {r.outcome.value.upper():8} {r.test_id}")
        if r.detail and r.outcome is not Outcome.PASSED:
            label = "reason: " if r.outcome is Outcome.SKIPPED else ""
            lines += [f"           {label}{line}" for line in r.detail.splitlines()]
        lines += [f"           why: {why}" for why in outcome.explained.get(r.test_id, ())]
    if not run.results:
        lines.append("  no test was collected")
    if outcome.baseline is not None:
        b = outcome.baseline
        lines.append(f"Against {outcome.baseline_ref}")
        lines.append(f"  new failures:      {', '.join(b['new']) or 'none'}")
        lines.append(f"  already failing:   {', '.join(b['already_failing']) or 'none'}")
        lines.append(f"  fixed:             {', '.join(b['fixed']) or 'none'}")
    counts = ", ".join(f"{run.count(o)} {o.value}" for o in Outcome)
    if run.verdict.value == "nothing verified":
        note = " (with --allow-skips)" if outcome.allow_skips else ""
        lines.append(
            f"Verdict: nothing verified{note}: no selected test ran to completion ({counts});"
            " a skipped GPU test proves nothing"
        )
    else:
        lines.append(f"Verdict: {verdict} ({counts})")
    return "\n".join(lines) + "\n"
