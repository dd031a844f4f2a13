"""Maintainers: regenerate the bundled API data from the real wheels on PyPI.

    python scripts/update_api_data.py [VERSION ...]   (default: every release in versions.KNOWN_RELEASES)

Downloads each `flashinfer-python` wheel with `pip download --no-deps` into a cache folder
(MIGRATE_FI_WHEEL_CACHE, default ~/.cache/migrate-fi/wheels), then runs
`migrate-fi signatures build` on it, which writes migrate_fi/data/api/<version>.json.gz with the
wheel's file name and sha256 recorded as provenance.
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys

from migrate_fi.versions import KNOWN_RELEASES


def main() -> None:
    versions = sys.argv[1:] or list(KNOWN_RELEASES)
    cache = os.environ.get(
        "MIGRATE_FI_WHEEL_CACHE", os.path.expanduser("~/.cache/migrate-fi/wheels")
    )
    os.makedirs(cache, exist_ok=True)
    wheels = []
    for version in versions:
        pattern = os.path.join(cache, f"flashinfer_python-{version}-*.whl")
        if not glob.glob(pattern):
            command = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", cache]
            subprocess.run([*command, f"flashinfer-python=={version}"], check=True)
        (wheel,) = glob.glob(pattern)
        wheels.append(wheel)
    # one call: the prefilter index is rebuilt once, after every release is written
    subprocess.run([sys.executable, "-m", "migrate_fi", "signatures", "build", *wheels], check=True)


if __name__ == "__main__":
    main()
