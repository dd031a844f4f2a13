"""Which FlashInfer release does the project use now? (the default for ``--from``, and `plan`)

Read from every place the project writes it down (`migrate_fi.project.pins`): dependency pins in
``pyproject.toml`` (PEP 621 and Poetry), ``requirements*.txt`` / ``*.in``, ``setup.py``,
``setup.cfg``; ``ARG``/``ENV`` variables and ``pip install`` lines of Dockerfiles and CI scripts;
JSON and YAML version files. Files in the project root (the nearest folder above the given paths
that has a pin file or a ``.git``) and under the given paths count. A pin names the version when it
is exact (``==``), a lower bound of a full release number (``>=0.6.12``, ``~=``, Poetry's ``^``;
not ``>=0.6``), or a version variable;
flashinfer-python's pins are the authority; ``flashinfer-cubin`` and ``flashinfer-jit-cache`` pins
count only where the project pins neither name of the main package (a companion pin that lags is
FI006's finding, never a second opinion on the version). A local
tag (``+cu128``) is ignored; a wildcard (``==0.6.*``) names no single version. A pin whose
environment marker may exclude it counts only when no unmarked pin exists.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from migrate_fi.base.files import read_regular
from migrate_fi.base.toml import tomllib
from migrate_fi.base.versions import VersionError, parse_version
from migrate_fi.project.discovery import (
    DiscoveryError,
    discover,
    find_upward,
    wanted_files,
    with_includes,
)
from migrate_fi.project.pins import LOCK_FILES, MAIN, PIN_FILE_PATTERNS, Kind, scan

__all__ = [
    "Pin",
    "PinSearch",
    "ProjectVersionError",
    "detect_current_version",
    "disagree_error",
    "find_pins",
    "is_pin_file",
    "no_version_error",
    "pin_files",
    "pinned_versions",
    "project_root",
    "search_pins",
]

_ROOT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", ".git")
_NAMING_OPERATORS = ("==", "===", ">=", "~=", "^", "~", "", "@")


class ProjectVersionError(Exception):
    pass


class Pin(NamedTuple):
    path: str
    line: int
    operator: str
    version: str
    package: str = "flashinfer-python"
    kind: str = "requirement"
    marker: bool = False

    def describe(self) -> str:
        what = f"{self.operator}{self.version}" if self.kind == "requirement" else self.version
        return f"{self.package} {what}"


def project_root(path: str) -> str:
    """The project a path belongs to: the nearest folder above it with a pin file or `.git`."""
    folder = os.path.abspath(path if os.path.isdir(path) else os.path.dirname(path))
    return find_upward(folder, _ROOT_MARKERS) or folder


def pin_files(paths: Iterable[str]) -> list[str]:
    """Pin-bearing files of the project roots, and under the given paths."""
    out: dict[str, None] = {}
    for p in paths:
        root = project_root(p)
        for found in _discover([root], recursive=False):
            out.setdefault(found, None)
        if os.path.isdir(p):
            for found in _discover([p], recursive=True):
                out.setdefault(found, None)
        elif os.path.basename(p) == "setup.py" or not p.endswith(".py"):
            out.setdefault(os.path.abspath(p), None)
    return list(out)


def _discover(folders: list[str], recursive: bool) -> Iterable[str]:
    if not recursive:
        for folder in folders:
            req = os.path.join(folder, "requirements")
            candidates = [os.path.join(folder, n) for n in _listdir(folder)]
            candidates += [os.path.join(req, n) for n in _listdir(req)]
            for c in candidates:
                if os.path.isfile(c) and is_pin_file(c):
                    yield c
        return
    try:
        yield from (
            f
            for f in discover(folders, ("setup.py",), patterns=PIN_FILE_PATTERNS)
            if is_pin_file(f)
        )
    except DiscoveryError:
        return


def _listdir(folder: str) -> list[str]:
    try:
        return sorted(os.listdir(folder))
    except OSError:
        return []


_PIN_FILES = wanted_files(("setup.py",), PIN_FILE_PATTERNS)


def is_pin_file(path: str) -> bool:
    """A file that may pin FlashInfer's version (dependency, install, Docker, CI, version files)."""
    return _PIN_FILES(path)


@dataclass
class PinSearch:
    """What the project's pin files say about FlashInfer."""

    pins: list[Pin] = field(default_factory=list)  # each names the version the project is on
    unnamed: list[Pin] = field(default_factory=list)  # requirements naming no one version
    problems: list[str] = field(default_factory=list)  # pin files that could not be read
    # pyproject.toml files with a [tool.migrate-fi] table (the run reads one: `find_config`)
    configs: list[str] = field(default_factory=list)
    # where no pin names a release: what the lock files at the project's roots hold (the
    # version installed, often through vLLM or SGLang: a hint for --from, never taken as it)
    locked: list[Pin] = field(default_factory=list)


