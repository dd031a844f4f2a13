"""The result cache of `check`: a file analysed once is not analysed again while nothing it
depends on changed.

An entry is keyed on everything the analysis of one file reads: migrate-fi's own code and API
data and the libraries it works with (`migrate_fi.run.warm.fingerprint`: the size and modification
time of every file of the package and of the user's data folder, and of each library's
`__init__.py`), the run's options (range, rules and their settings), the rules that must see the
file, the project's re-exports the file was analysed with, its path and module name, and its
bytes. What the analysis consulted outside the file (`migrate_fi.base.depends`: the configured line
length; for a search of a function's callers, the files it found and what they hold) is stored
with the result and checked before it is reused (`migrate_fi.base.depends.current`); a result whose
reads cannot be recomputed (`depends.note_unbounded`) is never stored.

Entries live in ``$MIGRATE_FI_CACHE_DIR``, else the per-user cache folder
(``$XDG_CACHE_HOME/migrate-fi/results``, ``~/.cache/migrate-fi/results``). The entries a run
used are kept together with its walk (`WalkMemo`), in one file: a warm run reads one file for
them, and a cold run writes one, not one per result (creating 2,000 small files cost a cold run
of 2,000 modules more than their analysis). An entry the last run with these options kept and
this run did not use (a file edited since, a run over another part of the tree) is then written
to a file of its own, so that a later run still finds it. Every file is written at once (a
temporary file, then a rename: concurrent runs never see a half-written one); a damaged or
unreadable one is a miss. The folder is kept under `MAX_ENTRIES` files, oldest dropped first.
`--no-cache` (or ``MIGRATE_FI_NO_CACHE=1``) turns it off.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import gc
import os
import pickle
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, BinaryIO, TypeVar

from migrate_fi.base import depends
from migrate_fi.base.depends import blake2b
from migrate_fi.base.results import FileResult, RunResult
from migrate_fi.base.userdirs import user_folder
from migrate_fi.framework.rule import RunOptions
from migrate_fi.run.warm import fingerprint, write_at_once

__all__ = ["MAX_ENTRIES", "ResultCache", "WalkMemo", "cache_dir"]

T = TypeVar("T")
CACHE_ENV = "MIGRATE_FI_CACHE_DIR"
MAX_ENTRIES = 20_000
_FORMAT = 2  # 2: `Lookups.skipped`


def cache_dir() -> str:
    return user_folder("cache", CACHE_ENV, "results")


def _canonical(value: object) -> object:
    """``value`` as plain data that prints the same in every process (a set's order follows
    the process's string hashing; pickles of sets differ from run to run)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (
            type(value).__name__,
            tuple((f.name, _canonical(getattr(value, f.name))) for f in dataclasses.fields(value)),
        )
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # (a NamedTuple's: the same)
        fields = zip(value._fields, map(_canonical, value), strict=True)
        return (type(value).__name__, tuple(fields))
    if isinstance(value, (set, frozenset)):
        return ("set", tuple(sorted((_canonical(v) for v in value), key=repr)))
    if isinstance(value, dict):
        return ("dict", tuple(sorted(((repr(k), _canonical(v)) for k, v in value.items()))))
    if isinstance(value, (list, tuple)):
        return tuple(_canonical(v) for v in value)
    if isinstance(value, enum.Enum):
        return (type(value).__name__, _canonical(value.value))
    if value is None or isinstance(value, (str, int, float, bool, bytes)):
        return value
    return (type(value).__name__, str(value))  # Version: its text


