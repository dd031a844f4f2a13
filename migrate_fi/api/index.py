"""The prefilter index: which names change between each pair of consecutive bundled releases.

If a callable differs between releases A and C, it differs between some consecutive pair in
between, so the union of the consecutive pairs in a range names every callable the range changes.
`check` reads this small file instead of diffing two whole releases for every run; the full diff
is computed only when a file passes the prefilter. `migrate-fi signatures build` rewrites it.
"""

from __future__ import annotations

import itertools
import json
import os
from functools import cache

from migrate_fi.api.store import DATA_DIR, available_releases
from migrate_fi.versions import parse_version

__all__ = ["INDEX_FILE", "build_index", "trigger_paths", "write_index"]

INDEX_FILE = os.path.join(DATA_DIR, "changes.json")


def build_index() -> dict[str, object]:
    from migrate_fi.api.differ import api_for, changed_callables

    releases = available_releases()
    pairs: dict[str, list[str]] = {}
    for old, new in itertools.pairwise(releases):
        public = api_for(old).public_paths()
        by_target: dict[str, list[str]] = {}
        for p, t in public.items():
            by_target.setdefault(t, []).append(p)
        paths: set[str] = set()
        for key in changed_callables(old, new):
            # a call to a changed method needs its instance built in the same file (or in the
            # same class): the class's path is there
            target = key.rpartition("().")[0] if "()." in key else key
            paths.update(by_target.get(target, [target]))
        pairs[f"{old}..{new}"] = sorted(paths)
    return {"releases": releases, "pairs": pairs}


def write_index(folder: str = DATA_DIR) -> str:
    path = os.path.join(folder, "changes.json")
    with open(path + ".tmp", "w", encoding="utf-8") as fh:
        json.dump(build_index(), fh, indent=1, sort_keys=True)
        fh.write("\n")
    os.replace(path + ".tmp", path)
    trigger_paths.cache_clear()
    return path


@cache
def trigger_paths(from_version: str, to_version: str) -> tuple[str, ...]:
    """Public paths of the functions and classes whose calls may change in (from, to]."""
    with open(INDEX_FILE, encoding="utf-8") as fh:
        index = json.load(fh)
    lo, hi = parse_version(from_version), parse_version(to_version)
    paths: set[str] = set()
    for pair, names in index["pairs"].items():
        old, new = pair.split("..")
        if lo <= parse_version(old) and parse_version(new) <= hi:
            paths.update(names)
    return tuple(sorted(paths))
