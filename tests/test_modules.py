"""Where a file sits: the path shown for it (relative to the current folder when inside it, as
given otherwise, so that `git apply` takes the diffs)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from migrate_fi.modules import _display_path, display_path, display_paths


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
