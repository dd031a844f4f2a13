"""`--output-format sarif`: valid SARIF 2.1.0 (checked against the OASIS schema), one result per
site, and fixes whose replacements give exactly what `apply` writes."""

from __future__ import annotations

import ast
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner, Result
from hypothesis import given
from hypothesis import strategies as st

from migrate_fi.base.results import Replacement
from migrate_fi.cli import cli
from migrate_fi.framework.rule import Fix, Rule

SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text())
FROM = ("--from", "0.6.10", "--to", "0.6.11")
SOURCE = (
    "from flashinfer import fp4_quantize\n"
    "from flashinfer.comm import create_allreduce_fusion_workspace\n\n\n"
    "def q(x, gs, tp_group):\n"
    "    a = fp4_quantize(x, gs[:1], 16, False, True, False, True)\n"
    "    b = fp4_quantize(\n"
    "        x, gs[:1], 16,\n"
    "        False, True, False, True,  # keep this comment\n"
    "    )\n"
    "    c = fp4_quantize(x, *gs)  # left for a person\n"
    "    d = fp4_quantize(x, gs)  # one element? FI003 asks\n"
    "    ws = create_allreduce_fusion_workspace(backend='trtllm', world_size=2, rank=0)\n"
    "    return a, b, c, d, ws\n"
)


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def sarif(*args: str) -> dict:
    r = invoke("check", *FROM, "--output-format", "sarif", *args)
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, SCHEMA)
    return doc


def apply_replacements(text: str, replacements: list[dict]) -> str:
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(line: int, col: int) -> int:
        return starts[line - 1] + col - 1

    spans = []
    for r in replacements:
        region = r["deletedRegion"]
        start = offset(region["startLine"], region["startColumn"])
        end = offset(region["endLine"], region["endColumn"])
        spans.append((start, end, r["insertedContent"]["text"]))
    for start, end, new in sorted(spans, reverse=True):
        text = text[:start] + new + text[end:]
    return text


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(SOURCE)
    return tmp_path


def test_sarif_is_valid_and_lists_every_site(project: Path) -> None:
    doc = sarif("m.py")
    (run,) = doc["runs"]
    assert run["tool"]["driver"]["name"] == "migrate-fi"
    rules = [r["id"] for r in run["tool"]["driver"]["rules"]]
    results = run["results"]
    text = invoke("check", *FROM, "m.py").stdout.splitlines()
    assert len(results) == len(text)
    for r in results:
        assert rules[r["ruleIndex"]] == r["ruleId"]
        region = r["locations"][0]["physicalLocation"]["region"]
        assert f"m.py:{region['startLine']}:{region['startColumn']}: {r['ruleId']} " in "\n".join(
            text
        )
    assert run["invocations"][0]["executionSuccessful"] is True
    assert run["columnKind"] == "unicodeCodePoints"


def test_sarif_fixes_give_what_apply_writes(project: Path) -> None:
    doc = sarif("m.py")
    results = doc["runs"][0]["results"]
    with_fix = [r for r in results if "fixes" in r]
    without = [r for r in results if "fixes" not in r]
    assert {r["ruleId"] for r in with_fix} == {"FI001", "FI004"}
    assert {r["ruleId"] for r in without} == {"FI001", "FI003"}  # *args, and the scale
    # each fix alone, on the file as read
    for r in with_fix:
        (change,) = r["fixes"][0]["artifactChanges"]
        assert change["artifactLocation"]["uri"] == "m.py"
        alone = apply_replacements(SOURCE, change["replacements"])
        assert alone != SOURCE
        compile(alone, "m.py", "exec")
    # the fixes of one rule together: what apply writes for that rule
    fi001 = [
        rep
        for r in with_fix
        if r["ruleId"] == "FI001"
        for rep in r["fixes"][0]["artifactChanges"][0]["replacements"]
    ]
    expected = invoke("diff", *FROM, "--select", "FI001", "m.py")
    assert expected.exit_code == 1
    assert invoke("apply", *FROM, "--select", "FI001", "m.py").exit_code == 1  # *args remains
    assert apply_replacements(SOURCE, fi001) == (project / "m.py").read_text()


