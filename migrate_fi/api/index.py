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

__all__ = ["INDEX_FILE", "build_index", "trigger_names", "write_index"]

INDEX_FILE = os.path.join(DATA_DIR, "changes.json")


def build_index() -> dict[str, object]:
    from migrate_fi.api.differ import api_for, changed_callables

    releases = available_releases()
    pairs: dict[str, dict[str, list[str]]] = {}
    for old, new in itertools.pairwise(releases):
        functions: set[str] = set()
        methods: set[str] = set()
        old_api = api_for(old)
        public = old_api.public_paths()
        for key in changed_callables(old, new):
            if "()." in key:
                methods.add(key.rpartition("().")[2])
                continue
            functions.add(key.rsplit(".", 1)[-1])
            functions.update(p.rsplit(".", 1)[-1] for p, t in public.items() if t == key)
        pairs[f"{old}..{new}"] = {"functions": sorted(functions), "methods": sorted(methods)}
    return {"releases": releases, "pairs": pairs}


def write_index(folder: str = DATA_DIR) -> str:
    path = os.path.join(folder, "changes.json")
    with open(path + ".tmp", "w", encoding="utf-8") as fh:
        json.dump(build_index(), fh, indent=1, sort_keys=True)
        fh.write("\n")
    os.replace(path + ".tmp", path)
    trigger_names.cache_clear()
    return path


@cache
def trigger_names(from_version: str, to_version: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(function and class names, method names) that may change calls in (from, to]."""
    with open(INDEX_FILE, encoding="utf-8") as fh:
        index = json.load(fh)
    lo, hi = parse_version(from_version), parse_version(to_version)
    functions: set[str] = set()
    methods: set[str] = set()
    for pair, names in index["pairs"].items():
        old, new = pair.split("..")
        if lo <= parse_version(old) and parse_version(new) <= hi:
            functions.update(names["functions"])
            methods.update(names["methods"])
    return tuple(sorted(functions)), tuple(sorted(methods))
