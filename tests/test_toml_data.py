"""The reviewed data files (release notes, value maps) read through their folder's compiled
copy: the bundled copies are current, a file is answered from the copy only while its bytes are
those the copy was made from, and a copy that is stale or damaged is never believed."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from migrate_fi.api.notes import NOTES_DIR
from migrate_fi.api.value_changes import VALUES_DIR
from migrate_fi.base import toml
from migrate_fi.base.toml import COMPILED, compiled_text, load_reviewed, tomllib


@pytest.mark.parametrize("folder", [NOTES_DIR, VALUES_DIR], ids=["notes", "values"])
def test_the_bundled_compiled_copies_are_current(folder: str) -> None:
    path = Path(folder) / COMPILED
    assert path.read_text(encoding="utf-8") == compiled_text(folder), (
        f"{path} is stale: run `python scripts/compile_data.py`"
    )


@pytest.mark.parametrize("folder", [NOTES_DIR, VALUES_DIR], ids=["notes", "values"])
def test_every_bundled_file_reads_as_its_toml(folder: str) -> None:
    names = sorted(n for n in os.listdir(folder) if n.endswith(".toml"))
    assert names
    for name in names:
        path = os.path.join(folder, name)
        with open(path, "rb") as fh:
            assert load_reviewed(path) == tomllib().load(fh), name


def _folder(tmp_path: Path, text: str) -> Path:
    toml._compiled.cache_clear()
    (tmp_path / "0.6.0.toml").write_text(text, encoding="utf-8")
    (tmp_path / COMPILED).write_text(compiled_text(str(tmp_path)), encoding="utf-8")
    return tmp_path / "0.6.0.toml"


def test_a_file_edited_after_the_copy_is_read_from_its_text(tmp_path: Path) -> None:
    path = _folder(tmp_path, 'release = "0.6.0"\nwhy = "old"\n')
    assert load_reviewed(str(path)) == {"release": "0.6.0", "why": "old"}
    path.write_text('release = "0.6.0"\nwhy = "new"\n', encoding="utf-8")  # (same size)
    assert load_reviewed(str(path)) == {"release": "0.6.0", "why": "new"}


def test_the_copy_answers_for_the_same_bytes(tmp_path: Path) -> None:
    path = _folder(tmp_path, 'release = "0.6.0"\n')
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    # (a copy that says something else for these bytes is what is read: it is the copy's)
    (tmp_path / COMPILED).write_text(f'0.6.0.toml\t{digest}\t{{"release": "x"}}\n')
    toml._compiled.cache_clear()
    assert load_reviewed(str(path)) == {"release": "x"}


@pytest.mark.parametrize(
    "copy",
    [
        "0.6.0.toml\tnot-a-digest\t{{}}\n",
        "0.6.0.toml\t{digest}\t{{not json\n",
        "0.6.0.toml\t{digest}\t[1, 2]\n",
        "garbage without tabs\n",
        "\udcff",
    ],
    ids=["other digest", "not JSON", "not a table", "no fields", "not UTF-8"],
)
def test_a_damaged_copy_is_never_believed(tmp_path: Path, copy: str) -> None:
    path = _folder(tmp_path, 'release = "0.6.0"\n')
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    (tmp_path / COMPILED).write_bytes(copy.format(digest=digest).encode("utf-8", "surrogateescape"))
    toml._compiled.cache_clear()
    assert load_reviewed(str(path)) == {"release": "0.6.0"}


def test_each_read_gives_objects_of_its_own(tmp_path: Path) -> None:
    path = _folder(tmp_path, 'release = "0.6.0"\nwhen = ["a"]\n')
    first = load_reviewed(str(path))
    first["when"].append("b")
    assert load_reviewed(str(path)) == {"release": "0.6.0", "when": ["a"]}


def test_what_json_cannot_say_is_left_to_the_toml_parser(tmp_path: Path) -> None:
    path = _folder(tmp_path, 'release = "0.6.0"\nday = 2026-01-02\n')
    assert (tmp_path / COMPILED).read_text() == ""
    assert str(load_reviewed(str(path))["day"]) == "2026-01-02"


def test_a_file_that_is_not_utf8_is_a_toml_error(tmp_path: Path) -> None:
    path = tmp_path / "0.6.0.toml"
    path.write_bytes(b'release = "\xff"\n')
    toml._compiled.cache_clear()
    with pytest.raises(tomllib().TOMLDecodeError, match="not UTF-8"):
        load_reviewed(str(path))
