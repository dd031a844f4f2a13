"""Whose requirement a FlashInfer pin in a TOML file is: the project's own, or one it only
overrides, mirrors, or takes from another package.

A project's own requirement of FlashInfer moves with the migration. These do not:
- **resolver overrides and constraints** (``[tool.uv] override-dependencies`` and
  ``constraint-dependencies``, ``[tool.pdm.resolution] overrides``): bounds on what every
  package of the environment may pull in, often written to admit several releases at once;
- **metadata mirrors** (``[[tool.uv.dependency-metadata]]``): another package's own requirements,
  copied so that the resolver need not build it; they say what that release of that package
  requires, which the migration does not change;
- **a serving engine's extra or group**: an extra (``[project.optional-dependencies]``) or a
  dependency group (``[dependency-groups]``) that pins a serving engine exactly
  (``sglang==0.5.11``) next to FlashInfer takes the FlashInfer that engine release requires; the
  two move together, with the engine.

Read from the text, line by line: the table each line is in and the key of the array it
belongs to (quoted strings, extras in brackets included, never confuse the count).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import NamedTuple

from migrate_fi.base import patterns
from migrate_fi.project.pins import canonical_name

__all__ = [
    "ENGINES",
    "Owner",
    "Place",
    "engine_lines",
    "engines_beside",
    "engines_by_url",
    "engines_in",
    "json_array_text",
    "owner_of",
    "pin_marker",
    "requirement_marker",
    "toml_places",
]

# Serving engines whose releases require a FlashInfer release of their own (their metadata pins
# it): a pin of FlashInfer next to an exact pin of one of them is that release's requirement.
ENGINES = frozenset(
    {"sglang", "vllm", "tensorrt-llm", "lmdeploy", "mlc-llm", "aphrodite-engine", "xinference"}
)

_OVERRIDES = {
    ("tool.uv", "override-dependencies"): "[tool.uv] override-dependencies",
    ("tool.uv", "constraint-dependencies"): "[tool.uv] constraint-dependencies",
    ("tool.pdm.resolution", "overrides"): "[tool.pdm.resolution] overrides",
}
_HEADER = patterns.compile(r"^\s*\[(\[?)\s*([^\[\]]+?)\s*\]\]?\s*(?:#.*)?$")
_KEY = patterns.compile(r"""^\s*("[^"]*"|'[^']*'|[A-Za-z0-9_.-]+)\s*=\s*(.*)$""")
_NAME = patterns.compile(r"""^\s*name\s*=\s*["']([^"']+)["']""")
_EXACT = patterns.compile(
    r"""["']\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*==\s*([^"',;\s]+)"""
)


class Place(NamedTuple):
    """Where a line of a TOML file is: its table (dotted, ``project.optional-dependencies``),
    and the key of the array or value it belongs to (None between keys)."""

    table: str
    key: str | None
    array_of_tables: bool = False  # (the table is one entry of ``[[...]]``)


class Owner(NamedTuple):
    """Why a pin is not the project's own requirement of FlashInfer."""

    kind: str  # "override", "mirror" or "engine"
    where: str  # the table or extra, as the user wrote it
    detail: str = ""  # the mirrored package, or the engine pin


def _unquote(key: str) -> str:
    return key[1:-1] if key[:1] in "\"'" and key[-1:] == key[:1] else key


def _depth(text: str) -> int:
    """``[`` minus ``]`` in ``text`` outside quoted strings and comments."""
    depth, quote, i = 0, "", 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 1
            elif c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c == "#":
            break
        elif c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
        i += 1
    return depth


def toml_places(lines: list[str]) -> list[Place]:
    """The `Place` of each line (0-based, as ``lines``)."""
    out: list[Place] = []
    table, key, many, depth = "", None, False, 0
    for line in lines:
        if depth <= 0:
            header = _HEADER.match(line)
            if header is not None:
                many = bool(header.group(1))
                table = ".".join(_unquote(p.strip()) for p in header.group(2).split("."))
                key, depth = None, 0
                out.append(Place(table, None, many))
                continue
            found = _KEY.match(line)
            if found is not None:
                key = _unquote(found.group(1))
                depth = _depth(found.group(2))
                out.append(Place(table, key, many))
                if depth <= 0:
                    key = None if depth == 0 else key
                continue
            out.append(Place(table, None, many))
            continue
        out.append(Place(table, key, many))
        depth += _depth(line)
        if depth <= 0:
            key = None
    return out


def _array_text(lines: list[str], places: list[Place], index: int) -> str:
    """The text of the array (or value) line ``index`` belongs to."""
    place = places[index]
    start = index
    while start > 0 and places[start - 1] == place:
        start -= 1
    end = index
    while end + 1 < len(lines) and places[end + 1] == place:
        end += 1
    return "\n".join(lines[start : end + 1])


def json_array_text(text: str, line: int, col: int = 0) -> str | None:
    """The text of the innermost JSON array that holds column ``col`` (0-based) of ``line``
    (1-based) of ``text`` (a list of requirements in a JSON file); None outside any array."""
    at = sum(len(x) + 1 for x in text.split("\n")[: line - 1]) + col
    opened: list[int] = []
    quoted = escaped = False
    for i, ch in enumerate(text):
        if quoted:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                quoted = False
        elif ch == '"':
            quoted = True
        elif ch == "[":
            opened.append(i)
        elif ch == "]" and opened:
            start = opened.pop()
            if start < at <= i:
                return text[start : i + 1]
    return None


