"""Suppression comments: ``# migrate-fi: ignore[FI003]`` on a line a person has decided on.

A comment on any line a site spans silences it: bare ``ignore`` every rule, ``ignore[...]`` the
rules named by code or id. A silenced fix is dropped whole, every edit and import of it. In a
Python file only a real comment counts, never the same text inside a string.

A comment that silences nothing although every rule it names ran on the file is reported
(FI000, ``unused_suppression``): a stale comment would hide the next real site on its line. A
bare ``ignore`` is reported only where every selected rule ran, so name the rules to have it checked.
"""

from __future__ import annotations

import io
import tokenize
from collections.abc import Collection
from dataclasses import dataclass, field

from migrate_fi.base import patterns
from migrate_fi.base.messages import Said, say
from migrate_fi.base.results import Diagnostic

__all__ = ["UNUSED_CODE", "Suppressions"]

UNUSED_CODE = "FI000"
UNUSED_ID = "unused_suppression"
_SUPPRESS = patterns.compile(r"#\s*migrate-fi:\s*ignore(?:\[([^\]#]*)\])?")


def explanation() -> str:
    """What ``migrate-fi explain FI000`` prints."""
    return (
        f"{UNUSED_CODE} ({UNUSED_ID}): a suppression comment that silences nothing\n\n"
        + __doc__.strip()
        + "\n\nTurn the report off with `--ignore FI000`; `--select` without FI000 leaves it out."
    )


@dataclass
class _Comment:
    line: int
    col: int
    end_col: int
    names: frozenset[str] | None  # None: every rule
    used: bool = False


@dataclass
class Suppressions:
    """The suppression comments of one file's text."""

    comments: list[_Comment] = field(default_factory=list)

    @classmethod
    def of(cls, text: str, python: bool = False) -> Suppressions:
        """The comments of ``text``; for ``python`` source only those in comment tokens."""
        out = cls()
        if "migrate-fi" not in text:
            return out
        comments = _comment_starts(text) if python else None
        for number, line in enumerate(patterns.split_lines(text), 1):
            if "migrate-fi" not in line:
                continue
            for m in _SUPPRESS.finditer(line):
                if comments is not None and not any(
                    line_ == number and col <= m.start() for line_, col in comments
                ):
                    continue
                names = m.group(1)
                wanted = None if names is None else frozenset(n.strip() for n in names.split(","))
                out.comments.append(_Comment(number, m.start(), m.end(), wanted))
        return out

    def silences(self, d: Diagnostic) -> bool:
        hit = False
        for c in self.comments:
            if d.line <= c.line <= (d.end_line or d.line) and (
                c.names is None or d.code in c.names or d.rule in c.names
            ):
                c.used = hit = True
        return hit

    def unused(self, path: str, ran: Collection[str], every: Collection[str]) -> list[Diagnostic]:
        """Comments that silenced nothing although every rule they name ran: ``ran`` holds the
        codes and ids of the rules that looked at the file, ``every`` those of all rules."""
        out = []
        ran = set(ran)
        for c in self.comments:
            if c.used or not (ran >= (set(every) if c.names is None else c.names)):
                continue
            which = (
                say("every rule", "所有规则")
                if c.names is None
                else Said(", ".join(sorted(c.names)), ", ".join(sorted(c.names)))
            )
            said = say(
                "this `migrate-fi: ignore` ({which}) silences nothing here: remove it, or it will"
                " hide the next site on its line",
                "这个 `migrate-fi: ignore`（{which}）在这里没有屏蔽任何问题：请删除它，否则它会"
                "掩盖这一行以后出现的问题",
                which=which,
            )
            out.append(
                Diagnostic(
                    path=path,
                    line=c.line,
                    col=c.col + 1,
                    code=UNUSED_CODE,
                    rule=UNUSED_ID,
                    message=said.en,
                    end_line=c.line,
                    end_col=c.end_col + 1,
                    message_zh=said.zh,
                )
            )
        return out


def _comment_starts(text: str) -> list[tuple[int, int]] | None:
    """(line, column) of every comment that mentions migrate-fi; None if the text does not
    tokenize (then every match counts, as in other files)."""
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text, newline=None).readline):
            if tok.type == tokenize.COMMENT and "migrate-fi" in tok.string:
                out.append(tok.start)
    except (tokenize.TokenError, SyntaxError):
        return None
    return out
