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
import re
import sys
import warnings
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from functools import lru_cache
from typing import NamedTuple

from migrate_fi.codemod import Codemod, EditError, FileContext, RunOptions
from migrate_fi.discovery import discover
from migrate_fi.names import NameResolver, module_name_for_path
from migrate_fi.prefilter import Prefilter
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


_SUPPRESS = re.compile(r"#\s*migrate-fi:\s*ignore(?:\[([A-Za-z0-9_,\s]*)\])?")


def _suppressed(lines: Sequence[str], first: int, last: int, code: str, codemod: str) -> bool:
    for line in lines[first - 1 : last]:
        if "migrate-fi" not in line:
            continue
        for m in _SUPPRESS.finditer(line):
            names = m.group(1)
            if names is None:
                return True
            wanted = {n.strip() for n in names.split(",")}
            if code in wanted or codemod in wanted:
                return True
    return False


def _suppress(ctx: FileContext, code: str) -> None:
    """Drop sites a person has decided on: `# migrate-fi: ignore[FI003]` (or bare `ignore`, or
    the rule's id) on any line the site spans. Their edits go too."""
    if "migrate-fi" not in ctx.text or not ctx.diagnostics:
        return
    lines = re.split(r"\r\n|\r|\n", ctx.text)
    kept = []
    dropped: set[tuple[int, int]] = set()
    for d in ctx.diagnostics:
        if _suppressed(lines, d.line, d.end_line or d.line, code, d.codemod):
            dropped.add((d.line, d.col - 1))
        else:
            kept.append(d)
    ctx.diagnostics = kept
    ctx.edits = [e for e in ctx.edits if (e.span[0], e.span[1]) not in dropped]


def _in_flashinfer(module: str | None) -> bool:
    """A file of FlashInfer's own source tree: it reaches its API through relative imports."""
    return module is not None and (module == "flashinfer" or module.startswith("flashinfer."))


@lru_cache(maxsize=64)
def _prefilter(codemod: type[Codemod], options: RunOptions) -> Prefilter:
    return Prefilter(codemod.triggers_for(options))


