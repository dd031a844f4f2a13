"""`migrate-fi report`: the upgrade's pull-request description, from the facts of a run."""

from __future__ import annotations

import json
import os
import re
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
    """Every section of the reference write-ups, with content, in both languages."""
    monkeypatch.chdir(PROJECTS)
    out = _report("demo")[1]
    for heading in (
        "## Summary",
        "## Why: the FlashInfer changes this project meets",
        "## Implementation, by area",
        "## Key files",
        "## Key symbols",
        "## Key changes",
        "## Reviewer checklist",
        "## Left for a person",
        "## FlashInfer APIs used",
        "## Risks and impact",
        "## Related changes",
    ):
        assert f"{heading}\n\n" in out and f"{heading}\n\n## " not in out, heading
    assert "- **In one sentence**: upgrade FlashInfer 0.6.8.post1 -> 0.7.4: " in out
    assert "- **Recommended action**: " in out
    # numbered by area, each naming its files and symbols
    assert "1. **Dependencies**: 2 changes in `demo/pyproject.toml`" in out
    assert "(`AllReduceFusionWorkspace.initialize`)" in out
    # the test conversion is the first excerpt, before API rewrites and pins
    hunks = out.split("## Key changes", 1)[1]
    assert hunks.index("demo/tests/test_moe_graph.py") < hunks.index("demo/src/")
    # every site left for a person, with file:line
    assert "- `demo/src/demo_server/layers/moe.py:21` FI001" in out
    assert "**install flow**" in out and "**behaviour**" in out
    assert "- **Users**: " in out and "- **Systems**: " in out and "- **Team**: " in out
    assert "**Risk tags**: dependency upgrade, API binding, install flow" in out
    assert (
        "https://github.com/flashinfer-ai/flashinfer/pull/3247"
        in out.split("## Related changes")[1]
    )
    zh = _report("--lang", "zh", "demo")[1]
    for heading in SECTIONS["zh"]:
        assert f"## {heading}\n" in zh
    assert "demo/src/demo_server/layers/moe.py:21" in zh  # facts unchanged


# the sections of the reference write-ups, by language
SECTIONS = {
    "en": (
        "Summary",
        "Implementation, by area",
        "Key files",
        "Key changes",
        "Reviewer checklist",
        "Risks and impact",
        "Related changes",
    ),
    "zh": (
        "执行摘要",
        "实现拆解",
        "关键文件",
        "关键源码片段",
        "评审清单",
        "风险与影响",
        "关联脉络",
    ),
}


@pytest.mark.parametrize(("project", "to"), [("demo", "0.7.4"), ("sglang_like", "0.6.14")])
def test_both_reference_shapes_fill_every_section(
    monkeypatch: pytest.MonkeyPatch, project: str, to: str
) -> None:
    monkeypatch.chdir(PROJECTS)
    for lang, headings in SECTIONS.items():
        text = _report("--lang", lang, "--to", to, project)[1]
        for heading in headings:
            body = text.split(f"## {heading}\n\n", 1)[1].split("\n## ", 1)[0]
            assert body.strip(), (lang, heading)


@pytest.mark.parametrize("project", ["demo", "sglang_like"])
def test_the_chinese_report_has_no_english_sentence(
    monkeypatch: pytest.MonkeyPatch, project: str
) -> None:
    """Outside code, paths and links, no run of three English words: the rules' lines
    (`summary_zh`) and their messages (`say`) are given in Chinese."""
    monkeypatch.chdir(PROJECTS)
    text = _report("--lang", "zh", project)[1]
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = re.sub(r"`[^`]*`", "", text)
    text = re.sub(r"https?://\S+", "", text)
    english = re.findall(r"[A-Za-z][A-Za-z'-]*(?:[ ,]+[A-Za-z][A-Za-z'-]*){2,}", text)
    assert english == []


def test_every_rule_has_its_line_in_chinese() -> None:
    from migrate_fi.run.registry import all_rules

    for rule in all_rules():
        assert re.search(r"[\u4e00-\u9fff]", rule.summary_zh), rule.code


