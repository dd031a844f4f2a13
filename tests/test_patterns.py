"""Deferred patterns (`migrate_fi.base.patterns`): each one compiles, and behaves as `re.compile`."""

from __future__ import annotations

import importlib
import pkgutil
import re

import pytest

import migrate_fi
from migrate_fi.base import patterns


def _modules() -> list[str]:
    return [
        info.name
        for info in pkgutil.walk_packages(migrate_fi.__path__, "migrate_fi.")
        if not info.name.endswith("__main__")
    ]


def test_every_module_pattern_compiles() -> None:
    deferred = 0
    for name in _modules():
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if isinstance(value, patterns._Deferred):
                deferred += 1
                try:
                    value.compiled()
                except re.error as exc:  # pragma: no cover (what the test is for)
                    pytest.fail(f"{name}.{attr}: {exc}")
    assert deferred > 30  # the modules' patterns are deferred, and all were found


def test_behaves_as_the_compiled_pattern() -> None:
    lazy = patterns.compile(r"(?P<word>[a-z]+)\d", re.IGNORECASE)
    eager = re.compile(r"(?P<word>[a-z]+)\d", re.IGNORECASE)
    text = "ab1 CD2 e"
    assert [m.group("word") for m in lazy.finditer(text)] == ["ab", "CD"]
    assert lazy.sub("-", text) == eager.sub("-", text)
    assert lazy.pattern == eager.pattern and lazy.flags == eager.flags
    assert lazy.search("zz9") is not None and lazy.match("9") is None
    data = patterns.compile(rb"import\s+(\w+)")
    found = data.search(b"x; import os")
    assert found is not None and found.group(1) == b"os"


def test_compiles_once_and_only_when_used() -> None:
    lazy = patterns.compile(r"[")  # invalid: nothing happens until it is used
    with pytest.raises(re.error):
        lazy.match("x")
    ok = patterns.compile(r"a+")
    assert isinstance(ok, patterns._Deferred) and ok._compiled is None
    ok.match("aa")
    first = ok._compiled
    ok.search("ba")
    assert first is not None and ok._compiled is first


def test_no_deferred_pattern_is_handed_to_a_re_function() -> None:
    """`re.sub(_PATTERN, ...)` wants a real pattern (a deferred one is a stand-in): call the
    pattern's own method instead (`_PATTERN.sub(...)`)."""
    import pathlib

    root = pathlib.Path(migrate_fi.__file__).parent
    handed = re.compile(r"\bre\.\w+\(\s*(_[A-Z][A-Z0-9_]*)\b")
    found = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        found += [
            f"{path.relative_to(root)}: re.…({m.group(1)}"
            for m in handed.finditer(text)
            if f"{m.group(1)} = patterns.compile(" in text
        ]
    assert not found, found
