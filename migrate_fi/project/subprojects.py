"""Trees of several projects, each pinned to its own FlashInfer release.

A monorepo may hold several projects (a folder with ``pyproject.toml``, ``setup.py`` or
``setup.cfg``), each with its own flashinfer-python pins. When the pins of the tree disagree but
agree within each project, the tree is migrated project by project, each from its own pins (or
its own migration in progress): one `--from` for all would rewrite a project already on a newer
release as if it were on the older one (``fp4_quantize(..., enable_pdl=...)`` written for 0.6.14
"fixed" from 0.6.10). A ``--from`` given then applies to the projects that pin an older release
(or none), never to one that pins a newer release. Pins outside every project (a Dockerfile at
the top of a tree without a ``pyproject.toml``) that disagree keep the plain "pins disagree"
error: no folder tells which code they speak for.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from packaging.version import Version

from migrate_fi.base.modules import display_path
from migrate_fi.base.versions import VersionError, parse_version
from migrate_fi.project.current import Pin, PinSearch, pinned_versions, search_pins
from migrate_fi.project.discovery import find_upward
from migrate_fi.project.record import RecordError, read_record

__all__ = ["Part", "split"]

_PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg")


@dataclass
class Part:
    """One project of the tree, run on its own."""

    folder: str  # absolute
    paths: tuple[str, ...]  # what to walk (the given paths, cut to the project)
    from_given: str | None  # its --from: None to read its own pins or migration in progress
    excluded: list[str] = field(default_factory=list)  # nested projects' folders (absolute)
    note: str = ""  # about this project's range
    tree_note: str = ""  # about the tree (said once, with the first project)


def _owner(pin: Pin, top: str) -> str | None:
    """The project folder a pin belongs to: the nearest folder at or above the pin file, below
    or at ``top``, that defines a project; None when there is none."""
    found = find_upward(os.path.dirname(os.path.abspath(pin.path)), _PROJECT_MARKERS)
    if found is None:
        return None
    inside = os.path.join(found, "")
    return found if inside.startswith(os.path.join(top, "")) else None


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(os.path.join(folder, ""))


def _in_progress(folder: str) -> bool:
    try:
        record = read_record(folder)
    except RecordError:
        return False
    return record is not None and record.in_progress


def split(
    paths: Sequence[str], from_given: str | None, found: PinSearch | None = None
) -> list[Part] | None:
    """The projects to migrate one by one (see the module docstring); None when the tree is
    migrated as one (its pins agree, or disagree where no project folder settles them).
    ``found``: the pins of ``paths``, where the caller read them already."""
    given = [os.path.abspath(p) for p in paths]
    tops = [p if os.path.isdir(p) else os.path.dirname(p) for p in given]
    top = os.path.commonpath(tops) if tops else os.getcwd()
    found = found if found is not None else search_pins(list(paths))
    versions = pinned_versions(found)
    owners: dict[str, set[Version]] = {}
    for text, pins in versions.items():
        version = parse_version(text)
        for pin in pins:
            owner = _owner(pin, top)
            if owner is None:
                if len(versions) > 1:
                    return None  # a pin no project owns disagrees: the plain error
                continue
            owners.setdefault(owner, set()).add(version)
    if len(owners) < 2 or any(len(v) > 1 for v in owners.values()):
        return None
    pinned = {folder: min(v) for folder, v in owners.items()}
    progress = {folder for folder in owners if _in_progress(folder)}
    if len(set(pinned.values())) < 2 and not progress:
        return None
    try:
        floor = parse_version(from_given) if from_given is not None else None
    except VersionError:
        return None  # (the run itself says why)
    parts: list[Part] = []
    folders = sorted(owners)
    for folder in folders:
        nested = [f for f in folders if f != folder and _under(f, folder)]
        cut = [
            folder if _under(folder, g) else g
            for g in given
            if _under(folder, g) or _under(g, folder)
        ]
        cut = [p for p in cut if not any(_under(p, n) for n in nested)]
        if not cut:
            continue
        own = pinned[folder]
        if folder in progress:
            start, note = None, ""
        elif floor is not None and floor < own:
            start = str(own)
            note = (
                f"{display_path(folder)} pins FlashInfer {own}, newer than --from {floor}:"
                f" migrated from {own}"
            )
        else:
            start, note = (from_given, "") if floor is not None else (None, "")
        parts.append(Part(folder, tuple(display_path(p) for p in cut), start, nested, note))
    # what lies outside every project (the given folders above them): with --from, migrated
    # from it; else said, and left
    for g in given:
        if any(_under(g, f) for f in folders):
            continue
        inner = [f for f in folders if _under(f, g)]
        if from_given is not None:
            parts.append(Part(g, (display_path(g),), from_given, inner))
        elif parts:
            names = ", ".join(display_path(f) for f in inner) or "none"
            parts[0].tree_note = (
                f"the projects under {display_path(g)} pin different releases ({names}): each is"
                " migrated from its own pins; any file outside them is not (no project pins"
                " it: name it with --from VERSION)"
            )
    return parts or None
