"""Jupyter notebooks (``.ipynb``): their code cells checked and fixed as one Python module.

As Ruff and nbQA do it: the code cells, in order, make one module (a name imported in one cell
is known in the next), each cell after a marker line that keeps its boundary. A cell that
starts with a cell magic (``%%bash``) is not Python and is left out; a line magic or shell line
(``%time``, ``!pip install``) stands in the module as ``pass`` with a unique comment, and is put
back as it was. Sites are reported by cell (``notebook.ipynb:cell 3:2:5``: line 2 of the third
cell). Fixes are written back into the cells they edit; the notebook's JSON is written as it
was written before (the layout found by reading it back, `_LAYOUTS`), so that every byte
outside the edited cells stays; a notebook whose layout is not one of those is checked but
not rewritten. Outputs are never touched.
"""

from __future__ import annotations

import ast
import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from migrate_fi.editing.sources import SourceError

__all__ = ["Notebook", "NotebookError"]

_MARKER = "# migrate-fi cell {}"
_MARKER_LINE = re.compile(r"^# migrate-fi cell (\d+)$", re.MULTILINE)
# a line magic, a shell line or a help request (``%time f()``, ``!pip install x``, ``f?``)
_MAGIC = re.compile(r"^(\s*)([%!].*|\??[\w.]+\?\??)$")
_PLACEHOLDER = re.compile(r"^(\s*)pass  # migrate-fi magic (\d+)$")
# a timing magic whose argument is a Python statement: ``%time y = f(x)``, ``%timeit -n 3 f(x)``
_TIMED = re.compile(r"^(\s*)(%(?:time|timeit|prun)\s+(?:-[nrp]\s*\d+\s+|-[oqc]\s+)*)(\S.*)$")
_TIMED_MARK = re.compile(r"^(\s*)(.*?)  # migrate-fi timed (\d+)$")
# cell magics whose body is Python
_PYTHON_CELL_MAGICS = ("%%time", "%%timeit", "%%prun", "%%capture")
_PLACE = "migrate-fi place "  # (a cell's lines, marked to find where the JSON holds them)
_PLACE_RE = re.compile(r"migrate-fi place (\d+):(\d+)(?::(\d+))?")


class NotebookError(SourceError):
    """The file is not a notebook migrate-fi can read or write: one line, why."""


def _layouts() -> list[Callable[[Any], str]]:
    """The ways notebooks are written: nbformat (indent 1, keys sorted, Unicode as is), then
    the layouts other tools write."""
    return [
        functools.partial(json.dumps, indent=indent, sort_keys=sort_keys, ensure_ascii=ascii_)
        for indent in (1, 2, 4, None)
        for sort_keys in (True, False)
        for ascii_ in (False, True)
    ]


_LAYOUTS = _layouts()


@dataclass
class _Cell:
    index: int  # in the notebook's list of cells
    text: str  # its source, joined
    as_list: bool  # whether the notebook holds its source as a list of lines
    start: int = 0  # its first line in the module (1-based)
    lines: int = 0  # how many lines it has in the module
    python: str | None = None  # its text with magics as placeholders (None: not Python)


def _python(text: str, magics: list[str]) -> str | None:
    """``text`` as Python: as it is when it parses, else with its magic lines as placeholders
    (whose lines are added to ``magics``); None when neither parses."""
    if _parses(text):
        return text
    lines = text.split("\n")
    found: list[str] = []
    for k, each in enumerate(lines):
        timed = _TIMED.match(each)
        if timed is not None and _parses(timed.group(3)):
            # (the statement stays, to be read and fixed; the magic goes back in front of it)
            lines[k] = (
                f"{timed.group(1)}{timed.group(3)}  # migrate-fi timed {len(magics) + len(found)}"
            )
            found.append(timed.group(2))
            continue
        m = _MAGIC.match(each)
        if m is not None:
            lines[k] = f"{m.group(1)}pass  # migrate-fi magic {len(magics) + len(found)}"
            found.append(each)
    out = "\n".join(lines)
    if not found or not _parses(out):
        return None
    magics += found
    return out


def _why(text: str) -> str:
    try:
        ast.parse(text)
    except SyntaxError as exc:
        return f"line {exc.lineno}: {exc.msg}"
    except ValueError as exc:
        return str(exc)
    return "its magics cannot be told from its code"


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


