"""TOML, read with the standard library's parser (``tomli`` before Python 3.11), and the
reviewed data files (release notes, value maps) read through their folder's compiled copy.

The standard library's parser reads a double-quoted string a character at a time: the release
notes of one range (300 KB of explanations) took 25 ms to parse at the start of every run. A
folder of reviewed files may hold `COMPILED`, written by ``python scripts/compile_data.py``:
each file's name, the SHA-256 of its bytes and what it parses to, as JSON. `load_reviewed`
answers from it only for a file whose bytes have that digest; any other file (edited since,
new, in the user's data folder, or a compiled copy that cannot be read) is parsed as TOML, so
the copy can make a run slower when stale, never different.
"""

from __future__ import annotations

import json
import os
import sys
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hashlib import sha256
    from types import ModuleType
else:
    try:  # (`hashlib` would load OpenSSL's first: 3 ms of every command's start)
        from _sha256 import sha256
    except ImportError:  # pragma: no cover - Python 3.12 calls it `_sha2`; or built without
        try:
            from _sha2 import sha256
        except ImportError:
            from hashlib import sha256

__all__ = ["COMPILED", "compiled_text", "load_reviewed", "tomllib"]

COMPILED = "compiled.jsonl"  # (a line per file: name, tab, digest, tab, JSON)


def tomllib() -> ModuleType:
    """The TOML parser (imported when a TOML file is first read: it costs start-up)."""
    if sys.version_info >= (3, 11):
        import tomllib as found
    else:  # pragma: no cover
        import tomli as found
    return found


def load_reviewed(path: str) -> dict[str, Any]:
    """What the TOML file at ``path`` holds, as `tomllib.load` reads it; from the compiled copy
    of its folder where that holds these very bytes. Each call gives objects of its own.
    Raises OSError, and `TOMLDecodeError` for a file that is not TOML (or not UTF-8)."""
    with open(path, "rb") as fh:
        raw = fh.read()
    folder, name = os.path.split(path)
    entry = _compiled(folder).get(name)
    if entry is not None and entry[0] == sha256(raw).hexdigest():
        try:
            found = json.loads(entry[1])
        except ValueError:
            found = None
        if isinstance(found, dict):
            return found
    toml = tomllib()
    try:
        text = raw.decode()
    except UnicodeDecodeError as exc:
        raise toml.TOMLDecodeError(f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    data: dict[str, Any] = toml.loads(text)
    return data


@lru_cache(maxsize=8)
def _compiled(folder: str) -> dict[str, tuple[str, str]]:
    """The compiled copy of ``folder``: file name -> (SHA-256 of its bytes, its JSON); empty
    where there is none or it cannot be read (each file is then parsed)."""
    try:
        with open(os.path.join(folder, COMPILED), encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except (OSError, ValueError):
        return {}
    out: dict[str, tuple[str, str]] = {}
    for line in lines:
        parts = line.split("\t", 2)
        if len(parts) == 3:
            out[parts[0]] = (parts[1], parts[2])
    return out


def compiled_text(folder: str) -> str:
    """The compiled copy of every ``*.toml`` file of ``folder``, as `COMPILED` holds it (a file
    whose values JSON cannot say, a date for one, is left out: it is parsed each time)."""
    lines = []
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".toml"):
            continue
        with open(os.path.join(folder, name), "rb") as fh:
            raw = fh.read()
        data = tomllib().loads(raw.decode())
        try:
            text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        except (TypeError, ValueError):
            continue
        if json.loads(text) != data:
            continue
        lines.append(f"{name}\t{sha256(raw).hexdigest()}\t{text}\n")
    return "".join(lines)
