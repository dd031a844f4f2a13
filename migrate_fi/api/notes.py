"""What each FlashInfer release changed in behaviour beyond its signatures: reviewed data.

The signatures say that a default changed, not whether the call now does something else; they
say nothing of a function that starts to refuse a GPU. ``migrate_fi/data/notes/<release>.toml``
(one file per release, every release the API data covers; a user's data folder may add more in
``<data folder>/notes/``) says, per API, with the source each claim was read from:

- ``[[same]]``: a default whose value changed while what the call does did not (a sentinel the
  function maps back to the old value, a module constant of the same value). FI008 leaves
  such calls alone: passing the old value would change nothing a user needs.
- ``[[deprecated]]``: a parameter that still works but warns (``moved_to``: where the argument
  belongs now). No rule adds a deprecated argument. ``omitted = true``: what warns is leaving
  it out (its implicit default, which a later release will change): FI012 reports the calls
  that rely on it, not those that pass it. ``positional = true``: what warns is passing
  arguments by position (with no ``parameter``: any argument; with one: that one, at its
  place): FI012 reports the calls that do.
- ``[[behaviour]]``: what a call does changed with no signature change (``kind``:
  architecture, input-format, numerics, error, other; ``fix`` for a change that only makes
  calls work that failed before): FI012 reports the calls, with the note.
  ``reverts = "<release>"`` marks a change that undoes that release's change of the API: a
  range holding both has neither; ``when = ["do_finalize=False"]`` ties it to arguments (a
  call that cannot pass them is left alone; ``"sfLayout=SfLayout.layout_linear"``: a member of
  a FlashInfer enum, which a call passing another member of it cannot pass), ``when_built = ["backend='cudnn'"]`` (a method's
  note) to the arguments its instance was made with, where that construction is in sight.
  ``parameter = "<name>"`` says that the change is that of the parameter's default, to a value
  a caller wants as it is (a default that now follows a mode the user turns on elsewhere, such
  as torch's deterministic algorithms): FI008 does not pin the old value, and a call that
  passes the parameter is not touched by the change.
  ``dtypes = { cu_seqlens = "int64" }`` keeps out a call whose argument for the parameter is
  certainly a tensor of that torch dtype (made with ``dtype=torch.int64``, converted by
  ``.to(torch.int64)`` or ``.long()``, or a local or a function of the file that gives only
  such), or that leaves it out: a change that now refuses the other dtypes does not touch it.
  ``gpus = ["10.x"]`` says which GPUs the change concerns, as compute capabilities (``"9.0"``,
  ``"10.x"`` for every 10.*, ``"<10.0"``, ``">=12.0"``; their union): a call that the code
  reaches only on other GPUs, by the tests of the capability before it, is not touched by it.

Keys of an entry: ``api`` (a public path as `migrate-fi api-diff` prints it, instances as
``Class().method``), ``parameter`` (same, deprecated), ``old`` and ``new`` (same: the defaults
before and after, as the API data writes them), ``why`` (same, deprecated), ``what`` and
``kind`` (behaviour), ``moved_to``, ``omitted`` and ``positional`` (deprecated, optional; so is
``parameter`` where ``positional`` is), ``source`` (every entry: the wheel's file and line, or
the release notes or pull request it was read from) and ``why_zh`` /
``what_zh`` (``why`` / ``what`` in Chinese, code in backquotes: what the Chinese report says).
"""

from __future__ import annotations

import ast
import os
from functools import cache
from typing import Any, NamedTuple

from migrate_fi.api.store import release_files
from migrate_fi.base.gpus import GpusError, gpus_named
from migrate_fi.base.messages import Said
from migrate_fi.base.versions import VersionError, parse_version

__all__ = [
    "KINDS",
    "NOTES_DIR",
    "Behaviour",
    "Deprecated",
    "Note",
    "NotesError",
    "Same",
    "load_notes",
    "notes_in_range",
    "readable_notes",
]

NOTES_DIR = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "notes"
)
KINDS = ("architecture", "input-format", "numerics", "error", "other", "fix")
# what each kind is called in a message, in English and Chinese
_KIND_ZH = {
    "architecture": "GPU 架构",
    "input-format": "输入格式",
    "numerics": "数值",
    "error": "报错",
    "other": "其他",
    "fix": "修复",
}


def kind_said(kind: str) -> Said:
    """A note's kind as a message names it (``input-format``: 输入格式)."""
    return Said(kind, _KIND_ZH.get(kind, kind))


_TABLES = {
    "same": {"api", "parameter", "old", "new", "why", "why_zh", "source"},
    "deprecated": {
        "api",
        "parameter",
        "moved_to",
        "omitted",
        "positional",
        "why",
        "why_zh",
        "source",
    },
    "behaviour": {
        "api",
        "kind",
        "what",
        "what_zh",
        "source",
        "reverts",
        "when",
        "when_built",
        "parameter",
        "dtypes",
        "gpus",
    },
}
_OPTIONAL = {
    "moved_to",
    "omitted",
    "positional",
    "reverts",
    "when",
    "when_built",
    "why_zh",
    "what_zh",
    "dtypes",
    "gpus",
}
# (optional in these tables, required elsewhere; a deprecation of passing any argument by
# position names none)
_OPTIONAL_IN = {"behaviour": {"parameter"}, "deprecated": {"parameter"}}


