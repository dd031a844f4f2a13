"""The re-export pass: a project module that binds a FlashInfer name at module level
(``from flashinfer import fp4_quantize as q``) exports it; after the first pass, the files that
may import such a name (they contain its name and its module's name) are analysed again with
those aliases, until no new export appears (`migrate_fi.engine.run` drives the rounds)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from migrate_fi.cache import WalkMemo
from migrate_fi.modules import module_identity
from migrate_fi.pipeline import RuleTests, matching
from migrate_fi.prefilter import Prefilter, identifiers
from migrate_fi.resolver import ProjectAliases
from migrate_fi.results import (
    FileResult,
)
from migrate_fi.rule import (
    RunOptions,
)
from migrate_fi.workers import SourceFile

__all__ = [
    "MAX_ROUNDS",
    "import_words",
    "imported_modules",
    "importers",
    "merge_exports",
    "unaffected",
]


MAX_ROUNDS = 4
# an import statement, with a parenthesized or backslash-continued list of names
_IMPORT = re.compile(
    rb"(?:^|;)[ \t]*(?:from[ \t]+[\w.]+[ \t]+)?import[ \t]*(?:\([^)]*\)|[^\n#;]*(?:\\\r?\n[^\n#;]*)*)",
    re.MULTILINE,
)
_WORD = re.compile(rb"\w+")
_FEW_MODULES = 8  # up to this many, substring tests before reading a file's import statements
_SUBSTRING_TESTS = 32  # up to this many exporting modules, tested as substrings first


def merge_exports(results: Iterable[FileResult], relevant: set[bytes]) -> dict[str, str]:
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


def unaffected(
    result: FileResult, data: bytes, before: ProjectAliases, after: ProjectAliases
) -> bool:
    """Whether analysing the file again with the re-exports ``after`` instead of those it was
    analysed with (``before``) would give ``result`` again: no rule would run that did not (the
    prefilter left none out, or no name ``after`` adds is in the file), and every name its
    resolvers looked up among the re-exports is followed to the same name."""
    lookups = result.lookups
    if lookups is None:
        return False
    if not lookups.every_rule:
        for key in after.aliases.keys() - before.aliases.keys():
            name = key.rpartition(".")[2]
            if not name.isascii() or name.encode() in data:
                return False
    return all(before.follow(q) == after.follow(q) for q in lookups.qualnames)


def _relevant_alias(target: str, names: set[bytes]) -> bool:
    """Only re-exports that can matter are followed: of a migrated API (its name is a trigger)."""
    last = target.rsplit(".", 1)[-1]
    return last.encode() in names


def import_words(data: bytes) -> set[bytes]:
    """The words of a file's import statements (module names and the names imported)."""
    return {w for m in _IMPORT.finditer(data) for w in _WORD.findall(m.group(0))}


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
        if module is None or module.rsplit(".", 1)[-1].encode() not in imported:
            continue
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError:
            continue  # not a file this run checks: its own errors are not reported
        matched = matching(tests, data, path, options)
        if matched:
            out.append(SourceFile(data, path, matched))
    return out


def importers(
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
    every_module = set().union(*modules_of.values())
    # (k substring tests of a file cost about k/45 of collecting its identifiers: measured on
    # SGLang's tree)
    few = len(every_module) <= _SUBSTRING_TESTS

    def imports_one(data: bytes) -> bool:
        # a necessary condition, cheaper than collecting the identifiers of every file when the
        # exporting modules are few: one of them named in it (or modules imported by call,
        # whose names are strings)
        if (
            few
            and not any(m in data for m in every_module)
            and not (b"import_module" in data or b"importorskip" in data)
        ):
            return False
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
        words = import_words(data)
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
