"""The cheap text test that keeps most files from ever being parsed.

A rule's triggers are names (``"fp4_quantize"``) or a context plus names
(``("flashinfer", "jit", "load")``: the file must contain "flashinfer" somewhere and the
identifiers `jit` and `load`). Names are matched as whole identifiers; a context as plain bytes.
With many names, the file's identifiers are collected once (one regex pass).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from migrate_fi.base import patterns

__all__ = [
    "TO_SPACES",
    "LazyPrefilter",
    "Prefilter",
    "Triggers",
    "identifiers",
    "names_one_of",
    "reaches_flashinfer",
]

# Every byte that cannot be part of an ASCII identifier becomes a space: `split()` then yields the
# identifiers (twice as fast as a regex over the same bytes).
_IDENTIFIER_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
TO_SPACES = bytes(c if c in _IDENTIFIER_BYTES else 32 for c in range(256))
_T = TypeVar("_T")
Triggers = tuple[str | tuple[str, ...], ...]  # a rule's triggers for a run
_FEW = 8  # up to this many names, plain substring tests beat collecting identifiers
_last: tuple[bytes, set[bytes]] | None = None  # every rule's prefilter tests the same file
_last_found: tuple[bytes, dict[bytes, bool]] | None = None  # (the same: what it contains)


# blanks inside a statement, a backslash continuation included
_BLANK = rb"(?:[ \t\f]|\\\r?\n)"
# a statement that may import the flashinfer package or one of its modules: `from flashinfer...`,
# `import flashinfer...`, also after other modules (`import os, flashinfer.comm as c`); a
# regex over bytes, so also in strings and comments (a superset is what a prefilter needs)
_IMPORTS_FLASHINFER = patterns.compile(
    rb"\b(?:from" + _BLANK + rb"+|import" + _BLANK + rb"+(?:[\w.]+(?:" + _BLANK + rb"+as"
    + _BLANK + rb"+\w+)?" + _BLANK + rb"*," + _BLANK + rb"*)*)flashinfer\b"
)  # fmt: skip


def reaches_flashinfer(data: bytes) -> bool:
    """Whether a file outside FlashInfer's tree may bind a name to FlashInfer's own without the
    project's re-exports: an import statement of it, or a module imported by call (the resolver
    follows `importlib.import_module` and `pytest.importorskip`)."""
    if b"import_module" in data or b"importorskip" in data:
        return True
    # (the statement is searched for only on the lines that say "flashinfer": a match ends with
    # the word and lies within one logical line, the physical lines ended by a backslash
    # joined; the whole file searched took five times longer on the files that name FlashInfer)
    at = data.find(b"flashinfer")
    while at >= 0:
        start = data.rfind(b"\n", 0, at) + 1
        while start and data.endswith((b"\\", b"\\\r"), 0, start - 1):  # (continued line)
            start = data.rfind(b"\n", 0, start - 1) + 1
        if _IMPORTS_FLASHINFER.search(data, start, at + len(b"flashinfer") + 1) is not None:
            return True  # (one byte past the word: `\b` sees what follows it)
        at = data.find(b"flashinfer", at + len(b"flashinfer"))
    return False


def _is_identifier(name: bytes) -> bool:
    return bool(name) and name.translate(TO_SPACES) == name


def identifiers(data: bytes) -> set[bytes]:
    """The ASCII identifiers of ``data`` (the last file's are kept: every test asks them)."""
    return _identifiers(data)


def names_one_of(data: bytes, names: Iterable[bytes]) -> bool:
    """Whether one of ``names`` (ASCII identifiers) is an identifier of ``data``: an
    occurrence with no identifier byte on either side (`identifiers` without collecting them
    all: a few names in a large file)."""
    for name in names:
        at = data.find(name)
        while at >= 0:
            end = at + len(name)
            if (at == 0 or data[at - 1] not in _IDENTIFIER_BYTES) and (
                end == len(data) or data[end] not in _IDENTIFIER_BYTES
            ):
                return True
            at = data.find(name, at + 1)
    return False


def _identifiers(data: bytes) -> set[bytes]:
    global _last
    if _last is None or _last[0] is not data:
        _last = (data, set(data.translate(TO_SPACES).split()))
    return _last[1]


def _contains(data: bytes, word: bytes) -> bool:
    """``word in data``, kept for the last file: most rules' triggers have the context
    "flashinfer", and each would search the whole file for it."""
    global _last_found
    if _last_found is None or _last_found[0] is not data:
        _last_found = (data, {})
    found = _last_found[1].get(word)
    if found is None:
        found = _last_found[1][word] = word in data
    return found


class Prefilter:
    def __init__(self, triggers: Iterable[str | tuple[str, ...]]) -> None:
        self.plain: set[bytes] = set()
        # names that are not identifiers (`nvidia-cutlass-dsl`): always plain substring tests
        self.literal: set[bytes] = set()
        # context -> name -> the other identifiers that must be there too
        self.by_context: dict[bytes, dict[bytes, list[frozenset[bytes]]]] = {}
        # (thousands of triggers share a few hundred words and sets of them: each is kept once)
        shared: dict[object, object] = {}

        def once(value: _T) -> _T:
            return shared.setdefault(value, value)  # type: ignore[return-value]

        # (each context's names, each last part encoded and tested, each middle's set, once:
        # FI002 has 7,500 triggers, made of 2,000 last parts and 1,000 middles)
        names_of: dict[str, dict[bytes, list[frozenset[bytes]]]] = {}
        lasts: dict[str, bytes] = {}
        sets: dict[tuple[str, ...], frozenset[bytes]] = {}
        for t in triggers:
            if isinstance(t, str) or len(t) == 1:
                name = (t if isinstance(t, str) else t[0]).encode()
                (self.plain if _is_identifier(name) else self.literal).add(name)
                continue
            names = names_of.get(t[0])
            if names is None:
                names = names_of[t[0]] = self.by_context.setdefault(t[0].encode(), {})
            last = lasts.get(t[-1])
            if last is None:
                last = lasts[t[-1]] = t[-1].encode()
                if not _is_identifier(last):
                    raise ValueError(f"a trigger's last part must be an identifier: {t!r}")
            middle = t[1:-1]
            others = sets.get(middle)
            if others is None:
                others = sets[middle] = once(frozenset(p.encode() for p in middle))
            found = names.get(last)
            if found is None:
                names[last] = [others]
            else:
                found.append(others)
        # (each context's names as a set: a file's identifiers are met with them by iterating
        # the smaller of the two, not the thousands of FI002's names for every file)
        self._names = {context: frozenset(names) for context, names in self.by_context.items()}

    def names(self) -> set[bytes]:
        """The last identifier of every trigger (what an alias of a migrated API is named)."""
        return self.plain.union(self.literal, *(set(d) for d in self.by_context.values()))

    def matches(self, data: bytes) -> bool:
        words: set[bytes] | None = None
        if self.literal and any(_contains(data, name) for name in self.literal):
            return True
        if self.plain:
            if len(self.plain) <= _FEW:
                if any(_contains(data, name) for name in self.plain):
                    return True
            else:
                words = _identifiers(data)
                if not words.isdisjoint(self.plain):
                    return True
        for context, names in self.by_context.items():
            if not _contains(data, context):
                continue
            if len(names) <= _FEW and not any(name in data for name in names):
                continue  # a cheap necessary condition before collecting identifiers
            if words is None:
                words = _identifiers(data)
            for name in words.intersection(self._names[context]):
                if any(others <= words for others in names[name]):
                    return True
        return False


class LazyPrefilter(Prefilter):
    """A prefilter whose triggers are worked out (``triggers``) the first time a file contains
    ``contains``, a string that every file they match contains (empty: the first file tested),
    and built (``make``) then: a tree where no file does never pays for them (a data-driven
    rule's come from the release data)."""

    def __init__(
        self,
        contains: str,
        triggers: Callable[[], Triggers],
        make: Callable[[Triggers], Prefilter] = Prefilter,
    ) -> None:
        super().__init__(())
        self._contains = contains.encode()
        self._worked_out: Callable[[], Triggers] | None = triggers
        self._triggers: Triggers | None = None
        self._make = make
        self._built: Prefilter | None = None

    def _run_triggers(self) -> Triggers:
        if self._triggers is None:
            assert self._worked_out is not None
            self._triggers, self._worked_out = self._worked_out(), None
        return self._triggers

    def _prefilter(self) -> Prefilter:
        if self._built is None:
            self._built = self._make(self._run_triggers())
        return self._built

    def build(self) -> None:
        """Work the triggers out and build the prefilter now."""
        self._prefilter()

    def names(self) -> set[bytes]:
        if self._built is not None:
            return self._built.names()
        # (the re-export rounds ask every rule's names: a warm run need not build each filter)
        return {(t if isinstance(t, str) else t[-1]).encode() for t in self._run_triggers()}

    def matches(self, data: bytes) -> bool:
        if self._contains and not _contains(data, self._contains):
            return False
        return self._prefilter().matches(data)
