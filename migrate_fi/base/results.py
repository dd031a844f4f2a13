"""Result values. Rules and the engine return these; only `reporting` turns them into text."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, NamedTuple


class FixAvailability(str, enum.Enum):
    """Whether a rule fixes what it finds (Ruff's fix availability), apart from how far its
    fixes may be trusted (`FixSafety`)."""

    NONE = "none"  # it only reports: every site is for a person
    SOMETIMES = "sometimes"  # some sites get a fix; the others are for a person
    ALWAYS = "always"  # every site it reports has a fix (the engine holds it to that)


class FixSafety(str, enum.Enum):
    """How far a fix may be trusted (Ruff's applicability). A rule that fixes declares the most
    its fixes may be; a fix may be less. The engine decides what `apply` writes: `safe` fixes
    always, `review` fixes only with ``--unsafe-fixes``."""

    SAFE = "safe"  # the rewrite keeps the meaning the code had on the old release
    REVIEW = "review"  # right in the usual case, but a person must read it

    @property
    def rank(self) -> int:
        return {"review": 1, "safe": 2}[self.value]


class Status(str, enum.Enum):
    CHANGED = "changed"  # apply/diff: new content produced
    UNCHANGED = "unchanged"  # read and analysed: nothing to rewrite (there may still be reports)
    SKIPPED = "skipped"  # never parsed: the cheap text prefilter ruled it out
    FAILED = "failed"  # could not be processed: the file is left untouched


class Replacement(NamedTuple):
    """One change a fix makes, in the file as it was read: the text from (line, col) up to,
    not including, (end_line, end_col) becomes ``text``. Lines and columns are 1-based, columns
    in characters (code points); an insertion has an empty region."""

    line: int
    col: int
    end_line: int
    end_col: int
    text: str


class Diagnostic(NamedTuple):
    """One site found by a rule. A site with a fix (its ``safety``) can be rewritten; ``applies`` says
    whether this run's `apply` writes it (a `review` fix needs ``--unsafe-fixes``). A site with
    no fix needs a person, and ``message`` says why."""

    path: str
    line: int  # 1-based
    col: int  # 1-based, in characters
    code: str
    rule: str
    message: str
    safety: FixSafety | None = None  # of its fix; None: no fix, the site is for a person
    applies: bool = False
    end_line: int | None = None
    end_col: int | None = None
    # what the fix changes, when the run asked for it (SARIF) and it can be told in the text
    # that was read (a fix of a rule that ran after another one changed the file cannot)
    replacements: tuple[Replacement, ...] = ()
    cell: int | None = None  # a notebook's cell (1-based), else None
    cell_line: int | None = None  # the line in that cell (``line``: in the notebook's file)
    message_zh: str = ""  # the message in Chinese (`migrate_fi.base.messages`); "": none

    @property
    def fixable(self) -> bool:
        """`apply` rewrites it in this run."""
        return self.applies

    @property
    def held_back(self) -> bool:
        """A `review` fix this run does not apply (no ``--unsafe-fixes``)."""
        return self.safety is not None and not self.applies

    def to_json(self) -> dict[str, object]:
        return {
            "path": self.path,
            "line": self.line,
            "col": self.col,
            "end_line": self.end_line,
            "end_col": self.end_col,
            "code": self.code,
            "codemod": self.rule,  # (the JSON key users read: kept, see CHANGELOG)
            "message": self.message,
            "message_zh": self.message_zh,
            "fix": self.safety.value if self.safety is not None else None,
            "fixable": self.applies,
        } | ({"cell": self.cell, "cell_line": self.cell_line} if self.cell is not None else {})


class FileError(NamedTuple):
    """Why a file could not be processed (one line, names the file)."""

    path: str
    reason: str
    line: int | None = None
    col: int | None = None


class Lookups(NamedTuple):
    """What the analysis of one file looked up among the project's re-exports: a new re-export
    that matches none of ``qualnames`` cannot change its result (`migrate_fi.run.reexports`).
    ``skipped``: the ids of the rules that read the file and did not run (the prefilter left
    them out); a new re-export named in the file runs them, and can change what they find
    where it reaches a name they look for."""

    qualnames: frozenset[str]
    skipped: frozenset[str]


@dataclass
class FileResult:
    path: str
    status: Status
    diagnostics: list[Diagnostic] = field(default_factory=list)
    error: FileError | None = None
    old_text: str | None = None  # set for CHANGED results
    new_text: str | None = None
    new_bytes: bytes | None = None
    old_bytes: bytes | None = None
    parsed: bool = False  # whether the file got past the prefilter and was parsed
    # Module-level names of this file bound to FlashInfer's API: {"pkg.mod.name": "flashinfer.x"}
    exports: dict[str, str] = field(default_factory=dict)
    lookups: Lookups | None = None  # None: not analysed (or failed), so nothing to reuse


def _bare_skip(f: FileResult) -> bool:
    """A file never parsed, with nothing but its path to say."""
    return (
        f.status is Status.SKIPPED
        and not f.diagnostics
        and f.error is None
        and f.old_text is None
        and f.new_text is None
        and f.new_bytes is None
        and f.old_bytes is None
        and not f.parsed
        and not f.exports
        and f.lookups is None
    )


@dataclass
class RunResult:
    files: list[FileResult] = field(default_factory=list)
    written: list[str] = field(default_factory=list)  # apply: files actually written
    write_errors: list[FileError] = field(default_factory=list)
    from_version: str = ""
    to_version: str = ""
    rules: list[str] = field(default_factory=list)  # codes of the rules that ran
    notices: list[str] = field(default_factory=list)  # e.g. a selected rule that does not run
    unsafe_fixes: bool = False
    patch: str | None = None  # diff in a structured format: the patch, in the document
    # files the migration in progress has not migrated yet, with why (`migrate_fi.project.carryover`)
    pending: list[FileError] = field(default_factory=list)

    def __getstate__(self) -> dict[str, Any]:
        # (a result kept for a replay holds every file of the tree, most never parsed: those
        # are kept by their path alone, not as a dict of their fields each; 2,318 on vLLM's
        # tree, pickled in 3 ms, not 4.5, read back in 2 ms, not 5)
        state = dict(self.__dict__)
        state["files"] = [f.path if _bare_skip(f) else f for f in self.files]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        files = state["files"]
        state["files"] = [FileResult(f, Status.SKIPPED) if isinstance(f, str) else f for f in files]
        self.__dict__.update(state)

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return sorted(d for f in self.files for d in f.diagnostics)

    @property
    def errors(self) -> list[FileError]:
        errs = [f.error for f in self.files if f.error is not None]
        return errs + self.write_errors

    @property
    def changed(self) -> list[FileResult]:
        return [f for f in self.files if f.status is Status.CHANGED]

    @property
    def manual(self) -> list[Diagnostic]:
        """Sites left for a person: no fix, or a `review` fix this run holds back."""
        return [d for d in self.diagnostics if not d.applies]

    @property
    def fixable(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.applies]

    @property
    def held_back(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.held_back]

    @property
    def parsed_count(self) -> int:
        return sum(1 for f in self.files if f.parsed)
