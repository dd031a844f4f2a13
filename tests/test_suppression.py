"""Suppression comments: what they silence, and the stale ones reported as FI000."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from migrate_fi.analysis.suppression import Suppressions
from migrate_fi.base.results import Diagnostic
from migrate_fi.cli import cli

CALL = "fp4_quantize(x, gs[:1], 16, False, True, False, True)"
HEAD = "from flashinfer import fp4_quantize\n\n\ndef q(x, gs):\n"
FROM = ("--from", "0.6.10", "--to", "0.6.11")


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "m.py"
    path.write_text(HEAD + body)
    return path


def site(line: int, code: str = "FI001", end: int | None = None) -> Diagnostic:
    return Diagnostic("m.py", line, 1, code, "fp4-quantize-keywords", "m", end_line=end)


def test_named_and_bare_comments_silence_their_rules_on_any_line_of_the_site() -> None:
    s = Suppressions.of("a\nb  # migrate-fi: ignore[FI001, other-rule]\nc  # migrate-fi: ignore\n")
    assert s.silences(site(2)) and not s.silences(site(2, "FI003"))
    assert s.silences(site(1, "FI003", end=3))  # the bare comment on the last line
    assert not s.silences(site(1))


def test_in_python_a_string_that_looks_like_a_comment_is_not_one() -> None:
    text = 'doc = "x  # migrate-fi: ignore[FI001]"\ny = 1  # migrate-fi: ignore[FI001]\n'
    s = Suppressions.of(text, python=True)
    assert [c.line for c in s.comments] == [2]
    assert len(Suppressions.of(text).comments) == 2  # other files have no strings to skip


def test_a_comment_after_a_string_on_its_line_still_counts() -> None:
    s = Suppressions.of('f("#")  # migrate-fi: ignore[FI001]\n', python=True)
    assert len(s.comments) == 1


def test_a_used_comment_is_not_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, f"    return {CALL}  # migrate-fi: ignore[FI001]\n")
    r = invoke("check", *FROM, "m.py")
    assert r.exit_code == 0, r.output
    assert r.stdout == ""


def test_a_stale_comment_is_reported_with_its_position(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    migrated = CALL.replace("False, True)", "False, enable_pdl=True)")
    write(tmp_path, f"    return {migrated}  # migrate-fi: ignore[FI001]\n")
    r = invoke("check", *FROM, "m.py")
    assert r.exit_code == 1
    col = len(f"    return {migrated}  ") + 1
    assert r.stdout.startswith(f"m.py:5:{col}: FI000 this `migrate-fi: ignore` (FI001) silences")
    # apply leaves the comment alone (a person wrote it), and check keeps saying so
    r = invoke("apply", *FROM, "m.py")
    assert r.exit_code == 1 and "FI000" in r.stdout
    assert "migrate-fi: ignore[FI001]" in (tmp_path / "m.py").read_text()


def test_unused_suppressions_can_be_ignored_or_left_out_of_a_selection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "    return 1  # migrate-fi: ignore[FI001]\n")
    assert invoke("check", *FROM, "--ignore", "FI000", "m.py").exit_code == 0
    assert invoke("check", *FROM, "--ignore", "unused_suppression", "m.py").exit_code == 0
    assert invoke("check", *FROM, "--select", "FI001", "m.py").exit_code == 0
    assert invoke("check", *FROM, "--select", "FI001,FI000", "m.py").exit_code == 1


def test_a_comment_for_a_rule_that_did_not_run_is_not_judged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    # FI004 migrates a change of 0.6.11? No: it does not run for 0.6.12 -> 0.6.14 at all.
    write(tmp_path, "    return 1  # migrate-fi: ignore[FI004, allreduce-workspace-group]\n")
    r = invoke("check", "--from", "0.6.12", "--to", "0.6.14", "m.py")
    assert r.exit_code == 0, r.output


def test_a_bare_comment_is_judged_only_where_every_rule_ran(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "    return 1  # migrate-fi: ignore\n")
    assert invoke("check", *FROM, "m.py").exit_code == 0
    # with the one rule of a narrow selection, the comment is judged against it
    r = invoke("check", *FROM, "--select", "FI001,FI000", "m.py")
    assert r.exit_code == 1 and "FI000" in r.stdout and "(every rule)" in r.stdout


def test_explain_knows_fi000() -> None:
    r = invoke("explain", "FI000")
    assert r.exit_code == 0 and r.stdout.startswith("FI000 (unused_suppression)")


def test_check_says_how_to_mark_a_checked_site(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "    return fp4_quantize(x, *gs)\n")  # *args: left for a person
    r = invoke("check", *FROM, "m.py")
    assert r.exit_code == 1
    assert "1 for a person to check" in r.stderr
    assert "silenced by `# migrate-fi: ignore[FI001]`" in r.stderr
    # marked as the hint says, the site is no longer reported, and the comment is not stale
    write(tmp_path, "    return fp4_quantize(x, *gs)  # migrate-fi: ignore[FI001]\n")
    r = invoke("check", *FROM, "m.py")
    assert r.exit_code == 0, r.output
    assert "silenced by" not in r.stderr
