"""The re-export pass: a project module that binds a FlashInfer name at module level
(``from flashinfer import fp4_quantize as q``) exports it; after the first pass, the files that
may import such a name (they contain its name and its module's name) are analysed again with
those aliases, until no new export appears (`migrate_fi.engine.run` drives the rounds)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from functools import lru_cache
from typing import NamedTuple

from migrate_fi import depends, patterns
from migrate_fi.cache import WalkMemo
from migrate_fi.modules import module_identity
from migrate_fi.pipeline import RuleTests, must_see
from migrate_fi.prefilter import TO_SPACES, identifiers, names_one_of
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
    "FileImports",
    "file_imports",
    "import_words",
    "imported_modules",
    "importers",
    "merge_exports",
    "unaffected",
]


MAX_ROUNDS = 4
# an import statement, with a parenthesized or backslash-continued list of names
_STATEMENT = (
    rb"[ \t]*(?:from[ \t]+[\w.]+[ \t]+)?import[ \t]*(?:\([^)]*\)|[^\n#;]*(?:\\\r?\n[^\n#;]*)*)"
)
# one where a line starts or after a `;`, and the import statements of the lines right after it,
# blank lines between (a file's imports are mostly a few such blocks: a match each, not one a
# statement; a third less time over vLLM's tree)
_IMPORT = patterns.compile(
    rb"(?<![^\n;])" + _STATEMENT
    + rb"(?:(?:\r?\n[ \t]*){1,4}" + _STATEMENT.removeprefix(rb"[ \t]*") + rb")*"
)  # fmt: skip
_FEW_NAMES = 32  # up to this many, their occurrences are looked at instead of every identifier


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
    result: FileResult,
    data: bytes,
    before: ProjectAliases,
    after: ProjectAliases,
    looked_for: Mapping[str, AbstractSet[bytes]] | None = None,
    imports: FileImports | None = None,
) -> bool:
    """Whether analysing the file again with the re-exports ``after`` instead of those it was
    analysed with (``before``) would give ``result`` again: every name its resolvers looked up
    among the re-exports is followed to the same name, and no rule the prefilter left out would
    now find something. A new re-export named in the file runs those rules; one of them can
    find something only where the re-export reaches a name it looks for: one of its triggers'
    names, in ``looked_for`` (rule id -> names; without it, any re-export named counts), and
    where the file may import it: ``imports``, the file's, name its module (as `importers`
    asks; without them, any re-export named counts)."""
    lookups = result.lookups
    if lookups is None:
        return False
    if lookups.skipped:
        by_module, modules = _added(before, after)
        if imports is None or imports.dynamic:
            reachable = [k for keys in by_module.values() for k in keys]
        else:  # (a module whose last part is not ASCII is never among the words: kept)
            reachable = list(by_module.get(None, ()))
            for module in imports.among(modules):
                reachable += by_module[module]
        for key in reachable:
            name = key.rpartition(".")[2]
            if name.isascii() and name.encode() not in data:
                continue  # (not in the file: it runs no rule)
            # (where it leads, and its own target: a chain `follow` cannot end leads to both)
            reached = {
                t.rpartition(".")[2].encode() for t in (after.follow(key), after.aliases[key])
            }
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
        module = key.rpartition(".")[0].rpartition(".")[2]
        by_module.setdefault(module.encode() if module.isascii() else None, []).append(key)
    return by_module, Words(m for m in by_module if m is not None)


def _relevant_alias(target: str, names: set[bytes]) -> bool:
    """Only re-exports that can matter are followed: of a migrated API (its name is a trigger)."""
    last = target.rsplit(".", 1)[-1]
    return last.encode() in names


def import_words(data: bytes) -> set[bytes]:
    """The words of a file's import statements (module names and the names imported)."""
    return _scanned(data)[0]


# (the two ways a module is imported by call: each says "import" where it is named)
_BY_CALL = (b"import_module", b"importorskip")


def _scanned(data: bytes) -> tuple[set[bytes], bool]:
    """`import_words`, and whether the file names a way of importing a module by call."""
    # (each statement is matched where a line holding "import" starts, or after a `;` on it:
    # searching the whole file for statement starts took ten times longer; every "import" of
    # the file is seen by the search or lies in a statement it matched)
    statements: list[bytes] = []
    by_call = False
    pos = 0
    while (at := data.find(b"import", pos)) >= 0:
        start = data.rfind(b"\n", 0, at) + 1
        found = None
        while True:  # (the line's start, then after each `;` before the word)
            if start >= pos and (found := _IMPORT.match(data, start)) is not None:
                break
            semicolon = data.find(b";", start, at)
            if semicolon < 0:
                break
            start = semicolon + 1
        if found is None:
            by_call = by_call or data.startswith(_BY_CALL, at)
            pos = at + len(b"import")
            continue
        statements.append(found.group(0))
        pos = max(found.end(), at + 1)
    text = b" ".join(statements)
    by_call = by_call or any(way in text for way in _BY_CALL)
    return set(text.translate(TO_SPACES).split()), by_call  # (the ASCII words)


