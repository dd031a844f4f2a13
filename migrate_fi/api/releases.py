"""Release data beside the API: what each release requires, and what the package index serves.

- ``requires.json``: for every bundled release, the `Requires-Dist` lines of its wheel's metadata
  (what it needs beside torch: ``nvidia-cutlass-dsl>=4.5.0``, ``apache-tvm-ffi>=0.1.6,<0.2``...),
  without the ones that apply only to an extra.
- ``indexes.json``: which versions of ``flashinfer-cubin`` and ``flashinfer-jit-cache`` PyPI
  serves, with the date it was read (from 0.6.14 on, ``flashinfer-cubin`` is published only on
  FlashInfer's own wheel index, and ``flashinfer-jit-cache`` always was).

- ``engines.json``: for the serving engines that pin FlashInfer (``ENGINES``: sglang, vllm),
  what each of their releases requires of FlashInfer's packages (its `Requires-Dist` lines that
  name ``flashinfer-*``; none for a release that does not), with the date it was read: a
  release's metadata never changes once published, so an entry never goes stale.

All three are written by ``scripts/update_api_data.py`` into the bundled data. For the releases of
the user's data folder, ``migrate-fi signatures update`` keeps each wheel's `Requires-Dist` in
that folder's ``releases.json`` and what the user's package index serves in its
``indexes.json``; the newer of the two ``indexes.json`` is used; the engines' releases it
reads are added to that folder's ``engines.json``.
"""

from __future__ import annotations

import json
import os
from functools import cache
from typing import Any

from migrate_fi.api.store import DATA_DIR, on_forget, user_data_dir, user_releases, write_json

__all__ = [
    "ENGINES",
    "FLASHINFER_INDEX",
    "engine_releases",
    "engine_requirements",
    "engines_read",
    "flashinfer_lines",
    "forget",
    "index_versions",
    "read_requires_dist",
    "recorded_engines",
    "required_packages",
    "requirements_of",
    "write_engine_data",
    "write_index_data",
    "write_requires",
]

# serving engines whose releases pin FlashInfer in their metadata, as the index names them
ENGINES = ("sglang", "vllm")

FLASHINFER_INDEX = "https://flashinfer.ai/whl"
REQUIRES_FILE = os.path.join(DATA_DIR, "requires.json")
INDEXES_FILE = os.path.join(DATA_DIR, "indexes.json")


def read_requires_dist(wheel: str) -> list[str]:
    """`Requires-Dist` of a wheel, those of its extras included (with their markers:
    ``nvidia-cutlass-dsl[cu13]>=4.7.0a0; extra == "cu13"``)."""
    import zipfile

    with zipfile.ZipFile(wheel) as zf:
        names = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        if not names:
            return []
        lines = zf.read(names[0]).decode("utf-8", "replace").splitlines()
    out = []
    for line in lines:
        if line.startswith("Requires-Dist:"):
            out.append(line.split(":", 1)[1].strip())
    return out


def write_requires(requires: dict[str, list[str]], folder: str = DATA_DIR) -> str:
    return write_json(os.path.join(folder, "requires.json"), requires)


def write_index_data(data: dict[str, Any], folder: str = DATA_DIR) -> str:
    return write_json(os.path.join(folder, "indexes.json"), data)


