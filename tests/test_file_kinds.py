"""Python is read wherever it lives: ``.py`` files, ``.pyi`` stubs, and scripts without a suffix
whose first line runs Python. A script of another language, and a text file, are not."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from migrate_fi.base.modules import is_python_path, module_identity
from migrate_fi.cli import cli

CALL = "fp4_quantize(x, gs[:1], 16, False, True, False, True)"
BODY = f"from flashinfer import fp4_quantize\n\n\ndef q(x, gs):\n    return {CALL}\n"
RANGE = ("--from", "0.6.10", "--to", "0.6.11")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "serve").write_text("#!/usr/bin/env python3\n" + BODY)
    (tmp_path / "bin" / "serve").chmod(0o755)
    (tmp_path / "bin" / "serve311").write_text("#! /usr/bin/python3.11 -u\n" + BODY)
    (tmp_path / "bin" / "run").write_text(f"#!/bin/sh\necho '{CALL}'\n")  # not Python
    (tmp_path / "README").write_text(f"see {CALL}\n")  # not Python
    (tmp_path / "ops.pyi").write_text(f"from flashinfer import fp4_quantize\n\nx = {CALL}\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_stubs_and_python_scripts_are_checked_and_fixed(project: Path) -> None:
    checked = CliRunner().invoke(cli, ["check", *RANGE, "."])
    assert checked.exit_code == 1, checked.output
    found = sorted({line.split(":")[0] for line in checked.stdout.splitlines()})
    assert found == ["bin/serve", "bin/serve311", "ops.pyi"]
    applied = CliRunner().invoke(cli, ["apply", *RANGE, "."])
    assert applied.exit_code == 0, applied.output
    for name in ("bin/serve", "bin/serve311", "ops.pyi"):
        assert "enable_pdl=True" in (project / name).read_text(), name
    assert (project / "bin" / "serve").read_text().startswith("#!/usr/bin/env python3\n")
    if sys.platform != "win32":
        assert stat.S_IMODE(os.stat(project / "bin" / "serve").st_mode) == 0o755
    assert CALL in (project / "bin" / "run").read_text()
    assert CALL in (project / "README").read_text()


def test_what_counts_as_python(tmp_path: Path) -> None:
    (tmp_path / "tool").write_text("#!/usr/bin/env python\nprint(1)\n")
    (tmp_path / "shell").write_text("#!/bin/bash\necho python\n")
    (tmp_path / "empty").write_text("")
    assert is_python_path(str(tmp_path / "x.py")) and is_python_path(str(tmp_path / "x.pyi"))
    assert is_python_path(str(tmp_path / "tool"))
    assert not is_python_path(str(tmp_path / "shell"))
    assert not is_python_path(str(tmp_path / "empty"))
    assert not is_python_path(str(tmp_path / "missing"))
    assert not is_python_path(str(tmp_path / "notes.txt"))


def test_a_stub_is_the_module_of_its_name(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "ops.pyi").write_text("")
    assert module_identity(str(package / "ops.pyi")) == ("pkg.ops", False)
    assert module_identity(str(package / "ops.py")) == ("pkg.ops", False)
