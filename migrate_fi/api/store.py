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
``modules``; the rest is on the first line). `load_release` keeps those two as `Section` objects:
the entries' JSON text, decoded when asked (and not kept, but for the last few dozen). For 0.7.4
that is about 17 MB held, not the 70 MB of its decoded objects. A record in any other JSON
layout (one line: what a migrate-fi before this one wrote) is decoded whole, as before.
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping
from functools import cache
from typing import Any

from packaging.version import Version

from migrate_fi.userdirs import user_folder
from migrate_fi.versions import parse_version

__all__ = [
    "DATA_DIR",
    "DATA_ENV",
    "DataError",
    "Section",
    "available_releases",
    "encode_release",
    "forget",
    "load_release",
    "missing_data",
    "newest_release",
    "on_forget",
    "origin",
    "register",
    "user_data_dir",
    "user_releases",
    "write_json",
    "write_release",
]

DATA_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "api")
DATA_ENV = "MIGRATE_FI_DATA_DIR"
MANIFEST = "releases.json"
FORMAT = 3  # 2: every module with its names; defs at any depth; synthesized constructors
# 3: a hash of each definition's code ("h")


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
        record = _decode(_gunzip(path), lambda why: _unreadable(version, path, why))
    except (OSError, EOFError, ValueError) as exc:
        raise _unreadable(version, path, str(exc)) from None
    finally:
        if enabled:
            gc.enable()
    if record.get("format") != FORMAT:
        raise KeyError(f"{version} (data of format {record.get('format')}, not {FORMAT})")
    return record


def _gunzip(path: str) -> bytes | bytearray:
    """A gzip file's content, decompressed into one buffer of the size its trailer says: a
    whole read (`gzip.open`) holds it twice at its peak, 10 MB more for the largest record.
    ValueError when it is not gzip, or its checksum is wrong."""
    import zlib  # (here: a run that reads no release data never imports it)

    with open(path, "rb") as fh:
        raw = fh.read()
    if not raw:
        raise ValueError("an empty file")
    size = int.from_bytes(raw[-4:], "little")  # (the size modulo 2**32, in the trailer)
    out = bytearray(size)
    stream, done, pending = zlib.decompressobj(wbits=31), 0, raw  # (31: a gzip header)
    try:
        while pending and not stream.eof:
            piece = stream.decompress(pending, 1 << 20)
            out[done : done + len(piece)] = piece
            done += len(piece)
            pending = stream.unconsumed_tail
        if done != size or not stream.eof or stream.unused_data:  # (several members...)
            import gzip

            return gzip.decompress(raw)
    except zlib.error as exc:
        raise ValueError(f"not gzip data: {exc}") from None
    return out  # (a bytearray: read as bytes, and never changed)


def _unreadable(version: str, path: str, why: str) -> DataError:
    again = (
        "reinstall migrate-fi"
        if origin(version) == "bundled"
        else f"`migrate-fi signatures update {version}` fetches it again"
    )
    return DataError(f"{path}: the API data of {version} cannot be read ({why}): {again}")


_LAZY = ("defs", "modules")  # the objects written one entry per line, in this order
_RECENT = 64  # decoded entries a section keeps (one callable asks for its class again and again)
_MISSING = object()
_JSON = json.JSONDecoder()


class Section(Mapping[str, Any]):
    """A record's ``defs`` or ``modules``: each entry's JSON text, decoded when it is asked for
    (a new object each time, but for the last few dozen asked). Read-only."""

    __slots__ = ("_at", "_data", "_recent", "_unreadable")

    def __init__(
        self, data: bytes | bytearray, at: dict[str, int], unreadable: Callable[[str], DataError]
    ) -> None:
        self._data = data  # the file, decompressed
        self._at = at  # key -> where its value's text starts in ``data`` (it ends the line)
        self._recent: dict[str, Any] = {}
        self._unreadable = unreadable  # the error for an entry that is not JSON (why -> error)

    def text(self, key: str) -> bytes | bytearray:
        """The JSON text of an entry (KeyError when there is none): equal texts, equal values."""
        start = self._at[key]
        end = self._data.index(b"\n", start)
        return self._data[start : end - 1 if self._data[end - 1] == 44 else end]  # (44: ",")

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


def _decode(data: bytes | bytearray, unreadable: Callable[[str], DataError]) -> dict[str, Any]:
    """A record from its JSON: the line layout `write_release` writes, or any JSON (decoded
    whole). ValueError when it is neither; ``unreadable`` makes the error of an entry found
    not to be JSON when it is decoded."""
    first = data.find(b"\n")
    if first < 0 or not data.startswith(b',"%s":{\n' % _LAZY[0].encode(), first + 1):
        record = json.loads(data)
        if not isinstance(record, dict):
            raise ValueError("not a JSON object")
        # the record lives as long as the run: keep the collector from walking it again and
        # again while files are parsed (it doubled the time of `ast.parse` on large trees)
        gc.freeze()
        return record
    record = json.loads(data[:first] + b"}")
    if not isinstance(record, dict):
        raise ValueError("not a JSON object")
    pos = first + 1
    for name in _LAZY:
        opening = b',"%s":{\n' % name.encode()
        if not data.startswith(opening, pos):
            raise ValueError(f"no {name} at byte {pos}")
        pos += len(opening)
        at: dict[str, int] = {}
        while not data.startswith(b"}\n", pos):
            eol = data.index(b"\n", pos)
            quote = data.find(b'":', pos, eol)  # (the key's end, if it escapes nothing)
            if data[pos] == 34 and quote > pos and 92 not in data[pos:quote]:  # 34 '"', 92 '\\'
                key, start = data[pos + 1 : quote].decode(), quote + 2
            else:  # (the layout is ASCII: a character is a byte)
                key, end = _JSON.raw_decode(data[pos:eol].decode())  # (the key's string)
                if not isinstance(key, str) or data[pos + end : pos + end + 1] != b":":
                    raise ValueError(f"no key at byte {pos}")
                start = pos + end + 1
            at[key] = start
            pos = eol + 1
        record[name] = Section(data, at, unreadable)
        pos += 2
    if pos != len(data) - 2:
        raise ValueError(f"unexpected text at byte {pos}")
    return record


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
    import tempfile

    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
        os.chmod(tmp, 0o666 & ~_UMASK)  # (mkstemp makes it 0600: data others may read)
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
    payload = encode_release({"format": FORMAT, **record})
    buffer = io.BytesIO()
    import gzip

    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0, filename="") as gz:
        gz.write(payload)
    path = _file(version, folder)
    _replace(path, buffer.getvalue())
    _releases_in.cache_clear()
    _union.cache_clear()
    _manifest_usable.cache_clear()
    return path
