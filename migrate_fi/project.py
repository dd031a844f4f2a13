"""Which FlashInfer release does the project use now? (the default for ``--from``)

Read from the pins next to the code: ``pyproject.toml``, ``requirements*.txt``, ``setup.py`` and
``setup.cfg`` in the project root (the nearest folder above the given paths that has one of them,
or a ``.git``). Only pins that name one version count (``==``, ``~=``, ``>=`` lower bounds).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

from migrate_fi.discovery import find_upward
from migrate_fi.versions import VersionError, parse_version

__all__ = ["Pin", "ProjectVersionError", "detect_current_version", "find_pins", "project_root"]

# flashinfer-python / flashinfer_python / the old name flashinfer, with optional extras.
# `flashinfer-cubin` and `flashinfer-jit-cache` never match: the operator must follow the name.
_PIN = re.compile(
    r"""(?<![\w.-])flashinfer(?:[-_]python)?\s*(?:\[[^\]]*\])?\s*(==|~=|>=)\s*([0-9][0-9A-Za-z.+!]*)""",
    re.IGNORECASE,
)
_PIN_FILES = ("pyproject.toml", "setup.py", "setup.cfg")


class ProjectVersionError(Exception):
    pass


@dataclass(frozen=True)
class Pin:
    path: str
    line: int
    operator: str
    version: str


def project_root(path: str) -> str:
    """The project a path belongs to: the nearest folder above it with a pin file or `.git`."""
    return _project_root(path)


def _project_root(path: str) -> str:
    folder = os.path.abspath(path if os.path.isdir(path) else os.path.dirname(path))
    return find_upward(folder, (*_PIN_FILES, "requirements.txt", ".git")) or folder


def _pin_files(root: str) -> list[str]:
    out = [os.path.join(root, f) for f in _PIN_FILES]
    try:
        names = sorted(os.listdir(root))
    except OSError:
        names = []
    out += [
        os.path.join(root, n) for n in names if n.startswith("requirements") and n.endswith(".txt")
    ]
    req = os.path.join(root, "requirements")
    if os.path.isdir(req):
        out += [os.path.join(req, n) for n in sorted(os.listdir(req)) if n.endswith(".txt")]
    return [p for p in out if os.path.isfile(p)]


def find_pins(paths: Iterable[str]) -> list[Pin]:
    pins: list[Pin] = []
    for root in dict.fromkeys(_project_root(p) for p in paths):
        for filename in _pin_files(root):
            try:
                with open(filename, encoding="utf-8", errors="replace") as fh:
                    lines = fh.read().splitlines()
            except OSError:
                continue
            for n, line in enumerate(lines, 1):
                if line.lstrip().startswith("#"):
                    continue
                for m in _PIN.finditer(line):
                    pins.append(Pin(filename, n, m.group(1), m.group(2).rstrip(".")))
    return pins


def detect_current_version(paths: Iterable[str]) -> tuple[str, list[Pin]]:
    """The one version the project's pins name, or `ProjectVersionError` saying why not."""
    paths = list(paths)
    pins = find_pins(paths)
    versions: dict[str, list[Pin]] = {}
    for pin in pins:
        try:
            key = str(parse_version(pin.version))
        except VersionError:
            continue
        versions.setdefault(key, []).append(pin)
    if not versions:
        raise ProjectVersionError(
            "cannot tell which FlashInfer version the code uses now (no flashinfer-python pin"
            " found in pyproject.toml, setup.py, setup.cfg or requirements*.txt): pass --from VERSION"
        )
    if len(versions) > 1:
        where = "; ".join(
            f"{v} in {os.path.relpath(ps[0].path)}:{ps[0].line}" for v, ps in versions.items()
        )
        raise ProjectVersionError(
            f"the project pins several FlashInfer versions ({where}): pass --from VERSION"
        )
    ((version, found),) = versions.items()
    return version, found
