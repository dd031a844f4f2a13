"""Which FlashInfer APIs a project uses, where, and whether each changed between two releases.

The inventory behind `migrate-fi usage`: every call of a FlashInfer callable and every import
of a FlashInfer name in the project's Python files, resolved as the rules resolve them (aliases,
module attributes, instances, partials), grouped by the definition they reach, and classified
with the release data (`differ.diff_releases`): what changed, or unchanged. It reports facts and
decides nothing: the rules do that.
"""

from __future__ import annotations

import ast
import os
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field

from migrate_fi.analysis.calls import callee_calls
from migrate_fi.analysis.resolver import NameResolver, ProjectAliases
from migrate_fi.api.differ import Api, api_for, diff_releases
from migrate_fi.api.notes import Behaviour, Deprecated, Note, notes_in_range
from migrate_fi.api.paths import ApiPath, is_flashinfer
from migrate_fi.base.gpus import said as said_gpus
from migrate_fi.base.modules import display_path, in_flashinfer, is_test_file, module_identity
from migrate_fi.editing.sources import SourceError, decode_source
from migrate_fi.framework.rule import Rule
from migrate_fi.project.discovery import discover

__all__ = ["ApiUse", "Inventory", "in_tests", "inventory"]

_TEST_FOLDERS = frozenset({"test", "tests", "testing"})
# changes that can touch a call written for the old release (a new optional parameter cannot)
_AFFECTING = frozenset(
    {
        "positional",
        "deprecated-positional",
        "renamed",
        "param-removed",
        "param-required",
        "default",
        "keyword-only",
        "moved",
        "removed",
        "enum-value",
        "enum-removed",
    }
)


@dataclass
class ApiUse:
    """One FlashInfer API (one definition) and the project's uses of it."""

    api: str  # the public path shown (the shortest one the project wrote)
    sites: list[tuple[str, int, str]] = field(default_factory=list)  # (path, line, call|import)
    tests: int = 0  # sites in test code
    changes: list[tuple[str, str]] = field(default_factory=list)  # (kind, detail)
    # the releases in the range whose calls of it may bind otherwise (from the prefilter index;
    # empty when only a default, an enum or a hand rule's change concerns it)
    releases: list[str] = field(default_factory=list)
    # what the range's release notes say of it (`migrate_fi.api.notes`): every kind, also those
    # `check` leaves out (a default that keeps what the call does, numerics)
    notes: list[Note] = field(default_factory=list)

    @property
    def files(self) -> int:
        return len({p for p, _, _ in self.sites})

    def to_json(self) -> dict[str, object]:
        return {
            "api": self.api,
            "sites": len(self.sites),
            "files": self.files,
            "in_tests": self.tests,
            "changes": [{"kind": k, "detail": d} for k, d in self.changes],
            "releases": self.releases,
            "notes": [_note_json(n) for n in self.notes],
            "where": [{"path": p, "line": n, "use": u} for p, n, u in self.sites],
        }


def _note_json(note: Note) -> dict[str, object]:
    """A release note as `usage --output-format json` gives it."""
    out: dict[str, object] = {"release": note.release, "source": note.source}
    if isinstance(note, Behaviour):
        out.update(table="behaviour", kind=note.kind, what=note.what)
        if note.parameter is not None:
            out["parameter"] = note.parameter
        if note.gpus is not None:  # (the compute capabilities it concerns, 90 for SM90)
            out["gpus"] = sorted(note.gpus)
    elif isinstance(note, Deprecated):
        out["table"] = "deprecated"
        if note.parameter is not None:
            out["parameter"] = note.parameter
        out["why"] = note.why
        if note.moved_to:
            out["moved_to"] = note.moved_to
        if note.omitted:  # (what warns is leaving it out)
            out["omitted"] = True
        if note.positional:  # (what warns is passing it, or any argument, by position)
            out["positional"] = True
    else:
        out.update(table="same", parameter=note.parameter, old=note.old, new=note.new)
        out["why"] = note.why
    return out


def _note_line(note: Note) -> str:
    """A release note as `usage` says it, on one line."""
    if isinstance(note, Behaviour):
        gpus = f" ({said_gpus(note.gpus)})" if note.gpus is not None else ""
        said = f"{note.kind}{gpus}: {note.what}"
    elif isinstance(note, Deprecated):
        where = f" (pass it to {note.moved_to})" if note.moved_to else ""
        what = (
            f"leaving {note.parameter}= out"
            if note.omitted
            else "passing arguments by position"
            if note.parameter is None
            else f"passing {note.parameter}= by position"
            if note.positional
            else f"{note.parameter}="
        )
        said = f"deprecated: {what}{where}: {note.why}"
    else:
        said = f"same behaviour: default of {note.parameter} {note.old} -> {note.new}: {note.why}"
    return f"{note.release} note, {said} [{note.source}]"


