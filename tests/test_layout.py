"""The project's line length, read from its configuration, and code wrapped to fit it."""

from __future__ import annotations

from pathlib import Path

from migrate_fi.codemods._layout import DEFAULT_LINE_LENGTH, line_length
from migrate_fi.codemods.graph_capture_tests import _fitted

MESSAGE = 'f"cuda_graph replay diverged too much: max_diff={max_diff}"'


def test_line_length_from_the_nearest_configuration(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.black]\nline-length = 120\n")
    sub = tmp_path / "pkg" / "tests"
    sub.mkdir(parents=True)
    assert line_length(str(sub / "test_x.py")) == 120
    (tmp_path / "pkg" / "ruff.toml").write_text("line-length = 79\n")
    from migrate_fi.codemods import _layout

    _layout._for_folder.cache_clear()
    assert line_length(str(sub / "test_x.py")) == 79


def test_unreadable_or_absent_configuration_gives_the_default(tmp_path: Path) -> None:
    from migrate_fi.codemods import _layout

    _layout._for_folder.cache_clear()
    (tmp_path / "pyproject.toml").write_text("[tool.ruff\nline-length = ")
    (tmp_path / "setup.cfg").write_text("[flake8]\nmax-line-length = 100\n")
    assert line_length(str(tmp_path / "m.py")) == 100
    (tmp_path / "setup.cfg").unlink()
    _layout._for_folder.cache_clear()
    assert line_length(str(tmp_path / "m.py")) == DEFAULT_LINE_LENGTH  # the broken one is skipped


def test_the_replay_bound_wraps_like_a_formatter() -> None:
    assert _fitted(True, "0.5", MESSAGE, 120) == f"self.assertLess(max_diff, 0.5, {MESSAGE})"
    assert _fitted(True, "0.5", MESSAGE, 80) == f"self.assertLess(\n    max_diff, 0.5, {MESSAGE}\n)"
    assert _fitted(True, "0.5", MESSAGE, 60).splitlines() == [
        "self.assertLess(",
        "    max_diff,",
        "    0.5,",
        f"    {MESSAGE},",
        ")",
    ]
    assert _fitted(False, "0.5", MESSAGE, 70) == f"assert max_diff < 0.5, (\n    {MESSAGE}\n)"
    for width in (60, 80, 120):
        assert all(
            len(line) <= max(width, 66)
            for line in _fitted(True, "0.5", MESSAGE, width).splitlines()
        )


def test_configuration_above_the_project_root_is_another_projects(tmp_path: Path) -> None:
    from migrate_fi.codemods import _layout

    _layout._for_folder.cache_clear()
    (tmp_path / "pyproject.toml").write_text("[tool.ruff]\nline-length = 120\n")
    vendored = tmp_path / "third_party" / "lib"
    vendored.mkdir(parents=True)
    (vendored / "pyproject.toml").write_text("[project]\nname = 'lib'\n")
    assert line_length(str(vendored / "m.py")) == DEFAULT_LINE_LENGTH
    assert line_length(str(tmp_path / "third_party" / "m.py")) == 120
