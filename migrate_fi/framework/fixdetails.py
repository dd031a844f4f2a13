"""What a fix changes, as replacements of whole lines: the fix details of a SARIF result
(`migrate_fi.outputs.sarif`) and of the JSON output, worked out in the workers where the file's
text and tree are at hand."""

from __future__ import annotations

import ast
import bisect
from collections.abc import Callable, Sequence

from migrate_fi.base.results import Replacement
from migrate_fi.editing.edits import TextEdit, moved_up
from migrate_fi.editing.sources import line_starts, source_lines
from migrate_fi.editing.textedit import apply_text_edits
from migrate_fi.framework.fixes import apply_fixes, text_edits
from migrate_fi.framework.rule import Fix, Rule

__all__ = ["fix_replacements", "replacements"]


def fix_replacements(
    cls: type[Rule], text: str, tree: ast.Module | None
) -> Callable[[Fix], tuple[Replacement, ...]]:
    """What each fix of ``cls`` in the file alone changes in ``text``: `replacements` of the
    lines it touches (the text before and after them is the same). A fix that splices text
    is spliced into those lines only; one that LibCST makes, into the whole text, whose
    changed lines are then found. (Diffing the whole file for each fix took 3 minutes for the
    5,000 sites of a 50,000-line file.)"""

    starts: list[int] = []  # (where each line of ``text`` starts: worked out once)

    def details(fix: Fix) -> tuple[Replacement, ...]:
        if not starts:
            starts.extend(line_starts(text))
        plain = text_edits([fix], cls)
        if plain is None:
            new = apply_fixes(text, tree, [fix], cls)
            first, old_end = _changed_lines(text, new, starts)
            new_end = old_end + len(new) - len(text)
            return replacements(text[starts[first] : old_end], new[starts[first] : new_end], first)
        lines = _lines_of(plain, starts, len(text))
        if lines is None:  # (a span outside the text, or past its line: as apply has it)
            return replacements(text, apply_fixes(text, tree, [fix], cls))
        first, old_end = lines
        shifted = [(label, TextEdit(moved_up(e.span, first), e.text)) for label, e in plain]
        window = text[starts[first] : old_end]
        return replacements(window, apply_text_edits(window, shifted), first)

    return details


def _lines_of(
    edits: Sequence[tuple[str, TextEdit]], starts: list[int], size: int
) -> tuple[int, int] | None:
    """The lines ``edits`` touch, as `_changed_lines` gives them; None when a span does not
    lie within them (outside the text, or a column past the end of its line)."""
    first = min(e.span[0] for _, e in edits) - 1
    last = max(e.span[2] for _, e in edits)  # (1-based: the lines first + 1 .. last)
    if first < 0 or last > len(starts):
        return None
    end = starts[last] if last < len(starts) else size
    for _, e in edits:
        for line, col in (e.span[:2], e.span[2:]):
            if starts[line - 1] + col > end:
                return None
    return first, end


def _changed_lines(old: str, new: str, starts: list[int]) -> tuple[int, int]:
    """The lines of ``old`` that ``new`` changes: (the 0-based index of the first, the offset
    where the text after the last starts)."""
    head = _in_common(old, new)
    tail = _in_common(old, new, from_end=True, limit=min(len(old), len(new)) - head)
    first = bisect.bisect_right(starts, head) - 1
    last_changed = len(old) - tail - 1  # (the last character of ``old`` that differs)
    if last_changed < starts[first]:
        return first, starts[first]  # (an insertion at the start of a line)
    after = bisect.bisect_right(starts, last_changed)
    return first, starts[after] if after < len(starts) else len(old)


def _in_common(a: str, b: str, from_end: bool = False, limit: int | None = None) -> int:
    """How many characters (up to ``limit``, else the shorter's length) ``a`` and ``b`` have
    in common at their start (their end), compared in blocks that double while they match and
    halve where not."""
    limit = min(len(a), len(b)) if limit is None else limit
    n, block = 0, 1 << 12
    while n < limit:
        size = min(block, limit - n)
        if from_end:
            same = a[len(a) - n - size : len(a) - n] == b[len(b) - n - size : len(b) - n]
        else:
            same = a[n : n + size] == b[n : n + size]
        if same:
            n += size
            block *= 2
        elif size == 1:
            return n
        else:
            block = size // 2
    return n


def replacements(old: str, new: str, first_line: int = 0) -> tuple[Replacement, ...]:
    """The changes that turn ``old`` into ``new``: changed runs of lines, narrowed to the
    characters that differ. ``first_line``: lines before ``old`` in its file (its text starts
    a line), added to the lines found."""
    a, b = source_lines(old), source_lines(new)
    out = []
    import difflib

    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        gone, put = "".join(a[i1:i2]), "".join(b[j1:j2])
        head = _in_common(gone, put)
        tail = _in_common(gone[head:], put[head:], from_end=True)
        line, col = _position(a, i1, gone[:head])
        end_line, end_col = _position(a, i1, gone[: len(gone) - tail])
        out.append(
            Replacement(
                line + first_line, col, end_line + first_line, end_col, put[head : len(put) - tail]
            )
        )
    return tuple(out)


def _position(lines: Sequence[str], first: int, before: str) -> tuple[int, int]:
    """(line, col), 1-based, of the point after ``before``, text that starts at line
    ``first`` (0-based) of ``lines`` (each with its ending: a lone CR ends a line too, the CR
    of a CRLF does not)."""
    n, i = len(before), first
    while i < len(lines) and (
        n > len(lines[i]) or (n == len(lines[i]) and lines[i].endswith(("\n", "\r")))
    ):
        n -= len(lines[i])
        i += 1
    return i + 1, n + 1
