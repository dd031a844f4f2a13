"""Maintainers: regenerate the bundled release data from the real wheels and PyPI.

    python scripts/update_api_data.py --new           (the releases PyPI has that are not bundled)
    python scripts/update_api_data.py [VERSION ...]   (default: every release in versions.KNOWN_RELEASES)

1. Downloads each `flashinfer-python` wheel with `pip download --no-deps` into a cache folder
   (MIGRATE_FI_WHEEL_CACHE, default ~/.cache/migrate-fi/wheels), then runs
   `migrate-fi signatures build --output-dir migrate_fi/data/api` on them, which writes
   migrate_fi/data/api/<version>.json.gz with
   the wheel's file name and sha256 recorded as provenance (about 10 minutes on two cores).
2. Writes migrate_fi/data/api/requires.json: each release's `Requires-Dist` (the others kept).
3. Writes migrate_fi/data/api/indexes.json: the versions of flashinfer-cubin and
   flashinfer-jit-cache that PyPI serves, with today's date.
4. With --new, or a VERSION not bundled yet: adds it to KNOWN_RELEASES in migrate_fi/base/versions.py.

The release routine around it is in CONTRIBUTING.md ("When FlashInfer publishes a release").
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

from migrate_fi.api.releases import read_requires_dist, write_index_data, write_requires
from migrate_fi.api.store import DATA_DIR
from migrate_fi.api.update import refresh_engines
from migrate_fi.base.versions import KNOWN_RELEASES, parse_version

INDEXED = ("flashinfer-cubin", "flashinfer-jit-cache")


def pypi_versions(package: str) -> list[str]:
    try:
        with urllib.request.urlopen(f"https://pypi.org/pypi/{package}/json", timeout=60) as r:
            releases = json.load(r)["releases"]
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return []  # not published on PyPI at all
        raise
    return sorted((v for v, files in releases.items() if files), key=parse_version)


def main() -> None:
    args = sys.argv[1:]
    if args == ["--new"]:
        known = {str(parse_version(v)) for v in KNOWN_RELEASES}
        newest = parse_version(KNOWN_RELEASES[-1])
        versions = [
            v
            for v in pypi_versions("flashinfer-python")
            if parse_version(v) > newest and not parse_version(v).is_prerelease and v not in known
        ]
        if not versions:
            print(f"nothing new on PyPI after {KNOWN_RELEASES[-1]}")
            return
        print(f"new on PyPI: {', '.join(versions)}")
    else:
        versions = args or list(KNOWN_RELEASES)
    cache = os.environ.get(
        "MIGRATE_FI_WHEEL_CACHE", os.path.expanduser("~/.cache/migrate-fi/wheels")
    )
    os.makedirs(cache, exist_ok=True)
    wheels = {}
    for version in versions:
        pattern = os.path.join(cache, f"flashinfer_python-{version}-*.whl")
        if not glob.glob(pattern):
            command = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", cache]
            subprocess.run([*command, f"flashinfer-python=={version}"], check=True)
        (wheel,) = glob.glob(pattern)
        wheels[version] = wheel
    # one call: the prefilter index is rebuilt once, after every release is written
    build = [sys.executable, "-m", "migrate_fi", "signatures", "build", "--output-dir", DATA_DIR]
    subprocess.run([*build, *wheels.values()], check=True)
    requires = {**requirements_recorded(), **{v: read_requires_dist(w) for v, w in wheels.items()}}
    print(write_requires(requires))
    print(
        write_index_data(
            {
                "read": time.strftime("%Y-%m-%d"),
                "source": "https://pypi.org/pypi/<package>/json",
                "packages": {p: pypi_versions(p) for p in INDEXED},
            }
        )
    )
    # (what each serving engine release requires of FlashInfer: FI006's check of a pin next to
    # an engine's; only the releases not recorded yet are read)
    refresh_engines((), DATA_DIR)
    added = [v for v in versions if v not in KNOWN_RELEASES]
    if added:
        print(add_known_releases(added))


def requirements_recorded() -> dict[str, list[str]]:
    try:
        with open(os.path.join(DATA_DIR, "requires.json"), encoding="utf-8") as fh:
            recorded: dict[str, list[str]] = json.load(fh)
            return recorded
    except OSError:
        return {}


def add_known_releases(added: list[str]) -> str:
    """Append releases to `KNOWN_RELEASES` in migrate_fi/base/versions.py (the bundled list)."""
    path = os.path.join(os.path.dirname(DATA_DIR), "..", "versions.py")
    path = os.path.normpath(path)
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    releases = sorted({*KNOWN_RELEASES, *added}, key=parse_version)
    body = "".join(f'    "{v}",\n' for v in releases)
    start = text.index("KNOWN_RELEASES: tuple[str, ...] = (\n")
    end = text.index(")\n", start)
    head = "KNOWN_RELEASES: tuple[str, ...] = (\n"
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text[:start] + head + body + text[end:])
    return f"{path}: KNOWN_RELEASES += {', '.join(added)}"


if __name__ == "__main__":
    main()
