"""The release records on disk: the line layout, read entry by entry, and the older layout."""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from migrate_fi.api import differ, store
from migrate_fi.api.store import DataError, Section, encode_release, load_release


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    store.forget()
    yield
    store.forget()


def _record(version: str = "9.9.9") -> dict[str, Any]:
    return {
        "format": store.FORMAT,
        "provenance": {"version": version, "source": "test.whl", "sha256": "0" * 64},
        "exports": {"flashinfer.f": "flashinfer.core.f"},
        "defs": {
            "flashinfer.core.f": {"h": "ab", "k": "f", "sig": [["x", "A", None]]},
            'odd "key" \\ with escapes': {"k": "c", "methods": {}},
            "caf\u00e9": {"sig": []},
            "": {"k": "f"},
            "flashinfer.core.E": {"enum": {"k": "c"}, "h": "cd", "k": "c", "methods": {}},
        },
        "modules": {"flashinfer": {"names": ["f"]}, "flashinfer.core": {}},
    }


def _unreadable(why: str) -> DataError:
    return DataError(f"test.json.gz: {why}")


def _plain(record: dict[str, Any]) -> dict[str, Any]:
    return {k: dict(v) if isinstance(v, Section) else v for k, v in record.items()}


def test_the_line_layout_is_json_and_reads_back_entry_by_entry() -> None:
    record = _record()
    data = encode_release(record)
    assert json.loads(data) == record  # (any JSON reader reads the file)
    assert encode_release(json.loads(data)) == data  # the same record, the same bytes
    read = store._decode(data, _unreadable)
    assert isinstance(read["defs"], Section) and isinstance(read["modules"], Section)
    assert _plain(read) == record
    defs = read["defs"]
    assert list(defs) == sorted(record["defs"]) and len(defs) == 5
    assert 'odd "key" \\ with escapes' in defs and "missing" not in defs
    assert defs.get("missing") is None and defs.get("caf\u00e9") == {"sig": []}
    assert (
        defs.text("flashinfer.core.f")
        == json.dumps(
            record["defs"]["flashinfer.core.f"], sort_keys=True, separators=(",", ":")
        ).encode()
    )
    with pytest.raises(KeyError):
        defs["missing"]


def test_kind_is_read_from_the_text_and_agrees_with_the_record() -> None:
    api = differ.Api("9.9.9", store._decode(encode_release(_record()), _unreadable))
    assert api.kind("flashinfer.core.f") == "f"
    assert api.kind("flashinfer.core.E") == "c"  # (an enum member named "k" comes first)
    assert api.kind("caf\u00e9") is None and api.kind("missing") is None
    newest = differ.api_for(store.available_releases()[-1])
    assert isinstance(newest.defs, Section)
    for key in newest.defs:
        assert newest.kind(key) == newest.defs[key].get("k"), key


def test_every_bundled_record_has_the_line_layout() -> None:
    for version in store.available_releases(store.DATA_DIR):
        record = load_release(version)
        assert isinstance(record["defs"], Section), version
        assert isinstance(record["modules"], Section), version


