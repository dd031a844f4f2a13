"""The migration record: what `apply` changed, and whether the migration is still in progress.

`apply` writes ``<project root>/.migrate-fi/last-apply.json``: the FlashInfer versions it migrated
between, every file it rewrote (relative to the project root, with a digest of what it wrote),
the sites it left for a person (with the text of their lines) and the files it could not
migrate (with why). The record is meant to be committed with the migration: a fresh clone
(what CI checks out) then keeps the migration open until it is finished. Only the pull-request
description `upgrade` writes beside it is ignored by git (the folder's own ``.gitignore``), and
`apply`'s dirty-tree check never counts the folder.

A migration is *in progress* from the `apply` that leaves sites for a person, leaves a file it
could not write, or is interrupted, until a run over the recorded range finds nothing left
(`migrate-fi finish` says so and removes the record). While it is in progress, and the
project's flashinfer-python pins name the recorded target (or still the recorded origin),
`check`, `diff`, `plan` and the next `apply` migrate from the recorded origin, so the sites left
for a person keep being reported although the pins moved; a recorded site that the rules no
longer see (its pins moved under it) is reported again while its lines are as they were and
carry no suppression (`migrate_fi.project.carryover`), and a file apply could not write is named until
an apply migrates it.
"""

from __future__ import annotations

import enum
import json
import os
import time
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from migrate_fi import __version__
from migrate_fi.base.depends import blake2b, watch
from migrate_fi.base.files import read_regular
from migrate_fi.editing.sources import SourceError, write_atomically, write_new_file

__all__ = [
    "FOLDER",
    "RECORD",
    "Applied",
    "ApplyRecord",
    "LeftSite",
    "Pending",
    "RecordError",
    "State",
    "digest",
    "end_migration",
    "read_record",
    "relative",
    "state_folder",
    "write_record",
]

FOLDER = ".migrate-fi"
RECORD = os.path.join(FOLDER, "last-apply.json")
# what the folder's .gitignore holds: the report `upgrade` writes is a draft, the record is not
_IGNORE = b"# written by migrate-fi: the record (last-apply.json) is committed with the migration\nreport.md\n"
# what earlier releases wrote there (the record kept out of commits): replaced when seen
_IGNORE_ALL = b"# written by migrate-fi: its record stays out of commits unless added with -f\n*\n"


class RecordError(Exception):
    """The record cannot be read or written; one line, naming the file."""


class State(str, enum.Enum):
    IN_PROGRESS = "in-progress"  # sites were left for a person, or the apply was interrupted
    DONE = "done"  # nothing was left over the recorded range


class LeftSite(NamedTuple):
    """A site an apply left for a person, as it was reported, with the text of its lines."""

    path: str  # relative to the project root, "/" separated
    line: int
    col: int
    end_line: int
    code: str
    rule: str
    message: str
    text: str  # lines ``line`` to ``end_line`` of the file as it was read
    message_zh: str = ""  # the message in Chinese; "": none

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "line": self.line,
            "col": self.col,
            "end_line": self.end_line,
            "code": self.code,
            "rule": self.rule,
            "message": self.message,
            "text": self.text,
        } | ({"message_zh": self.message_zh} if self.message_zh else {})

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> LeftSite:
        return cls(
            str(doc["path"]),
            int(doc["line"]),
            int(doc["col"]),
            int(doc["end_line"]),
            str(doc["code"]),
            str(doc["rule"]),
            str(doc["message"]),
            str(doc["text"]),
            str(doc.get("message_zh", "")),
        )


class Pending(NamedTuple):
    """A file an apply could not migrate (unreadable, unparseable, not writable, edited while
    it ran): the migration stays open until an apply migrates it."""

    path: str  # relative to the project root, "/" separated
    reason: str


