"""What a serving engine pinned beside FlashInfer requires of it: shared by the pin rules.

A dependency list that pins an engine release exactly (``sglang[srt]==0.5.20``) installs the
FlashInfer that release requires (its wheel's metadata, in the bundled release data): FI006
does not move a FlashInfer pin such an engine holds back, and FI007 then judges that list's
pins of FlashInfer's own requirements against the FlashInfer the list keeps, not the target.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from migrate_fi.api.releases import engine_requirements
from migrate_fi.base import patterns
from migrate_fi.project.ownership import Place, engine_lines, engines_in, pin_marker
from migrate_fi.project.pins import CUBIN, JIT_CACHE, MAIN

if TYPE_CHECKING:
    from packaging.requirements import Requirement
    from packaging.version import Version

__all__ = [
    "FAMILY",
    "engine_list",
    "engine_requires",
    "held_by_engine",
    "package_requirements",
    "split_pin",
]

FAMILY = frozenset({MAIN, CUBIN, JIT_CACHE})  # FlashInfer's own distributions (no engine)
_PINS_MAIN = patterns.compile(r"flashinfer[-_.]python\s*(\[[^\]]*\])?\s*==", re.IGNORECASE)
# a requirements file (`requirements*.txt`, `*.in`, `constraints*.txt`): one dependency list
_REQUIREMENTS_FILE = patterns.compile(r"\.(?:txt|in)$")


def split_pin(pin: str) -> tuple[str, set[str], str]:
    """``sglang[srt]==0.4.3`` as (engine, its extras with "" for none, version)."""
    from packaging.utils import canonicalize_name

    engine, _, version = pin.partition("==")
    extras = {""}
    if "[" in engine:
        engine, _, named = engine.partition("[")
        extras |= {canonicalize_name(e) for e in named.rstrip("]").split(",") if e.strip()}
    return engine, extras, version


def package_requirements(lines: list[str], package: str, extras: set[str]) -> list[Requirement]:
    """Of an engine release's requirements (``lines``), those of ``package`` that apply with
    ``extras``."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    out = []
    for line in lines:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if canonicalize_name(req.name) != package:
            continue
        if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in extras):
            out.append(req)
    return out


def engine_requires(pin: str, package: str) -> list[Requirement] | None:
    """What the serving engine release ``pin`` (``sglang[srt]==0.4.3``) requires of
    ``package`` by its metadata, with the extras the pin names; None: not recorded."""
    engine, extras, version = split_pin(pin)
    lines = engine_requirements(engine, version)
    return None if lines is None else package_requirements(lines, package, extras)


def engine_list(
    path: str, lines: list[str], places: list[Place] | None, line: int, col: int
) -> tuple[str, str] | None:
    """The dependency list that holds the pin at ``line`` (1-based) and ``col`` of the file at
    ``path`` (its ``lines``; ``places``: its TOML places, None for another file), as
    `engine_lines` gives it, with the pin's environment marker; None where the file holds no
    such list (a requirements file, a TOML or JSON array)."""
    json = path.endswith(".json")
    if places is None and not (json or _REQUIREMENTS_FILE.search(path)):
        return None
    if line > len(lines):
        return None
    text = engine_lines(lines, places, line, json, col)
    return text, pin_marker(lines[line - 1], col, quoted=places is not None or json)


def held_by_engine(
    path: str, lines: list[str], places: list[Place] | None, line: int, col: int, target: Version
) -> bool:
    """Whether the dependency list that holds the pin at ``line`` and ``col`` (`engine_list`)
    pins flashinfer-python exactly beside a serving engine release whose recorded requirement
    does not accept ``target``: the list keeps the FlashInfer the engine requires (FI006 leaves
    that pin), and its other pins with it."""
    found = engine_list(path, lines, places, line, col)
    if found is None or not _PINS_MAIN.search(found[0]):
        return False
    text, marker = found
    for engine, extras, version in engines_in(text, FAMILY, marker):
        reqs = engine_requires(f"{engine}{extras}=={version}", MAIN)
        if reqs and not all(r.specifier.contains(target, prereleases=True) for r in reqs):
            return True
    return False