def test_a_records_names_are_held_as_text_not_an_object_each() -> None:
    """A release's names (definitions, modules, exports and their targets: 28,000 for 0.7.4)
    are kept in a few strings and made when asked; each is still what it was, in order, and
    an export's target names its definition."""
    import tracemalloc

    latest = store.available_releases(store.DATA_DIR)[-1]
    store.forget()
    tracemalloc.start()
    try:
        record = load_release(latest)
        blocks = sum(s.count for s in tracemalloc.take_snapshot().statistics("filename"))
    finally:
        tracemalloc.stop()
    defs, exports = record["defs"], record["exports"]
    assert len(defs) + len(exports) > 20_000
    assert blocks < len(defs)  # (not one string each)
    names = list(defs)
    assert names == sorted(names) and len(set(names)) == len(names)
    assert all(name in defs for name in names[:: max(1, len(names) // 500)])
    targets = [t for t in exports.values() if t in defs]
    assert len(targets) > len(exports) // 2
    assert names[len(names) // 2][-8:] in {
        n[-8:] for n in store.keys_ending_with(defs, names[len(names) // 2][-8:])
    }


def test_same_definition_means_the_same_signature() -> None:
    """Where `same_definition` answers without comparing, comparing finds nothing either."""
    old, new = differ.api_for("0.6.18"), differ.api_for("0.7.4")
    same = 0
    for path in differ._callable_paths(old):
        if old.same_definition(new, path) is not None:
            same += 1
            assert old.callable(path) == new.callable(path), path
    assert same > 1000  # (most of them: what makes the pass over a pair of releases fast)


def _user_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, payload: bytes) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "9.9.9.json.gz").write_bytes(gzip.compress(payload))
    store.register(str(folder), _record())
    monkeypatch.setenv(store.DATA_ENV, str(folder))
    store.forget()
    return folder


@pytest.mark.parametrize("indent", [None, 1], ids=["one line", "indented"])
def test_a_record_in_another_json_layout_is_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, indent: int | None
) -> None:
    """One line: the layout of the records an earlier migrate-fi wrote into the user's data
    folder; any other JSON layout is read too."""
    text = json.dumps(_record(), sort_keys=True, indent=indent, separators=(",", ":"))
    _user_folder(tmp_path, monkeypatch, (text + "\n").encode())
    record = load_release("9.9.9")
    assert isinstance(record["defs"], dict) and record == _record()
    api = differ.api_for("9.9.9")
    assert api.kind("flashinfer.core.f") == "f" and api.callable("flashinfer.f") is not None


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data.replace(b',"modules":{\n', b',"modulez":{\n'),
        lambda data: data.replace(b'\n"flashinfer.core.f":', b"\nflashinfer.core.f:"),
        lambda data: data[:-4] + b"\n}\n",  # a line left empty
        lambda data: data.replace(b'"flashinfer.core.f":{', b'"flashinfer.core.f":{{'),
    ],
    ids=["a section renamed", "a key without quotes", "an empty line", "an entry not JSON"],
)
def test_a_damaged_record_is_one_line_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: Any
) -> None:
    folder = _user_folder(tmp_path, monkeypatch, damage(encode_release(_record())))
    with pytest.raises(DataError) as caught:
        differ.api_for("9.9.9").callable("flashinfer.f")  # (an entry is decoded when asked)
    message = str(caught.value)
    assert "\n" not in message and str(folder / "9.9.9.json.gz") in message
    assert "cannot be read" in message


