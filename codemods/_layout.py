"""How generated code should look in a given project: its configured line length.

Read from the nearest configuration above the file that sets one: `ruff.toml`/`.ruff.toml`
(`line-length`), `pyproject.toml` (`[tool.ruff] line-length`, `[tool.black] line-length`),
`setup.cfg`/`tox.ini`/`.flake8` (`[flake8] max-line-length`), up to the project's root (the
first folder with a `pyproject.toml`, `.git` or `.hg`); black's default, 88, otherwise. A
configuration that cannot be read counts as not setting it.
"""

from __future__ import annotations

import ast
import os
from functools import lru_cache
from typing import Any

from migrate_fi.base import depends

__all__ = ["DEFAULT_LINE_LENGTH", "line_length", "line_length_text", "overflows", "quote_like"]

DEFAULT_LINE_LENGTH = 88
# a project's root, as black finds it: configuration above it is another project's
_ROOTS = ("pyproject.toml", ".git", ".hg")


def _toml(path: str) -> dict[str, Any] | None:
    from migrate_fi.base.toml import tomllib

    toml = tomllib()
    try:
        with open(path, "rb") as handle:
            return toml.load(handle)  # type: ignore[no-any-return]
    except (OSError, toml.TOMLDecodeError, UnicodeDecodeError):
        return None


def _positive(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _in_folder(folder: str) -> int | None:
    for name in ("ruff.toml", ".ruff.toml"):
        data = _toml(os.path.join(folder, name))
        if data is not None and _positive(data.get("line-length")):
            return _positive(data.get("line-length"))
    data = _toml(os.path.join(folder, "pyproject.toml"))
    if data is not None:
        tool = data.get("tool", {})
        if isinstance(tool, dict):
            for section in ("ruff", "black"):
                table = tool.get(section, {})
                if isinstance(table, dict):
                    found = _positive(table.get("line-length", table.get("line_length")))
                    if found:
                        return found
    for name in ("setup.cfg", "tox.ini", ".flake8"):
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            continue
        import configparser

        parser = configparser.ConfigParser()
        try:
            parser.read(path, encoding="utf-8")
            text = parser.get("flake8", "max-line-length", fallback="")
        except (configparser.Error, UnicodeDecodeError):
            continue
        if text.strip().isdigit() and int(text) > 0:
            return int(text)
    return None


@lru_cache(maxsize=256)
def _for_folder(folder: str) -> int:
    found = _in_folder(folder)
    if found is not None:
        return found
    parent = os.path.dirname(folder)
    if parent == folder or any(os.path.exists(os.path.join(folder, m)) for m in _ROOTS):
        return DEFAULT_LINE_LENGTH  # the project's root sets none: the formatters' default
    return _for_folder(parent)


@depends.on_forget_stats
def _forget_folders() -> None:  # (a run in the same process reads the configurations again)
    _for_folder.cache_clear()


def line_length(path: str) -> int:
    """The line length configured for the project ``path`` belongs to."""
    found = _for_folder(os.path.dirname(os.path.abspath(path)))
    depends.note("line-length", path, str(found))  # a cached result holds if it is the same
    return found


def line_length_text(path: str) -> str:
    """`line_length`, as `migrate_fi.base.depends` recomputes it."""
    return str(_for_folder(os.path.dirname(os.path.abspath(path))))


def _quote(text: str) -> str:
    """The quote the file's strings mostly use (docstrings' triple quotes not counted); double
    quotes, the formatters' choice, when it is even."""
    double = text.count('"') - 3 * text.count('"""')
    single = text.count("'") - 3 * text.count("'''")
    return "'" if single > double else '"'


def quote_like(value: object, text: str) -> str:
    """A literal ``value`` as source, its strings quoted the way the file ``text`` quotes."""
    if isinstance(value, str):
        quote, written = _quote(text), repr(value)
        if written[0] == quote:
            return written
        other, body = written[0], written[1:-1]  # repr escaped its own quote, not ours
        return quote + body.replace("\\" + other, other).replace(quote, "\\" + quote) + quote
    if isinstance(value, tuple):
        items = ", ".join(quote_like(v, text) for v in value)
        return f"({items},)" if len(value) == 1 else f"({items})"
    return repr(value)


def overflows(lines: list[str], call: ast.Call, addition: str, path: str) -> bool:
    """A call written on one line that ``addition`` (inserted before its closing bracket) would
    push past the project's line length."""
    if call.end_lineno != call.lineno or not 0 < call.lineno <= len(lines):
        return False
    return len(lines[call.lineno - 1].rstrip("\r\n")) + len(addition) > line_length(path)
