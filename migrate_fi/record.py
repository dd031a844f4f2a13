"""The migration record: what `apply` changed, and whether the migration is still in progress.

`apply` writes ``<project root>/.migrate-fi/last-apply.json``: the FlashInfer versions it migrated
between, every file it rewrote (relative to the project root) and how many sites it left for a
person. The folder gets a ``.gitignore`` of its own (``*``), so the record never enters a commit
unasked (``git add -f .migrate-fi/last-apply.json`` commits it, to run `verify` from the same
tree on another machine), and `apply`'s dirty-tree check never counts it.

A migration is *in progress* from the `apply` that leaves sites for a person (or is interrupted)
until a run over the recorded range finds nothing left (`migrate-fi finish` says so and ends
it). While it is in progress, and the project's flashinfer-python pins name the recorded target
(or still the recorded origin), `check`, `diff`, `plan` and the next `apply` migrate from the
recorded origin, so the sites left for a person keep being reported although the pins moved.
"""

from __future__ import annotations

import enum
import json
import os
import time
from dataclasses import dataclass, field
from typing import Any

from migrate_fi import __version__
from migrate_fi.depends import watch
from migrate_fi.sources import SourceError, write_atomically, write_new_file

__all__ = [
    "FOLDER",
    "RECORD",
    "ApplyRecord",
    "RecordError",
    "State",
    "end_migration",
    "read_record",
    "state_folder",
    "write_record",
]

FOLDER = ".migrate-fi"
RECORD = os.path.join(FOLDER, "last-apply.json")
_IGNORE_ALL = b"# written by migrate-fi: its record stays out of commits unless added with -f\n*\n"


class RecordError(Exception):
    """The record cannot be read or written; one line, naming the file."""


class State(str, enum.Enum):
    IN_PROGRESS = "in-progress"  # sites were left for a person, or the apply was interrupted
    DONE = "done"  # nothing was left over the recorded range


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

    @property
    def in_progress(self) -> bool:
        return self.state is State.IN_PROGRESS

    def to_json(self) -> dict[str, Any]:
        return {
            "format": 2,
            "tool": self.tool,
            "from": self.from_version,
            "to": self.to_version,
            "state": self.state.value,
            "left_for_a_person": self.left,
            "interrupted": self.interrupted,
            "written": self.written,
            "when": self.when,
        }


def _record_path(root: str) -> str:
    return os.path.join(root, RECORD)


def write_record(
    root: str,
    from_version: str,
    to_version: str,
    written: list[str],
    left: int = 0,
    interrupted: str | None = None,
) -> str:
    """Record an apply (merged with an earlier record of the same origin: the written files
    add up). In progress when it left sites or was interrupted; raises `RecordError`."""
    files = sorted(os.path.relpath(os.path.abspath(p), root).replace(os.sep, "/") for p in written)
    try:
        earlier = read_record(root)
    except RecordError:
        earlier = None
    if earlier is not None and earlier.from_version == from_version:
        files = sorted(set(files) | set(earlier.written))
    state = State.IN_PROGRESS if left or interrupted else State.DONE
    record = ApplyRecord(
        from_version,
        to_version,
        files,
        time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        state=state,
        left=left,
        interrupted=interrupted,
    )
    return _store(root, record)


def end_migration(root: str, record: ApplyRecord) -> str:
    """Mark the recorded migration done (its record stays, for `verify`)."""
    record.state = State.DONE
    record.left = 0
    return _store(root, record)


def state_folder(root: str) -> str:
    """The project's `.migrate-fi/` folder, made with its own `.gitignore` (`*`) if missing;
    raises OSError."""
    folder = os.path.join(root, FOLDER)
    os.makedirs(folder, exist_ok=True)
    ignore = os.path.join(folder, ".gitignore")
    if not os.path.lexists(ignore):
        write_new_file(ignore, _IGNORE_ALL)
    return folder


def _store(root: str, record: ApplyRecord) -> str:
    path = _record_path(root)
    data = (json.dumps(record.to_json(), indent=2) + "\n").encode()
    try:
        state_folder(root)
        if os.path.exists(path):
            with open(path, "rb") as fh:
                old = fh.read()
            write_atomically(path, data, old)
        else:
            write_new_file(path, data)
    except OSError as exc:
        raise RecordError(f"{path}: cannot be written ({exc.strerror})") from None
    except SourceError as exc:
        raise RecordError(f"{path}: {exc}") from None
    return path


def read_record(root: str) -> ApplyRecord | None:
    """The last apply's record, None when there is none; `RecordError` when it is damaged."""
    path = _record_path(root)
    watch(path)  # (a run replayed relies on it: `migrate_fi.warm`)
    if not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
        if not isinstance(doc, dict):
            raise TypeError("not an object")
        # format 1 (no state): an apply that may have left sites, so in progress
        state = State(doc.get("state", State.IN_PROGRESS.value))
        interrupted = doc.get("interrupted")
        return ApplyRecord(
            str(doc["from"]),
            str(doc["to"]),
            [str(p) for p in doc["written"]],
            str(doc.get("when", "")),
            str(doc.get("tool", "")),
            state,
            int(doc.get("left_for_a_person", 0)),
            None if interrupted is None else str(interrupted),
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise RecordError(f"{path}: not a readable apply record ({exc})") from None
