"""Suppression comments: ``# migrate-fi: ignore[FI003]`` on a line a person has decided on.

A comment on any line a site spans silences it: bare ``ignore`` every rule, ``ignore[...]`` the
rules named by code or id. A silenced fix is dropped whole, every edit and import of it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from migrate_fi.results import Diagnostic

__all__ = ["is_suppressed", "source_lines"]

_SUPPRESS = re.compile(r"#\s*migrate-fi:\s*ignore(?:\[([A-Za-z0-9_,\s]*)\])?")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def source_lines(text: str) -> list[str]:
    return _LINE_BREAK.split(text)


def is_suppressed(lines: Sequence[str], d: Diagnostic) -> bool:
    for line in lines[d.line - 1 : d.end_line or d.line]:
        if "migrate-fi" not in line:
            continue
        for m in _SUPPRESS.finditer(line):
            names = m.group(1)
            if names is None:
                return True
            wanted = {n.strip() for n in names.split(",")}
            if d.code in wanted or d.codemod in wanted:
                return True
    return False
