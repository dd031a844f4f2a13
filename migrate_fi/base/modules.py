"""Where a file sits: the module name it is imported as, and the path shown to the user."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from functools import lru_cache

from migrate_fi.base import depends

__all__ = [
    "PYTHON_SUFFIXES",
    "TEMPORARY_SUFFIX",
    "absolute_module",
    "display_path",
    "display_paths",
    "enclosing_packages",
    "export_parts",
    "in_flashinfer",
    "is_python_path",
    "is_test_file",
    "module_identity",
    "module_name_for_path",
    "splits",
]


# A temporary file of ours: `.<name>.<random>.migrate-fi.tmp` beside the file it replaces.
TEMPORARY_SUFFIX = ".migrate-fi.tmp"
PYTHON_SUFFIXES = (".py", ".pyi")  # sources and stubs; scripts without a suffix by shebang
_SHEBANG = re.compile(rb"^#![^\n]*\bpython[0-9.]*\b")


def is_python_path(path: str) -> bool:
    """A Python file: ``.py``, a ``.pyi`` stub, or a script without a suffix whose first line
    runs Python (``#!/usr/bin/env python3``)."""
    if path.endswith(PYTHON_SUFFIXES):  # (its name's end: most files a run meets)
        return True
    name = os.path.basename(path)
    return "." not in name and python_script(path)


def is_test_file(path: str) -> bool:
    """A test module as pytest collects it by default: ``test_*.py`` or ``*_test.py``."""
    name = os.path.basename(path)
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


@lru_cache(maxsize=4096)
def python_script(path: str) -> bool:
    """Whether the file at ``path`` starts with a Python shebang (False where it cannot be
    read: a run that reads it says why)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(256)
    except OSError:
        return False
    return _SHEBANG.match(head) is not None


def display_path(path: str) -> str:
    """Relative to the current folder when inside it (so `git apply` takes our diffs)."""
    return _shown(path, os.getcwd())


def display_paths(paths: list[str]) -> list[str]:
    """`display_path` of each of ``paths``, the current folder asked once (a run shows the
    tens of thousands of files a large tree has that no rule reads: half the time went in
    asking it again for each)."""
    cwd = os.getcwd()
    # (each folder worked out once: 16 copies of SGLang's tree have 4,000 folders, more than
    # `_display_folder` keeps, and asked in the walk's order they missed it every time)
    folders: dict[str, str | None] = {}
    out = []
    for path, (folder, name) in zip(paths, splits(paths), strict=True):
        if not folder or not name:
            out.append(_display_path(path, cwd))
            continue
        try:
            shown = folders[folder]
        except KeyError:
            shown = folders[folder] = _folder_shown(folder, cwd)
        out.append(path if shown is None else shown + name)
    return out


def splits(paths: Iterable[str]) -> Iterator[tuple[str, str]]:
    """`os.path.split` of each of ``paths``, the folder worked out once per run of paths in
    the same folder, as a walk lists them (the text up to a path's last separator decides
    it: a third of the cost of splitting each)."""
    if os.altsep:  # (two separators: each path split)
        yield from map(os.path.split, paths)
        return
    head, folder = None, ""
    for path in paths:
        cut = path.rfind(os.sep) + 1
        if head is None or len(head) != cut or not path.startswith(head):
            head, folder = path[:cut], os.path.dirname(path)
        yield folder, path[cut:]


def _shown(path: str, cwd: str) -> str:
    folder, name = os.path.split(path)
    if not folder or not name:
        return _display_path(path, cwd)
    shown = _display_folder(folder, cwd)  # (a run shows thousands of files, few folders)
    return path if shown is None else shown + name


@lru_cache(maxsize=1024)
def _display_folder(folder: str, cwd: str) -> str | None:
    """`_folder_shown`, kept for the folders of the files shown one at a time."""
    return _folder_shown(folder, cwd)


def _folder_shown(folder: str, cwd: str) -> str | None:
    """How the files of ``folder`` are shown: the prefix of their name (None: as given)."""
    probe = os.path.join(folder, "_")
    shown = _display_path(probe, cwd)
    return None if shown == probe else shown[:-1]


def _display_path(path: str, cwd: str) -> str:
    prefix = cwd.rstrip(os.sep) + os.sep
    if path.startswith(prefix) and os.sep + ".." + os.sep not in path:
        return path[len(prefix) :]
    try:
        rel = os.path.relpath(path, cwd)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def module_name_for_path(parts: tuple[str, ...]) -> tuple[str | None, bool]:
    """Module name and whether it is a package, from the path parts that lie inside packages.

    ``parts`` are the path components from the top-most folder that has an ``__init__.py`` down to
    the file, e.g. ``("flashinfer", "quantization", "fp4_quantization.py")``.
    """
    if not parts:
        return None, False
    *dirs, filename = parts
    stem = filename.rsplit(".", 1)[0] if filename.endswith(PYTHON_SUFFIXES) else filename
    if stem == "__init__":
        return (".".join(dirs) or None), True
    return ".".join([*dirs, stem]), False


@lru_cache(maxsize=4096)
def _package_parts(folder: str) -> tuple[str, ...]:
    """Names of the packages (folders with `__init__.py`) enclosing ``folder``, outermost first."""
    if not os.path.isfile(os.path.join(folder, "__init__.py")):
        return ()
    parent = os.path.dirname(folder)
    if parent == folder:
        return (os.path.basename(folder),)
    return (*_package_parts(parent), os.path.basename(folder))


@depends.on_forget_stats
def _forget_files() -> None:  # (a run in the same process asks the files again)
    python_script.cache_clear()
    _package_parts.cache_clear()


def enclosing_packages(folder: str) -> tuple[str, ...]:
    """Names of the packages (folders with `__init__.py`) enclosing ``folder``, outermost first
    (what the module names of its files are made of)."""
    return _package_parts(folder)


def module_identity(path: str) -> tuple[str | None, bool]:
    """``(module name, is a package)`` of a file, counted from its outermost package."""
    folder, name = os.path.split(os.path.abspath(path))
    return module_name_for_path((*_package_parts(folder), name))


def export_parts(key: str) -> tuple[str, str]:
    """The module and the name of a project re-export's key (``pkg.quant.q``), as the name is
    written where it is imported: a factory's key (``pkg.attn.make_wrapper()``, what a call of
    it returns) gives the function's name; a method's of a class's instances
    (``pkg.comm.Manager().get_comm()``), the class's."""
    module, _, name = key.rpartition(".")
    if module.endswith("()"):
        module, _, name = module[:-2].rpartition(".")
    return module, name.removesuffix("()")


def absolute_module(
    module: str | None, level: int, importer: str | None, is_package: bool
) -> str | None:
    """The module ``from <level dots><module> import`` names in the module ``importer`` (a
    package where ``is_package``); None for a relative one where the importer is not known, or
    one above its top package."""
    if level == 0:
        return module
    if importer is None:
        return None
    parts = importer.split(".")
    if not is_package:
        parts = parts[:-1]
    if level > 1:
        if level - 1 > len(parts):
            return None
        parts = parts[: len(parts) - (level - 1)]
    if module:
        parts = [*parts, module]
    return ".".join(parts) or None


def in_flashinfer(module: str | None) -> bool:
    """A dotted name inside the flashinfer package: a module of FlashInfer's own source tree (it
    reaches its API through relative imports), or a name of its API."""
    return module is not None and (module == "flashinfer" or module.startswith("flashinfer."))
