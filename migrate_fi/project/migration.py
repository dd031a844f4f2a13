"""Which range a run migrates: ``--from``/``--to``, the project's pins, and a migration in progress.

``--from`` defaults to the version the project's flashinfer-python pins name, and ``--to`` to
the newest release there is API data for (bundled, or added by `migrate-fi signatures update`). A migration that `apply` left in progress (`migrate_fi.project.record`) wins
over the pins while they name its target or still its origin: after `apply` moved the pins, the
sites it left for a person are still reported until they are resolved or suppressed, and an
apply interrupted before its pin files were written resumes from the same origin.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from packaging.version import Version

from migrate_fi.api.store import available_releases, missing_data, newest_release
from migrate_fi.base.versions import VersionError, check_range, parse_version
from migrate_fi.project.current import (
    Pin,
    PinSearch,
    disagree_error,
    no_version_error,
    pinned_versions,
    project_root,
    search_pins,
)
from migrate_fi.project.record import RECORD, ApplyRecord, RecordError, read_record

__all__ = ["MigrationRange", "RangeError", "resolve_range"]


class RangeError(Exception):
    """No range can be settled; one line for the user."""


@dataclass
class MigrationRange:
    from_version: Version
    to_version: Version
    pins: list[Pin] = field(default_factory=list)  # the pins that named --from (none: given)
    problems: list[str] = field(default_factory=list)  # pin files that could not be read
    notices: list[str] = field(default_factory=list)  # one line each, for the user
    pinned: Version | None = None  # what the pins name, where a migration in progress overrides
    record: ApplyRecord | None = None  # the migration in progress this run continues
    root: str = ""  # the project root (where the record lives)
    # a run by projects (`migrate_fi.project.subprojects`): each project's range and the files it read
    parts: list[tuple[MigrationRange, list[str]]] = field(default_factory=list)


def _version(text: str, what: str) -> Version:
    if not text.strip():
        raise RangeError(f"{what} needs a version (e.g. 0.7.4), not an empty string")
    try:
        return parse_version(text)
    except VersionError as exc:
        raise RangeError(str(exc)) from None


def resolve_range(
    paths: Sequence[str],
    from_given: str | None,
    to_given: str | None,
    found: PinSearch | None = None,
) -> MigrationRange:
    """The range of this run (see the module docstring); `RangeError` says why there is none.
    ``found``: the pins of ``paths``, where the caller read them already."""
    root = project_root(paths[0] if paths else ".")
    out = MigrationRange(Version("0"), Version("0"), root=root)
    record: ApplyRecord | None = None
    try:
        record = read_record(root)
    except RecordError as exc:
        out.notices.append(f"{exc}: ignored (delete it, or run `migrate-fi apply` again)")
    if from_given is not None:
        out.from_version = _version(from_given, "--from")
    else:
        found = found if found is not None else search_pins(list(paths))
        out.problems = found.problems
        versions = pinned_versions(found)
        continued = _continues(record, versions)
        if continued is not None:
            assert record is not None
            out.from_version, out.record = continued, record
            pinned = [parse_version(v) for v in versions]
            out.pinned = max(pinned) if pinned else None
            out.notices.append(_in_progress_notice(record, out.pinned, root))
        elif not versions:
            raise RangeError(str(no_version_error(found)))
        elif len(versions) > 1:
            raise RangeError(str(disagree_error(versions)))
        else:
            ((version, naming),) = versions.items()
            out.from_version, out.pins = parse_version(version), naming
    known = _known_below(out.from_version, out.notices)
    if known != out.from_version:  # (the pins still name the release the code is written for)
        out.pinned, out.from_version = out.pinned or out.from_version, known
    if to_given is not None:
        out.to_version = _version(to_given, "--to")
    elif out.record is not None:
        out.to_version = parse_version(out.record.to_version)
    else:
        out.to_version = newest_release()
        if out.from_version > out.to_version:
            # the pins already name a release the data does not know
            raise RangeError(missing_data(out.from_version))
    try:
        check_range(out.from_version, out.to_version)
    except VersionError as exc:
        raise RangeError(str(exc)) from None
    return out


def _known_below(version: Version, notices: list[str]) -> Version:
    """``version``, or where there is no API data for it but there is for releases on both
    sides of it (a release withdrawn from the package index, a local build, a release
    candidate), the nearest release below it, said in one note."""
    known = sorted(parse_version(v) for v in available_releases())
    if not known or version in known or not known[0] < version < known[-1]:
        return version
    below = max(v for v in known if v < version)
    notices.append(
        f"no API data for FlashInfer {version}: migrating from {below}, the nearest release"
        f" below it; to use its own data, `migrate-fi signatures update` (with the package"
        f" index that serves it: --pip-option=--index-url=URL) or `migrate-fi signatures build"
        f" WHEEL` (its wheel, or an installed copy)"
    )
    return below


def _continues(record: ApplyRecord | None, versions: dict[str, list[Pin]]) -> Version | None:
    """The recorded origin, when this run continues the recorded migration: it is in progress
    and every pin names its origin or its target (or there are no pins to say otherwise)."""
    if record is None or not record.in_progress:
        return None
    try:
        origin, target = parse_version(record.from_version), parse_version(record.to_version)
    except VersionError:
        return None
    named = {parse_version(v) for v in versions}
    if named <= {origin, target}:
        return origin
    return None


def _in_progress_notice(record: ApplyRecord, pinned: Version | None, root: str) -> str:
    left = (
        f"interrupted by {record.interrupted}"
        if record.interrupted
        else f"{record.left} site(s) left for a person"
    )
    if record.pending:
        left += f", {len(record.pending)} file(s) not migrated"
    pins = f", the pins say {pinned}" if pinned is not None else ""
    shown = os.path.relpath(os.path.join(root, RECORD))
    return (
        f"migration {record.from_version} -> {record.to_version} in progress ({left}{pins};"
        f" recorded in {shown}): migrating from {record.from_version};"
        " `migrate-fi finish` ends it once nothing is left"
    )
