"""git integration: `--changed-since REF` and `apply` refusing a dirty tree."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from migrate_fi.cli import cli

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

LEGACY = (
    "from flashinfer import fp4_quantize\n\n\n"
    "def q(x, gs):\n"
    "    return fp4_quantize(x, gs[:1], 16, False, True, False, True)\n"
)
FROM = ("--from", "0.6.10", "--to", "0.6.11")


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args], check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "config", "user.email", "t@example.com")
    git(tmp_path, "config", "user.name", "t")
    (tmp_path / "src").mkdir()
    for name in ("old.py", "touched.py", "gone.py"):
        (tmp_path / "src" / name).write_text(LEGACY)
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "base")
    return tmp_path


def test_changed_since_reads_only_changed_and_untracked_files(repo: Path) -> None:
    (repo / "src" / "touched.py").write_text(LEGACY + "\n")  # changed, not staged
    (repo / "src" / "new.py").write_text(LEGACY)  # untracked
    (repo / "src" / "gone.py").unlink()  # deleted: nothing to read
    (repo / ".gitignore").write_text("ignored.py\n")
    (repo / "src" / "ignored.py").write_text(LEGACY)
    r = invoke("check", *FROM, "--changed-since", "HEAD", "src")
    assert r.exit_code == 1
    found = sorted(line.split(":")[0] for line in r.stdout.splitlines())
    assert found == ["src/new.py", "src/touched.py"]
    assert "2 files scanned" in r.stderr


def test_changed_since_an_older_commit_counts_committed_changes(repo: Path) -> None:
    (repo / "src" / "touched.py").write_text(LEGACY + "\n")
    git(repo, "commit", "-q", "-am", "touch")
    r = invoke("check", *FROM, "--changed-since", "HEAD~1", "src")
    assert [line.split(":")[0] for line in r.stdout.splitlines()] == ["src/touched.py"]
    r = invoke("check", *FROM, "--changed-since", "HEAD", "src")
    assert r.exit_code == 0 and "Nothing to migrate: 0 files scanned" in r.stderr


def test_changed_since_errors_are_one_line(repo: Path, tmp_path_factory) -> None:
    r = invoke("check", *FROM, "--changed-since", "no-such-ref", "src")
    assert r.exit_code == 2
    assert r.stderr.startswith("migrate-fi: error: --changed-since: 'no-such-ref' is not a commit")
    outside = tmp_path_factory.mktemp("plain")
    (outside / "m.py").write_text(LEGACY)
    r = invoke("check", *FROM, "--changed-since", "HEAD", str(outside))
    assert r.exit_code == 2
    assert "needs a git repository" in r.stderr and "Traceback" not in r.output


def test_apply_refuses_a_dirty_tree_unless_allowed(repo: Path) -> None:
    (repo / "src" / "touched.py").write_text(LEGACY + "\n")
    r = invoke("apply", *FROM, "src")
    assert r.exit_code == 2
    assert "uncommitted changes in src/touched.py" in r.stderr and "--allow-dirty" in r.stderr
    assert (repo / "src" / "old.py").read_text() == LEGACY  # nothing written
    r = invoke("apply", *FROM, "--allow-dirty", "src")
    assert r.exit_code == 0, r.output
    assert "enable_pdl=True" in (repo / "src" / "old.py").read_text()


def test_untracked_files_make_the_tree_dirty_but_ignored_ones_do_not(repo: Path) -> None:
    (repo / ".gitignore").write_text("build/\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore")
    (repo / "build").mkdir()
    (repo / "build" / "x.py").write_text("x = 1\n")
    assert invoke("apply", *FROM, "src").exit_code == 0  # clean: it runs
    git(repo, "commit", "-q", "-am", "migrated")
    (repo / "src" / "new.py").write_text(LEGACY)
    r = invoke("apply", *FROM, "src")
    assert r.exit_code == 2 and "src/new.py" in r.stderr


def test_changes_outside_the_given_paths_do_not_count(repo: Path) -> None:
    (repo / "README.md").write_text("notes\n")  # untracked, but not under src/
    assert invoke("apply", *FROM, "src").exit_code == 0


def test_apply_outside_git_is_not_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(LEGACY)
    assert invoke("apply", *FROM, "m.py").exit_code == 0


def test_changed_since_follows_a_reexport_defined_in_an_unchanged_module(repo: Path) -> None:
    """The project wraps FlashInfer in a module that does not change; a changed file calls
    FlashInfer through it: the wrapper is read for its re-exports, and only the changed file
    is reported."""
    pkg = repo / "src" / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "kernels.py").write_text("from flashinfer import fp4_quantize as quantize\n")
    (pkg / "unrelated.py").write_text(LEGACY)  # unchanged, with a site: not reported
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "wrapper")
    (pkg / "user.py").write_text(
        "from pkg.kernels import quantize\n\n\n"
        "def q(x, gs):\n"
        "    return quantize(x, gs[:1], 16, False, True, False, True)\n"
    )
    r = invoke("check", *FROM, "--changed-since", "HEAD", "src")
    assert r.exit_code == 1, r.output
    assert [line.split(":")[0] for line in r.stdout.splitlines()] == ["src/pkg/user.py"]
    assert "1 file scanned" in r.stderr
    r = invoke("apply", *FROM, "--allow-dirty", "--changed-since", "HEAD", "src")
    assert r.exit_code == 0, r.output
    assert "False, enable_pdl=True)" in (pkg / "user.py").read_text()
    assert (pkg / "unrelated.py").read_text() == LEGACY  # never written
    assert (pkg / "kernels.py").read_text() == "from flashinfer import fp4_quantize as quantize\n"
