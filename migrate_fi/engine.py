"""The engine: run the selected codemods over files and collect results.

Per file (`process_source`): read the bytes; a cheap text prefilter (does the file name any
codemod's trigger at all?) so that most files are never parsed; decode (BOM, coding cookie);
`ast.parse`; each codemod's `find` over the shared name resolution; suppression comments; which
fixes this run applies (`safe` ones, and `review` ones with ``--unsafe-fixes``). That is all
`check` does. `diff` and `apply` then parse the files that have fixes to apply with LibCST, refuse
a parse that does not round-trip exactly, apply each codemod's edits and imports, re-parse the
result, and (`apply`) write atomically. Codemods run in release order; after a codemod changed
the text, the next one reads the new text.

A failure in one file (undecodable, syntax error, RecursionError, a codemod bug) is recorded as
that file's error; the other files are still processed.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import difflib
import enum
import gc
import os
import re
import warnings
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from functools import lru_cache

from migrate_fi.api.store import DataError
from migrate_fi.cache import ResultCache, WalkMemo
from migrate_fi.codemod import (
    Codemod,
    FileContext,
    Fix,
    RuleDefinitionError,
    RunOptions,
    preload_api_data,
    require_api_data,
)
from migrate_fi.discovery import discover, wanted_files, with_includes
from migrate_fi.edits import EditError, Replace, TextEdit
from migrate_fi.modules import display_path, in_flashinfer, module_identity
from migrate_fi.prefilter import Prefilter, identifiers
from migrate_fi.resolver import NameResolver
from migrate_fi.results import (
    Diagnostic,
    FileError,
    FileResult,
    FixSafety,
    Replacement,
    RunResult,
    Status,
)
from migrate_fi.sources import (
    SourceError,
    decode_source,
    signals_deferred,
    source_lines,
    write_atomically,
)
from migrate_fi.suppression import Suppressions
from migrate_fi.workers import Batch, SourceFile

__all__ = ["Mode", "failed", "prefilter_for", "process_source", "run", "write_changes"]


class Mode(str, enum.Enum):
    CHECK = "check"  # find sites; LibCST is never loaded
    DIFF = "diff"  # produce the new text; write nothing
    APPLY = "apply"  # produce the new text; the CLI writes it


_LONE_CR = re.compile(r"\r(?!\n)")


def prefilter_for(codemod: type[Codemod], options: RunOptions) -> Prefilter:
    """The text test a file must pass for ``codemod`` to parse it in this run."""
    return _prefilter(codemod.triggers_for(options))


@lru_cache(maxsize=64)
def _prefilter(triggers: tuple[str | tuple[str, ...], ...]) -> Prefilter:
    return Prefilter(triggers)


_Tests = Sequence[tuple[type[Codemod], Prefilter]]  # each codemod with its prefilter for a run


def _tests(
    codemods: Sequence[type[Codemod]], options: RunOptions, cache: ResultCache | None = None
) -> _Tests:
    if cache is None:
        return [(c, prefilter_for(c, options)) for c in codemods]
    # some rules derive their triggers from the API data of the range (loading it): once
    triggers = cache.memo("triggers", lambda: [c.triggers_for(options) for c in codemods])
    return [(c, _prefilter(t)) for c, t in zip(codemods, triggers, strict=True)]


def _matching(tests: _Tests, data: bytes, path: str, options: RunOptions) -> tuple[str, ...]:
    """The ids of the codemods that must see the file: its prefilter, then its finer test."""
    # (a rule that does not read this kind of file never pays for its text tests: FI007 reads
    # dependency files only, and its requirement names, torch among them, are in every model file)
    return tuple(
        c.id
        for c, p in tests
        if reads(c, path) and p.matches(data) and c.wants(data, path, options)
    )


def _flashinfer_own_file(path: str, data: bytes, tests: _Tests, options: RunOptions) -> bool:
    """A file of FlashInfer's own tree that must be read although no prefilter matched: it
    reaches the API through relative imports, or names its own definitions without their
    module (`DirectDenseGemmKernel(...)` where it is defined; tested as if it named its module)."""
    if not path.endswith(".py") or f"flashinfer{os.sep}" not in path:
        return False  # (cheap: a module of the flashinfer package lies in a folder of that name)
    module = module_identity(path)[0]
    if module is None or not in_flashinfer(module):
        return False
    if b"from ." in data:
        return True
    named = data + b"\n" + module.replace(".", " ").encode()
    return bool(_matching(tests, named, path, options))


def process_source(
    data: bytes,
    path: str,
    codemods: Sequence[type[Codemod]],
    options: RunOptions,
    mode: Mode,
    module: tuple[str | None, bool] = (None, False),
    aliases: Mapping[str, str] | None = None,
    prefiltered: Collection[str] | None = None,
) -> FileResult:
    """Run ``codemods`` over one file's bytes. Never raises for a problem in the file.

    ``aliases`` are the project's own re-exports of FlashInfer names (see `run`);
    ``prefiltered`` the ids of the codemods whose prefilter `run` already found matching (None:
    test them here)."""
    # Parsing and analysis build millions of small objects and no reference cycles worth
    # collecting meanwhile: the cycle collector would walk them again and again (ast.parse of a
    # 5 MB file: 8 s with it, 3 s without).
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _process(data, path, codemods, options, mode, module, aliases or {}, prefiltered)
    except RecursionError:
        return failed(path, "too deeply nested to analyse (RecursionError); file left untouched")
    except MemoryError:
        return failed(path, "ran out of memory analysing it; file left untouched")
    except (SourceError, DataError) as exc:
        return failed(path, str(exc))
    except (EditError, RuleDefinitionError) as exc:
        return failed(path, f"{exc}; file left untouched")
    except Exception as exc:  # a bug in a codemod must not stop the run or damage the file
        return failed(path, f"internal error ({type(exc).__name__}: {exc}); file left untouched")
    finally:
        if collecting:
            gc.enable()


def failed(path: str, reason: str, line: int | None = None, col: int | None = None) -> FileResult:
    """A file (or folder) that could not be processed; it does not count as parsed."""
    return FileResult(path, Status.FAILED, error=FileError(path, reason, line, col))


def _parse(text: str, path: str) -> ast.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarnings about the user's code are not ours
        return ast.parse(text, filename=path)


def _settle(
    ctx: FileContext,
    suppressions: Suppressions,
    unsafe: bool,
    details: Callable[[Fix], tuple[Replacement, ...]] | None = None,
) -> tuple[list[Diagnostic], list[Fix]]:
    """Drop what suppression comments silence (a fix whole), and mark which fixes this run
    applies; with ``details``, give every kept fix's diagnostic its replacements. Returns the
    diagnostics and the fixes to apply."""
    by_diagnostic = {id(f.diagnostic): f for f in ctx.fixes}
    kept: list[Diagnostic] = []
    applied: list[Fix] = []
    for d in ctx.diagnostics:
        if suppressions.comments and suppressions.silences(d):
            continue
        fix = by_diagnostic.get(id(d))
        if fix is not None and details is not None:
            d = dataclasses.replace(d, replacements=details(fix))
        if fix is not None and (d.fix is FixSafety.SAFE or unsafe):
            d = dataclasses.replace(d, applies=True)
            applied.append(Fix(d, fix.edits, fix.imports))
        kept.append(d)
    return kept, applied


def _apply_fixes(
    text: str,
    tree: ast.Module | None,
    fixes: Sequence[Fix],
    cls: type[Codemod],
    splice: bool = True,
) -> str:
    """The text with ``fixes`` (all of one rule) applied; ``tree``: the `ast` tree of
    ``text`` (None for a text file)."""
    edits = [
        (f"{cls.code} at {f.diagnostic.line}:{f.diagnostic.col}", e) for f in fixes for e in f.edits
    ]
    text_edits = [(label, e) for label, e in edits if isinstance(e, TextEdit)]
    if text_edits:
        if len(text_edits) != len(edits) or any(f.imports for f in fixes):
            raise EditError(f"{cls.id} mixed text edits with other edits: a bug in the rule")
        from migrate_fi.textedit import apply_text_edits

        return apply_text_edits(text, text_edits)
    if (
        splice
        and not any(f.imports for f in fixes)
        and all(isinstance(e, Replace) and e.as_text is not None for _, e in edits)
    ):
        from migrate_fi.textedit import apply_text_edits

        # every edit said as text too: no LibCST (the result is parsed again by the caller)
        plain = [(label, t) for label, e in edits for t in e.as_text]  # type: ignore[union-attr]
        return apply_text_edits(text, plain)
    from migrate_fi.cstedit import apply_edits_in_regions

    assert tree is not None, "LibCST edits are for Python files"
    imports = [i for f in fixes for i in f.imports]
    # only the statements the edits touch go through LibCST
    return apply_edits_in_regions(text, tree, edits, imports)


def _details(
    cls: type[Codemod], text: str, tree: ast.Module | None
) -> Callable[[Fix], tuple[Replacement, ...]]:
    def details(fix: Fix) -> tuple[Replacement, ...]:
        return replacements(text, _apply_fixes(text, tree, [fix], cls))

    return details


def replacements(old: str, new: str) -> tuple[Replacement, ...]:
    """The changes that turn ``old`` into ``new``: changed runs of lines, narrowed to the
    characters that differ."""
    a, b = source_lines(old), source_lines(new)
    out = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        gone, put = "".join(a[i1:i2]), "".join(b[j1:j2])
        head = _common_prefix(gone, put)
        tail = _common_prefix(gone[head:][::-1], put[head:][::-1])
        start = _position(a, i1, gone[:head])
        end = _position(a, i1, gone[: len(gone) - tail])
        out.append(Replacement(*start, *end, put[head : len(put) - tail]))
    return tuple(out)


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _position(lines: Sequence[str], first: int, before: str) -> tuple[int, int]:
    """(line, col), 1-based, of the point after ``before``, text that starts at line
    ``first`` (0-based) of ``lines``."""
    breaks = before.count("\n")
    if breaks:
        return first + breaks + 1, len(before) - before.rfind("\n")
    return first + 1, len(before) + 1


def _wanted(codemod: type[Codemod]) -> Callable[[str], bool]:
    return _wanted_files(codemod.suffixes, codemod.file_patterns)


@lru_cache(maxsize=64)
def _wanted_files(suffixes: tuple[str, ...], patterns: tuple[str, ...]) -> Callable[[str], bool]:
    return wanted_files(suffixes, patterns)


def reads(codemod: type[Codemod], path: str) -> bool:
    """Whether ``codemod`` reads the file at ``path`` (by suffix or file pattern)."""
    return _wanted(codemod)(path)


def _process(
    data: bytes,
    path: str,
    codemods: Sequence[type[Codemod]],
    options: RunOptions,
    mode: Mode,
    module: tuple[str | None, bool],
    aliases: Mapping[str, str],
    prefiltered: Collection[str] | None,
) -> FileResult:
    source = decode_source(data)
    text = source.text
    is_python = path.endswith(".py")
    # Old Mac line endings (a lone CR): LibCST cannot print them back, so such a file is
    # migrated with LF endings and given its CRs back at the end; a file that mixes lone CRs
    # with other endings cannot be rewritten without changing them (refused where it has fixes).
    lone_cr = "\r" in text and _LONE_CR.search(text) is not None
    cr_only = lone_cr and "\n" not in text
    if cr_only:
        text = text.replace("\r", "\n")
    every = {name for c in codemods for name in (c.code, c.id)}
    codemods = [c for c in codemods if reads(c, path)]
    own_tree = is_python and in_flashinfer(module[0])
    if prefiltered is None:
        prefiltered = _matching(_tests(codemods, options), data, path, options)
    wanted = [c for c in codemods if own_tree or c.id in prefiltered]
    tree: ast.Module | None = None
    if is_python:
        try:
            tree = _parse(text, path)
        except SyntaxError as exc:
            msg = exc.msg or "invalid syntax"
            return failed(path, f"syntax error: {msg}; file left untouched", exc.lineno, exc.offset)
        except ValueError as exc:  # e.g. NUL bytes
            return failed(path, f"cannot parse: {exc}; file left untouched")

    result = FileResult(path, Status.UNCHANGED, parsed=True)
    original = text
    resolver: NameResolver | None = None
    alias_names = {key.rsplit(".", 1)[-1] for key in aliases}
    imports_alias = is_python and any(name in text for name in alias_names)
    suppressions = Suppressions.of(text, is_python)

    for cls in codemods:
        if not (imports_alias or cls in wanted):
            continue
        ctx = FileContext(path, text, tree, options, module[0], module[1], resolver, aliases)
        codemod = cls()
        ctx.codemod = codemod
        codemod.find(ctx)
        # (each fix alone, in the text as read: a later rule's fixes cannot be told there)
        details = _details(cls, text, tree) if options.fix_details and text == original else None
        diagnostics, fixes = _settle(ctx, suppressions, options.unsafe_fixes, details)
        built = ctx.built_resolver
        if resolver is None and built is not None and text == original:
            result.exports = built.exports()
        resolver = built  # shared by the next codemod while the text is unchanged
        result.diagnostics.extend(diagnostics)
        if fixes and lone_cr and not cr_only:
            raise EditError(
                "its line endings mix lone CRs with others, which cannot be kept through a rewrite"
            )
        if mode is Mode.CHECK or not fixes:
            continue
        new_text = _apply_fixes(text, tree, fixes, cls, options.splice_text)
        if is_python:
            try:
                tree = _parse(new_text, path)
            except SyntaxError as exc:
                raise EditError(f"{cls.id} produced code that does not parse ({exc.msg})") from None
        else:
            _check_still_valid(path, text, new_text, cls.id)
        text = new_text
        suppressions = Suppressions.of(text, is_python)
        resolver = None
    if text == original and options.unused_suppressions:
        # Lines have not moved, and every rule that reads the file had its say (a rule the
        # prefilter skipped has no site here): a comment that silenced nothing is stale.
        ran = {name for c in codemods for name in (c.code, c.id)}
        result.diagnostics.extend(suppressions.unused(path, ran, every))
    if text != original:
        if cr_only:
            original, text = original.replace("\n", "\r"), text.replace("\n", "\r")
        result.status = Status.CHANGED
        result.old_text, result.new_text = original, text
        result.old_bytes, result.new_bytes = data, source.encode(text)
    return result


def _check_still_valid(path: str, old: str, new: str, rule: str) -> None:
    """A TOML or JSON file that parsed before must parse after a rule edited it."""
    import json

    from migrate_fi.config import tomllib

    loaders = {".toml": tomllib.loads, ".json": json.loads}
    load = loaders.get(os.path.splitext(path)[1])
    if load is None:
        return
    try:
        load(old)
    except ValueError:
        return  # it was not valid before either: nothing to compare
    try:
        load(new)
    except ValueError as exc:
        raise EditError(f"{rule} produced a file that no longer parses ({exc})") from None


# ----------------------------------------------------------------------- runs


def run(
    paths: Iterable[str],
    codemods: Sequence[type[Codemod]],
    options: RunOptions,
    mode: Mode,
    exclude: Iterable[str] = (),
    jobs: int | None = None,
    respect_gitignore: bool = True,
    progress: Callable[[int, int], None] | None = None,
    excludes_at: Sequence[tuple[str, Sequence[str]]] = (),
    only: Collection[str] | None = None,
    use_cache: bool = False,
) -> RunResult:
    """Discover files under ``paths`` and run ``codemods`` over them (see the module docstring).

    ``use_cache``: in check mode, reuse the results of files analysed before (`migrate_fi.cache`).

    Cross-module re-exports: a project module that binds a FlashInfer name at module level
    (``from flashinfer import fp4_quantize as q``) exports it; after the first pass, files that
    may import such a name (they contain its name and its module's name) are analysed again with
    those aliases, until no new export appears. A file that never names FlashInfer costs one read.

    ``only``: real paths; other files are left out (``--changed-since``), except that the
    modules the files read import are analysed (never reported, never written) for the
    re-exports they define: one step, not re-exports of re-exports.

    Raises `migrate_fi.discovery.DiscoveryError` for a path that does not exist, and
    `migrate_fi.codemod.CodemodSetupError` when a codemod cannot run for these options.
    """
    mode = Mode(mode)
    paths = with_includes(list(paths))  # (-r other.txt of a requirements file given)
    suffixes = tuple(sorted({s for c in codemods for s in c.suffixes})) or (".py",)
    patterns = sorted({p for c in codemods for p in c.file_patterns})
    for c in codemods:  # before any file is touched
        if c.needs_api_data:
            require_api_data(c.code, options)
        c.prepare(options)
    ids = tuple(c.id for c in codemods)
    cache = ResultCache(ids, options) if use_cache and mode is Mode.CHECK else None
    tests = _tests(codemods, options, cache)  # built once, before the walk
    walk = cache.walk() if cache is not None else WalkMemo()  # what the last run ruled out
    results: dict[str, FileResult] = {}
    candidates: list[SourceFile] = []
    others: list[str] = []  # files the prefilter ruled out (they may still import an alias)
    stale: list[str] = []
    left_out: list[str] = []  # Python files outside ``only``: read only for their re-exports
    imported: set[bytes] = set()  # the words of the import statements of the files read

    def unreadable(folder: str, exc: OSError) -> None:
        shown = display_path(folder)
        results[folder] = failed(
            shown, f"cannot read this folder ({exc.strerror}): its files were not checked"
        )

    links: list[str] = []
    for abspath in discover(
        paths,
        suffixes,
        exclude,
        respect_gitignore,
        excludes_at,
        patterns,
        unreadable,
        stale.append,
        links.append,
    ):
        if only is not None and os.path.realpath(abspath) not in only:
            if abspath.endswith(".py"):
                left_out.append(abspath)
            continue
        shown = display_path(abspath)
        signature = walk.signature(abspath) if only is None else None
        if walk.ruled_out(abspath, signature):
            results[abspath] = FileResult(shown, Status.SKIPPED)  # unchanged since, not read
            others.append(abspath)
            continue
        try:
            with open(abspath, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            results[abspath] = failed(shown, f"cannot read: {exc.strerror}")
            continue
        if only is not None:
            imported |= _import_words(data)
        matched = _matching(tests, data, abspath, options)
        if not matched and not _flashinfer_own_file(abspath, data, tests, options):
            results[abspath] = FileResult(shown, Status.SKIPPED)
            others.append(abspath)
            walk.rule_out(abspath, signature)
            continue
        candidates.append(SourceFile(data, abspath, matched))

    preload = (
        (lambda: preload_api_data(options)) if any(c.needs_api_data for c in codemods) else None
    )
    batch = Batch(ids, options, mode.value, jobs, progress, cache, preload)
    results.update(batch.process(candidates, {}))
    exporters = _imported_modules(left_out, imported, tests, options)
    # (analysed for their exports only: a check, whatever the mode, and not part of the result)
    beside = Batch(ids, options, Mode.CHECK.value, jobs, None, cache, preload).process(
        exporters, {}
    )
    aliases: dict[str, str] = {}
    relevant = set().union(*(p.names() for _, p in tests)) if tests else set()
    for _ in range(_MAX_REEXPORT_ROUNDS):
        exported = _merge_exports([*results.values(), *beside.values()], relevant)
        new = {k: v for k, v in exported.items() if aliases.get(k) != v}
        if not new:
            break
        aliases.update(new)
        again = _importers(new, candidates, others, walk)
        results.update(batch.process(again, aliases))
    if cache is not None:
        cache.save_walk(walk)
        cache.prune()
    result = RunResult(
        files=sorted(results.values(), key=lambda f: f.path), unsafe_fixes=options.unsafe_fixes
    )
    if stale:
        result.notices.append(_stale_notice(stale, mode))
    if links:
        shown = ", ".join(display_path(p) for p in links[:5]) + (" ..." if len(links) > 5 else "")
        result.notices.append(
            f"{len(links)} symbolic link(s) skipped ({shown}): migrate-fi never reads or writes"
            " through a link; give the file it leads to, if it is the project's"
        )
    return result


def _stale_notice(stale: list[str], mode: Mode) -> str:
    """Temporary files an interrupted (killed) run left beside the files it was writing: they
    hold a migrated copy and would be picked up by `git add -A`. `apply` removes them."""
    shown = ", ".join(display_path(p) for p in stale[:5]) + (" ..." if len(stale) > 5 else "")
    if mode is Mode.APPLY:
        for path in stale:
            with contextlib.suppress(OSError):
                os.unlink(path)
        return f"removed {len(stale)} temporary file(s) an interrupted run left: {shown}"
    return (
        f"{len(stale)} temporary file(s) an interrupted run left ({shown}): `migrate-fi apply`"
        " removes them"
    )


_MAX_REEXPORT_ROUNDS = 4
# an import statement, with a parenthesized or backslash-continued list of names
_IMPORT = re.compile(
    rb"(?:^|;)[ \t]*(?:from[ \t]+[\w.]+[ \t]+)?import[ \t]*(?:\([^)]*\)|[^\n#;]*(?:\\\r?\n[^\n#;]*)*)",
    re.MULTILINE,
)
_WORD = re.compile(rb"\w+")
_FEW_MODULES = 8  # up to this many, substring tests before reading a file's import statements


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


def _import_words(data: bytes) -> set[bytes]:
    """The words of a file's import statements (module names and the names imported)."""
    return {w for m in _IMPORT.finditer(data) for w in _WORD.findall(m.group(0))}


def _imported_modules(
    paths: Iterable[str],
    imported: set[bytes],
    tests: _Tests,
    options: RunOptions,
) -> list[SourceFile]:
    """Of ``paths`` (files a run leaves out), the modules whose name the import statements of
    the files it reads may name (``imported``), and that a rule would analyse: where the
    project re-exports what those files import."""
    out = []
    for path in paths:
        module = module_identity(path)[0]
        if module is None or module.rsplit(".", 1)[-1].encode() not in imported:
            continue
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError:
            continue  # not a file this run checks: its own errors are not reported
        matched = _matching(tests, data, path, options)
        if matched:
            out.append(SourceFile(data, path, matched))
    return out


def _importers(
    aliases: Mapping[str, str],
    candidates: Iterable[SourceFile],
    others: Iterable[str],
    walk: WalkMemo | None = None,
) -> list[SourceFile]:
    """Files that may import an alias: they contain its name, and an import statement of
    theirs names the last part of its module's name (`from pkg.quant import q`, `from . import
    quant`, `import pkg.quant as m`), or they import modules by call (`importlib`). Candidates
    are still in memory; the files the prefilter ruled out are read again."""
    modules_of: dict[bytes, set[bytes]] = {}  # alias name -> last parts of its modules
    for key in aliases:
        module, _, name = key.rpartition(".")
        modules_of.setdefault(name.encode(), set()).add(module.rsplit(".", 1)[-1].encode())

    named = Prefilter(n.decode() for n in modules_of)  # (one pass over the file's identifiers)

    def imports_one(data: bytes) -> bool:
        if not named.matches(data):
            return False
        # (an imported name is written as an identifier; non-ASCII names as they are)
        names = identifiers(data).intersection(modules_of)
        names.update(n for n in modules_of if not n.isascii() and n in data)
        if b"import_module" in data or b"importorskip" in data:
            return True  # modules named in strings: no import statement to read
        modules = set().union(*(modules_of[n] for n in names))
        if len(modules) <= _FEW_MODULES and not any(m in data for m in modules):
            return False  # (a necessary condition, cheaper than reading the imports)
        words = _import_words(data)
        return any(modules_of[n] & words for n in names)

    out = [f for f in candidates if imports_one(f.data)]
    asked = repr(sorted(aliases))
    walk = walk or WalkMemo()
    for path in others:
        signature = walk.signature(path)
        if walk.imports_none(path, signature, asked):
            continue  # unchanged since it was found not to import these
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError:
            continue  # reported in the first pass
        if imports_one(data):
            out.append(SourceFile(data, path, ()))
        else:
            walk.note_imports_none(path, signature, asked)
    return out


def write_changes(result: RunResult, last: Callable[[str], bool] | None = None) -> None:
    """`apply`: write every changed file atomically; record what was written or why not.
    ``last``: files to write after all others (pin and version files: a run stopped halfway
    leaves the old pins, so the next run still migrates from the old version)."""
    changed = result.changed
    if last is not None:
        changed = sorted(changed, key=lambda f: last(f.path))  # stable: path order within each
    for f in changed:
        assert f.new_bytes is not None and f.old_bytes is not None
        # (an interruption lands between files: a file written is a file listed as written)
        with signals_deferred():
            try:
                write_atomically(f.path, f.new_bytes, f.old_bytes)
            except SourceError as exc:
                result.write_errors.append(FileError(f.path, str(exc)))
            else:
                result.written.append(f.path)
