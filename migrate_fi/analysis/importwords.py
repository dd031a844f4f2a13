"""The words of a file's import statements, read without parsing it, and whether a file may
import one of a project's re-exports (`AliasImports`): asked of the files no rule must see, by the
re-export rounds (`migrate_fi.run.reexports`) and by a warm replay over files that changed
(`migrate_fi.run.patching`). Small and cheap to import: a replay imports it."""

from __future__ import annotations

import re
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from typing import NamedTuple

from migrate_fi.analysis.prefilter import TO_SPACES, identifiers, names_one_of
from migrate_fi.base import patterns
from migrate_fi.base.modules import absolute_module, export_parts, module_identity

__all__ = [
    "AliasImports",
    "FileImports",
    "ImportStatements",
    "Words",
    "file_imports",
    "import_words",
    "may_bind",
    "modules_named",
    "written_out",
]

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


def import_words(data: bytes) -> set[bytes]:
    """The words of a file's import statements (module names and the names imported)."""
    return set(_scanned(data)[1].translate(TO_SPACES).split())  # (the ASCII words)


# (the two ways a module is imported by call: each says "import" where it is named)
_BY_CALL = (b"import_module", b"importorskip")


def _scanned(data: bytes) -> tuple[list[bytes], bytes, bool]:
    """A file's import statements (`_statements`), their text, and whether the file names a
    way of importing a module by call."""
    statements, by_call = _statements(data)
    text = b" ".join(statements)
    return statements, text, by_call or any(way in text for way in _BY_CALL)


def _statements(data: bytes) -> tuple[list[bytes], bool]:
    """The file's import statements, a block of them at a time, and whether the file names a
    way of importing a module by call outside them."""
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
    return statements, by_call


# one statement of a block: the module of a `from` statement (None: `import a.b`), and the rest
_PARTS = re.compile(
    rb"(?:from[ \t]+([\w.]+)[ \t]+)?import[ \t]*(\([^)]*\)|[^\n#;]*(?:\\\r?\n[^\n#;]*)*)"
)


def _package_of(path: str, level: int) -> bytes | None:
    """The last part of the package that ``from <level dots> import ...`` names in the file at
    ``path`` (None: none, or not ASCII)."""
    module, is_package = module_identity(path)
    if module is None:
        return None
    parts = module.split(".")
    if not is_package:
        parts.pop()
    if level - 1 >= len(parts):
        return None
    last = parts[len(parts) - level]
    return last.encode() if last.isascii() else None


class ImportStatements:
    """The import statements of the file at ``path`` (its bytes ``data``), read once, and what
    they may bind (`binds`)."""

    def __init__(self, data: bytes, path: str, statements: list[bytes] | None = None) -> None:
        self.data, self.path = data, path
        # (blocks of statements, as `_statements` finds them)
        self.blocks = _statements(data)[0] if statements is None else statements
        # each statement: the last part of the module a `from` statement imports from (b"" for
        # an `import` statement; None where it cannot be told), the parts of that module, the
        # words of what it imports, and whether it imports `*`
        self.parts: list[tuple[bytes | None, list[bytes], list[bytes], bool]] = []
        for block in self.blocks:
            for m in _PARTS.finditer(block):
                source, rest = m.group(1), m.group(2)
                names = rest.translate(TO_SPACES).split()
                if source is None:
                    self.parts.append((b"", [], names, False))
                    continue
                dots = len(source) - len(source.lstrip(b"."))
                last = source.rpartition(b".")[2]
                if not last:  # (`from . import x`: the package the file is in, or above it)
                    last = _package_of(path, dots)
                self.parts.append((last, source.split(b"."), names, b"*" in rest))

    def relative_packages(self) -> set[bytes]:
        """The last parts of the packages its ``from . import x`` statements import from."""
        return {last for last, parts, _, _ in self.parts if last and not any(parts)}

    def binds(self, module: bytes, name: bytes, home: str | None = None) -> bool:
        """Whether a statement may bind ``name`` of a module whose last part is ``module``, or
        that module (then `module.name` reaches it): ``from pkg.module import name`` (or
        ``*``), ``from . import name`` in that package, ``from pkg import module``, ``import
        pkg.module``. ``from pkg.module import other`` (or ``from pkg.module.sub import
        other``) binds only ``other``, but it loads the module, which a package bound
        elsewhere then reaches by attribute (``pkg.module.name``, ``m = pkg.module``): that
        writes the module's name outside the import statements. A file that names ``name``,
        imports other names of the module and writes its name nowhere else never imports it.
        With ``home``, the module's whole name as its own file knows it (`ProjectAliases`), a
        `from` statement of an absolute module counts only where that module's name, up to
        the part ``module``, is ``home`` or ends with it (``from flashinfer.jit import x``
        never reaches a project module ``pkg.moe.flashinfer``).
        Conservative: every word of a statement counts as a name it may bind, and a name or
        module that is not ASCII is bound (import words are ASCII)."""
        if not (name.isascii() and module.isascii()):
            return True
        whole = None if home is None else home.encode("utf-8", "surrogateescape")
        loaded = False  # (a `from` statement of the module, of other names)
        for last, parts, names, star in self.parts:
            if module in names:
                return True  # (the module itself is bound)
            if last == b"":
                continue  # (an `import` statement that does not name it)
            if last is None or last == module:
                if not _may_name(parts, len(parts) - 1, whole):
                    continue
                if name in names or star:
                    return True
                loaded = True
            elif module in parts and any(
                p == module and _may_name(parts, i, whole) for i, p in enumerate(parts)
            ):
                loaded = True  # (`from pkg.module.sub import x` loads the module too)
        if not loaded:
            return False
        word = re.compile(rb"(?<!\w)%s(?!\w)" % re.escape(module))
        written = len(word.findall(self.data))
        return written > sum(len(word.findall(block)) for block in self.blocks)


