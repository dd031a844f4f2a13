"""Release data beside the API: what each release requires, and what the package index serves.

- ``requires.json``: for every bundled release, the `Requires-Dist` lines of its wheel's metadata
  (what it needs beside torch: ``nvidia-cutlass-dsl>=4.5.0``, ``apache-tvm-ffi>=0.1.6,<0.2``...),
  without the ones that apply only to an extra.
- ``indexes.json``: which versions of ``flashinfer-cubin`` and ``flashinfer-jit-cache`` PyPI
  serves, with the date it was read (from 0.6.14 on, ``flashinfer-cubin`` is published only on
  FlashInfer's own wheel index, and ``flashinfer-jit-cache`` always was).

Both are written by ``scripts/update_api_data.py`` into the bundled data. For the releases of
the user's data folder, ``migrate-fi signatures update`` keeps each wheel's `Requires-Dist` in
that folder's ``releases.json`` and what the user's package index serves in its
``indexes.json``; the newer of the two ``indexes.json`` is used.
"""

from __future__ import annotations

import json
import os
from functools import cache
from typing import Any

from migrate_fi.api.store import DATA_DIR, on_forget, user_data_dir, user_releases, write_json

__all__ = [
    "FLASHINFER_INDEX",
    "forget",
    "index_versions",
    "read_requires_dist",
    "required_packages",
    "requirements_of",
    "write_index_data",
    "write_requires",
]

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


@on_forget
def forget() -> None:
    _requires_in.cache_clear()
    _indexes_in.cache_clear()


def _requires() -> dict[str, list[str]]:
    return _requires_in(user_data_dir())


@cache
def _requires_in(user_folder: str) -> dict[str, list[str]]:
    requires: dict[str, list[str]] = _read_json(REQUIRES_FILE)
    for version, entry in user_releases(user_folder).items():
        if "requires" in entry and version not in requires:
            requires[version] = list(entry["requires"])
    return requires


def _read_json(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return {}


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
