"""Processing many files: serially, or in worker processes when there is enough work.

Workers get plain data (bytes, the path, rule ids, the run's options) and return a
`FileResult`; a worker that dies takes only the files it had down, each reported as that
file's error. Tasks are shared out one at a time (`_Share`): a worker takes its next as soon
as it is done (one more than there are workers waits in the pool's queue), whatever each costs
(a large file alone, small files in groups: `_groups`); reading (`Batch.share`) is shared with
this process. The workers end with this process, however it ends (`_worker_signals`).
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, NamedTuple, TypeVar

from migrate_fi import depends
from migrate_fi.cache import ResultCache
from migrate_fi.modules import display_path, module_identity
from migrate_fi.patching import content_digest
from migrate_fi.results import FileResult
from migrate_fi.rule import RunOptions

if TYPE_CHECKING:  # (concurrent.futures is imported only where workers start: it costs start-up)
    from concurrent.futures import Future, ProcessPoolExecutor

T = TypeVar("T")
R = TypeVar("R")
_Done = tuple[FileResult, "depends.Notes | None"]  # a file's result, and what its analysis read
# what a run tells of how far it is: files read, files in all, files parsed, sites found
Progress = Callable[[int, int, int, int], None]

__all__ = ["Batch", "Progress", "SourceFile", "Work"]

# Parse in worker processes only when there is enough work to pay for them: this much to
# parse, or a walk this long (a tree of a few files would pay 0.1 s for them); read in them a
# walk this long
_PARALLEL_MIN_FILES = 4
_PARALLEL_MIN_BYTES = 1_000_000
_PARALLEL_MIN_WALK = 500  # files walked


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
    """The result of one file, with what its analysis read outside it (`migrate_fi.depends`)."""
    from migrate_fi.pipeline import Mode, process_source
    from migrate_fi.registry import all_rules

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


def _groups(todo: list[SourceFile], first: Callable[[SourceFile], bool]) -> list[list[SourceFile]]:
    """``todo`` (in the order the workers take it from the end) in groups: consecutive small
    files together, each file of ``_GROUP_BYTES`` or more alone, and a file to analyse
    ``first`` never with one that is not."""
    out: list[list[SourceFile]] = []
    size = 0
    for f in todo:
        if (
            not out
            or len(out[-1]) >= _GROUP_FILES
            or size + len(f.data) > _GROUP_BYTES
            or first(f) != first(out[-1][0])
        ):
            out.append([])
            size = 0
        out[-1].append(f)
        size += len(f.data)
    return out


def _worker_signals(lifeline: tuple[int, int] | None = None) -> None:
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
    gc.enable()  # (the engine holds it off in the main process for the run; each worker
    # collects as it did, but while it analyses a file: `migrate_fi.pipeline.process_source`)
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
        self.progress = progress
        self._read = self._total = self._parsed = self._sites = 0  # (what progress is told)
        self._found: dict[str, tuple[int, int]] = {}  # path -> (parsed, sites) counted
        self.cache = cache
        self.preload = preload  # what workers should share: done before they are forked
        self._pool: ProcessPoolExecutor | None = None  # started once, kept for later rounds
        self._lifeline: tuple[int, int] | None = None  # (see `_worker_signals`)
        # with the cache: the digest of the bytes of each file analysed (`migrate_fi.patching`)
        self.digests: dict[str, bytes] = {}

    def close(self) -> None:
        """Stop the workers (a `Batch` may be used until then). Their work is done and taken:
        this process goes on at once, and cutting their lifeline ends them (each would otherwise
        wind down and free its memory, 5 ms of a run, while this process waited)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False)
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
        share = _Share(pool, self.jobs, waiting, work)
        try:
            share.run()
        except BaseException:
            self._stop(pool)
            raise

    def process(
        self, files: Sequence[SourceFile], aliases: Mapping[str, str], walked: int = 0
    ) -> dict[str, FileResult]:
        """Every file's result: from the cache where it holds one, else analysed (and stored):
        here, or by the workers when the work is worth them (in a walk of ``walked`` files),
        the largest files first, while this process waits (`_Share`): it holds what the run
        has gathered, and its memory stays that."""
        out: dict[str, FileResult] = {}
        keys: dict[str, str] = {}
        todo: list[SourceFile] = []
        for f in files:
            if self.cache is not None:
                content = self.digests[f.path] = content_digest(f.data)
                key = self.cache.key(
                    content, display_path(f.path), f.path, module_identity(f.path), aliases,
                    f.prefiltered,
                )  # fmt: skip
                found = self.cache.get(key)
                if found is not None:
                    out[f.path] = found
                    self._analysed(f.path, found)
                    continue
                keys[f.path] = key
            todo.append(f)

        def here(f: SourceFile) -> _Done:
            self._preloaded()
            return _work(*self._args(f, aliases))

        def done(f: SourceFile, result: _Done) -> None:
            out[f.path] = self._done(f.path, result, keys)
            self._analysed(f.path, out[f.path])

        if not self._worth_workers(len(todo), sum(len(f.data) for f in todo), walked):
            for f in todo:  # (too little work for workers: here)
                done(f, here(f))
            return out

        def failed(group: list[SourceFile], exc: Exception) -> None:  # (a crash in a parser)
            from migrate_fi.pipeline import failed

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

        todo.sort(key=lambda f: (searches(f), len(f.data)))
        work = Work(
            _work_group,
            lambda group: ([self._args(f, aliases) for f in group],),
            lambda group: [here(f) for f in group],
            done_all,
            failed,
        )
        share = _Share(pool, self.jobs, _groups(todo, searches), work, here_too=False)
        try:
            share.run()
        except BaseException:
            self._stop(pool)
            raise
        return out

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

    def _stop(self, pool: ProcessPoolExecutor) -> None:
        """Interrupted: stop now, not after the queue drains (workers only read files)."""
        processes = list((getattr(pool, "_processes", None) or {}).values())
        manager = getattr(pool, "_executor_manager_thread", None)
        pool.shutdown(wait=False, cancel_futures=True)
        self._pool = None
        for process in processes:
            process.terminate()
        self._cut_lifeline()
        # (the pool's thread ends once its processes are gone: joined, it is not left behind to
        # take a signal meant for this thread while it writes)
        if manager is not None:
            manager.join(timeout=5)

    def _started(self, preload: bool = True) -> ProcessPoolExecutor:
        """The workers, started if not yet: forked after the preload, which they then share,
        unless ``preload`` is False (each does its own when its first file needs it)."""
        if self._pool is not None:
            return self._pool
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        if preload:
            self._preloaded()
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        # (what this process holds now lives as long as the run: out of the cycle collector's
        # sight, a forked worker's collections neither walk it nor copy its pages by touching
        # it; 5% of a cold `check` of vLLM's or SGLang's tree. It stays frozen: four runs in
        # one process froze 27,000 objects, 5 of them garbage, and thawing them when the
        # workers stop cost 4% of a run)
        gc.freeze()
        context = multiprocessing.get_context(method)
        # (a spawned worker inherits no descriptor: it has none, as before)
        self._lifeline = os.pipe() if method == "fork" else None
        self._pool = ProcessPoolExecutor(
            max_workers=self.jobs,
            mp_context=context,
            initializer=_worker_signals,
            initargs=(self._lifeline,),
        )
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


