"""The sites and files a migration in progress still owes, added to a run's result.

While a migration is in progress (`migrate_fi.project.record`), the run continues from the recorded
origin, so the rules find again most of what the last `apply` left for a person. Not all of it:
a site that a rule saw because of the old pins (a cubin pin sharing flashinfer-python's version
variable, say) is gone from the rules' view once `apply` moved the pins. This module keeps every
such site reported while the lines it spans are as they were and carry no suppression comment
for it; an edit of those lines, or ``# migrate-fi: ignore[CODE]`` on one of them, resolves it.
A file `apply` could not migrate (unreadable, unparseable, not writable, edited while it ran) is
named too, until an apply migrates it.

`left_sites` does the opposite step for `apply`: the sites of its result as the record keeps
them, each with the text of its lines.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable, Iterable, Sequence

from migrate_fi.analysis.suppression import UNUSED_CODE, Suppressions
from migrate_fi.base import patterns
from migrate_fi.base.files import read_regular
from migrate_fi.base.modules import is_python_path
from migrate_fi.base.results import Diagnostic, FileError, FileResult, RunResult
from migrate_fi.project.record import ApplyRecord, LeftSite, relative

__all__ = ["carry_over", "left_sites", "pending_here"]

_SUPPRESS = patterns.compile(r"\s*#\s*migrate-fi:\s*ignore(?:\[[^\]#]*\])?")


def _lines(path: str) -> list[str] | None:
    try:
        data = read_regular(path)
    except OSError:
        return None
    return data.decode("utf-8", errors="replace").splitlines()


def left_sites(
    root: str, sites: Iterable[Diagnostic], rewritten: dict[str, tuple[str, str]]
) -> list[LeftSite]:
    """The record's form of ``sites`` (paths as the run named them), placed in the files as
    the run leaves them: ``rewritten`` holds the text before and after of each file the run
    rewrites (a site's lines follow the rewrite); the other files are read as they are."""
    out = []
    cache: dict[str, tuple[list[str], Callable[[int, int], tuple[int, int]]] | None] = {}
    for d in sites:
        if d.path not in cache:
            cache[d.path] = _placed(d.path, rewritten.get(d.path))
        placed = cache[d.path]
        if placed is None:
            continue
        lines, place = placed
        line, end = place(d.line, max(d.end_line or d.line, d.line))
        block = "\n".join(lines[line - 1 : end])
        out.append(
            LeftSite(
                relative(root, d.path),
                line,
                d.col,
                end,
                d.code,
                d.rule,
                d.message,
                block,
                d.message_zh,
            )
        )
    return out


def _placed(
    path: str, texts: tuple[str, str] | None
) -> tuple[list[str], Callable[[int, int], tuple[int, int]]] | None:
    """The lines of ``path`` after the run, and the map of a span of lines before it to the
    span after (the whole rewritten stretch where a fix changed the site's lines)."""
    if texts is None:
        lines = _lines(path)
        return None if lines is None else (lines, lambda a, b: (a, b))
    old, new = texts[0].splitlines(), texts[1].splitlines()
    blocks = difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()

    def place(start: int, end: int) -> tuple[int, int]:
        def one(line: int, first: bool) -> int:
            for tag, i1, i2, j1, j2 in blocks:
                if i1 < line <= i2 or (i1 == i2 and line == i1 + 1):
                    if tag == "equal":
                        return j1 + (line - i1)
                    return j1 + 1 if first else max(j2, j1 + 1)
            return line

        a, b = one(start, True), one(end, False)
        return a, max(a, b)

    return new, place


def _bare(line: str) -> str:
    """A line without its suppression comments (adding one does not edit the site)."""
    return _SUPPRESS.sub("", line).rstrip() if "migrate-fi" in line else line.rstrip()


def _find(bare: list[str], block: list[str], near: int) -> int | None:
    """The first line (1-based) of ``block`` in a file's lines (``bare``: without their
    suppression comments, as ``block``'s are compared) nearest to line ``near``."""
    if not block:
        return None
    want = [_bare(line) for line in block]
    starts = [
        i + 1
        for i in range(len(bare) - len(want) + 1)
        if bare[i] == want[0] and bare[i : i + len(want)] == want
    ]
    return min(starts, key=lambda s: (abs(s - near), s)) if starts else None


def carry_over(root: str, record: ApplyRecord, result: RunResult) -> None:
    """Add to ``result`` the recorded sites the rules no longer report although their lines
    are unchanged and not suppressed (only in files the run read, for rules that ran)."""
    if not record.in_progress or not record.sites:
        return
    ran = set(result.rules)
    by_name = {relative(root, f.path): f for f in result.files if f.error is None}
    for name, sites in _by_path(s for s in record.sites if s.code in ran).items():
        file = by_name.get(name)
        if file is None:
            continue
        lines = _lines(file.path)
        if lines is None:
            continue
        bare = [_bare(line) for line in lines]  # (once a file, for all its sites)
        suppressions: Suppressions | None = None
        for site in sites:
            block = site.text.split("\n")
            start = _find(bare, block, site.line)
            if start is None:
                continue  # its lines were edited: resolved
            end = start + len(block) - 1
            if any(
                d.code == site.code and d.line <= end and (d.end_line or d.line) >= start
                for d in file.diagnostics
            ):
                continue  # the rule reports it itself
            if suppressions is None:
                suppressions = Suppressions.of("\n".join(lines), is_python_path(file.path))
            carried = Diagnostic(
                path=file.path,
                line=start,
                col=site.col,
                code=site.code,
                rule=site.rule,
                message=site.message,
                message_zh=site.message_zh,
                end_line=end,
                end_col=len(lines[end - 1]) + 1,
            )
            if suppressions.silences(carried):
                _drop_unused(file, start, end)
                continue
            file.diagnostics.append(carried)


def _drop_unused(file: FileResult, start: int, end: int) -> None:
    """A suppression comment that silences a carried site is used: no "silences nothing"."""
    file.diagnostics[:] = [
        d for d in file.diagnostics if not (d.code == UNUSED_CODE and start <= d.line <= end)
    ]


def _by_path(sites: Iterable[LeftSite]) -> dict[str, list[LeftSite]]:
    out: dict[str, list[LeftSite]] = {}
    for site in sites:
        out.setdefault(site.path, []).append(site)
    return out


def pending_here(root: str, record: ApplyRecord, paths: Sequence[str]) -> list[FileError]:
    """The files the migration has not migrated yet that lie under ``paths`` (as paths from
    the current folder), with why."""
    if not record.in_progress:
        return []
    given = [os.path.abspath(p) for p in paths]
    out = []
    for p in record.pending:
        full = os.path.join(root, *p.path.split("/"))
        if any(full == g or full.startswith(g.rstrip(os.sep) + os.sep) for g in given):
            out.append(FileError(os.path.relpath(full), p.reason))
    return out