# the torch dtypes a note's `dtypes` may name (what `torch.<name>` spells)
_DTYPES = frozenset({"int32", "int64", "float16", "bfloat16", "float32"})


class NotesError(Exception):
    """A notes file that cannot be used; one line naming it and the key."""


class Same(NamedTuple):
    release: str
    api: str
    parameter: str
    why: str
    source: str
    old: str = ""  # the default before and after the release, as the API data writes them
    new: str = ""
    why_zh: str = ""  # ``why`` in Chinese (the report's `--lang zh`); "": not given


class Deprecated(NamedTuple):
    release: str
    api: str
    parameter: str | None  # (None: a note of passing any argument by position)
    why: str
    source: str
    moved_to: str | None = None
    why_zh: str = ""
    # what is deprecated is leaving the parameter out (its implicit default warns, and will
    # change): a call that relies on it is what a person must look at, not one that passes it
    omitted: bool = False
    # what is deprecated is passing by position: the parameter at its place, or any argument
    # (`BatchMLAPagedAttentionWrapper.plan(qo_indptr, ...)` warns on 0.7.0 whatever it passes)
    positional: bool = False


class Behaviour(NamedTuple):
    release: str
    api: str
    kind: str
    what: str
    source: str
    reverts: str | None = None  # the release whose change of this API this one undoes
    # the arguments the change is tied to: "name" (passed at all) or "name=literal"; a call
    # none of whose conditions may hold is not touched by it (empty: every call)
    when: tuple[str, ...] = ()
    what_zh: str = ""  # ``what`` in Chinese (the report's `--lang zh`); "": not given
    # the same for the arguments the instance was made with (a method's note: the wrapper's
    # `backend=` given to its constructor); an instance made out of sight may have them
    when_built: tuple[str, ...] = ()
    # the parameter whose changed default the change is (FI008 leaves that default to the note)
    parameter: str | None = None
    # arguments that keep a call out of the change when they are certainly tensors of a torch
    # dtype: (parameter, dtype) pairs ("cu_seqlens", "int64": a call that passes int64 is
    # not touched by a change that refuses int32)
    dtypes: tuple[tuple[str, str], ...] = ()
    # the GPUs the change concerns, as compute capabilities (`migrate_fi.base.gpus`); None:
    # every GPU. A call the code reaches only on other GPUs is not touched by it.
    gpus: frozenset[int] | None = None


Note = Same | Deprecated | Behaviour


def load_notes() -> tuple[Note, ...]:
    """Every note of every release there is a file for, oldest release first; `NotesError`
    for a file that cannot be used."""
    return _load(None, None)


@cache
def _load(lo: Any, hi: Any) -> tuple[Note, ...]:
    """The notes of the releases after ``lo`` up to ``hi`` (None: no bound); only their files
    are read (a run reads the few its range holds, not all of them)."""
    from migrate_fi.base.toml import load_reviewed

    out: list[tuple[Any, Note]] = []
    for release, path in release_files(NOTES_DIR, "notes").items():
        try:
            version = parse_version(release)
        except VersionError:
            raise NotesError(f"{path}: the file name must be a FlashInfer release") from None
        if (lo is not None and version <= lo) or (hi is not None and version > hi):
            continue
        try:
            data = load_reviewed(path)
        except OSError as exc:
            raise NotesError(f"{path}: cannot be read ({exc.strerror})") from None
        except ValueError as exc:  # (`tomllib.TOMLDecodeError`)
            raise NotesError(f"{path}: not valid TOML ({exc})") from None
        if data.get("release") != release:
            raise NotesError(f"{path}: `release` must be {release!r}, as its name says")
        unknown = set(data) - {"release", *_TABLES}
        if unknown:
            raise NotesError(f"{path}: unknown table {sorted(unknown)[0]!r}")
        for table, keys in _TABLES.items():
            entries = data.get(table, [])
            if not isinstance(entries, list):
                raise NotesError(f"{path}: `{table}` must be an array of tables ([[{table}]])")
            for i, entry in enumerate(entries, 1):
                out.append((version, _note(release, path, table, i, entry, keys)))
    out.sort(key=lambda vn: vn[0])
    return tuple(note for _, note in out)


