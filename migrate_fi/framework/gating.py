"""A rule's sites in code that runs only on some FlashInfer releases.

A project that supports several releases tests the installed one
(`migrate_fi.analysis.versiontests`). A site is judged by where its code runs:

- on the release migrated from (``--from``) and on the target: as any other site;
- not on the target (an ``else`` kept for old releases, code after ``if version >= X: return``
  with X at or below the target): nothing to migrate, the target never runs it: left out;
- on the target but not on the release migrated from: the code is written for a later release
  X, the first the test lets through; a site there is what the rule finds from X to the target
  (the rule runs again with ``--from X`` for it), said as such; where X is the target itself,
  the code is written for it already: left out.

A name written the same way in such code and elsewhere is judged at each place. Only what the
analysis can read counts as a test of the version: any other test runs the code everywhere.
"""

from __future__ import annotations

import ast
import dataclasses
from functools import cache, partial

from packaging.version import Version

from migrate_fi.analysis.resolver import NameResolver
from migrate_fi.analysis.versiontests import Releases, may_test_version
from migrate_fi.api.store import available_releases, on_forget
from migrate_fi.base.messages import Said, say
from migrate_fi.base.results import Diagnostic
from migrate_fi.base.versions import in_range, parse_version
from migrate_fi.framework.rule import FileContext, Fix, Rule, RunOptions

__all__ = ["VersionGates"]

_LEFT_OUT = "left out"
# where a site's code runs: as the run has it (None), nowhere a migration concerns (left out),
# or from a later release on (that release)
_Place = Version | str | None


class VersionGates:
    """The version tests of one text, for the rules that read its tree in turn."""

    def __init__(self, text: str, tree: ast.Module, options: RunOptions) -> None:
        self.active = may_test_version(text)
        self.text = text
        self.tree = tree
        self.options = options
        # the context of the rule being settled (in a list the reader shares: a reference back
        # to this object would make a cycle, and hold the file's tree until the cycle collector
        # ran; the engine disables it while it analyses)
        self._ctx: list[FileContext] = []
        self._reader: Releases | None = None
        self._later: list[Version] | None = None

    @property
    def reader(self) -> Releases:
        if self._reader is None:
            self._reader = Releases(
                partial(_resolver_of, self._ctx), self.tree, _releases(), self.text
            )
        return self._reader

    def later(self) -> list[Version]:
        """The releases after ``--from`` that code of the file is written for: the first
        release of the range a test of the version lets through where ``--from`` fails it
        (the target itself excluded: code written for it has nothing to migrate)."""
        if self._later is None:
            found: set[Version] = set()
            for on in self.reader.branches():
                start = self._written_for(on)
                if isinstance(start, Version):
                    found.add(start)
            self._later = sorted(found)
        return self._later

    def settle(self, cls: type[Rule], ctx: FileContext) -> None:
        """Keep in ``ctx`` (the rule's context, its sites found) the sites of code that runs on
        ``--from`` and the target; add, for code written for a later release, the sites the
        rule finds from that release."""
        if not self.active:
            return
        # (the names are resolved through the rule's context, only when a test needs it: the
        # engine then shares the resolver with the next rule and frees it with the file)
        self._ctx[:] = [ctx]
        if not ctx.diagnostics and not self.later():
            return
        fixes = {id(f.diagnostic): f for f in ctx.fixes}
        kept: list[Diagnostic] = []
        kept_fixes: list[Fix] = []
        for d in ctx.diagnostics:
            if self._place(d) is None:
                kept.append(d)
                if id(d) in fixes:
                    kept_fixes.append(fixes[id(d)])
        to = self.options.to_version
        for start in self.later():
            if not (cls.data_driven or in_range(cls.introduced_in, start, to)):
                continue  # (the rule's change lies before that release)
            other = ctx.again(dataclasses.replace(self.options, from_version=start))
            rule = cls()
            other.rule = rule
            rule.find(other)
            theirs = {id(f.diagnostic): f for f in other.fixes}
            for d in other.diagnostics:
                if self._place(d) != start:
                    continue
                said = _note(start, self.options.from_version)
                moved = d._replace(
                    message=d.message + said.en,
                    message_zh=d.message_zh + said.zh if d.message_zh else "",
                )
                kept.append(moved)
                fix = theirs.get(id(d))
                if fix is not None:
                    kept_fixes.append(Fix(moved, fix.edits, fix.imports))
        ctx.diagnostics[:] = kept
        ctx.fixes[:] = kept_fixes

    # ------------------------------------------------------------ places

    def _place(self, d: Diagnostic) -> _Place:
        found = self._locate(d.line, d.col - 1)
        if found is None:
            return None
        node, up = found
        return self._written_for(self.reader.reached(node, up))

    def _written_for(self, on: frozenset[Version]) -> _Place:
        origin, to = self.options.from_version, self.options.to_version
        if origin in on and to in on:
            return None
        if to not in on:
            return _LEFT_OUT
        start = min((r for r in on if origin < r <= to), default=to)
        return _LEFT_OUT if start == to else start

    def _locate(self, line: int, col: int) -> tuple[ast.AST, dict[int, ast.AST]] | None:
        """The innermost node that starts at (``line``, ``col``: in characters, as a site says
        it), where a site is reported (the body of ``a if c else b`` starts where the whole
        does: the innermost is in the body), with its parents on the way down: found by
        descending through the nodes that hold the place, not from a map of the whole tree (a
        large file's would cost megabytes for a few sites)."""
        text = self.reader.line(line)
        if text is None:
            return None
        at = (line, col if text.isascii() else len(text[:col].encode("utf-8")))
        up: dict[int, ast.AST] = {}
        node: ast.AST = self.tree
        found: ast.AST | None = None
        while True:
            inner = next((c for c in ast.iter_child_nodes(node) if _holds(c, at)), None)
            if inner is None:
                return (found, up) if found is not None else None
            up[id(inner)] = node
            if (getattr(inner, "lineno", 0), getattr(inner, "col_offset", 0)) == at:
                found = inner
            node = inner


def _holds(node: ast.AST, at: tuple[int, int]) -> bool:
    """Whether ``node``'s span holds the place ``at`` (line, byte column); a def's or class's
    starts at its first decorator (its own line is that of `def`); a node with no place of its
    own holds what one of its children holds."""
    start = getattr(node, "lineno", None)
    end = getattr(node, "end_lineno", None)
    if start is None or end is None:  # (`case`, `with` items: no place of their own)
        return any(_holds(child, at) for child in ast.iter_child_nodes(node))
    first = (start, getattr(node, "col_offset", 0))
    for decorator in getattr(node, "decorator_list", ()):
        first = min(first, (decorator.lineno, decorator.col_offset))
    return first <= at <= (end, getattr(node, "end_col_offset", 0))


def _resolver_of(current: list[FileContext]) -> NameResolver:
    return current[0].resolver


@cache
def _releases() -> tuple[Version, ...]:
    """Every release there is data for (the user's data folder's too), oldest first."""
    return tuple(sorted(parse_version(r) for r in available_releases()))


on_forget(_releases.cache_clear)  # (a test that changes the data folders forgets them)


def _note(start: Version, origin: Version) -> Said:
    return say(
        " (this code runs only from FlashInfer {start} on, by the version test before it:"
        " compared with {start}, not {origin})",
        "（这段代码只在 FlashInfer {start} 及以后运行，由它前面的版本判断决定：按 {start}"
        " 而不是 {origin} 比较）",
        start=start,
        origin=origin,
    )
