"""Processing many files: serially, or in worker processes when there is enough work.

Workers get plain data (bytes, the path, rule ids, the run's options) and return a
`FileResult`; a worker that dies takes only the files it had down, each reported as that
file's error. The workers are forked from this process (`_Forked`), each given its tasks and
giving back its results through pipes of its own, with no thread or queue here between them
(`concurrent.futures`' pool cost a cold `check` of vLLM's tree 9 ms to import and start, before
any file was read). Tasks are shared out as the workers finish them (`_Share`), whatever each
costs (a large file alone, small files in groups: `_groups`); reading (`Batch.share`) is shared
with this process. The workers end with this process, however it ends (`_worker_signals`).
Where a process cannot be forked (Windows), the work is done here.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import select
import signal
import sys
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

from migrate_fi.base import depends
from migrate_fi.base.modules import display_path, module_identity
from migrate_fi.base.results import FileResult
from migrate_fi.framework.rule import RunOptions
from migrate_fi.run.cache import ResultCache
from migrate_fi.run.patching import content_digest

T = TypeVar("T")
R = TypeVar("R")
_Done = tuple[FileResult, "depends.Notes | None"]  # a file's result, and what its analysis read
# what a run tells of how far it is: files read, files in all, files parsed, sites found
Progress = Callable[[int, int, int, int], None]

__all__ = ["Batch", "Order", "Progress", "SourceFile", "Work"]

# Parse in worker processes only when there is enough work to pay for them: this much to
# parse, or a walk this long (a tree of a few files would pay 0.1 s for them); read in them a
# walk this long
_PARALLEL_MIN_FILES = 4
_PARALLEL_MIN_BYTES = 1_000_000
_PARALLEL_MIN_WALK = 500  # files walked


class Order(Protocol):
    """Which files of a `Batch.process` wait for others, and the re-exports each is analysed
    with (`migrate_fi.run.reexports.ExportOrder`)."""

    def waits(self, f: SourceFile) -> bool: ...
    def ready(self, f: SourceFile) -> bool: ...
    def aliases(self, f: SourceFile) -> Mapping[str, str]: ...
    def finished(self, path: str, result: FileResult) -> None: ...
    def chain(self, f: SourceFile) -> int: ...
    def awaited(self, f: SourceFile) -> bool: ...


class SourceFile(NamedTuple):
    data: bytes
    path: str  # absolute
    prefiltered: tuple[str, ...]  # ids of the rules whose prefilter matched


# what `_work` is given: the file's bytes, its path as shown, the rules' ids, the options, the
# mode, its module, the project's re-exports and the rules its prefilter matched
_WorkArgs = tuple[
    bytes, str, tuple[str, ...], RunOptions, str, tuple[str | None, bool], Mapping[str, str],
    tuple[str, ...],
]  # fmt: skip


def _work(
    data: bytes,
    path: str,
    rule_ids: tuple[str, ...],
    options: RunOptions,
    mode: str,
    module: tuple[str | None, bool],
    aliases: Mapping[str, str],
    prefiltered: tuple[str, ...],
) -> _Done:
    """The result of one file, with what its analysis read outside it (`migrate_fi.base.depends`)."""
    from migrate_fi.run.pipeline import Mode, process_source
    from migrate_fi.run.registry import all_rules

    by_id = {c.id: c for c in all_rules()}
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    rules = [by_id[i] for i in rule_ids]
    depends.start()
    with depends.covered():  # (what it reads beside the file: noted)
        result = process_source(
            data, path, rules, options, Mode(mode), module, aliases, prefiltered
        )
    return result, depends.finish()


def _work_group(group: list[_WorkArgs]) -> list[_Done]:
    """`_work` for each file of a group of small files (one task, one message each way)."""
    return [_work(*args) for args in group]


# Small files go to a worker in groups of up to this many files or bytes: a task costs this
# process about 0.2 ms (handing it out, the messages, the pool's threads), as much as a small
# file's analysis, while it holds the run's results and the workers analyse
_GROUP_FILES = 16
_GROUP_BYTES = 64_000


def _alone(order: Order, f: SourceFile) -> bool:
    """Whether ``f`` is a task of its own: it waits for others, or others wait for it."""
    return order.waits(f) or order.awaited(f)


def _groups(
    todo: list[SourceFile], first: Callable[[SourceFile], bool], order: Order | None = None
) -> list[list[SourceFile]]:
    """``todo`` (in the order the workers take it from the end) in groups: consecutive small
    files together, each file of ``_GROUP_BYTES`` or more alone, a file to analyse ``first``
    never with one that is not, and a file that waits for others or that others wait for
    (``order``) alone."""
    out: list[list[SourceFile]] = []
    size = 0
    for f in todo:
        if (
            not out
            or len(out[-1]) >= _GROUP_FILES
            or size + len(f.data) > _GROUP_BYTES
            or first(f) != first(out[-1][0])
            or (order is not None and (_alone(order, f) or _alone(order, out[-1][0])))
        ):
            out.append([])
            size = 0
        out[-1].append(f)
        size += len(f.data)
    return out


def _worker_signals(lifeline: tuple[int, int] | None = None, collect: bool = True) -> None:
    """Workers leave Ctrl-C to the main process, which stops them with SIGTERM: that ends a
    worker at once and quietly (a forked worker would otherwise run the main process's SIGTERM
    handler and print a traceback). And they end with the main process, even when it is killed
    outright (SIGKILL), instead of waiting for work forever: ``lifeline`` is a pipe whose
    writing end only the main process keeps open (a forked worker closes its copy), so a
    reading thread meets its end when that process is gone, however it went. (The `prctl`
    death signal of Linux did the same, but importing `ctypes` to ask for it cost each worker
    10 ms at its start, 3% of a cold `check` of vLLM's tree.)"""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # The engine holds the cycle collector off in the main process for the run. A worker
    # (``collect``) collects as it did, but while it analyses a file
    # (`migrate_fi.run.pipeline.process_source`): a fix applied (LibCST) leaves cycles (FlashInfer's
    # own tree, `diff --unsafe-fixes`: 94 MB at the peak so, 106 MB without). A `check` that
    # applies none leaves almost none (each file's resolver is released: on FlashInfer's tree,
    # 10,000 objects in all), while the collector, on between files, walked again and again
    # what the worker keeps for the run (the API data decoded, the caches): off there too.
    if collect:
        gc.enable()
    else:
        gc.disable()  # (as it is in the engine's main process: off whatever forked it)
    if lifeline is not None:
        import threading

        read_end, write_end = lifeline
        os.close(write_end)
        threading.Thread(target=_watch, args=(read_end,), daemon=True).start()


def _watch(read_end: int) -> None:
    """Wait for the end of the lifeline (nothing is ever written to it), then end the worker."""
    with contextlib.suppress(OSError):
        while os.read(read_end, 1):
            pass
    os._exit(1)


class Batch:
    """Run the rules over a list of files; the same options for every file."""

    def __init__(
        self,
        ids: tuple[str, ...],
        options: RunOptions,
        mode: str,
        jobs: int | None,
        progress: Progress | None,
        cache: ResultCache | None = None,
        preload: Callable[[], None] | None = None,
        first: frozenset[str] = frozenset(),
    ) -> None:
        self.ids, self.options, self.mode = ids, options, mode
        self.first = first  # the rules whose files are analysed first (`Rule.searches_project`)
        self.jobs = jobs if jobs and jobs > 0 else (os.cpu_count() or 1)
        if not hasattr(os, "fork"):
            self.jobs = 1  # (no worker can be forked: the work is done here)
        self.progress = progress
        self._read = self._total = self._parsed = self._sites = 0  # (what progress is told)
        self._found: dict[str, tuple[int, int]] = {}  # path -> (parsed, sites) counted
        self.cache = cache
        self.preload = preload  # what workers should share: done before they are forked
        self._pool: _Forked | None = None  # started once, kept for later rounds
        self._lifeline: tuple[int, int] | None = None  # (see `_worker_signals`)
        # with the cache: the digest of the bytes of each file analysed (`migrate_fi.run.patching`)
        self.digests: dict[str, bytes] = {}

    def close(self) -> None:
        """Stop the workers (a `Batch` may be used until then). Their work is done and taken:
        this process goes on at once, and cutting their lifeline ends them (each would otherwise
        wind down and free its memory, 5 ms of a run, while this process waited)."""
        if self._pool is not None:
            self._pool.close()
            self._pool = None
        self._cut_lifeline()

    def _cut_lifeline(self) -> None:
        """Close this process's ends of the workers' lifeline (any worker left then ends)."""
        if self._lifeline is not None:
            for fd in self._lifeline:
                os.close(fd)
            self._lifeline = None

    def __enter__(self) -> Batch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def share(self, tasks: Sequence[T], work: Work[T, R]) -> None:
        """Do every task of ``tasks`` in the workers (started if not yet) and here: see
        `Work`."""
        pool = self._started(preload=False)  # (reading needs none of it)
        waiting = list(tasks)  # (the workers take from the end, this process from the start)
        try:
            _Share(pool, waiting, work).run()
        except BaseException:
            self._stop()
            raise

    def process(
        self,
        files: Sequence[SourceFile],
        aliases: Mapping[str, str],
        walked: int = 0,
        meanwhile: Callable[[], object] | None = None,
        order: Order | None = None,
    ) -> dict[str, FileResult]:
        """Every file's result: from the cache where it holds one, else analysed (and stored):
        here, or by the workers when the work is worth them (in a walk of ``walked`` files),
        the largest files first, while this process waits (`_Share`): it holds what the run
        has gathered, and its memory stays that; ``meanwhile`` is done here once, while they
        work (or before the files are analysed here). With ``order``, a file it says waits is
        analysed once those it waits for are (or when nothing else is left), with the
        re-exports it gives then, not ``aliases``."""
        out: dict[str, FileResult] = {}
        keys: dict[str, str] = {}
        todo: list[SourceFile] = []
        given: dict[str, Mapping[str, str]] = {}  # (the re-exports a waiting file is given)

        def cached(f: SourceFile) -> bool:
            """Whether the cache holds ``f``'s result (then taken); else its key is kept."""
            if self.cache is None:
                return False
            content = self.digests.get(f.path)
            if content is None:
                content = self.digests[f.path] = content_digest(f.data)
            key = self.cache.key(
                content, display_path(f.path), f.path, module_identity(f.path), given_to(f),
                f.prefiltered,
            )  # fmt: skip
            found = self.cache.get(key)
            if found is None:
                keys[f.path] = key
                return False
            out[f.path] = found
            self._analysed(f.path, found)
            if order is not None:
                order.finished(f.path, found)
            return True

        def given_to(f: SourceFile) -> Mapping[str, str]:
            if order is None or not order.waits(f):
                return aliases
            if f.path not in given:
                given[f.path] = order.aliases(f)
            return given[f.path]

        for f in files:
            # (a file that waits is looked up once those it waits for are done: the re-exports
            # it is given are part of its key)
            if (order is not None and order.waits(f)) or not cached(f):
                todo.append(f)

        def here(f: SourceFile) -> _Done:
            self._preloaded()
            return _work(*self._args(f, given_to(f)))

        def done(f: SourceFile, result: _Done) -> None:
            out[f.path] = self._done(f.path, result, keys)
            self._analysed(f.path, out[f.path])
            if order is not None:
                order.finished(f.path, out[f.path])

        def settled(group: list[SourceFile]) -> bool:
            """Whether a waiting file, about to be handed out, is answered by the cache (asked
            once: a file the cache did not answer is analysed)."""
            f = group[0]
            if order is None or not order.waits(f) or f.path in keys:
                return False
            return cached(f)

        if order is not None and self.cache is not None:
            # (those the cache answers once what they wait for is answered: a run where nothing
            # changed starts no worker for them)
            while answered := {f.path for f in todo if order.ready(f) and settled([f])}:
                todo = [f for f in todo if f.path not in answered]

        if not self._worth_workers(len(todo), sum(len(f.data) for f in todo), walked):
            if meanwhile is not None:
                meanwhile()
            left = todo  # (too little work for workers: here, in order)
            while left:
                at = next((i for i, f in enumerate(left) if order is None or order.ready(f)), 0)
                f = left.pop(at)
                if not settled([f]):
                    done(f, here(f))
            return out

        def failed(group: list[SourceFile], exc: Exception) -> None:  # (a crash in a parser)
            from migrate_fi.run.pipeline import failed

            why = f"worker process failed ({type(exc).__name__}); untouched"
            for f in group:
                out[f.path] = failed(display_path(f.path), why)
                self._analysed(f.path, out[f.path])

        def done_all(group: list[SourceFile], results: list[_Done]) -> None:
            for f, result in zip(group, results, strict=True):
                done(f, result)

        pool = self._started()

        # (the workers take the end first: the files of a rule that searches the project, then
        # the largest)
        def searches(f: SourceFile) -> bool:
            return not self.first.isdisjoint(f.prefiltered)

        # (with an order, the files others wait for before all, the longest chain of them
        # first: `Order.chain`)
        def rank(f: SourceFile) -> tuple[bool, bool, int]:
            if order is None:
                return False, searches(f), len(f.data)
            return order.awaited(f), searches(f), order.chain(f)

        todo.sort(key=rank)
        work = Work(
            _work_group,
            lambda group: ([self._args(f, given_to(f)) for f in group],),
            lambda group: [here(f) for f in group],
            done_all,
            failed,
        )
        share = _Share(pool, _groups(todo, searches, order), work, here_too=False)
        if order is not None:
            share.waiting_for(lambda group: all(order.ready(f) for f in group), settled)
        try:
            share.run(meanwhile)
        except BaseException:
            self._stop()
            raise
        return out

    def tell(self, task: Callable[..., object], arguments: tuple[object, ...]) -> None:
        """Have each worker started do ``task(*arguments)`` (a module's function) before the
        tasks it is given next: what this process learnt that they may ask; what it gives
        back is dropped."""
        if self._pool is not None:
            message = _message(task, arguments)  # (pickled once for all of them)
            for worker in self._pool.alive():
                worker.give(_ASIDE, task, arguments, message)

    def worth_reading_in_workers(self, files: int) -> bool:
        """Whether reading and testing ``files`` files is worth sharing with worker processes."""
        return self.jobs > 1 and files >= _PARALLEL_MIN_WALK

    def reading(self, read: int, total: int | None = None) -> None:
        """Say how far the run is: ``read`` more files read (of ``total`` in all)."""
        self._read += read
        if total is not None:
            self._total = total
        self._say()

    def _worth_workers(self, files: int, size: int, walked: int = 0) -> bool:
        """Whether ``files`` files of ``size`` bytes to analyse, found in a walk of ``walked``
        files, are worth worker processes."""
        if self.jobs <= 1 or not files:
            return False
        if self._pool is not None:
            return True  # (started: using them again costs nothing, and this process no data)
        return files >= _PARALLEL_MIN_FILES and (
            self.mode != "check" or size >= _PARALLEL_MIN_BYTES or walked >= _PARALLEL_MIN_WALK
        )

    def _args(self, f: SourceFile, aliases: Mapping[str, str]) -> _WorkArgs:
        return (
            f.data,
            display_path(f.path),
            self.ids,
            self.options,
            self.mode,
            module_identity(f.path),
            aliases,
            f.prefiltered,
        )

    def _done(self, path: str, done: _Done, keys: Mapping[str, str]) -> FileResult:
        result, notes = done
        # (an error is said again, never reused)
        if self.cache is not None and path in keys:
            if notes is not None and result.error is None:
                self.cache.put(keys[path], notes, result)
            else:
                self.cache.replayable = False  # (made again by the next run, not replayed)
        return result

    def _preloaded(self) -> None:
        if self.preload is not None:
            self.preload()
            self.preload = None

    def _stop(self) -> None:
        """Interrupted: stop the workers now, whatever they were doing (they only read files)."""
        if self._pool is not None:
            self._pool.close(kill=True)
            self._pool = None
        self._cut_lifeline()

    def _started(self, preload: bool = True) -> _Forked:
        """The workers, started if not yet: forked after the preload, which they then share,
        unless ``preload`` is False (each does its own when its first file needs it)."""
        if self._pool is not None:
            return self._pool
        if preload:
            self._preloaded()
        # (else each worker does it the first time no task waits for it: at the end of the
        # reading, while this process gathers what was read)
        # (what this process holds now lives as long as the run: out of the cycle collector's
        # sight, a forked worker's collections neither walk it nor copy its pages by touching
        # it; 5% of a cold `check` of vLLM's or SGLang's tree. It stays frozen: four runs in
        # one process froze 27,000 objects, 5 of them garbage, and thawing them when the
        # workers stop cost 4% of a run)
        gc.freeze()
        self._lifeline = os.pipe()
        # (a run that applies no fix leaves no cycles to collect: `_worker_signals`)
        collect = self.mode != "check" or self.options.fix_details
        self._pool = _Forked(self.jobs, self._lifeline, self.preload, collect)
        return self._pool

    def _analysed(self, path: str, result: FileResult) -> None:
        """Count a file's result (one analysed again in a round replaces its first)."""
        if self.progress is None:
            return
        parsed, sites = self._found.get(path, (0, 0))
        self._parsed -= parsed
        self._sites -= sites
        self._found[path] = (int(result.parsed), len(result.diagnostics))
        self._parsed += int(result.parsed)
        self._sites += len(result.diagnostics)
        self._say()

    def _say(self) -> None:
        if self.progress is not None:
            self.progress(self._read, self._total, self._parsed, self._sites)


@dataclass(frozen=True)
class Work(Generic[T, R]):
    """What `Batch.share` does with each task ``t``: ``task(*arguments(t))`` in a worker
    (``task`` a module's function: a worker is given it by name), or ``here(t)``, the same work,
    in this process; then ``done(t, result)`` here, or ``failed(t, exc)`` where the worker died."""

    task: Callable[..., R]
    arguments: Callable[[T], tuple[object, ...]]
    here: Callable[[T], R]
    done: Callable[[T, R], None]
    failed: Callable[[T, Exception], None]


_ASIDE = object()  # (a task `Batch.tell` gave a worker)
# Parts held by each worker while this process reads too: with two, the workers of a cold
# `check` of vLLM's tree sat idle half of the reading, waiting for this process to finish a
# part of its own and give them their next (the reading's span 105-120 -> 94-106 ms with four;
# the last parts, 3 ms each, are what one worker may still hold when the others are done)
_HELD = 4


class _Share(Generic[T, R]):
    """Tasks shared between the workers and this process, until none is left. Each worker is
    given the next task as soon as it gives back one (the workers take ``waiting`` from its
    end); this process, unless ``here_too`` is False, takes the next from its start whenever
    it is free, and then each worker holds `_HELD`, so that none waits for this process to be
    free (tasks shared so are small: the parts of a walk). A worker that dies fails the tasks
    it held (``work.failed``); what is left once none is alive is done here. ``done`` and
    ``failed`` run here, in this process."""

    def __init__(
        self, pool: _Forked, waiting: list[T], work: Work[T, R], here_too: bool = True
    ) -> None:
        self.pool, self.waiting, self.work = pool, waiting, work
        self.here_too = here_too  # (False: only what no worker can take, once none is alive)
        self.held = _HELD if here_too else 1  # tasks given to a worker at once
        self.ready: Callable[[T], bool] | None = None  # (see `waiting_for`)
        self.settled: Callable[[T], bool] | None = None

    def waiting_for(self, ready: Callable[[T], bool], settled: Callable[[T], bool]) -> None:
        """Hand out first the tasks ``ready`` says are (the next ready one from the end), and
        another only when none is (a worker never waits while a task is left); a task
        ``settled`` answers (from a cache) as it is about to be handed out is not."""
        self.ready, self.settled = ready, settled

    def run(self, meanwhile: Callable[[], object] | None = None) -> None:
        """Do the tasks; ``meanwhile`` here once the workers have their first."""
        self._hand_out()
        if meanwhile is not None:
            meanwhile()
        while True:
            if self.here_too and self.waiting:
                t = self.waiting.pop(0)
                self.work.done(t, self.work.here(t))
                self._take(self.pool.wait(0.0))
                continue
            if self.pool.busy():
                self._take(self.pool.wait(None))
            elif not self.waiting:
                return
            else:  # (no worker is alive to take the rest)
                self.here_too = True

    def _next(self, any_left: bool = True) -> T | None:
        """The next task to hand out: the last one ready, else (``any_left``) the last; None
        when none is left (or ready)."""
        while self.waiting:
            at = len(self.waiting) - 1
            if self.ready is not None:
                while at >= 0 and not self.ready(self.waiting[at]):
                    at -= 1
                if at < 0:
                    if not any_left:
                        return None
                    at = len(self.waiting) - 1
            t = self.waiting.pop(at)
            if self.settled is not None and self.settled(t):
                continue
            return t
        return None

    def _hand_out(self, any_left: bool = True) -> None:
        for worker in self.pool.alive():
            while len(worker.held) < self.held:
                t = self._next(any_left)
                if t is None:
                    break
                worker.give(t, self.work.task, self.work.arguments(t))

    def _take(self, back: list[tuple[Any, bool, Any]]) -> None:
        # (first: a worker is given its next before this process goes on; a task that waits
        # for others, only after what came back is taken, which may be what it waits for)
        self._hand_out(any_left=False)
        for t, ok, value in back:
            if t is _ASIDE:
                continue  # (`Batch.tell`: nothing to take; failed, the tasks do without it)
            if ok:
                self.work.done(t, value)
            else:
                self.work.failed(t, value)
        self._hand_out()


class WorkerDied(Exception):
    """A worker process ended before giving back a task it held (a crash in a parser)."""


def _message(task: Callable[..., object], arguments: tuple[object, ...]) -> bytes:
    """A task as a worker reads it (`_serve`)."""
    return pickle.dumps((task, arguments), protocol=pickle.HIGHEST_PROTOCOL)


class _Worker:
    """One forked worker: its process, the pipes it is given tasks and gives results through,
    the tasks it holds (in order), and what is left to write to it or read from it."""

    def __init__(self, pid: int, tasks: int, results: int) -> None:
        self.pid, self.tasks, self.results = pid, tasks, results
        self.held: deque[Any] = deque()
        self.out = bytearray()  # (written as the pipe takes it: this process never blocks)
        self.inbox = bytearray()

    def give(
        self,
        t: object,
        task: Callable[..., object],
        arguments: tuple[object, ...],
        message: bytes | None = None,
    ) -> None:
        """Hand the worker ``task(*arguments)`` (``message``: them pickled, when they are)."""
        if message is None:
            message = _message(task, arguments)
        self.held.append(t)
        self.out += len(message).to_bytes(8, "little") + message
        self.flush()

    def flush(self) -> None:
        with contextlib.suppress(BlockingIOError, BrokenPipeError):
            while self.out:
                written = os.write(self.tasks, self.out)
                del self.out[:written]

    def received(self) -> list[tuple[Any, bool, Any]] | None:
        """The results read now (None: the worker is gone)."""
        try:
            chunk = os.read(self.results, 1 << 20)
        except BlockingIOError:
            return []
        except OSError:
            chunk = b""
        if not chunk:
            return None
        self.inbox += chunk
        out = []
        while len(self.inbox) >= 8:
            size = int.from_bytes(self.inbox[:8], "little")
            if len(self.inbox) < 8 + size:
                break
            ok, value = pickle.loads(self.inbox[8 : 8 + size])
            del self.inbox[: 8 + size]
            out.append((self.held.popleft(), ok, value))
        return out


class _Forked:
    """Worker processes forked from this one: each reads a task (a function and its arguments,
    pickled after their size) from a pipe, does it and writes what it gave back to another, until
    the first pipe ends (`close`: this process closed it, or this process is gone)."""

    def __init__(
        self,
        jobs: int,
        lifeline: tuple[int, int],
        idle: Callable[[], None] | None = None,
        collect: bool = True,
    ) -> None:
        self.workers: list[_Worker] = []
        global _reaping
        if not _reaping:
            import atexit

            atexit.register(_reap_all)
            _reaping = True
        _reap(wait=False)
        for _ in range(jobs):
            try:
                tasks_in, tasks_out = os.pipe()
                results_in, results_out = os.pipe()
            except OSError:  # (out of descriptors: the workers forked so far do the work)
                break
            _widen(results_out)
            try:
                pid = os.fork()
            except OSError:  # (out of processes or memory: the same)
                for fd in (tasks_in, tasks_out, results_in, results_out):
                    os.close(fd)
                break
            if pid == 0:  # (the worker: it never returns)
                code = 1
                try:
                    # (this process's ends of every worker's pipes, of any batch: only it may
                    # hold them, so that a worker's task pipe ends when this process closes it)
                    for fd in (tasks_out, results_in, *_held):
                        os.close(fd)
                    _worker_signals(lifeline, collect)
                    _serve(tasks_in, results_out, idle)
                    code = 0
                finally:
                    os._exit(code)
            os.close(tasks_in)
            os.close(results_out)
            _held.update((tasks_out, results_in))
            os.set_blocking(tasks_out, False)
            os.set_blocking(results_in, False)
            self.workers.append(_Worker(pid, tasks_out, results_in))

    @property
    def pids(self) -> list[int]:
        return [w.pid for w in self.workers]

    def alive(self) -> list[_Worker]:
        return self.workers

    def busy(self) -> bool:
        """Whether a worker holds a task."""
        return any(w.held for w in self.workers)

    def wait(self, timeout: float | None) -> list[tuple[Any, bool, Any]]:
        """The results the workers gave back (waiting ``timeout`` seconds at most for one; None:
        until one comes): ``(task, True, result)``, or ``(task, False, exception)`` for a task
        that raised one or whose worker died."""
        poll = select.poll()
        for w in self.workers:
            if w.held:
                poll.register(w.results, select.POLLIN)
            if w.out:
                poll.register(w.tasks, select.POLLOUT)
        ready = {fd for fd, _ in poll.poll(None if timeout is None else int(timeout * 1000))}
        out: list[tuple[Any, bool, Any]] = []
        for worker in list(self.workers):
            if worker.tasks in ready:
                worker.flush()
            if worker.results not in ready:
                continue
            found = worker.received()
            if found is None:  # (gone: what it held failed)
                self._drop(worker)
                died = WorkerDied(f"worker {worker.pid} ended")
                out += [(t, False, died) for t in worker.held]
            else:
                out += found
        return out

    def _drop(self, worker: _Worker) -> None:
        """A worker that is gone: its pipes closed, its process waited for."""
        self.workers.remove(worker)
        _ended([worker])

    def close(self, kill: bool = False) -> None:
        """Close the workers' pipes: each ends when it has read the last (``kill``: at once)."""
        workers, self.workers = self.workers, []
        if kill:
            for worker in workers:
                with contextlib.suppress(OSError):
                    os.kill(worker.pid, signal.SIGTERM)
        _ended(workers)


# Workers told to end, not yet waited for. A worker's end (its memory given back: 5-10 ms on
# vLLM's tree) goes on beside this process, which waits for it only when it ends itself (or,
# for those already gone, when it forks again): their time and memory count as its children's,
# and no zombie is left behind.
_ending: list[int] = []
_reaping = False  # (whether this process waits for its workers when it ends)


_held: set[int] = set()  # this process's ends of its workers' pipes


def _ended(workers: list[_Worker]) -> None:
    for worker in workers:  # (each ends as its task pipe does)
        for fd in (worker.tasks, worker.results):
            _held.discard(fd)
            with contextlib.suppress(OSError):
                os.close(fd)
        _ending.append(worker.pid)


def _reap(wait: bool) -> None:
    """Wait for the workers told to end (``wait``: all of them; else those gone)."""
    for pid in list(_ending):
        try:
            done, _ = os.waitpid(pid, 0 if wait else os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            _ending.remove(pid)


def _reap_all() -> None:
    _reap(wait=True)


def _serve(tasks: int, results: int, idle: Callable[[], None] | None = None) -> None:
    """A worker's loop: each task read, done, and what it gave back written, until the task
    pipe ends. ``idle`` is done once, the first time no task waits after one was done (what
    its later tasks will need: the release data of the analysis, while the main process gathers
    what the workers read)."""
    served = False
    while True:
        if idle is not None and served and not _waiting(tasks):
            with contextlib.suppress(Exception):  # (a task that needs it meets the error)
                idle()
            idle = None
        head = _read_exactly(tasks, 8)
        if head is None:
            return
        body = _read_exactly(tasks, int.from_bytes(head, "little"))
        if body is None:
            return
        task, arguments = pickle.loads(body)
        served = True
        try:
            reply: tuple[bool, object] = (True, task(*arguments))
        except Exception as exc:
            reply = (False, exc)
        try:
            data = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # (a result or an exception that cannot be pickled)
            data = pickle.dumps((False, RuntimeError(f"{type(exc).__name__}: {exc}")))
        view = memoryview(len(data).to_bytes(8, "little") + data)
        while view:
            view = view[os.write(results, view) :]


def _waiting(fd: int) -> bool:
    """Whether something can be read from ``fd`` now."""
    poll = select.poll()
    poll.register(fd, select.POLLIN)
    return bool(poll.poll(0))


def _widen(fd: int) -> None:
    """Let the pipe of ``fd`` hold as much as Linux lets it (1 MB unless lowered; 64 KB
    otherwise): a worker writes the results of its tasks without waiting for this process to
    read them while it reads a part itself."""
    with contextlib.suppress(ImportError, OSError, AttributeError):  # (not Linux: as it is)
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _WIDE)


_WIDE = 1 << 20


def _read_exactly(fd: int, size: int) -> bytes | None:
    """``size`` bytes from ``fd`` (None: it ended first)."""
    chunks = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)
