"""The API records: one gzip'd JSON file per FlashInfer release, read on first use.

Two folders hold them, and every command reads their union:

- the bundled data, inside the package (``migrate_fi/data/api``), tested with this migrate-fi;
- the user's data folder, where ``migrate-fi signatures update`` and ``signatures build`` write
  the releases published after this migrate-fi (``$MIGRATE_FI_DATA_DIR``, else the per-user data
  folder: ``$XDG_DATA_HOME/migrate-fi/api``, ``~/.local/share/migrate-fi/api``...). Its
  ``releases.json`` names each record with its wheel, sha256 and when it was read; a record of
  another data format (written by another migrate-fi) is not used.

For a release in both, the bundled record is used.

A record is one JSON object, written one entry per line for its two large objects (``defs`` and
``modules``; the rest is on the first line), and gzip'd as members of whole lines, 32 KB or so
each (`compress_release`). `load_release` keeps those two as `Section` objects: the entries'
JSON text, decoded when asked (and not kept, but for the last few dozen), in the compressed file
(`_Text`: a piece is decompressed when one of its entries is asked for). For 0.7.4 that is about
9 MB held, not the 70 MB of its decoded objects. A record in any other JSON layout (one line:
what an earlier migrate-fi wrote) is decoded whole, and one written as a single gzip
member is held decompressed.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import gc
import itertools
import json
import os
import sys
import time
from array import array
from collections.abc import (
    Callable,
    ItemsView,
    Iterable,
    Iterator,
    Mapping,
    MutableSequence,
    Sequence,
)
from functools import cache
from typing import Any, Generic, TypeVar, overload

from packaging.version import Version

from migrate_fi.base.files import temporary_beside
from migrate_fi.base.userdirs import user_folder
from migrate_fi.base.versions import parse_version

__all__ = [
    "DATA_DIR",
    "DATA_ENV",
    "INDEXED",
    "DataError",
    "Section",
    "available_releases",
    "compress_release",
    "encode_offsets",
    "encode_release",
    "forget",
    "keys_ending_with",
    "keys_holding",
    "load_release",
    "missing_data",
    "newest_release",
    "offsets_file",
    "on_forget",
    "origin",
    "register",
    "release_files",
    "user_data_dir",
    "user_releases",
    "write_json",
    "write_offsets",
    "write_release",
]

DATA_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "api")
DATA_ENV = "MIGRATE_FI_DATA_DIR"
MANIFEST = "releases.json"
FORMAT = 6  # 2: every module with its names; defs at any depth; synthesized constructors
# 3: a hash of each definition's code ("h")
# 4: a default naming a module constant is its value; a `None` default the function maps to a
# literal has it as a fourth item; `dep`: the parameters a function warns about as deprecated;
# `ign` (optional: a record without it claims nothing): the parameters whose value it never uses
# 5: `cache`: a function wrapped by functools.cache / lru_cache (its `cache_clear()` is API)
# 6: `reads` of a module: the names its functions read from it when they run (what a patch reaches)


class DataError(Exception):
    """A record that is there but cannot be read; one line for the user."""


def user_data_dir() -> str:
    """The user's data folder: ``$MIGRATE_FI_DATA_DIR``, else the platform's per-user data
    folder (``$XDG_DATA_HOME`` or ``~/.local/share`` on Linux) with ``migrate-fi/api`` inside."""
    return user_folder("data", DATA_ENV, "api")


def _file(version: str, folder: str = DATA_DIR) -> str:
    return os.path.join(folder, f"{version}.json.gz")


def available_releases(folder: str | None = None) -> list[str]:
    """The releases with a record, oldest first: in ``folder``, or (by default) in the union of
    the bundled data and the user's data folder."""
    if folder is not None:
        return list(_releases_in(folder))
    return list(_union(user_data_dir()))


@cache
def _union(user_folder: str) -> tuple[str, ...]:
    bundled = _releases_in(DATA_DIR)
    canonical = {str(parse_version(v)) for v in bundled}
    extra = [v for v in user_releases(user_folder) if str(parse_version(v)) not in canonical]
    return tuple(sorted([*bundled, *extra], key=parse_version))


def newest_release() -> Version:
    """The newest release there is data for (bundled or the user's)."""
    return parse_version(available_releases()[-1])


def user_releases(folder: str | None = None) -> dict[str, dict[str, Any]]:
    """The usable records of the user's data folder: ``{version: provenance}`` from its
    ``releases.json``, for the records of this data format that are there."""
    return dict(_manifest_usable(folder or user_data_dir()))


@cache
def _manifest_usable(folder: str) -> tuple[tuple[str, dict[str, Any]], ...]:
    manifest = read_manifest(folder)
    return tuple(
        (v, entry)
        for v, entry in manifest.items()
        if entry.get("format") == FORMAT and os.path.isfile(_file(v, folder))
    )


