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
from collections.abc import Iterator, Mapping, Sequence
from functools import cache, lru_cache
from typing import Any

# (`migrate_fi.api.differ` is imported by the functions that compare releases: the main
# process of a `check` reads this index, and compares none)
from migrate_fi.api.paths import CACHE_ATTRIBUTES, ApiPath
from migrate_fi.api.store import (
    DATA_DIR,
    available_releases,
    on_forget,
    user_data_dir,
    write_json,
)
from migrate_fi.base.versions import parse_version

__all__ = [
    "INDEX_FILE",
    "build_index",
    "changed_in",
    "default_trigger_paths",
    "deprecated_in_range",
    "enum_triggers",
    "first_change",
    "forget",
    "listed_in",
    "patched_in_range",
    "private_gone_in_range",
    "public_by_target",
    "public_calls",
    "trigger_paths",
    "write_index",
]

Index = dict[str, Any]  # changes.json: see `build_index`

INDEX_FILE = os.path.join(DATA_DIR, "changes.json")
_NAME = "changes.json"
# what the pairs are computed with: an index written by another version of this code (a user
# folder's, after an upgrade of migrate-fi) is computed again
LOGIC = 8  # 2: renamed parameters count as changes; 3: defaults and enums; 4: `attrs` paths
# 5: a cached function's `cache_clear` (`cache_info`, `cache_parameters`) where the cache went
# 6: `patches`; 7: `private`; 8: `deprecations`
_PER_PAIR = ("pairs", "defaults", "enums", "patches", "private", "deprecations")


def build_index(
    releases: list[str] | None = None, known: Sequence[Mapping[str, Any]] = ()
) -> Index:
    """The index of ``releases`` (default: every release there is data for); what an index in
    ``known`` (of other releases, of this `LOGIC`; the first that has it) holds is taken from it.

    Per consecutive pair: ``pairs``, the public paths of the callables whose calls may bind
    differently, or that are gone; ``defaults``, those of the callables a default of which
    changed; ``enums``, the enums renumbered or with members gone (name -> the members gone);
    ``patches``, the module attributes a replacement of which means something else
    (`differ.patched_paths`); ``private``, the private names of modules still there that are
    gone (`differ.private_names_gone`); ``deprecations``, the public paths of the callables
    that start to warn they are deprecated on every call (`differ.deprecated_callables`).
    Per release: ``enum_links``, for each enum name ``enums`` ever lists, the callables with a
    parameter that may take its value (its default names the enum, or the parameter is named
    after it)."""
    from migrate_fi.api.differ import (
        changed_callables,
        changed_defaults,
        changed_enums,
        deprecated_callables,
        patched_paths,
        private_names_gone,
    )

    releases = available_releases() if releases is None else releases
    index: Index = {"logic": LOGIC, "releases": releases}
    sections: dict[str, dict[str, Any]] = {s: {} for s in _PER_PAIR}
    for old, new in itertools.pairwise(releases):
        pair = f"{old}..{new}"
        done = next((k for k in known if all(pair in k.get(s, {}) for s in _PER_PAIR)), None)
        if done is not None:
            for s in _PER_PAIR:
                sections[s][pair] = done[s][pair]
            continue
        by_target = public_by_target(old)
        paths: set[str] = set()
        for key in changed_callables(old, new):
            # a call to a changed method needs its instance built in the same file (or in the
            # same class): the class's path is there
            api_key = ApiPath(key)
            target = api_key.owner if api_key.is_method else key
            function, _, attribute = key.rpartition(".")
            if attribute in CACHE_ATTRIBUTES and target not in by_target and function in by_target:
                # (`f.cache_clear` of a function still there, no longer cached: by each path
                # of ``f``)
                paths.update(f"{p}.{attribute}" for p in by_target[function])
                continue
            paths.update(by_target.get(target, [target]))
        paths.update(_vanished_paths(old, new))
        sections["pairs"][pair] = sorted(paths)
        sections["patches"][pair] = patched_paths(old, new)
        sections["private"][pair] = private_names_gone(old, new)
        sections["deprecations"][pair] = sorted(
            {p for key in deprecated_callables(old, new) for p in public_calls(key, by_target)}
        )
        sections["defaults"][pair] = sorted(
            {p for key in changed_defaults(old, new) for p in public_calls(key, by_target)}
        )
        gone: dict[str, set[str]] = {}
        for change in changed_enums(old, new).values():
            gone.setdefault(change.name, set()).update(m for m in change.old if m not in change.new)
        sections["enums"][pair] = {name: sorted(members) for name, members in sorted(gone.items())}
    index.update(sections)
    names = sorted({name for found in sections["enums"].values() for name in found})
    index["enum_names"] = names
    # (an index's links hold for the names it was computed for)
    usable = [k for k in known if set(names) <= set(k.get("enum_names", ()))]
    links: dict[str, dict[str, list[str]]] = {}
    for release in releases:
        before = next(
            (k["enum_links"][release] for k in usable if release in k.get("enum_links", {})), None
        )
        if before is not None:
            links[release] = {n: before[n] for n in names if n in before}
        else:
            links[release] = _enum_links(release, names)
    index["enum_links"] = links
    return index


