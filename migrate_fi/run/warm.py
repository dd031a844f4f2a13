"""A warm `check`: what the last run of the same command printed, when nothing it read changed.

`check` runs again and again over trees that did not change (pre-commit, CI reruns). The result
cache (`migrate_fi.run.cache`) spares the analyses, but such a run still imports click, the engine and
the rules, and settles its options, before it can even ask: on a tree of 2,000 files, most of its
time. The entry point (`migrate_fi.__main__`) asks this module first, before any of that.

- The key is the command (`Command`): migrate-fi's code and data and the libraries it works
  with (`fingerprint`), the arguments, the current folder, the environment (but `$_` and
  `$OLDPWD`, which shells set), whether and how stdout and stderr print, and the interpreter's
  options.
- A `check` that reads the result cache records what it reads as it runs (`begin`): the stat of
  every file it opens (Python's "open" audit event comes before the open: a file looked for
  and not found counts too), the names in every folder it lists, and what each path it looks
  for without opening is, a file, a folder or nothing (`migrate_fi.base.depends.watch`: a
  configuration, a project's markers, the record of a migration, looked for upward), each as it
  first found it. What its walk and its analyses read is not recorded: the walk is made again
  (below), and the analyses note what they read outside their files (`migrate_fi.base.depends`); nor
  are the modules it imports. Audit events see every reader, those added later too.
- Once the run has printed, the entry keeps all that, the walk's arguments and digest
  (`tree_digest`), what the analyses consulted, and what the run printed, with its exit status
  (`Recording.save`).
- `replay` checks the recorded stats and listings, walks the tree again as the run did and
  compares the digests, recomputes what the analyses consulted, and prints the same output.
  Where files of the walk changed, it asks whether any can change the output
  (`migrate_fi.run.patching`: a file touched, or edited where no rule must see it): if none can, it
  prints the same, and keeps the entry as the tree is now.

Anything else (another argument, a changed or new file, a file changed too recently for its
stat to say so, an entry that cannot be read) and the command runs as usual: it may still be
replayed from the result cache, which is keyed on the options, not on the command line. A run
that reported an error, started a program, read what it cannot stat, or printed what click would
have altered (an escape sequence, a stream not in UTF-8) is not kept. This module and what
`replay` imports stay small: that is the point of it.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import stat
import sys
import time
from array import array
from collections.abc import Callable, Iterable, Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple

from migrate_fi import __version__
from migrate_fi.base import depends
from migrate_fi.base.depends import blake2b
from migrate_fi.base.files import temporary_beside
from migrate_fi.base.userdirs import user_folder

if TYPE_CHECKING:  # (a replay imports it only when files changed)
    from migrate_fi.run.patching import Patch

__all__ = [
    "Command",
    "Recording",
    "TreeState",
    "Walk",
    "begin",
    "fingerprint",
    "recording",
    "replay",
    "tree_digest",
    "tree_state",
    "write_at_once",
]

_FORMAT = 2  # 2: what a replay over files that changed asks (`migrate_fi.run.patching`)
_CACHE_ENV = "MIGRATE_FI_CACHE_DIR"  # (`migrate_fi.run.cache`'s folder: its entries live beside)
# a file's size, modification time, inode and change time (None: it is not there)
_Stat = tuple[int, int, int, int] | None
# how a run walked (`migrate_fi.project.discovery.discover`'s arguments): paths, suffixes, --exclude,
# whether .gitignore counts, the configuration's excludes with their folder, file patterns
Walk = tuple[list[str], tuple[str, ...], list[str], bool, list[tuple[str, list[str]]], list[str]]

_fingerprint: bytes | None = None


def own_folders() -> tuple[str, ...]:
    """The folders of migrate-fi's code and bundled data: the package, and its rules (inside
    it once installed; an editable install of the source tree finds them beside it)."""
    import importlib.util

    import migrate_fi

    package = os.path.dirname(os.path.abspath(migrate_fi.__file__))
    out = [package]
    spec = importlib.util.find_spec("migrate_fi.codemods")
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        folder = os.path.abspath(location)
        if not folder.startswith(os.path.join(package, "")):
            out.append(folder)
    return tuple(out)


def fingerprint() -> bytes:
    """migrate-fi's own code and bundled data, the user's API data and value-change files, and
    the libraries a result depends on: what every result depends on (a stat of each file,
    `_stamp`; an edited rule, a new release or an upgraded library changes it)."""
    global _fingerprint
    if _fingerprint is None:
        data = user_folder("data", "MIGRATE_FI_DATA_DIR", "api")  # (`api.store.user_data_dir`)
        h = blake2b(f"{_FORMAT}:{__version__}:{sys.version}".encode(), digest_size=20)
        for top in (*own_folders(), data):
            for folder, dirs, files in os.walk(top):
                dirs[:] = sorted(d for d in dirs if d != "__pycache__")
                for name in sorted(files):
                    # (.toml: notes and values; .jsonl: their compiled copies)
                    if name.endswith((".py", ".json", ".json.gz", ".toml", ".jsonl")):
                        path = os.path.join(folder, name)
                        try:
                            st = os.stat(path)
                        except OSError:
                            continue
                        h.update(_stamp(path, st).encode())
        h.update(_libraries().encode("utf-8", "surrogateescape"))
        _fingerprint = h.digest()
    return _fingerprint


def _stamp(path: str, st: os.stat_result) -> str:
    """What the fingerprint keeps of a file: its size, modification and change times and
    inode (git's index: no tool sets the change time, so a file edited at the same size with
    its modification time put back still changes it). A file changed too recently for its
    times to tell a later change from this one (`depends.settled`) makes the fingerprint
    unlike any other: nothing is reused while it settles."""
    if not depends.settled(st):
        return f"{path}\0changed just now\0{time.time_ns()}\0"
    return f"{path}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_ino}\0"


# the libraries a `check` result depends on: its walk (pathspec), its versions (packaging), its
# output (click); libcst only ever rewrites
_LIBRARIES = ("click", "packaging", "pathspec")


def _libraries() -> str:
    """Where each of `_LIBRARIES` would be imported from, and the stat of its `__init__.py` (an
    upgrade rewrites it), found without importing it."""
    out = []
    for name in _LIBRARIES:
        for entry in sys.path:
            init = os.path.join(entry or os.curdir, name, "__init__.py")
            try:
                st = os.stat(init)
            except OSError:
                continue
            out.append(_stamp(init, st))
            break
    return "".join(out)


class TreeState(NamedTuple):
    """What a run's result depends on in the tree (`tree_state`)."""

    tree: bytes | None  # the digest of it all (None: a file changed too recently to tell)
    shape: bytes  # the digest of all but the files' stats
    numbers: bytes  # each file's stat, `migrate_fi.run.patching.RECORD` bytes a file, in order