def process_source(
    data: bytes,
    path: str,
    codemods: Sequence[type[Codemod]],
    options: RunOptions,
    mode: str,
    module: tuple[str | None, bool] = (None, False),
    aliases: Mapping[str, str] | None = None,
    prefiltered: Collection[str] | None = None,
) -> FileResult:
    """Run ``codemods`` over one file's bytes. Never raises for a problem in the file.

    ``aliases`` are the project's own re-exports of FlashInfer names (see `run`);
    ``prefiltered`` the ids of the codemods whose prefilter `run` already found matching (None:
    test them here)."""
    try:
        return _process(data, path, codemods, options, mode, module, aliases or {}, prefiltered)
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
    aliases: Mapping[str, str],
    prefiltered: Collection[str] | None,
) -> FileResult:
    source = decode_source(data)
    text = source.text
    in_flashinfer = _in_flashinfer(module[0])
    wanted = [
        c
        for c in codemods
        if in_flashinfer
        or (
            c.id in prefiltered if prefiltered is not None else _prefilter(c, options).matches(data)
        )
    ]
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
    alias_names = {key.rsplit(".", 1)[-1] for key in aliases}
    imports_alias = any(name in text for name in alias_names)
    for cls in codemods:
        if not (imports_alias or cls in wanted):
            continue
        ctx = FileContext(path, text, tree, options, module[0], module[1], resolver, aliases)
        codemod = cls()
        ctx.codemod = codemod
        codemod.find(ctx)
        _suppress(ctx, cls.code)
        built = ctx.built_resolver
        if resolver is None and built is not None and text == original:
            result.exports = built.exports()
        resolver = built  # shared by the next codemod while the text is unchanged
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
    aliases: Mapping[str, str],
    prefiltered: tuple[str, ...],
) -> FileResult:
    from migrate_fi.registry import all_codemods

    by_id = {c.id: c for c in all_codemods()}
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    codemods = [by_id[i] for i in codemod_ids]
    return process_source(data, path, codemods, options, mode, module, aliases, prefiltered)


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

    Cross-module re-exports: a project module that binds a FlashInfer name at module level
    (``from flashinfer import fp4_quantize as q``) exports it; after the first pass, files that
    may import such a name (they contain its name and its module's name) are analysed again with
    those aliases, until no new export appears. A file that never names FlashInfer costs one read.

    Raises `migrate_fi.discovery.DiscoveryError` for a path that does not exist, and
    `migrate_fi.codemod.CodemodSetupError` when a codemod cannot run for these options.
    """
    assert mode in MODES
    suffixes = tuple(sorted({s for c in codemods for s in c.suffixes})) or (".py",)
    for c in codemods:
        c.prepare(options)  # before any file is touched
    prefilters = [_prefilter(c, options) for c in codemods]
    results: dict[str, FileResult] = {}
    candidates: list[_File] = []
    others: list[str] = []  # files the prefilter ruled out (they may still import an alias)
    for abspath in discover(paths, suffixes, exclude, respect_gitignore):
        shown = display_path(abspath)
        try:
            with open(abspath, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            results[abspath] = _failed(shown, f"cannot read: {exc.strerror}")
            continue
        matched = tuple(c.id for c, p in zip(codemods, prefilters, strict=True) if p.matches(data))
        if not matched and not (b"from ." in data and _in_flashinfer(module_identity(abspath)[0])):
            results[abspath] = FileResult(shown, Status.SKIPPED, reason="names no migrated API")
            others.append(abspath)
            continue
        candidates.append(_File(data, abspath, matched))

    batch = _Batch(tuple(c.id for c in codemods), options, mode, jobs, progress)
    results.update(batch.process(candidates, {}))
    aliases: dict[str, str] = {}
    relevant = set().union(*(p.names() for p in prefilters)) if prefilters else set()
    for _ in range(_MAX_REEXPORT_ROUNDS):
        exported = _merge_exports(results.values(), relevant)
        new = {k: v for k, v in exported.items() if aliases.get(k) != v}
        if not new:
            break
        aliases.update(new)
        again = _importers(new, candidates, others)
        results.update(batch.process(again, aliases))
    return RunResult(files=sorted(results.values(), key=lambda f: f.path))


_MAX_REEXPORT_ROUNDS = 4


def _merge_exports(results: Iterable[FileResult], relevant: set[bytes]) -> dict[str, str]:
    """Every file's relevant exports. Two files that give the same module name (namespace
    packages: module names are counted from the outermost `__init__.py`) and bind the same name
    to different targets make that name ambiguous: it is dropped, never guessed."""
    merged: dict[str, str] = {}
    clashing: set[str] = set()
    for r in results:
        for key, target in r.exports.items():
            if not _relevant_alias(target, relevant):
                continue
            if merged.setdefault(key, target) != target:
                clashing.add(key)
    for key in clashing:
        del merged[key]
    return merged


def _relevant_alias(target: str, names: set[bytes]) -> bool:
    """Only re-exports that can matter are followed: of a migrated API (its name is a trigger)."""
    last = target.rsplit(".", 1)[-1]
    return last.encode() in names


class _File(NamedTuple):
    data: bytes
    path: str  # absolute
    prefiltered: tuple[str, ...]  # ids of the codemods whose prefilter matched


def _importers(
    aliases: Mapping[str, str], candidates: Iterable[_File], others: Iterable[str]
) -> list[_File]:
    """Files that contain an alias's name and the last part of its module's name. Candidates
    are still in memory; the files the prefilter ruled out are read again."""
    needles = set()
    for key in aliases:
        module, _, name = key.rpartition(".")
        needles.add((name.encode(), module.rsplit(".", 1)[-1].encode()))

    def imports_one(data: bytes) -> bool:
        return any(name in data and mod in data for name, mod in needles)

    out = [f for f in candidates if imports_one(f.data)]
    for path in others:
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError:
            continue  # reported in the first pass
        if imports_one(data):
            out.append(_File(data, path, ()))
    return out


class _Batch:
    """Process files serially, or in worker processes when there is enough work."""

    def __init__(
        self,
        ids: tuple[str, ...],
        options: RunOptions,
        mode: str,
        jobs: int | None,
        progress: Callable[[int, int], None] | None,
    ) -> None:
        self.ids, self.options, self.mode = ids, options, mode
        self.jobs = jobs if jobs and jobs > 0 else (os.cpu_count() or 1)
        self.progress = progress

    def process(self, files: Sequence[_File], aliases: Mapping[str, str]) -> dict[str, FileResult]:
        out: dict[str, FileResult] = {}
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
                out[f.path] = _worker(*a)
                self._tick(len(out), len(files))
            return out
        import multiprocessing

        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        context = multiprocessing.get_context(method)
        workers = min(self.jobs, len(files))
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            futures = {
                pool.submit(_worker, *a): (f.path, a[1]) for f, a in zip(files, args, strict=True)
            }
            for future in as_completed(futures):
                path, shown = futures[future]
                try:
                    out[path] = future.result()
                except Exception as exc:  # a worker that died (e.g. a crash in a parser)
                    out[path] = _failed(
                        shown, f"worker process failed ({type(exc).__name__}); untouched"
                    )
                self._tick(len(out), len(files))
        return out

    def _tick(self, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress(done, total)


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
