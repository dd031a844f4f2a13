"""The command line, end to end, with click's CliRunner: every command and exit code."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from migrate_fi.cli import cli

LEGACY = (
    "from flashinfer import fp4_quantize\n"
    "\n"
    "\n"
    "def q(x, gs):\n"
    "    return fp4_quantize(x, gs[:1], 16, False, True, False, True)\n"
)
MIGRATED = LEGACY.replace("False, True)", "False, enable_pdl=True)")
CLEAN = "import os\n\nprint(os.getcwd())\n"
FROM = ("--from", "0.6.10", "--to", "0.6.11")  # (0.7.4 changed a default FI008 would add)


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "legacy.py").write_text(LEGACY)
    (tmp_path / "src" / "clean.py").write_text(CLEAN)
    return tmp_path


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


# --------------------------------------------------------------------- check


def test_check_finds_and_exits_1(tree: Path) -> None:
    r = invoke("check", *FROM, "src")
    assert r.exit_code == 1
    assert r.stdout.startswith("src/legacy.py:5:12: FI001 fp4_quantize with 7 positional arguments")
    assert "1 fixable with `migrate-fi apply`" in r.stderr
    assert (tree / "src" / "legacy.py").read_text() == LEGACY  # wrote nothing


def test_check_clean_tree_exits_0(tree: Path) -> None:
    (tree / "src" / "legacy.py").write_text(MIGRATED)
    r = invoke("check", *FROM, "src")
    assert r.exit_code == 0, r.output
    assert r.stdout == ""
    assert "Nothing to migrate" in r.stderr


def test_exit_zero(tree: Path) -> None:
    r = invoke("check", *FROM, "--exit-zero", "src")
    assert r.exit_code == 0
    assert "FI001" in r.stdout


def test_default_path_is_current_folder(tree: Path) -> None:
    r = invoke("check", *FROM)
    assert r.exit_code == 1
    assert "src/legacy.py:5:12" in r.stdout


# ---------------------------------------------------------------------- diff


def test_diff_writes_nothing_and_git_applies(tree: Path) -> None:
    r = invoke("diff", *FROM, "src")
    assert r.exit_code == 1
    assert r.stdout.startswith("--- a/src/legacy.py\n+++ b/src/legacy.py\n")
    assert (
        "+    return fp4_quantize(x, gs[:1], 16, False, True, False, enable_pdl=True)\n" in r.stdout
    )
    assert (tree / "src" / "legacy.py").read_text() == LEGACY
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    (tree / "change.patch").write_text(r.stdout)
    subprocess.run(["git", "init", "-q"], cwd=tree, check=True)
    subprocess.run(["git", "apply", "change.patch"], cwd=tree, check=True)
    assert (tree / "src" / "legacy.py").read_text() == MIGRATED


def test_diff_without_trailing_newline_applies(tree: Path) -> None:
    (tree / "src" / "legacy.py").write_text(LEGACY.rstrip("\n"))
    r = invoke("diff", *FROM, "src")
    assert "\\ No newline at end of file" in r.stdout
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    (tree / "change.patch").write_text(r.stdout)
    subprocess.run(["git", "init", "-q"], cwd=tree, check=True)
    subprocess.run(["git", "apply", "change.patch"], cwd=tree, check=True)
    assert (tree / "src" / "legacy.py").read_text() == MIGRATED.rstrip("\n")


def test_diff_clean_exits_0(tree: Path) -> None:
    (tree / "src" / "legacy.py").write_text(MIGRATED)
    r = invoke("diff", *FROM, "src")
    assert r.exit_code == 0
    assert r.stdout == ""


# --------------------------------------------------------------------- apply


def test_apply_then_idempotent_then_check_clean(tree: Path) -> None:
    r = invoke("apply", *FROM, "src")
    assert r.exit_code == 0, r.output
    assert "src/legacy.py: rewritten (1 fix)" in r.stdout
    assert (tree / "src" / "legacy.py").read_text() == MIGRATED
    assert (tree / "src" / "clean.py").read_text() == CLEAN
    r2 = invoke("apply", *FROM, "src")
    assert r2.exit_code == 0
    assert "rewritten" not in r2.stdout
    assert (tree / "src" / "legacy.py").read_text() == MIGRATED
    assert invoke("check", *FROM, "src").exit_code == 0
    assert not list(tree.rglob("*.migrate-fi.tmp"))


def test_apply_leaves_manual_sites_and_exits_1(tree: Path) -> None:
    (tree / "src" / "fwd.py").write_text(
        "import flashinfer\n\ndef f(*a):\n    return flashinfer.fp4_quantize(*a)\n"
    )
    r = invoke("apply", *FROM, "src")
    assert r.exit_code == 1
    assert "src/fwd.py:4:12: FI001 fp4_quantize called with *args" in r.stdout
    assert "left for a person" in r.stderr
    assert (tree / "src" / "legacy.py").read_text() == MIGRATED


def test_apply_keeps_mode(tree: Path) -> None:
    path = tree / "src" / "legacy.py"
    path.chmod(0o640)
    assert invoke("apply", *FROM, "src").exit_code == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_apply_keeps_crlf(tree: Path) -> None:
    path = tree / "src" / "legacy.py"
    path.write_bytes(LEGACY.replace("\n", "\r\n").encode())
    assert invoke("apply", *FROM, "src").exit_code == 0
    assert path.read_bytes() == MIGRATED.replace("\n", "\r\n").encode()


def test_apply_keeps_bom(tree: Path) -> None:
    path = tree / "src" / "legacy.py"
    path.write_bytes(b"\xef\xbb\xbf" + LEGACY.encode())
    assert invoke("apply", *FROM, "src").exit_code == 0
    assert path.read_bytes() == b"\xef\xbb\xbf" + MIGRATED.encode()


def test_apply_keeps_declared_encoding(tree: Path) -> None:
    path = tree / "src" / "legacy.py"
    head = "# -*- coding: latin-1 -*-\n# Gr\u00fc\u00dfe\n"
    path.write_bytes((head + LEGACY).encode("latin-1"))
    r = invoke("apply", *FROM, "src")
    assert r.exit_code == 0, r.output
    assert path.read_bytes() == (head + MIGRATED).encode("latin-1")


def test_apply_non_ascii_columns(tree: Path) -> None:
    path = tree / "src" / "legacy.py"
    text = LEGACY.replace("    return fp4_quantize(x", "    return {'\u00e9': fp4_quantize(x") + ""
    text = text.replace("True)\n", "True)}\n")
    path.write_text(text, encoding="utf-8")
    r = invoke("apply", *FROM, "src")
    assert r.exit_code == 0, r.output
    assert path.read_text(encoding="utf-8") == text.replace(
        "False, True)}", "False, enable_pdl=True)}"
    )


def test_apply_refuses_read_only_file(tree: Path) -> None:
    path = tree / "src" / "legacy.py"
    path.chmod(0o444)
    r = invoke("apply", *FROM, "src")
    assert r.exit_code == 2
    assert "src/legacy.py: error: file is read-only" in r.stderr
    assert path.read_text() == LEGACY


def test_syntax_error_is_reported_and_others_processed(tree: Path) -> None:
    (tree / "src" / "broken.py").write_text("import flashinfer\ndef f(:\n    fp4_quantize\n")
    r = invoke("apply", *FROM, "src")
    assert r.exit_code == 2
    assert "src/broken.py:2:7: error: syntax error: invalid syntax; file left untouched" in r.stderr
    assert (tree / "src" / "legacy.py").read_text() == MIGRATED
    assert (tree / "src" / "broken.py").read_text().startswith("import flashinfer\ndef f(:")
    c = invoke("check", *FROM, "src")
    assert c.exit_code == 2
    assert "src/broken.py:2:7: error" in c.stderr


def test_undecodable_file(tree: Path) -> None:
    (tree / "src" / "bad.py").write_bytes(b"import flashinfer\nx = 'fp4_quantize \xff'\n")
    r = invoke("check", *FROM, "src")
    assert r.exit_code == 2
    assert "src/bad.py: error: not valid utf-8" in r.stderr
    assert "src/legacy.py:5:12: FI001" in r.stdout


def test_recursion_error_does_not_stop_the_run(tree: Path) -> None:
    deep = "from flashinfer import fp4_quantize\nx = " + " + ".join(["1"] * 100_000) + "\n"
    (tree / "src" / "deep.py").write_text(deep)
    r = invoke("apply", *FROM, "src")
    assert r.exit_code == 2
    assert "src/deep.py: error:" in r.stderr
    assert (tree / "src" / "legacy.py").read_text() == MIGRATED
    assert (tree / "src" / "deep.py").read_text() == deep


def test_lone_cr_line_endings_are_kept(tree: Path) -> None:
    path = tree / "src" / "legacy.py"
    path.write_bytes(LEGACY.replace("\n", "\r").encode())
    r = invoke("apply", *FROM, "src")
    assert r.exit_code == 0, r.output
    assert path.read_bytes() == MIGRATED.replace("\n", "\r").encode()


def test_mixed_lone_cr_endings_are_refused_alike_by_check_and_apply(tree: Path) -> None:
    path = tree / "src" / "legacy.py"
    data = LEGACY.replace("gs):\n", "gs):\r").encode()  # one lone CR, LF elsewhere
    path.write_bytes(data)
    for command in ("check", "apply"):
        r = invoke(command, *FROM, "src")
        assert r.exit_code == 2, command
        assert "mix lone CRs with others" in r.stderr
    assert path.read_bytes() == data


# ------------------------------------------------------------ output formats


def test_json_output(tree: Path) -> None:
    r = invoke("check", *FROM, "--output-format", "json", "src")
    assert r.exit_code == 1
    doc = json.loads(r.stdout)
    assert doc["command"] == "check"
    assert doc["from"] == "0.6.10" and doc["to"] == "0.6.11"
    # release order, the data-driven rules last
    assert doc["rules"] == [
        "FI004",
        "FI001",
        "FI003",
        "FI002",
        "FI006",
        "FI007",
        "FI008",
        "FI009",
        "FI010",
        "FI011",
        "FI012",
        "FI013",
        "FI014",
        "FI015",
        "FI016",
    ]
    (d,) = doc["diagnostics"]
    assert (d["path"], d["line"], d["col"], d["code"], d["fixable"]) == (
        "src/legacy.py",
        5,
        12,
        "FI001",
        True,
    )
    assert doc["files"]["parsed"] == 1 and doc["files"]["total"] == 2


def test_github_output(tree: Path) -> None:
    r = invoke("check", *FROM, "--output-format", "github", "src")
    assert r.exit_code == 1
    assert r.stdout.startswith(
        "::warning file=src/legacy.py,line=5,col=12,endLine=5,endColumn=65,"
        "title=FI001 (fp4_quantize_keywords)::fp4_quantize with 7 positional"
    )


# ----------------------------------------------------- selection and versions


def _codes(r: Result) -> list[str]:
    return [line.split(": ")[1].split()[0] for line in r.stdout.splitlines() if ": FI" in line]


@pytest.mark.parametrize(
    ("selection", "code"),
    [
        ((), "FI001"),
        (("--select", "FI001"), "FI001"),
        (("--select", "fp4_quantize_keywords"), "FI001"),
        (("--select", "FI0"), "FI001"),
        # no selection may hide the misbinding: without FI001, FI002 reports it
        (("--select", "FI002"), "FI002"),
        (("--ignore", "FI001"), "FI002"),
        (("--select", "FI002,FI003"), "FI002"),
    ],
)
def test_every_selection_reports_the_misbinding(
    tree: Path, selection: tuple[str, ...], code: str
) -> None:
    r = invoke("check", "--from", "0.6.10", "--to", "0.6.11", *selection, "src")
    assert r.exit_code == 1
    assert _codes(r) == [code]
    assert "enable_pdl=" in r.stdout


def test_a_selected_rule_outside_the_range_is_named(tree: Path) -> None:
    r = invoke("check", "--from", "0.6.11", "--to", "0.7.4", "--select", "FI001", "src")
    assert r.exit_code == 0
    assert "FI001 (fp4_quantize_keywords) is selected but does not run for 0.6.11 -> 0.7.4" in (
        r.stderr
    )


def test_unknown_rule_is_usage_error(tree: Path) -> None:
    r = invoke("check", *FROM, "--select", "FI999", "src")
    assert r.exit_code == 2
    assert "unknown rule 'FI999'" in r.stderr


def test_version_range_selects_rules(tree: Path) -> None:
    # fp4_quantize's binding changed in 0.6.11: nothing to do from 0.6.11 on (0.7.4 refuses
    # Hopper for it: FI012's), or up to 0.6.10
    assert invoke("check", "--from", "0.6.11", "--ignore", "FI012", "src").exit_code == 0
    assert invoke("check", "--from", "0.6.8.post1", "--to", "0.6.10.post1", "src").exit_code == 0
    assert invoke("check", "--from", "0.6.10.post1", "--to", "0.6.11", "src").exit_code == 1


def test_bad_versions(tree: Path) -> None:
    r = invoke("check", "--from", "banana", "src")
    assert r.exit_code == 2
    assert "not a valid FlashInfer version: 'banana'" in r.stderr
    r = invoke("check", "--from", "0.7.0", "--to", "0.6.10", "src")
    assert r.exit_code == 2
    assert "migrates forward" in r.stderr


def test_from_is_read_from_the_pin(tree: Path) -> None:
    r = invoke("check", "src")
    assert r.exit_code == 2
    assert "pass --from VERSION" in r.stderr
    (tree / "pyproject.toml").write_text(
        '[project]\ndependencies = ["flashinfer_python[cu13]==0.6.8.post1", "flashinfer_cubin==0.6.8.post1"]\n'
    )
    r = invoke("check", "--output-format", "json", "src")
    assert r.exit_code == 1
    assert json.loads(r.stdout)["from"] == "0.6.8.post1"


def test_conflicting_pins_need_from(tree: Path) -> None:
    (tree / "pyproject.toml").write_text('dependencies = ["flashinfer-python==0.6.8.post1"]\n')
    (tree / "requirements.txt").write_text("flashinfer-python==0.6.11\n")
    r = invoke("check", "src")
    assert r.exit_code == 2
    assert (
        "the project's flashinfer-python pins disagree (0.6.8.post1 in pyproject.toml:1;"
        in r.stderr
    )
    r = invoke("plan", "src")
    assert r.exit_code == 2
    assert "requirements.txt:1 flashinfer-python ==0.6.11 (requirement)" in r.stdout
    assert (
        "pins disagree (0.6.8.post1 in pyproject.toml:1; 0.6.11 in requirements.txt:1)" in r.stderr
    )
    # with --from, check says which pin disagrees, as a finding of its own
    r = invoke("check", "--from", "0.6.8.post1", "--to", "0.6.14", "--select", "FI006", ".")
    assert r.exit_code == 1
    assert (
        "requirements.txt:1:20: FI006 FlashInfer versions disagree: this pin ==0.6.11" in r.stdout
    )
    # and never moves it, not even as a review fix
    r = invoke(
        "apply", "--unsafe-fixes", "--from", "0.6.8.post1", "--to", "0.6.14", "--select", "FI006",
        ".",
    )  # fmt: skip
    assert (tree / "requirements.txt").read_text() == "flashinfer-python==0.6.11\n"
    assert "0.6.14" in (tree / "pyproject.toml").read_text()


# ----------------------------------------------------------------- discovery


def test_missing_path(tree: Path) -> None:
    r = invoke("check", *FROM, "nope")
    assert r.exit_code == 2
    assert r.stderr == "migrate-fi: error: nope: no such file or folder\n"


def test_exclude_gitignore_and_venvs(tree: Path) -> None:
    for folder in ("gen", ".venv", "env2", "build", "node_modules", "keep"):
        (tree / folder).mkdir()
        (tree / folder / "m.py").write_text(LEGACY)
    (tree / "env2" / "pyvenv.cfg").write_text("home = /usr\n")
    (tree / ".gitignore").write_text("gen/\n")
    (tree / ".git").mkdir()
    r = invoke("check", *FROM, "--exclude", "src/", ".")
    assert r.exit_code == 1
    assert sorted({line.split(":")[0] for line in r.stdout.splitlines()}) == ["keep/m.py"]
    # a file named on the command line is always taken
    assert invoke("check", *FROM, "gen/m.py").exit_code == 1
    r = invoke("check", *FROM, "--no-gitignore", "--exclude", "src/", ".")
    assert sorted({line.split(":")[0] for line in r.stdout.splitlines()}) == [
        "gen/m.py",
        "keep/m.py",
    ]


def test_parallel_equals_serial(tree: Path) -> None:
    for i in range(8):
        (tree / "src" / f"m{i}.py").write_text(LEGACY)
    serial = invoke("diff", *FROM, "-j", "1", "src")
    parallel = invoke("diff", *FROM, "-j", "2", "src")
    assert serial.exit_code == parallel.exit_code == 1
    assert serial.stdout == parallel.stdout
    assert serial.stdout.count("+++ b/src/m") == 8


# ----------------------------------------------------------- rules, explain


def test_rules_and_explain() -> None:
    r = invoke("rules")
    assert r.exit_code == 0
    assert "FI001" in r.stdout and "fp4_quantize_keywords" in r.stdout and "0.6.11" in r.stdout
    rows = json.loads(invoke("rules", "--output-format", "json").stdout)
    assert rows[0] == {
        "code": "FI001",
        "id": "fp4_quantize_keywords",
        "flashinfer_version": "0.6.11",
        "fix": "safe",
        "summary": rows[0]["summary"],
        "options": [],
    }
    for name in ("FI001", "fi001", "fp4_quantize_keywords"):
        e = invoke("explain", name)
        assert e.exit_code == 0
        assert "is_global_scale_inversed" in e.stdout
    bad = invoke("explain", "FI999")
    assert bad.exit_code == 2
    assert "unknown rule" in bad.stderr


def test_help_documents_exit_codes() -> None:
    for args in ([], ["check"], ["diff"], ["apply"]):
        r = invoke(*args, "--help")
        assert r.exit_code == 0
        assert "Exit codes:" in r.stdout and "2    an error" in r.stdout
        assert "130  interrupted" in r.stdout


def test_python_dash_m() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "migrate_fi", "--version"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])},
    )
    assert r.returncode == 0
    assert r.stdout.startswith("migrate-fi, version ")


def test_docs_are_current() -> None:
    from migrate_fi.outputs.docs import readme_rules_table, rules_markdown

    root = Path(__file__).parents[1]
    stale = "is stale: run `python scripts/update_docs.py`"
    assert (root / "docs" / "rules.md").read_text() == rules_markdown(), f"docs/rules.md {stale}"
    assert readme_rules_table() in (root / "README.md").read_text(), (
        f"README.md's rules table {stale}"
    )


# ----------------------------------------------------------------------- plan


def test_plan_shows_pin_target_and_rules(tree: Path) -> None:
    (tree / "requirements.txt").write_text("torch\nflashinfer-python==0.6.10  # pinned\n")
    (tree / "Dockerfile").write_text("ARG FLASHINFER_VERSION=0.6.10\n")
    r = invoke("plan", "src")
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[0] == "FlashInfer now: 0.6.10 (the pins below)"
    assert "Target:         0.7.4" in r.stdout
    assert "  requirements.txt:2 flashinfer-python ==0.6.10 (requirement)" in r.stdout
    assert "  Dockerfile:1 flashinfer-python 0.6.10 (variable)" in r.stdout
    assert "FI001 fp4_quantize_keywords" in r.stdout and "FI002 positional_binding" in r.stdout
    doc = json.loads(invoke("plan", "--to", "0.6.11", "--output-format", "json", "src").stdout)
    assert doc["from"] == "0.6.10" and doc["to"] == "0.6.11"
    fi002 = next(x for x in doc["rules"] if x["code"] == "FI002")
    assert fi002["apis_changed"] >= 6  # fp4_quantize, trtllm_fp4_block_scale_moe, ...


def test_plan_with_a_lagging_cubin_and_no_range_says_what_would_run(tree: Path) -> None:
    """The pins say the target already, a companion still the old release: no rule runs, and
    the plan says so instead of promising a report (and what to do)."""
    (tree / "requirements.txt").write_text("flashinfer-python==0.7.4\nflashinfer-cubin==0.6.12\n")
    r = invoke("plan", "src")
    assert r.exit_code == 0, r.output
    assert "FI006 reports them" not in r.stdout
    assert "if the code was written for 0.6.12, migrate it with `--from 0.6.12`" in r.stdout
    assert "No rule runs for this range." in r.stdout


def test_a_pin_to_a_release_without_data_between_two_known_ones_uses_the_one_below(
    tree: Path,
) -> None:
    """0.7.3 was never on the package index (the newest vLLM pins it): the run migrates from
    the nearest release below it and says so, and the pin is not called a disagreement."""
    (tree / "requirements.txt").write_text("flashinfer-python==0.7.3\n")
    r = invoke("check", "--to", "0.7.4", "src")
    assert r.exit_code in (0, 1), r.output
    assert "no API data for FlashInfer 0.7.3: migrating from 0.7.2.post1" in r.stderr
    assert "signatures update" in r.stderr and "signatures build" in r.stderr
    assert "disagree" not in r.output
    doc = json.loads(invoke("plan", "--output-format", "json", "src").stdout)
    assert doc["from"] == "0.7.2.post1"
    r = invoke("check", "--from", "0.8.0", "src")  # newer than the data: still an error
    assert r.exit_code == 2 and "newer than the data" in r.stderr


def test_release_without_api_data_is_a_clear_error(tree: Path) -> None:
    r = invoke("check", "--from", "0.4.1", "src")
    assert r.exit_code == 2
    assert ": no API data for FlashInfer 0.4.1 (the data covers" in r.stderr
    assert "migrate to 0.5.0 by hand first" in r.stderr
    r = invoke("check", "--from", "0.4.1", "--select", "FI001", "src")
    assert r.exit_code == 2  # FI001 reads the same data
    assert "FI001: no API data for FlashInfer 0.4.1" in r.stderr
    assert (
        invoke("check", "--from", "0.4.1", "--select", "FI003", "src").exit_code == 0
    )  # no data needed


def test_apply_summary_counts_only_written_fixes(tree: Path) -> None:
    (tree / "src" / "legacy.py").chmod(0o444)
    r = invoke("apply", *FROM, "src")
    assert r.exit_code == 2
    assert "Rewrote 0 files (0 fixes); 1 not written (see the errors)" in r.stderr


def test_readme_output_sample_is_current(monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/usage.md shows `migrate-fi check` on the demo: it must be what the command prints."""
    root = Path(__file__).parents[1]
    monkeypatch.chdir(root)
    r = invoke("check", "tests/fixtures/projects/demo")
    readme = (root / "docs" / "usage.md").read_text()
    block = readme.split("$ migrate-fi check tests/fixtures/projects/demo\n", 1)[1].split("$ ", 1)[
        0
    ]
    assert block == r.stdout + r.stderr, "docs/usage.md's sample is stale: paste the new output"