def test_a_record_is_written_in_pieces_and_read_a_piece_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`write_release` cuts the text into gzip members of whole lines: any gzip reader reads
    the same text, and `load_release` decompresses only the pieces of the entries asked for."""
    record = _record()
    record["defs"] = {f"flashinfer.m{i:03}.f": {"k": "f", "pad": "x" * 600} for i in range(300)}
    folder = tmp_path / "data"
    monkeypatch.setattr(store, "_PIECES_KEPT", 2)
    written = Path(store.write_release(record, str(folder)))
    raw = written.read_bytes()
    assert gzip.decompress(raw) == encode_release(record)  # (what any gzip reader reads)
    members = list(store._members(raw))
    assert len(members) > 4 and all(text.endswith(b"\n") for _, text in members)
    assert (
        store.compress_release(encode_release(record)) == raw
    )  # (the same record, the same bytes)
    text = store._Text(raw)
    read = store._decode(text, _unreadable)
    assert _plain(read) == record
    assert len(text._kept) <= 2  # (read whole once to index it; only the last pieces kept)
    for key in reversed(list(record["defs"])):  # (out of order: pieces decompressed again)
        assert read["defs"][key] == record["defs"][key]
    assert len(text._kept) == 2


@pytest.mark.parametrize("cut", [100, 1], ids=["members cut inside a line", "a member per byte"])
def test_gzip_members_that_end_inside_a_line_are_read_as_one_piece(cut: int) -> None:
    data = encode_release(_record())
    raw = b"".join(gzip.compress(data[i : i + cut]) for i in range(0, len(data), cut))
    read = store._decode(store._Text(raw), _unreadable)
    assert _plain(read) == _record()


def test_data_that_is_not_gzip_is_value_error() -> None:
    """Not gzip, a checksum that does not match, a file cut short, nothing: ValueError (the
    caller's one-line DataError naming the file)."""
    data = store.compress_release(encode_release(_record()))
    for junk in (b"junk", data[:-9] + b"\0" * 9, data[: len(data) // 2], b""):
        with pytest.raises(ValueError):
            store._decode(store._Text(junk), _unreadable)


def _without_empty_key(version: str = "9.9.9") -> dict[str, Any]:
    record = _record(version)
    del record["defs"][""]  # (a key the offsets file cannot hold: it has none then)
    record["defs"].update(
        {f"flashinfer.m{i:03}.f": {"k": "f", "pad": "x" * 600} for i in range(300)}
    )
    record["exports"]["flashinfer.m001"] = "flashinfer.m001.f"
    return record


def test_a_record_is_loaded_through_its_offsets_file_to_the_same_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`write_release` writes where the pieces and entries lie beside the record, and the rest
    of it; loading reads them instead of the text (none of it is decompressed), to the same
    record, whose exports that name a definition name its key."""
    folder = tmp_path / "data"
    record = _without_empty_key()
    record["exports"]["flashinfer.core"] = "flashinfer.core"  # (a module: not a key of defs)
    written = store.write_release(record, str(folder))
    assert Path(store.offsets_file(written)).is_file()
    raw = Path(written).read_bytes()
    via = store._from_offsets(raw, written, _unreadable)
    assert via is not None
    assert not via["defs"]._text._kept  # (no piece decompressed)
    assert _plain(via) == record
    assert (
        via["exports"]["flashinfer.f"] == "flashinfer.core.f" and "flashinfer.core.f" in via["defs"]
    )
    record = _without_empty_key()
    scanned = store._decode(store._Text(raw), _unreadable)
    assert via["defs"]._at == scanned["defs"]._at and via["modules"]._at == scanned["modules"]._at
    written = store.write_release(record, str(folder))
    monkeypatch.setattr(store, "_file_of", lambda version: written)
    assert _plain(load_release("9.9.9")) == _without_empty_key()
    # a key that escapes characters, or an empty one: no offsets file, the text is read
    assert store.encode_offsets(raw, store._decode(encode_release(_record()), _unreadable)) is None
    store.write_release(_record(), str(folder))  # (and the earlier record's is removed)
    assert not Path(store.offsets_file(written)).exists()
    assert _plain(load_release.__wrapped__("9.9.9")) == _record()


@pytest.mark.parametrize(
    "spoil",
    [
        lambda off, raw: b"junk",
        lambda off, raw: off[: len(off) // 2],
        lambda off, raw: gzip.compress(gzip.decompress(off).replace(store._OFFSETS, b"offsets 9")),
        lambda off, raw: gzip.compress(_with_parts(gzip.decompress(off), lambda p: p[:-1])),
        lambda off, raw: gzip.compress(_with_parts(gzip.decompress(off), lambda p: [*p, b"x"])),
        lambda off, raw: gzip.compress(gzip.decompress(off) + b"\0\0"),
        lambda off, raw: gzip.compress(_with_part(gzip.decompress(off), 3, lambda p: p[:-1])),
        lambda off, raw: gzip.compress(_with_part(gzip.decompress(off), 3, lambda p: p[8:])),
        lambda off, raw: gzip.compress(_with_part(gzip.decompress(off), 2, lambda p: p + b"\t")),
        lambda off, raw: gzip.compress(_with_part(gzip.decompress(off), 2, _tab_inside)),
        lambda off, raw: gzip.compress(_with_part(gzip.decompress(off), 9, lambda p: p[8:])),
        lambda off, raw: gzip.compress(_with_part(gzip.decompress(off), 0, lambda p: p[8:])),
        lambda off, raw: gzip.compress(
            _with_part(gzip.decompress(off), -2, _held(b'{"x":[99999]}'))
        ),
        lambda off, raw: gzip.compress(_with_part(gzip.decompress(off), -2, _held(b'{"x":["0"]}'))),
        lambda off, raw: gzip.compress(_with_part(gzip.decompress(off), -2, _held(b"[]"))),
    ],
    ids=[
        "not gzip",
        "cut short",
        "another format",
        "a part missing",
        "a part more",
        "bytes after the last part",
        "numbers cut short",
        "keys and their places do not agree",
        "a key's text longer than its places say",
        "a tab inside a key",
        "exports and their targets do not agree",
        "pieces and their starts do not agree",
        "a word held by a key there is not",
        "a word held by what is no place",
        "no index of words",
    ],
)
def test_an_offsets_file_that_is_damaged_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spoil: Any
) -> None:
    written = store.write_release(_without_empty_key(), str(tmp_path))
    offsets = Path(store.offsets_file(written))
    offsets.write_bytes(spoil(offsets.read_bytes(), Path(written).read_bytes()))
    assert store._from_offsets(Path(written).read_bytes(), written, _unreadable) is None
    monkeypatch.setattr(store, "_file_of", lambda version: written)
    assert _plain(load_release("9.9.9")) == _without_empty_key()  # (the text is read)


def _with_parts(text: bytes, change: Any) -> bytes:
    """The offsets file's text with its parts (after the header line) changed."""
    header, _, body = text.partition(b"\n")
    parts, at = [], 0
    while at < len(body):
        size = int.from_bytes(body[at : at + 8], "little")
        parts.append(body[at + 8 : at + 8 + size])
        at += 8 + size
    new = change(parts)
    return header + b"\n" + b"".join(len(p).to_bytes(8, "little") + p for p in new)


def _with_part(text: bytes, i: int, change: Any) -> bytes:
    """The offsets file's text with its part ``i`` changed."""

    def one(parts: list[bytes]) -> list[bytes]:
        parts[i] = change(parts[i])
        return parts

    return _with_parts(text, one)


def _held(new: bytes) -> Any:
    return lambda part: new


def _tab_inside(text: bytes) -> bytes:
    """Keys' text with a tab in place of a character of a key (its length kept)."""
    at = text.index(b".", 1)
    return text[:at] + b"\t" + text[at + 1 :]


def test_the_offsets_of_keys_out_of_order_are_not_written(tmp_path: Path) -> None:
    """Keys and exports are looked up by halving: a record whose keys are not in order (written
    by hand: `encode_release` sorts them) gets no offsets file, and is read from its text."""
    text = encode_release(_without_empty_key())
    lines = text.split(b"\n")
    first = next(i for i, line in enumerate(lines) if line.startswith(b'"flashinfer.m000'))
    lines[first], lines[first + 1] = lines[first + 1], lines[first]
    record = store._decode(b"\n".join(lines), _unreadable)
    assert list(record["defs"])[first - 2 : first] != sorted(
        list(record["defs"])[first - 2 : first]
    )
    assert store.encode_offsets(b"raw", record) is None
    record = store._decode(text, _unreadable)
    assert store.encode_offsets(b"raw", record) is not None
    exports = dict(reversed(list(record["exports"].items())))
    exports["flashinfer.zz"] = exports["flashinfer.a"] = "flashinfer.core.f"
    assert store.encode_offsets(b"raw", {**record, "exports": exports}) is None


def test_an_offsets_file_of_another_record_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record written again (another release's data under its name, by hand or by an older
    migrate-fi) leaves an offsets file that names another size and CRC: it is ignored."""
    written = store.write_release(_without_empty_key(), str(tmp_path))
    stale = Path(store.offsets_file(written)).read_bytes()
    other = _without_empty_key()
    other["defs"]["flashinfer.core.f"]["sig"] = [["y", "A", None]]
    store.write_release(other, str(tmp_path))
    Path(store.offsets_file(written)).write_bytes(stale)
    assert store._from_offsets(Path(written).read_bytes(), written, _unreadable) is None
    monkeypatch.setattr(store, "_file_of", lambda version: written)
    assert load_release("9.9.9")["defs"]["flashinfer.core.f"]["sig"] == [["y", "A", None]]


def test_a_user_record_read_from_its_text_gets_its_offsets_written_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record of the user's data folder whose offsets file an earlier migrate-fi wrote (of
    another format) is read from its text once; its offsets are written then, and the next
    load reads it through them, to the same record."""
    folder = tmp_path / "data"
    written = store.write_release(_without_empty_key(), str(folder))
    offsets = Path(store.offsets_file(written))
    old = gzip.compress(
        gzip.decompress(offsets.read_bytes()).replace(store._OFFSETS, b"migrate-fi offsets 2")
    )
    offsets.write_bytes(old)
    store.register(str(folder), _without_empty_key())
    monkeypatch.setenv(store.DATA_ENV, str(folder))
    store.forget()
    assert _plain(load_release("9.9.9")) == _without_empty_key()
    assert offsets.read_bytes() != old
    via = store._from_offsets(Path(written).read_bytes(), written, _unreadable)
    assert via is not None and _plain(via) == _without_empty_key()


def test_every_bundled_record_has_offsets_that_read_it_as_its_text_does() -> None:
    """The offsets files shipped beside the bundled data match their records (`write_release`
    writes them; a record replaced by hand needs `store.write_offsets`)."""
    records = sorted(Path(store.DATA_DIR).glob("*.json.gz"))
    assert records
    for path in records:
        raw = path.read_bytes()
        via = store._from_offsets(raw, str(path), _unreadable)
        assert via is not None, f"{path.name}: no offsets file matches it"
        scanned = store._decode(store._Text(raw), _unreadable)
        for name in ("defs", "modules"):
            assert list(via[name]._at.items()) == list(scanned[name]._at.items()), path.name
        assert {k: v for k, v in via.items() if k not in ("defs", "modules")} == {
            k: v for k, v in scanned.items() if k not in ("defs", "modules")
        }
        for word in store.INDEXED:  # (listed by the offsets file; found in the text)
            assert via["defs"]._holding[word] == scanned["defs"].keys_holding(word), path.name


def test_a_release_s_keys_read_through_offsets_answer_as_dicts_do() -> None:
    """A bundled release's keys and exports, held as the sorted lists of its offsets file and
    looked up by halving (then by a dict of places, once asked often), answer every lookup as
    dicts of them would, and their items come in the same order; its public paths are those
    its definitions and exports reach (as `Api.canonical` tells)."""
    import random

    load_release.cache_clear()
    record = load_release("0.6.11")
    defs, exports = record["defs"], record["exports"]
    assert isinstance(defs._at, store._Sorted) and isinstance(exports, store._Sorted)
    as_dicts = {k: defs._at[k] for k in defs._at}, dict(exports.items())
    assert list(as_dicts[1]) == list(exports) and len(as_dicts[1]) == len(exports)
    rnd = random.Random(11)
    asked = [*rnd.sample(list(as_dicts[0]), 400), *rnd.sample(list(as_dicts[1]), 400)]
    asked += [k + "x" for k in asked[:200]] + ["", "zzz", "flashinfer."]
    for mapping, plain in zip((defs._at, exports), as_dicts, strict=True):
        for key in asked * 3:  # (the third time through, a dict of places answers)
            assert (key in mapping) == (key in plain)
            assert mapping.get(key) == plain.get(key)
        assert mapping._index is not None
        assert 1 not in mapping  # (not a string: in none)
    for mapping in (defs, exports, record["modules"], {"a.b": 1, "b": 2}):
        for suffix in [".f", ".mm_fp4", "_plan", "a.b", "zzz", *(k[-7:] for k in asked[:50])]:
            assert store.keys_ending_with(mapping, suffix) == [
                k for k in mapping if k.endswith(suffix)
            ]
    api = differ.Api("0.6.11", record)
    expected = {}
    for path in [*defs, *exports]:
        target = api.canonical(path)
        if "._" not in path and not path.startswith("_") and target in defs:
            expected[path] = target
    assert list(api.public_paths().items()) == list(expected.items())
    load_release.cache_clear()


def test_the_offsets_file_lists_the_definitions_that_hold_an_indexed_word(tmp_path: Path) -> None:
    """Which definitions hold a word of `store.INDEXED` (an enum's ``"enum":``) is read from
    the offsets file, none of the text decompressed; any other word is looked for in the
    text; a record decoded whole answers every key."""
    record = _without_empty_key()
    record["defs"]["flashinfer.m007.E"] = {"k": "c", "enum": {"A": 0, "B": 1}}
    record["defs"]["flashinfer.m200.F"] = {"k": "c", "enum": {"C": 2}}
    written = store.write_release(record, str(tmp_path))
    raw = Path(written).read_bytes()
    via = store._from_offsets(raw, written, _unreadable)
    assert via is not None
    enums = sorted(k for k, v in record["defs"].items() if "enum" in v)
    assert {"flashinfer.m007.E", "flashinfer.m200.F"} < set(enums)
    assert store.keys_holding(via["defs"], b'"enum":') == enums
    assert not via["defs"]._text._kept  # (listed: nothing decompressed)
    assert store.keys_holding(via["defs"], b'"C":') == ["flashinfer.m200.F"]  # (found)
    scanned = store._decode(store._Text(raw), _unreadable)
    assert store.keys_holding(scanned["defs"], b'"enum":') == enums
    assert store.keys_holding(record["defs"], b'"enum":') == list(record["defs"])
    # (the word `differ.changed_enums` asks is one the offsets file lists: else every run
    # would decompress the whole old record to find the enums)
    from migrate_fi.api import differ

    assert differ._ENUM_WORD in store.INDEXED


def test_a_record_of_an_earlier_data_format_says_how_to_read_it_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A release the user's folder holds in an earlier data format is not read (its defaults
    would compare unlike the bundled ones'): the error says to fetch it again."""
    folder = _user_folder(tmp_path, monkeypatch, b"{}")
    manifest = json.loads((folder / "releases.json").read_text())
    manifest["releases"]["9.9.9"]["format"] = store.FORMAT - 1
    (folder / "releases.json").write_text(json.dumps(manifest))
    store.forget()
    try:
        assert "9.9.9" not in store.available_releases()
        said = store.missing_data("9.9.9")
        assert "in the data format of an earlier migrate-fi" in said
        assert "`migrate-fi signatures update 9.9.9`" in said
    finally:
        store.forget()


def test_a_data_folder_file_that_holds_no_object_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`engines.json` or `indexes.json` of the user's folder holding a list (or damaged): the
    bundled data answers, no traceback."""
    from migrate_fi.api import releases

    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "engines.json").write_text("[]")
    (folder / "indexes.json").write_text('["flashinfer-cubin"]')
    monkeypatch.setenv(store.DATA_ENV, str(folder))
    store.forget()
    try:
        assert releases.engine_requirements("sglang", "0.5.11") == [
            "flashinfer_python==0.6.8.post1",
            "flashinfer_cubin==0.6.8.post1",
        ]
        assert releases.index_versions("flashinfer-cubin")[0]
    finally:
        store.forget()


@pytest.mark.parametrize("count", [0, 1, 31, 32, 33, 100])
def test_names_kept_as_text_are_found_where_they_are(count: int) -> None:
    """`_Keys` (names between tabs, with where each starts, as the offsets file holds them)
    answers as the list of them would: each name's place, -1 for a name that is not there
    (before the first, between two, after the last), items, slices and iteration."""
    names = [f"flashinfer.m{i:03d}.f" for i in range(count)]
    text, starts = store._joined(names)
    keys = store._Keys.read(memoryview(text), memoryview(starts))
    assert keys is not None
    assert list(keys) == names and len(keys) == count
    assert keys[::7] == names[::7] and keys[-3:] == names[-3:]
    if names:
        assert keys[-1] == names[-1]
    for i, name in enumerate(names):
        assert keys.place(name) == i
    for absent in ["", "a", "flashinfer.m000", "flashinfer.m0005.f", "flashinfer.m999.f", "z"]:
        assert keys.place(absent) == -1
    with pytest.raises(IndexError):
        keys[count]
    # a text and starts that do not agree: not parts this wrote
    for other in ([], ["a"], [*names, "zz"], [n + "x" for n in names]):
        if other != names:
            assert store._Keys.read(memoryview(text), memoryview(store._joined(other)[1])) is None


def test_an_offsets_file_is_inflated_into_the_size_its_trailer_says() -> None:
    """The offsets file is inflated into a buffer of the size its gzip trailer says; a trailer
    that says another size (a damaged file, or one that says more than gzip can) is an
    error, and the file is not used (`_from_offsets`)."""
    text = b"offsets " * 5000
    packed = gzip.compress(text, mtime=0)
    assert store._inflate(packed) == text
    for size in (0, 1, len(text) - 1, len(text) + 1, 1 << 31):
        with pytest.raises(zlib.error):
            store._inflate(packed[:-4] + size.to_bytes(4, "little"))
    with pytest.raises(zlib.error):
        store._inflate(b"not gzip at all, but long enough")
