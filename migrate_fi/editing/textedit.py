"""Applying text edits: spans of a file's text replaced, for files that are not Python and for
Python edits a rule could say as text (`migrate_fi.editing.edits.Replace.as_text`).

Kept apart from `cstedit` so that these runs never import LibCST. The same overlap rule
applies: two edits touching the same text are a bug. Linear in the text and the edits.
"""

from __future__ import annotations

from collections.abc import Sequence

from migrate_fi.editing.edits import EditError, TextEdit, check_overlaps
from migrate_fi.editing.sources import line_starts

__all__ = ["apply_text_edits"]


def apply_text_edits(text: str, edits: Sequence[tuple[str, TextEdit]]) -> str:
    """Splice every edit into ``text``; `EditError` for overlapping edits or spans outside it."""
    check_overlaps(edits)
    starts = line_starts(text)

    def offset(line: int, col: int) -> int:
        if not 1 <= line <= len(starts):
            raise EditError(f"an edit points at line {line}, outside the file")
        return starts[line - 1] + col

    # (insertions at one point go in in the order given: the sort is stable)
    spans = sorted(
        ((offset(*e.span[:2]), offset(*e.span[2:]), e.text) for _label, e in edits),
        key=lambda s: (s[0], s[1]),
    )
    pieces: list[str] = []
    at = 0
    for start, end, new in spans:
        pieces += (text[at:start], new)
        at = end
    pieces.append(text[at:])
    return "".join(pieces)