class _Share(Generic[T, R]):
    """Tasks shared between the workers and this process, until none is left: a worker that
    finishes one takes the next at once, and this process (unless ``here_too`` is False) takes
    the next whenever it is free, so no process waits while one is left, whatever each costs.
    The workers take ``waiting`` from its end, this process from its start. One task more than
    there are workers is handed to the pool, so that one waits in its queue for the first worker
    done: handing the next out goes through the pool's threads, which wait for this process to
    let them run (1 to 5 ms a task while it reads, a tenth of the time a worker had work). If
    the workers die, what they could not take is done here. ``done`` and ``failed`` run here,
    in this process."""

    def __init__(
        self,
        pool: ProcessPoolExecutor,
        workers: int,
        waiting: list[T],
        work: Work[T, R],
        here_too: bool = True,
    ) -> None:
        import threading

        self.pool, self.workers, self.waiting, self.work = pool, workers, waiting, work
        self.here_too = here_too  # (False: only what no worker can take, once the pool broke)
        self.lock = threading.Lock()  # (the pool's thread hands out tasks too)
        self.futures: dict[Future[R], T] = {}

    def run(self) -> None:
        for _ in range(self.workers + 1):  # (one waits in the pool's queue: see above)
            self._hand_out()
        while True:
            if self.here_too:
                with self.lock:
                    t = self.waiting.pop(0) if self.waiting else None
                if t is not None:
                    self.work.done(t, self.work.here(t))
                    self._collect(block=False)
                    continue
            with self.lock:  # (what is left, seen at once: a worker's next is handed out here)
                pending, left = bool(self.futures), bool(self.waiting)
            if pending:
                self._collect(block=True)
            elif not left:
                return
            else:  # (the pool has not handed the next out yet, or cannot: it is broken)
                self._hand_out()
                with self.lock:
                    if not self.futures and self.waiting:
                        self.here_too = True  # (the workers are gone: the rest, here)

    def _hand_out(self, _finished: Future[R] | None = None) -> None:
        """Give a worker the next task (called as one finishes one)."""
        with self.lock:
            if not self.waiting:
                return
            t = self.waiting.pop()
            try:
                future = self.pool.submit(self.work.task, *self.work.arguments(t))
            except RuntimeError:  # (shut down, or broken: a worker died; this process does it)
                self.waiting.append(t)
                return
            self.futures[future] = t
        future.add_done_callback(self._hand_out)

    def _collect(self, block: bool) -> None:
        """Take the results the workers have finished (``block``: wait for one at least)."""
        from concurrent.futures import FIRST_COMPLETED, wait

        with self.lock:
            pending = list(self.futures)
        if not pending:
            return
        if block:
            finished = wait(pending, return_when=FIRST_COMPLETED)[0]
        else:
            finished = {f for f in pending if f.done()}
        for future in finished:
            with self.lock:
                t = self.futures.pop(future)
            try:
                result = future.result()
            except Exception as exc:  # a worker that died
                self.work.failed(t, exc)
            else:
                self.work.done(t, result)