def search_pins(paths: Iterable[str]) -> PinSearch:
    """Read every pin file of the project (see the module docstring)."""
    out = PinSearch()
    for filename in pin_files(with_includes(list(paths))):
        try:
            data = read_regular(filename)
        except OSError as exc:
            out.problems.append(f"{_shown(filename)}: cannot be read ({exc.strerror})")
            continue
        pins = b"flashinfer" in data.lower()
        config = os.path.basename(filename) == "pyproject.toml" and b"migrate-fi" in data
        if not (pins or config):
            continue
        text = data.decode("utf-8", errors="replace")
        if filename.endswith(".toml"):  # (parsed once: for its pins and its configuration)
            toml = tomllib()
            try:
                tool = toml.loads(text).get("tool")
            except toml.TOMLDecodeError as exc:
                tool = None
                if pins:
                    out.problems.append(
                        f"{_shown(filename)}: not valid TOML ({exc}); its pins were read line by"
                        " line"
                    )
            if config and isinstance(tool, dict) and "migrate-fi" in tool:
                out.configs.append(filename)
        if not pins:
            continue
        for ref in scan(filename, text):
            if ref.in_comment or ref.kind not in (Kind.REQUIREMENT, Kind.VARIABLE):
                continue
            pin = Pin(
                filename,
                ref.line,
                ref.operator,
                ref.version,
                ref.package,
                ref.kind.value,
                ref.marker,
            )
            if not _names_a_release(ref.operator, ref.version):
                out.unnamed.append(pin)
            else:
                out.pins.append(pin)
    if not out.pins:
        out.locked = _locked_at_roots(paths)
    return out


def _locked_at_roots(paths: Iterable[str]) -> list[Pin]:
    """flashinfer-python's versions in the lock files at the roots of the projects of
    ``paths`` (`uv.lock`, `poetry.lock`...)."""
    out: list[Pin] = []
    for root in dict.fromkeys(project_root(p) for p in paths):
        for name in LOCK_FILES:
            path = os.path.join(root, name)
            try:
                data = read_regular(path)
            except OSError:
                continue
            if b"flashinfer" not in data:
                continue
            text = data.decode("utf-8", errors="replace")
            out += [
                Pin(path, ref.line, "==", ref.version, ref.package, ref.kind.value)
                for ref in scan(path, text)
                if ref.kind is Kind.LOCKED and ref.package == MAIN
            ]
    return out


def _names_a_release(operator: str, version: str) -> bool:
    """``==0.6.12``, ``>=0.6.12``, a variable: yes; ``==0.6.*``, ``<0.7``, ``>=0.6``: no (a
    bound short of a full release number, ``>=0.6,<0.7``, leaves the release open)."""
    if operator not in _NAMING_OPERATORS or "*" in version:
        return False
    release = version.split("+", 1)[0].split(".")
    return operator in ("==", "===", "", "@") or len(release) >= 3


def _shown(path: str) -> str:
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def find_pins(paths: Iterable[str]) -> list[Pin]:
    """Every FlashInfer version the project writes down that names the version it is on."""
    return search_pins(paths).pins


def pinned_versions(found: PinSearch) -> dict[str, list[Pin]]:
    """The releases the pins name, each with its pins: flashinfer-python's pins are the
    authority (a flashinfer-cubin or jit-cache pin that lags is a finding of FI006, not another
    opinion on the version the code is written for); unmarked pins before marked ones."""
    main = [p for p in found.pins if p.package == MAIN]
    pins = main or found.pins
    unmarked = [p for p in pins if not p.marker]
    versions: dict[str, list[Pin]] = {}
    for pin in unmarked or pins:
        try:
            key = str(parse_version(pin.version.split("+", 1)[0]))
        except VersionError:
            continue
        versions.setdefault(key, []).append(pin)
    return versions


def no_version_error(found: PinSearch) -> ProjectVersionError:
    if found.unnamed:
        ranges = "; ".join(
            f"{p.describe()} in {_shown(p.path)}:{p.line}" for p in found.unnamed[:3]
        )
        why = f"the pins found name no single release ({ranges})"
    else:
        why = (
            "no flashinfer-python pin found in pyproject.toml, setup.py, setup.cfg,"
            " requirements*.txt, Dockerfiles or CI scripts"
        )
    if found.problems:
        why += "; " + "; ".join(found.problems)
    if found.locked:
        why += "; " + "; ".join(
            f"{_shown(p.path)} holds {p.package} {p.version}" for p in found.locked[:3]
        )
    return ProjectVersionError(
        f"cannot tell which FlashInfer version the code uses now ({why}): pass --from VERSION"
    )


def disagree_error(versions: dict[str, list[Pin]]) -> ProjectVersionError:
    where = "; ".join(f"{v} in {_shown(ps[0].path)}:{ps[0].line}" for v, ps in versions.items())
    return ProjectVersionError(
        f"the project's flashinfer-python pins disagree ({where}): pass --from VERSION"
        " (`migrate-fi plan` lists them all)"
    )


def detect_current_version(paths: Iterable[str]) -> tuple[str, list[Pin], list[str]]:
    """The one version the project's pins name, the pins naming it and the pin files that
    could not be read; or `ProjectVersionError` saying why there is no one version."""
    found = search_pins(list(paths))
    versions = pinned_versions(found)
    if not versions:
        raise no_version_error(found)
    if len(versions) > 1:
        raise disagree_error(versions)
    ((version, naming),) = versions.items()
    return version, naming, found.problems
