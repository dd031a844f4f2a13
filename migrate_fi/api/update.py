"""`migrate-fi signatures update`: the FlashInfer releases published after the data, added to the
user's data folder.

The package index is asked through pip, the client the user already has and configures (its
index URL, mirrors, proxies, certificates: pip.conf and ``PIP_*`` variables): ``pip index
versions`` names the releases, ``pip download --no-deps --only-binary=:all:`` fetches each wheel.
Nothing else in migrate-fi touches the network.

Every new wheel is downloaded and extracted into a staging folder first; only when all of them
were read are the records, their ``releases.json`` entries and the index of the union written
(each file replaced at once). A wheel that cannot be read stops the update with one line naming
it, and nothing is written.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from migrate_fi.base.versions import VersionError, parse_version

__all__ = ["UpdateError", "check_writable", "refresh_engines", "update"]

PACKAGE = "flashinfer-python"
COMPANIONS = ("flashinfer-cubin", "flashinfer-jit-cache")


class UpdateError(Exception):
    """The update cannot go on; one line for the user."""


@dataclass
class _Pip:
    options: tuple[str, ...]

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "pip", *args, *self.options]
        env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
        try:
            return subprocess.run(command, capture_output=True, text=True, env=env, check=False)
        except OSError as exc:
            raise UpdateError(f"cannot run pip ({exc})") from None

    def versions(self, package: str, *, pre: bool) -> list[str] | None:
        """The versions the index offers, newest first; None when it has no such package."""
        done = self.run("index", "versions", package, *(["--pre"] if pre else []))
        if done.returncode != 0:
            if "No matching distribution" in done.stderr:
                return None
            if "No module named pip" in done.stderr or "unknown command" in done.stderr:
                raise UpdateError(
                    f"`{sys.executable} -m pip index versions` is not available:"
                    " install pip (21.2 or newer) in this environment"
                )
            raise UpdateError(f"pip could not ask the package index about {package}: {_last(done)}")
        for line in done.stdout.splitlines():
            if line.startswith("Available versions:"):
                listed = line.split(":", 1)[1]
                return [v.strip() for v in listed.split(",") if v.strip()]
        raise UpdateError(f"pip index versions {package}: no version list in its output")

    def requires_dist(self, package: str, version: str) -> list[str]:
        """The `Requires-Dist` of ``package==version``, read by pip's resolver without
        installing it (``install --dry-run --report``: the index's metadata file where it
        serves one, so a 400 MB wheel is not downloaded; wheels only, nothing is built)."""
        with tempfile.TemporaryDirectory(prefix="migrate-fi-") as folder:
            report = os.path.join(folder, "report.json")
            done = self.run(
                "install", "--dry-run", "--no-deps", "--ignore-installed", "-q",
                "--only-binary=:all:", "--report", report, f"{package}=={version}",
            )  # fmt: skip
            try:
                with open(report, encoding="utf-8") as fh:
                    found = json.load(fh)["install"][0]["metadata"]
            except (OSError, ValueError, KeyError, IndexError):
                raise UpdateError(
                    f"pip could not read the metadata of {package} {version}: {_last(done)}"
                ) from None
        return [str(line) for line in found.get("requires_dist", [])]

    def download(self, version: str, folder: str) -> str:
        done = self.run(
            "download", "--no-deps", "--only-binary=:all:", "-q", "-d", folder,
            f"{PACKAGE}=={version}",
        )  # fmt: skip
        found = glob.glob(os.path.join(folder, f"flashinfer_python-{version}-*.whl"))
        if done.returncode != 0 or len(found) != 1:
            raise UpdateError(
                f"pip could not download {PACKAGE} {version}: {_last(done)}; nothing was written"
            )
        return found[0]


def _last(done: subprocess.CompletedProcess[str]) -> str:
    lines = [
        line.strip()
        for line in (done.stderr or done.stdout).splitlines()
        if line.strip() and not line.startswith("WARNING: pip index is currently")
    ]
    return lines[-1] if lines else f"exit status {done.returncode}"


def check_writable(folder: str) -> None:
    """Refuse a data folder that cannot be written, before anything is downloaded."""
    try:
        os.makedirs(folder, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise UpdateError(
            f"{folder}: cannot write the API data there ({reason}); set MIGRATE_FI_DATA_DIR"
            " to a folder you can write"
        ) from None


def update(
    folder: str,
    *,
    pip_options: Sequence[str] = (),
    versions: Sequence[str] = (),
    pre: bool = False,
    echo: Callable[[str], None] = print,
) -> list[str]:
    """Add the releases the package index offers beyond the data (or ``versions``) to
    ``folder``; the releases added."""
    from migrate_fi.api import store
    from migrate_fi.api.extract import ExtractError, extract_release
    from migrate_fi.api.index import update_user_index
    from migrate_fi.api.releases import read_requires_dist

    check_writable(folder)
    pip = _Pip(tuple(pip_options))
    known = store.available_releases()
    have = {str(parse_version(v)) for v in known}
    newest = parse_version(known[-1]) if known else None
    stale = [v for v, e in store.read_manifest(folder).items() if e.get("format") != store.FORMAT]
    if versions:
        wanted = []
        for v in versions:
            try:
                canonical = str(parse_version(v))
            except VersionError as exc:
                raise UpdateError(str(exc)) from None
            if store.origin(canonical) == "bundled":
                echo(f"{PACKAGE} {canonical}: bundled with this migrate-fi already")
            else:
                wanted.append(canonical)
    else:
        offered = pip.versions(PACKAGE, pre=pre)
        if not offered:
            raise UpdateError(
                f"the package index offers no {PACKAGE} through pip (offline, or another index"
                " configured?)"
            )
        wanted = [
            v
            for v in offered
            if (str(parse_version(v)) not in have and (newest is None or parse_version(v) > newest))
            or v in stale
        ]
        if not wanted:
            echo(
                f"nothing new: the data covers {known[0]} to {known[-1]}, and the newest"
                f" {PACKAGE} the package index offers is {offered[0]}"
            )
    wanted = sorted(set(wanted), key=parse_version)
    read: list[tuple[dict[str, Any], list[str]]] = []
    with tempfile.TemporaryDirectory(dir=folder, prefix=".update-") as staging:
        for version in wanted:
            echo(f"{PACKAGE} {version}: downloading through pip")
            wheel = pip.download(version, staging)
            try:
                record = extract_release(wheel)
                requires = read_requires_dist(wheel)
            except (ExtractError, OSError, ValueError, KeyError, StopIteration) as exc:
                reason = (
                    str(exc) if isinstance(exc, ExtractError) else f"not a readable wheel ({exc})"
                )
                raise UpdateError(
                    f"{os.path.basename(wheel)}: {reason.removeprefix(wheel + ': ')};"
                    " nothing was written"
                ) from None
            got = record["provenance"]["version"]
            if str(parse_version(got)) != str(parse_version(version)):
                raise UpdateError(
                    f"{os.path.basename(wheel)}: its metadata says version {got}, not {version};"
                    " nothing was written"
                )
            read.append((record, requires))
    for record, requires in read:
        path = store.write_release(record, folder)
        store.register(folder, record, requires)
        echo(
            f"{record['provenance']['version']}: {len(record['modules'])} modules,"
            f" {len(record['defs'])} definitions -> {path}"
        )
    _refresh_companions(pip, folder, echo)
    refresh_engines(pip_options, folder, echo)
    index = update_user_index()
    if index and read:
        echo(f"index of the changes between releases -> {index}")
    return [r["provenance"]["version"] for r, _ in read]


def _refresh_companions(pip: _Pip, folder: str, echo: Callable[[str], None]) -> None:
    """What the user's package index serves of FlashInfer's companion packages and of every
    package a release requires (FI006 and FI007 read it); kept as it was when the index cannot
    be asked."""
    from migrate_fi.api.releases import forget, required_packages
    from migrate_fi.api.store import write_json

    packages: dict[str, list[str]] = {}
    # (the companions, and every package a release requires: FI007 moves pins of those only
    # to versions the index serves)
    for package in sorted({*COMPANIONS, *required_packages()}):
        try:
            offered = pip.versions(package, pre=False)
        except UpdateError as exc:
            echo(f"{package}: not refreshed ({exc})")
            return
        packages[package] = sorted(offered or [], key=parse_version)
    with contextlib.suppress(OSError):
        write_json(
            os.path.join(folder, "indexes.json"),
            {
                "read": time.strftime("%Y-%m-%d"),
                "source": "pip index versions <package> (the user's package index)",
                "packages": packages,
            },
        )
    forget()


def refresh_engines(
    pip_options: Sequence[str], folder: str, echo: Callable[[str], None] = print
) -> int:
    """What the serving engines' releases the data lacks require of FlashInfer (FI006 checks a
    pin next to an engine's against it), added to ``folder``'s ``engines.json``; the number of
    releases read. Kept as it was when the index cannot be asked."""
    from migrate_fi.api.releases import (
        ENGINES,
        engine_releases,
        flashinfer_lines,
        forget,
        recorded_engines,
        write_engine_data,
    )

    pip = _Pip(tuple(pip_options))
    path = os.path.join(folder, "engines.json")
    kept = recorded_engines(folder)
    added = 0
    for engine in ENGINES:
        try:
            offered = pip.versions(engine, pre=False) or []
        except UpdateError as exc:
            echo(f"{engine}: not read ({exc})")
            return added
        recorded = engine_releases(engine)
        for version in sorted(set(offered) - set(recorded), key=parse_version):
            try:
                lines = flashinfer_lines(pip.requires_dist(engine, version))
            except UpdateError as exc:
                echo(f"{engine} {version}: not read ({exc})")
                continue
            kept.setdefault(engine, {})[version] = lines
            added += 1
    if added:
        with contextlib.suppress(OSError):
            write_engine_data(
                kept,
                time.strftime("%Y-%m-%d"),
                "pip install --dry-run --report <engine>==<release> (its Requires-Dist)",
                folder,
            )
        forget()
        echo(f"serving engines: {added} releases' FlashInfer requirements -> {path}")
    return added
