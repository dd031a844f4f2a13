"""Release data beside the API: what each release requires, and what the package index serves.

- ``requires.json``: for every bundled release, the `Requires-Dist` lines of its wheel's metadata
  (what it needs beside torch: ``nvidia-cutlass-dsl>=4.5.0``, ``apache-tvm-ffi>=0.1.6,<0.2``...),
  without the ones that apply only to an extra.
- ``indexes.json``: which versions of ``flashinfer-cubin`` and ``flashinfer-jit-cache`` PyPI
  serves, with the date it was read (from 0.6.14 on, ``flashinfer-cubin`` is published only on
  FlashInfer's own wheel index, and ``flashinfer-jit-cache`` always was).

Both are written by ``scripts/update_api_data.py``.
"""

from __future__ import annotations

import json
import os
import zipfile
from functools import cache
from typing import Any

from migrate_fi.api.store import DATA_DIR, write_json

__all__ = [
    "FLASHINFER_INDEX",
    "index_versions",
    "read_requires_dist",
    "requirements_of",
    "write_index_data",
    "write_requires",
]

FLASHINFER_INDEX = "https://flashinfer.ai/whl"
REQUIRES_FILE = os.path.join(DATA_DIR, "requires.json")
INDEXES_FILE = os.path.join(DATA_DIR, "indexes.json")


def read_requires_dist(wheel: str) -> list[str]:
    """`Requires-Dist` of a wheel, except those for an extra."""
    with zipfile.ZipFile(wheel) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        lines = zf.read(name).decode("utf-8", "replace").splitlines()
    out = []
    for line in lines:
        if line.startswith("Requires-Dist:"):
            value = line.split(":", 1)[1].strip()
            if "extra ==" not in value.replace("extra==", "extra =="):
                out.append(value)
    return out


def write_requires(requires: dict[str, list[str]], folder: str = DATA_DIR) -> str:
    return write_json(os.path.join(folder, "requires.json"), requires)


def write_index_data(data: dict[str, Any], folder: str = DATA_DIR) -> str:
    return write_json(os.path.join(folder, "indexes.json"), data)


@cache
def _requires() -> dict[str, list[str]]:
    try:
        with open(REQUIRES_FILE, encoding="utf-8") as fh:
            requires: dict[str, list[str]] = json.load(fh)
            return requires
    except OSError:
        return {}


def requirements_of(version: str) -> list[str]:
    """What a release requires (its wheel's `Requires-Dist`), [] when not recorded."""
    from migrate_fi.versions import parse_version

    canonical = str(parse_version(version))
    for v, reqs in _requires().items():
        if str(parse_version(v)) == canonical:
            return list(reqs)
    return []


@cache
def _indexes() -> dict[str, Any]:
    try:
        with open(INDEXES_FILE, encoding="utf-8") as fh:
            indexes: dict[str, Any] = json.load(fh)
            return indexes
    except OSError:
        return {}


def index_versions(package: str) -> tuple[tuple[str, ...], str]:
    """(the versions PyPI serves of ``package``, the date that was read)."""
    data = _indexes()
    return tuple(data.get("packages", {}).get(package, ())), str(data.get("read", "unknown"))