def tree_state(
    paths: Sequence[str], stale: Sequence[str], links: Sequence[str]
) -> TreeState | None:
    """What a run's result depends on in the tree, but for what its analyses note
    (`migrate_fi.base.depends`): every file's path and stat, the packages that enclose each folder
    (they name the modules), the stale and linked files, and the current folder (it is how
    the paths are shown). None when a file's stat cannot be had. (Worked out over all the
    files at once, not file by file: 16 copies of SGLang's tree, 30,000 files, 56-75 ms ->
    26-47 ms once their stats are known.)"""
    from migrate_fi.base.modules import enclosing_packages, splits

    found = list(map(depends.stat, paths))
    stats = [st for st in found if st is not None]
    if len(stats) != len(found):
        return None
    try:
        numbers = array("q", chain.from_iterable(stats)).tobytes()
    except OverflowError:  # (an inode number past 2**63: never compared file by file)
        numbers = repr(stats).encode()
    folders = sorted({folder for folder, _ in splits(paths)})
    packages = [f"{folder}\0{enclosing_packages(folder)}\0" for folder in folders]
    texts = (os.getcwd(), "\0".join(paths), "".join(packages), repr((list(stale), list(links))))
    shape = _framed(t.encode("utf-8", "surrogateescape") for t in texts)
    tree = _framed((shape, numbers)) if depends.all_settled(stats) else None
    return TreeState(tree, shape, numbers)


def tree_digest(paths: Sequence[str], stale: Sequence[str], links: Sequence[str]) -> bytes | None:
    """The digest of `tree_state`; None when a file changed too recently for its stat to say so."""
    state = tree_state(paths, stale, links)
    return None if state is None else state.tree


def _framed(parts: Iterable[bytes]) -> bytes:
    h = blake2b(digest_size=20)
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))  # (each part framed by its length)
        h.update(part)
    return h.digest()


# what a shell sets on its own, that no run reads: the last word of the command before (or the
# program started), the folder it was in
_SHELLS = frozenset({"_", "OLDPWD"})


