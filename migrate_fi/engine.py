"""The engine: run the selected codemods over files and collect results.

Per file: read the bytes; a cheap text prefilter (does the file name any codemod's trigger at all?)
so that most files are never parsed; decode (BOM, coding cookie); `ast.parse`; each codemod's
`find` over the shared name resolution. That is all `check` does. `diff` and `apply` then parse
the files that have fixes with LibCST, refuse a parse that does not round-trip exactly, apply the
edits, re-parse the result, and (`apply`) write atomically. Codemods run in release order; after a
codemod changed the text, the next one reads the new text.

A failure in one file (undecodable, syntax error, RecursionError, a codemod bug) is recorded as
that file's error; the other files are still processed.
"""

from __future__ import annotations

import ast
import os
import sys
import warnings
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from functools import lru_cache

from migrate_fi.codemod import Codemod, EditError, FileContext, RunOptions
from migrate_fi.discovery import discover
from migrate_fi.names import NameResolver, module_name_for_path
from migrate_fi.results import FileError, FileResult, RunResult, Status
from migrate_fi.sources import SourceError, decode_source, write_atomically

__all__ = ["MODES", "display_path", "process_source", "run", "write_changes"]

MODES = ("check", "diff", "apply")
# Parse in worker processes only when there is enough work to pay for them.
_PARALLEL_MIN_FILES = 4
_PARALLEL_MIN_BYTES = 1_000_000


def display_path(path: str) -> str:
    """Relative to the current folder when inside it (so `git apply` takes our diffs)."""
    cwd = os.getcwd()
    prefix = cwd.rstrip(os.sep) + os.sep
    if path.startswith(prefix) and os.sep + ".." + os.sep not in path:
        return path[len(prefix) :]
    try:
        rel = os.path.relpath(path, cwd)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


@lru_cache(maxsize=4096)
def _package_parts(folder: str) -> tuple[str, ...]:
    """Names of the packages (folders with `__init__.py`) enclosing ``folder``, outermost first."""
    if not os.path.isfile(os.path.join(folder, "__init__.py")):
        return ()
    parent = os.path.dirname(folder)
    if parent == folder:
        return (os.path.basename(folder),)
    return (*_package_parts(parent), os.path.basename(folder))


def module_identity(path: str) -> tuple[str | None, bool]:
    folder, name = os.path.split(os.path.abspath(path))
    return module_name_for_path((*_package_parts(folder), name))


def _triggered(codemod: type[Codemod], text: str) -> bool:
    return any(t in text for t in codemod.triggers)


def process_source(
    data: bytes,
    path: str,
    codemods: Sequence[type[Codemod]],
    options: RunOptions,
    mode: str,
    module: tuple[str | None, bool] = (None, False),
) -> FileResult:
    """Run ``codemods`` over one file's bytes. Never raises for a problem in the file."""
    try:
        return _process(data, path, codemods, options, mode, module)
    except RecursionError:
        return _failed(path, "too deeply nested to analyse (RecursionError); file left untouched")
    except MemoryError:
        return _failed(path, "ran out of memory analysing it; file left untouched")
    except SourceError as exc:
        return _failed(path, str(exc))
    except EditError as exc:
        return _failed(path, f"{exc}; file left untouched")
    except Exception as exc:  # a bug in a codemod must not stop the run or damage the file
        return _failed(path, f"internal error ({type(exc).__name__}: {exc}); file left untouched")


def _failed(path: str, reason: str, line: int | None = None, col: int | None = None) -> FileResult:
    return FileResult(path, Status.FAILED, error=FileError(path, reason, line, col), parsed=True)


def _parse(text: str, path: str) -> ast.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarnings about the user's code are not ours
        return ast.parse(text, filename=path)