def test_sarif_carries_files_that_failed(project: Path) -> None:
    (project / "bad.py").write_text("from flashinfer import fp4_quantize\ndef f(:\n")
    doc = sarif(".")
    invocation = doc["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False
    (note,) = invocation["toolExecutionNotifications"]
    assert note["level"] == "error" and note["message"]["text"].startswith("bad.py: syntax error")


def test_sarif_with_non_ascii_columns(project: Path) -> None:
    (project / "m.py").write_text(
        "from flashinfer import fp4_quantize\n"
        "é = fp4_quantize('é', gs[:1], 16, False, True, False, True)\n"
    )
    doc = sarif("m.py")
    (r,) = doc["runs"][0]["results"]
    fixed = apply_replacements(
        (project / "m.py").read_text(), r["fixes"][0]["artifactChanges"][0]["replacements"]
    )
    assert fixed.endswith("False, enable_pdl=True)\n")


def test_sarif_from_the_configuration(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.migrate-fi]\noutput-format = "sarif"\n')
    r = invoke("check", *FROM, "m.py")
    jsonschema.validate(json.loads(r.stdout), SCHEMA)


def test_each_fix_is_diffed_on_the_lines_it_touches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fix's replacements come from the lines it touches, not from diffing the whole file
    (quadratic in a file with thousands of sites): on a file of many sites, each fix's are
    those of the whole file with that fix alone applied, spliced (FI001) or made by LibCST
    (FI004, which adds an import)."""
    import migrate_fi.run.pipeline as pipeline
    from migrate_fi.framework import fixdetails as sarif_module
    from migrate_fi.framework.fixes import apply_fixes

    compared: list[str] = []

    def checked(
        cls: type[Rule], text: str, tree: ast.Module | None
    ) -> Callable[[Fix], tuple[Replacement, ...]]:
        windowed = sarif_module.fix_replacements(cls, text, tree)

        def details(fix: Fix) -> tuple[Replacement, ...]:
            whole = sarif_module.replacements(text, apply_fixes(text, tree, [fix], cls))
            assert windowed(fix) == whole
            compared.append(cls.code)
            return whole

        return details

    monkeypatch.setattr(pipeline, "fix_replacements", checked)
    monkeypatch.chdir(tmp_path)
    body = "".join(
        f"\n\ndef q{i}(x, gs):\n"
        f"    a = fp4_quantize(x, gs[:1], 16, False, True, False, True)\n"
        f"    ws = create_allreduce_fusion_workspace(backend='trtllm', world_size=2, rank={i})\n"
        f"    return a, ws\n"
        for i in range(40)
    )
    (tmp_path / "m.py").write_text(SOURCE + body)
    doc = sarif("m.py")
    assert sorted(set(compared)) == ["FI001", "FI004"]
    assert len(compared) == sum("fixes" in r for r in doc["runs"][0]["results"]) > 40


@given(
    st.lists(st.sampled_from(["a", "b", "\n", "\r\n", "\r", "é", ")"]), max_size=30),
    st.integers(0, 30),
    st.integers(0, 30),
    st.lists(st.sampled_from(["a", "\n", "\r", "x", ")"]), max_size=5),
)
def test_the_changed_lines_hold_every_change(
    pieces: list[str], at: int, length: int, put: list[str]
) -> None:
    """`_changed_lines`: the text before them and after them is the same in both texts, and
    they start and end where lines do; the replacements found there turn the old text into
    the new."""
    from migrate_fi.editing.sources import line_starts
    from migrate_fi.framework.fixdetails import _changed_lines, replacements

    old = "".join(pieces)
    at = min(at, len(old))
    new = old[:at] + "".join(put) + old[at + length :]
    starts = line_starts(old)
    first, old_end = _changed_lines(old, new, starts)
    start = starts[first]
    new_end = old_end + len(new) - len(old)
    assert old[:start] == new[:start]
    assert old[old_end:] == new[new_end:]
    assert old_end in starts or old_end == len(old)
    found = replacements(old[start:old_end], new[start:new_end], first)
    assert apply_replacements(old, [_as_sarif(r) for r in found]) == new


def _as_sarif(r: Replacement) -> dict[str, Any]:
    from migrate_fi.outputs.sarif import _replacement

    return _replacement(r)


@pytest.mark.parametrize(
    "span, text",
    [
        ((2, 1, 2, 2), "B"),  # within its line
        ((2, 0, 3, 0), ""),  # the whole line, its ending included
        ((2, 1, 2, 9), "Z"),  # past the end of its line, into the next: as splicing has it
        ((4, 0, 4, 0), "d\n"),  # after the last line
    ],
)
def test_a_spliced_fix_gives_what_splicing_the_whole_text_gives(
    span: tuple[int, int, int, int], text: str
) -> None:
    from migrate_fi.base.results import Diagnostic
    from migrate_fi.editing.edits import TextEdit
    from migrate_fi.framework.fixdetails import fix_replacements, replacements
    from migrate_fi.framework.fixes import apply_fixes
    from migrate_fi.run.registry import all_rules

    old = "a = 1\nb = 2\nc = 3\n"
    rule = next(iter(all_rules()))
    fix = Fix(Diagnostic("m.py", span[0], 1, rule.code, rule.id, "m"), (TextEdit(span, text),))
    whole = replacements(old, apply_fixes(old, None, [fix], rule))
    assert fix_replacements(rule, old, None)(fix) == whole
    assert apply_replacements(old, [_as_sarif(r) for r in whole]) == apply_fixes(
        old, None, [fix], rule
    )