def modules_named(data: bytes, path: str) -> set[str]:
    """The dotted names of the modules the import statements of the file at ``path`` (its
    bytes ``data``) name (each loads the packages above it too): ``from a.b import c`` ``a.b``
    and ``a.b.c``, ``import a.b as m`` ``a.b``; a relative one from the file's own module
    (none where it cannot be told)."""
    module, is_package = module_identity(path)
    out: set[str] = set()
    for block in _statements(data)[0]:
        for m in _PARTS.finditer(block):
            source, rest = m.group(1), m.group(2)
            text = rest.decode("ascii", "replace").replace("\\", " ").strip("() \t\r\n")
            names = [n.split()[0] for n in text.replace("\n", " ").split(",") if n.split()]
            if source is None:
                out.update(names)
                continue
            dotted = source.decode("ascii", "replace")
            level = len(dotted) - len(dotted.lstrip("."))
            base = absolute_module(dotted[level:] or None, level, module, is_package)
            if base is not None:
                out.add(base)
                out.update(f"{base}.{n}" for n in names if n != "*")
    return out


def _may_name(parts: list[bytes], at: int, home: bytes | None) -> bool:
    """Whether the module a `from` statement names (its dotted ``parts``; a relative one's
    first part is empty), up to its part ``at``, may be the project module ``home`` (None:
    any): a relative one may; an absolute one where its name is ``home`` or ends with it."""
    if home is None or not parts or parts[0] == b"":
        return True
    named = b".".join(parts[: at + 1])
    return named == home or named.endswith(b"." + home)


def may_bind(data: bytes, path: str, module: bytes, name: bytes) -> bool:
    """`ImportStatements.binds` of the file at ``path``, for one name."""
    return ImportStatements(data, path).binds(module, name)


class FileImports(NamedTuple):
    """What a file's import statements name, kept for every file a run reads (a compact form:
    a set of words per file held 13 MB over SGLang's 5,300 files)."""

    words: bytes  # the words of its import statements, each between spaces (or more)
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

    __slots__ = ("_search", "spaced", "words")

    def __init__(self, words: Iterable[bytes]) -> None:
        self.words = frozenset(words)
        few = len(self.words) <= _FEW_WORDS
        self.spaced = [(b" %s " % w, w) for w in self.words] if few else None
        # (a file's words searched once for any of them: a third of the time of a test each,
        # over the 1,800 files of vLLM's tree)
        self._search = (
            re.compile(b"|".join(re.escape(spaced) for spaced, _ in self.spaced)).search
            if self.spaced
            else None
        )

    def one_in(self, imports: FileImports) -> bool:
        """Whether a file's import statements name one of them."""
        if self._search is not None:
            return self._search(imports.words) is not None
        return not self.words.isdisjoint(imports.words.split())


