"""A warm `check` over a tree where files changed, none in a way that can change what it prints.

`migrate_fi.run.warm.replay` answers a command from the record of its last run while nothing that
run read changed. A file touched (a checkout, a build step, an editor saving it as it was) or
edited where it never names FlashInfer changes the digest of the walk, and the whole command ran
again: its imports, its options, the result cache, the re-export rounds (0.2 s on vLLM's tree
and 1 s on 16 copies of SGLang's, against 0.08 s and 0.5 s replayed). So the record keeps what
tells such a change from one that matters (`Patch`): the walk but for its files' stats, each
file's stat, a digest of the bytes of every file a rule analysed, the words one of which every
file a rule must see contains (`migrate_fi.run.pipeline.RuleTests.gates`), and the project's
re-exports the rounds followed. A file whose stat changed leaves the output as it was when it
is a Python file the run did not read as its configuration, and either

- a rule analysed it, and its bytes are the same; or
- none did, it is not one of FlashInfer's own modules (they are tested with their module's
  name: `migrate_fi.run.pipeline.must_see`), it still contains none of those words, and it may
  import none of the re-exports (`migrate_fi.analysis.importwords.AliasImports`, as the rounds ask).

What the analyses read outside their files is checked as for any replay
(`migrate_fi.base.depends.current`). Anything else (a file added, removed or renamed, a folder that
became a package, a dependency file, a file that cannot be read) and the command runs.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence
from typing import NamedTuple

from migrate_fi.base import depends
from migrate_fi.base.depends import blake2b
from migrate_fi.base.modules import is_python_path

__all__ = ["RECORD", "Gate", "Patch", "changed_files", "changes", "content_digest"]

RECORD = 32  # the bytes of one file's stat in `Patch.numbers`: 4 signed 64-bit numbers
# a group of rules that read the same files: their suffixes, their file patterns, and the words
# (lower case) one of which every file a rule of them must see contains (None: none says)
Gate = tuple[tuple[str, ...], tuple[str, ...], tuple[bytes, ...] | None]


class Patch(NamedTuple):
    """What the record of a run keeps to tell whether files changed since change its output."""

    shape: bytes  # the digest of the walk but for the files' stats (`warm.TreeState.shape`)
    numbers: bytes  # each file's size, modification time, inode and change time, walk order
    analysed: dict[str, bytes]  # path -> `content_digest` of each file a rule analysed
    gates: tuple[Gate, ...]
    aliases: tuple[str, ...]  # the project's re-exports the rounds followed (`module.name`)
    inputs: tuple[str, ...] = ()  # files of the walk the run read as its own input


def content_digest(data: bytes) -> bytes:
    """The digest a file's bytes are told by."""
    return blake2b(data, digest_size=16).digest()


def changed_files(files: Sequence[str], before: bytes, now: bytes) -> list[str] | None:
    """Those of ``files`` whose stat is not the same in ``now`` as in ``before`` (each
    `RECORD` bytes a file, in order); None when they cannot be compared."""
    places = _changed_places(len(files), before, now)
    return None if places is None else [files[i] for i in places]


def _changed_places(count: int, before: bytes, now: bytes) -> list[int] | None:
    """`changed_files`, by their place in the walk."""
    size = count * RECORD
    if len(before) != size or len(now) != size:
        return None  # (another number of files, or stats too large for the packed form)
    out: list[int] = []
    old, new = memoryview(before), memoryview(now)
    block = RECORD * 512  # (equal stretches are passed over a block at a time)
    for start in range(0, size, block):
        end = min(start + block, size)
        if old[start:end] == new[start:end]:
            continue
        for at in range(start, end, RECORD):
            if old[at : at + RECORD] != new[at : at + RECORD]:
                out.append(at // RECORD)
    return out


def changes(
    patch: Patch, files: Sequence[str], shape: bytes, numbers: bytes
) -> dict[str, depends.Change] | None:
    """The files that changed since the run ``patch`` was recorded with, over the walk that
    found ``files`` now (``shape``, ``numbers``: its `warm.TreeState`), when none can change
    what it printed (see the module docstring); else None."""
    if shape != patch.shape:
        return None
    places = _changed_places(len(files), patch.numbers, numbers)
    if places is None:
        return None
    inputs = set(patch.inputs)
    aliases = None
    out: dict[str, depends.Change] = {}
    for i in places:
        path = files[i]
        if path in inputs or not is_python_path(path):
            return None
        try:
            data = depends.read_bytes(path)
        except OSError:
            return None
        digest = patch.analysed.get(path)
        if digest is not None and content_digest(data) != digest:
            return None
        if digest is None:
            if f"flashinfer{os.sep}" in path or not _ruled_out(path, data, patch.gates):
                return None
            if patch.aliases:
                from migrate_fi.analysis.importwords import AliasImports, file_imports

                aliases = aliases or AliasImports(patch.aliases)
                if aliases.imported_by(file_imports(data, path), data, path):
                    return None
        before = depends.Stat(*struct.unpack_from("=4q", patch.numbers, i * RECORD))
        out[path] = depends.Change(before, data, same=digest is not None)
    return out


def _ruled_out(path: str, data: bytes, gates: Sequence[Gate]) -> bool:
    """Whether no rule must see the file: every group of rules that reads it has words, and
    the file contains none of them (`migrate_fi.run.pipeline.matching`'s first test)."""
    from migrate_fi.project.discovery import wanted_files

    lowered = None
    for suffixes, patterns, words in gates:
        if not wanted_files(suffixes, patterns)(path):
            continue
        if words is None:
            return False
        lowered = data.lower() if lowered is None else lowered
        if any(w in lowered for w in words):
            return False
    return True
