"""Processing many files: serially, or in worker processes when there is enough work.

Workers get plain data (bytes, the path, rule ids, the run's options) and return a
`FileResult`; a worker that dies takes only its file down, reported as that file's error.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, NamedTuple

from migrate_fi import depends
from migrate_fi.cache import ResultCache
from migrate_fi.modules import display_path, module_identity
from migrate_fi.results import FileResult
from migrate_fi.rule import RunOptions

if TYPE_CHECKING:  # (concurrent.futures is imported only where workers start: it costs start-up)
    from concurrent.futures import Future, ProcessPoolExecutor

__all__ = ["Batch", "SourceFile"]

# Parse in worker processes only when there is enough work to pay for them: this much to
# parse, or a walk this long (the workers parse while it goes on, on the cores it leaves idle;
# a tree of a few files would pay 0.1 s for them)
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
) -> tuple[FileResult, depends.Notes | None]:
    """The result of one file, with what its analysis read outside it (`migrate_fi.depends`)."""
    from migrate_fi.pipeline import Mode, process_source
    from migrate_fi.registry import all_rules

    by_id = {c.id: c for c in all_rules()}
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    rules = [by_id[i] for i in rule_ids]
    depends.start()
    result = process_source(data, path, rules, options, Mode(mode), module, aliases, prefiltered)
    return result, depends.finish()


def _worker_signals() -> None:
    """Workers leave Ctrl-C to the main process, which stops them with SIGTERM: that ends a
    worker at once and quietly (a forked worker would otherwise run the main process's SIGTERM
    handler and print a traceback); and they die with the main process, even when it is killed
    outright (SIGKILL), instead of waiting for work forever (Linux)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        import contextlib
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            pr_set_pdeathsig = 1
            ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)


class Batch:
    """Run the rules over a list of files; the same options for every file."""

    def __init__(
        self,
        ids: tuple[str, ...],
        options: RunOptions,
        mode: str,
        jobs: int | None,
        progress: Callable[[int, int], None] | None,
        cache: ResultCache | None = None,
        preload: Callable[[], None] | None = None,
    ) -> None:
        self.ids, self.options, self.mode = ids, options, mode
        self.jobs = jobs if jobs and jobs > 0 else (os.cpu_count() or 1)
        self.progress = progress
        self.cache = cache
        self.preload = preload  # what workers should share: done before they are forked
        self._pool: ProcessPoolExecutor | None = None  # started once, kept for later rounds

    def close(self) -> None:
        """Stop the workers (a `Batch` may be used until then)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def __enter__(self) -> Batch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def process(
        self,
        files: Iterable[SourceFile],
        aliases: Mapping[str, str],
        walked: Callable[[], int] | None = None,
    ) -> dict[str, FileResult]:
        """Every file's result: from the cache where it holds one, else analysed (and stored).

        ``files`` may be the walk itself (a generator; ``walked``: how many files it has
        walked so far): once the work waiting is worth worker processes, they start on it
        while the walk goes on; less is done here, in this process."""
        from migrate_fi.pipeline import failed

        out: dict[str, FileResult] = {}
        keys: dict[str, str] = {}
        waiting: list[SourceFile] = []
        waiting_bytes = 0
        futures: dict[Future[tuple[FileResult, depends.Notes | None]], str] = {}
        pool: ProcessPoolExecutor | None = None
        try:
            for f in files:
                if self.cache is not None:
                    key = self.cache.key(
                        f.data, display_path(f.path), f.path, module_identity(f.path), aliases,
                        f.prefiltered,
                    )  # fmt: skip
                    found = self.cache.get(key)
                    if found is not None:
                        out[f.path] = found
                        continue
                    keys[f.path] = key
                if pool is not None:
                    futures[pool.submit(_work, *self._args(f, aliases))] = f.path
                    continue
                waiting.append(f)
                waiting_bytes += len(f.data)
                if self._worth_workers(len(waiting), waiting_bytes, walked() if walked else 0):
                    pool = self._started()
                    for w in waiting:
                        futures[pool.submit(_work, *self._args(w, aliases))] = w.path
                    waiting = []
            if pool is None:  # (too little work for workers: here)
                if waiting:
                    self._preloaded()
                total = len(out) + len(waiting)
                for f in waiting:
                    out[f.path] = self._done(f.path, _work(*self._args(f, aliases)), keys)
                    self._tick(len(out), total)
                return out
            total = len(out) + len(futures)
            from concurrent.futures import as_completed

            for future in as_completed(futures):
                path = futures[future]
                try:
                    out[path] = self._done(path, future.result(), keys)
                except Exception as exc:  # a worker that died (e.g. a crash in a parser)
                    out[path] = failed(
                        display_path(path),
                        f"worker process failed ({type(exc).__name__}); untouched",
                    )
                self._tick(len(out), total)
        except BaseException:
            if pool is not None:
                self._stop(pool)
            raise
        return out

    def _worth_workers(self, files: int, size: int, walked: int = 0) -> bool:
        """Whether this much work waiting, found in a walk of ``walked`` files so far, is
        worth worker processes."""
        return (
            self.jobs > 1
            and files >= _PARALLEL_MIN_FILES
            and (
                self._pool is not None  # (started: using it again costs nothing)
                or self.mode != "check"
                or size >= _PARALLEL_MIN_BYTES
                or walked >= _PARALLEL_MIN_WALK
            )
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

    def _done(
        self, path: str, done: tuple[FileResult, depends.Notes | None], keys: Mapping[str, str]
    ) -> FileResult:
        result, notes = done
        # (an error is said again, never reused)
        if self.cache is not None and notes is not None and path in keys and result.error is None:
            self.cache.put(keys[path], notes, result)
        return result

    def _preloaded(self) -> None:
        if self.preload is not None:
            self.preload()
            self.preload = None

    def _stop(self, pool: ProcessPoolExecutor) -> None:
        """Interrupted: stop now, not after the queue drains (workers only read files)."""
        processes = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        self._pool = None
        for process in processes:
            process.terminate()

    def _started(self) -> ProcessPoolExecutor:
        """The workers, started (forked after the preload, which they share) if not yet."""
        if self._pool is not None:
            return self._pool
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        self._preloaded()
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        context = multiprocessing.get_context(method)
        self._pool = ProcessPoolExecutor(
            max_workers=self.jobs, mp_context=context, initializer=_worker_signals
        )
        return self._pool

    def _tick(self, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress(done, total)
