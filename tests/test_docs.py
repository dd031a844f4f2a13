"""The documents users read: a short README whose commands run as shown, links that lead
somewhere, and no words of the team's own process anywhere in the repository."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
README = (ROOT / "README.md").read_text()
DEMO = ROOT / "tests" / "fixtures" / "projects" / "demo"

# the team's process words: numbered stops and issues, its sessions of work (a GitHub address
# of an issue or pull request of another project is a citation, not a process word)
PROCESS = re.compile(r"\b(?:stops?|issues?) #?\d+\b|\bwork\s+sessions?\b", re.IGNORECASE)
CITATION = re.compile(r"https?://\S+/(?:issues|pull)/\d+")
TEXT = (".md", ".py", ".toml", ".txt", ".sh", ".yaml", ".yml", ".cfg", ".json", ".diff")
SKIPPED = {".git", ".venv", "build", "dist", "__pycache__", ".mypy_cache", ".ruff_cache"}


def _blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, re.DOTALL)


def test_the_readme_is_a_short_guide() -> None:
    assert len(README.splitlines()) <= 250
    for heading in ("## Set up and try it", "## Quick start on your project", "## Commands"):
        assert heading in README


def test_no_process_words_in_the_repository() -> None:
    found = []
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIPPED and not d.endswith(".egg-info")]
        for name in files:
            path = Path(folder, name)
            if not name.endswith(TEXT) or path.stat().st_size > 2_000_000:
                continue
            text = CITATION.sub("", path.read_text(encoding="utf-8", errors="replace"))
            found += [f"{path.relative_to(ROOT)}: {m.group(0)}" for m in PROCESS.finditer(text)]
    assert found == []


def test_every_document_a_link_names_is_there() -> None:
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text()):
            assert (page.parent / target).exists(), f"{page.name} links {target}"


def _commands(block: str) -> list[list[str]]:
    out = []
    for line in block.splitlines():
        line = line.split("  #", 1)[0].strip()
        if line.startswith("migrate-fi "):
            out.append(shlex.split(line.split(" > ", 1)[0]))
    return out


def test_every_command_of_the_readme_exists_with_its_options() -> None:
    commands = [c for block in _blocks(README, "sh") for c in _commands(block)]
    assert len(commands) >= 15
    for argv in commands:
        words = [a for a in argv[1:] if not a.startswith("-")]
        sub = words[:2] if words[:1] == ["signatures"] else words[:1]
        r = subprocess.run(
            [sys.executable, "-m", "migrate_fi", *sub, "--help"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert r.returncode == 0, (argv, r.stderr)
        for option in (a.split("=", 1)[0] for a in argv if a.startswith("--")):
            assert option in r.stdout, (argv, option)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_quick_start_runs_as_shown_on_the_demo(tmp_path: Path) -> None:
    (block,) = [b for b in _blocks(README, "sh") if "migrate-fi finish" in b and "git add" in b]
    project = tmp_path / "demo"
    shutil.copytree(DEMO, project)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    for setup in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "init"]):
        subprocess.run(setup, cwd=project, check=True, env=env, capture_output=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "migrate-fi").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m migrate_fi "$@"\n')
    (bin_dir / "migrate-fi").chmod(0o755)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    for line in block.splitlines():
        command = line.split("  #", 1)[0].strip()
        r = subprocess.run(
            command, shell=True, cwd=project, env=env, capture_output=True, text=True, check=False
        )
        assert r.returncode in (0, 1), (command, r.stderr)
        assert "Traceback" not in r.stderr and "error:" not in r.stderr, (command, r.stderr)
    log = subprocess.run(
        ["git", "show", "--stat", "HEAD"], cwd=project, capture_output=True, text=True, check=True
    )
    assert ".migrate-fi/last-apply.json" in log.stdout  # the record went into the commit
