"""End to end on whole fixture projects: every rule of a version range, together.

Each project under tests/fixtures/projects/<name>/ has an expected patch, <name>.diff, made by
`migrate-fi diff <name> <args>` from tests/fixtures/projects/ (the default --from comes from its
pins), and <name>.json: {"from": the version its pins name, "args": extra arguments}.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from migrate_fi.cli import cli

PROJECTS = Path(__file__).parent / "fixtures" / "projects"
# the projects with an expected patch (others serve single commands, e.g. verify's tests)
NAMES = sorted(
    p.name for p in PROJECTS.iterdir() if p.is_dir() and (PROJECTS / f"{p.name}.diff").exists()
)


def _invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture(params=NAMES)
def project(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    name = request.param
    shutil.copytree(PROJECTS / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    return name


def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_pipeline(project: str) -> None:
    root = Path(project)
    before = _snapshot(root)
    expect = json.loads((PROJECTS / f"{project}.json").read_text())
    args = expect.get("args", [])

    check = _invoke("check", "--output-format", "json", *args, project)
    found = json.loads(check.stdout)
    assert check.exit_code == 1
    assert found["from"] == expect["from"]  # read from the project's own pins

    diff = _invoke("diff", *args, project)
    assert diff.exit_code == 1
    expected = (PROJECTS / f"{project}.diff").read_text()
    assert diff.stdout == expected, f"regenerate {project}.diff if this change is intended"
    assert _snapshot(root) == before  # check and diff write nothing

    # check lists exactly the files the diff changes
    fixable_files = {d["path"] for d in found["diagnostics"] if d["fixable"]}
    diffed = {line[6:] for line in diff.stdout.splitlines() if line.startswith("+++ b/")}
    assert fixable_files == diffed

    applied = _invoke("apply", *args, project)
    manual = [d for d in found["diagnostics"] if not d["fixable"]]
    assert applied.exit_code == (1 if manual else 0)
    after = _snapshot(root)
    changed = {k for k in before if before[k] != after[k]}
    assert {str(Path(project) / k) for k in changed} == diffed

    # idempotent, and only the sites for a person remain
    origin = ["--from", expect["from"]]
    again = _invoke("apply", *origin, *args, project)
    assert _snapshot(root) == after
    assert "rewritten" not in again.stdout
    recheck = json.loads(
        _invoke("check", "--output-format", "json", *origin, *args, project).stdout
    )
    assert [d for d in recheck["diagnostics"] if d["fixable"]] == []
    assert len(recheck["diagnostics"]) == len(manual)
    # the pins moved too, and the migration stays in progress while sites are left for a
    # person: a plain check (no --from) still lists exactly those, and nothing else
    done = _invoke("check", "--output-format", "json", *args, project)
    assert done.exit_code == (1 if manual else 0), done.output
    assert json.loads(done.stdout)["diagnostics"] == recheck["diagnostics"]
    if not manual:
        assert "Nothing to migrate" in _invoke("check", *args, project).stderr
