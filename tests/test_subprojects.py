"""A tree of projects pinned to different releases is migrated project by project, each from
its own pins; `--from` never rewrites a project that pins a newer release."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from migrate_fi.cli import cli

OLD_CALL = "fp4_quantize(x, gs[:1], 16, False, True, False, True)"  # written for 0.6.10
NEW_CALL = "fp4_quantize(x, gs[:1], 16, False, True, False, 7)"  # written for 0.6.14: right
BODY = "from flashinfer import fp4_quantize\n\n\ndef q(x, gs):\n    return {}\n"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def project(folder: Path, version: str, call: str) -> None:
    (folder / "pkg").mkdir(parents=True)
    (folder / "pyproject.toml").write_text(
        f'[project]\nname = "{folder.name}"\ndependencies = ["flashinfer-python=={version}"]\n'
    )
    (folder / "pkg" / "m.py").write_text(BODY.format(call))


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    project(tmp_path / "old", "0.6.10", OLD_CALL)
    project(tmp_path / "new", "0.6.14", NEW_CALL)
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "t.py").write_text(BODY.format(OLD_CALL))  # in no project
    monkeypatch.chdir(tmp_path)
    return tmp_path


def sites(result: Result) -> set[tuple[str, str]]:
    return {(d["path"], d["code"]) for d in json.loads(result.stdout)["diagnostics"]}


def test_each_project_is_checked_from_its_own_pins(tree: Path) -> None:
    r = invoke("check", "--to", "0.6.15", "--output-format", "json", ".")
    assert r.exit_code == 1, r.output
    assert sites(r) == {
        ("old/pkg/m.py", "FI001"),
        ("old/pyproject.toml", "FI006"),
        ("new/pyproject.toml", "FI006"),
    }
    text = invoke("check", "--to", "0.6.15", ".")
    assert "old: FlashInfer 0.6.10 -> 0.6.15" in text.stderr
    assert "new: FlashInfer 0.6.14 -> 0.6.15" in text.stderr
    assert "any file outside them is not" in text.stderr  # tools/ is said, not guessed


def test_from_never_rewrites_a_project_on_a_newer_release(tree: Path) -> None:
    r = invoke("apply", "--from", "0.6.10", "--to", "0.6.15", ".")
    assert r.exit_code == 0, r.output
    assert "new pins FlashInfer 0.6.14, newer than --from 0.6.10" in r.stderr
    assert NEW_CALL in (tree / "new" / "pkg" / "m.py").read_text()  # never `enable_pdl=7`
    assert "enable_pdl=True" in (tree / "old" / "pkg" / "m.py").read_text()
    assert "enable_pdl=True" in (tree / "tools" / "t.py").read_text()  # from --from
    for folder in ("old", "new"):
        assert "flashinfer-python==0.6.15" in (tree / folder / "pyproject.toml").read_text()
        record = json.loads((tree / folder / ".migrate-fi" / "last-apply.json").read_text())
        assert record["to"] == "0.6.15"
    assert invoke("check", "--from", "0.6.15", "--to", "0.6.15", ".").exit_code == 0


def test_the_plan_has_a_section_for_each_project(tree: Path) -> None:
    r = invoke("plan", "--to", "0.6.15", ".")
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("2 projects pinned to different releases")
    assert "== old\nFlashInfer now: 0.6.10 (the pins below)" in r.stdout
    assert "== new\nFlashInfer now: 0.6.14 (the pins below)" in r.stdout
    doc = json.loads(invoke("plan", "--to", "0.6.15", "--output-format", "json", ".").stdout)
    assert [(p["folder"], p["from"]) for p in doc["projects"]] == [
        ("new", "0.6.14"),
        ("old", "0.6.10"),
    ]


def test_a_site_left_in_one_project_stays_reported_once_the_pins_agree(tree: Path) -> None:
    (tree / "old" / "pkg" / "n.py").write_text(
        "from flashinfer import fp4_quantize\n\n\ndef r(x, *a):\n    return fp4_quantize(x, *a)\n"
    )
    applied = invoke("apply", "--to", "0.6.15", ".")
    assert applied.exit_code == 1, applied.output  # *args: for a person
    # every pin now says 0.6.15; the old project's migration is in progress
    r = invoke("check", "--to", "0.6.15", "--output-format", "json", ".")
    assert r.exit_code == 1, r.output
    assert sites(r) == {("old/pkg/n.py", "FI001")}


def test_pins_outside_any_project_that_disagree_stay_an_error(tree: Path) -> None:
    """A Dockerfile at the top of a tree with no project there: which code it speaks for
    cannot be told, so no range is guessed."""
    (tree / "Dockerfile").write_text("ARG FLASHINFER_VERSION=0.6.12\n")
    r = invoke("check", "--to", "0.6.15", ".")
    assert r.exit_code == 2
    assert "pins disagree" in r.stderr


def test_one_project_with_agreeing_pins_runs_as_before(tree: Path) -> None:
    r = invoke("check", "--to", "0.6.15", "old")
    assert r.exit_code == 1
    assert "FlashInfer 0.6.10 -> 0.6.15" not in r.stderr  # no per-project notes for one project
