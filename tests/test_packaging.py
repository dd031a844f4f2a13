"""The rules ship as `migrate_fi.codemods` (`codemods/`), for editable and normal
installs alike."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

import migrate_fi.codemods
from migrate_fi.run.registry import all_rules

ROOT = Path(__file__).parents[1]


def test_every_rule_module_is_registered() -> None:
    folder = Path(migrate_fi.codemods.__path__[0])
    stems = {p.stem for p in folder.glob("*.py") if not p.name.startswith("_")}
    assert stems
    assert {c.id for c in all_rules()} == stems


def test_no_bare_rules_package() -> None:
    # the rules are a subpackage: nothing named `rules` at the top level, installed or not
    assert importlib.util.find_spec("rules") is None
    assert not (ROOT / "rules").exists()


@pytest.mark.skipif(
    os.environ.get("MIGRATE_FI_SKIP_WHEEL") == "1", reason="MIGRATE_FI_SKIP_WHEEL=1"
)
@pytest.mark.slow
def test_wheel_contents(tmp_path: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
    )
    if r.returncode != 0 and "No matching distribution" in r.stderr:
        pytest.skip("setuptools cannot be fetched for the build (no package index)")
    assert r.returncode == 0, r.stderr
    (wheel,) = tmp_path.glob("migrate_fi-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for module in Path(ROOT, "codemods").glob("*.py"):
        assert f"migrate_fi/codemods/{module.name}" in names, module
    assert "migrate_fi/codemods/positional_binding.py" in names
    for module in Path(ROOT, "migrate_fi").rglob("*.py"):
        assert module.relative_to(ROOT).as_posix() in names, module
    assert not any(n.startswith("codemods/") for n in names)  # (no bare top-level package)
    for data in Path(ROOT, "migrate_fi", "data").rglob("*.*"):
        assert data.relative_to(ROOT).as_posix() in names, data
    assert not any(n.startswith("rules/") for n in names)
    # installed from the wheel, away from the source tree: every rule is found
    target = tmp_path / "site"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(target),
            str(wheel),
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    script = (
        "import sys, runpy, migrate_fi, migrate_fi.codemods\n"
        "print(migrate_fi.__file__, migrate_fi.codemods.__path__[0], file=sys.stderr)\n"
        "sys.argv = ['migrate-fi', 'rules']\n"
        "runpy.run_module('migrate_fi', run_name='__main__')\n"
    )
    listed = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(target)},
    )
    assert listed.stderr.split()[:2] == [
        str(target / "migrate_fi" / "__init__.py"),
        str(target / "migrate_fi" / "codemods"),
    ], listed.stderr
    assert listed.returncode == 0, listed.stderr
    assert {c.code for c in all_rules()} <= set(listed.stdout.split()), listed.stdout
    assert not any(n.startswith("tests/") for n in names)
    (meta,) = [n for n in names if n.endswith(".dist-info/METADATA")]
    metadata = zipfile.ZipFile(wheel).read(meta).decode()
    # verify's dependencies are an extra: the other commands never need torch or FlashInfer
    assert "Provides-Extra: verify" in metadata
    requires = [
        Requirement(x.split(":", 1)[1])
        for x in metadata.splitlines()
        if x.startswith("Requires-Dist:")
    ]
    for name in ("torch", "flashinfer-python"):
        (req,) = [r for r in requires if r.name == name]
        assert req.marker is not None and req.marker.evaluate({"extra": "verify"})
        assert not req.marker.evaluate({"extra": ""})
