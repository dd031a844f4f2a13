"""A migration stays a migration until it is done: after `apply` moved the pins, `check` keeps
reporting the sites left for a person; an apply stopped halfway leaves the old pins and a
record; the record never blocks the next apply under git; `finish` ends it."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from migrate_fi.cli import ApplyInterrupted, _terminate, cli, interruption_lines
from migrate_fi.editing import sources
from migrate_fi.project.record import read_record

DEMO = Path(__file__).parent / "fixtures" / "projects" / "demo"
SITE = re.compile(r"^(?P<path>[^:\s]+):(?P<line>\d+):\d+: (?P<code>FI\d{3}) ", re.MULTILINE)

LEGACY = (
    "from flashinfer import fp4_quantize\n\n\n"
    "def q{n}(x, gs):\n"
    "    return fp4_quantize(x, gs[:1], 16, False, True, False, True)\n"
)


pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def sites(output: str) -> set[tuple[str, str, str]]:
    return {(m["path"], m["line"], m["code"]) for m in SITE.finditer(output)}


@pytest.fixture
def demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "demo"
    shutil.copytree(DEMO, root)
    monkeypatch.chdir(root)
    return root


def test_check_after_apply_lists_exactly_the_sites_left_then_suppressed_then_finished(
    demo: Path,
) -> None:
    applied = invoke("apply", ".")
    assert applied.exit_code == 1
    left = sites(applied.stdout)
    assert left and {code for _, _, code in left} <= {"FI001", "FI003", "FI012"}
    checked = invoke("check", ".")
    assert checked.exit_code == 1, checked.output
    assert sites(checked.stdout) == left  # exactly what apply left, nothing fixed comes back
    assert "migration 0.6.8.post1 -> 0.7.4 in progress" in checked.stderr
    for diff_or_plan in (invoke("diff", "."), invoke("plan", ".")):
        assert diff_or_plan.exit_code in (0, 1), diff_or_plan.output
    assert "FlashInfer now: 0.6.8.post1 (the migration in progress)" in invoke("plan", ".").stdout
    # `finish` refuses while sites are left
    refused = invoke("finish", ".")
    assert refused.exit_code == 1 and "is not finished: 3 site(s) left" in refused.stderr
    # a person checks each site and marks it
    for path, line, code in left:
        file = demo / path
        lines = file.read_text().splitlines(keepends=True)
        n = int(line) - 1
        lines[n] = lines[n].rstrip("\n") + f"  # migrate-fi: ignore[{code}]\n"
        file.write_text("".join(lines))
    clean = invoke("check", ".")
    assert clean.exit_code == 0, clean.output
    done = invoke("finish", ".")
    assert done.exit_code == 0 and "finished" in done.stdout
    assert read_record(str(demo)) is None  # `finish` removes the record
    after = invoke("check", ".")
    assert after.exit_code == 0 and "in progress" not in after.stderr


def test_apply_that_leaves_nothing_records_a_finished_migration(demo: Path) -> None:
    invoke("apply", "--select", "FI006", ".")
    record = read_record(str(demo))
    assert record is not None and not record.in_progress and record.left == 0
    assert invoke("check", "--select", "FI006", ".").exit_code == 0


REAL_COMMIT = sources.PreparedWrite.commit


def _interrupt_after(monkeypatch: pytest.MonkeyPatch, stop: str) -> list[str]:
    """Send this process SIGTERM (handled as the command line handles it) while apply writes
    the file whose name ends with ``stop``; returns the list of written paths."""
    written: list[str] = []

    def commit(self: sources.PreparedWrite) -> None:
        REAL_COMMIT(self)
        written.append(self.path)
        if self.path.endswith(stop):
            os.kill(os.getpid(), signal.SIGTERM)  # held until the file is written and recorded

    monkeypatch.setattr(sources.PreparedWrite, "commit", commit)
    signal.signal(signal.SIGTERM, _terminate)
    return written


@pytest.fixture(autouse=True)
def _restore_sigterm() -> Iterator[None]:
    previous = signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGTERM, previous)


def _stopped_apply(*args: str) -> ApplyInterrupted:
    """Run apply in this process, as main() does; the interruption it ended with."""
    with pytest.raises(click.Abort) as aborted:  # (click wraps a KeyboardInterrupt)
        CliRunner().invoke(cli, ["apply", *args], catch_exceptions=False, standalone_mode=False)
    cause = aborted.value.__cause__
    assert isinstance(cause, ApplyInterrupted)
    return cause


def _project(root: Path, files: int = 30) -> None:
    (root / "pyproject.toml").write_text(
        '[project]\nname = "p"\ndependencies = ["flashinfer-python==0.6.10"]\n'
    )
    (root / "requirements.txt").write_text("flashinfer-python==0.6.10\n")
    for i in range(files):
        (root / "pkg").mkdir(exist_ok=True)
        (root / "pkg" / f"m{i:02}.py").write_text(LEGACY.format(n=i))


def test_an_apply_stopped_after_its_first_pin_write_leaves_every_site_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _project(tmp_path)
    before = invoke("check", "--to", "0.6.11", ".")
    assert before.exit_code == 1
    written = _interrupt_after(monkeypatch, "pyproject.toml")
    stopped = _stopped_apply("--to", "0.6.11", ".")
    # code went first: the 30 modules, then the first pin file; requirements.txt never
    assert [Path(p).name for p in written][-1] == "pyproject.toml"
    assert len(written) == 31
    assert stopped.signal_name == "SIGTERM"
    record = read_record(str(tmp_path))
    assert record is not None and record.in_progress and record.interrupted == "SIGTERM"
    assert len(record.written) == 31  # the whole list, not the first 20
    monkeypatch.setattr(sources.PreparedWrite, "commit", REAL_COMMIT)
    after = invoke("check", "--to", "0.6.11", ".")
    assert after.exit_code == 1, after.output
    # what was not written is still found: the other pin
    assert ("requirements.txt", "1", "FI006") in sites(after.stdout)
    assert "interrupted by SIGTERM" in after.stderr
    # the next apply finishes the job
    again = invoke("apply", "--to", "0.6.11", ".")
    assert again.exit_code == 0, again.output
    assert (tmp_path / "requirements.txt").read_text() == "flashinfer-python==0.6.11\n"
    record = read_record(str(tmp_path))
    assert record is not None and not record.in_progress and len(record.written) == 32


def test_an_apply_stopped_before_any_pin_keeps_the_old_pins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _project(tmp_path)
    _interrupt_after(monkeypatch, "m04.py")
    _stopped_apply("--to", "0.6.11", ".")
    monkeypatch.setattr(sources.PreparedWrite, "commit", REAL_COMMIT)
    assert "0.6.10" in (tmp_path / "pyproject.toml").read_text()
    after = invoke("check", "--to", "0.6.11", ".")
    found = sites(after.stdout)
    unwritten = {f"pkg/m{i:02}.py" for i in range(5, 30)}
    assert {p for p, _, c in found if c == "FI001"} == unwritten
    assert {p for p, _, c in found if c == "FI006"} == {"pyproject.toml", "requirements.txt"}


def test_interrupted_apply_message_names_the_signal_and_every_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _project(tmp_path, files=25)
    _interrupt_after(monkeypatch, "requirements.txt")
    with pytest.raises(click.Abort) as aborted:
        CliRunner().invoke(
            cli, ["apply", "--to", "0.6.11", "."], catch_exceptions=False, standalone_mode=False
        )
    shown = interruption_lines(aborted.value)  # what main() prints for it
    text = "\n".join(shown)
    assert "interrupted (SIGTERM)" in text and "Ctrl-C" not in text
    assert "27 file(s) were rewritten" in text
    assert "the record .migrate-fi/last-apply.json lists them" in text
    assert sum(1 for line in shown if line.startswith("  rewritten: ")) == 27


@pytest.mark.parametrize("command", ["apply", "upgrade"])
def test_an_interruption_after_the_writes_still_names_every_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """A signal that comes once every file is written (while the sites left are printed, or
    verify runs) is not "no file was written": the message lists what the writes did, and the
    record was written whole."""
    import migrate_fi.cli as cli_module
    from migrate_fi.cli import Terminated

    monkeypatch.chdir(tmp_path)
    _project(tmp_path, files=5)

    def late(*args: object, **kwargs: object) -> None:
        raise Terminated()

    # (apply prints what is left after writing; upgrade runs verify after writing)
    monkeypatch.setattr(cli_module, "_finish" if command == "apply" else "_can_verify", late)
    args = ["apply", "--to", "0.6.11", "."] if command == "apply" else ["upgrade", "--to", "0.6.11"]
    with pytest.raises(click.Abort) as aborted:
        CliRunner().invoke(cli, args, catch_exceptions=False, standalone_mode=False)
    text = "\n".join(interruption_lines(aborted.value))
    assert "interrupted (SIGTERM): 7 file(s) were rewritten" in text, text
    assert read_record(str(tmp_path)) is not None


# ------------------------------------------------------------------ git


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args], check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    if shutil.which("git") is None:
        pytest.skip("needs git")
    root = tmp_path / "repo"
    root.mkdir()
    _project(root, files=3)
    (root / "requirements.txt").write_text("flashinfer-python==0.6.12\nflashinfer-cubin==0.6.12\n")
    (root / "pyproject.toml").write_text(
        '[project]\nname = "p"\ndependencies = ["flashinfer-python==0.6.12"]\n'
    )
    _git(root, "init", "-q")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    monkeypatch.chdir(root)
    return root


def test_stepwise_migration_under_git_is_never_blocked_by_the_record(repo: Path) -> None:
    first = invoke("apply", "--to", "0.6.14", ".")
    assert first.exit_code == 1, first.output  # the cubin pin is left for a person
    # the record is part of the migration's commit
    assert "?? .migrate-fi/last-apply.json" in _git(
        repo, "status", "--porcelain", "--untracked-files=all"
    )
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "0.6.14")
    # the lagging cubin pin is a finding, never a fatal "pins disagree"
    for command in ("check", "diff", "plan"):
        r = invoke(command, ".")
        assert r.exit_code in (0, 1), (command, r.output)
        assert "disagree" not in r.output
    second = invoke("apply", "--to", "0.7.4", ".")
    assert second.exit_code in (0, 1), second.output
    assert "uncommitted" not in second.output
    assert "flashinfer-python==0.7.4" in (repo / "requirements.txt").read_text()
    record = json.loads((repo / ".migrate-fi" / "last-apply.json").read_text())
    assert record["from"] == "0.6.12" and record["to"] == "0.7.4"


def test_a_committed_record_does_not_make_the_tree_dirty(repo: Path) -> None:
    invoke("apply", "--to", "0.6.14", ".")
    _git(repo, "add", ".migrate-fi/last-apply.json")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "step")
    invoke("apply", "--to", "0.6.15", ".")  # rewrites the committed record
    _git(repo, "add", "pyproject.toml", "requirements.txt", "pkg")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "0.6.15")
    assert "last-apply.json" in _git(repo, "status", "--porcelain")
    r = invoke("apply", "--to", "0.7.4", ".")
    assert "uncommitted" not in r.output, r.output


# ------------------------------------------------------ the record in the repository


def _commit_all(root: Path, message: str) -> None:
    _git(root, "add", "-A")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message)


def _clone(source: Path, target: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    subprocess.run(["git", "clone", "-q", str(source), str(target)], check=True)
    monkeypatch.chdir(target)
    return target


def test_a_fresh_clone_of_the_migration_commit_keeps_the_migration_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if shutil.which("git") is None:
        pytest.skip("needs git")
    work = tmp_path / "work"
    shutil.copytree(DEMO, work)
    _git(work, "init", "-q")
    _commit_all(work, "init")
    monkeypatch.chdir(work)
    applied = invoke("apply", ".")
    assert applied.exit_code == 1
    left = {(p, c) for p, _, c in sites(applied.stdout)}
    assert len(left) == 3  # FI001 and FI003 (a 0.7.4 error where Hopper got garbage is not one)
    _commit_all(work, "migrate")
    clone = _clone(work, tmp_path / "clone", monkeypatch)
    checked = invoke("check", ".")
    assert checked.exit_code == 1, checked.output  # CI's gate stays closed
    assert {(p, c) for p, _, c in sites(checked.stdout)} == left
    assert "in progress" in checked.stderr
    # a person decides every site, in the clone; then `finish` ends it and removes the record
    for path, line, code in sites(checked.stdout):
        file = clone / path
        lines = file.read_text().splitlines(keepends=True)
        lines[int(line) - 1] = (
            lines[int(line) - 1].rstrip("\n") + f"  # migrate-fi: ignore[{code}]\n"
        )
        file.write_text("".join(lines))
    assert invoke("finish", ".").exit_code == 0
    assert not (clone / ".migrate-fi" / "last-apply.json").exists()
    _commit_all(clone, "finish")
    again = _clone(clone, tmp_path / "again", monkeypatch)
    assert invoke("check", str(again)).exit_code == 0


def test_the_ignore_file_of_earlier_releases_is_replaced(demo: Path) -> None:
    folder = demo / ".migrate-fi"
    folder.mkdir()
    (folder / ".gitignore").write_bytes(
        b"# written by migrate-fi: its record stays out of commits unless added with -f\n*\n"
    )
    invoke("apply", ".")
    assert (folder / ".gitignore").read_text().splitlines()[1:] == ["report.md"]
    # a file of the user's own is never touched
    (folder / ".gitignore").write_text("*\n")
    invoke("apply", ".")
    assert (folder / ".gitignore").read_text() == "*\n"


def _legacy_project(root: Path) -> None:
    (root / "pkg").mkdir(parents=True)
    (root / "requirements.txt").write_text("flashinfer-python==0.6.10\n")
    for name in ("a", "b", "c"):
        (root / "pkg" / f"{name}.py").write_text(LEGACY.format(n=name))


def test_a_read_only_file_keeps_the_migration_open_until_an_apply_migrates_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _legacy_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg" / "b.py").chmod(0o444)
    applied = invoke("apply", "--to", "0.6.14", ".")
    assert applied.exit_code == 2
    assert "flashinfer-python==0.6.14" in (tmp_path / "requirements.txt").read_text()
    record = read_record(str(tmp_path))
    assert record is not None and record.in_progress
    assert [p.path for p in record.pending] == ["pkg/b.py"]
    (tmp_path / "pkg" / "b.py").chmod(0o644)
    checked = invoke("check", ".")
    assert checked.exit_code == 1
    assert ("pkg/b.py", "5", "FI001") in sites(checked.stdout)
    assert "pkg/b.py: not migrated yet" in checked.stderr
    assert invoke("finish", ".").exit_code == 1
    assert invoke("apply", ".").exit_code == 0
    assert "enable_pdl=True" in (tmp_path / "pkg" / "b.py").read_text()
    record = read_record(str(tmp_path))
    assert record is not None and not record.pending and not record.in_progress
    assert invoke("check", "--to", "0.6.14", ".").exit_code == 0


def test_a_file_that_did_not_parse_is_migrated_once_it_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _legacy_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    broken = tmp_path / "pkg" / "c.py"
    good = broken.read_text()
    broken.write_text("def broken(:\n" + good)
    assert invoke("apply", "--to", "0.6.14", ".").exit_code == 2
    record = read_record(str(tmp_path))
    assert record is not None and record.in_progress
    assert [p.path for p in record.pending] == ["pkg/c.py"]
    assert "syntax error" in record.pending[0].reason
    broken.write_text(good)  # the person mends it; the pins already say 0.6.14
    checked = invoke("check", ".")
    assert checked.exit_code == 1, checked.output
    assert ("pkg/c.py", "5", "FI001") in sites(checked.stdout)
    assert invoke("apply", ".").exit_code == 0
    assert invoke("check", "--to", "0.6.14", ".").exit_code == 0


def test_a_pending_file_alone_keeps_check_failing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Named by check (exit 1) even where the rules find nothing in it any more."""
    _legacy_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    broken = tmp_path / "pkg" / "c.py"
    broken.write_text("from flashinfer import fp4_quantize\ndef broken(:\n")
    assert invoke("apply", "--to", "0.6.14", ".").exit_code == 2
    broken.write_text("from flashinfer import fp4_quantize\n")
    checked = invoke("check", ".")
    assert checked.exit_code == 1 and not sites(checked.stdout)
    assert "pkg/c.py: not migrated yet" in checked.stderr
    assert invoke("apply", ".").exit_code == 0
    assert invoke("check", "--to", "0.6.14", ".").exit_code == 0