class Command(NamedTuple):
    """What the output of a command depends on besides the files it reads."""

    argv: tuple[str, ...]
    cwd: str
    environ: tuple[tuple[str, str], ...]
    streams: tuple[object, ...]  # stdout's and stderr's: a terminal?, encoding, errors
    python: str = ""  # the interpreter's options (`-W error`, `-X dev`: they may change a run)

    @classmethod
    def current(cls, argv: Sequence[str]) -> Command:
        streams: list[object] = []
        for stream in (sys.stdout, sys.stderr):
            try:
                tty = stream.isatty()
            except (AttributeError, ValueError):  # (closed, or no stream at all)
                tty = None
            streams += [tty, getattr(stream, "encoding", None), getattr(stream, "errors", None)]
        environ = tuple(sorted((k, v) for k, v in os.environ.items() if k not in _SHELLS))
        python = repr((tuple(sys.flags), sys.warnoptions, sorted(sys._xoptions.items())))
        return cls(tuple(argv), os.getcwd(), environ, tuple(streams), python)

    def eligible(self) -> bool:
        """A `check` that reads the result cache (the only command replayed)."""
        return (
            bool(self.argv)
            and self.argv[0] == "check"
            and not {"--no-cache", "--changed-since", "-h", "--help"} & set(self.argv)
            and not any(a.startswith("--changed-since=") for a in self.argv)
            and dict(self.environ).get("MIGRATE_FI_NO_CACHE") != "1"
            and not self._cache_among_the_project()
        )

    def _cache_folder(self) -> str:
        folder = dict(self.environ).get(_CACHE_ENV) or user_folder("cache", _CACHE_ENV, "results")
        return os.path.abspath(os.path.expanduser(folder))

    def _cache_among_the_project(self) -> bool:
        """Whether the cache folder holds the current folder or a path given, or lies inside
        one: a recording leaves out what is read in the cache folder (its own files change
        with every run), so a project file there would go unseen. Such a run is not replayed."""
        cache = os.path.join(self._cache_folder(), "")
        places = [self.cwd, *(os.path.join(self.cwd, a) for a in self.argv[1:] if a[:1] != "-")]
        for place in places:
            place = os.path.join(os.path.abspath(place), "")
            if place.startswith(cache) or cache.startswith(place):
                return True
        return False

    def entry(self) -> str:
        """The file of this command's entry."""
        h = blake2b(fingerprint(), digest_size=20)
        h.update(repr((_FORMAT, self)).encode("utf-8", "surrogateescape"))
        key = h.hexdigest()
        return os.path.join(self._cache_folder(), key[:2], "w" + key[2:])


def _stat(path: str) -> _Stat:
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)


def replay(argv: Sequence[str], command: Command | None = None) -> int | None:
    """Print what the last run of this command printed and return its exit status, when nothing
    it read has changed since, or only files whose change cannot change it
    (`migrate_fi.run.patching`); None (having printed nothing) when the command must run."""
    global _walked
    command = command or Command.current(argv)
    _walked = None
    if not command.eligible():
        return None
    depends.forget_stats()  # (as a run: each file's stat asked once, now)
    try:
        with open(command.entry(), "rb") as fh:
            entry = marshal.loads(fh.read())
        version, read, walk, tree, notes, out, err, code, patch = entry
        if version != _FORMAT:
            return None
        for kind, path, state in read:
            if _state(kind, path) != state:
                return None
        walked = _walk_again(command, walk)
        now = walked.state
        patched = now is None or now.tree != tree
        changed = _changes(patch, walked) if patched else {}
        if changed is None:
            return None
        # (as noted, or a value that stands for the same now: a search over files that
        # changed, none of them among those it found)
        values = depends.current(notes, changed)
        if None in values:
            return None
    except Exception:  # missing, damaged, written by another migrate-fi: the command runs
        return None
    try:
        sys.stdout.write(out)
        sys.stdout.flush()
        sys.stderr.write(err)
        sys.stderr.flush()
    except BrokenPipeError:  # (the reader left: as a run that printed it would)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    said = tuple((kind, argument, v) for (kind, argument, _), v in zip(notes, values, strict=True))
    if (patched or said != tuple(map(tuple, notes))) and now is not None and now.tree is not None:
        # (kept as it stands now: the next replay is a plain one)
        if patch is not None:
            patch = (patch[0], now.numbers, *patch[2:])
        again = (_FORMAT, read, walk, now.tree, said, out, err, code, patch)
        write_at_once(command.entry(), lambda fh: fh.write(marshal.dumps(again)))
    return int(code)