def read_manifest(folder: str) -> dict[str, dict[str, Any]]:
    """``releases.json`` of a data folder ({} when there is none, or it cannot be read)."""
    try:
        with open(os.path.join(folder, MANIFEST), encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {}
    releases = data.get("releases") if isinstance(data, dict) else None
    return {str(k): v for k, v in releases.items() if isinstance(v, dict)} if releases else {}


def register(folder: str, record: dict[str, Any], requires: list[str] | None = None) -> None:
    """Name a record just written into a (user) data folder in its ``releases.json``."""
    manifest = read_manifest(folder)
    prov = record["provenance"]
    manifest[prov["version"]] = {
        "format": FORMAT,
        "source": prov["source"],
        "sha256": prov["sha256"],
        "read": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **({"requires": requires} if requires is not None else {}),
    }
    write_json(os.path.join(folder, MANIFEST), {"releases": manifest})
    # the folder's index of the union may hold pairs of an earlier record of this release
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(folder, "changes.json"))
    forget()


def origin(version: str) -> str:
    """Where the record of a release comes from: ``bundled``, or the user's data folder."""
    return "bundled" if _file_of(version, bundled_only=True) else user_data_dir()


_FORGETTERS: list[Callable[[], None]] = []  # what the modules answering from the data keep


def on_forget(forget_theirs: Callable[[], None]) -> Callable[[], None]:
    """Register what a module computed from the data as dropped by `forget` (a decorator of
    its own `forget`: the modules built on this one register; this one imports none of them)."""
    _FORGETTERS.append(forget_theirs)
    return forget_theirs


def forget() -> None:
    """Drop what was read of the data folders (after a record was written, or the folder
    changed): the next question reads them again."""
    for cached in (_releases_in, _union, _manifest_usable, load_release):
        cached.cache_clear()
    for forget_theirs in _FORGETTERS:
        forget_theirs()


def _file_of(version: str, *, bundled_only: bool = False) -> str | None:
    canonical = str(parse_version(version))
    for v in _releases_in(DATA_DIR):
        if str(parse_version(v)) == canonical:
            return _file(v)
    if bundled_only:
        return None
    folder = user_data_dir()
    for v in user_releases(folder):
        if str(parse_version(v)) == canonical:
            return _file(v, folder)
    return None


@cache  # (cleared when a record is written)
def _releases_in(folder: str) -> tuple[str, ...]:
    try:
        names = os.listdir(folder)
    except OSError:
        return ()
    versions = [n[: -len(".json.gz")] for n in names if n.endswith(".json.gz")]
    return tuple(sorted(versions, key=parse_version))


def missing_data(version: object) -> str:
    """Why a release has no data, and what to do: one line."""
    known = available_releases()
    if not known:
        return f"no API data for FlashInfer {version}: the bundled data is missing (reinstall)"
    first, last = parse_version(known[0]), parse_version(known[-1])
    try:
        v = parse_version(str(version))
    except ValueError:
        v = None
    if v is not None and v < first:
        advice = (
            f"releases before {first} are not covered: migrate to {first} by hand first, or"
            f" build the data from its wheel with `migrate-fi signatures build WHEEL`"
        )
    elif v is not None and v > last:
        advice = (
            "it is newer than the data: run `migrate-fi signatures update` (it asks the"
            " package index through pip), or build the data from its wheel with"
            " `migrate-fi signatures build WHEEL`"
        )
        installed = _installed_copy(str(v))
        if installed:
            advice += f"; flashinfer-python {v} is installed here: `{installed}` reads it offline"
    else:
        advice = "not a published release? `migrate-fi signatures list` names those covered"
    older = read_manifest(user_data_dir()).get(str(v) if v is not None else str(version), {})
    if older and older.get("format") != FORMAT:
        advice = (
            f"{user_data_dir()} holds it in the data format of an earlier migrate-fi: run"
            f" `migrate-fi signatures update {version}` to read it again"
        )
    user = len(user_releases())
    where = f", {user} of them in {user_data_dir()}" if user else ""
    return (
        f"no API data for FlashInfer {version} (the data covers {first} to {last}, "
        f"{len(known)} releases{where}): {advice}"
    )


def _installed_copy(version: str) -> str | None:
    """The `signatures build` command that reads the installed flashinfer-python, when this
    Python has ``version`` installed (read from its metadata: FlashInfer is never imported)."""
    from importlib import metadata

    try:
        dist = metadata.distribution("flashinfer-python")
    except metadata.PackageNotFoundError:
        return None
    if str(parse_version(dist.version)) != str(parse_version(version)):
        return None
    site = str(dist.locate_file(""))
    return f"migrate-fi signatures build {site}"