def test_shell_completion_scripts_and_completions(tmp_path: Path) -> None:
    """What the README tells users to eval: click's completion, for commands and choices."""
    env = {**os.environ, "_MIGRATE_FI_COMPLETE": "bash_source"}
    script = subprocess.run(
        [sys.executable, "-m", "migrate_fi"], env=env, capture_output=True, text=True, check=False
    )
    assert "_migrate_fi_completion" in script.stdout
    assert "complete -o nosort -F _migrate_fi_completion migrate-fi" in script.stdout

    def complete(words: str) -> list[str]:
        env = {
            **os.environ,
            "_MIGRATE_FI_COMPLETE": "bash_complete",
            "COMP_WORDS": words,
            "COMP_CWORD": str(len(words.split()) - (0 if words.endswith(" ") else 1)),
        }
        r = subprocess.run(
            [sys.executable, "-m", "migrate_fi"], env=env, capture_output=True, text=True
        )
        return [line.split(",", 1)[1] for line in r.stdout.splitlines()]

    assert {"check", "diff", "apply", "verify"} <= set(complete("migrate-fi "))
    assert "--changed-since" in complete("migrate-fi check --ch")
    assert complete("migrate-fi check --output-format ") == ["text", "json", "github", "sarif"]


def test_the_process_ends_without_the_interpreter_s_teardown_but_keeps_what_it_owes(
    tmp_path: Path,
) -> None:
    """`main` ends with `os._exit` (no freeing of every object): before it, every exit handler
    runs and both streams are flushed, and the status is the command's; a string status is
    printed and exits 1, as `sys.exit` does."""
    demo = Path(__file__).parent / "fixtures" / "projects" / "demo"
    script = (
        "import atexit, sys\n"
        "from migrate_fi.cli import main\n"
        "atexit.register(lambda: print('handler ran', file=sys.stderr))\n"
        "sys.argv = ['migrate-fi', 'check', '--output-format', 'json', sys.argv[1]]\n"
        "main()\n"
    )
    env = {**os.environ, "MIGRATE_FI_CACHE_DIR": str(tmp_path / "cache")}
    r = subprocess.run(
        [sys.executable, "-c", script, str(demo)], capture_output=True, text=True, env=env
    )
    assert r.returncode == 1, r.stderr  # (sites found)
    assert len(json.loads(r.stdout)["diagnostics"]) == 14
    assert r.stderr.strip().endswith("handler ran")
    r = subprocess.run(
        [sys.executable, "-c", "from migrate_fi.cli import _exit\nprint('out')\n_exit('gone')"],
        capture_output=True,
        text=True,
    )
    assert (r.returncode, r.stdout, r.stderr) == (1, "out\n", "gone\n")


def test_a_profiled_run_ends_as_python_ends_and_the_profile_is_written(tmp_path: Path) -> None:
    """`python -m cProfile -o FILE -m migrate_fi ...` writes its figures once the program has
    returned: under a profiler the command leaves the end to the interpreter."""
    out = tmp_path / "run.prof"
    (tmp_path / "m.py").write_text("x = 1\n")
    env = {**os.environ, "MIGRATE_FI_CACHE_DIR": str(tmp_path / "cache")}
    r = subprocess.run(
        [sys.executable, "-m", "cProfile", "-o", str(out), "-m", "migrate_fi", "check", "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
    )
    assert r.returncode == 0, r.stderr
    assert out.is_file() and out.stat().st_size > 0
