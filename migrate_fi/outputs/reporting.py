"""Turning results into text: the only module that formats diagnostics.

Formats: ``text`` (``path:line:col: CODE message``), ``json`` (one document), ``github``
(workflow commands that GitHub Actions turns into annotations).
"""

from __future__ import annotations

import json
import os
from bisect import bisect_left
from collections import Counter
from collections.abc import Sequence
from itertools import pairwise
from typing import TYPE_CHECKING

from migrate_fi import __version__
from migrate_fi.analysis.suppression import UNUSED_CODE
from migrate_fi.base import patterns
from migrate_fi.base.results import Diagnostic, FileError, FixSafety, RunResult

if TYPE_CHECKING:  # (difflib is imported where a patch is made: it costs start-up)
    import difflib

__all__ = ["format_diagnostic", "render", "summary", "unified_diff"]

_LINES = patterns.compile(r"[^\n]*\n|[^\n]+")


def _marker(d: Diagnostic) -> str:
    """Review fixes are marked: `apply` writes them only with --unsafe-fixes."""
    return "[review fix] " if d.safety is FixSafety.REVIEW else ""


def format_diagnostic(d: Diagnostic) -> str:
    if d.cell is not None:  # (as Ruff says a notebook's site: by cell, and line in it)
        return f"{d.path}:cell {d.cell}:{d.cell_line}:{d.col}: {d.code} {_marker(d)}{d.message}"
    return f"{d.path}:{d.line}:{d.col}: {d.code} {_marker(d)}{d.message}"


def format_error(e: FileError) -> str:
    where = e.path
    if e.line is not None:
        where += f":{e.line}" + (f":{e.col}" if e.col is not None else "")
    return f"{where}: error: {e.reason}"


