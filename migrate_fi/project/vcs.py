"""What git says about the files of a run: those changed since a ref (`--changed-since`), and
the uncommitted changes `apply` refuses to mix a migration into (`--allow-dirty`).

git is run as a program (`git -C <folder> ...`, NUL-separated output), never through a library;
no git, or a folder outside any repository, is a `VcsError` for `--changed-since` and "nothing
to protect" for the dirty-tree check.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable

__all__ = [
    "VcsError",
    "changed_since",
    "dirty_files",
    "export_tree",
    "head_commit",
    "repository_root",
]

RECORD_FOLDER = ".migrate-fi"  # (`migrate_fi.project.record.FOLDER`)


class VcsError(Exception):
    """git cannot answer: one line, for the user."""


def _git(folder: str, *args: str) -> str:
    try:
        proc = subprocess.run(
            ["git", "-C", folder, *args],
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="surrogateescape",
            check=False,
        )
    except FileNotFoundError:
        raise VcsError("git is not installed (or not on PATH)") from None
    if proc.returncode != 0:
        message = proc.stderr.strip().splitlines()
        raise VcsError(message[-1] if message else f"git {args[0]} failed")
    return proc.stdout


def _folder(path: str) -> str:
    path = os.path.abspath(path)
    return path if os.path.isdir(path) else os.path.dirname(path)


def repository_root(path: str) -> str | None:
    """The top of the git work tree that holds ``path``; None outside one (or without git)."""
    try:
        return os.path.realpath(_git(_folder(path), "rev-parse", "--show-toplevel").strip())
    except VcsError:
        return None


def changed_since(ref: str, paths: Iterable[str]) -> set[str]:
    """Real paths of the files under ``paths``' repositories that differ from ``ref`` (committed
    since, staged or not) or are untracked and not ignored; deleted files are not among them."""
    out: set[str] = set()
    seen: set[str] = set()
    for path in paths:
        root = repository_root(path)
        if root is None:
            raise VcsError(f"--changed-since needs a git repository, and {path} is not in one")
        if root in seen:
            continue
        seen.add(root)
        try:
            _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
        except VcsError:
            raise VcsError(f"--changed-since: {ref!r} is not a commit of {root}") from None
        changed = _git(root, "diff", "--name-only", "-z", "--diff-filter=d", ref, "--")
        untracked = _git(root, "ls-files", "--others", "--exclude-standard", "-z")
        for name in (changed + untracked).split("\0"):
            if name:
                out.add(os.path.realpath(os.path.join(root, name)))
    return out


def dirty_files(paths: Iterable[str]) -> list[str] | None:
    """Files under ``paths`` with uncommitted changes (modified, staged, untracked and not
    ignored), as paths relative to the current folder, leaving out migrate-fi's own record;
    None when no path is in a git repository."""
    out: list[str] = []
    any_repo = False
    for path in paths:
        root = repository_root(path)
        if root is None:
            continue
        any_repo = True
        status = _git(
            root,
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--",
            os.path.relpath(os.path.realpath(path), root),
        )
        entries = status.split("\0")
        i = 0
        while i < len(entries):
            entry = entries[i]
            i += 1
            if len(entry) < 4:
                continue
            code, name = entry[:2], entry[3:]
            if code[0] in "RC":  # a rename or copy: the source path follows
                i += 1
            if f"/{RECORD_FOLDER}/" in f"/{name}":
                continue  # migrate-fi's own record of the migration, rewritten by every apply
            shown = os.path.relpath(os.path.join(root, name))
            if shown not in out:
                out.append(shown)
    return out if any_repo else None


def head_commit(path: str) -> str | None:
    """The commit checked out in the repository that holds ``path`` (its full hash); None
    outside a repository, or in one with no commit yet."""
    root = repository_root(path)
    if root is None:
        return None
    try:
        return _git(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}").strip() or None
    except VcsError:
        return None


def export_tree(root: str, ref: str, into: str) -> str:
    """Write the files of commit ``ref`` of the repository at ``root`` into the empty folder
    ``into`` (`git archive`): the tree as it was, for a run over it; the commit's full hash.
    Raises `VcsError` with what to do when the commit is not in this clone (a shallow one)."""
    import tarfile
    import tempfile

    try:
        commit = _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").strip()
    except VcsError:
        raise VcsError(
            f"commit {ref} is not in the repository at {root} (a shallow clone?): fetch it"
            " (`git fetch --unshallow`, or `fetch-depth: 0` in actions/checkout)"
        ) from None
    with tempfile.TemporaryFile() as archive:
        try:
            proc = subprocess.run(
                ["git", "-C", root, "archive", "--format=tar", commit],
                stdout=archive,
                stderr=subprocess.PIPE,
                check=False,
            )
        except FileNotFoundError:
            raise VcsError("git is not installed (or not on PATH)") from None
        if proc.returncode != 0:
            lines = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            raise VcsError(lines[-1] if lines else "git archive failed")
        archive.seek(0)
        with tarfile.open(fileobj=archive) as tar:
            if hasattr(tarfile, "data_filter"):  # (Python 3.10.12+, 3.11.4+)
                tar.extractall(into, filter="data")
            else:  # pragma: no cover
                tar.extractall(into)  # (git's own archive of a commit)
    return commit
