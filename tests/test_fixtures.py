"""One test for every rule fixture: adding a case is adding files, never test code.

tests/fixtures/<rule_id>/<case>.before.py   the input (another extension for a text file:
                                               <case>.before.toml, .txt, .sh, .Dockerfile...)
tests/fixtures/<rule_id>/<case>.after.py    the expected output, byte for byte (same extension)
                                               (absent for noop_<case>: the input must not change)
tests/fixtures/<rule_id>/<case>.report.txt  the sites left for a person, one per line
                                               (absent: there must be none)
tests/fixtures/<rule_id>/<case>.toml        optional: from, to, keywords, module, package,
                                               unsafe_fixes, path (the file name the rule
                                               sees), select (the run's selection, which
                                               decides what other rules own), options (the
                                               rule's [tool.migrate-fi.rules.<id>] table)

Each case runs through `migrate_fi.run.pipeline.process_source`, the function the CLI uses, with the
settings the CLI would give the rule for that range and selection.
"""

from __future__ import annotations

import ast
import os
import sys
import tempfile
from pathlib import Path

import pytest

from migrate_fi.base.results import Status
from migrate_fi.base.versions import KNOWN_RELEASES, parse_version
from migrate_fi.framework.rule import KeywordStyle, RunOptions
from migrate_fi.outputs.reporting import format_diagnostic
from migrate_fi.run.pipeline import Mode, process_source
from migrate_fi.run.registry import all_rules, rule_options, select

# a case's range when its .toml names none: from the first release the rules were written against
DEFAULT_FROM = "0.6.8"

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

FIXTURES = Path(__file__).parent / "fixtures"
RULES = {c.id: c for c in all_rules()}


def before_file(folder: Path, case: str) -> Path:
    (found,) = folder.glob(f"{case}.before.*")
    return found


def after_file(folder: Path, case: str) -> Path:
    suffix = before_file(folder, case).name.split(".before", 1)[1]
    return folder / f"{case}.after{suffix}"


def case_names(folder: Path) -> list[str]:
    return sorted({p.name.split(".before.", 1)[0] for p in folder.glob("*.before.*")})


def _cases() -> list[pytest.param]:
    cases = []
    for cid in sorted(RULES):
        for case in case_names(FIXTURES / cid):
            cases.append(pytest.param(cid, case, id=f"{cid}/{case}"))
    return cases


def _run(cid: str, case: str, data: bytes, mode: str, splice_text: bool = True):
    folder = FIXTURES / cid
    settings_file = folder / f"{case}.toml"
    settings = tomllib.loads(settings_file.read_text()) if settings_file.exists() else {}
    from_v = parse_version(settings.get("from", DEFAULT_FROM))
    to_v = parse_version(settings.get("to", KNOWN_RELEASES[-1]))
    selection = select(from_v, to_v, settings.get("select", ()))
    # a case for a range the rule does not run in must be a noop: nothing runs, nothing changes
    selected = RULES[cid] in selection.rules
    assert selected or case.startswith("noop_"), f"{cid} does not run for {from_v} -> {to_v}"
    options = RunOptions(
        from_version=from_v,
        to_version=to_v,
        keyword_style=KeywordStyle(settings.get("keywords", "tail")),
        unsafe_fixes=bool(settings.get("unsafe_fixes", False)),
        rules=selection.settings(rule_options({cid: settings.get("options", {})}, f"{case}.toml")),
        splice_text=splice_text,
    )
    module = (settings.get("module"), bool(settings.get("package", False)))
    rules = [RULES[cid]] if selected else []
    # the file name the rule sees: a test file's name, `pyproject.toml`...
    path = settings.get("path", before_file(folder, case).name)
    # (in a folder of its own: a rule that searches the project for a function's callers finds
    # the case alone, whatever files lie around the checkout; its pyproject.toml gives the line
    # length the cases are written for, which fixes that wrap a call read from the project;
    # three folders down, so that the folder above a case's package, where a search starts, is
    # still its own, not the system's temporary folder with whatever lies there)
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as alone:
        Path(alone, "pyproject.toml").write_text("[tool.ruff]\nline-length = 100\n")
        work = Path(alone, "a", "b", "c")
        work.mkdir(parents=True)
        os.chdir(work)
        try:
            return process_source(data, path, rules, options, Mode(mode), module)
        finally:
            os.chdir(here)


@pytest.mark.parametrize(("cid", "case"), _cases())
def test_fixture(cid: str, case: str) -> None:
    folder = FIXTURES / cid
    before = before_file(folder, case).read_bytes()
    expected_file = after_file(folder, case)
    if case.startswith("noop_"):
        assert not expected_file.exists(), f"{case} is a noop case: it must have no .after file"
        expected = before
    else:
        assert expected_file.exists(), f"missing {expected_file.name} (or name the case noop_...)"
        expected = expected_file.read_bytes()
        assert expected != before, "an .after file identical to its input: name the case noop_..."

    result = _run(cid, case, before, "apply")
    assert result.error is None, result.error
    output = result.new_bytes if result.status is Status.CHANGED else before
    assert output == expected
    if before_file(folder, case).suffix == ".py":
        ast.parse(output)
        # the edits a rule also says as text (spliced without LibCST) give the same bytes
        through_libcst = _run(cid, case, before, "apply", splice_text=False)
        assert through_libcst.new_bytes == result.new_bytes

    # check finds exactly the sites apply rewrites, and the same sites for a person
    checked = _run(cid, case, before, "check")
    assert checked.diagnostics == result.diagnostics
    assert any(d.fixable for d in checked.diagnostics) == (expected != before)

    # what is left for a person (review fixes held back included, marked)
    report_file = folder / f"{case}.report.txt"
    manual = "".join(format_diagnostic(d) + "\n" for d in result.diagnostics if not d.fixable)
    if report_file.exists():
        assert manual == report_file.read_text()
    else:
        assert manual == "", f"the rule reported sites; put them in {report_file.name}"

    # idempotent: a second run changes nothing and finds nothing left to fix
    again = _run(cid, case, output, "apply")
    assert again.error is None
    assert again.status is not Status.CHANGED
    assert not any(d.fixable for d in again.diagnostics)


def test_every_rule_has_fixtures() -> None:
    from migrate_fi.base.results import FixAvailability

    for cid, cls in RULES.items():
        cases = case_names(FIXTURES / cid)
        assert any(c.startswith("noop_") for c in cases), f"{cid}: no case it must leave alone"
        if cls.fix_availability is FixAvailability.NONE:  # a report-only rule never rewrites
            assert all(c.startswith("noop_") for c in cases), f"{cid} never rewrites"
            assert list((FIXTURES / cid).glob("*.report.txt")), f"{cid}: no case that reports"
        else:
            assert any(not c.startswith("noop_") for c in cases), f"{cid}: no case that rewrites"


def test_no_stray_fixture_files() -> None:
    for folder in FIXTURES.iterdir():
        if folder.name == "projects" or not folder.is_dir():
            continue
        assert folder.name in RULES, f"fixtures for unknown rule {folder.name}"
        cases = set(case_names(folder))
        for f in folder.iterdir():
            stem = f.name.split(".")[0]
            assert stem in cases, f"{f.name} belongs to no case"
