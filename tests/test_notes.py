"""The release notes (what a release changed in behaviour beyond its signatures): every release
the API data covers has its file, every entry names an API that release has and says where it
was read; a broken file is one clear error; a user's file adds a release's notes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from migrate_fi.api import notes
from migrate_fi.api.differ import api_for
from migrate_fi.api.store import available_releases


@pytest.fixture
def user_notes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("MIGRATE_FI_DATA_DIR", str(tmp_path / "data"))
    folder = tmp_path / "data" / "notes"
    folder.mkdir(parents=True)
    notes.forget()
    yield folder
    notes.forget()


def test_every_release_has_its_reviewed_notes_file() -> None:
    bundled = {p.stem for p in Path(notes.NOTES_DIR).glob("*.toml")}
    assert set(available_releases()) <= bundled
    for path in Path(notes.NOTES_DIR).glob("*.toml"):
        first = path.read_text().splitlines()[0]
        assert first.startswith("# ") and "reviewed" in first, path.name


def test_every_note_names_an_api_of_its_release_and_a_source() -> None:
    for note in notes.load_notes():
        assert api_for(note.release).key(note.api) is not None, (note.release, note.api)
        assert "wheel" in note.source or "https://" in note.source, (note.release, note.api)
        moved = getattr(note, "moved_to", None)
        if moved:
            assert api_for(note.release).key(moved) is not None, (note.release, moved)


def test_notes_in_a_range_are_those_after_from_up_to_to() -> None:
    in_range = notes.notes_in_range("0.6.10.post1", "0.6.11")
    assert in_range and {n.release for n in in_range} == {"0.6.11"}
    assert notes.notes_in_range("0.6.11", "0.6.11") == ()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('release = "0.9.1"\n[[same]]\napi = "flashinfer.f"\n', "`new` is missing"),
        ('release = "0.9.1"\n[[wat]]\n', "unknown table 'wat'"),
        ('release = "0.9.2"\n', "`release` must be '0.9.1'"),
        (
            'release = "0.9.1"\n[[behaviour]]\napi = "flashinfer.f"\nkind = "vibes"\n'
            'what = "x"\nsource = "y"\n',
            "`kind` must be one of",
        ),
        (
            'release = "0.9.1"\n[[deprecated]]\napi = "torch.f"\nparameter = "p"\nwhy = "w"\n'
            'source = "s"\n',
            "`api` must be a public path",
        ),
        ('release = "0.9.1"\n[[same]\n', "not valid TOML"),
        (  # (`parameter` is optional in a behaviour note, and a deprecation of passing by position)
            'release = "0.9.1"\n[[deprecated]]\napi = "flashinfer.f"\nwhy = "w"\nsource = "s"\n',
            "`parameter` is missing",
        ),
        (
            'release = "0.9.1"\n[[deprecated]]\napi = "flashinfer.f"\nwhy = "w"\nsource = "s"\n'
            "positional = 1\n",
            "`positional` must be true or false",
        ),
        (
            'release = "0.9.1"\n[[deprecated]]\napi = "flashinfer.f"\nparameter = "p"\n'
            'why = "w"\nsource = "s"\npositional = true\nomitted = true\n',
            "`positional` and `omitted` cannot both be true",
        ),
        (
            'release = "0.9.1"\n[[behaviour]]\napi = "flashinfer.f"\nkind = "numerics"\n'
            'what = "x"\nsource = "y"\nparameter = "not one"\n',
            "`parameter` must be one parameter's name",
        ),
        (
            'release = "0.9.1"\n[[behaviour]]\napi = "flashinfer.f"\nkind = "numerics"\n'
            'what = "x"\nsource = "y"\ndtypes = { cu_seqlens = "int" }\n',
            "`dtypes` must map parameter names to torch dtypes",
        ),
        (
            'release = "0.9.1"\n[[behaviour]]\napi = "flashinfer.f"\nkind = "numerics"\n'
            'what = "x"\nsource = "y"\ngpus = ["sm90"]\n',
            "`gpus` must list compute capabilities",
        ),
        (
            'release = "0.9.1"\n[[deprecated]]\napi = "flashinfer.f"\nparameter = "p"\n'
            'why = "w"\nsource = "s"\nomitted = "yes"\n',
            "`omitted` must be true or false",
        ),
        (
            'release = "0.9.1"\n[[same]]\napi = "flashinfer.f"\nparameter = "p"\nold = "1"\n'
            'new = "2"\nwhy = "w"\nsource = "s"\nomitted = true\n',
            "unknown key 'omitted'",
        ),
        (
            'release = "0.9.1"\n[[behaviour]]\napi = "flashinfer.f"\nkind = "numerics"\n'
            'what = "x"\nsource = "y"\ngpus = []\n',
            "`gpus` must list compute capabilities",
        ),
        (
            'release = "0.9.1"\n[[behaviour]]\napi = "flashinfer.f"\nkind = "numerics"\n'
            'what = "x"\nsource = "y"\ngpus = [">=10.x"]\n',
            "a family (10.x) takes no comparison",
        ),
    ],
)
def test_a_broken_file_is_one_line_naming_it(user_notes: Path, text: str, message: str) -> None:
    (user_notes / "0.9.1.toml").write_text(text)
    with pytest.raises(notes.NotesError) as raised:
        notes.load_notes()
    assert "0.9.1.toml" in str(raised.value) and message in str(raised.value)
    assert "\n" not in str(raised.value)


def test_a_users_file_adds_a_release(user_notes: Path) -> None:
    (user_notes / "0.9.1.toml").write_text(
        'release = "0.9.1"\n[[behaviour]]\napi = "flashinfer.fp4_quantize"\nkind = "other"\n'
        'what = "something"\nsource = "https://example.org/notes"\n'
    )
    found = [n for n in notes.load_notes() if n.release == "0.9.1"]
    assert [n.api for n in found] == ["flashinfer.fp4_quantize"]


def test_a_deprecation_may_be_of_leaving_the_parameter_out(user_notes: Path) -> None:
    (user_notes / "0.9.1.toml").write_text(
        'release = "0.9.1"\n[[deprecated]]\napi = "flashinfer.f"\nparameter = "p"\n'
        'why = "its implicit default warns"\nsource = "s"\nomitted = true\n'
        '[[deprecated]]\napi = "flashinfer.g"\nparameter = "q"\nwhy = "w"\nsource = "s"\n'
    )
    found = [n for n in notes.load_notes() if n.release == "0.9.1"]
    assert [(n.api, getattr(n, "omitted", None)) for n in found] == [
        ("flashinfer.f", True),
        ("flashinfer.g", False),
    ]


def test_a_deprecation_may_be_of_passing_by_position(user_notes: Path) -> None:
    """Of any argument (no ``parameter``: 0.7.0's MLA wrapper methods), or of one."""
    (user_notes / "0.9.1.toml").write_text(
        'release = "0.9.1"\n[[deprecated]]\napi = "flashinfer.W().plan"\npositional = true\n'
        'why = "positional calls warn"\nsource = "s"\n'
        '[[deprecated]]\napi = "flashinfer.g"\nparameter = "q"\npositional = true\n'
        'why = "w"\nsource = "s"\n'
    )
    found = [n for n in notes.load_notes() if n.release == "0.9.1"]
    assert [(n.api, n.parameter, getattr(n, "positional", None)) for n in found] == [
        ("flashinfer.W().plan", None, True),
        ("flashinfer.g", "q", True),
    ]


def test_a_behaviour_note_may_name_the_parameter_whose_default_it_is(user_notes: Path) -> None:
    (user_notes / "0.9.1.toml").write_text(
        'release = "0.9.1"\n[[behaviour]]\napi = "flashinfer.fp4_quantize"\nkind = "numerics"\n'
        'what = "a mode now decides"\nsource = "https://example.org/notes"\nparameter = "backend"\n'
    )
    (found,) = [n for n in notes.load_notes() if n.release == "0.9.1"]
    assert isinstance(found, notes.Behaviour) and found.parameter == "backend"


def test_a_behaviour_note_may_keep_out_calls_by_an_arguments_dtype(user_notes: Path) -> None:
    (user_notes / "0.9.1.toml").write_text(
        'release = "0.9.1"\n[[behaviour]]\napi = "flashinfer.chunk_gated_delta_rule"\n'
        'kind = "input-format"\nwhat = "int32 refused"\nsource = "https://example.org/notes"\n'
        'dtypes = { cu_seqlens = "int64" }\n'
    )
    (found,) = [n for n in notes.load_notes() if n.release == "0.9.1"]
    assert isinstance(found, notes.Behaviour) and found.dtypes == (("cu_seqlens", "int64"),)


def test_a_behaviour_note_may_name_the_gpus_it_concerns(user_notes: Path) -> None:
    (user_notes / "0.9.1.toml").write_text(
        'release = "0.9.1"\n[[behaviour]]\napi = "flashinfer.fp4_quantize"\nkind = "error"\n'
        'what = "refused below SM100"\nsource = "https://example.org/notes"\n'
        'gpus = ["<9.0", "12.x", "9.0"]\n'
    )
    (found,) = [n for n in notes.load_notes() if n.release == "0.9.1"]
    assert isinstance(found, notes.Behaviour) and found.gpus is not None
    assert {89, 90, 120, 129} <= found.gpus and not {91, 100, 110} & found.gpus


def test_a_broken_file_of_the_range_stops_the_run_in_one_line(
    user_notes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from migrate_fi.cli import cli

    bundled = tmp_path / "bundled"
    bundled.mkdir()
    (bundled / "0.7.4.toml").write_text('release = "0.7.4"\n[[same]\n')
    monkeypatch.setattr(notes, "NOTES_DIR", str(bundled))
    (tmp_path / "m.py").write_text("import flashinfer\n")
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(cli, ["check", "--from", "0.7.2", "--to", "0.7.4", "m.py"])
    assert r.exit_code == 2
    (line,) = r.stderr.splitlines()
    assert "0.7.4.toml: not valid TOML" in line
