"""Which files a run looks at.

Folders are walked; files given by name are always taken (even if ignored), like Ruff does.
While walking, `.gitignore` files (from the repository root down) and `.git/info/exclude` are
respected, as are `--exclude` patterns (gitignore syntax, relative to the current folder), and
these folders are never entered: version-control folders, virtualenvs (any folder holding a
`pyvenv.cfg`), `site-packages`, build output and tool caches.
"""

from __future__ import annotations

import fnmatch
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from migrate_fi.base import depends, patterns
from migrate_fi.base.files import read_regular
from migrate_fi.base.modules import PYTHON_SUFFIXES, TEMPORARY_SUFFIX, python_script

if TYPE_CHECKING:  # (pathspec is imported where a .gitignore is read: it costs start-up)
    import pathspec

__all__ = [
    "SEARCH_LIMIT",
    "SKIPPED_DIRS",
    "DiscoveryError",
    "discover",
    "find_upward",
    "is_temporary",
    "python_files",
    "tree_signature",
    "with_includes",
]

SKIPPED_DIRS = frozenset(
    {
        ".bzr",
        ".direnv",
        ".eggs",
        ".git",
        ".hg",
        ".ipynb_checkpoints",
        ".migrate-fi",
        ".mypy_cache",
        ".nox",
        ".pytest_cache",
        ".ruff_cache",
        ".svn",
        ".tox",
        ".venv",
        "__pycache__",
        "__pypackages__",
        "build",
        "dist",
        "node_modules",
        "site-packages",
        "venv",
    }
)


class DiscoveryError(Exception):
    pass


def is_temporary(name: str) -> bool:
    """A temporary file of ours (`.<name>.<random>.migrate-fi.tmp`), left if a run was killed."""
    return name.startswith(".") and name.endswith(TEMPORARY_SUFFIX)


class _Ignore:
    def __init__(self, base: str, spec: pathspec.GitIgnoreSpec) -> None:
        self.base = base  # the folder the patterns are relative to
        self.spec = spec

    def matches(self, path: str, is_dir: bool) -> bool:
        rel = os.path.relpath(path, self.base)
        if rel.startswith(".."):
            return False
        rel = rel.replace(os.sep, "/")
        return self.spec.match_file(rel + "/" if is_dir else rel)


def _ignore(_path: str) -> None:
    return None


class _Wanted:
    """Which files a run reads: by suffix, by a glob on the name (``Dockerfile*``), or by a
    glob on the end of the path when the pattern has a ``/`` (``requirements/*.txt``)."""

    def __init__(self, suffixes: tuple[str, ...], patterns: Sequence[str]) -> None:
        # (".py" stands for Python files: stubs too, scripts without a suffix that start with
        # a Python shebang, `migrate_fi.base.modules.is_python_path`, and notebooks' code cells,
        # `migrate_fi.editing.notebooks`)
        self.scripts = ".py" in suffixes
        self.suffixes = (*suffixes, ".pyi", ".ipynb") if self.scripts else suffixes
        names = [p for p in patterns if "/" not in p]
        paths = [p for p in patterns if "/" in p]
        self.names = re.compile("|".join(fnmatch.translate(p) for p in names)) if names else None
        self.paths = (
            re.compile("|".join(fnmatch.translate("*/" + p) for p in paths)) if paths else None
        )
        # (what a name or path a pattern matches must end or start with: most files are ruled
        # out by these two tests, not by the patterns' regular expression: a third of what
        # testing a tree's paths cost)
        self.name_ends, self.name_starts = _literal_ends(names, starts=True)
        self.path_ends, _ = _literal_ends(paths, starts=False)
        # (a spec that takes requirements files takes the files they include, whatever their
        # name: `-r base.txt`, `_INCLUDED`)
        self.requirements = any("requirements" in p and p.endswith(".txt") for p in patterns)

    def __call__(self, path: str) -> bool:
        return self.takes(os.path.basename(path), path)

    def takes(self, name: str, path: str) -> bool:
        """`__call__` of a path whose last part, ``name``, is known."""
        if name.endswith(self.suffixes):
            return True
        if self.requirements and _INCLUDED and os.path.abspath(path) in _INCLUDED:
            return True
        if self.scripts and "." not in name and python_script(path):
            return True
        if (
            self.names is not None
            and (name.endswith(self.name_ends) or name.startswith(self.name_starts))
            and self.names.match(name)
        ):
            return True
        if self.paths is None:
            return False
        slashed = "/" + path.replace(os.sep, "/")
        return slashed.endswith(self.path_ends) and self.paths.match(slashed) is not None


