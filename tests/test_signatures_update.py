"""`migrate-fi signatures update` against a local package index (a folder of wheel files that pip
reads with --no-index --find-links: no network), and the union of the bundled and the user's data
that every command then reads.

The wheels are built here: a `flashinfer-python` 0.7.5 whose `rmsnorm` gained a parameter in the
middle of its signature (so a positional call written for 0.7.4 binds to the wrong parameter), and a
broken one. Runs the real command in a subprocess, as a user would.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from test_bad_input import _can_drop_dac, _drop_dac

pytestmark = pytest.mark.slow  # several pip and migrate-fi processes

NORM_075 = '''\
def rmsnorm(input, weight, bias=None, eps=1e-6, out=None, enable_pdl=None):
    """0.7.5 (made up for this test): a bias before eps."""
'''

PROJECT = """\
import flashinfer


def norm(x, w):
    return flashinfer.norm.rmsnorm(x, w, 1e-6)
"""


def wheel(folder: Path, version: str, modules: dict[str, str], requires: list[str]) -> Path:
    path = folder / f"flashinfer_python-{version}-py3-none-any.whl"
    info = f"flashinfer_python-{version}.dist-info"
    metadata = "\n".join(
        ["Metadata-Version: 2.1", "Name: flashinfer-python", f"Version: {version}"]
        + [f"Requires-Dist: {r}" for r in requires]
    )
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in modules.items():
            zf.writestr(name, text)
        zf.writestr(f"{info}/METADATA", metadata + "\n")
        zf.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        zf.writestr(f"{info}/RECORD", "")
    return path


def release_075(folder: Path) -> Path:
    return wheel(
        folder,
        "0.7.5",
        {
            "flashinfer/__init__.py": "from . import norm\nfrom .norm import rmsnorm\n",
            "flashinfer/norm.py": NORM_075,
        },
        ["torch", "apache-tvm-ffi<0.2,>=0.1.6", "pytest; extra == 'test'"],
    )


@pytest.fixture
def index(tmp_path: Path) -> Path:
    folder = tmp_path / "index"
    folder.mkdir()
    return folder


def run(
    tmp_path: Path, index: Path, *args: str, data: Path | None = None, drop_dac: bool = False
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "MIGRATE_FI_DATA_DIR": str(data or tmp_path / "data"),
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(index),
        "PIP_NO_CACHE_DIR": "1",
    }
    return subprocess.run(
        [sys.executable, "-m", "migrate_fi", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        preexec_fn=_drop_dac if drop_dac else None,
    )


def records(data: Path) -> list[str]:
    return sorted(p.name for p in data.glob("*.json.gz")) if data.is_dir() else []


def test_nothing_new(tmp_path: Path, index: Path) -> None:
    wheel(index, "0.7.4", {"flashinfer/__init__.py": ""}, [])
    r = run(tmp_path, index, "signatures", "update")
    assert r.returncode == 0, r.stderr
    assert "nothing new: the data covers 0.5.0 to 0.7.4" in r.stdout
    assert "newest flashinfer-python the package index offers is 0.7.4" in r.stdout
    assert records(tmp_path / "data") == []
    assert not list((tmp_path / "data").glob(".update-*"))


def test_one_new_release_is_added_and_every_command_reads_it(tmp_path: Path, index: Path) -> None:
    wheel(index, "0.7.4", {"flashinfer/__init__.py": ""}, [])
    built = release_075(index)
    data = tmp_path / "data"

    r = run(tmp_path, index, "signatures", "update")
    assert r.returncode == 0, r.stderr
    assert "flashinfer-python 0.7.5: downloading through pip" in r.stdout
    assert records(data) == ["0.7.5.json.gz"]
    manifest = json.loads((data / "releases.json").read_text())["releases"]
    entry = manifest["0.7.5"]
    assert entry["source"] == built.name
    assert entry["sha256"] == hashlib.sha256(built.read_bytes()).hexdigest()
    # the extras' requirements too, with their markers (FI007 reads those the project installs)
    assert entry["requires"] == ["torch", "apache-tvm-ffi<0.2,>=0.1.6", "pytest; extra == 'test'"]
    assert entry["read"].endswith("Z")
    # the index of the union: the bundled pairs, and the one new pair
    changes = json.loads((data / "changes.json").read_text())
    assert changes["releases"][-2:] == ["0.7.4", "0.7.5"]
    assert "flashinfer.norm.rmsnorm" in changes["pairs"]["0.7.4..0.7.5"]
    bundled_pairs = json.loads(
        (Path(__file__).parents[1] / "migrate_fi/data/api/changes.json").read_text()
    )["pairs"]
    assert all(changes["pairs"][k] == v for k, v in bundled_pairs.items())

    listed = run(tmp_path, index, "signatures", "list")
    assert listed.returncode == 0, listed.stderr
    assert f"0.7.5  user  {built.name}  sha256:{entry['sha256']}" in listed.stdout
    assert "0.7.4  bundled  flashinfer_python-0.7.4-py3-none-any.whl" in listed.stdout

    # a project pinned to 0.7.4: --to defaults to the newest release there is data for
    project = tmp_path / "project"
    project.mkdir()
    (project / "requirements.txt").write_text("flashinfer-python==0.7.4\n")
    (project / "model.py").write_text(PROJECT)
    found = run(project, index, "check", "--output-format", "json", data=data)
    assert found.returncode == 1, found.stderr
    sites = json.loads(found.stdout)
    positional = [d for d in sites["diagnostics"] if d["code"] == "FI002"]
    assert [(d["path"], d["line"]) for d in positional] == [("model.py", 5)], sites
    assert "0.7.5" in positional[0]["message"]
    requires = [d for d in sites["diagnostics"] if d["code"] == "FI006"]
    assert requires and "0.7.5" in requires[0]["message"]

    again = run(tmp_path, index, "signatures", "update")
    assert again.returncode == 0, again.stderr
    assert "nothing new: the data covers 0.5.0 to 0.7.5" in again.stdout

    # a record damaged on disk: one line that says how to fetch it again, never a traceback
    (data / "0.7.5.json.gz").write_bytes(b"junk")
    damaged = run(project, index, "check", data=data)
    assert damaged.returncode == 2 and "Traceback" not in damaged.stderr
    assert "the API data of 0.7.5 cannot be read" in damaged.stderr
    assert "`migrate-fi signatures update 0.7.5` fetches it again" in damaged.stderr
    fetched = run(tmp_path, index, "signatures", "update", "0.7.5")
    assert fetched.returncode == 0, fetched.stderr
    assert run(project, index, "check", data=data).returncode == 1


@pytest.mark.parametrize(
    ("broken", "said"),
    [
        ("truncated", "pip could not download flashinfer-python 0.7.6: ERROR: Wheel"),
        ("no package", "flashinfer_python-0.7.6-py3-none-any.whl: no flashinfer/__init__.py"),
    ],
)
def test_a_broken_wheel_writes_nothing(tmp_path: Path, index: Path, broken: str, said: str) -> None:
    release_075(index)  # read first, and not written either: all or nothing
    if broken == "truncated":
        (index / "flashinfer_python-0.7.6-py3-none-any.whl").write_bytes(b"PK\x03\x04 truncated")
    else:
        wheel(index, "0.7.6", {"flashinfer_other/__init__.py": ""}, [])
    r = run(tmp_path, index, "signatures", "update")
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert said in line
    assert line.endswith("nothing was written")
    data = tmp_path / "data"
    assert records(data) == [] and not (data / "releases.json").exists()
    assert not list(data.glob(".update-*")) and not list(data.glob(".tmp-*"))


def test_a_data_folder_that_cannot_be_written(tmp_path: Path, index: Path) -> None:
    release_075(index)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    r = run(tmp_path, index, "signatures", "update", data=blocker / "api")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"{blocker / 'api'}: cannot write the API data there" in r.stderr
    assert "MIGRATE_FI_DATA_DIR" in r.stderr


@pytest.mark.skipif(not _can_drop_dac(), reason="cannot take root's write-anything capability away")
def test_a_read_only_data_folder(tmp_path: Path, index: Path) -> None:
    release_075(index)
    data = tmp_path / "data"
    data.mkdir()
    data.chmod(0o555)
    try:
        r = run(tmp_path, index, "signatures", "update", drop_dac=True)
    finally:
        data.chmod(0o755)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"{data}: cannot write the API data there (Permission denied)" in r.stderr
    assert records(data) == []


def test_a_release_newer_than_the_data_says_to_update(tmp_path: Path, index: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "model.py").write_text(PROJECT)
    r = run(project, index, "check", "--from", "0.7.4", "--to", "0.7.9")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "no API data for FlashInfer 0.7.9" in r.stderr
    assert "run `migrate-fi signatures update`" in r.stderr
    # the pins already name it: the same advice, not "--from is newer than --to"
    (project / "requirements.txt").write_text("flashinfer-python==0.7.9\n")
    pinned = run(project, index, "check")
    assert pinned.returncode == 2
    assert "no API data for FlashInfer 0.7.9" in pinned.stderr
    assert "signatures update" in pinned.stderr


def test_signatures_build_writes_to_the_user_folder(tmp_path: Path, index: Path) -> None:
    built = release_075(index)
    r = run(tmp_path, index, "signatures", "build", str(built))
    assert r.returncode == 0, r.stderr
    data = tmp_path / "data"
    assert records(data) == ["0.7.5.json.gz"]
    assert json.loads((data / "releases.json").read_text())["releases"]["0.7.5"]["source"] == (
        built.name
    )
    assert (data / "changes.json").exists()


def engine_wheel(folder: Path, name: str, version: str, requires: list[str]) -> Path:
    path = folder / f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    metadata = "\n".join(
        ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
        + [f"Requires-Dist: {r}" for r in requires]
    )
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"{name}/__init__.py", "")
        zf.writestr(f"{info}/METADATA", metadata + "\n")
        zf.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        zf.writestr(f"{info}/RECORD", "")
    return path


def test_update_reads_what_new_engine_releases_require_and_check_uses_it(
    tmp_path: Path, index: Path
) -> None:
    """A serving engine release the data lacks (here sglang 9.0.0, requiring FlashInfer 0.7.5):
    `signatures update` reads its `Requires-Dist` through pip into the user's `engines.json`,
    and FI006 then moves a FlashInfer pin beside it, or says why not, from that data alone."""
    wheel(index, "0.7.4", {"flashinfer/__init__.py": ""}, [])
    release_075(index)
    engine_wheel(index, "sglang", "9.0.0", ["torch", "flashinfer_python[cu13]==0.7.5"])
    data = tmp_path / "data"
    project = tmp_path / "project"
    project.mkdir()
    (project / "requirements.txt").write_text("sglang==9.0.0\nflashinfer-python==0.7.4\n")
    before = run(project, index, "check", "--to", "0.7.4", "--output-format", "json", data=data)
    assert before.returncode == 0, before.stderr  # (nothing to move yet)

    r = run(tmp_path, index, "signatures", "update")
    assert r.returncode == 0, r.stderr
    assert "serving engines: 1 releases' FlashInfer requirements" in r.stdout
    engines = json.loads((data / "engines.json").read_text())["engines"]
    assert engines["sglang"] == {"9.0.0": ["flashinfer_python[cu13]==0.7.5"]}

    moved = run(project, index, "check", "--output-format", "json", data=data)
    assert moved.returncode == 1, moved.stderr
    (site,) = json.loads(moved.stdout)["diagnostics"]
    assert site["fixable"] and "moved to the target 0.7.5" in site["message"]
    assert "not checked" not in site["message"]
    # the bundled data: sglang 0.5.11 requires 0.6.8.post1, so the pin beside it stays
    (project / "requirements.txt").write_text("sglang==0.5.11\nflashinfer-python==0.7.4\n")
    kept = run(project, index, "check", "--output-format", "json", data=data)
    (site,) = json.loads(kept.stdout)["diagnostics"]
    assert not site["fixable"] and "not moved to 0.7.5" in site["message"]
    assert "sglang 9.0.0 is its first release that accepts FlashInfer 0.7.5" in site["message"]