def _note(release: str, path: str, table: str, index: int, entry: Any, keys: set[str]) -> Note:
    where = f"{path}: {table} {index}"
    if not isinstance(entry, dict):
        raise NotesError(f"{where}: not a table")
    unknown = set(entry) - keys
    if unknown:
        raise NotesError(f"{where}: unknown key {sorted(unknown)[0]!r}")
    missing = sorted(keys - _OPTIONAL - _OPTIONAL_IN.get(table, set()) - set(entry))
    if missing:
        raise NotesError(f"{where}: `{missing[0]}` is missing")
    entry = dict(entry)
    when = entry.pop("when", [])
    if not isinstance(when, list) or not all(_condition(c) for c in when):
        raise NotesError(
            f'{where}: `when` must list conditions: "name", "name=literal" or "name=Enum.member"'
        )
    built = entry.pop("when_built", [])
    if not isinstance(built, list) or not all(_condition(c) for c in built):
        raise NotesError(f'{where}: `when_built` must list conditions: "name" or "name=literal"')
    if built and "()." not in entry.get("api", ""):
        raise NotesError(f"{where}: `when_built` is for a method of an instance (Class().method)")
    dtypes = entry.pop("dtypes", {})
    if not isinstance(dtypes, dict) or not all(
        isinstance(k, str) and k.isidentifier() and isinstance(v, str) and v in _DTYPES
        for k, v in dtypes.items()
    ):
        raise NotesError(
            f"{where}: `dtypes` must map parameter names to torch dtypes"
            f" ({', '.join(sorted(_DTYPES))})"
        )
    omitted = entry.pop("omitted", False)
    if not isinstance(omitted, bool):
        raise NotesError(f"{where}: `omitted` must be true or false")
    positional = entry.pop("positional", False)
    if not isinstance(positional, bool):
        raise NotesError(f"{where}: `positional` must be true or false")
    if table == "deprecated" and "parameter" not in entry and not positional:
        raise NotesError(f"{where}: `parameter` is missing")
    if positional and omitted:
        raise NotesError(f"{where}: `positional` and `omitted` cannot both be true")
    gpus = entry.pop("gpus", None)
    if gpus is not None:
        try:
            if not isinstance(gpus, list) or not gpus:
                raise GpusError("a non-empty list")
            gpus = gpus_named(gpus)
        except GpusError as exc:
            raise NotesError(
                f'{where}: `gpus` must list compute capabilities ("9.0", "10.x", "<10.0"): {exc}'
            ) from None
    for key, value in entry.items():
        if not isinstance(value, str) or not value.strip():
            raise NotesError(f"{where}: `{key}` must be a non-empty string")
    if "parameter" in entry and not entry["parameter"].isidentifier():
        raise NotesError(f"{where}: `parameter` must be one parameter's name")
    for key in ("api", "moved_to"):
        if key in entry and not entry[key].startswith("flashinfer."):
            raise NotesError(f"{where}: `{key}` must be a public path (flashinfer.X)")
    if table == "same":
        return Same(
            release,
            entry["api"],
            entry["parameter"],
            entry["why"],
            entry["source"],
            entry["old"],
            entry["new"],
            entry.get("why_zh", ""),
        )
    if table == "deprecated":
        return Deprecated(
            release,
            entry["api"],
            entry.get("parameter"),
            entry["why"],
            entry["source"],
            entry.get("moved_to"),
            entry.get("why_zh", ""),
            omitted,
            positional,
        )
    if entry["kind"] not in KINDS:
        raise NotesError(f"{where}: `kind` must be one of {', '.join(KINDS)}")
    reverts = entry.get("reverts")
    if reverts is not None:
        try:
            parse_version(reverts)
        except VersionError:
            raise NotesError(f"{where}: `reverts` must be a release") from None
    return Behaviour(
        release,
        entry["api"],
        entry["kind"],
        entry["what"],
        entry["source"],
        reverts,
        tuple(when),
        entry.get("what_zh", ""),
        tuple(built),
        entry.get("parameter"),
        tuple(sorted(dtypes.items())),
        gpus,
    )


def _condition(text: object) -> bool:
    """``name``, ``name=<a Python literal>`` or ``name=<Enum>.<member>``."""
    if not isinstance(text, str):
        return False
    name, _, value = text.partition("=")
    if not name.isidentifier():
        return False
    if not value:
        return True
    parts = value.split(".")
    if len(parts) >= 2 and all(p.isidentifier() for p in parts):
        return True  # (a member of a FlashInfer enum: `SfLayout.layout_linear`)
    try:
        ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return False
    return True


def notes_in_range(from_version: str, to_version: str) -> tuple[Note, ...]:
    """The notes of the releases after ``from_version`` up to ``to_version``; a change a later
    release of the range reverts is no change of the range (both notes are left out)."""
    lo, hi = parse_version(from_version), parse_version(to_version)
    found = list(_load(lo, hi))
    undone = {
        (n.api, n.reverts) for n in found if isinstance(n, Behaviour) and n.reverts is not None
    }
    return tuple(
        n
        for n in found
        if (n.api, n.release) not in undone
        and not (isinstance(n, Behaviour) and (n.api, n.reverts) in undone)
    )


def readable_notes(from_version: object, to_version: object) -> str | None:
    """Why the notes of the range cannot be used (one line), or None: what a rule that reads
    them says before a run starts."""
    try:
        notes_in_range(str(from_version), str(to_version))
    except NotesError as exc:
        return str(exc)
    return None


def forget() -> None:
    _load.cache_clear()