def _process(
    data: bytes,
    path: str,
    codemods: Sequence[type[Codemod]],
    options: RunOptions,
    mode: str,
    module: tuple[str | None, bool],
) -> FileResult:
    source = decode_source(data)
    text = source.text
    try:
        tree = _parse(text, path)
    except SyntaxError as exc:
        msg = exc.msg or "invalid syntax"
        return _failed(path, f"syntax error: {msg}; file left untouched", exc.lineno, exc.offset)
    except ValueError as exc:  # e.g. NUL bytes
        return _failed(path, f"cannot parse: {exc}; file left untouched")

    result = FileResult(path, Status.UNCHANGED, parsed=True)
    original = text
    resolver: NameResolver | None = None
    module_cst = None
    for cls in codemods:
        if not _triggered(cls, text):
            continue
        ctx = FileContext(path, text, tree, options, module[0], module[1], resolver)
        codemod = cls()
        ctx.codemod = codemod
        codemod.find(ctx)
        resolver = ctx._resolver  # shared by the next codemod while the text is unchanged
        result.diagnostics.extend(ctx.diagnostics)
        if mode == "check" or not ctx.edits:
            continue
        from migrate_fi.cstedit import apply_edits, parse_exact

        if module_cst is None:
            module_cst = parse_exact(text)
        module_cst = apply_edits(module_cst, ctx.edits)
        new_text = module_cst.code
        try:
            tree = _parse(new_text, path)
        except SyntaxError as exc:
            raise EditError(f"{cls.id} produced code that does not parse ({exc.msg})") from None
        text = new_text
        resolver = None
    if text != original:
        result.status = Status.CHANGED
        result.old_text, result.new_text = original, text
        result.old_bytes, result.new_bytes = data, source.encode(text)
    return result


# ----------------------------------------------------------------------- runs


def _worker(
    data: bytes,
    path: str,
    codemod_ids: tuple[str, ...],
    options: RunOptions,
    mode: str,
    module: tuple[str | None, bool],
) -> FileResult:
    from migrate_fi.registry import all_codemods

    by_id = {c.id: c for c in all_codemods()}
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    return process_source(data, path, [by_id[i] for i in codemod_ids], options, mode, module)


def run(
    paths: Iterable[str],
    codemods: Sequence[type[Codemod]],
    options: RunOptions,
    mode: str,
    exclude: Iterable[str] = (),
    jobs: int | None = None,
    respect_gitignore: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> RunResult:
    """Discover files under ``paths`` and run ``codemods`` over them (see the module docstring).

    Raises `migrate_fi.discovery.DiscoveryError` for a path that does not exist.
    """
    assert mode in MODES
    suffixes = tuple(sorted({s for c in codemods for s in c.suffixes})) or (".py",)
    triggers = [t.encode() for c in codemods for t in c.triggers]
    result = RunResult()
    candidates: list[tuple[bytes, str]] = []
    for abspath in discover(paths, suffixes, exclude, respect_gitignore):
        shown = display_path(abspath)
        try:
            with open(abspath, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            result.files.append(_failed(shown, f"cannot read: {exc.strerror}"))
            continue
        if not any(t in data for t in triggers):
            result.files.append(FileResult(shown, Status.SKIPPED, reason="names no migrated API"))
            continue
        candidates.append((data, abspath))

    ids = tuple(c.id for c in codemods)
    jobs = jobs if jobs and jobs > 0 else (os.cpu_count() or 1)
    total_bytes = sum(len(d) for d, _ in candidates)
    parallel = (
        jobs > 1
        and len(candidates) >= _PARALLEL_MIN_FILES
        and (mode != "check" or total_bytes >= _PARALLEL_MIN_BYTES)
    )
    done = 0
    if not parallel:
        for data, abspath in candidates:
            shown = display_path(abspath)
            result.files.append(_worker(data, shown, ids, options, mode, module_identity(abspath)))
            done += 1
            if progress:
                progress(done, len(candidates))
    else:
        import multiprocessing

        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        ctx = multiprocessing.get_context(method)
        with ProcessPoolExecutor(max_workers=min(jobs, len(candidates)), mp_context=ctx) as pool:
            futures = {
                pool.submit(
                    _worker,
                    data,
                    display_path(abspath),
                    ids,
                    options,
                    mode,
                    module_identity(abspath),
                ): abspath
                for data, abspath in candidates
            }
            for future in as_completed(futures):
                shown = display_path(futures[future])
                try:
                    result.files.append(future.result())
                except Exception as exc:  # a worker that died (e.g. a crash in a parser)
                    result.files.append(
                        _failed(shown, f"worker process failed ({type(exc).__name__}); untouched")
                    )
                done += 1
                if progress:
                    progress(done, len(candidates))
    result.files.sort(key=lambda f: f.path)
    return result


def write_changes(result: RunResult) -> None:
    """`apply`: write every changed file atomically; record what was written or why not."""
    for f in result.changed:
        assert f.new_bytes is not None and f.old_bytes is not None
        try:
            write_atomically(f.path, f.new_bytes, f.old_bytes)
        except SourceError as exc:
            result.write_errors.append(FileError(f.path, str(exc)))
        else:
            result.written.append(f.path)