@dataclass
class Notebook:
    """A notebook's code cells as one module, and the way back."""

    doc: dict[str, Any]
    cells: list[_Cell]
    module: str
    magics: list[str] = field(default_factory=list)  # the lines the placeholders stand for
    layout: Callable[[Any], str] | None = None  # writes the JSON as it was written
    newline_at_end: bool = True

    @classmethod
    def parse(cls, data: bytes) -> Notebook:
        try:
            text = data.decode("utf-8")
            doc = json.loads(text)
        except (UnicodeDecodeError, ValueError) as exc:
            raise NotebookError(f"not a readable notebook (its JSON: {exc})") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("cells"), list):
            raise NotebookError("not a notebook (no list of cells)")
        language = (doc.get("metadata") or {}).get("kernelspec", {}).get("language", "python")
        if str(language).lower() != "python":
            raise NotebookError(f"a notebook in {language}, not Python: left alone")
        cells: list[_Cell] = []
        for i, cell in enumerate(doc["cells"]):
            if not isinstance(cell, dict) or cell.get("cell_type") != "code":
                continue
            source = cell.get("source", "")
            if isinstance(source, list) and all(isinstance(s, str) for s in source):
                joined, as_list = "".join(source), True
            elif isinstance(source, str):
                joined, as_list = source, False
            else:
                raise NotebookError(f"cell {i + 1}: its source is neither text nor lines")
            if joined.lstrip().startswith("%%") and not joined.lstrip().startswith(
                _PYTHON_CELL_MAGICS
            ):
                continue  # a cell magic: another language
            cells.append(_Cell(i, joined, as_list))
        magics: list[str] = []
        for cell in cells:
            cell.python = _python(cell.text, magics)
            if cell.python is None:
                raise NotebookError(
                    f"cell {cell.index + 1} is not valid Python ({_why(cell.text)})"
                )
        out = cls(doc, cells, "", magics)
        out.module = out._module()
        body = text[:-1] if text.endswith("\n") else text
        out.newline_at_end = text.endswith("\n")
        out.layout = next((dump for dump in _LAYOUTS if dump(doc) == body), None)
        return out

    def _module(self) -> str:
        parts: list[str] = []
        line = 1
        for n, cell in enumerate(self.cells):
            body = cell.python or ""
            body += "" if body.endswith("\n") or not body else "\n"
            parts.append(_MARKER.format(n) + "\n" + body)
            cell.start = line + 1
            cell.lines = body.count("\n")
            line += 1 + cell.lines
        return "".join(parts)

    def place(self, line: int) -> tuple[int, int]:
        """(the cell's number in the notebook, 1-based; the line in that cell) of a line of
        the module."""
        for cell in reversed(self.cells):
            if line >= cell.start:
                return cell.index + 1, line - cell.start + 1
        return (self.cells[0].index + 1 if self.cells else 1), 1

    def shift(self, cell: int, line: int) -> int:
        """How many characters a timing magic adds in front of line ``line`` of cell ``cell``
        (both 1-based): the column in the cell is the column in the module plus that."""
        for each in self.cells:
            if each.index + 1 == cell and each.python is not None:
                lines = each.python.split("\n")
                if 1 <= line <= len(lines):
                    t = _TIMED_MARK.match(lines[line - 1])
                    if t is not None and int(t.group(3)) < len(self.magics):
                        return len(self.magics[int(t.group(3))])
        return 0

    def file_places(self) -> dict[tuple[int, int], tuple[int, int]]:
        """For each (cell number, line of the cell), both 1-based, the line of the notebook's
        file that holds it and the column its text starts at (0-based): where an editor, a
        code-scanning upload or a CI annotation points. Empty when the layout is unknown."""
        if self.layout is None:
            return {}
        doc = json.loads(json.dumps(self.doc))
        for cell in self.cells:
            source = doc["cells"][cell.index].get("source")
            count = max(1, cell.text.count("\n") + (0 if cell.text.endswith("\n") else 1))
            if cell.as_list and isinstance(source, list):
                doc["cells"][cell.index]["source"] = [
                    f"{_PLACE}{cell.index}:{k}" for k in range(len(source))
                ]
            else:
                doc["cells"][cell.index]["source"] = f"{_PLACE}{cell.index}:0:{count}"
        out: dict[tuple[int, int], tuple[int, int]] = {}
        for number, text in enumerate(self.layout(doc).split("\n"), 1):
            at = text.find(_PLACE)
            if at < 0:
                continue
            found = _PLACE_RE.search(text, at)
            if found is None:
                continue
            index, k = int(found.group(1)), int(found.group(2))
            lines = int(found.group(3)) if found.group(3) else 1
            for j in range(lines):
                out[(index + 1, k + j + 1)] = (number, at)
        return out

    def write(self, module: str) -> bytes:
        """The notebook's bytes with the cells as ``module`` (the module after the fixes) holds
        them; `NotebookError` when they cannot be written back exactly."""
        if self.layout is None:
            raise NotebookError(
                "its JSON is laid out in a way migrate-fi cannot write back byte for byte;"
                " not rewritten (save it from Jupyter, or fix it by hand)"
            )
        pieces = _MARKER_LINE.split(module)
        head, rest = pieces[0], pieces[1:]
        numbers = [int(n) for n in rest[0::2]]
        if numbers != list(range(len(self.cells))):
            raise NotebookError("a fix moved the boundaries of its cells; not rewritten")
        bodies = [b[1:] if b.startswith("\n") else b for b in rest[1::2]]
        if head.strip():
            bodies[0] = head + bodies[0]  # (imports a fix added above the first cell)
        doc = json.loads(json.dumps(self.doc))  # (a copy)
        for cell, body in zip(self.cells, bodies, strict=True):
            body = self._unmagic(body)
            if not cell.text.endswith("\n") and body.endswith("\n"):
                body = body[:-1]
            if body == cell.text:
                continue
            doc["cells"][cell.index]["source"] = (
                body.splitlines(keepends=True) if cell.as_list else body
            )
        return (self.layout(doc) + ("\n" if self.newline_at_end else "")).encode("utf-8")

    def _unmagic(self, body: str) -> str:
        lines = body.split("\n")
        for k, each in enumerate(lines):
            m = _PLACEHOLDER.match(each)
            if m is not None and int(m.group(2)) < len(self.magics):
                lines[k] = self.magics[int(m.group(2))]
                continue
            t = _TIMED_MARK.match(each)
            if t is not None and int(t.group(3)) < len(self.magics):
                statement = t.group(2)
                if not _parses(statement):
                    raise NotebookError(
                        "a fix split a timed line (%time, %timeit) over several lines; not"
                        " rewritten"
                    )
                lines[k] = f"{t.group(1)}{self.magics[int(t.group(3))]}{statement}"
        return "\n".join(lines)
