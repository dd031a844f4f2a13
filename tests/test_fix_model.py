"""The fix model as the engine enforces it: several edits and imports per fix, per-fix safety,
suppression of whole fixes, overlapping edits, and rules that break their own declaration.

The rules here are test doubles defined in this file (never registered), run through
`process_source`, the function the CLI uses for every file.
"""

from __future__ import annotations

import ast

from migrate_fi.base.messages import Said, say
from migrate_fi.base.results import FileResult, FixAvailability, FixSafety, RunResult, Status
from migrate_fi.base.versions import parse_version
from migrate_fi.editing.edits import AddImport, add_keyword, replace_with
from migrate_fi.framework.rule import FileContext, Rule, RunOptions
from migrate_fi.outputs.reporting import format_diagnostic, summary
from migrate_fi.run.pipeline import Mode, process_source

SOURCE = """\
import flashinfer


def build(group):
    ws = flashinfer.make(8)
    return ws
"""


def calls(ctx: FileContext) -> list[ast.Call]:
    """The calls of `flashinfer.make`."""
    return [c for c, _ in ctx.resolver.iter_calls() if ast.unparse(c.func) == "flashinfer.make"]


class _Rule(Rule):
    """A test double."""

    code = "FI900"
    summary = "test"
    introduced_in = "0.6.11"
    triggers = ("flashinfer",)
    fix_safety = FixSafety.SAFE
    site_safety: FixSafety | None = None

    def find(self, ctx: FileContext) -> None:
        (call,) = calls(ctx)
        function = next(s for s in ctx.tree.body if isinstance(s, ast.FunctionDef))
        statement = function.body[0]
        ctx.fix(
            call,
            say("pass the group", "传入 group"),
            ctx.replace(call, "Call", add_keyword("group", "group")),
            ctx.insert_before(statement, "torch.cuda.synchronize()\n"),
            imports=[AddImport("torch")],
            safety=self.site_safety,
        )


def make(name: str, **attrs: object) -> type[Rule]:
    cls = type(name, (_Rule,), {"__doc__": "A test double.", **attrs})
    cls.id = name.lower()
    return cls


def run(rule: type[Rule], source: str = SOURCE, mode: Mode = Mode.APPLY, unsafe: bool = False):
    options = RunOptions(parse_version("0.6.10"), parse_version("0.6.11"), unsafe_fixes=unsafe)
    return process_source(source.encode(), "m.py", [rule], options, mode)


MIGRATED = """\
import flashinfer
import torch


def build(group):
    torch.cuda.synchronize()
    ws = flashinfer.make(8, group=group)
    return ws
"""


def test_a_fix_of_several_edits_and_an_import() -> None:
    result = run(make("Several"))
    assert result.error is None, result.error
    assert result.new_text == MIGRATED
    (d,) = result.diagnostics
    assert d.safety is FixSafety.SAFE and d.applies
    # the import is there already: not added again
    with_torch = "import torch\n" + SOURCE
    again = run(make("Several"), with_torch)
    assert again.new_text is not None and again.new_text.count("import torch") == 1


def test_check_finds_the_same_site_without_libcst() -> None:
    result = run(make("Several"), mode=Mode.CHECK)
    assert result.status is Status.UNCHANGED
    assert [d.applies for d in result.diagnostics] == [True]


def test_review_fixes_are_held_back_unless_unsafe_fixes() -> None:
    rule = make("Review", fix_safety=FixSafety.REVIEW)
    held = run(rule)
    assert held.status is Status.UNCHANGED
    (d,) = held.diagnostics
    assert d.safety is FixSafety.REVIEW and not d.applies and d.held_back
    assert "FI900 [review fix] pass the group" in format_diagnostic(d)
    applied = run(rule, unsafe=True)
    assert applied.new_text == MIGRATED
    assert applied.diagnostics[0].applies


def test_a_site_may_lower_the_safety_never_raise_it() -> None:
    lowered = run(make("Lowered", site_safety=FixSafety.REVIEW))
    assert lowered.status is Status.UNCHANGED and lowered.diagnostics[0].held_back
    raised = run(make("Raised", fix_safety=FixSafety.REVIEW, site_safety=FixSafety.SAFE))
    assert raised.status is Status.FAILED
    assert raised.error is not None
    assert "produced a safe fix; its declared fix safety is review" in raised.error.reason