@cache
def load_release(version: str) -> dict[str, Any]:
    """The record of one release; KeyError when there is none. ``defs`` and ``modules`` are
    `Section` objects (mappings decoded entry by entry) when the file has the line layout."""
    path = _file_of(version)
    if path is None:
        raise KeyError(version)
    # hundreds of thousands of small objects: the cycle collector only slows this down
    enabled = gc.isenabled()
    gc.disable()
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
        unreadable = functools.partial(_unreadable, version, path)
        record = _from_offsets(raw, path, unreadable)
        if record is None:
            record = _decode(_Text(raw), unreadable)
            _offsets_again(path, raw, record)
    except (OSError, EOFError, ValueError) as exc:
        raise _unreadable(version, path, str(exc)) from None
    finally:
        if enabled:
            gc.enable()
    if record.get("format") != FORMAT:
        raise KeyError(f"{version} (data of format {record.get('format')}, not {FORMAT})")
    return record


def _offsets_again(path: str, raw: bytes, record: Mapping[str, Any]) -> None:
    """A record of the user's data folder read from its text (its offsets file is missing, or
    of another record or format: written by an earlier migrate-fi): its offsets are written
    again, so that the next run reads it through them. Nothing is written where it cannot be,
    nor beside the bundled data (it is shipped with its own)."""
    if os.path.dirname(os.path.abspath(path)) != os.path.abspath(user_data_dir()):
        return
    found = encode_offsets(raw, record)
    if found is not None:
        with contextlib.suppress(OSError):
            _replace(offsets_file(path), found)


def _unreadable(version: str, path: str, why: str) -> DataError:
    again = (
        "reinstall migrate-fi"
        if origin(version) == "bundled"
        else f"`migrate-fi signatures update {version}` fetches it again"
    )
    return DataError(f"{path}: the API data of {version} cannot be read ({why}): {again}")


_FEED = 1 << 14  # compressed bytes handed to zlib at a time (what it leaves over is copied)


def _members(raw: bytes | memoryview) -> Iterator[tuple[int, bytes]]:
    """Each gzip member of ``raw``, in order: (where it ends in ``raw``, its text). ValueError
    when ``raw`` is not gzip, is cut short, or a member's checksum is wrong."""
    import zlib  # (here: a run that reads no release data never imports it)

    view = memoryview(raw)
    if not len(view):
        raise ValueError("an empty file")
    pos = 0
    while pos < len(view):
        stream = zlib.decompressobj(wbits=31)  # (31: a gzip header, checked with its trailer)
        pieces = []
        at = pos
        try:
            while not stream.eof:
                if at >= len(view):
                    raise ValueError("the file is cut short")
                fed = view[at : at + _FEED]
                pieces.append(stream.decompress(fed))
                at += len(fed)
        except zlib.error as exc:
            raise ValueError(f"not gzip data: {exc}") from None
        pos = at - len(stream.unused_data)
        yield pos, b"".join(pieces)


def _decompressed(raw: bytes | memoryview) -> bytes:
    """The text of all the gzip members of ``raw`` (ValueError as `_members`)."""
    return b"".join(text for _, text in _members(raw))


class _Text:
    """A record's decompressed text, held as its gzip members (compressed): `write_release`
    ends each member with a line, every 32 KB or so. A piece (members up to the end of a line)
    is decompressed when it is asked for, and the last few asked are kept. 0.7.4's 10 MB of
    text are held in 1.5 MB; a record written as one member is held whole, decompressed."""

    __slots__ = ("_current", "_ends", "_high", "_kept", "_low", "_raw", "_starts")

    def __init__(
        self,
        raw: bytes | memoryview,
        plain: bytes | None = None,
        pieces: tuple[MutableSequence[int], MutableSequence[int]] | None = None,
    ) -> None:
        """``plain``: the text itself (``raw`` is not read); ``pieces``: where they end in
        ``raw`` and start in the text, known (`pieces` need not read ``raw`` to learn it)."""
        self._raw = raw
        # where each piece ends in ``raw`` (it starts where the one before ends)
        self._ends: MutableSequence[int] = pieces[0] if pieces else []
        # where each starts in the text
        self._starts: MutableSequence[int] = pieces[1] if pieces else []
        self._kept: dict[int, bytes] = {}
        self._current, self._low, self._high = b"", 0, 0  # the piece last read, and its span
        if plain is not None:
            self._ends.append(len(raw))
            self._starts.append(0)
            self._kept[0] = plain

    def pieces(self) -> Iterator[tuple[int, bytes]]:
        """Each piece's (start in the text, text), reading ``raw`` once and noting where the
        pieces lie (ValueError as `_members`); the text at once when it was given."""
        if self._starts:
            yield 0, self._kept[0]
            return
        done, pending = 0, b""
        for end, text in _members(self._raw):
            pending += text
            if pending.endswith(b"\n") or end == len(self._raw):
                self._ends.append(end)
                self._starts.append(done)
                if len(self._starts) == 1 and end == len(self._raw):
                    self._kept[0] = pending  # (one piece: nothing to decompress again)
                yield done, pending
                done += len(pending)
                pending = b""

    def whole(self) -> bytes:
        """The whole text (read for a record in another layout)."""
        if 0 in self._kept and len(self._starts) == 1:
            return self._kept[0]
        return _decompressed(self._raw)

    def line(self, pos: int) -> bytes:
        """The text from ``pos`` to the end of its line (the newline left out)."""
        if not self._low <= pos < self._high:
            self._at_piece(pos)
        text, local = self._current, pos - self._low
        end = text.find(b"\n", local)
        return text[local : end if end >= 0 else len(text)]

    def _at_piece(self, pos: int) -> None:
        """Make the piece that holds ``pos`` the current one (decompressed if not kept)."""
        i = bisect.bisect_right(self._starts, pos) - 1
        text = self._kept.get(i)
        if text is None:
            first = self._ends[i - 1] if i else 0
            text = _decompressed(memoryview(self._raw)[first : self._ends[i]])
            if len(self._kept) >= _PIECES_KEPT:
                del self._kept[next(iter(self._kept))]  # the oldest
            self._kept[i] = text
        self._current, self._low, self._high = text, self._starts[i], self._starts[i] + len(text)


