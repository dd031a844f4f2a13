"""Regular expressions compiled the first time they are used, not when their module is imported.

Most runs use few of the tool's patterns (a tree with no dependency file never needs the pin
patterns), and compiling all of them took about a tenth of the start-up. A module-level pattern
is written ``_NAME = patterns.compile(r"...")``, exactly as with `re.compile`.
"""

from __future__ import annotations

import re
from typing import Any, AnyStr, cast

__all__ = ["LINE_BREAK", "compile", "split_lines"]


class _Deferred:
    """Stands for a `re.Pattern` until first used. Each attribute read (``match``, ``sub``...)
    is then kept on the instance, so a pattern in a loop costs what the compiled one does."""

    def __init__(self, pattern: str | bytes, flags: int) -> None:
        self._source = (pattern, flags)
        self._compiled: re.Pattern[Any] | None = None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_source", "_compiled"):
            raise AttributeError(name)
        value = getattr(self.compiled(), name)
        setattr(self, name, value)
        return value

    def compiled(self) -> re.Pattern[Any]:
        if self._compiled is None:
            self._compiled = re.compile(*self._source)
        return self._compiled

    def __repr__(self) -> str:
        return f"patterns.compile({self._source[0]!r}, {self._source[1]})"


def compile(pattern: AnyStr, flags: int | re.RegexFlag = 0) -> re.Pattern[AnyStr]:
    """A pattern that `re.compile` compiles on its first use (an invalid pattern raises there:
    the tests use every pattern, and `tests/test_patterns.py` compiles every module's)."""
    return cast("re.Pattern[AnyStr]", _Deferred(pattern, int(flags)))


# a line break as Python's parser counts lines: CR, LF and CRLF only (`str.splitlines` also
# splits at form feeds and Unicode separators, which `ast` line numbers do not count)
LINE_BREAK = compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` without their endings, line N at index N - 1 as `ast` numbers
    them (a text that ends with a line break ends with an empty line)."""
    return LINE_BREAK.split(text)
