"""What a run depended on besides the files it read, so that its results can be reused.

A rule's helper that consults something outside the file notes it here while the file is
analysed: a value it can recompute cheaply (``note("line-length", path, "100")``: the project's
configured line length; ``note("mentions", root and words, value)``: which files under a root
a search for the callers of a function found, and what they hold, `migrate_fi.codemods._callers`),
or ``note_unbounded()`` for what cannot be recomputed: such a result is never reused. The result
cache (`migrate_fi.run.cache`) stores the notes with the result and asks whether each still holds
(`current`) before reusing it. The engine tells a path it relies on without opening it
(``watch``) to the recording of a `check` that may be replayed (`migrate_fi.run.warm`), which
learns what the run opens and lists by itself, but for what is `covered` (noted, or walked
again).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from operator import itemgetter
from typing import NamedTuple

try:  # (hashlib would load OpenSSL first: more than a replay of a whole run costs)
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - an interpreter built without it
    from hashlib import blake2b

__all__ = [
    "Notes",
    "Stat",
    "absent",
    "blake2b",
    "covered",
    "current",
    "finish",
    "forget_stats",
    "learn_absent",
    "learn_stats",
    "note",
    "note_unbounded",
    "read_bytes",
    "read_with_stat",
    "settled",
    "start",
    "stat",
    "watch",
    "watched_by",
]

Notes = tuple[tuple[str, str, str], ...]  # (kind, argument, value)

# kind -> "module:function" that recomputes the value from the argument, or (`_HOLDS`) that
# says of each (argument, value noted) of a list whether it still holds: the value noted,
# another that stands for the same now, or None
_RECOMPUTE = {
    "line-length": "migrate_fi.codemods._layout:line_length_text",
    # where a search for the callers of a function in a file looks (its `.git`, its packages)
    "search-root": "migrate_fi.codemods._callers:search_root",
    # the extras of flashinfer-python a project's pin files install (FI007)
    "flashinfer-extras": "migrate_fi.codemods.companion_requirements:project_extras_text",
    # another file of the project read for a definition (FI013: a patch's replacement)
    "file-digest": "migrate_fi.codemods.patched_names:file_digest",
}
_HOLDS = {
    # the files a search for callers found under a root, and what they hold
    "mentions": "migrate_fi.codemods._callers:mentions_hold",
}

_notes: set[tuple[str, str, str]] = set()
_unbounded = False
_covered = 0  # > 0: inside `covered`


# File systems stamp times in ticks of a few milliseconds: a file rewritten at the same size
# within one tick keeps its stat (git's "racily clean" entries). What changed this recently
# before a run is never trusted by its stat.
_RECENT_NS = 2_000_000_000


def settled(stat: os.stat_result | Stat, now_ns: int | None = None) -> bool:
    """Whether ``stat`` is old enough to stand for its file's content."""
    now = time.time_ns() if now_ns is None else now_ns
    return max(stat.st_mtime_ns, stat.st_ctime_ns) < now - _RECENT_NS


def all_settled(stats: Sequence[Stat], now_ns: int | None = None) -> bool:
    """`settled` for each of ``stats`` (their newest time looked for in one pass in C)."""
    if not stats:
        return True
    now = time.time_ns() if now_ns is None else now_ns
    newest = max(max(map(_MTIME, stats)), max(map(_CTIME, stats)))
    return bool(newest < now - _RECENT_NS)


class Stat(NamedTuple):
    """What a run keeps of a file's stat (`stat`)."""

    st_size: int
    st_mtime_ns: int
    st_ino: int
    st_ctime_ns: int


_MTIME, _CTIME = itemgetter(1), itemgetter(3)  # (a `Stat`'s times, by place: the fastest)


_stats: dict[str, Stat | None] = {}  # this run's (`stat`)


def stat(path: str) -> Stat | None:
    """The file's stat (None where it cannot be had), asked of the file system once in a run:
    the walk, the checks of a cached result's dependencies and the search for a function's
    callers ask the same files. A file changed meanwhile is seen as the run first saw it (the
    next run sees the change)."""
    try:
        return _stats[path]
    except KeyError:
        pass
    try:
        st = os.stat(path)
    except OSError:
        found = None
    else:
        found = Stat(st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)
    _stats[path] = found
    return found


def read_bytes(path: str) -> bytes:
    """A file's bytes (raises `OSError`): an open, its size and a read to the end, without
    the buffered reader builtin `open` builds (a third of the cost of reading a small file;
    a run reads every file of the tree, most of them once), and, when the read gives the size
    the file had, no second read to meet its end (a quarter of what is left)."""
    return read_with_stat(path)[0]


def read_with_stat(path: str) -> tuple[bytes, Stat]:
    """`read_bytes`, and the file's stat as the run sees it (`stat`): the one its open file
    gave, unless the run asked the file's stat before. (A cold run learns the stats of the
    files it reads this way, where they are read, not with a stat of each beforehand.)"""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        size = st.st_size
        first = os.read(fd, size + 1)  # (one more: a file that grew is read to its end)
        if len(first) == size:
            data = first  # (its size, and no byte more: its end; no read more to find it)
        else:
            chunks = [first]  # (fewer: a read cut short, on some file systems; more: it grew)
            while chunks[-1]:
                chunks.append(os.read(fd, max(size, 1 << 16)))
            data = chunks[0] if len(chunks) == 2 else b"".join(chunks)
    finally:
        os.close(fd)
    seen = _stats.get(path)
    if seen is None:
        seen = _stats[path] = Stat(size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)
    return data, seen