_LAZY = ("defs", "modules")  # the objects written one entry per line, in this order
# Words that an analysis asks of every entry of ``defs`` (`differ.changed_enums`: which may be
# enums): the offsets file lists the entries that hold each (`Section.keys_holding`)
INDEXED = (b'"enum":',)
_RECENT = 64  # decoded entries a section keeps (one callable asks for its class again and again)
_PIECES_KEPT = 16  # decompressed pieces a record keeps (a pass in key order reads each once)
_PIECE = 32 << 10  # the text of one gzip member `write_release` writes, at least (to a line end)
_MISSING = object()
_JSON = json.JSONDecoder()


class Section(Mapping[str, Any]):
    """A record's ``defs`` or ``modules``: each entry's JSON text, decoded when it is asked for
    (a new object each time, but for the last few dozen asked). Read-only."""

    __slots__ = ("_at", "_holding", "_recent", "_text", "_unreadable")

    def __init__(
        self,
        text: _Text,
        at: Mapping[str, int],
        unreadable: Callable[[str], DataError],
        holding: Mapping[bytes, list[str]] | None = None,
    ) -> None:
        self._text = text  # the record's text
        self._at = at  # key -> where its value's text starts (it ends the line)
        self._recent: dict[str, Any] = {}
        self._unreadable = unreadable  # the error for an entry that is not JSON (why -> error)
        # `INDEXED` word -> the keys whose text holds it, in order (what the offsets file says)
        self._holding = holding or {}

    def keys_holding(self, word: bytes) -> list[str]:
        """The keys whose entry's text holds ``word``, in order: from the offsets file for a
        word of `INDEXED`, else found in the text (every piece decompressed: 0.7.2's 13,500
        definitions, 59 ms for ``"enum":``, not 1)."""
        found = self._holding.get(word)
        if found is None:
            found = [key for key in self._at if word in self.text(key)]
        return found

    def text(self, key: str) -> bytes:
        """The JSON text of an entry (KeyError when there is none): equal texts, equal values."""
        line = self._text.line(self._at[key])
        return line[:-1] if line[-1:] == b"," else line

    def __getitem__(self, key: str) -> Any:
        found = self._recent.get(key, _MISSING)
        if found is _MISSING:
            try:
                found = json.loads(self.text(key))
            except ValueError as exc:  # (found only now: the entry was never decoded before)
                raise self._unreadable(f"{key}: {exc}") from None
            if len(self._recent) >= _RECENT:
                del self._recent[next(iter(self._recent))]  # the oldest
            self._recent[key] = found
        return found

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self._at else default

    def __contains__(self, key: object) -> bool:
        return key in self._at

    def __iter__(self) -> Iterator[str]:
        return iter(self._at)

    def __len__(self) -> int:
        return len(self._at)


def _decode(text: _Text | bytes, unreadable: Callable[[str], DataError]) -> dict[str, Any]:
    """A record from its JSON text: the line layout `write_release` writes, or any JSON
    (decoded whole). ValueError when it is neither; ``unreadable`` makes the error of an entry
    found not to be JSON when it is decoded. ``bytes``: the text itself, not compressed."""
    if isinstance(text, bytes):
        text = _Text(b"", plain=text)
    lines = _lines(text.pieces())
    head = next(lines, None)
    line = next(lines, None)
    if head is None or line is None or line[0] != b',"%s":{' % _LAZY[0].encode():
        record = json.loads(text.whole())
        if not isinstance(record, dict):
            raise ValueError("not a JSON object")
        # the record lives as long as the run: keep the collector from walking it again and
        # again while files are parsed (it doubled the time of `ast.parse` on large trees)
        gc.freeze()
        return record
    record = json.loads(head[0] + b"}")
    if not isinstance(record, dict):
        raise ValueError("not a JSON object")
    for name in _LAZY:
        if line is None or line[0] != b',"%s":{' % name.encode():
            raise ValueError(f"no {name} at byte {line[1] if line else 'the end'}")
        at: dict[str, int] = {}
        for entry, pos in lines:
            if entry == b"}":
                break
            quote = entry.find(b'":')  # (the key's end, if it escapes nothing)
            if entry[:1] == b'"' and quote > 0 and 92 not in entry[:quote]:  # 92: "\\"
                at[entry[1:quote].decode()] = pos + quote + 2
                continue
            try:  # (the layout is ASCII: a character is a byte)
                key, end = _JSON.raw_decode(entry.decode())  # (the key's string)
            except ValueError:
                key, end = None, 0
            if not isinstance(key, str) or entry[end : end + 1] != b":":
                raise ValueError(f"no key at byte {pos}")
            at[key] = pos + end + 1
        else:
            raise ValueError(f"{name} does not end")
        record[name] = Section(text, at, unreadable)
        line = next(lines, None)
    if line is None or line[0] != b"}" or next(lines, None) is not None:
        raise ValueError(f"unexpected text at byte {line[1] if line else 'the end'}")
    _share_targets(record)
    return record


