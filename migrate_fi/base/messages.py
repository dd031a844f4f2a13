"""A site's message in English and in Chinese, written in one place so neither drifts.

A rule says a message once, with both templates side by side and one set of fields::

    say("{api}: pass {name}={value} to keep what it did",
        "{api}：传入 {name}={value}，保持原来的行为",
        api=api, name=name, value=value)

Fields are filled in as they are in both languages (code, paths, versions and numbers are not
translated); a field that is itself a `Said` is filled in the template's language, so a message
can be built from parts. `tests/test_messages.py` checks that the two templates of every `say`
name the same fields and that the Chinese one has no English prose.
"""

from __future__ import annotations

import string
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Said", "fields_of", "join", "say"]

_FORMATTER = string.Formatter()


@dataclass(frozen=True, order=True)
class Said:
    """A message in both languages."""

    en: str
    zh: str

    def __add__(self, other: Said | str) -> Said:
        if isinstance(other, str):
            return Said(self.en + other, self.zh + other)
        return Said(self.en + other.en, self.zh + other.zh)

    def __radd__(self, other: str) -> Said:
        return Said(other + self.en, other + self.zh)

    def __bool__(self) -> bool:
        return bool(self.en)

    def text(self, lang: str) -> str:
        return self.zh if lang == "zh" and self.zh else self.en


def _filled(value: object, lang: str) -> object:
    # (a field's own language, empty included: an English plural `s` is nothing in Chinese)
    if isinstance(value, Said):
        return value.zh if lang == "zh" else value.en
    return value


def say(en: str, zh: str, /, **fields: object) -> Said:
    """``en`` and ``zh`` (str.format templates naming the same fields) filled with ``fields``."""
    return Said(
        en.format(**{k: _filled(v, "en") for k, v in fields.items()}),
        zh.format(**{k: _filled(v, "zh") for k, v in fields.items()}),
    )


def join(parts: Iterable[Said], en: str = "; ", zh: str = "；") -> Said:
    """``parts`` one after another, with ``en`` between them in English and ``zh`` in Chinese."""
    listed = list(parts)
    return Said(en.join(p.en for p in listed), zh.join(p.zh for p in listed))


def fields_of(template: str) -> set[str]:
    """The names a str.format template fills in (``{n}``, ``{n!r}``, ``{n:>3}``: ``n``)."""
    return {
        name.split(".")[0].split("[")[0]
        for _, name, _, _ in _FORMATTER.parse(template)
        if name is not None
    }
