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
    modules_named,
    written_out,
)
from migrate_fi.analysis.resolver import ProjectAliases
from migrate_fi.base import depends
from migrate_fi.base.modules import export_parts, in_flashinfer, is_python_path, module_identity
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
    "ExportOrder",
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


class ExportOrder:
    """The order of a run's first pass over the files some rule must see: a file whose import
    statements may name the module of another of them (or, in a file that imports modules by
    call, that writes its dotted name) is analysed after it, with the re-exports those modules
    make (`aliases`), not again in a round once they are known: vLLM's quantization modules
    import `vllm.utils.flashinfer`'s. A module of FlashInfer's own tree makes none
    (`NameResolver.exports`): nothing waits for it. Files that wait for each other are
    analysed all the same (`Batch.process`), and what any file was analysed with (`used`) is
    what the rounds compare with what they find (`unaffected`): the order saves work, it
    never decides a result."""

    def __init__(
        self, files: Iterable[SourceFile], read: dict[str, FileImports], tests: RuleTests
    ) -> None:
        files = list(files)
        self._tests = tests
        self._looked_for: dict[str, set[bytes]] | None = None  # (`looked_for`)
        modules: dict[str, list[str]] = {}  # a module's name -> its files (and as a suffix)
        for f in files:
            module = module_identity(f.path)[0]
            if module is None or in_flashinfer(module) or not module.isascii():
                continue
            modules.setdefault(module, []).append(f.path)
        # (a file may import one of them only where its import words name its last part)
        last_parts = {m.rpartition(".")[2] for m in modules}
        lasts = Words(last.encode() for last in last_parts)
        # path -> the files it waits for
        self.after: dict[str, tuple[str, ...]] = {}
        for f in files if modules else ():
            imports = read.get(f.path)
            if imports is None:
                imports = read[f.path] = file_imports(f.data, f.path)
            if not imports.among(lasts) and not imports.dynamic:
                continue
            found: set[str] = set()
            # (a module known by a shorter name than the importer writes: a namespace package
            # above it, as `ProjectAliases` follows it)
            for named in modules_named(f.data, f.path):
                parts = named.split(".")
                for end in range(len(parts), 0, -1):  # (the module, and the packages above it)
                    if parts[end - 1] in last_parts:
                        for start in range(end):
                            found.update(modules.get(".".join(parts[start:end]), ()))
            if imports.dynamic:  # (a module imported by call: its dotted name is written)
                found.update(
                    p for m, paths in modules.items() if _dotted_in(m, f.data) for p in paths
                )
            found.discard(f.path)
            if found:
                self.after[f.path] = tuple(sorted(found))
        self.results: dict[str, FileResult] = {}  # the files analysed so far
        self.used: dict[str, ProjectAliases] = {}  # the re-exports each waiting file was given
        # (the longest chain of files that wait, one for the other, from each file: in bytes)
        sizes = {f.path: len(f.data) for f in files}
        waiting_for: dict[str, list[str]] = {}
        for path, before in self.after.items():
            for other in before:
                waiting_for.setdefault(other, []).append(path)
        self._chain: dict[str, int] = {}
        try:
            for path in sizes:
                self._chain_from(path, sizes, waiting_for, set())
        except RecursionError:  # (a chain of thousands of modules: each by its own size)
            self._chain.clear()
        self._awaited = set(waiting_for)

    def _chain_from(
        self, path: str, sizes: dict[str, int], waiting_for: dict[str, list[str]], on: set[str]
    ) -> int:
        found = self._chain.get(path)
        if found is None:
            on.add(path)  # (a file on the chain being followed ends it: a cycle)
            after = [
                self._chain_from(p, sizes, waiting_for, on)
                for p in waiting_for.get(path, ())
                if p not in on
            ]
            on.discard(path)
            found = self._chain[path] = sizes[path] + max(after, default=0)
        return found

    def awaited(self, f: SourceFile) -> bool:
        """Whether other files wait for ``f``."""
        return f.path in self._awaited

    def chain(self, f: SourceFile) -> int:
        """The bytes of the longest chain of files that wait, one for the other, from ``f``
        (its own size, for a file nothing waits for): the longest are handed out first."""
        return self._chain.get(f.path, len(f.data))

    def waits(self, f: SourceFile) -> bool:
        """Whether ``f`` is analysed after other files of the pass."""
        return f.path in self.after

    def ready(self, f: SourceFile) -> bool:
        """Whether the files ``f`` waits for are analysed."""
        return all(path in self.results for path in self.after.get(f.path, ()))

    def aliases(self, f: SourceFile) -> dict[str, str]:
        """The re-exports ``f`` is analysed with: those the files it waits for make that lead
        to a name a rule looks for (of those analysed: all of them, unless they wait for each
        other), as the rounds merge them (`merge_exports`)."""
        done = [self.results[p] for p in self.after.get(f.path, ()) if p in self.results]
        found = merge_exports(done, set().union(*self.looked_for().values()))
        self.used[f.path] = ProjectAliases(found)
        return found

    def finished(self, path: str, result: FileResult) -> None:
        self.results[path] = result

    def looked_for(self) -> dict[str, set[bytes]]:
        """Each rule's names a re-export must lead to for it to matter (its triggers' names; none
        for a rule that is never reached through re-exports), by rule id, worked out once (for
        the first file that waits, or the rounds); only the rules that read Python files (a rule
        of dependency files, FI007, never meets a re-export, and its names would cost parsing
        the target's requirements)."""
        if self._looked_for is None:
            self._looked_for = {
                c.id: p.names() if c.via_reexports else set()
                for c, p in self._tests
                if ".py" in c.suffixes
            }
        return self._looked_for


def _dotted_in(module: str, data: bytes) -> bool:
    """Whether ``module``'s dotted name, or the end of it from a part on that holds a dot, is
    written in ``data`` (`importlib.import_module("pkg.sub.mod")`)."""
    parts = module.split(".")
    return any(".".join(parts[i:]).encode() in data for i in range(max(len(parts) - 1, 1)))


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