# A record's offsets (`write_offsets`): beside ``<version>.json.gz``, ``<version>.offsets.gz``
# says where its pieces and its entries lie, which entries of ``defs`` hold each word of
# `INDEXED` (by their places), and holds the rest of the record (its first line:
# ``exports`` as keys and targets, each target that is a key of ``defs`` by its place among
# them), so that loading it decompresses none of the record and decodes none of its first line.
# After a first line (this header, the record's size and CRC-32: an offsets file that does not
# match its record is not used), it is a row of parts, each its size in 8 bytes then itself:
# numbers as 8-byte integers, and strings (keys, exports' keys and targets) joined by tabs with
# where each starts, all read as they are (0.7.4's: 3 ms, not the 20 ms of lines of words to
# split, order to check and numbers to convert). `encode_offsets` writes keys in order, each
# once, as `_Sorted` looks them up by halving; a file of another header is not read.
_OFFSETS = b"migrate-fi offsets 4"
_INT = "q"  # (8-byte integers, little-endian in the file)
_PARTS = 2 + 3 * len(_LAZY) + 4 + 2  # (see `encode_offsets`)


def offsets_file(path: str) -> str:
    """The offsets file of the record at ``path``."""
    return path.removesuffix(".json.gz") + ".offsets.gz"


def encode_offsets(raw: bytes, record: Mapping[str, Any]) -> bytes | None:
    """The offsets of a record (``raw``: its compressed bytes, ``record``: what `_decode` read
    from them); None when they cannot be written down (a record of another layout, keys or
    exports that cannot be written between tabs, keys out of order)."""
    import gzip
    import zlib

    sections = [record.get(name) for name in _LAZY]
    texts = {id(s._text) for s in sections if isinstance(s, Section)}
    if len(texts) != 1 or not all(isinstance(s, Section) for s in sections):
        return None
    exports = record.get("exports")
    if not isinstance(exports, Mapping) or not all(
        _tab_free(k) and _tab_free(v) for k, v in exports.items()
    ):
        return None
    text = sections[0]._text  # type: ignore[union-attr]
    parts = [_packed(text._ends), _packed(text._starts)]
    for section in sections:
        assert isinstance(section, Section)
        keys = list(section._at)
        if not all(_tab_free(k) for k in keys) or not _ascending(keys):
            return None  # (keys are written between tabs, and looked up by halving)
        parts += [*_joined(keys), _packed(section._at.values())]
    publics = list(exports)
    if not _ascending(publics):
        return None
    defs = record["defs"]
    place = {key: i for i, key in enumerate(defs)}
    parts += _joined(publics)
    parts += _joined([str(place[t]) if t in place else f"={t}" for t in exports.values()])
    holding = {w.decode(): [place[k] for k in defs.keys_holding(w)] for w in INDEXED}
    parts.append(json.dumps(holding, sort_keys=True, separators=(",", ":")).encode())
    rest = {k: v for k, v in record.items() if k not in _LAZY and k != "exports"}
    parts.append(json.dumps(rest, sort_keys=True, separators=(",", ":")).encode())
    assert len(parts) == _PARTS
    header = b"%s %d %d\n" % (_OFFSETS, len(raw), zlib.crc32(raw))
    body = b"".join(len(part).to_bytes(8, "little") + part for part in parts)
    return gzip.compress(header + body, compresslevel=9, mtime=0)


def _packed(numbers: Iterable[int]) -> bytes:
    """Numbers as the offsets file holds them: 8-byte little-endian integers."""
    found = array(_INT, numbers)
    if sys.byteorder != "little":
        found.byteswap()
    return found.tobytes()


def _unpacked(part: memoryview) -> array[int]:
    """The numbers of a part of the offsets file (ValueError: not a whole number of them)."""
    found = array(_INT)
    found.frombytes(part)  # (ValueError when its size is not a multiple of theirs)
    if sys.byteorder != "little":
        found.byteswap()
    return found


