"""`migrate-fi diff` produces a patch `git apply` takes, whatever the file's bytes and wherever
it lives: git applies a patch all or nothing, so one bad file would reject the whole upgrade."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from migrate_fi.cli import cli

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

LEGACY = (
    "from flashinfer import fp4_quantize\n"
    "\n"
    "\n"
    "def q(x, gs):\n"
    "    return fp4_quantize(x, gs[:1], 16, False, True, False, True)\n"
)
MIGRATED = LEGACY.replace("False, True)", "False, enable_pdl=True)")


def git(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)


def diff_and_apply(cwd: Path, target: str, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(cwd)
    r = CliRunner().invoke(cli, ["diff", "--from", "0.6.10", "--to", "0.6.11", target])
    assert r.exit_code == 1, r.output
    patch = repo / "change.patch"
    patch.write_bytes(r.stdout_bytes)
    checked = git(repo, "apply", "--check", "change.patch")
    assert checked.returncode == 0, checked.stderr.decode()
    assert git(repo, "apply", "change.patch").returncode == 0


@pytest.mark.parametrize(
    ("name", "data", "expected"),
    [
        ("bom.py", b"\xef\xbb\xbf" + LEGACY.encode(), b"\xef\xbb\xbf" + MIGRATED.encode()),
        (
            "latin1.py",
            ("# coding: latin-1\n# caf\xe9 flashinfer\n" + LEGACY).encode("latin-1"),
            ("# coding: latin-1\n# caf\xe9 flashinfer\n" + MIGRATED).encode("latin-1"),
        ),
        ("crlf.py", LEGACY.replace("\n", "\r\n").encode(), MIGRATED.replace("\n", "\r\n").encode()),
        ("no_eol.py", LEGACY.rstrip("\n").encode(), MIGRATED.rstrip("\n").encode()),
    ],
)
def test_git_applies_the_patch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, data: bytes, expected: bytes
) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / name).write_bytes(data)
    git(tmp_path, "init", "-q")
    diff_and_apply(tmp_path, "src", tmp_path, monkeypatch)
    assert (tmp_path / "src" / name).read_bytes() == expected


def test_a_target_outside_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "m.py").write_text(LEGACY)
    git(repo, "init", "-q")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # run from another folder, naming the repository by its absolute path: the patch names
    # the file relative to that repository's root, where it applies
    diff_and_apply(elsewhere, str(repo / "pkg"), repo, monkeypatch)
    assert (repo / "pkg" / "m.py").read_text() == MIGRATED


def test_a_target_outside_the_current_folder_and_any_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "m.py").write_text(LEGACY)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    if git(plain, "rev-parse", "--git-dir").returncode == 0:
        pytest.skip("the temporary folder is inside a git repository")
    # no repository to be relative to: the file is named from the file system's root, and the
    # patch applies from there (never `a//tmp/...`, which git refuses)
    monkeypatch.chdir(elsewhere)
    r = CliRunner().invoke(cli, ["diff", "--from", "0.6.10", "--to", "0.6.11", str(plain)])
    assert r.exit_code == 1, r.output
    name = str(plain / "m.py").lstrip("/")
    assert r.stdout.startswith(f"--- a/{name}\n+++ b/{name}\n")
    (tmp_path / "change.patch").write_bytes(r.stdout_bytes)
    checked = git(Path("/"), "apply", "--check", str(tmp_path / "change.patch"))
    assert checked.returncode == 0, checked.stderr.decode()