def flashinfer_lines(requires_dist: list[str]) -> list[str]:
    """The `Requires-Dist` lines that name one of FlashInfer's packages (``flashinfer-python``,
    ``flashinfer_cubin``...), as written."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    out = []
    for line in requires_dist:
        try:
            name = canonicalize_name(Requirement(line).name)
        except InvalidRequirement:
            continue
        if name.startswith("flashinfer-"):
            out.append(line)
    return out


def write_engine_data(
    engines: dict[str, dict[str, list[str]]], read: str, source: str, folder: str = DATA_DIR
) -> str:
    """``engines.json`` in ``folder``: engine -> release -> its FlashInfer lines."""
    return write_json(
        os.path.join(folder, "engines.json"), {"read": read, "source": source, "engines": engines}
    )


def engine_requirements(engine: str, version: str) -> list[str] | None:
    """What release ``version`` of the serving engine ``engine`` requires of FlashInfer's
    packages (its `Requires-Dist` lines naming them; [] when none); None when not recorded."""
    from packaging.utils import canonicalize_name
    from packaging.version import InvalidVersion, Version

    releases = _engines().get("engines", {}).get(canonicalize_name(engine), {})
    if version in releases:
        return list(releases[version])
    try:
        wanted = Version(version)
    except InvalidVersion:
        return None
    for recorded, lines in releases.items():
        try:
            if Version(recorded) == wanted:
                return list(lines)
        except InvalidVersion:
            continue
    return None


def engine_releases(engine: str) -> dict[str, list[str]]:
    """Every recorded release of ``engine`` with its FlashInfer lines."""
    from packaging.utils import canonicalize_name

    return dict(_engines().get("engines", {}).get(canonicalize_name(engine), {}))


def engines_read() -> str:
    """When the engines' metadata was last read (the newer of the bundled and the user's)."""
    return str(_engines().get("read", "unknown"))


def _engines() -> dict[str, Any]:
    return _engines_in(user_data_dir())


@cache
def _engines_in(user_folder: str) -> dict[str, Any]:
    """The bundled engines' data with the user's folder's added (a release's metadata never
    changes: the two only add releases to each other)."""
    bundled = _read_json(os.path.join(DATA_DIR, "engines.json"))
    user = _read_json(os.path.join(user_folder, "engines.json"))
    merged = {name: dict(releases) for name, releases in _engines_of(bundled).items()}
    for name, releases in _engines_of(user).items():
        merged.setdefault(name, {}).update(releases)
    read = max(str(bundled.get("read", "")), str(user.get("read", ""))) or "unknown"
    return {"read": read, "engines": merged}


@on_forget
def forget() -> None:
    _requires_in.cache_clear()
    _indexes_in.cache_clear()
    _engines_in.cache_clear()


def _requires() -> dict[str, list[str]]:
    return _requires_in(user_data_dir())


@cache
def _requires_in(user_folder: str) -> dict[str, list[str]]:
    requires: dict[str, list[str]] = _read_json(REQUIRES_FILE)
    for version, entry in user_releases(user_folder).items():
        if "requires" in entry and version not in requires:
            requires[version] = list(entry["requires"])
    return requires


def _read_json(path: str) -> dict[str, Any]:
    """The JSON object of ``path``; {} when it cannot be read or holds no object."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def recorded_engines(folder: str) -> dict[str, dict[str, list[str]]]:
    """``engines.json`` of a data folder: engine -> release -> its FlashInfer lines ({} when
    there is none, or it cannot be read)."""
    return _engines_of(_read_json(os.path.join(folder, "engines.json")))


def _engines_of(data: dict[str, Any]) -> dict[str, dict[str, list[str]]]:
    engines = data.get("engines")
    return engines if isinstance(engines, dict) else {}


def requirements_of(version: str) -> list[str]:
    """What a release requires (its wheel's `Requires-Dist`), [] when not recorded."""
    from migrate_fi.base.versions import parse_version

    canonical = str(parse_version(version))
    for v, reqs in _requires().items():
        if str(parse_version(v)) == canonical:
            return list(reqs)
    return []


def required_packages() -> list[str]:
    """Every package a known release requires (canonical names): what FI007 may move a pin of,
    so what the index data records versions of."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    names: set[str] = set()
    for reqs in _requires().values():
        for text in reqs:
            try:
                names.add(canonicalize_name(Requirement(text).name))
            except InvalidRequirement:
                continue
    return sorted(names)


def _indexes() -> dict[str, Any]:
    return _indexes_in(user_data_dir())


@cache
def _indexes_in(user_folder: str) -> dict[str, Any]:
    bundled: dict[str, Any] = _read_json(INDEXES_FILE)
    user: dict[str, Any] = _read_json(os.path.join(user_folder, "indexes.json"))
    if user.get("packages") and str(user.get("read", "")) >= str(bundled.get("read", "")):
        return user
    return bundled


def index_versions(package: str) -> tuple[tuple[str, ...], str]:
    """(the versions PyPI serves of ``package``, the date that was read)."""
    data = _indexes()
    read = data.get("read_by_package", {}).get(package) or data.get("read", "unknown")
    return tuple(data.get("packages", {}).get(package, ())), str(read)