@dataclass
class ApplyRecord:
    from_version: str
    to_version: str
    written: list[str] = field(default_factory=list)  # relative to the project root, "/" separated
    when: str = ""
    tool: str = __version__
    state: State = State.IN_PROGRESS
    left: int = 0  # sites left for a person by the last apply
    interrupted: str | None = None  # the signal that stopped the last apply, if one did
    sites: list[LeftSite] = field(default_factory=list)  # the sites left for a person
    pending: list[Pending] = field(default_factory=list)  # files not migrated yet
    digests: dict[str, str] = field(default_factory=dict)  # written file -> digest of its bytes
    # the commit checked out when the migration's first apply ran (git): the tree it started
    # from, which `report` describes the migration against
    base: str | None = None

    @property
    def in_progress(self) -> bool:
        return self.state is State.IN_PROGRESS

    def to_json(self) -> dict[str, Any]:
        return {
            "format": 3,
            "tool": self.tool,
            "from": self.from_version,
            "to": self.to_version,
            "state": self.state.value,
            "left_for_a_person": self.left,
            "interrupted": self.interrupted,
            "not_migrated": [{"path": p.path, "reason": p.reason} for p in self.pending],
            "sites_left": [site.to_json() for site in self.sites],
            "written": self.written,
            "written_digests": dict(sorted(self.digests.items())),
            "base": self.base,
            "when": self.when,
        }

    def wrote_as_is(self, root: str, path: str) -> bool:
        """Whether ``path`` (absolute) holds what this migration's apply wrote into it."""
        name = os.path.relpath(path, root).replace(os.sep, "/")
        want = self.digests.get(name)
        if want is None:
            return False
        try:
            return digest(read_regular(path)) == want
        except OSError:
            return False


def digest(data: bytes) -> str:
    """The short digest of a written file's bytes that the record keeps."""
    return blake2b(data, digest_size=12).hexdigest()


def relative(root: str, path: str) -> str:
    """``path`` as the record names it: relative to the project root, "/" separated."""
    return os.path.relpath(os.path.abspath(path), root).replace(os.sep, "/")


def _record_path(root: str) -> str:
    return os.path.join(root, RECORD)


class Applied(NamedTuple):
    """What one apply did, for its record: paths as the run named them."""

    written: dict[str, bytes]  # file -> the bytes written into it
    seen: frozenset[str]  # every file the run read without an error (under its paths)
    sites: list[LeftSite]  # the sites it left for a person (paths relative to the root)
    failed: list[Pending]  # the files it could not migrate (paths relative to the root)
    interrupted: str | None = None
    base: str | None = None  # the commit checked out when it ran (git), if one


def _kept_as_recorded(sites: list[LeftSite], earlier: list[LeftSite]) -> list[LeftSite]:
    """Each of ``sites`` as the earlier record has it where it is found there again: the same
    file, rule and lines, and, where several sites share those (two names of one import), the
    same message; else as found now."""

    def key(site: LeftSite) -> tuple[str, str, str]:
        return (site.path, site.code, site.text)

    recorded: dict[tuple[str, str, str], list[LeftSite]] = {}
    for site in earlier:
        recorded.setdefault(key(site), []).append(site)
    now: dict[tuple[str, str, str], int] = {}
    for site in sites:
        now[key(site)] = now.get(key(site), 0) + 1
    out = []
    for site in sites:
        candidates = recorded.get(key(site), [])
        same = [c for c in candidates if c.message == site.message]
        if same:
            out.append(same[0])
        elif len(candidates) == 1 and now[key(site)] == 1:
            out.append(candidates[0])
        else:
            out.append(site)
    return out