def _changes(patch: tuple[object, ...] | None, walked: Walked) -> dict[str, depends.Change] | None:
    """The files that changed since the recorded run, when none can change its output
    (`migrate_fi.run.patching`); else None."""
    if patch is None or walked.state is None:
        return None
    from migrate_fi.run.patching import Patch, changes

    recorded = Patch(*patch)  # type: ignore[arg-type]
    return changes(recorded, walked.files, walked.state.shape, walked.state.numbers)


class Walked(NamedTuple):
    """What a walk found, and what the run depends on in it (`tree_state`), made with the stats
    the walk took: the run that is handed it keeps them (`migrate_fi.base.depends.stat`), and so
    agrees."""

    files: list[str]
    stale: list[str]
    links: list[str]
    state: TreeState | None


# the walk the last `replay` made, and the command it was for: the command then runs, and need
# not walk again (`begin`)
_walked: tuple[Command, Walk, Walked] | None = None


def _walk_again(command: Command, walk: Walk) -> Walked:
    """The walk of the recorded run, made again (`migrate_fi.project.discovery.discover`)."""
    global _walked
    from migrate_fi.project.discovery import discover

    stale: list[str] = []
    links: list[str] = []

    def unreadable(folder: str, exc: OSError) -> None:
        raise exc  # (a run that says so is never kept)

    found = list(discover(*walk, unreadable, stale.append, links.append))
    walked = Walked(found, stale, links, tree_state(found, stale, links))
    _walked = (command, walk, walked)
    return walked


class Recording:
    """What a `check` read, learnt as it runs (see the module docstring)."""

    def __init__(self, command: Command) -> None:
        import threading  # (here: a replay never needs it)

        self.command = command
        self._started = time.time_ns()
        # never recorded: the cache's own files (they change with every run), migrate-fi's
        # (the fingerprint stands for them) and the system's
        skipped = (os.path.dirname(os.path.dirname(command.entry())), *own_folders())
        self._ignored = tuple(os.path.join(p, "") for p in (*skipped, "/dev", "/proc", "/sys"))
        # what the run read besides its walk's files, as it first found it: a file's stat
        # (None: not there), a folder's listing (`_listing`); `_UNKNOWN` where it cannot say
        self._read: dict[tuple[str, str], object] = {}
        self._files: frozenset[str] = frozenset()  # the walk's (its digest stands for them)
        self._walk: Walk | None = None
        self._busy = threading.local()  # (a thread reading the state of a path: unrecorded)
        self._spawned = False
        self._before: tuple[Walk, Walked] | None = None  # the walk `replay` made just now
        # set by the engine when its result may be replayed: the walk's digest, and what its
        # analyses consulted outside their files
        self._run: tuple[bytes, tuple[tuple[str, str, str], ...], Patch | None] | None = None

    def hook(self, event: str, args: tuple[object, ...]) -> None:
        if event not in _EVENTS:
            return
        if event not in _READS:  # a program started (git): what it reads is not known
            self._spawned = True
        elif not (getattr(self._busy, "on", False) or depends.is_covered()) and args:
            path = args[0]
            if isinstance(path, bytes):
                path = os.fsdecode(path)
            if isinstance(path, str):  # (not a file descriptor)
                self.note("listing" if event != "open" else "stat", path)

    def note(self, kind: str, path: str) -> None:
        path = os.path.abspath(path)
        if (kind, path) in self._read or path in self._files:
            return  # (a file of the walk read once it was made: the run reading its files)
        if os.path.join(path, "").startswith(self._ignored):
            return
        self._busy.on = True
        try:
            self._read[(kind, path)] = _state(kind, path)
        finally:
            self._busy.on = False

    def walked_before(self, walk: Walk) -> Walked | None:
        """What ``walk`` found when `replay` made it, just before this run began (once; the
        stats it took are still `migrate_fi.base.depends`'s)."""
        before, self._before = self._before, None
        return before[1] if before is not None and before[0] == walk else None

    def walked(self, walk: Walk, files: Iterable[str]) -> None:
        """How the engine walked, and the files it found."""
        self._walk, self._files = walk, frozenset(files)

    def ran(
        self, tree: bytes, notes: Iterable[tuple[str, str, str]], patch: Patch | None = None
    ) -> None:
        """The engine's result may be replayed: the digest of its walk (`tree_digest`), what
        its analyses consulted outside their files, and what tells whether files that change
        later change its output (`migrate_fi.run.patching`; None: any change does)."""
        self._run = (tree, tuple(sorted(notes)), patch)

    def save(self, out: str, err: str, code: int) -> None:
        """Keep what the run printed for `replay` (when it may be: see the module docstring)."""
        _forget()  # (what is read from now on is not the run's)
        if self._run is None or self._walk is None or self._spawned or "\x1b" in out + err:
            return
        if not all(_utf8(e) for e in self.command.streams[1::3]):
            return
        tree, notes, patch = self._run
        # (the modules imported as the run went on, and the folders the import system listed
        # to find them: code, not input)
        modules = _module_files()
        packages = {os.path.dirname(path) for path in modules}
        # (files of the walk read before it was made: the configuration)
        inputs = sorted({path for _, path in self._read if path in self._files})
        read = []
        for (kind, path), state in sorted(self._read.items()):
            if path in self._files:
                continue
            if path.endswith(".pyc"):
                continue
            if path in (modules if kind == "stat" else packages):
                continue
            if state is _UNKNOWN:
                return  # (nothing would say that it changed)
            signature = depends.Stat(*state) if isinstance(state, tuple) else None
            if signature is not None and not depends.settled(signature, self._started):
                return  # (changed too recently for its stat to say so)
            read.append((kind, path, state))
        kept: Any = None if patch is None else tuple(patch._replace(inputs=tuple(inputs)))
        data = marshal.dumps((_FORMAT, read, self._walk, tree, notes, out, err, code, kept))
        write_at_once(self.command.entry(), lambda fh: fh.write(data))


