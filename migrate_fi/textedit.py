"""Applying text edits: spans of a file's text replaced, for files that are not Python.

Kept apart from `cstedit` so that `check`/`diff`/`apply` of a `pyproject.toml` or a Dockerfile
never import LibCST. The same overlap rule applies: two edits touching the same text are a bug.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from migrate_fi.edits import EditError, TextEdit, check_overlaps

__all__ = ["apply_text_edits"]

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def _offsets(text: str) -> list[int]:
    """The offset where each line starts (line 1 at index 0)."""
    starts, pos = [], 0
    for m in _LINE.finditer(text):
        starts.append(pos)
        pos = m.end()
    starts.append(pos)  # a position on the line after the last one (an insertion at the end)
    return starts


def apply_text_edits(text: str, edits: Sequence[tuple[str, TextEdit]]) -> str:
    """Splice every edit into ``text``; `EditError` for overlapping edits or spans outside it."""
    check_overlaps(edits)
    starts = _offsets(text)

    def offset(line: int, col: int) -> int:
        if not 1 <= line <= len(starts):
            raise EditError(f"an edit points at line {line}, outside the file")
        return starts[line - 1] + col

    spans = sorted(
        ((offset(*e.span[:2]), offset(*e.span[2:]), e.text, label) for label, e in edits),
        key=lambda s: (s[0], s[1]),
        reverse=True,
    )
    out = text
    for start, end, new, _label in spans:
        out = out[:start] + new + out[end:]
    return out