def write_record(root: str, from_version: str, to_version: str, applied: Applied) -> str:
    """Record an apply, merged with an earlier record of the same origin: the written files add
    up; sites and failures of files this apply read replace the earlier ones, the others stay.
    In progress while sites or failed files are left, or when it was interrupted; raises
    `RecordError`."""
    written = {relative(root, p): digest(data) for p, data in applied.written.items()}
    seen = {relative(root, p) for p in applied.seen}
    try:
        earlier = read_record(root)
    except RecordError:
        earlier = None
    sites, failed = list(applied.sites), list(applied.failed)
    digests = dict(written)
    base = applied.base
    if earlier is not None and earlier.from_version == from_version:
        base = earlier.base or base  # (where the migration started)
        written = {**dict.fromkeys(earlier.written, ""), **written}
        digests = {**earlier.digests, **digests}
        failing = {p.path for p in failed}
        # a site found again as it was keeps its record (its message may name lines that moved)
        sites = _kept_as_recorded(sites, earlier.sites)
        sites += [s for s in earlier.sites if s.path not in seen and s.path not in failing]
        failed += [p for p in earlier.pending if p.path not in seen and p.path not in failing]
    sites.sort(key=lambda s: (s.path, s.line, s.code, s.message))
    failed.sort(key=lambda p: p.path)
    left = len(sites)
    state = State.IN_PROGRESS if left or failed or applied.interrupted else State.DONE
    record = ApplyRecord(
        from_version,
        to_version,
        sorted(written),
        time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        state=state,
        left=left,
        interrupted=applied.interrupted,
        sites=sites,
        pending=failed,
        digests=digests,
        base=base,
    )
    return _store(root, record)


def end_migration(root: str) -> None:
    """End the recorded migration: its record is removed (the pins alone say where the project
    is from now on); raises `RecordError`."""
    path = _record_path(root)
    try:
        os.remove(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise RecordError(f"{path}: cannot be removed ({exc.strerror})") from None


def state_folder(root: str) -> str:
    """The project's `.migrate-fi/` folder, made with its own `.gitignore` (the report draft
    ignored, the record not) if missing, or if it holds what earlier releases wrote there (the
    whole folder ignored); raises OSError."""
    folder = os.path.join(root, FOLDER)
    os.makedirs(folder, exist_ok=True)
    ignore = os.path.join(folder, ".gitignore")
    if not os.path.lexists(ignore):
        write_new_file(ignore, _IGNORE)
    elif os.path.isfile(ignore):
        old = read_regular(ignore)
        if old == _IGNORE_ALL:
            write_atomically(ignore, _IGNORE, old)
    return folder


def _store(root: str, record: ApplyRecord) -> str:
    path = _record_path(root)
    data = (json.dumps(record.to_json(), indent=2) + "\n").encode()
    try:
        state_folder(root)
        if os.path.exists(path):
            old = read_regular(path)
            if _same_but_when(old, record):
                return path  # (an apply that changed nothing leaves the committed record be)
            write_atomically(path, data, old)
        else:
            write_new_file(path, data)
    except OSError as exc:
        raise RecordError(f"{path}: cannot be written ({exc.strerror})") from None
    except SourceError as exc:
        raise RecordError(f"{path}: {exc}") from None
    return path


def _same_but_when(old: bytes, record: ApplyRecord) -> bool:
    try:
        doc = json.loads(old)
    except ValueError:
        return False
    return isinstance(doc, dict) and {**doc, "when": ""} == {**record.to_json(), "when": ""}


def read_record(root: str) -> ApplyRecord | None:
    """The last apply's record, None when there is none; `RecordError` when it is damaged."""
    path = _record_path(root)
    watch(path)  # (a run replayed relies on it: `migrate_fi.run.warm`)
    if not os.path.exists(path):
        return None
    try:
        doc = json.loads(read_regular(path).decode("utf-8"))
        if not isinstance(doc, dict):
            raise TypeError("not an object")
        # format 1 (no state): an apply that may have left sites, so in progress
        state = State(doc.get("state", State.IN_PROGRESS.value))
        interrupted = doc.get("interrupted")
        digests = doc.get("written_digests", {})
        if not isinstance(digests, dict):
            raise TypeError("written_digests is not an object")
        return ApplyRecord(
            str(doc["from"]),
            str(doc["to"]),
            [str(p) for p in doc["written"]],
            str(doc.get("when", "")),
            str(doc.get("tool", "")),
            state,
            int(doc.get("left_for_a_person", 0)),
            None if interrupted is None else str(interrupted),
            [LeftSite.from_json(site) for site in doc.get("sites_left", [])],
            [Pending(str(p["path"]), str(p["reason"])) for p in doc.get("not_migrated", [])],
            {str(k): str(v) for k, v in digests.items()},
            None if doc.get("base") is None else str(doc["base"]),
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise RecordError(f"{path}: not a readable apply record ({exc})") from None