def engine_lines(
    lines: list[str], places: list[Place] | None, line: int, json: bool = False, col: int = 0
) -> str:
    """The text that is the same dependency list as the pin at ``line`` (1-based) and ``col``:
    its array in a TOML file (``places``) or a JSON file (``json``; nothing outside an array),
    the file's lines outside comments in a requirements file, each quoted as an array's strings
    are."""
    if json:
        return json_array_text("\n".join(lines), line, col) or ""
    if places is not None:
        return _array_text(lines, places, line - 1)
    return "\n".join(_quoted(raw) for raw in lines)


def _quoted(raw: str) -> str:
    """A requirements file's line as an array's string: its comment left out, written in
    double quotes, those of its marker escaped (``sys_platform == \\"linux\\"``)."""
    text = raw.split("#", 1)[0].strip().replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


def pin_marker(line: str, col: int, quoted: bool) -> str:
    """The environment marker of the pin whose version starts at column ``col`` of ``line``:
    in the quoted string that holds it (``quoted``: a TOML or JSON array), else of the whole
    line of a requirements file (its comment left out)."""
    if not quoted:
        return requirement_marker(_quoted(line))
    start = max(line.rfind('"', 0, col), line.rfind("'", 0, col))
    return requirement_marker(line[start:]) if start >= 0 else ""


def engines_beside(
    lines: list[str], places: list[Place] | None, line: int, family: frozenset[str]
) -> list[tuple[str, str, str]]:
    """The serving engines pinned exactly (``sglang[srt]==0.5.11``) next to the pin on ``line``
    (1-based), as ``(canonical name, extras as written, version)``: in the same array of a TOML
    file (``places``), anywhere outside comments in a requirements file (``places`` None)."""
    return engines_in(engine_lines(lines, places, line), family)


def engines_in(text: str, family: frozenset[str], marker: str = "") -> list[tuple[str, str, str]]:
    """The serving engines a dependency list's text (`engine_lines`) pins exactly, in the
    environment of ``marker`` (the pin's: one whose own marker differs is installed apart)."""
    return [
        (canonical, m.group(2) or "", m.group(3))
        for canonical, m in _engines(_EXACT, text, family, marker)
    ]


def _engines(
    pattern: re.Pattern[str], text: str, family: frozenset[str], marker: str
) -> Iterator[tuple[str, re.Match[str]]]:
    """Each match of ``pattern`` in ``text`` whose first group names a serving engine (not
    one of ``family``) installed with a pin of environment marker ``marker``, with the
    engine's canonical name."""
    for m in pattern.finditer(text):
        canonical = canonical_name(m.group(1))
        if canonical in ENGINES and canonical not in family and _together(text, m, marker):
            yield canonical, m


def requirement_marker(text: str) -> str:
    """The environment marker of the requirement string that starts ``text`` (what follows
    its ``;``, up to the string's end), written plainly: ``#engine# == "sglang"``."""
    text = text.lstrip()
    quote = text[:1]
    body = text[1:] if quote in ("'", '"') else text
    end = _string_end(body, quote) if quote in ("'", '"') else len(body)
    head, _, marker = body[:end].partition(";")
    return " ".join(marker.replace('\\"', '"').split()) if head else ""


def _string_end(text: str, quote: str) -> int:
    """Where the string that ``text`` continues ends (its closing ``quote``, not escaped)."""
    i = 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] in (quote, "\n"):
            return i
        i += 1
    return len(text)


def _together(text: str, m: re.Match[str], marker: str) -> bool:
    """Whether the requirement ``m`` found in ``text`` is installed with a pin whose marker is
    ``marker``: either has none, or they are the same."""
    theirs = requirement_marker(text[m.start() :])
    return not marker or not theirs or theirs == marker


# an engine installed from a URL: ``"sglang @ git+https://github.com/...@20621aa1"``
_DIRECT = patterns.compile(
    r"""["']\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*@\s*([A-Za-z][\w+.-]*://[^"'\s;]+)"""
)


def engines_by_url(text: str, family: frozenset[str], marker: str = "") -> list[tuple[str, str]]:
    """The serving engines a dependency list's text installs from a URL (a git commit, an
    archive), as ``(canonical name, URL)``, in the environment of ``marker`` (`engines_in`):
    which FlashInfer they require cannot be read."""
    return [(canonical, m.group(2)) for canonical, m in _engines(_DIRECT, text, family, marker)]


def owner_of(
    lines: list[str], places: list[Place], line: int, family: frozenset[str]
) -> Owner | None:
    """Why the pin on ``line`` (1-based) is not the project's own requirement; None when it is.
    ``family``: the canonical names of FlashInfer's own packages."""
    place = places[line - 1]
    said = _OVERRIDES.get((place.table, place.key or ""))
    if said is None and place.table == "tool.pdm.resolution.overrides":
        said = "[tool.pdm.resolution.overrides]"
    if said is not None:
        return Owner("override", said)
    if place.table == "tool.uv.dependency-metadata" and place.array_of_tables:
        # (the entry's lines: from its `[[...]]` header to the next header; its name anywhere)
        start = next((i for i in range(line - 1, -1, -1) if _HEADER.match(lines[i])), 0)
        end = next((i for i in range(line, len(lines)) if _HEADER.match(lines[i])), len(lines))
        named = (_NAME.match(lines[i]) for i in range(start, end))
        name = next((m.group(1) for m in named if m is not None), "")
        return Owner("mirror", "[[tool.uv.dependency-metadata]]", name)
    grouped = place.key is not None and place.table in (
        "project.optional-dependencies",
        "dependency-groups",
    )
    if grouped:
        for canonical, extras, version in engines_beside(lines, places, line, family):
            where = f"the {place.key} extra" if "optional" in place.table else place.key
            return Owner("engine", str(where), f"{canonical}{extras}=={version}")
    return None
