"""The pre-commit hooks (.pre-commit-hooks.yaml), tried with pre-commit itself in a test
repository: `pre-commit try-repo` installs this checkout into a hook environment, as a user's
`.pre-commit-config.yaml` would."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LEGACY = (
    "from flashinfer import fp4_quantize\n\n\n"
    "def q(x, gs):\n"
    "    return fp4_quantize(x, gs[:1], 16, False, True, False, True)\n\n\n"
    "def forwarded(*args):\n"
    "    return fp4_quantize(*args)\n"
)

pytestmark = [
    pytest.mark.skipif(shutil.which("git") is None, reason="needs git"),
    pytest.mark.skipif(not (ROOT / ".git").exists(), reason="needs a git checkout of migrate-fi"),
]


def pre_commit(project: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("pre_commit", reason="pre-commit is not installed")
    env = {**os.environ, "PRE_COMMIT_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), *args, "--all-files"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def git(project: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(project), *args], check=True, capture_output=True)


@pytest.mark.slow
def test_check_and_apply_hooks(tmp_path: Path) -> None:
    project, home = tmp_path / "project", tmp_path / "pre-commit-home"
    project.mkdir()
    git(project, "init", "-q", "-b", "main")
    git(project, "config", "user.email", "t@example.com")
    git(project, "config", "user.name", "t")
    (project / "m.py").write_text(LEGACY)
    (project / "requirements.txt").write_text("flashinfer-python==0.6.10\n")
    (project / "notes.md").write_text("no code here\n")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "base")

    checked = pre_commit(project, home, "migrate-fi-check", "--verbose")
    out = checked.stdout + checked.stderr
    assert checked.returncode == 1, out
    assert "migrate-fi check" in out and "Failed" in out
    assert "m.py:5:12: FI001" in out and "requirements.txt:1:20: FI006" in out
    assert (project / "m.py").read_text() == LEGACY  # check writes nothing

    applied = pre_commit(project, home, "migrate-fi-apply")
    out = applied.stdout + applied.stderr
    assert applied.returncode == 1, out  # pre-commit fails a hook that modified files
    assert "files were modified by this hook" in out
    assert "enable_pdl=True" in (project / "m.py").read_text()
    assert "flashinfer-python==" in (project / "requirements.txt").read_text()
    assert "==0.6.10" not in (project / "requirements.txt").read_text()

    # what is left is for a person: a call whose arguments are unpacked (FI001); once
    # checked and marked, the gate opens
    git(project, "add", "-A")
    left = pre_commit(project, home, "migrate-fi-check", "--verbose")
    assert left.returncode == 1 and "FI001" in left.stdout + left.stderr
    lines = (project / "m.py").read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if "fp4_quantize(*args)" in line)
    lines[at] = lines[at].rstrip("\n") + "  # migrate-fi: ignore[FI001]\n"
    (project / "m.py").write_text("".join(lines))
    git(project, "add", "-A")
    again = pre_commit(project, home, "migrate-fi-check")
    assert again.returncode == 0, again.stdout + again.stderr
