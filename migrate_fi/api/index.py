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

from migrate_fi.api.paths import ApiPath
from migrate_fi.api.store import DATA_DIR, available_releases, write_json
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
            api_key = ApiPath(key)
            target = api_key.owner if api_key.is_method else key
            paths.update(by_target.get(target, [target]))
        paths.update(_vanished_paths(old, new))
        pairs[f"{old}..{new}"] = sorted(paths)
    return {"releases": releases, "pairs": pairs}


def _vanished_paths(old_version: str, new_version: str) -> set[str]:
    """Public paths of definitions and modules that no longer resolve, also where the definition
    lives on elsewhere (a module moved, its class re-exported from the package): an import
    through the old path fails."""
    from migrate_fi.api.differ import api_for

    old, new = api_for(old_version), api_for(new_version)
    candidates = [*old.public_paths(), *(m for m in old.modules if "._" not in m)]
    return {p for p in candidates if new.canonical(p) is None and new.surely_missing(p)}


def write_index(folder: str = DATA_DIR) -> str:
    path = write_json(os.path.join(folder, "changes.json"), build_index())
    for cached in (_index, trigger_paths, _pair_sets, changed_in):
        cached.cache_clear()
    return path


@cache
def _index() -> dict[str, list[str]]:
    with open(INDEX_FILE, encoding="utf-8") as fh:
        pairs: dict[str, list[str]] = json.load(fh)["pairs"]
        return pairs


@cache
def trigger_paths(from_version: str, to_version: str) -> tuple[str, ...]:
    """Public paths of the functions and classes whose calls may change in (from, to]."""
    lo, hi = parse_version(from_version), parse_version(to_version)
    paths: set[str] = set()
    for pair, names in _index().items():
        old, new = pair.split("..")
        if lo <= parse_version(old) and parse_version(new) <= hi:
            paths.update(names)
    return tuple(sorted(paths))


@cache
def _pair_sets() -> tuple[tuple[str, frozenset[str]], ...]:
    return tuple((pair.split("..")[1], frozenset(names)) for pair, names in _index().items())


@cache
def changed_in(path: str) -> frozenset[str] | None:
    """The releases whose calls of public ``path`` (a function or class) may bind differently
    from the release before; None when the index does not know the path."""
    found = frozenset(new for new, names in _pair_sets() if path in names)
    return found or None