_UNKNOWN = "unknown"


def _state(kind: str, path: str) -> object:
    """What the run relied on about ``path``: the stat of a file it read ("stat"), what a path
    it looked for is ("exists": a file, a folder, None when not there: a `.git` folder is the
    same folder whatever git does inside it), the names in a folder it listed ("listing");
    `_UNKNOWN` when it cannot be had."""
    try:
        if kind == "stat":
            return _stat(path)
        if kind == "exists":
            try:
                mode = os.stat(path).st_mode
            except (FileNotFoundError, NotADirectoryError):
                return None
            return "folder" if stat.S_ISDIR(mode) else "file"
        return _listing(path)
    except OSError:
        return _UNKNOWN


def _listing(folder: str) -> bytes | None:
    """The names in ``folder`` and which are folders (None: it is not there)."""
    try:
        with os.scandir(folder) as entries:
            names = sorted((e.name, e.is_dir()) for e in entries)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return blake2b(repr(names).encode("utf-8", "surrogateescape"), digest_size=20).digest()


def _utf8(encoding: object) -> bool:
    return isinstance(encoding, str) and encoding.lower().replace("_", "-") in ("utf-8", "utf8")


def _module_files() -> set[str]:
    """The files of the modules this process imported."""
    found = set()
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str):
            found.add(os.path.abspath(path))
    return found


def write_at_once(path: str, write: Callable[[BinaryIO], object]) -> bool:
    """Write ``path`` at once with ``write`` (a temporary file beside it, then a rename: a
    concurrent run never reads half of it); False when it cannot be written (a cache that
    cannot be written only costs time). (``write`` streams: a run's pickled results need
    not be held whole in memory.)"""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = temporary_beside(os.path.dirname(path), ".tmp-")
        try:
            with os.fdopen(fd, "wb") as fh:
                write(fh)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError:
        return False
    return True


_EVENTS = frozenset(
    {
        "open",
        "os.listdir",
        "os.scandir",
        "subprocess.Popen",
        "os.system",
        "os.exec",
        "os.posix_spawn",
        "os.spawn",
        "os.startfile",
    }
)
_READS = frozenset({"open", "os.listdir", "os.scandir"})
_recording: Recording | None = None
_hooked = False


def _hook(event: str, args: tuple[object, ...]) -> None:
    if _recording is not None:
        _recording.hook(event, args)


def _forget() -> None:
    """No recording from now on: the run has printed, or this is a worker (what it reads is
    its analyses')."""
    global _recording
    _recording = None
    depends.watched_by(None)


def _watch(path: str) -> None:
    if _recording is not None:
        _recording.note("exists", path)


def begin(command: Command) -> None:
    """Record what this process reads from now on, for `Recording.save` (an audit hook stays
    for the life of the process: one is added, and idles between recordings)."""
    global _recording, _hooked, _walked
    if not _hooked:
        sys.addaudithook(_hook)
        if hasattr(os, "register_at_fork"):  # (elsewhere workers start afresh: nothing to forget)
            os.register_at_fork(after_in_child=_forget)
        _hooked = True
    _recording = Recording(command)
    if _walked is not None and _walked[0] == command:
        _recording._before = _walked[1:]
    _walked = None
    depends.watched_by(_watch)


def recording() -> Recording | None:
    """The recording of this run, if it is one `replay` may answer later."""
    return _recording
