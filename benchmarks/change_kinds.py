"""How many changes of each kind the release data holds, and what the rules do with them.

    python benchmarks/change_kinds.py [--from 0.6.8.post1] [--to 0.7.4] [--all]

Every pair of consecutive bundled releases in the range is compared (`migrate-fi api-diff`), and
each change of a user-facing symbol (`api-diff --public`; `--all`: every symbol) is counted once
per definition and release, by kind and by what the rules do with a call it affects:

- fixed: a rule rewrites the calls (FI002 names positional arguments, renames keywords whose
  rename is certain; FI008 passes an old literal default; FI010 maps a value-change file's
  values; FI011 names a renumbered member; FI002 re-points an import of code that moved);
- review: a rule offers a fix a person reads (`--unsafe-fixes`);
- reported: a rule reports the calls for a person;
- none: no rule acts (a new parameter with a default, a new symbol; a cosmetic default).

It reads only the bundled data; no project is needed.
"""

from __future__ import annotations

import argparse
import itertools
from collections import Counter

from migrate_fi.api.differ import (
    _callable_paths,
    api_for,
    changed_defaults,
    compare_callables,
    diff_releases,
    literal_default,
    moved_to,
    safe_rename,
)
from migrate_fi.api.paths import is_user_facing
from migrate_fi.api.store import available_releases
from migrate_fi.api.value_changes import load_value_changes
from migrate_fi.base.versions import parse_version

NONE_KINDS = {"param-added", "added", "keyword-only"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from", dest="lo", default=available_releases()[0])
    parser.add_argument("--to", dest="hi", default=available_releases()[-1])
    parser.add_argument("--all", action="store_true", help="internal symbols too")
    args = parser.parse_args()
    lo, hi = parse_version(args.lo), parse_version(args.hi)
    releases = [v for v in available_releases() if lo <= parse_version(v) <= hi]
    valued = {(api, c.keyword, c.release) for c in load_value_changes() for api in c.apis}
    counts: Counter[tuple[str, str]] = Counter()
    for old_v, new_v in itertools.pairwise(releases):
        old, new = api_for(old_v), api_for(new_v)
        keys = _callable_paths(old)
        defaults = {
            (c.path, c.name): c for found in changed_defaults(old_v, new_v).values() for c in found
        }
        seen: set[tuple[str, str, str]] = set()
        for change in diff_releases(old_v, new_v):
            if not args.all and not is_user_facing(change.symbol):
                continue
            key = keys.get(change.symbol, change.symbol)
            if (key, change.kind, change.detail) in seen:
                continue  # (one definition re-exported at several paths: counted once)
            seen.add((key, change.kind, change.detail))
            counts[(change.kind, _outcome(change, old, new, defaults, valued, new_v))] += 1
    kinds = sorted({k for k, _ in counts})
    outcomes = ["fixed", "review", "reported", "none"]
    print(f"{releases[0]} .. {releases[-1]}, consecutive pairs, {'all' if args.all else 'public'}")
    print(f"{'kind':24}" + "".join(f"{o:>10}" for o in outcomes) + f"{'total':>10}")
    for kind in kinds:
        row = [counts[(kind, o)] for o in outcomes]
        print(f"{kind:24}" + "".join(f"{n:>10}" for n in row) + f"{sum(row):>10}")
    total = [sum(counts[(k, o)] for k in kinds) for o in outcomes]
    print(f"{'all':24}" + "".join(f"{n:>10}" for n in total) + f"{sum(total):>10}")


def _outcome(change, old, new, defaults, valued, new_v) -> str:  # type: ignore[no-untyped-def]
    kind, symbol = change.kind, change.symbol
    if kind in NONE_KINDS:
        return "none"
    if kind in ("positional", "deprecated-positional"):
        before, after = old.callable(symbol), new.callable(symbol)
        if before is None or after is None:
            return "reported"
        d = compare_callables(before, after)
        start = d.affected_from or 0
        names = [p.name for p in before.positional[start:]]
        keyword = all(after.accepts_keyword(n) for n in names)
        return "fixed" if keyword else "reported"
    if kind == "renamed":
        before, after = old.callable(symbol), new.callable(symbol)
        assert before is not None and after is not None
        d = compare_callables(before, after)
        name = change.detail.split()[1]
        return "fixed" if safe_rename(d.rename_evidence.get(name, "likely")) else "review"
    if kind == "param-removed":
        name = change.detail.split()[1]
        return "fixed" if (symbol, name, new_v) in valued else "reported"
    if kind == "default":
        name = change.detail.split()[2].rstrip(":")
        found = defaults.get((symbol, name))
        if found is None:
            return "none"  # (spelled otherwise: the same value)
        plain, _ = literal_default(found.old)
        return "fixed" if plain and found.keyword and not found.old.endswith("...") else "reported"
    if kind == "enum-value":
        return "fixed"  # numbers passed for it are named (review where linked by name only)
    if kind == "moved":
        return "fixed" if moved_to(old, new, symbol)[0] else "reported"
    return "reported"  # removed, enum-removed, param-required


if __name__ == "__main__":
    main()