DOCKERFILE = (
    "FROM python:3.11\n"
    "ARG FLASHINFER_VERSION=0.6.12\n"
    "RUN pip install flashinfer-python==${FLASHINFER_VERSION}"
    " flashinfer-cubin==${FLASHINFER_VERSION}\n"
)


def test_a_site_the_moved_pins_hide_from_the_rules_stays_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "requirements.txt").write_text("flashinfer-python==0.6.12\n")
    (tmp_path / "Dockerfile").write_text(DOCKERFILE)
    monkeypatch.chdir(tmp_path)
    before = invoke("check", "--to", "0.7.4", ".")
    cubin = {s for s in sites(before.stdout) if s[0] == "Dockerfile" and s[1] == "3"}
    assert len(cubin) == 1
    assert invoke("apply", "--to", "0.7.4", ".").exit_code == 1
    assert "FLASHINFER_VERSION=0.7.4" in (tmp_path / "Dockerfile").read_text()
    after = invoke("check", ".")
    assert after.exit_code == 1 and sites(after.stdout) == cubin
    line = next(line for line in after.stdout.splitlines() if line.startswith("Dockerfile:3:"))
    assert line.startswith("Dockerfile:3:58: FI006 flashinfer-cubin takes its version")
    assert invoke("finish", ".").exit_code == 1
    # the person gives the cubin its index: the line changed, the site is resolved
    text = (tmp_path / "Dockerfile").read_text()
    (tmp_path / "Dockerfile").write_text(
        text.replace(
            "RUN pip install", "RUN pip install --extra-index-url https://flashinfer.ai/whl"
        )
    )
    assert invoke("check", ".").exit_code == 0
    assert invoke("finish", ".").exit_code == 0