def _joined(strings: Sequence[str]) -> list[bytes]:
    """Strings as two parts of the offsets file: their text as `_Keys` holds it (between
    tabs), and where each starts in it, with one more place past the last."""
    starts = itertools.accumulate(map((1).__add__, map(len, strings)), initial=1)
    text = "\t" + "\t".join(strings) + "\t" if strings else "\t"
    return [text.encode(), _packed(starts)]


def _tab_free(value: object) -> bool:
    """A string that can be written between tabs on a line of its own (and is not empty)."""
    return isinstance(value, str) and bool(value) and "\t" not in value and "\n" not in value


def write_offsets(path: str, raw: bytes | None = None) -> str | None:
    """Write the offsets file of the record at ``path`` (``raw``: its bytes, when the caller
    has them); None when it has none to write, and an offsets file of an earlier record there
    is removed."""
    if raw is None:
        with open(path, "rb") as fh:
            raw = fh.read()
    found = encode_offsets(raw, _decode(_Text(raw), lambda why: DataError(why)))
    if found is None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(offsets_file(path))
        return None
    _replace(offsets_file(path), found)
    return offsets_file(path)


def _inflate(data: bytes) -> bytes:
    """The text of a gzip file of one member (ValueError or `zlib.error` when it is not one):
    inflated into a buffer of the size its trailer says, in one piece (a buffer grown as it
    fills took 10.5 ms for 0.7.4's offsets, not 7.5)."""
    import zlib

    size = int.from_bytes(data[-4:], "little") if len(data) >= 18 else 0
    bufsize = size + 1 if 0 < size <= 1032 * len(data) else zlib.DEF_BUF_SIZE
    return zlib.decompress(data, wbits=31, bufsize=bufsize)


def _from_offsets(
    raw: bytes, path: str, unreadable: Callable[[str], DataError]
) -> dict[str, Any] | None:
    """The record, read through its offsets file; None when it has none that matches it (its
    header names the size and CRC-32 of the record it was made from)."""
    import zlib

    try:
        with open(offsets_file(path), "rb") as fh:
            data = _inflate(fh.read())
        crc = zlib.crc32(raw)
        end = data.find(b"\n")
        magic, size, crc_said = data[:end].rsplit(b" ", 2)
        if magic != _OFFSETS or int(size) != len(raw) or int(crc_said) != crc:
            return None
        view = memoryview(data)
        parts: list[memoryview] = []
        at = end + 1
        while at < len(view) and len(parts) < _PARTS:
            size_of = int.from_bytes(view[at : at + 8], "little")
            at += 8
            if at + size_of > len(view):
                return None
            parts.append(view[at : at + size_of])
            at += size_of
        if len(parts) != _PARTS or at != len(view):
            return None
        ends, starts = _unpacked(parts[0]), _unpacked(parts[1])
        if len(ends) != len(starts) or not ends or ends[-1] != len(raw) or starts[0] != 0:
            return None
        record = json.loads(bytes(parts[-1]))
        if not isinstance(record, dict):
            return None
        text = _Text(raw, pieces=(ends, starts))
        defs: Sequence[str] = ()
        for i, name in enumerate(_LAZY):
            keys, at_of = _Keys.read(parts[2 + 3 * i], parts[3 + 3 * i]), parts[4 + 3 * i]
            places = _unpacked(at_of)
            if keys is None or len(keys) != len(places):
                return None
            holding = _holding(bytes(parts[-2]), keys) if name == "defs" else None
            record[name] = Section(text, _Sorted(keys, places, int), unreadable, holding)
            if name == "defs":
                defs = keys
        base = 2 + 3 * len(_LAZY)
        publics = _Keys.read(parts[base], parts[base + 1])
        targets = _Keys.read(parts[base + 2], parts[base + 3])
        if publics is None or targets is None or len(publics) != len(targets):
            return None

        def target(token: str) -> str:  # (a key of ``defs`` by its place)
            return token[1:] if token[:1] == "=" else defs[int(token)]

        record["exports"] = _Sorted(publics, targets, target)
    except (OSError, ValueError, IndexError, OverflowError, zlib.error):  # (not one this wrote)
        return None
    return record


def _holding(line: bytes, keys: Sequence[str]) -> dict[bytes, list[str]]:
    """The offsets file's index of `INDEXED` words: each word -> the keys (of ``keys``, by
    their places) whose entries hold it. ValueError or IndexError for one that says otherwise."""
    found = json.loads(line)
    if not isinstance(found, dict):
        raise ValueError("not an index of words")
    out: dict[bytes, list[str]] = {}
    for word, places in found.items():
        if not isinstance(places, list) or not all(type(p) is int and p >= 0 for p in places):
            raise ValueError(f"not places of keys: {word}")
        out[word.encode()] = [keys[p] for p in places]
    return out


def _ascending(keys: list[str]) -> bool:
    """Whether ``keys`` are in order, each once (as `encode_release` writes a record's keys:
    sorted, as JSON objects' keys are)."""
    return all(map(str.__lt__, keys, keys[1:]))


_STEP = 32  # (a `_Keys`'s strings between two of its sample)


