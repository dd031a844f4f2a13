"""The engine: run the selected rules over a tree and collect the results.

`run` discovers the files, reads each once and keeps those a rule's prefilter matches
(`migrate_fi.run.reading`), analyses them (`migrate_fi.run.pipeline`), then drives the re-export rounds
(`migrate_fi.run.reexports`). Where the work is worth it, worker processes (one per core) read
with this process, then analyse while it waits (`migrate_fi.run.workers`). What it returns is a
`RunResult`; writing is `migrate_fi.editing.sources.write_changes`.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Collection, Iterable, Sequence

from migrate_fi.analysis.importwords import FileImports
from migrate_fi.analysis.resolver import ProjectAliases
from migrate_fi.base import depends
from migrate_fi.base.modules import display_path, display_paths, is_python_path
from migrate_fi.base.results import (
    FileResult,
    RunResult,
    Status,
)
from migrate_fi.editing.sources import remove_temporary
from migrate_fi.framework.rule import (
    Rule,
    RunOptions,
    preload_api_data,
    require_api_data,
)
from migrate_fi.project.discovery import discover, with_includes
from migrate_fi.run.cache import ResultCache, WalkMemo
from migrate_fi.run.patching import Patch
from migrate_fi.run.pipeline import (
    Mode,
    RuleTests,
    failed,
    keep_tests,
    rule_tests,
)
from migrate_fi.run.reading import Read, Todo, read_in_worker, read_part
from migrate_fi.run.reexports import (
    MAX_ROUNDS,
    ExportOrder,
    imported_modules,
    importers,
    merge_exports,
    unaffected,
)
from migrate_fi.run.warm import Recording, TreeState, Walk, tree_state
from migrate_fi.run.workers import Batch, Progress, SourceFile, Work

__all__ = ["run"]


def run(
    paths: Iterable[str],
    rules: Sequence[type[Rule]],
    options: RunOptions,
    mode: Mode,
    exclude: Iterable[str] = (),
    jobs: int | None = None,
    respect_gitignore: bool = True,
    progress: Progress | None = None,
    excludes_at: Sequence[tuple[str, Sequence[str]]] = (),
    only: Collection[str] | None = None,
    use_cache: bool = False,
    recording: Recording | None = None,
) -> RunResult:
    """Discover files under ``paths`` and run ``rules`` over them (see the module docstring).

    ``use_cache``: in check mode, reuse the results of files analysed before (`migrate_fi.run.cache`).
    ``recording``: what the command reads, learnt for `migrate_fi.run.warm`: told how the run
    walked, when its result may be replayed.

    Cross-module re-exports: a project module that binds a FlashInfer name at module level
    (``from flashinfer import fp4_quantize as q``) exports it; after the first pass, files that
    may import such a name (they contain its name and its module's name) are analysed again with
    those aliases, until no new export appears. A file that never names FlashInfer costs one read.

    ``only``: real paths; other files are left out (``--changed-since``), except that the
    modules the files read import are analysed (never reported, never written) for the
    re-exports they define: one step, not re-exports of re-exports.

    Raises `migrate_fi.project.discovery.DiscoveryError` for a path that does not exist, and
    `migrate_fi.framework.rule.RuleSetupError` when a rule cannot run for these options.
    """
    # The run's own objects (the walk, the walk memo, a result per file: hundreds of thousands
    # on a large tree) live until it ends and hold no cycle worth collecting: the cycle
    # collector only walked them again and again (16 copies of SGLang's tree with a file
    # touched: a fifth of the run). It is held off here, as while a file is analysed.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _run(paths, rules, options, Mode(mode), exclude, jobs, respect_gitignore,
                    progress, excludes_at, only, use_cache, recording)  # fmt: skip
    finally:
        depends.forget_stats()
        if collecting:
            gc.enable()


def _run(
    paths: Iterable[str],
    rules: Sequence[type[Rule]],
    options: RunOptions,
    mode: Mode,
    exclude: Iterable[str],
    jobs: int | None,
    respect_gitignore: bool,
    progress: Progress | None,
    excludes_at: Sequence[tuple[str, Sequence[str]]],
    only: Collection[str] | None,
    use_cache: bool,
    recording: Recording | None,
) -> RunResult:
    paths = with_includes(list(paths))  # (-r other.txt of a requirements file given)
    suffixes = tuple(sorted({s for c in rules for s in c.suffixes})) or (".py",)
    patterns = sorted({p for c in rules for p in c.file_patterns})
    for c in rules:  # before any file is touched
        if c.needs_api_data:
            require_api_data(c.code, options)
        c.prepare(options)
    ids = tuple(c.id for c in rules)
    cache = ResultCache(ids, options) if use_cache and mode is Mode.CHECK else None
    results: dict[str, FileResult] = {}
    others: list[str] = []  # files the prefilter ruled out (they may still import an alias)
    stale: list[str] = []
    left_out: list[str] = []  # Python files outside ``only``: read only for their re-exports
    imported: set[bytes] = set()  # the words of the import statements of the files read
    read: dict[str, FileImports] = {}  # each file's imports, worked out once (`reexports`)

    def unreadable(folder: str, exc: OSError) -> None:
        shown = display_path(folder)
        results[folder] = failed(
            shown, f"cannot read this folder ({exc.strerror}): its files were not checked"
        )

    links: list[str] = []
    at = [(base, list(globs)) for base, globs in excludes_at]
    walking: Walk = (paths, suffixes, list(exclude), respect_gitignore, at, patterns)
    before = recording.walked_before(walking) if recording is not None else None
    if before is not None:  # (`migrate_fi.run.warm.replay` walked the same way just now)
        walked, stale, links = before.files, before.stale, before.links
    else:
        depends.forget_stats()  # (a run asks each file's stat once; an earlier run's are stale)
        with depends.covered():  # (`migrate_fi.run.warm.replay` walks again)
            walked = list(discover(*walking, unreadable, stale.append, links.append))
    if recording is not None:
        recording.walked(walking, walked)
    tree = None  # the digest of what the walk found, when the run may be replayed
    state: TreeState | None = None  # (and what it is made of)
    # (with no result kept to replay, the digest waits for the reading: the stats of the
    # files it reads come with their reading, in the workers too, not from a stat of each file
    # here first, 12 ms of a cold `check` of vLLM's tree; it is made while the files are
    # analysed, `digest` below)
    later = False
    if cache is not None and only is None and not results:
        later = before is None and not cache.may_replay()
        if not later:
            state = before.state if before is not None else tree_state(walked, stale, links)
            tree = state.tree if state is not None else None
            replayed = cache.replay(tree) if tree is not None else None
            if replayed is not None:  # (nothing changed since the last run: its result)
                if recording is not None and tree is not None:
                    recording.ran(tree, cache.notes())
                return replayed
    tests = rule_tests(rules, options, cache)  # built once, before the files are read
    walk = cache.walk() if cache is not None else WalkMemo()  # what the last run ruled out
    sign = walk.enabled and walk.empty()  # (the reading gives each file's signature)
    todo: list[Todo] = []  # the files to read
    for abspath in walked:
        if only is not None and os.path.realpath(abspath) not in only:
            if is_python_path(abspath):
                left_out.append(abspath)
            continue
        signature = walk.signature(abspath) if only is None and not sign else None
        if walk.ruled_out(abspath, signature):
            others.append(abspath)  # (unchanged: skipped as the last run found; below)
            continue
        todo.append(Todo(abspath, signature, walk.matched(abspath, signature)))
    for abspath, shown in zip(others, display_paths(others), strict=True):
        results[abspath] = FileResult(shown, Status.SKIPPED)

    preload = (lambda: preload_api_data(options)) if any(c.needs_api_data for c in rules) else None
    first = frozenset(c.id for c in rules if c.searches_project)
    with Batch(ids, options, mode.value, jobs, progress, cache, preload, first) as batch:
        known = len(results)  # (files ruled out unread, as unchanged since the last run)
        batch.reading(known, known + len(todo))
        found = _read(batch, todo, tests, options, only is not None, sign)
        for path, why in found.failed:
            results[path] = failed(display_path(path), why)
        for path, shown in zip(found.skipped, display_paths(found.skipped), strict=True):
            results[path] = FileResult(shown, Status.SKIPPED)
        others += found.skipped
        read.update(found.imports)
        if only is not None:
            imported.update(*(words.all() for words in found.imports.values()))
        walk.learn(found.ruled_out, found.matched)
        if sign:  # (the stats the reading learnt: the run's, here too)
            depends.learn_stats(found.ruled_out)
            depends.learn_stats((path, signature) for path, signature, _ in found.matched)
        candidates = found.candidates
        # (what a search for a function's callers need not read again: here, in the workers)
        depends.learn_absent(found.without)
        if found.without and any(not first.isdisjoint(f.prefiltered) for f in candidates):
            batch.tell(depends.learn_absent, (found.without,))

        def digest() -> None:  # (the tree's, from the stats the reading gave: done meanwhile)
            nonlocal state
            state = tree_state(walked, stale, links)

        order = ExportOrder(candidates, read, tests)
        results.update(batch.process(candidates, {}, len(todo), digest if later else None, order))
        exporters = imported_modules(left_out, imported, tests, options)
        # (analysed for their exports only: a check, whatever the mode, and not part of the result)
        with Batch(ids, options, Mode.CHECK.value, jobs, None, cache, preload, first) as aside:
            beside = aside.process(exporters, {})
        aliases = _reexport_rounds(batch, results, beside, candidates, others, walk, read, order)
    if cache is not None:
        cache.save_walk(walk)
        cache.prune()
    result = RunResult(
        files=sorted(results.values(), key=lambda f: f.path), unsafe_fixes=options.unsafe_fixes
    )
    if stale:
        result.notices.append(_stale_notice(stale, mode))
    if links:
        result.notices.append(
            f"{len(links)} symbolic link(s) skipped ({_shown(links)}): migrate-fi never reads or writes"
            " through a link; give the file it leads to, if it is the project's"
        )
    if tree is None and state is not None:  # (made up front, or by `digest`)
        tree = state.tree
    if cache is not None and tree is not None:
        cache.save_replay(tree, result)
        if recording is not None and cache.replayable and not result.errors and state:
            patch = Patch(
                state.shape,
                state.numbers,
                batch.digests,
                tests.gates(),
                tuple(sorted(aliases)),
            )
            recording.ran(tree, cache.notes(), patch)
    return result


_PART = 64  # files read in one part (what a worker is given at a time)


def _read(
    batch: Batch,
    todo: list[Todo],
    tests: RuleTests,
    options: RunOptions,
    every_import: bool,
    sign: bool,
) -> Read:
    """Read the files of ``todo`` and test them against the rules' prefilters: where many
    must be tested, in parts shared with the workers (`Batch.share`), else here
    (`migrate_fi.run.reading`). A file whose rules the walk memo knows is only read: 688 of them
    (16 copies of SGLang, one file touched) took 30 ms here, 100 ms with the workers started,
    their import words worked out and the files sent back."""
    testing = sum(1 for t in todo if t.matched is None)
    if not batch.worth_reading_in_workers(testing):
        whole = read_part(todo, tests, options, every_import, sign=sign)
        # (the prefilters the reading worked out: the analysis's too, not worked out again)
        keep_tests(tests, batch.ids, options, build=False)
        batch.reading(len(todo))
        return whole
    keep_tests(tests, batch.ids, options)  # (before the workers are forked)
    parts = [todo[i : i + _PART] for i in range(0, len(todo), _PART)]
    found: dict[int, Read] = {}

    # (the words of every file's imports: worked out in parts, here and in the workers, they
    # cost less than reading again the files the rounds ask after)
    def here(i: int) -> Read:
        return read_part(parts[i], tests, options, every_import, True, sign)

    def done(i: int, part: Read) -> None:
        found[i] = part
        batch.reading(len(parts[i]))

    def failed(i: int, exc: Exception) -> None:  # (a worker that died: read here)
        done(i, here(i))

    def arguments(i: int) -> tuple[object, ...]:  # (what `read_in_worker` is given)
        return (parts[i], batch.ids, options, every_import, True, sign)

    batch.share(range(len(parts)), Work(read_in_worker, arguments, here, done, failed))
    out = Read()
    for i in range(len(parts)):  # (in the order of the walk)
        out.merge(found[i])
    return out


def _reexport_rounds(
    batch: Batch,
    results: dict[str, FileResult],
    beside: dict[str, FileResult],
    candidates: list[SourceFile],
    others: list[str],
    walk: WalkMemo,
    read: dict[str, FileImports],
    order: ExportOrder,
) -> dict[str, str]:
    """Analyse again, with the project's re-exports found so far, the files that may import
    them and whose result they can change (`migrate_fi.run.reexports`), until no new one appears;
    the re-exports followed. ``order``: the first pass's, with the re-exports it gave a file
    that waited for others."""
    aliases: dict[str, str] = {}
    relevant: set[bytes] | None = None  # (the triggers' names: worked out when there are exports)
    looked_for: dict[str, set[bytes]] = {}  # each rule's triggers' names
    none = ProjectAliases({})
    # the re-exports a file was last analysed with (the first pass gave some files those of the
    # files they wait for)
    analysed_with: dict[str, ProjectAliases] = dict(order.used)
    # (only an analysed file exports: the others, most of a tree, are never looked at)
    parsed = dict.fromkeys(f.path for f in candidates)
    for _ in range(MAX_ROUNDS):
        analysed = [*(results[p] for p in parsed), *beside.values()]
        if not any(r.exports for r in analysed):
            return aliases
        if relevant is None:
            # (a file that skipped a rule not named here is analysed again)
            looked_for = order.looked_for()
            relevant = set().union(*looked_for.values())
        exported = merge_exports(analysed, relevant)
        new = {k: v for k, v in exported.items() if aliases.get(k) != v}
        if not new:
            return aliases
        aliases.update(new)
        now = ProjectAliases(dict(aliases))
        again = [
            f
            for f in importers(new, candidates, others, walk, read)
            if not unaffected(
                results[f.path],
                f.data,
                analysed_with.get(f.path, none),
                now,
                looked_for,
                read.get(f.path),
                f.path,
            )
        ]
        results.update(batch.process(again, now.aliases))
        analysed_with.update((f.path, now) for f in again)
        parsed.update(dict.fromkeys(f.path for f in again))  # (a ruled-out file, read again)
    return aliases


def _stale_notice(stale: list[str], mode: Mode) -> str:
    """Temporary files an interrupted (killed) run left beside the files it was writing: they
    hold a migrated copy and would be picked up by `git add -A`. `apply` removes them."""
    if mode is Mode.APPLY:
        removed = remove_temporary(stale)
        kept = [p for p in stale if p not in removed]
        notice = (
            f"removed {len(removed)} temporary file(s) an interrupted run left: {_shown(removed)}"
        )
        if kept:
            notice += f"; {len(kept)} could not be removed: {_shown(kept)}"
        return notice
    return (
        f"{len(stale)} temporary file(s) an interrupted run left ({_shown(stale)}):"
        " `migrate-fi apply` removes them"
    )


def _shown(paths: list[str]) -> str:
    return ", ".join(display_path(p) for p in paths[:5]) + (" ..." if len(paths) > 5 else "")
