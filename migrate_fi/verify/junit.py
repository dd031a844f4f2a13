"""Reading pytest's JUnit XML report: one outcome per test, with the reason or the first lines."""

from __future__ import annotations

import enum
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

__all__ = ["Outcome", "TestResult", "parse_junit"]

_FIRST_LINES = 6


class Outcome(str, enum.Enum):
    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"
    ERROR = "error"


@dataclass(frozen=True)
class TestResult:
    test_id: str  # "tests/test_fp4.py::test_shapes" (from classname and name)
    outcome: Outcome
    detail: str = ""  # a skip's reason, a failure's first lines
    seconds: float = 0.0

    def to_json(self) -> dict[str, object]:
        return {
            "test": self.test_id,
            "outcome": self.outcome.value,
            "detail": self.detail,
            "seconds": self.seconds,
        }


def _test_id(case: ET.Element) -> str:
    classname, name = case.get("classname", ""), case.get("name", "")
    if not classname and case.get("file"):  # a whole module skipped or failing at collection
        return case.get("file", name)
    parts = classname.split(".")
    # pytest writes "tests.test_fp4" (module path) or "tests.test_moe.TestMoE" (a class in it)
    module_parts = [p for p in parts if p and not p[:1].isupper()]
    classes = [p for p in parts if p[:1].isupper()]
    path = "/".join(module_parts) + ".py" if module_parts else case.get("file", "")
    return "::".join([path, *classes, name]) if path else name


def _first_lines(text: str) -> str:
    lines = [line.rstrip() for line in (text or "").strip().splitlines() if line.strip()]
    return "\n".join(lines[:_FIRST_LINES])


def _skip_reason(message: str, text: str) -> str:
    """pytest writes a module-level skip as message "collection skipped" and the reason in the
    text, as ``('path', line, 'Skipped: reason')``; a test's skip as the message itself."""
    if message and message != "collection skipped":
        reason = message
    else:
        found = re.search(r"'Skipped: (.*)'\)\s*$", text.strip()) or re.search(
            r":\d+: (.*)$", text.strip()
        )
        reason = found.group(1) if found else _first_lines(text) or message
    if reason.startswith(("Skipped: ", "skipped: ")):
        reason = reason.split(": ", 1)[1]
    return reason


def parse_junit(xml_text: str) -> list[TestResult]:
    """Every test case of a JUnit XML document, in order. ValueError when it is not one."""
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError as exc:
        raise ValueError(f"not a JUnit XML report ({exc})") from None
    out = []
    for case in root.iter("testcase"):
        seconds = float(case.get("time", "0") or 0)
        outcome, detail = Outcome.PASSED, ""
        for child in case:
            message = child.get("message", "")
            if child.tag == "skipped":
                outcome = Outcome.SKIPPED
                detail = _skip_reason(message, child.text or "")
            elif child.tag == "failure":
                outcome, detail = Outcome.FAILED, _first_lines(message + "\n" + (child.text or ""))
            elif child.tag == "error":
                outcome, detail = Outcome.ERROR, _first_lines(message + "\n" + (child.text or ""))
        out.append(TestResult(_test_id(case), outcome, detail, seconds))
    return out
