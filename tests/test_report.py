"""`migrate-fi report`: the upgrade's pull-request description, from the facts of a run."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from migrate_fi.cli import cli

PROJECTS = Path(__file__).parent / "fixtures" / "projects"
CASES = [
    ("demo.report.md", ["demo"]),
    ("demo.report.zh.md", ["--lang", "zh", "demo"]),
    ("sglang_like.report.md", ["--to", "0.6.14", "sglang_like"]),
    ("sglang_like.report.zh.md", ["--lang", "zh", "--to", "0.6.14", "sglang_like"]),
]


def _report(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(cli, ["report", *args], catch_exceptions=False)
    return r.exit_code, r.stdout, r.stderr


@pytest.mark.parametrize(("snapshot", "args"), CASES)
def test_report_snapshots(monkeypatch: pytest.MonkeyPatch, snapshot: str, args: list[str]) -> None:
    monkeypatch.chdir(PROJECTS)
    before = {p: p.read_bytes() for p in Path(args[-1]).rglob("*") if p.is_file()}
    code, out, _ = _report(*args)
    assert code == 0
    assert out == (PROJECTS / snapshot).read_text(), f"regenerate {snapshot} if intended"
    assert _report(*args)[1] == out  # byte-stable
    assert {p: p.read_bytes() for p in before} == before  # writes nothing


def test_report_reads_like_the_reference_upgrade(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(PROJECTS)
    out = _report("demo")[1]
    for heading in (
        "## Summary",
        "## Recommended action",
        "## Why: the FlashInfer changes this project meets",
        "## What changed, rule by rule",
        "## Key files",
        "## Left for a person",
        "## FlashInfer APIs used",
        "## Risks and impact",
    ):
        assert heading in out
    # every site left for a person, with file:line
    assert "- `demo/src/demo_server/layers/moe.py:21` FI001" in out
    assert "**install flow**" in out and "**behaviour**" in out
    zh = _report("--lang", "zh", "demo")[1]
    assert "## 执行摘要" in zh and "## 风险与影响" in zh
    assert "demo/src/demo_server/layers/moe.py:21" in zh  # facts unchanged


def test_report_to_a_file_and_as_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(PROJECTS)
    target = tmp_path / "pr.md"
    code, out, err = _report("-o", str(target), "demo")
    assert code == 0 and out == "" and "report written to" in err
    assert target.read_text() == (PROJECTS / "demo.report.md").read_text()
    assert not [p for p in os.listdir(tmp_path) if p != "pr.md"]  # no temporary file left
    doc = json.loads(_report("--output-format", "json", "demo")[1])
    assert (doc["from"], doc["to"]) == ("0.6.8.post1", "0.7.4")
    assert len(doc["for_a_person"]) == 6 and len(doc["fixed"]) == 11


def test_report_to_a_folder_that_does_not_exist_is_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(PROJECTS)
    code, _, err = _report("-o", "/nonexistent/folder/pr.md", "demo")
    assert code == 2
    assert err.strip().splitlines()[-1].startswith("migrate-fi: error: /nonexistent/folder/pr.md:")


def test_the_verify_outcome_is_reported_when_verify_ran() -> None:
    from migrate_fi.base.results import RunResult
    from migrate_fi.outputs.report import Report, render_markdown
    from migrate_fi.outputs.usage import Inventory

    verified = {
        "verdict": "passed",
        "counts": {"passed": 2, "failed": 0, "skipped": 1},
        "environment": {"flashinfer": "0.6.15", "gpus": [{"name": "NVIDIA H200"}]},
        "baseline": {"new": [], "fixed": ["tests/test_fp4.py::test_helper"], "already_failing": []},
        "results": [
            {"test": "tests/test_moe.py::test_graph", "outcome": "skipped", "detail": "needs SM100"}
        ],
    }
    facts = Report(
        RunResult(from_version="0.6.8.post1", to_version="0.6.15"),
        [],
        Inventory("0.6.8.post1", "0.6.15", [], 0, 0, []),
        [],
        "migrate-fi verify --baseline HEAD",
        verified,
    )
    text = render_markdown(facts)
    section = text.split("## Verify on a GPU\n\n", 1)[1].split("\n## ", 1)[0]
    assert section.splitlines() == [
        "Verdict: **passed** (2 passed, 1 skipped), with FlashInfer 0.6.15 on NVIDIA H200.",
        "",
        "- New failures against the tree before the migration: none",
        "- Fixed by the migration: `tests/test_fp4.py::test_helper`",
        "- Skipped: `tests/test_moe.py::test_graph` (needs SM100)",
    ]


def test_rules_of_the_range_left_out_are_a_risk(monkeypatch: pytest.MonkeyPatch) -> None:
    """A report of a narrowed run says which rules of the range it leaves out, and still
    attributes their APIs' changes (the inventory is FlashInfer's facts, not the run's)."""
    monkeypatch.chdir(PROJECTS)
    out = _report("--ignore", "FI004", "demo")[1]
    assert "- **rules not run**: FI004 (allreduce_workspace_group) apply to this range" in out
    assert "### FI004" not in out
    assert "FI004" in out.split("## FlashInfer APIs used")[1]  # still the API's change
    assert "rules not run" not in _report("demo")[1]
    zh = _report("--lang", "zh", "--ignore", "FI004", "demo")[1]
    assert "**未运行的规则**\uff1aFI004 (allreduce_workspace_group)" in zh


def test_hand_written_rules_cite_their_upstream_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(PROJECTS)
    why = _report("demo")[1].split("## What changed, rule by rule")[0]
    assert "https://github.com/flashinfer-ai/flashinfer/pull/3247" in why  # FI004