@lru_cache(maxsize=4)
def public_by_target(version: str) -> dict[str, list[str]]:
    """Every public path of ``version`` (and each module attribute a caller reaches, `attrs`)
    by the definition it names (worked out once per release: do not change the dict)."""
    from migrate_fi.api.differ import api_for

    by_target: dict[str, list[str]] = {}
    api = api_for(version)
    # (a name a module imports but leaves out of its `__all__` is reached as its attribute too:
    # a call through it is prefiltered as one through a public path)
    for p, t in [*api.public_paths().items(), *api.attrs.items()]:
        if t in api.defs:
            by_target.setdefault(t, []).append(p)
    return by_target


def public_calls(key: str, by_target: dict[str, list[str]]) -> list[str]:
    """Every public path that calls the definition ``key`` (``X().run`` for each path of X)."""
    api_key = ApiPath(key)
    if not api_key.is_method:
        return by_target.get(key, [key])
    owner = api_key.owner
    return [str(ApiPath.method_of(p, api_key.name)) for p in by_target.get(owner, [owner])]


def _enum_links(version: str, names: list[str]) -> dict[str, list[str]]:
    """For each enum name, the public callables of ``version`` with a parameter that may take
    its value: what `differ.enum_parameters` can name, for any release after ``version``."""
    from migrate_fi.api.differ import callable_parameters_naming

    found: dict[str, set[str]] = {}
    for path, name in callable_parameters_naming(version, names):
        found.setdefault(name, set()).add(path)
    return {name: sorted(paths) for name, paths in sorted(found.items())}


def _vanished_paths(old_version: str, new_version: str) -> set[str]:
    """Public paths of definitions and modules that no longer resolve, also where the definition
    lives on elsewhere (a module moved, its class re-exported from the package): an import
    through the old path fails."""
    from migrate_fi.api.differ import api_for

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
    for cached in (
        _index_of,
        trigger_paths,
        patched_in_range,
        private_gone_in_range,
        default_trigger_paths,
        enum_triggers,
        _pair_sets,
        changed_in,
        first_change,
        public_by_target,
    ):
        cached.cache_clear()


