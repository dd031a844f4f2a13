"""What the last `apply` changed, kept in the project so `verify` can run later, elsewhere.

`apply` writes ``<project root>/.migrate-fi/last-apply.json``: the FlashInfer versions it migrated
between and the files it rewrote, relative to the project root. Commit it to run `verify` on
another machine from the same tree (a GPU box), or add ``.migrate-fi/`` to ``.gitignore``.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from typing import Any

from migrate_fi import __version__
from migrate_fi.sources import SourceError, write_atomically

__all__ = ["RECORD", "ApplyRecord", "RecordError", "read_record", "write_record"]

RECORD = os.path.join(".migrate-fi", "last-apply.json")


class RecordError(Exception):
    """The record cannot be read; one line, naming the file."""


@dataclass
class ApplyRecord:
    from_version: str
    to_version: str
    written: list[str] = field(default_factory=list)  # relative to the project root, "/" separated
    when: str = ""
    tool: str = __version__

    def to_json(self) -> dict[str, Any]:
        return {
            "format": 1,
            "tool": self.tool,
            "from": self.from_version,
            "to": self.to_version,
            "written": self.written,
            "when": self.when,
        }


def write_record(root: str, from_version: str, to_version: str, written: list[str]) -> str:
    """Record an apply (merged with an earlier record of the same migration)."""
    path = os.path.join(root, RECORD)
    files = sorted(os.path.relpath(os.path.abspath(p), root).replace(os.sep, "/") for p in written)
    try:
        earlier = read_record(root)
    except RecordError:
        earlier = None
    if earlier is not None and (earlier.from_version, earlier.to_version) == (
        from_version,
        to_version,
    ):
        files = sorted(set(files) | set(earlier.written))
    record = ApplyRecord(from_version, to_version, files, time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    data = (json.dumps(record.to_json(), indent=2) + "\n").encode()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.exists(path):
        with open(path, "rb") as fh:
            old = fh.read()
        write_atomically(path, data, old)
    else:
        tmp = path + ".tmp"
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    return path


def read_record(root: str) -> ApplyRecord | None:
    """The last apply's record, None when there is none."""
    path = os.path.join(root, RECORD)
    if not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
        return ApplyRecord(
            str(doc["from"]),
            str(doc["to"]),
            [str(p) for p in doc["written"]],
            str(doc.get("when", "")),
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise RecordError(f"{path}: not a readable apply record ({exc})") from None
    except SourceError as exc:  # pragma: no cover - not raised by reads
        raise RecordError(f"{path}: {exc}") from None
