"""Where a file sits: the path shown for it (relative to the current folder when inside it, as
given otherwise, so that `git apply` takes the diffs)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from migrate_fi.base.modules import _display_path, display_path, display_paths


@pytest.mark.parametrize(
    "relative",
    ["m.py", "pkg/m.py", "pkg/sub/..m.py", "pkg/../m.py", "../outside/m.py", "../m.py", "./m.py"],
)
def test_a_file_is_shown_as_its_folder_and_name_would_be(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, relative: str
) -> None:
    """(the shown prefix is worked out once per folder: the same answer as per file)"""
    cwd = tmp_path / "project"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    paths = [os.path.join(str(cwd), relative), relative, "/" + relative.lstrip("./")]
    for path in paths:
        assert display_path(path) == _display_path(path, os.getcwd()), path
    assert display_paths(paths) == [display_path(p) for p in paths]  # (the folder asked once)
    assert display_path(str(cwd / "pkg" / "m.py")) == os.path.join("pkg", "m.py")
    assert display_path(str(tmp_path / "elsewhere.py")) == str(tmp_path / "elsewhere.py")


@given(
    st.lists(
        st.lists(st.sampled_from(["a", "b", "..", ".", "", "pkg", "x.py"]), max_size=5).map(
            lambda parts: ("/" if parts and parts[0] == "" else "") + "/".join(parts)
        ),
        max_size=30,
    )
)
def test_paths_shown_together_are_each_shown_as_alone(paths: list[str]) -> None:
    """`display_paths` (each folder worked out once, its text cut at the last separator) says
    what `display_path` says of each: doubled and trailing separators, no folder, no name."""
    assert display_paths(paths) == [display_path(p) for p in paths]


def test_more_folders_than_the_memo_keeps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    paths = [str(tmp_path / f"d{i}" / "m.py") for i in range(3000)] + ["../up/m.py"]
    assert display_paths(paths) == [f"d{i}/m.py" for i in range(3000)] + ["../up/m.py"]


def test_a_run_in_the_same_process_asks_the_files_again(tmp_path: Path) -> None:
    """What is kept of the tree for a run (package layout, shebangs, configured line length)
    is asked again once a run ends: a process that runs twice sees the files as they are."""
    from migrate_fi.base import depends
    from migrate_fi.base.modules import module_identity, python_script
    from migrate_fi.codemods._layout import line_length

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "m.py").write_text("x = 1\n")
    (tmp_path / "tool").write_text("echo\n")
    (tmp_path / "pyproject.toml").write_text("[tool.ruff]\nline-length = 100\n")
    assert module_identity(str(pkg / "m.py")) == ("m", False)
    assert not python_script(str(tmp_path / "tool"))
    assert line_length(str(pkg / "m.py")) == 100
    (pkg / "__init__.py").write_text("")
    (tmp_path / "tool").write_text("#!/usr/bin/env python3\n")
    (tmp_path / "pyproject.toml").write_text("[tool.ruff]\nline-length = 120\n")
    depends.forget_stats()  # (a run ends)
    assert module_identity(str(pkg / "m.py")) == ("pkg.m", False)
    assert python_script(str(tmp_path / "tool"))
    assert line_length(str(pkg / "m.py")) == 120