def test_a_carried_site_is_silenced_by_its_comment_without_an_unused_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "requirements.txt").write_text("flashinfer-python==0.6.12\n")
    (tmp_path / "Dockerfile").write_text(DOCKERFILE)
    monkeypatch.chdir(tmp_path)
    invoke("apply", "--to", "0.7.4", ".")
    text = (tmp_path / "Dockerfile").read_text()
    (tmp_path / "Dockerfile").write_text(text.rstrip("\n") + "  # migrate-fi: ignore[FI006]\n")
    checked = invoke("check", ".")
    assert checked.exit_code == 0, checked.output
    assert invoke("finish", ".").exit_code == 0


def test_the_next_apply_continues_an_interrupted_one_under_git(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _interrupt_after(monkeypatch, "m01.py")
    stopped = _stopped_apply("--from", "0.6.10", "--to", "0.7.4", ".")
    assert stopped.written  # it wrote some files, then stopped
    monkeypatch.undo()
    monkeypatch.chdir(repo)
    resumed = invoke("apply", "--from", "0.6.10", "--to", "0.7.4", ".")
    assert "uncommitted" not in resumed.output, resumed.output
    assert resumed.exit_code in (0, 1)
    record = read_record(str(repo))
    assert record is not None and record.interrupted is None
    assert "m01.py" in " ".join(record.written)
    # (the pins say 0.6.12, the run migrates from 0.6.10: they disagree, so they are left)
    assert "flashinfer-python==0.6.12" in (repo / "requirements.txt").read_text()


def test_a_persons_edit_of_a_file_the_migration_wrote_still_stops_apply(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _interrupt_after(monkeypatch, "m01.py")
    stopped = _stopped_apply("--from", "0.6.10", "--to", "0.7.4", ".")
    monkeypatch.undo()
    monkeypatch.chdir(repo)
    edited = Path(stopped.written[0])
    edited.write_text(edited.read_text() + "# a person's note\n")
    refused = invoke("apply", "--from", "0.6.10", "--to", "0.7.4", ".")
    assert refused.exit_code == 2 and "uncommitted changes in" in refused.output
    assert os.path.relpath(edited, repo) in refused.output


def test_recorded_sites_name_their_lines_as_apply_left_them(demo: Path) -> None:
    """A site on a line a fix rewrote is recorded with the rewritten text, where it now is."""
    invoke("apply", ".")
    record = read_record(str(demo))
    assert record is not None and len(record.sites) == 3
    for site in record.sites:
        lines = (demo / site.path).read_text().splitlines()
        assert "\n".join(lines[site.line - 1 : site.end_line]) == site.text
    assert any("enable_pdl=pdl" in site.text for site in record.sites)  # FI001 fixed that line
    before = (demo / ".migrate-fi" / "last-apply.json").read_bytes()
    invoke("apply", "--from", "0.6.8.post1", ".")
    assert (demo / ".migrate-fi" / "last-apply.json").read_bytes() == before  # idempotent


def test_two_sites_of_one_rule_on_one_line_keep_their_own_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two names of one import that the target lacks are two sites of one rule on the same
    lines: an apply run again keeps each with its own message (not one of them twice), and
    rewrites nothing, the record included."""
    root = tmp_path / "p"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "a2a.py").write_text(
        "try:\n"
        "    from flashinfer.comm import MoeAlltoAll, moe_a2a_get_workspace_size_per_rank\n"
        "except ImportError:\n"
        "    MoeAlltoAll = None\n"
    )
    (root / "requirements.txt").write_text("flashinfer-python==0.6.8.post1\n")
    monkeypatch.chdir(root)
    assert invoke("apply", "--to", "0.7.4", ".").exit_code == 1
    record = root / ".migrate-fi" / "last-apply.json"
    first = record.read_bytes()
    messages = [s["message"] for s in json.loads(first)["sites_left"]]
    assert len(messages) == 2 and len(set(messages)) == 2, messages
    assert invoke("apply", "--to", "0.7.4", ".").exit_code == 1
    assert record.read_bytes() == first
