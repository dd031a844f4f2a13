"""The prefilter index: which names change between each pair of consecutive bundled releases.

If a callable differs between releases A and C, it differs between some consecutive pair in
between, so the union of the consecutive pairs in a range names every callable the range changes.
`check` reads this small file instead of diffing two whole releases for every run; the full diff
is computed only when a file passes the prefilter. `migrate-fi signatures build` rewrites the
bundled one. When the user's data folder adds releases, the index of the union is kept there:
only the pairs the bundled index lacks are computed (one or two, for a release or two more).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
from functools import cache, lru_cache
from typing import Any

from migrate_fi.api.differ import api_for, changed_callables, compare_callables
from migrate_fi.api.paths import ApiPath
from migrate_fi.api.store import (
    DATA_DIR,
    available_releases,
    on_forget,
    user_data_dir,
    write_json,
)
from migrate_fi.versions import parse_version

__all__ = [
    "INDEX_FILE",
    "build_index",
    "changed_in",
    "first_change",
    "forget",
    "trigger_paths",
    "write_index",
]

INDEX_FILE = os.path.join(DATA_DIR, "changes.json")
_NAME = "changes.json"
# what the pairs are computed with: an index written by another version of this code (a user
# folder's, after an upgrade of migrate-fi) is computed again
LOGIC = 2  # 2: renamed parameters count as changes


def build_index(
    releases: list[str] | None = None, known: dict[str, list[str]] | None = None
) -> dict[str, object]:
    """The index of ``releases`` (default: every release there is data for); the pairs already
    in ``known`` are taken from it instead of computed."""
    releases = available_releases() if releases is None else releases
    pairs: dict[str, list[str]] = {}
    for old, new in itertools.pairwise(releases):
        if known and f"{old}..{new}" in known:
            pairs[f"{old}..{new}"] = known[f"{old}..{new}"]
            continue
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
    return {"logic": LOGIC, "releases": releases, "pairs": pairs}


def _vanished_paths(old_version: str, new_version: str) -> set[str]:
    """Public paths of definitions and modules that no longer resolve, also where the definition
    lives on elsewhere (a module moved, its class re-exported from the package): an import
    through the old path fails."""
    old, new = api_for(old_version), api_for(new_version)
    candidates = [*old.public_paths(), *(m for m in old.modules if "._" not in m)]
    return {p for p in candidates if new.canonical(p) is None and new.surely_missing(p)}


def write_index(folder: str = DATA_DIR) -> str:
    """Rebuild the bundled index (maintainers: every pair is computed again)."""
    path = write_json(os.path.join(folder, _NAME), build_index(available_releases(folder)))
    forget()
    return path


def update_user_index() -> str | None:
    """Bring the user folder's index up to the union of the data; its path (None when the
    bundled index already covers every release)."""
    forget()
    releases = tuple(available_releases())
    if tuple(_read(INDEX_FILE).get("releases", ())) == releases:
        return None
    _index_of(releases, user_data_dir())  # (built and kept there when missing or stale)
    return os.path.join(user_data_dir(), _NAME)


@on_forget
def forget() -> None:
    for cached in (_index_of, trigger_paths, _pair_sets, changed_in, first_change):
        cached.cache_clear()


def _read(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _index() -> dict[str, list[str]]:
    return _index_of(tuple(available_releases()), user_data_dir())


@cache
def _index_of(releases: tuple[str, ...], user_folder: str) -> dict[str, list[str]]:
    """The pairs of the bundled index, or of the user folder's when it covers more releases
    (built here when it is missing or stale, and kept when the folder can be written)."""
    bundled = _read(INDEX_FILE)
    if tuple(bundled.get("releases", ())) == releases:
        pairs: dict[str, list[str]] = bundled["pairs"]
        return pairs
    path = os.path.join(user_folder, _NAME)
    user = _read(path)
    if user.get("logic") != LOGIC:
        user = {}  # (computed by another version of migrate-fi: nothing of it is reused)
    if tuple(user.get("releases", ())) == releases:
        pairs = user["pairs"]
        return pairs
    built = build_index(list(releases), {**bundled.get("pairs", {}), **user.get("pairs", {})})
    with contextlib.suppress(OSError):
        write_json(path, built)
    pairs = built["pairs"]  # type: ignore[assignment]
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


@lru_cache(maxsize=4096)  # asked at every call site of the path
def first_change(path: str, old_version: str, new_version: str) -> str | None:
    """The first bundled release after ``old_version`` (up to ``new_version``) on which positional
    calls to ``path`` written for ``old_version`` need a rewrite."""

    before = api_for(old_version).callable(path)
    if before is None:
        return None
    lo, hi = parse_version(old_version), parse_version(new_version)
    api_path = ApiPath(path)
    named = api_path.owner if api_path.is_method else path
    # only the releases whose predecessor differs for this path (the prefilter index says
    # which); a path the index does not name (a private one) is compared in every release
    candidates = changed_in(named)
    for v in available_releases():
        if not lo < parse_version(v) <= hi or (candidates is not None and v not in candidates):
            continue
        after = api_for(v).callable(path)
        if after is not None and compare_callables(before, after).affected_from is not None:
            return v
    return None