def test_report_to_a_file_and_as_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(PROJECTS)
    target = tmp_path / "pr.md"
    code, out, err = _report("-o", str(target), "demo")
    assert code == 0 and out == "" and "report written to" in err
    assert target.read_text() == (PROJECTS / "demo.report.md").read_text()
    assert not [p for p in os.listdir(tmp_path) if p != "pr.md"]  # no temporary file left
    doc = json.loads(_report("--output-format", "json", "demo")[1])
    assert (doc["from"], doc["to"]) == ("0.6.8.post1", "0.7.4")
    assert len(doc["for_a_person"]) == 3 and len(doc["fixed"]) == 11


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
            {
                "test": "tests/test_moe.py::test_graph",
                "outcome": "skipped",
                "detail": "needs SM100",
            },
            {
                "test": "tests/test_fp4.py::test_sm90",
                "outcome": "failed",
                "detail": "\nRuntimeError: fp4_quantize requires SM100 or newer\n  at line 3",
                "why": ["FlashInfer 0.7.4 changed fp4_quantize (architecture): SM100 only"],
                "why_zh": ["FlashInfer 0.7.4 改变了 `fp4_quantize`（architecture）：仅限 SM100"],
            },
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
        "- Failed: `tests/test_fp4.py::test_sm90` (RuntimeError: fp4_quantize requires SM100 or"
        " newer; the release notes: FlashInfer 0.7.4 changed fp4_quantize (architecture): SM100"
        " only)",
    ]
    zh = render_markdown(facts, "zh")
    assert "仅限 SM100" in zh  # (the note as it is said in Chinese)


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


def _git(folder: Path, *args: str) -> str:
    import subprocess

    return subprocess.run(
        ["git", "-C", str(folder), "-c", "user.email=t@t", "-c", "user.name=t", *args],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def _without_base_line(text: str) -> str:
    return "\n".join(
        line
        for line in text.split("\n\n")
        if not line.startswith(("Described against commit", "以迁移开始时的提交"))
    )


@pytest.mark.slow
@pytest.mark.parametrize(("project", "to"), [("demo", []), ("sglang_like", ["--to", "0.6.14"])])
def test_the_report_of_a_migration_is_the_same_before_after_and_in_a_clone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, project: str, to: list[str]
) -> None:
    """The report describes the migration from the commit it started from (its record says
    which): after `apply`, on a fresh clone of the migration commit, and with `--base` after
    `finish`, it has the changes, pins and sites of the report made before `apply`."""
    import shutil

    from migrate_fi.cli import cli as main

    repo = tmp_path / project
    shutil.copytree(PROJECTS / project, repo)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "before")
    start = _git(repo, "rev-parse", "HEAD").strip()
    monkeypatch.chdir(repo)
    for lang in ("en", "zh"):
        code, before, _ = _report("--lang", lang, *to)
        assert code == 0 and ("0.6.8.post1" in before or "0.6.12" in before)
        assert "No pin of flashinfer-python found" not in before
        assert CliRunner().invoke(main, ["apply", *to]).exit_code == 1  # (sites left for a person)
        code, after, _ = _report("--lang", lang)
        assert code == 0
        assert f"`{start[:12]}`" in after
        assert _without_base_line(after) == _without_base_line(before)
        _git(repo, "add", "-A")
        _git(repo, "commit", "-qm", "migrated")
        clone = tmp_path / f"clone-{lang}"
        _git(tmp_path, "clone", "-q", str(repo), str(clone))
        monkeypatch.chdir(clone)
        assert _report("--lang", lang)[1] == after
        (clone / ".migrate-fi" / "last-apply.json").unlink()  # (as `finish` leaves it)
        # (sglang_like's hashed pin is a review fix apply leaves: its pins then disagree, and
        # the release migrated to is said with --to)
        assert _report("--lang", lang, "--base", "HEAD~1", *to)[1] == after
        monkeypatch.chdir(repo)
        _git(repo, "reset", "-q", "--hard", start)


def test_report_base_needs_a_repository_and_a_commit_in_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = _report("--base", "HEAD")
    assert code == 2 and "needs a git repository" in err and "Traceback" not in err
    _git(tmp_path, "init", "-q")
    (tmp_path / "a.py").write_text("import flashinfer\n")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "one")
    code, _, err = _report("--base", "no-such-ref", "--from", "0.6.8.post1")
    assert code == 2 and "no-such-ref" in err and "is not in the repository" in err


def test_a_pin_a_module_installs_is_no_version_check() -> None:
    """A Python module's list of packages to install (xinference's virtual environments) is a
    dependency, not a version check; a docstring's example version is not a check that stops an
    older install at start-up: only checks the code runs are said to."""
    from migrate_fi.base.results import Diagnostic
    from migrate_fi.outputs.report import _area, _checks_at_start

    def site(path: str, message: str, code: str = "FI006") -> Diagnostic:
        return Diagnostic(path, 1, 1, code, "flashinfer_pins", message)

    install = site("pkg/env.py", "flashinfer-python pin ==0.6.11: moved to the target 0.7.4")
    check = site("pkg/engine.py", "flashinfer-python version check: moved to the target 0.7.4")
    cited = site(
        "pkg/utils.py",
        "0.6.18 in a comment or docstring next to a FlashInfer mention: the version being"
        " migrated from, now 0.7.4",
    )
    assert [_area(d) for d in (install, check, cited)] == [
        "area_deps",
        "area_checks",
        "area_checks",
    ]
    assert [_checks_at_start(d) for d in (install, check, cited)] == [False, True, False]