class FileImports(NamedTuple):
    """What a file's import statements name, kept for every file a run reads (a compact form:
    a set of words per file held 13 MB over SGLang's 5,300 files)."""

    words: bytes  # the words of its import statements, each between spaces
    dynamic: bool  # whether it imports modules by call (their names are strings)

    def among(self, asked: Words) -> AbstractSet[bytes]:
        """Those of the ``asked`` words its import statements name."""
        if asked.spaced is None:
            return asked.words.intersection(self.words.split())
        return {w for spaced, w in asked.spaced if spaced in self.words}

    def all(self) -> set[bytes]:
        return set(self.words.split())


_FEW_WORDS = 16  # words asked of every file: up to this many, a substring test each


class Words:
    """Words (ASCII identifiers) asked of many files' import words (`FileImports.among`): a
    substring test each, when they are few; else the file's words are split and looked up."""

    __slots__ = ("spaced", "words")

    def __init__(self, words: Iterable[bytes]) -> None:
        self.words = frozenset(words)
        few = len(self.words) <= _FEW_WORDS
        self.spaced = [(b" %s " % w, w) for w in self.words] if few else None


def file_imports(data: bytes) -> FileImports:
    """The words of the file's import statements, and whether it imports modules by call
    (`importlib.import_module`, `pytest.importorskip`)."""
    words, by_call = _scanned(data)
    return FileImports(b" %s " % b" ".join(words), by_call)


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
    modules_of: dict[bytes, set[bytes]] = {}  # alias name -> last parts of its modules
    names_of: dict[bytes, set[bytes]] = {}  # last part of a module -> the alias names it exports
    for key in aliases:
        module, _, name = key.rpartition(".")
        last = module.rsplit(".", 1)[-1].encode()
        modules_of.setdefault(name.encode(), set()).add(last)
        names_of.setdefault(last, set()).add(name.encode())
    every_module = Words(names_of)
    known = read if read is not None else {}

    def words_of(path: str, data: bytes) -> FileImports:
        found = known.get(path)
        if found is None:
            found = known[path] = file_imports(data)
        return found

    def imports_one(path: str, data: bytes) -> bool:
        found = words_of(path, data)
        if found.dynamic:  # modules named in strings: no import statement to read
            possible: set[bytes] = set(modules_of)
        else:
            imported = found.among(every_module)
            if not imported:
                return False
            possible = set().union(*(names_of[m] for m in imported))
        # (an imported name is written as an identifier; non-ASCII names as they are)
        ascii_names = {n for n in possible if n.isascii()}
        if any(not n.isascii() and n in data for n in possible):
            return True
        if len(ascii_names) <= _FEW_NAMES:  # (cheaper than collecting the identifiers)
            return names_one_of(data, ascii_names)
        return not identifiers(data).isdisjoint(ascii_names)

    def may_import(path: str) -> bool:
        """What the words kept from an earlier round say (True: the file must be read)."""
        found = known.get(path)
        return found is None or found.dynamic or bool(found.among(every_module))

    asked = repr(sorted(aliases))
    walk = walk or WalkMemo()

    def importing(path: str, data: bytes | None) -> bool:
        """`imports_one`; where not (``data`` None: the kept words say so), noted in the walk
        memo: the next run asks the file again only once it changed."""
        if data is not None and imports_one(path, data):
            return True
        walk.note_imports_none(path, walk.signature(path), asked)
        return False

    # (those unchanged since they were found not to import these are never looked at; the
    # candidates are in memory)
    unknown = set(walk.not_known_to_import_none([f.path for f in candidates], asked))
    out = [f for f in candidates if f.path in unknown and importing(f.path, f.data)]
    python = [path for path in others if path.endswith(".py")]  # (the others import nothing)
    for path in walk.not_known_to_import_none(python, asked):
        if not may_import(path):
            importing(path, None)
            continue
        try:
            data = depends.read_bytes(path)
        except OSError:
            continue  # reported in the first pass
        if importing(path, data):
            out.append(SourceFile(data, path, ()))
    return out
