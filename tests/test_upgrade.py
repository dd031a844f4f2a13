"""`migrate-fi upgrade`: the whole flow on a copy of the demo under git, on a machine with no GPU."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROJECTS = Path(__file__).parent / "fixtures" / "projects"


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), "-c", "user.email=t@x", "-c", "user.name=t", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def _upgrade(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "migrate_fi", "upgrade", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    root = tmp_path / "demo"
    shutil.copytree(PROJECTS / "demo", root)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "before")
    return root


def test_upgrade_runs_every_step_it_can_then_only_person_sites_are_left(demo: Path) -> None:
    first = _upgrade(demo)
    assert first.returncode == 1, first.stderr  # sites left for a person
    steps = [line for line in first.stderr.splitlines() if line.startswith("[")]
    assert steps == [
        "[1/5] plan",
        "[2/5] apply",
        "[3/5] left for a person",
        "[4/5] verify",
        "[5/5] report",
    ]
    assert "rewrote 9 files (11 fixes)" in first.stderr
    assert "on the GPU machine: migrate-fi verify --baseline HEAD" in first.stderr
    assert len(first.stdout.splitlines()) == 3  # the person sites, one per line
    report = (demo / ".migrate-fi" / "report.md").read_text()
    assert report.startswith("# Upgrade FlashInfer 0.6.8.post1 -> 0.7.4\n")
    assert "11 changes by migrate-fi in 9 files; 3 sites left for a person." in report
    # the record goes into the migration's commit; the report draft does not
    status = _git(demo, "status", "--porcelain", "--untracked-files=all", "--", ".migrate-fi")
    assert status == "?? .migrate-fi/.gitignore\n?? .migrate-fi/last-apply.json\n"
    # a second upgrade, before the changes are committed: nothing left but the person sites
    second = _upgrade(demo)
    assert second.returncode == 1, second.stderr
    assert "rewrote 0 files (0 fixes)" in second.stderr

    def sites(out: str) -> list[tuple[str, str]]:  # (file, code): lines move with the rewrite
        return [(line.split(":")[0], line.split(": ")[1].split()[0]) for line in out.splitlines()]

    assert sites(second.stdout) == sites(first.stdout)
    # the report after apply describes the whole migration from the commit it started from
    # (its record says which): what upgrade wrote before writing, and which commit
    after = subprocess.run(
        [sys.executable, "-m", "migrate_fi", "report"], cwd=demo, capture_output=True, text=True
    )
    start = _git(demo, "rev-parse", "HEAD").strip()
    said = f"Described against commit `{start[:12]}`, where the migration started"
    assert said in after.stdout
    assert [p for p in after.stdout.split("\n\n") if not p.startswith(said)] == report.split("\n\n")


def test_a_change_of_the_users_own_stops_it_at_the_plan(demo: Path) -> None:
    (demo / "NOTES.md").write_text("work in progress\n")
    r = _upgrade(demo)
    assert r.returncode == 2
    assert "uncommitted changes in NOTES.md" in r.stderr
    assert _git(demo, "status", "--porcelain") == "?? NOTES.md\n"  # nothing rewritten


def test_dry_run_writes_nothing_and_prints_the_report(demo: Path) -> None:
    r = _upgrade(demo, "--dry-run")
    assert r.returncode == 1
    assert "would rewrite 9 files (11 fixes)" in r.stderr
    assert "# Upgrade FlashInfer 0.6.8.post1 -> 0.7.4" in r.stdout
    assert _git(demo, "status", "--porcelain") == ""