def file_imports(data: bytes, path: str) -> FileImports:
    """The words of the import statements of the file at ``path`` (and, for ``from . import
    x``, the last part of the package it names: ``x`` may be one of its names), and whether
    it imports modules by call (`importlib.import_module`, `pytest.importorskip`)."""
    statements, text, by_call = _scanned(data)
    # (the ASCII words, as they come: a set of them, joined, cost half the reading's time of
    # working them out, over vLLM's 1,800 files)
    words = text.translate(TO_SPACES)
    if b". " in text or b".\t" in text:  # (a `from . import x` may be there: few files)
        packages = ImportStatements(data, path, statements).relative_packages()
        if packages:
            words += b" " + b" ".join(sorted(packages))
    return FileImports(b" %s " % words, by_call)


class AliasImports:
    """Whether a file may import one of a project's re-exports (``keys``: `module.name`, as
    `migrate_fi.analysis.resolver.ProjectAliases` has them): it contains the name, and an import
    statement of its names the last part of the name's module (`from pkg.quant import q`,
    `from . import quant`, `import pkg.quant as m`), or it imports modules by call
    (`importlib`) and writes every part of the module's name (`written_out`)."""

    def __init__(self, keys: Iterable[str]) -> None:
        self.names_in: dict[str, set[bytes]] = {}  # module -> its names
        self.modules_at: dict[bytes, set[str]] = {}  # last part of a module -> the modules
        for key in keys:
            module, name = export_parts(key)
            # (a file name that is not UTF-8 gives its bytes back: `os.fsencode`)
            last = module.rsplit(".", 1)[-1].encode("utf-8", "surrogateescape")
            self.names_in.setdefault(module, set()).add(name.encode("utf-8", "surrogateescape"))
            self.modules_at.setdefault(last, set()).add(module)
        self.modules = Words(self.modules_at)
        # (the names that are not ASCII: few or none, looked for as they are written)
        self.not_ascii = {n for names in self.names_in.values() for n in names if not n.isascii()}

    def imported_by(self, imports: FileImports, data: bytes, path: str) -> bool:
        """Whether the file at ``path``, of ``data``, whose import words are ``imports``, may
        import one: it names one, and an import statement may bind it (`ImportStatements`), or
        a module it imports by call may be that one's (`written_out`)."""
        if imports.dynamic:
            by_call = [
                n for m, names in self.names_in.items() if written_out(m, data) for n in names
            ]
            if _named(by_call, data):
                return True
        # (each module an import statement may name, by its last part, with its last part)
        named = [(last, m) for last in imports.among(self.modules) for m in self.modules_at[last]]
        if not named:
            return False
        possible: set[bytes] = set().union(*(self.names_in[m] for _, m in named))
        if any(n in data for n in self.not_ascii.intersection(possible)):
            return True  # (a name that is not ASCII, as it is written: no statement is read)
        if not _named(possible, data):
            return False
        statements = ImportStatements(data, path)
        return any(
            statements.binds(last, name, module)
            for last, module in sorted(named)
            for name in sorted(self.names_in[module])
            if name in data
        )

    def may_import(self, imports: FileImports) -> bool:
        """What a file's import words alone say (False: it imports none)."""
        return imports.dynamic or self.modules.one_in(imports)


def written_out(module: str, data: bytes) -> bool:
    """Whether a module that a file of ``data`` imports by call may be ``module`` (a project
    module, as its own file knows itself): a resolver follows only a call that writes the
    module's name out (`importlib.import_module("pkg.sub.mod")`, `pytest.importorskip`, a lazy
    import helper's literal arguments), and the attributes of what it returns (`.sub.mod`), so
    each part of the name is written in the file. (A file that imports by call only names it
    cannot follow, `import_module(name)`, is never analysed again for every re-export.)"""
    return all(part.encode("utf-8", "surrogateescape") in data for part in module.split("."))


def _named(names: Iterable[bytes], data: bytes) -> bool:
    """Whether one of ``names`` is in ``data``: an ASCII one as an identifier, another as it is
    written."""
    ascii_names = set()
    for n in names:
        if not n.isascii():
            if n in data:
                return True
        else:
            ascii_names.add(n)
    if not ascii_names:
        return False
    if len(ascii_names) <= _FEW_NAMES:  # (cheaper than collecting the identifiers)
        return names_one_of(data, ascii_names)
    return not identifiers(data).isdisjoint(ascii_names)
