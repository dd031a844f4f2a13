"""SARIF 2.1.0 output (`--output-format sarif`), for GitHub code scanning and other viewers.

One run: the tool and every rule that ran (with its summary and full explanation), one result
per site with its region, and, for a site with a fix, the fix as SARIF ``fixes`` (the
replacements it makes in the file as it was read). Files that could not be processed are
``toolExecutionNotifications`` of the invocation, which is then not successful. Columns are
counted in Unicode code points (``columnKind``), as Python counts them.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Sequence
from typing import Any

from migrate_fi import __version__
from migrate_fi.analysis.suppression import UNUSED_CODE
from migrate_fi.base.results import Diagnostic, FileError, Replacement, RunResult

__all__ = ["SCHEMA", "sarif_document"]

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_BASE = "%SRCROOT%"


def sarif_document(
    result: RunResult, diagnostics: Sequence[Diagnostic], command: str
) -> dict[str, Any]:
    rules, index = _rules(result, diagnostics)
    errors = result.errors
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "migrate-fi",
                "version": __version__,
                "semanticVersion": __version__,
                "rules": rules,
            }
        },
        "invocations": [
            {
                "executionSuccessful": not errors,
                "toolExecutionNotifications": [_notification(e) for e in errors],
                "properties": {
                    "command": command,
                    "from": result.from_version,
                    "to": result.to_version,
                    "notices": list(result.notices),
                },
            }
        ],
        "originalUriBaseIds": {_BASE: {"uri": pathlib.Path(os.getcwd()).as_uri() + "/"}},
        "columnKind": "unicodeCodePoints",
        "results": [_result(d, index) for d in diagnostics],
    }
    return {"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}


def _rules(
    result: RunResult, diagnostics: Sequence[Diagnostic]
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The descriptors of the rules that ran and of every code a result names."""
    from migrate_fi.analysis.suppression import UNUSED_ID, explanation
    from migrate_fi.outputs.docs import explain_text
    from migrate_fi.run.registry import all_rules

    by_code = {c.code: c for c in all_rules()}
    codes = list(dict.fromkeys([*result.rules, *(d.code for d in diagnostics)]))
    out: list[dict[str, Any]] = []
    for code in codes:
        cls = by_code.get(code)
        if cls is not None:
            name, short, full = cls.id, cls.summary, explain_text(cls)
            level = "warning"
        elif code == UNUSED_CODE:
            name, short = UNUSED_ID, "A suppression comment that silences nothing"
            full, level = explanation(), "note"
        else:  # pragma: no cover - every code comes from a registered rule
            continue
        out.append(
            {
                "id": code,
                "name": name,
                "shortDescription": {"text": short},
                "fullDescription": {"text": full.strip()},
                "help": {"text": f"migrate-fi explain {code}"},
                "defaultConfiguration": {"level": level},
            }
        )
    return out, {rule["id"]: i for i, rule in enumerate(out)}


def _location(path: str) -> dict[str, Any]:
    if os.path.isabs(path):
        return {"uri": pathlib.Path(path).as_uri()}
    return {"uri": pathlib.PurePath(path).as_posix(), "uriBaseId": _BASE}


def _region(line: int, col: int, end_line: int | None, end_col: int | None) -> dict[str, int]:
    region = {"startLine": line, "startColumn": col}
    if end_line is not None:
        region["endLine"] = end_line
        if end_col is not None:
            region["endColumn"] = end_col
    return region


def _result(d: Diagnostic, index: dict[str, int]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "ruleId": d.code,
        "message": {"text": d.message},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": _location(d.path),
                    "region": _region(d.line, d.col, d.end_line, d.end_col),
                }
            }
        ],
        "properties": {
            "rule": d.rule,
            "fixSafety": d.safety.value if d.safety is not None else "none",
            "appliedByApply": d.applies,
        },
    }
    if d.code in index:
        out["ruleIndex"] = index[d.code]
    out["level"] = "note" if d.code == UNUSED_CODE else "warning"
    if d.replacements:
        out["fixes"] = [
            {
                "description": {
                    "text": "migrate-fi apply"
                    + (" --unsafe-fixes (a fix to review)" if not d.applies else "")
                },
                "artifactChanges": [
                    {
                        "artifactLocation": _location(d.path),
                        "replacements": [_replacement(r) for r in d.replacements],
                    }
                ],
            }
        ]
    return out


def _replacement(r: Replacement) -> dict[str, Any]:
    return {
        "deletedRegion": _region(r.line, r.col, r.end_line, r.end_col),
        "insertedContent": {"text": r.text},
    }


def _notification(e: FileError) -> dict[str, Any]:
    location: dict[str, Any] = {"artifactLocation": _location(e.path)}
    if e.line is not None:
        location["region"] = _region(e.line, e.col or 1, None, None)
    return {
        "level": "error",
        "message": {"text": f"{e.path}: {e.reason}"},
        "locations": [{"physicalLocation": location}],
    }