def _literal_ends(patterns: Sequence[str], starts: bool) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What a string one of ``patterns`` (globs) matches ends with, or (``starts``: for a
    pattern that ends with a wildcard) starts with: the text after its last wildcard, or before
    its first; ``("",)`` (anything) for a pattern that has neither."""
    ends: list[str] = []
    heads: list[str] = []
    for pattern in patterns:
        last = max(pattern.rfind(c) for c in "*?[]")
        first = min((i for i in map(pattern.find, "*?[]") if i >= 0), default=len(pattern))
        if last + 1 < len(pattern):
            ends.append(pattern[last + 1 :])
        elif starts and first > 0:
            heads.append(pattern[:first])
        else:
            return ("",), ()
    return tuple(ends), tuple(heads)


def wanted_files(suffixes: tuple[str, ...], patterns: Sequence[str] = ()) -> _Wanted:
    """The test that says whether a path is one of the files a run reads."""
    return _Wanted(suffixes, patterns)


def _read_ignore(base: str, filename: str) -> _Ignore | None:
    try:
        lines = read_regular(filename).decode("utf-8", errors="replace").splitlines()
    except OSError:
        return None
    if not any(line.strip() and not line.startswith("#") for line in lines):
        return None
    import pathspec

    try:
        return _Ignore(base, pathspec.GitIgnoreSpec.from_lines(lines))
    except ValueError:  # (a line git cannot read either, `x\\` say: it matches nothing there)
        return _Ignore(base, pathspec.GitIgnoreSpec.from_lines(_readable_patterns(lines)))


def _readable_patterns(lines: list[str]) -> list[str]:
    """The lines of an ignore file that are patterns pathspec reads (git passes over the
    others: they match nothing)."""
    import pathspec

    out = []
    for line in lines:
        try:
            pathspec.GitIgnoreSpec.from_lines([line])
        except ValueError:
            continue
        out.append(line)
    return out


def find_upward(folder: str, markers: Iterable[str]) -> str | None:
    """The nearest folder from ``folder`` upward that holds one of ``markers``."""
    markers = tuple(markers)
    current = os.path.abspath(folder)
    while True:
        if any(_exists(os.path.join(current, m)) for m in markers):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def _exists(path: str) -> bool:
    depends.watch(path)  # (a run replayed relies on it: `migrate_fi.run.warm`)
    return os.path.exists(path)


def _repo_root(folder: str) -> str | None:
    return find_upward(folder, (".git",))


def _ancestor_ignores(folder: str) -> list[_Ignore]:
    """`.gitignore` files from the repository root down to (not including) ``folder``."""
    root = _repo_root(folder)
    if root is None:
        return []
    out: list[_Ignore] = []
    exclude = _read_ignore(root, os.path.join(root, ".git", "info", "exclude"))
    if exclude:
        out.append(exclude)
    chain = []
    current = os.path.dirname(folder)
    while len(current) >= len(root):
        chain.append(current)
        if current == root:
            break
        current = os.path.dirname(current)
    for d in reversed(chain):
        ig = _read_ignore(d, os.path.join(d, ".gitignore"))
        if ig:
            out.append(ig)
    return out


def discover(
    paths: Iterable[str],
    suffixes: tuple[str, ...] = (".py",),
    exclude: Iterable[str] = (),
    respect_gitignore: bool = True,
    excludes_at: Sequence[tuple[str, Sequence[str]]] = (),
    patterns: Sequence[str] = (),
    on_error: Callable[[str, OSError], None] | None = None,
    on_temporary: Callable[[str], None] | None = None,
    on_link: Callable[[str], None] | None = None,
) -> Iterator[str]:
    """Yield the files to look at, as absolute paths, each once, in a stable order.

    ``exclude`` patterns are relative to the current folder; ``excludes_at`` gives more
    patterns with the folder they are relative to (the configuration file's). A file is taken
    when its name ends with one of ``suffixes`` or matches one of ``patterns`` (file-name globs
    such as ``Dockerfile*``). A folder that cannot be read is never skipped in silence: it goes
    to ``on_error`` (by default, `DiscoveryError` is raised). Temporary files an interrupted run
    left go to ``on_temporary``. Symbolic links are never followed, in a walked folder or given
    by name (a link may lead out of the tree, and a write would go through it): those that
    would have been taken go to ``on_link``. A file reached twice (its own path and through a
    folder given too) is yielded once."""

    def failed(folder: str, exc: OSError) -> None:
        if on_error is None:
            raise DiscoveryError(f"{folder}: cannot read this folder ({exc.strerror})")
        on_error(folder, exc)

    wanted = wanted_files(suffixes, patterns)
    user = [
        _Ignore(base, _spec(patterns))
        for base, patterns in [(os.getcwd(), list(exclude)), *excludes_at]
        if patterns
    ]
    seen: set[str] = set()
    link = on_link or _ignore
    for given in paths:
        path = os.path.abspath(given)
        if not os.path.lexists(path):
            raise DiscoveryError(f"{given}: no such file or folder")
        if os.path.islink(path):
            link(path)
            continue
        if os.path.isfile(path):
            if path not in seen:
                seen.add(path)
                yield path
                if wanted.requirements:
                    yield from _includes(path, seen)
            continue
        if not os.path.isdir(path):
            raise DiscoveryError(f"{given}: not a regular file or folder")
        ignores = _ancestor_ignores(path) if respect_gitignore else []
        for found in _walk(
            path, wanted, ignores, user, respect_gitignore, failed, on_temporary or _ignore, link
        ):
            if found not in seen:
                seen.add(found)
                yield found
                if wanted.requirements:  # (the files it includes, whatever their name)
                    yield from _includes(found, seen, path)


def _walk(
    top: str,
    wanted: _Wanted,
    ignores: list[_Ignore],
    user: list[_Ignore],
    respect_gitignore: bool,
    failed: Callable[[str, OSError], None],
    temporary: Callable[[str], None],
    link: Callable[[str], None],
) -> Iterator[str]:
    """The files under ``top`` that ``wanted`` takes, each folder's in name order, then its
    folders' in name order (depth first). A loop over a stack of folders, not a generator
    each: every file passed up through one per level (a walk of vLLM's tree took 20 ms so,
    against 6 ms for `os.walk`)."""
    stack = [(top, ignores)]
    while stack:
        folder, ignores = stack.pop()
        if respect_gitignore:
            own = _read_ignore(folder, os.path.join(folder, ".gitignore"))
            if own:
                ignores = [*ignores, own]
        try:
            entries = sorted(os.scandir(folder), key=_name)
        except OSError as exc:
            failed(folder, exc)
            continue
        excluding = [*user, *ignores]
        subdirs = []
        for entry in entries:
            name = entry.name
            if entry.is_symlink():
                # never follow links out of the tree, never write through them (said, when the
                # link leads to a folder or to a file that would have been taken, or nowhere: a
                # loop of links)
                try:
                    to_folder = entry.is_dir()
                except OSError:
                    to_folder = True  # (ELOOP: a link that leads back to itself)
                if (to_folder or wanted.takes(name, entry.path)) and not any(
                    ig.matches(entry.path, False) for ig in excluding
                ):
                    link(entry.path)
                continue
            if entry.is_dir():
                if name not in SKIPPED_DIRS:
                    subdirs.append(entry.path)
            elif entry.is_file():
                if is_temporary(name):
                    temporary(entry.path)
                elif wanted.takes(name, entry.path):
                    path = entry.path
                    if excluding and any(ig.matches(path, False) for ig in excluding):
                        continue
                    yield path
        below = []
        for path in subdirs:
            if os.path.exists(os.path.join(path, "pyvenv.cfg")):
                continue  # a virtualenv, whatever its name
            if excluding and any(ig.matches(path, True) for ig in excluding):
                continue
            below.append((path, ignores))
        stack += reversed(below)


def _name(entry: os.DirEntry[str]) -> str:
    return entry.name


SEARCH_LIMIT = 20_000  # a search root with more files is not searched (callers: unknown)


# (a run asks a few roots per project: 16 copies of SGLang's tree ask 32, each twice or more)
@lru_cache(maxsize=256)
def python_files(root: str) -> tuple[str, ...]:
    """The Python files a search for the callers of a function reads under ``root``: every
    folder but hidden ones and `SKIPPED_DIRS`, .gitignore or not (empty: over `SEARCH_LIMIT`)."""
    found: list[str] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.startswith("."))
        found += [os.path.join(folder, f) for f in sorted(files) if f.endswith(PYTHON_SUFFIXES)]
        if len(found) > SEARCH_LIMIT:
            return ()
    return tuple(found)


@lru_cache(maxsize=256)
def tree_signature(root: str) -> str:
    """A digest of the size, modification and change times and inode of every file
    `python_files` finds under ``root`` (while it is the same, a search there holds:
    `migrate_fi.codemods._callers`). The change time is git's safeguard: no tool sets it, so a
    file rewritten at the same size with its modification time put back (`touch -r`, `cp -p`,
    `rsync -a`, a file made again on the same inode) still changes the digest."""
    return tree_signature_with(root, {})


@depends.on_forget_stats
def _forget_trees() -> None:  # (a run in the same process walks the roots again)
    python_files.cache_clear()
    tree_signature.cache_clear()


def tree_signature_with(root: str, stats: Mapping[str, depends.Stat]) -> str:
    """`tree_signature`, with the stats of ``stats`` for those files (what it was before they
    changed, when no other file did)."""
    h = depends.blake2b(digest_size=16)
    now = time.time_ns()
    for path in python_files(root) or ("(too many files)",):
        st = stats.get(path) or depends.stat(path)  # (the walk asked most of them)
        if st is None:
            h.update(f"{path}\0-\0".encode("utf-8", "surrogateescape"))
            continue
        if not depends.settled(st, now):
            return f"changed just now: {time.time_ns()}"  # never the same: not reused
        h.update(
            f"{path}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}\0{st.st_ctime_ns}\0".encode(
                "utf-8", "surrogateescape"
            )
        )
    return h.hexdigest()


_INCLUDE = patterns.compile(
    r"^\s*(?:-r|--requirement|-c|--constraint)(?:\s*=\s*|\s+)(\S+)", re.MULTILINE
)


def with_includes(paths: list[str]) -> list[str]:
    """``paths`` and the files that requirements files among them include (``-r other.txt``,
    ``-c constraints.txt``, relative to the including file, recursively): a pin there is the
    project's as much. Links are not followed (see `migrate_fi.project.discovery.discover`)."""
    seen = {os.path.abspath(p) for p in paths}
    out = list(paths)
    for p in paths:
        if os.path.isfile(p):
            out += _includes(p, seen)
    return out


# files a requirements file of this run includes (``-r base.txt``), as absolute paths: a spec
# that takes requirements files takes them too (`_Wanted`), whatever their name
_INCLUDED: set[str] = set()


@depends.on_forget_stats
def _forget_includes() -> None:  # (a run finds them again)
    _INCLUDED.clear()


def _includes(path: str, seen: set[str], root: str | None = None) -> list[str]:
    """The files the requirements file at ``path`` includes, recursively, that ``seen`` does
    not hold yet (added to it; under the folder ``root`` only, when given): each noted as
    included. Links are not followed; an include that does not exist is watched (it may
    appear: a replayed run relies on it)."""
    if not path.endswith((".txt", ".in")):
        return []
    out: list[str] = []
    todo = [path]
    while todo:
        including = todo.pop()
        try:
            text = read_regular(including).decode("utf-8", errors="replace")
        except OSError:
            continue  # (the run itself says that it cannot be read)
        for m in _INCLUDE.finditer(text):
            found = os.path.join(os.path.dirname(including), m.group(1))
            real = os.path.abspath(found)
            depends.watch(real)
            if real in seen or not os.path.isfile(real) or os.path.islink(real):
                continue
            if root is not None and not real.startswith(os.path.join(root, "")):
                continue  # (outside the folder walked: not this run's to change)
            seen.add(real)
            _INCLUDED.add(real)
            out.append(found)
            todo.append(found)
    return out


def _spec(patterns: Iterable[str]) -> pathspec.GitIgnoreSpec:
    """The user's exclude patterns (`--exclude`, the configuration's `exclude`) as one spec;
    `DiscoveryError` naming a pattern that is not one."""
    import pathspec

    patterns = list(patterns)
    try:
        return pathspec.GitIgnoreSpec.from_lines(patterns)
    except ValueError:
        bad = next(p for p in patterns if not _readable_patterns([p]))
        raise DiscoveryError(f"exclude pattern {bad!r} is not a gitignore-style pattern") from None