def _load(fh: BinaryIO) -> Any:
    """``pickle.load``, the cycle collector held off: the walk of 16 copies of SGLang's tree
    is 200,000 objects, and collections met on the way walked the run's own objects each
    time (45 ms loaded with it off, 50-80 ms with it on)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return pickle.load(fh)
    finally:
        if collecting:
            gc.enable()


def _holding(notes: depends.Notes) -> depends.Notes | None:
    """``notes`` as they stand now (`migrate_fi.base.depends.current`), when every one holds."""
    out = []
    for (kind, argument, _), value in zip(notes, depends.current(notes), strict=True):
        if value is None:
            return None
        out.append((kind, argument, value))
    return tuple(out)


_Entry = tuple[depends.Notes, FileResult]  # a result, and what it consulted outside its file
Signature = tuple[int, int, int, int]  # size, modification time (ns), inode, change time (ns)


class WalkMemo:
    """The files a run's prefilter ruled out (and those found not to import the project's
    re-exports of a given set), by their stat signature: an unchanged file is not read again;
    and the rules whose prefilter each file it passed matched (they are not tested again).
    A file changed just before the run is not remembered (`migrate_fi.base.depends.settled`).
    `WalkMemo()` remembers nothing (a run without the cache); `--no-cache` reads everything."""

    def __init__(
        self,
        ruled_out: dict[str, Signature] | None = None,
        importers: dict[str, dict[str, Signature]] | None = None,
        matched: dict[str, tuple[Signature, tuple[str, ...]]] | None = None,
    ) -> None:
        self.enabled = ruled_out is not None
        self._out = ruled_out or {}
        self._imports = importers or {}
        self._matched = matched or {}  # files the prefilter passed: the rules it matched
        self.changed = False
        self._now = time.time_ns()

    def signature(self, path: str) -> Signature | None:
        """The file's stat, when it is settled (and this memo remembers anything), as the run
        first asked it (`depends.stat`)."""
        if not self.enabled:
            return None
        st = depends.stat(path)
        if st is None or not depends.settled(st, self._now):
            return None
        return tuple(st)  # type: ignore[return-value]

    def empty(self) -> bool:
        """Whether it knows no file (nothing to rule out unread, nor matched)."""
        return not self._out and not self._matched

    def ruled_out(self, path: str, signature: Signature | None) -> bool:
        return signature is not None and self._out.get(path) == signature

    def rule_out(self, path: str, signature: Signature | None) -> None:
        if signature is not None:
            self._out[path] = signature
            self.changed = True

    def matched(self, path: str, signature: Signature | None) -> tuple[str, ...] | None:
        """The rules whose prefilter the unchanged file passed (None: not known)."""
        if signature is None:
            return None
        found = self._matched.get(path)
        return found[1] if found is not None and found[0] == signature else None

    def note_matched(self, path: str, signature: Signature | None, ids: tuple[str, ...]) -> None:
        if signature is not None and self._matched.get(path) != (signature, ids):
            self._matched[path] = (signature, ids)
            self.changed = True

    def learn(
        self,
        ruled_out: Iterable[tuple[str, Signature]],
        matched: Iterable[tuple[str, Signature, tuple[str, ...]]],
    ) -> None:
        """What reading files found (`migrate_fi.run.reading.Read`): those the prefilter ruled
        out, and the rules the others matched."""
        for path, signature in ruled_out:
            self.rule_out(path, signature)
        for path, signature, ids in matched:
            self.note_matched(path, signature, ids)

    def not_known_to_import_none(self, paths: list[str], asked: str) -> list[str]:
        """Those of ``paths`` that `imports_none` may not answer for: every path but those
        unchanged since they were found not to import what ``asked`` says (a stat equal to one
        noted is that of a settled file: the file is as it was). One pass, for the tens of
        thousands of files a large tree's run with a file touched asks about."""
        noted = self._imports.get(asked) if self.enabled else None
        if not noted:
            return paths
        stat = depends.stat
        return [path for path in paths if noted.get(path) != stat(path)]

    def imports_none(self, path: str, signature: Signature | None, asked: str) -> bool:
        return signature is not None and self._imports.get(asked, {}).get(path) == signature

    def note_imports_none(self, paths: Iterable[str], asked: str) -> None:
        """Note that ``paths`` import none of what ``asked`` says, each by its `signature`
        (in one pass: most of the files of a tree, after the first round)."""
        found = {path: s for path in paths if (s := self.signature(path)) is not None}
        if found:
            self._imports.setdefault(asked, {}).update(found)
            self.changed = True

    def state(
        self,
    ) -> tuple[
        dict[str, Signature],
        dict[str, dict[str, Signature]],
        dict[str, tuple[Signature, tuple[str, ...]]],
    ]:
        return self._out, self._imports, self._matched