def test_a_report_only_rule_that_fixes_is_a_rule_error() -> None:
    result = run(make("ReportOnly", fix_availability=FixAvailability.NONE, fix_safety=None))
    assert result.status is Status.FAILED
    assert result.error is not None
    assert "declared report-only (fix_availability NONE) but produced a fix" in result.error.reason
    assert result.new_text is None


class _ReportsOne(_Rule):
    """A test double: reports the call instead of fixing it."""

    def find(self, ctx: FileContext) -> None:
        (call,) = calls(ctx)
        ctx.report(call, say("a person must look", "需要人工查看"))


def test_a_rule_that_always_fixes_may_not_report_a_bare_site() -> None:
    always = type("Always", (_ReportsOne,), {"__doc__": "A test double."})
    always.fix_availability = FixAvailability.ALWAYS
    always.id = "always"
    result = run(always)
    assert result.status is Status.FAILED and result.error is not None
    assert "fix_availability ALWAYS" in result.error.reason
    sometimes = type("Sometimes", (_ReportsOne,), {"__doc__": "A test double."})
    sometimes.id = "sometimes"
    assert run(sometimes).diagnostics[0].safety is None  # the usual declaration: fine


def test_suppression_drops_the_whole_fix() -> None:
    source = SOURCE.replace("(8)", "(8)  # migrate-fi: ignore[FI900]")
    result = run(make("Suppressed"), source)
    assert result.status is Status.UNCHANGED and result.diagnostics == []


def test_two_fixes_of_one_call_are_made_one_rewrite() -> None:
    class Both(_Rule):
        """A test double whose two fixes edit the same call."""

        def find(self, ctx: FileContext) -> None:
            (call,) = calls(ctx)
            for name in ("a", "b"):
                ctx.fix(call, Said(name, name), ctx.replace(call, "Call", add_keyword(name, "1")))

    Both.id = "both"
    result = run(Both)
    assert result.status is Status.CHANGED and result.error is None
    assert "flashinfer.make(8, a=1, b=1)" in (result.new_text or "")


def test_overlapping_edits_fail_the_file_and_write_nothing() -> None:
    class Overlapping(_Rule):
        """A test double whose two fixes edit overlapping source: the call, and its argument
        inside it (a transform that does not keep the arguments)."""

        def find(self, ctx: FileContext) -> None:
            (call,) = calls(ctx)
            ctx.fix(call, say("call", "调用"), ctx.replace(call, "Call", replace_with("g()")))
            arg = call.args[0]
            ctx.fix(arg, say("arg", "参数"), ctx.replace(arg, "Integer", replace_with("9")))

    Overlapping.id = "overlapping"
    result = run(Overlapping)
    assert result.status is Status.FAILED and result.new_text is None
    assert result.error is not None and "two edits overlap" in result.error.reason


def test_summary_says_how_many_review_fixes_were_held_back() -> None:
    held = run(make("Review2", fix_safety=FixSafety.REVIEW))
    result = RunResult(files=[held, FileResult("n.py", Status.SKIPPED)])
    text = summary(result, "apply")
    assert "1 review fix held back" in text and "--unsafe-fixes" in text
    assert "1 review fix applied only with --unsafe-fixes" in summary(result, "check")


def test_the_text_switch_chooses_the_way_a_fix_is_applied() -> None:
    """`RunOptions.splice_text`: a fix said as text is spliced without LibCST; switched off, the
    same fix goes through LibCST, to the same bytes (what the fixture harness compares)."""
    import subprocess
    import sys

    script = """
import sys
from migrate_fi.framework.rule import RunOptions
from migrate_fi.run.pipeline import Mode, process_source
from migrate_fi.run.registry import select
from migrate_fi.base.versions import parse_version
old, new = parse_version("0.6.10"), parse_version("0.6.11")
sel = select(old, new, ["FI001"])
src = b"from flashinfer import fp4_quantize\\nfp4_quantize(x, s, 16, False, True, False, True)\\n"
splice = sys.argv[1] == "1"
options = RunOptions(old, new, rules=sel.settings(), splice_text=splice)
r = process_source(src, "m.py", sel.rules, options, Mode.APPLY)
print(r.new_text.splitlines()[1], "libcst" in sys.modules)
"""
    out = {
        flag: subprocess.run(
            [sys.executable, "-c", script, flag], capture_output=True, text=True, check=True
        ).stdout.split()
        for flag in ("1", "0")
    }
    assert out["1"][-1] == "False" and out["0"][-1] == "True"
    assert out["1"][:-1] == out["0"][:-1]  # the same line either way
