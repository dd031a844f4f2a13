"""The bundled API records: one gzip'd JSON file per FlashInfer release, read on first use."""

from __future__ import annotations

import gc
import gzip
import json
import os
from functools import cache
from typing import Any

from migrate_fi.versions import parse_version

__all__ = [
    "DATA_DIR",
    "available_releases",
    "load_release",
    "missing_data",
    "write_json",
    "write_release",
]

DATA_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "api")
FORMAT = 2  # 2: every module with its names; defs at any depth; synthesized constructors


def _file(version: str, folder: str = DATA_DIR) -> str:
    return os.path.join(folder, f"{version}.json.gz")


def available_releases(folder: str = DATA_DIR) -> list[str]:
    """The releases with a record in ``folder``, oldest first."""
    return list(_releases_in(folder))


@cache  # (cleared when a record is written)
def _releases_in(folder: str) -> tuple[str, ...]:
    try:
        names = os.listdir(folder)
    except OSError:
        return ()
    versions = [n[: -len(".json.gz")] for n in names if n.endswith(".json.gz")]
    return tuple(sorted(versions, key=parse_version))


def missing_data(version: object) -> str:
    """Why a release has no data, and what to do: one line."""
    known = available_releases()
    if not known:
        return f"no API data for FlashInfer {version}: the bundled data is missing (reinstall)"
    first, last = parse_version(known[0]), parse_version(known[-1])
    try:
        v = parse_version(str(version))
    except ValueError:
        v = None
    if v is not None and v < first:
        advice = (
            f"releases before {first} are not covered: migrate to {first} by hand first, or"
            f" build the data from its wheel with `migrate-fi signatures build WHEEL`"
        )
    elif v is not None and v > last:
        advice = (
            "it is newer than this migrate-fi knows: upgrade migrate-fi, or build the data"
            " from its wheel with `migrate-fi signatures build WHEEL`"
        )
    else:
        advice = "not a published release? `migrate-fi signatures list` names those covered"
    return (
        f"no API data for FlashInfer {version} (the data covers {first} to {last}, "
        f"{len(known)} releases): {advice}"
    )


@cache
def load_release(version: str) -> dict[str, Any]:
    """The record of one release; KeyError when it is not bundled."""
    canonical = str(parse_version(version))
    for v in available_releases():
        if str(parse_version(v)) == canonical:
            with gzip.open(_file(v), "rb") as fh:
                raw = fh.read()
            # hundreds of thousands of small objects: the cycle collector only slows this down
            enabled = gc.isenabled()
            gc.disable()
            try:
                record: dict[str, Any] = json.loads(raw)
            finally:
                if enabled:
                    gc.enable()
            # the record lives as long as the run: keep the collector from walking it again and
            # again while files are parsed (it doubled the time of `ast.parse` on large trees)
            gc.freeze()
            if record.get("format") != FORMAT:
                raise KeyError(f"{version} (data of format {record.get('format')}, not {FORMAT})")
            return record
    raise KeyError(version)


def write_json(path: str, data: Any) -> str:
    """Write bundled data as indented, key-sorted JSON (a stable diff), replacing the file at
    once."""
    with open(path + ".tmp", "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1, sort_keys=True)
        fh.write("\n")
    os.replace(path + ".tmp", path)
    return path


def write_release(record: dict[str, Any], folder: str = DATA_DIR) -> str:
    """Write a release record deterministically (same input, same bytes)."""
    os.makedirs(folder, exist_ok=True)
    version = record["provenance"]["version"]
    record = {"format": FORMAT, **record}
    payload = json.dumps(record, sort_keys=True, separators=(",", ":")).encode()
    path = _file(version, folder)
    tmp = path + ".tmp"
    with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz:
        gz.write(payload)
    os.replace(tmp, path)
    _releases_in.cache_clear()
    return path
