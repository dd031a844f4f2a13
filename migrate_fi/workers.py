"""Processing many files: serially, or in worker processes when there is enough work.

Workers get plain data (bytes, the path, rule ids, the run's options) and return a
`FileResult`; a worker that dies takes only its file down, reported as that file's error.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import NamedTuple

from migrate_fi import depends
from migrate_fi.cache import ResultCache
from migrate_fi.modules import display_path, module_identity
from migrate_fi.results import FileResult
from migrate_fi.rule import RunOptions

__all__ = ["Batch", "SourceFile"]

# Parse in worker processes only when there is enough work to pay for them.
_PARALLEL_MIN_FILES = 4
_PARALLEL_MIN_BYTES = 1_000_000


class SourceFile(NamedTuple):
    data: bytes
    path: str  # absolute
    prefiltered: tuple[str, ...]  # ids of the rules whose prefilter matched


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

    def process(
        self, files: Sequence[SourceFile], aliases: Mapping[str, str]
    ) -> dict[str, FileResult]:
        """Every file's result: from the cache where it holds one, else analysed (and stored)."""
        if self.cache is None:
            return self._process(files, aliases, {})
        out: dict[str, FileResult] = {}
        keys: dict[str, str] = {}
        todo: list[SourceFile] = []
        for f in files:
            key = self.cache.key(
                f.data, display_path(f.path), f.path, module_identity(f.path), aliases,
                f.prefiltered,
            )  # fmt: skip
            found = self.cache.get(key)
            if found is None:
                keys[f.path] = key
                todo.append(f)
            else:
                out[f.path] = found
        out.update(self._process(todo, aliases, keys))
        return out

    def _done(
        self, path: str, done: tuple[FileResult, depends.Notes | None], keys: Mapping[str, str]
    ) -> FileResult:
        result, notes = done
        # (an error is said again, never reused)
        if self.cache is not None and notes is not None and path in keys and result.error is None:
            self.cache.put(keys[path], notes, result)
        return result

    def _process(
        self, files: Sequence[SourceFile], aliases: Mapping[str, str], keys: Mapping[str, str]
    ) -> dict[str, FileResult]:
        out: dict[str, FileResult] = {}
        if files and self.preload is not None:
            self.preload()
            self.preload = None
        total_bytes = sum(len(f.data) for f in files)
        parallel = (
            self.jobs > 1
            and len(files) >= _PARALLEL_MIN_FILES
            and (self.mode != "check" or total_bytes >= _PARALLEL_MIN_BYTES)
        )
        args = [
            (
                f.data,
                display_path(f.path),
                self.ids,
                self.options,
                self.mode,
                module_identity(f.path),
                aliases,
                f.prefiltered,
            )
            for f in files
        ]
        if not parallel:
            for f, a in zip(files, args, strict=True):
                out[f.path] = self._done(f.path, _work(*a), keys)
                self._tick(len(out), len(files))
            return out
        import multiprocessing

        from migrate_fi.pipeline import failed

        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        context = multiprocessing.get_context(method)
        workers = min(self.jobs, len(files))
        pool = ProcessPoolExecutor(
            max_workers=workers, mp_context=context, initializer=_worker_signals
        )
        try:
            futures = {
                pool.submit(_work, *a): (f.path, a[1]) for f, a in zip(files, args, strict=True)
            }
            for future in as_completed(futures):
                path, shown = futures[future]
                try:
                    out[path] = self._done(path, future.result(), keys)
                except Exception as exc:  # a worker that died (e.g. a crash in a parser)
                    out[path] = failed(
                        shown, f"worker process failed ({type(exc).__name__}); untouched"
                    )
                self._tick(len(out), len(files))
        except BaseException:
            # interrupted: stop now, not after the queue drains (workers only read files)
            processes = list((getattr(pool, "_processes", None) or {}).values())
            pool.shutdown(wait=False, cancel_futures=True)
            for process in processes:
                process.terminate()
            raise
        pool.shutdown(wait=True)
        return out

    def _tick(self, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress(done, total)