def learn_stats(signatures: Iterable[tuple[str, tuple[int, int, int, int]]]) -> None:
    """Take the stats of files another process learnt in this run (`read_with_stat`), as
    ``(path, (size, mtime_ns, inode, ctime_ns))``; a stat this process asked stays."""
    for path, (size, mtime, ino, ctime) in signatures:
        if path not in _stats:
            _stats[path] = Stat(size, mtime, ino, ctime)


def forget_stats() -> None:
    """A run begins, or ends: every file is asked again (and what the modules that registered
    with `on_forget_stats` kept of files is dropped)."""
    _stats.clear()
    _absent.clear()
    for forget in _forgetters:
        forget()


_forgetters: list[Callable[[], None]] = []


def on_forget_stats(forget: Callable[[], None]) -> Callable[[], None]:
    """Have ``forget`` drop what a module keeps of files' contents whenever a run begins or
    ends: a process that runs again (a library user, the tests) reads them again."""
    _forgetters.append(forget)
    return forget


# words (in lower case) -> the files this run read and found to hold none of them, in any case
_absent: dict[frozenset[bytes], frozenset[str]] = {}


def learn_absent(found: Mapping[frozenset[bytes], Iterable[str]]) -> None:
    """Take what this run's reading found (`migrate_fi.run.reading.Read.without`, in this process
    or another): the files whose text holds none of some words, in any case (those of their
    rules' gate)."""
    for words, paths in found.items():
        _absent[words] = _absent.get(words, frozenset()).union(paths)


def absent(word: bytes) -> frozenset[str]:
    """The files this run read and found without ``word``: those that hold none of some words
    one of which ``word`` contains (a file holding ``flashinfer_quantize`` holds
    "flashinfer", in any case). As the run read them: a file changed since is seen as it was
    (as its stat, `stat`)."""
    lowered = word.lower()
    found = [paths for words, paths in _absent.items() if any(w in lowered for w in words)]
    return frozenset().union(*found) if len(found) != 1 else found[0]


@contextlib.contextmanager
def covered() -> Iterator[None]:
    """What the process reads inside is accounted for otherwise: by the notes of an analysis
    and their recomputation, or by a walk that `migrate_fi.run.warm` makes again. A recording of
    what a run read (`migrate_fi.run.warm.Recording`) leaves it out."""
    global _covered
    _covered += 1
    try:
        yield
    finally:
        _covered -= 1


def is_covered() -> bool:
    return _covered > 0


_watcher: Callable[[str], None] | None = None


def watch(path: str) -> None:
    """The run relies on what ``path`` is, or on its absence (a file it looked for and, not
    finding it, did not open): told to the recording of the run, if any (`migrate_fi.run.warm`)."""
    if _watcher is not None and not _covered:
        _watcher(path)


def watched_by(watcher: Callable[[str], None] | None) -> None:
    global _watcher
    _watcher = watcher


def start() -> None:
    global _unbounded
    _notes.clear()
    _unbounded = False


def note(kind: str, argument: str, value: str) -> None:
    if kind not in _RECOMPUTE and kind not in _HOLDS:
        raise ValueError(
            f"no way to check a {kind!r} dependency again: add it to _RECOMPUTE or _HOLDS"
        )
    _notes.add((kind, argument, value))


def note_unbounded() -> None:
    global _unbounded
    _unbounded = True


def finish() -> Notes | None:
    """The notes since `start`, sorted; None when the analysis read the whole project."""
    return None if _unbounded else tuple(sorted(_notes))


class Change(NamedTuple):
    """A file a replay found changed since the run it replays (`migrate_fi.run.patching`)."""

    before: Stat  # its stat then
    data: bytes  # its bytes now
    same: bool  # whether they are known to be its bytes then


def current(
    notes: Sequence[tuple[str, str, str]], changed: Mapping[str, Change] | None = None
) -> list[str | None]:
    """What each noted dependency ``(kind, argument, value)`` says now: ``value`` while it
    holds as noted, another value that stands for the same where its kind can tell (a search
    for callers over files that changed, none of them among those it found or would find now),
    None when it does not hold (or cannot be worked out). The notes of a kind in `_HOLDS` are
    asked together (the searches of one root read its files once), told the files ``changed``
    since the notes were made when a replay knows them all."""
    out: list[str | None] = [None] * len(notes)
    by_kind: dict[str, list[int]] = {}
    for i, (kind, _, _) in enumerate(notes):
        by_kind.setdefault(kind, []).append(i)
    for kind, places in by_kind.items():
        holds = _HOLDS.get(kind)
        target = holds or _RECOMPUTE.get(kind)
        if target is None:
            continue
        module, _, name = target.partition(":")
        fn = getattr(importlib.import_module(module), name)
        try:
            with covered():
                if holds is not None:
                    found = fn([notes[i][1:] for i in places], changed)
                else:
                    found = [v if fn(a) == v else None for a, v in (notes[i][1:] for i in places)]
        except Exception:  # a dependency that cannot be worked out is not met
            continue
        for i, value in zip(places, found, strict=True):
            out[i] = value
    return out