class ResultCache:
    """The entries of one run: its options, rules and mode fixed."""

    def __init__(self, ids: tuple[str, ...], options: RunOptions, folder: str | None = None):
        self.folder = folder or cache_dir()
        self._run = fingerprint() + repr(_canonical((ids, options))).encode()
        self.hits = self.stored = 0
        self._aliases: tuple[Mapping[str, str], bytes] | None = None
        # the entries the last run with these options used, kept with its walk (one read for a
        # warm run, not one file per result), and those this run uses (kept for the next)
        self._pack: dict[str, _Entry] = {}
        self._used: dict[str, _Entry] = {}
        # what the results of this run consulted outside their files, and whether every one
        # of them came from, or went to, the cache (else the run is not replayed: `replay`)
        self._notes: set[tuple[str, str, str]] = set()
        self.replayable = True
        self._refreshed = False  # (an entry's notes said again as they stand now: kept so)
        self._ran_before = False  # (a run with these options left its walk: `memo` keeps)

    def key(
        self,
        content: bytes,
        shown: str,
        path: str,
        module: tuple[str | None, bool],
        aliases: Mapping[str, str],
        prefiltered: tuple[str, ...],
    ) -> str:
        if self._aliases is None or self._aliases[0] is not aliases:
            # (the same re-exports for every file of a round: written out once; the mapping is
            # held, so that its id is not another's)
            self._aliases = (aliases, repr(sorted(aliases.items())).encode())
        h = blake2b(self._run, digest_size=20)
        h.update(self._aliases[1])
        h.update(repr((shown, path, module, prefiltered)).encode())
        h.update(content)  # (`migrate_fi.run.patching.content_digest` of the file's bytes)
        return h.hexdigest()

    def walk(self) -> WalkMemo:
        """What the last run with these options ruled out ({} the first time)."""
        try:
            with open(self._file(self._walk_key()), "rb") as fh:
                out, imports, matched, pack = _load(fh)
            if all(isinstance(x, dict) for x in (out, imports, matched, pack)):
                self._pack = pack
                self._ran_before = True
                return WalkMemo(out, dict(list(imports.items())[-4:]), matched)
        except Exception:  # missing or damaged: every file is read
            pass
        return WalkMemo({}, {})

    def save_walk(self, walk: WalkMemo) -> None:
        """The walk, with the entries this run used (when either changed); the entries of the
        last run's that this one did not use, each to a file of its own (unless it has one)."""
        if walk.changed or self._refreshed or self._used.keys() != self._pack.keys():
            for key in self._pack.keys() - self._used.keys():
                if not os.path.exists(self._file(key)):
                    self._write(key, self._pack[key])
            if not self._write(self._walk_key(), (*walk.state(), self._used)):
                self.replayable = False  # (its results are not kept: made again next time)

    def _walk_key(self) -> str:
        return blake2b(self._run + b"\0walk", digest_size=20).hexdigest()

    def memo(self, name: str, compute: Callable[[], T]) -> T:
        """A value of the whole run (``name``: what it is), computed once for these options;
        kept from the second run on (a first run over an empty cache, a CI job's, is often
        the only one: writing FI002's triggers cost it 5 ms, before any file was read)."""
        key = blake2b(self._run + b"\0memo\0" + name.encode(), digest_size=20).hexdigest()
        try:
            with open(self._file(key), "rb") as fh:
                value: T = _load(fh)
                return value
        except Exception:  # missing, damaged, unreadable: computed again
            pass
        value = compute()
        if self._ran_before:
            self._write(key, value)
        return value

    def _file(self, key: str) -> str:
        return os.path.join(self.folder, key[:2], key[2:])

    def get(self, key: str) -> FileResult | None:
        entry = self._pack.get(key) or self._used.get(key)
        if entry is None:
            try:
                with open(self._file(key), "rb") as fh:
                    entry = _load(fh)
            except FileNotFoundError:
                return None
            except Exception:  # damaged, or written by another migrate-fi: a miss
                return None
        try:
            notes, result = entry
        except (TypeError, ValueError):
            return None
        if not isinstance(result, FileResult):
            return None
        now = _holding(notes)
        if now is None:
            return None
        self.hits += 1
        self._refreshed = self._refreshed or now != notes
        self._used[key] = (now, result)  # (kept with what its notes say now)
        self._notes.update(now)
        return result

    def put(self, key: str, notes: depends.Notes, result: FileResult) -> None:
        """Keep a file's result with the others this run uses (written by `save_walk`)."""
        self.stored += 1
        self._used[key] = (notes, result)
        self._notes.update(notes)

    def may_replay(self) -> bool:
        """Whether a result of the last run with these options is kept (`replay`)."""
        return os.path.exists(self._file(self._replay_key()))

    def replay(self, tree: bytes) -> RunResult | None:
        """The result of the last run with these options, when it ran over the same tree
        (``tree``: the digest of every file's path and stat, `WalkMemo.signature`, and of what
        else the walk found) and what its results consulted outside their files is unchanged:
        a run over a tree where nothing changed is this one read."""
        try:
            with open(self._file(self._replay_key()), "rb") as fh:
                digest, notes, result = _load(fh)
        except Exception:  # missing, damaged, another migrate-fi's: the run is made
            return None
        if digest != tree or not isinstance(result, RunResult):
            return None
        now = _holding(notes)
        if now is None:
            return None
        self._notes.update(now)  # (what a replay of this run checks too: `migrate_fi.run.warm`)
        if now != notes:  # (said again as they stand now: the next run checks them cheaply)
            self._write(self._replay_key(), (tree, tuple(sorted(now)), result))
        return result

    def notes(self) -> tuple[tuple[str, str, str], ...]:
        """What this run's results consulted outside their files (`migrate_fi.base.depends`)."""
        return tuple(sorted(self._notes))

    def save_replay(self, tree: bytes, result: RunResult) -> None:
        """Keep ``result`` for `replay`, when every result of the run came from the cache or
        went to it (an error, or an analysis that searched the whole project, is made again)."""
        if self.replayable and not result.errors:
            self._write(self._replay_key(), (tree, tuple(sorted(self._notes)), result))

    def _replay_key(self) -> str:
        return blake2b(self._run + b"\0replay", digest_size=20).hexdigest()

    def _write(self, key: str, value: object) -> bool:
        return write_at_once(self._file(key), lambda fh: pickle.dump(value, fh, protocol=4))

    def prune(self, limit: int = MAX_ENTRIES) -> None:
        """Keep at most ``limit`` entries, the newest."""
        if not self.stored:
            return
        entries: list[tuple[int, str]] = []
        with contextlib.suppress(OSError):
            for shard in os.scandir(self.folder):
                if shard.is_dir():
                    for entry in os.scandir(shard.path):
                        with contextlib.suppress(OSError):
                            entries.append((entry.stat().st_mtime_ns, entry.path))
        if len(entries) <= limit:
            return
        entries.sort()
        for _, path in entries[: len(entries) - limit]:
            with contextlib.suppress(OSError):
                os.unlink(path)