@dataclass
class Inventory:
    from_version: str
    to_version: str
    apis: list[ApiUse]
    files_scanned: int
    files_parsed: int
    unreadable: list[str]  # `path: reason`, for files that could not be read or parsed

    @property
    def changed(self) -> list[ApiUse]:
        return [a for a in self.apis if a.changes or a.notes]

    @property
    def unchanged(self) -> list[ApiUse]:
        return [a for a in self.apis if not a.changes and not a.notes]


def in_tests(path: str) -> bool:
    """A test file, or a file in a test folder (``path`` relative to the project)."""
    parts = set(os.path.normpath(path).split(os.sep)[:-1])
    return is_test_file(path) or bool(parts & _TEST_FOLDERS)


def _within(path: str, roots: list[str]) -> str:
    """``path`` relative to the given folder it was found in (a test folder above the project
    does not make its files tests)."""
    for root in roots:
        folder = root if os.path.isdir(root) else os.path.dirname(root)
        if path.startswith(folder.rstrip(os.sep) + os.sep):
            return os.path.relpath(path, folder)
    return os.path.basename(path)


def _uses(resolver: NameResolver) -> Iterable[tuple[str, int, str]]:
    """(FlashInfer path, line, call|import) for each use in one file."""
    for node in resolver.imports:
        if isinstance(node, ast.ImportFrom):
            module = resolver.absolute_module(node.module, node.level)
            if module is not None and is_flashinfer(module):
                for alias in node.names:
                    if alias.name != "*":
                        yield f"{module}.{alias.name}", node.lineno, "import"
        else:
            for alias in node.names:
                if is_flashinfer(alias.name):
                    yield alias.name, node.lineno, "import"
    for view in callee_calls(resolver):
        quals = resolver.resolve(view.func, view.func_scope).qualnames
        paths = sorted(q for q in quals if is_flashinfer(q))
        if len(paths) == 1 and len(quals) == 1:
            yield paths[0], view.node.lineno, "call"


def _key(api: Api, path: str) -> str:
    return api.key(path) or api.canonical(path) or path


def _known(api: Api, path: str) -> bool:
    """Whether ``path`` is part of ``api``: a name of a FlashInfer module (private ones too: a
    project that calls them uses FlashInfer), or a method of one of its classes; not a method
    of what a call returned (``flashinfer.bmm_fp8().view``: the returned tensor's; the data
    knows no function's return type, so a method of an object a function returns is left out
    too, its call counted)."""
    return "()" not in path or api.exists(path) is True or api.callable(path) is not None