def _read(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _index() -> Index:
    return _index_of(tuple(available_releases()), user_data_dir())


@cache
def _index_of(releases: tuple[str, ...], user_folder: str) -> Index:
    """The bundled index, or the user folder's when it covers more releases (built here when
    it is missing or stale, and kept when the folder can be written)."""
    bundled = _read(INDEX_FILE)
    if tuple(bundled.get("releases", ())) == releases:
        return bundled
    path = os.path.join(user_folder, _NAME)
    user = _read(path)
    if user.get("logic") != LOGIC:
        user = {}  # (computed by another version of migrate-fi: nothing of it is reused)
    if tuple(user.get("releases", ())) == releases:
        return user
    known = [k for k in (user, bundled) if k.get("logic") == LOGIC]
    built = build_index(list(releases), known)
    with contextlib.suppress(OSError):
        write_json(path, built)
    return built


def _in_range(from_version: str, to_version: str, section: str) -> Iterator[Any]:
    """The entries of a per-pair section for the consecutive pairs inside (from, to]."""
    lo, hi = parse_version(from_version), parse_version(to_version)
    for pair, found in _index().get(section, {}).items():
        old, new = pair.split("..")
        if lo <= parse_version(old) and parse_version(new) <= hi:
            yield found


@cache
def trigger_paths(from_version: str, to_version: str) -> tuple[str, ...]:
    """Public paths of the functions and classes whose calls may change in (from, to]."""
    return tuple(
        sorted({p for names in _in_range(from_version, to_version, "pairs") for p in names})
    )


def listed_in(section: str, path: str, from_version: str, to_version: str) -> list[str]:
    """The releases in (from, to] whose pair with the release before them lists ``path`` in a
    per-pair ``section`` of the index (``"pairs"``, ``"patches"``), oldest first: where the
    range changes it, read without loading the releases in between."""
    lo, hi = parse_version(from_version), parse_version(to_version)
    found = []
    for pair, listed in _index().get(section, {}).items():
        old, new = pair.split("..")
        if lo <= parse_version(old) and parse_version(new) <= hi and path in listed:
            found.append(new)
    return sorted(found, key=parse_version)


@cache
def patched_in_range(from_version: str, to_version: str) -> frozenset[str]:
    """``module.name`` paths that a replacement assigned to (a patch) may mean something else
    for in (from, to] (`differ.patched_paths`, per consecutive pair)."""
    return frozenset(p for names in _in_range(from_version, to_version, "patches") for p in names)


@cache
def private_gone_in_range(from_version: str, to_version: str) -> frozenset[str]:
    """``module.name`` of the private names that may be gone in (from, to]
    (`differ.private_names_gone`, per consecutive pair: a superset of the range's)."""
    return frozenset(p for names in _in_range(from_version, to_version, "private") for p in names)


@cache
def deprecated_in_range(from_version: str, to_version: str) -> frozenset[str]:
    """Public paths of the callables that start to warn they are deprecated on every call in
    (from, to] (`differ.deprecated_callables`, per consecutive pair)."""
    return frozenset(
        p for names in _in_range(from_version, to_version, "deprecations") for p in names
    )


@cache
def default_trigger_paths(from_version: str, to_version: str) -> tuple[str, ...]:
    """Public paths of the callables a default of which may differ between the two releases
    (a superset of what `differ.changed_defaults` names: a default that differs between A and
    C differs between some consecutive pair in between)."""
    found = _in_range(from_version, to_version, "defaults")
    return tuple(sorted({p for paths in found for p in paths}))


@cache
def enum_triggers(
    from_version: str, to_version: str
) -> tuple[tuple[tuple[str, tuple[str, ...]], ...], tuple[str, ...]] | None:
    """The enums that may be renumbered or lose members in (from, to], by name with the members
    that may be gone, and the callables of ``from_version`` with a parameter that may take the
    value of one; None when the index has no links for ``from_version``."""
    links = _index().get("enum_links", {}).get(from_version)
    if links is None:
        return None
    gone: dict[str, set[str]] = {}
    for found in _in_range(from_version, to_version, "enums"):
        for name, members in found.items():
            gone.setdefault(name, set()).update(members)
    paths = sorted({p for name in gone for p in links.get(name, ())})
    return tuple((n, tuple(sorted(m))) for n, m in sorted(gone.items())), tuple(paths)


@cache
def _pair_sets() -> tuple[tuple[str, frozenset[str]], ...]:
    return tuple(
        (pair.split("..")[1], frozenset(names)) for pair, names in _index()["pairs"].items()
    )


@cache
def changed_in(path: str) -> frozenset[str] | None:
    """The releases whose calls of public ``path`` (a function or class) may bind differently
    from the release before; None when the index does not know the path."""
    found = frozenset(new for new, names in _pair_sets() if path in names)
    return found or None


def _indexed(path: str) -> str:
    """The name the prefilter index knows ``path`` by (a method: its class)."""
    api_path = ApiPath(path)
    return api_path.owner if api_path.is_method else path


def _changing(path: str, old_version: str, new_version: str) -> list[str]:
    """The bundled releases after ``old_version``, up to ``new_version``, whose predecessor
    differs for ``path`` (the prefilter index says which; a path it does not name, a private
    one, may change in every release), oldest first."""
    lo, hi = parse_version(old_version), parse_version(new_version)
    candidates = changed_in(_indexed(path))
    return [
        v
        for v in available_releases()
        if lo < parse_version(v) <= hi and (candidates is None or v in candidates)
    ]


def renamed_in(path: str, old: str, new: str, old_version: str, new_version: str) -> str:
    """The first bundled release after ``old_version`` (up to ``new_version``) whose signature
    of ``path`` has the parameter ``new`` and no longer ``old``: where FlashInfer renamed it
    (``new_version`` where no release in between says)."""
    from migrate_fi.api.differ import api_for

    for v in _changing(path, old_version, new_version):
        found = api_for(v).callable(path)
        names = {p.name for p in found.params} if found is not None else set()
        if new in names and old not in names:
            return v
    return new_version


@lru_cache(maxsize=4096)  # asked at every call site of the path
def first_change(path: str, old_version: str, new_version: str) -> str | None:
    """The first bundled release after ``old_version`` (up to ``new_version``) on which positional
    calls to ``path`` written for ``old_version`` need a rewrite."""
    from migrate_fi.api.differ import api_for, compare_callables

    before = api_for(old_version).callable(path)
    if before is None:
        return None
    inside = _changing(path, old_version, new_version)
    if len(inside) == 1 and changed_in(_indexed(path)) is not None:
        # One release in the range changes the path's calls: the calls written for
        # ``old_version`` bind as before up to the release before it, and calls bind on
        # ``new_version`` as on it. It is the first change if the range changes them at all
        # (most paths: no release in between is read, 5-10 ms each in each worker).
        after = api_for(new_version).callable(path)
        if after is not None:
            return inside[0] if compare_callables(before, after).affected_from is not None else None
    for v in inside:
        after = api_for(v).callable(path)
        if after is not None and compare_callables(before, after).affected_from is not None:
            return v
    return None