class _Keys(Sequence[str]):
    """Strings kept as one text, between tabs, each made when it is asked for: two parts of the
    offsets file (0.7.2's and 0.7.4's names and exports, 75,000 strings: 8.7 MB held as
    strings, 5 MB so, in every worker of a run), halved by `bisect` as a list would be."""

    __slots__ = ("_sample", "_starts", "text")

    def __init__(self, text: str, starts: array[int]) -> None:
        self.text = text  # "\t" + the strings joined by tabs + "\t"
        self._starts = starts  # where each string begins in it, and one more past the last
        self._sample: list[str] | None = None  # every `_STEP`th string (`place`)

    def place(self, key: str) -> int:
        """Where ``key`` is among strings in order, each once; -1 where it is not: halving a
        list of every `_STEP`th string, then the strings of its part (a halving of them all,
        each made as it is compared, cost FlashInfer's own tree 5% of its check)."""
        if self._sample is None:
            self._sample = self[::_STEP]
        n = len(self)
        lo = max(bisect.bisect_right(self._sample, key) - 1, 0) * _STEP
        i = bisect.bisect_left(self, key, lo, min(lo + _STEP, n))
        return i if i < n and self[i] == key else -1

    @classmethod
    def read(cls, text: memoryview, starts: memoryview) -> _Keys | None:
        """The strings of two parts of the offsets file (`_joined`): their text and where
        each starts; None when the two do not agree (a string between each two tabs, the
        first after the first, one more place past the last)."""
        joined, places = str(text, "utf-8"), _unpacked(starts)
        if not places or places[0] != 1 or places[-1] != len(joined):
            return None
        if joined[:1] != "\t" or joined.count("\t") != len(places):
            return None
        return cls(joined, places)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        starts = self._starts
        if i < 0:
            i += len(starts) - 1
        if not 0 <= i < len(starts) - 1:
            raise IndexError(i)
        return self.text[starts[i] : starts[i + 1] - 1]

    def __len__(self) -> int:
        return len(self._starts) - 1

    def __iter__(self) -> Iterator[str]:
        text, starts = self.text, self._starts
        return (text[a : b - 1] for a, b in itertools.pairwise(starts))


_K = TypeVar("_K")  # (the raw form of a value, in `_Sorted`)
_V = TypeVar("_V")


class _Sorted(Mapping[str, _V], Generic[_K, _V]):
    """A read-only mapping over keys in order and their values' raw forms, each value made
    (``make``) when it is asked for: what the offsets file holds, read without building a
    dict (0.7.4: 17,000 defs and 11,600 exports, 10 ms of each process that loads it, and
    2 MB; a run over a serving tree asks a few thousand of them). Looked up by halving, once
    for each key asked: its place is kept (a dict of every key, built once it was asked an
    eighth of their number, made each key a string again: a worker of a check of SGLang held
    the 3.5 MB that `_Keys` saves)."""

    __slots__ = ("_index", "_joined", "_keys", "_make", "_raw")

    def __init__(self, keys: Sequence[str], raw: Sequence[_K], make: Callable[[_K], _V]) -> None:
        self._keys, self._raw, self._make = keys, raw, make
        self._index: dict[str, int] | None = None  # each key asked -> its place (-1: none)
        # (the keys between tabs: `ending_with`; a `_Keys` is kept so)
        self._joined: str | None = keys.text if isinstance(keys, _Keys) else None

    def ending_with(self, suffix: str) -> list[str]:
        """The keys that end with ``suffix`` (which holds no tab), in order: found in the keys
        joined (once), not by a test of each (0.7.4's 28,000 keys and exports: 5 ms a name)."""
        if self._joined is None:
            self._joined = "\t" + "\t".join(self._keys) + "\t"
        joined, needle, out = self._joined, suffix + "\t", []
        at = joined.find(needle)
        while at >= 0:
            out.append(joined[joined.rfind("\t", 0, at) + 1 : at + len(suffix)])
            at = joined.find(needle, at + len(needle))
        return out

    def _place(self, key: object) -> int:
        if not isinstance(key, str):
            return -1
        index = self._index
        if index is None:
            index = self._index = {}
        place = index.get(key)
        if place is None:  # (halving, once for each key asked: most are asked again and again)
            keys = self._keys
            if isinstance(keys, _Keys):
                place = keys.place(key)
            else:
                i = bisect.bisect_left(keys, key)
                place = i if i < len(keys) and keys[i] == key else -1
            index[key] = place
        return place

    def items(self) -> ItemsView[str, _V]:
        return _SortedItems(self)

    def __getitem__(self, key: str) -> _V:
        i = self._place(key)
        if i < 0:
            raise KeyError(key)
        return self._make(self._raw[i])

    def __contains__(self, key: object) -> bool:
        return self._place(key) >= 0

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)


def keys_holding(mapping: Mapping[str, Any], word: bytes) -> list[str]:
    """The keys of a record's ``defs`` or ``modules`` whose entry may hold ``word`` in its
    JSON text, in order: those that do (`Section.keys_holding`), or every key of a record
    decoded whole."""
    return mapping.keys_holding(word) if isinstance(mapping, Section) else list(mapping)


