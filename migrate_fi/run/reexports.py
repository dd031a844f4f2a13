"""The re-export pass: a project module that binds a FlashInfer name at module level
(``from flashinfer import fp4_quantize as q``) exports it; after the first pass, the files that
may import such a name (they contain its name and its module's name) are analysed again with
those aliases, until no new export appears (`migrate_fi.run.engine.run` drives the rounds)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from functools import lru_cache

from migrate_fi.analysis.importwords import (
    AliasImports,
    FileImports,
    ImportStatements,
    Words,
    file_imports,
    written_out,
)
from migrate_fi.analysis.resolver import ProjectAliases
from migrate_fi.base import depends
from migrate_fi.base.modules import export_parts, is_python_path, module_identity
from migrate_fi.base.results import (
    FileResult,
)
from migrate_fi.framework.rule import (
    RunOptions,
)
from migrate_fi.run.cache import WalkMemo
from migrate_fi.run.pipeline import RuleTests, must_see
from migrate_fi.run.workers import SourceFile

__all__ = [
    "MAX_ROUNDS",
    "imported_modules",
    "importers",
    "merge_exports",
    "unaffected",
]


MAX_ROUNDS = 4


def merge_exports(
    results: Iterable[FileResult | Mapping[str, str]], relevant: set[bytes] | None
) -> dict[str, str]:
    """Every file's relevant exports (each result's, or each mapping of exports given; every
    export where ``relevant`` is None). Two files that give the same module name (namespace
    packages: module names are counted from the outermost `__init__.py`) and bind the same name
    to different targets make that name ambiguous: it is dropped, never guessed."""
    merged: dict[str, str] = {}
    clashing: set[str] = set()
    for r in results:
        exports = r.exports if isinstance(r, FileResult) else r
        for key, target in exports.items():
            if relevant is not None and not _relevant_alias(target, relevant):
                continue
            if merged.setdefault(key, target) != target:
                clashing.add(key)
    for key in clashing:
        del merged[key]
    return merged


def unaffected(
    result: FileResult,
    data: bytes,
    before: ProjectAliases,
    after: ProjectAliases,
    looked_for: Mapping[str, AbstractSet[bytes]] | None = None,
    imports: FileImports | None = None,
    path: str | None = None,
) -> bool:
    """Whether analysing the file again with the re-exports ``after`` instead of those it was
    analysed with (``before``) would give ``result`` again: every name its resolvers looked up
    among the re-exports is followed to the same name, and no rule the prefilter left out would
    now find something. A new re-export named in the file runs those rules; one of them can
    find something only where the re-export reaches a name it looks for: one of its triggers'
    names, in ``looked_for`` (rule id -> names; without it, any re-export named counts), and
    where the file may import it: ``imports``, the file's, name its module (as `importers`
    asks; without them, any re-export named counts) and, with its ``path``, one of its import
    statements may bind it (`ImportStatements.binds`: a file that imports other names of that
    module, and binds the name itself, is not analysed again), or, in a file that imports
    modules by call, every part of its module's name is written (`written_out`)."""
    lookups = result.lookups
    if lookups is None:
        return False
    if lookups.skipped:
        by_module, modules = _added(before, after)
        by_call: set[str] = set()  # (reached through a module imported by call)
        if imports is None:
            reachable = [k for keys in by_module.values() for k in keys]
        else:  # (a module whose last part is not ASCII is never among the words: kept)
            reachable = list(by_module.get(None, ()))
            for module in imports.among(modules):
                reachable += by_module[module]
            if imports.dynamic:
                by_call = {
                    k
                    for keys in by_module.values()
                    for k in keys
                    if written_out(export_parts(k)[0], data)
                }
                reachable += sorted(by_call.difference(reachable))
        statements = None  # (read the first time a name is found in the file)
        for key in reachable:
            home, name = export_parts(key)
            if name.isascii() and name.encode() not in data:
                continue  # (not in the file: it runs no rule)
            if path is not None and imports is not None and key not in by_call:
                statements = statements or ImportStatements(data, path)
                if not statements.binds(home.rpartition(".")[2].encode(), name.encode(), home):
                    continue  # (no import statement of the file binds it)
            # (where it leads, and its own target: a chain `follow` cannot end leads to both)
            reached = {_word(t) for t in (after.follow(key), after.aliases[key])}
            for rule in lookups.skipped:
                names = looked_for.get(rule) if looked_for is not None else None
                if names is None or not reached.isdisjoint(names):
                    return False
    return all(before.follow(q) == after.follow(q) for q in lookups.qualnames)


