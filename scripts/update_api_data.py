"""Maintainers: regenerate the bundled release data from the real wheels and PyPI.

    python scripts/update_api_data.py [VERSION ...]   (default: every release in versions.KNOWN_RELEASES)

1. Downloads each `flashinfer-python` wheel with `pip download --no-deps` into a cache folder
   (MIGRATE_FI_WHEEL_CACHE, default ~/.cache/migrate-fi/wheels), then runs
   `migrate-fi signatures build` on them, which writes migrate_fi/data/api/<version>.json.gz with
   the wheel's file name and sha256 recorded as provenance (about 10 minutes on two cores).
2. Writes migrate_fi/data/api/requires.json: each release's `Requires-Dist`.
3. Writes migrate_fi/data/api/indexes.json: the versions of flashinfer-cubin and
   flashinfer-jit-cache that PyPI serves, with today's date.
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
from migrate_fi.versions import KNOWN_RELEASES, parse_version

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
    versions = sys.argv[1:] or list(KNOWN_RELEASES)
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
    subprocess.run(
        [sys.executable, "-m", "migrate_fi", "signatures", "build", *wheels.values()], check=True
    )
    print(write_requires({v: read_requires_dist(w) for v, w in wheels.items()}))
    print(
        write_index_data(
            {
                "read": time.strftime("%Y-%m-%d"),
                "source": "https://pypi.org/pypi/<package>/json",
                "packages": {p: pypi_versions(p) for p in INDEXED},
            }
        )
    )


if __name__ == "__main__":
    main()