def inventory(
    paths: Iterable[str],
    from_version: str,
    to_version: str,
    rules: Iterable[type[Rule]] = (),
) -> Inventory:
    """The FlashInfer APIs the Python files under ``paths`` use, with what changed in each: from
    the release data, and from ``rules`` (the run's), each for the APIs it concerns. A call
    through the project's own re-exports of FlashInfer names (``from flashinfer import
    fp4_quantize as q`` in one module, ``q(...)`` in another; vLLM's lazy-import wrappers) counts
    as a use of what it reaches, as `check` reads it: the files that may import them are read
    again with them, until no new one appears."""
    from migrate_fi.run.pipeline import star_names
    from migrate_fi.run.reexports import MAX_ROUNDS, importers, merge_exports
    from migrate_fi.run.workers import SourceFile

    old, new = api_for(from_version), api_for(to_version)
    scanned = 0
    unreadable: list[str] = []
    roots = [os.path.abspath(p) for p in paths]
    files: dict[str, bytes] = {}  # the files read for their uses, by path
    others: list[str] = []  # the Python files that never name FlashInfer
    for path in discover(list(paths)):
        scanned += 1
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError as exc:
            unreadable.append(f"{display_path(path)}: {exc.strerror}")
            continue
        if b"flashinfer" not in data:
            others.append(path)
        elif not in_flashinfer(module_identity(path)[0]):
            files[path] = data  # (FlashInfer's own source is the API, not a use of it)
    uses: dict[str, list[tuple[str, int, str]]] = {}
    exports: dict[str, dict[str, str]] = {}
    # each file read: the re-exports it was read with, and the names its reading followed
    # through them (`NameResolver.asked`: where the new ones follow each the same way, reading
    # it again gives the same uses)
    read_with: dict[str, tuple[ProjectAliases, frozenset[str]]] = {}
    broken: set[str] = set()
    stars = star_names(from_version)
    aliases = ProjectAliases({})
    todo = list(files)
    for _ in range(MAX_ROUNDS):
        for path in todo:
            module, is_package = module_identity(path)
            try:
                text = decode_source(files[path]).text
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    tree = ast.parse(text, filename=path)
            except (SourceError, SyntaxError, ValueError, RecursionError) as exc:
                if path not in broken:
                    broken.add(path)
                    unreadable.append(f"{display_path(path)}: cannot parse ({type(exc).__name__})")
                continue
            resolver = NameResolver(tree, module, is_package, aliases.aliases)
            uses[path] = list(_uses(resolver))
            exports[path] = resolver.exports(stars)
            read_with[path] = (aliases, frozenset(resolver.asked))
            resolver.release()
        found = merge_exports(exports.values(), None)
        if found == aliases.aliases:
            break
        aliases = ProjectAliases(found)
        candidates = [SourceFile(data, path, ()) for path, data in files.items()]
        again = importers(found, candidates, others)
        for f in again:
            files.setdefault(f.path, f.data)
        todo = [f.path for f in again if _changed_by(aliases, read_with.get(f.path))]
    by_key: dict[str, ApiUse] = {}
    for path in sorted(uses):
        shown = display_path(path)
        test = in_tests(_within(path, roots))
        for api, line, use in uses[path]:
            if use == "import" and (old.canonical(api) in old.modules or api in old.modules):
                continue  # a module: what is called from it is counted
            if not _known(old, api) and not _known(new, api):
                continue  # (`flashinfer.bmm_fp8().view`: a method of what a call returned)
            key = _key(old, api)
            entry = by_key.setdefault(key, ApiUse(api))
            if (len(api), api) < (len(entry.api), entry.api):
                entry.api = api
            entry.sites.append((shown, line, use))
            entry.tests += test
    parsed = len(uses)
    changes: dict[str, list[tuple[str, str]]] = {}
    for change in diff_releases(from_version, to_version):
        if change.kind not in _AFFECTING:
            continue
        said = changes.setdefault(_key(old, change.symbol), [])
        if (change.kind, change.detail) not in said:  # (one enum under five paths: once)
            said.append((change.kind, change.detail))
    for rule in rules:
        for key in sorted({_key(old, api) for api in rule.concerns}):
            changes.setdefault(key, []).append((rule.code, rule.summary))
    noted: dict[str, list[Note]] = {}
    for note in notes_in_range(from_version, to_version):
        noted.setdefault(_key(old, note.api), []).append(note)
    for key, entry in by_key.items():
        entry.sites.sort()
        entry.changes = changes.get(key, [])
        entry.notes = noted.get(key, [])
        if entry.changes:
            entry.releases = _releases(old, entry.api, from_version, to_version)
    apis = sorted(by_key.values(), key=lambda a: (not a.changes and not a.notes, a.api))
    return Inventory(from_version, to_version, apis, scanned, parsed, unreadable)


def _changed_by(
    aliases: ProjectAliases, read: tuple[ProjectAliases, frozenset[str]] | None
) -> bool:
    """Whether a file read with the re-exports and lookups ``read`` (None: never read) may
    give other uses with ``aliases``: a name it followed leads elsewhere now."""
    if read is None:
        return True
    before, asked = read
    return any(before.follow(q) != aliases.follow(q) for q in asked)


def _releases(old: Api, api: str, from_version: str, to_version: str) -> list[str]:
    """The releases after ``from_version`` up to ``to_version`` that changed how calls of
    ``api`` bind (the prefilter index names them per pair of releases)."""
    from migrate_fi.api.index import changed_in
    from migrate_fi.base.versions import parse_version

    path = ApiPath(api)
    named = path.owner if path.is_method else api
    lo, hi = parse_version(from_version), parse_version(to_version)
    found = changed_in(named) or frozenset()
    return sorted((v for v in found if lo < parse_version(v) <= hi), key=parse_version)


def render(found: Inventory) -> str:
    """The inventory as text: changed APIs first, each with its sites' count and changes."""
    lines = [
        f"FlashInfer APIs used: {len(found.apis)} ({found.from_version} -> {found.to_version}):"
        f" {len(found.changed)} changed, {len(found.unchanged)} unchanged;"
        f" {found.files_scanned} files scanned, {found.files_parsed} parsed"
    ]
    for title, group in (("Changed", found.changed), ("Unchanged", found.unchanged)):
        if not group:
            continue
        lines.append(f"{title}:")
        for a in group:
            tests = f", {a.tests} in tests" if a.tests else ""
            files = "file" if a.files == 1 else "files"
            sites = "site" if len(a.sites) == 1 else "sites"
            lines.append(f"  {a.api}: {len(a.sites)} {sites} in {a.files} {files}{tests}")
            if a.releases:
                lines.append(f"    changed in {', '.join(a.releases)}")
            for kind, detail in a.changes:
                lines.append(f"    {kind}: {detail}")
            for note in a.notes:
                lines.append(f"    {_note_line(note)}")
            first = a.sites[0]
            lines.append(f"    first at {first[0]}:{first[1]}")
    for problem in found.unreadable:
        lines.append(f"not read: {problem}")
    return "\n".join(lines) + "\n"