@lru_cache(maxsize=8)  # (asked for every file of a round, with the same two)
def _added(
    before: ProjectAliases, after: ProjectAliases
) -> tuple[dict[bytes | None, list[str]], Words]:
    """The re-exports ``after`` adds to ``before``, by the last part of their module (None:
    one that is not ASCII), and those last parts."""
    by_module: dict[bytes | None, list[str]] = {}
    for key in after.aliases.keys() - before.aliases.keys():
        module = export_parts(key)[0].rpartition(".")[2]
        by_module.setdefault(module.encode() if module.isascii() else None, []).append(key)
    return by_module, Words(m for m in by_module if m is not None)


def _relevant_alias(target: str, names: set[bytes]) -> bool:
    """Only re-exports that can matter are followed: of a migrated API (its name is a trigger)."""
    return _word(target) in names


def _word(target: str) -> bytes:
    """The name a re-export's target leads to (``flashinfer.X()``, an instance: ``X``)."""
    return target.rsplit(".", 1)[-1].removesuffix("()").encode()


def imported_modules(
    paths: Iterable[str],
    imported: set[bytes],
    tests: RuleTests,
    options: RunOptions,
) -> list[SourceFile]:
    """Of ``paths`` (files a run leaves out), the modules whose name the import statements of
    the files it reads may name (``imported``), and that a rule would analyse: where the
    project re-exports what those files import."""
    out = []
    for path in paths:
        module = module_identity(path)[0]
        last = None if module is None else module.rsplit(".", 1)[-1]
        if last is None or last.encode("utf-8", "surrogateescape") not in imported:
            continue
        try:
            data = depends.read_bytes(path)
        except OSError:
            continue  # not a file this run checks: its own errors are not reported
        matched = must_see(tests, data, path, options)
        if matched is not None:
            out.append(SourceFile(data, path, matched))
    return out


def importers(
    aliases: Mapping[str, str],
    candidates: Iterable[SourceFile],
    others: Iterable[str],
    walk: WalkMemo | None = None,
    read: dict[str, FileImports] | None = None,
) -> list[SourceFile]:
    """Files that may import an alias: they contain its name, and an import statement of
    theirs names the last part of its module's name (`from pkg.quant import q`, `from . import
    quant`, `import pkg.quant as m`), or they import modules by call (`importlib`). Candidates
    are still in memory; the files the prefilter ruled out are read again, unless ``read``
    (kept by the caller from round to round: each file's import words, and whether it imports
    modules by call) already says they import none of the modules."""
    asked_of = AliasImports(aliases)
    known = read if read is not None else {}

    def imports_one(path: str, data: bytes) -> bool:
        found = known.get(path)
        if found is None:
            found = known[path] = file_imports(data, path)
        return asked_of.imported_by(found, data, path)

    def may_import(path: str) -> bool:
        """What the words kept from an earlier round say (True: the file must be read)."""
        found = known.get(path)
        return found is None or asked_of.may_import(found)

    asked = repr(sorted(aliases))
    walk = walk or WalkMemo()
    # (the files found to import none: noted in the walk memo in one pass at the end, so that
    # the next run asks each again only once it changed)
    none: list[str] = []

    def importing(path: str, data: bytes) -> bool:
        if imports_one(path, data):
            return True
        none.append(path)
        return False

    # (those unchanged since they were found not to import these are never looked at; the
    # candidates are in memory)
    unknown = set(walk.not_known_to_import_none([f.path for f in candidates], asked))
    out = [f for f in candidates if f.path in unknown and importing(f.path, f.data)]
    python = [path for path in others if is_python_path(path)]  # (the others import nothing)
    for path in walk.not_known_to_import_none(python, asked):
        if not may_import(path):  # (the kept words say so)
            none.append(path)
            continue
        try:
            data = depends.read_bytes(path)
        except OSError:
            continue  # reported in the first pass
        if importing(path, data):
            out.append(SourceFile(data, path, ()))
    walk.note_imports_none(none, asked)
    return out