def keys_ending_with(mapping: Mapping[str, Any], suffix: str) -> list[str]:
    """The keys of a record's ``defs``, ``modules`` or ``exports`` that end with ``suffix``, in
    order."""
    keys = mapping._at if isinstance(mapping, Section) else mapping
    if isinstance(keys, _Sorted) and suffix and "\t" not in suffix:
        return keys.ending_with(suffix)
    return [k for k in keys if k.endswith(suffix)]


class _SortedItems(ItemsView[str, _V]):
    """A `_Sorted`'s items, made in order from its lists (no lookup of each key)."""

    _mapping: _Sorted[Any, _V]

    def __iter__(self) -> Iterator[tuple[str, _V]]:
        m = self._mapping
        return zip(m._keys, map(m._make, m._raw), strict=True)


def _share_targets(record: dict[str, Any]) -> None:
    """Make the targets of ``exports`` the same strings as the keys of ``defs`` they name
    (0.7.4: 11,600 exports, 1.4 MB of strings held twice)."""
    exports, defs = record.get("exports"), record["defs"]
    if not isinstance(exports, dict) or not isinstance(defs, Section):
        return
    same = {key: key for key in defs}
    for public, target in exports.items():
        if isinstance(target, str):
            exports[public] = same.get(target, target)


def _lines(pieces: Iterator[tuple[int, bytes]]) -> Iterator[tuple[bytes, int]]:
    """Each line of the text, without its newline, and where it starts in the text."""
    for start, piece in pieces:
        pos = 0
        while pos < len(piece):
            eol = piece.find(b"\n", pos)
            if eol < 0:
                eol = len(piece)
            yield piece[pos:eol], start + pos
            pos = eol + 1


def encode_release(record: Mapping[str, Any]) -> bytes:
    """The line layout of a record: one JSON object, its ``defs`` and ``modules`` one entry per
    line (keys sorted, no spaces: the same record, the same bytes)."""

    def dumps(value: Any) -> str:
        return json.dumps(value, sort_keys=True, separators=(",", ":"))

    head = {k: v for k, v in record.items() if k not in _LAZY}
    if not head:
        raise ValueError("a record without its format or provenance")
    lines = [dumps(head)[:-1]]
    for name in _LAZY:
        section = record.get(name, {})
        lines.append(f",{dumps(name)}:{{")
        entries = [f"{dumps(k)}:{dumps(section[k])}," for k in sorted(section)]
        if entries:
            entries[-1] = entries[-1][:-1]
        lines.extend(entries)
        lines.append("}")
    lines.extend(["}", ""])
    return "\n".join(lines).encode()


_UMASK = os.umask(0o022)
os.umask(_UMASK)


def _replace(path: str, payload: bytes) -> None:
    """Write ``path`` at once: a unique temporary file beside it, then a rename (concurrent
    writers never see, or leave, a half-written file)."""
    fd, tmp = temporary_beside(os.path.dirname(path) or ".", ".tmp-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
        os.chmod(tmp, 0o666 & ~_UMASK)  # (made 0600: data others may read)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_json(path: str, data: Any) -> str:
    """Write data as indented, key-sorted JSON (a stable diff), replacing the file at once."""
    _replace(path, (json.dumps(data, indent=1, sort_keys=True) + "\n").encode())
    return path


def write_release(record: dict[str, Any], folder: str = DATA_DIR) -> str:
    """Write a release record deterministically (same input, same bytes)."""
    os.makedirs(folder, exist_ok=True)
    version = record["provenance"]["version"]
    path = _file(version, folder)
    raw = compress_release(encode_release({"format": FORMAT, **record}))
    _replace(path, raw)
    write_offsets(path, raw)
    _releases_in.cache_clear()
    _union.cache_clear()
    _manifest_usable.cache_clear()
    return path


def compress_release(text: bytes) -> bytes:
    """A record's text as gzip, one member per 32 KB or so of whole lines: any gzip reader
    reads it whole, and `load_release` keeps it compressed, decompressing a piece when one of
    its entries is asked for. Deterministic (no name, no time in the headers)."""
    import gzip

    members = []
    pos = 0
    while pos < len(text):
        eol = text.find(b"\n", pos + _PIECE - 1)
        end = len(text) if eol < 0 else eol + 1
        members.append(gzip.compress(text[pos:end], compresslevel=9, mtime=0))
        pos = end
    return b"".join(members)


def release_files(bundled: str, kind: str) -> dict[str, str]:
    """``<release>.toml`` files of reviewed per-release data (value maps, release notes):
    release -> its file, the bundled folder's over the user's data folder's ``kind``/."""
    found: dict[str, str] = {}
    for folder in (os.path.join(user_data_dir(), kind), bundled):
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            if name.endswith(".toml"):
                found[name[: -len(".toml")]] = os.path.join(folder, name)
    return found