def _gh_escape(text: str, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


def _github(d: Diagnostic) -> str:
    props = [f"file={_gh_escape(d.path, True)}", f"line={d.line}", f"col={d.col}"]
    if d.end_line is not None:
        props.append(f"endLine={d.end_line}")
    if d.end_col is not None and d.end_line == d.line:
        props.append(f"endColumn={d.end_col}")
    props.append(f"title={_gh_escape(f'{d.code} ({d.rule})', True)}")
    level = "warning" if d.fixable else "error"
    cell = f"cell {d.cell}, line {d.cell_line}: " if d.cell is not None else ""
    return f"::{level} {','.join(props)}::{_gh_escape(cell + _marker(d) + d.message)}"


def _github_error(e: FileError) -> str:
    props = [f"file={_gh_escape(e.path, True)}"]
    if e.line is not None:
        props.append(f"line={e.line}")
    props.append("title=migrate-fi")
    return f"::error {','.join(props)}::{_gh_escape(e.reason)}"


def render(
    result: RunResult,
    fmt: str,
    command: str,
    diagnostics: Sequence[Diagnostic] | None = None,
    extra: dict[str, object] | None = None,
) -> tuple[str, str]:
    """(report, errors) for a run. ``diagnostics`` narrows what is listed (apply lists only the
    sites left for a person). In json the errors are part of the report."""
    diags = list(result.diagnostics if diagnostics is None else diagnostics)
    errors = result.errors
    if fmt == "json":
        doc: dict[str, object] = {
            "tool": "migrate-fi",
            "version": __version__,
            "command": command,
            **(extra or {}),
            "diagnostics": [d.to_json() for d in diags],
            "errors": [
                {"path": e.path, "line": e.line, "col": e.col, "reason": e.reason} for e in errors
            ],
            **({"patch": result.patch} if result.patch is not None else {}),
            "files": {
                "changed": [f.path for f in result.changed],
                "written": list(result.written),
                "parsed": result.parsed_count,
                "total": len(result.files),
            },
        }
        return json.dumps(doc, indent=2) + "\n", ""
    if fmt == "sarif":
        from migrate_fi.outputs.sarif import sarif_document

        return json.dumps(sarif_document(result, diags, command), indent=2) + "\n", ""
    if fmt == "github":
        report = "".join(_github(d) + "\n" for d in diags)
        return report + "".join(_github_error(e) + "\n" for e in errors), ""
    report = "".join(format_diagnostic(d) + "\n" for d in diags)
    return report, "".join(format_error(e) + "\n" for e in errors)


def _plural(n: int, word: str) -> str:
    suffix = "es" if word.endswith(("s", "x")) else "s"
    return f"{n} {word}{'' if n == 1 else suffix}"


def summary(result: RunResult, command: str) -> str:
    """One or two human lines for stderr."""
    # (each of the run's diagnostics once: a run's list of them walks every file it read)
    diagnostics = result.diagnostics
    applying = [d for d in diagnostics if d.applies]
    left = [d for d in diagnostics if not d.applies]  # (`RunResult.manual`)
    fixable, held = len(applying), sum(1 for d in diagnostics if d.held_back)
    manual = len(left) - held
    files = len(result.files)
    parsed = result.parsed_count
    scanned = f"{_plural(files, 'file')} scanned, {parsed} parsed"
    errors = len(result.errors)
    err = f"; {_plural(errors, 'file')} could not be processed" if errors else ""
    held_text = (
        f"{_plural(held, 'review fix')} held back (read them in `migrate-fi diff"
        " --unsafe-fixes`, apply them with --unsafe-fixes)"
    )
    if command == "apply":
        written = set(result.written)
        applied = sum(1 for d in applying if d.path in written)
        head = f"Rewrote {_plural(len(written), 'file')} ({_plural(applied, 'fix')})"
        if applied < fixable:
            head += f"; {fixable - applied} not written (see the errors)"
        if held:
            head += f"; {held_text}"
        if manual:
            head += f"; {_plural(manual, 'site')} left for a person (listed above)"
        return f"{head}; {scanned}{err}.\n" + (_how_to_mark(left) if manual else "")
    if not fixable and not manual and not held:
        return f"Nothing to migrate: {scanned}{err}.\n"
    parts = []
    if fixable:
        verb = "shown in the diff" if command == "diff" else "fixable with `migrate-fi apply`"
        parts.append(f"{fixable} {verb}")
    if held:
        parts.append(f"{_plural(held, 'review fix')} applied only with --unsafe-fixes")
    if manual:
        parts.append(f"{manual} for a person to check")
    total = fixable + held + manual
    out = f"Found {_plural(total, 'site')} ({', '.join(parts)}); {scanned}{err}.\n"
    if manual:
        out += _how_to_mark(left)
    return out


def _how_to_mark(manual: list[Diagnostic]) -> str:
    codes = sorted({d.code for d in manual if d.code != UNUSED_CODE})
    if not codes:
        return ""
    return (
        f"A site a person has checked is silenced by `# migrate-fi: ignore[{codes[0]}]` (its"
        f" code; here {', '.join(codes)}) on any line of it.\n"
    )


def patch_path(path: str, roots: Sequence[str] = ()) -> str:
    """The path a patch names a file by: relative to the current folder when the file is in it;
    else relative to the one of ``roots`` (real paths, the deepest first) that holds it (the
    roots of the paths a run was given: apply the patch there); else relative to the root of
    the git repository that holds it; else to the file system's root: never `a//abs/path`,
    which git refuses."""
    if not os.path.isabs(path):
        return path.replace(os.sep, "/")
    real = os.path.realpath(path)
    for given in roots:
        if real.startswith(os.path.join(given, "")):
            return os.path.relpath(real, given).replace(os.sep, "/")
    from migrate_fi.project.discovery import find_upward

    root = find_upward(os.path.dirname(path), (".git",))
    if root is None:
        root = os.path.splitdrive(path)[0] + os.sep  # the file system's (a drive's) root
    return os.path.relpath(path, root).replace(os.sep, "/")


def unified_diff(path: str, old: bytes, new: bytes, roots: Sequence[str] = ()) -> bytes:
    """A patch that `git apply` (and `patch -p1`) accepts, byte for byte: lines are compared
    and written as the file's own bytes (a BOM, a Latin-1 file, CRLF endings stay what they
    are), the path as `patch_path` gives it."""
    # Latin-1 maps every byte to one character and back: the lines keep their exact bytes
    a = _LINES.findall(old.decode("latin-1"))
    b = _LINES.findall(new.decode("latin-1"))
    name = patch_path(path, roots)
    out = [b"--- " + _patch_name("a/" + name) + b"\n", b"+++ " + _patch_name("b/" + name) + b"\n"]
    for line in _unified(a, b):
        out.append(line.encode("latin-1"))
        if not line.endswith("\n"):
            out.append(b"\n\\ No newline at end of file\n")
    return b"".join(out)


# the bytes of a file's name git writes as C escapes in a patch (the others are written as they
# are): a name that holds one is quoted
_ESCAPED = {ord('"'): b'\\"', ord("\\"): b"\\\\", ord("\t"): b"\\t", ord("\n"): b"\\n",
            ord("\r"): b"\\r", 7: b"\\a", 8: b"\\b", 11: b"\\v", 12: b"\\f"}  # fmt: skip


def _patch_name(name: str) -> bytes:
    """A file's name in a patch's header, as git writes it: as it is, or, where it holds a
    quote, a backslash, a control character or bytes that are not UTF-8 (a file name is bytes),
    quoted, those bytes written as C escapes (``"a/\\377name.py"``), which `git apply` and
    `patch` read back."""
    raw = os.fsencode(name)
    try:
        raw.decode("utf-8")
        plain = not any(b < 0x20 or b == 0x7F or b in b'"\\' for b in raw)
    except UnicodeDecodeError:
        plain = False
    if plain:  # (a space is followed by a tab at the line's end, as git does: `patch` reads
        return raw + b"\t" if b" " in raw else raw  # the name up to it)
    out = bytearray(b'"')
    for b in raw:
        if b in _ESCAPED:
            out += _ESCAPED[b]
        elif b < 0x20 or b >= 0x7F:
            out += b"\\%03o" % b
        else:
            out.append(b)
    return bytes(out + b'"')


# Up to this many lines in all, difflib compares the whole files; above it, only the stretches
# between lines that occur once in each file and in the same order (patience diff's anchors,
# found in linear time; difflib took 63 s on 50,000 lines with 5,000 edits, this 0.4 s). The
# hunks are difflib's where the lines around the edits are distinct; among many copies of one
# line difflib may pair other copies (tests/test_patches.py).
_WHOLE_FILE_LINES = 10_000


def _unified(a: list[str], b: list[str], context: int = 3) -> list[str]:
    """The hunks of `difflib.unified_diff(a, b)` (without its two header lines)."""
    import difflib  # (here: it costs start-up)

    if len(a) + len(b) <= _WHOLE_FILE_LINES:
        return list(difflib.unified_diff(a, b, "a", "b", n=context))[2:]
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    # (the blocks found here stand for difflib's own search; the grouping is difflib's)
    matcher.matching_blocks = _matching_blocks(a, b)  # type: ignore[attr-defined]
    matcher.opcodes = None  # type: ignore[attr-defined]
    out: list[str] = []
    for group in matcher.get_grouped_opcodes(context):
        first, last = group[0], group[-1]
        a_range = difflib._format_range_unified(first[1], last[2])  # type: ignore[attr-defined]
        b_range = difflib._format_range_unified(first[3], last[4])  # type: ignore[attr-defined]
        out.append(f"@@ -{a_range} +{b_range} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out += [" " + line for line in a[i1:i2]]
                continue
            if tag in ("replace", "delete"):
                out += ["-" + line for line in a[i1:i2]]
            if tag in ("replace", "insert"):
                out += ["+" + line for line in b[j1:j2]]
    return out


def _matching_blocks(a: list[str], b: list[str]) -> list[difflib.Match]:
    """Matching blocks of ``a`` and ``b``: the common head and tail, lines unique to both files
    kept in order (the longest increasing run of their positions), and between those anchors
    difflib's own blocks of the short stretches."""
    import difflib

    head = 0
    while head < len(a) and head < len(b) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < len(a) - head and tail < len(b) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    blocks: list[tuple[int, int, int]] = [(0, 0, head)] if head else []
    end_a, end_b = len(a) - tail, len(b) - tail
    i, j = head, head
    for ai, bj in [*_anchors(a, b, head, end_a, end_b), (end_a, end_b)]:
        blocks += _gap_blocks(a, b, i, ai, j, bj)
        if (ai, bj) != (end_a, end_b):
            blocks.append((ai, bj, 1))
        i, j = ai + 1, bj + 1
    if tail:
        blocks.append((end_a, end_b, tail))
    merged: list[tuple[int, int, int]] = []
    for block in blocks:
        if (
            merged
            and merged[-1][0] + merged[-1][2] == block[0]
            and (merged[-1][1] + merged[-1][2] == block[1])
        ):
            merged[-1] = (merged[-1][0], merged[-1][1], merged[-1][2] + block[2])
        else:
            merged.append(block)
    return [difflib.Match(*m) for m in merged] + [difflib.Match(len(a), len(b), 0)]


def _gap_blocks(
    a: list[str], b: list[str], i: int, end_a: int, j: int, end_b: int
) -> list[tuple[int, int, int]]:
    """difflib's matching blocks of ``a[i:end_a]`` and ``b[j:end_b]`` (in the files' places,
    none of size 0): a stretch of one line for one (most edits) or of lines on one side only
    is told without difflib."""
    import difflib

    if end_a - i == 1 and end_b - j == 1:
        return [(i, j, 1)] if a[i] == b[j] else []
    if end_a == i or end_b == j:
        return []  # (one side empty: nothing in common)
    gap = difflib.SequenceMatcher(None, a[i:end_a], b[j:end_b], autojunk=False)
    return [(i + m.a, j + m.b, m.size) for m in gap.get_matching_blocks() if m.size]


def _anchors(a: list[str], b: list[str], lo: int, end_a: int, end_b: int) -> list[tuple[int, int]]:
    """(i, j) of the lines that occur once in a[lo:end_a] and once in b[lo:end_b], in an order
    both files agree on (patience diff's anchors)."""
    count_a = Counter(a[lo:end_a])
    count_b = Counter(b[lo:end_b])
    where_b = {line: j for j, line in enumerate(b[lo:end_b], lo) if count_b[line] == 1}
    pairs = [
        (i, where_b[line])
        for i, line in enumerate(a[lo:end_a], lo)
        if count_a[line] == 1 and line in where_b
    ]
    js = [j for _, j in pairs]
    if all(x < y for x, y in pairwise(js)):
        return pairs  # (the usual case: no line moved, every pair is in the run)
    # the longest run of pairs increasing in j (they are increasing in i already)
    tails: list[int] = []  # tails[k]: index into pairs of the smallest end of a run of k + 1
    tail_js: list[int] = []  # the j of each of them
    previous: list[int] = [-1] * len(pairs)
    for n, j in enumerate(js):
        k = bisect_left(tail_js, j)
        if k > 0:
            previous[n] = tails[k - 1]
        if k == len(tails):
            tails.append(n)
            tail_js.append(j)
        else:
            tails[k] = n
            tail_js[k] = j
    run: list[tuple[int, int]] = []
    n = tails[-1] if tails else -1
    while n >= 0:
        run.append(pairs[n])
        n = previous[n]
    return run[::-1]
