"""FI007's prefilter names (what the target release requires with a version) are read without
parsing each requirement: never fewer than the parsed requirements give, on every release's
data and on requirement lines of every form."""

from __future__ import annotations

import pytest

from migrate_fi.api import releases
from migrate_fi.codemods import companion_requirements as fi007


def test_the_names_of_every_release_are_those_parsed() -> None:
    versions = list(releases._requires())
    assert len(versions) > 10
    for version in versions:
        assert fi007._required_names(version) == set(fi007._required(version, None)), version


@pytest.mark.parametrize(
    ("line", "kept"),
    [
        ("apache-tvm-ffi<0.2,>=0.1.6", True),
        ("nvidia-cutlass-dsl[cu13]>=4.7.0a0; extra == 'cu13'", True),
        ("Torch (>=2.8)", True),
        ("einops", False),  # (no version: nothing to check)
        ("numpy; python_version >= '3.10'", False),  # (an operator, but in the marker)
        ("pkg @ https://example.com/pkg-1.0.whl", False),
        ("pkg[extra] @ git+https://example.com/x.git@v1>=", False),
        ("Some_Name.x ~= 1.0", True),
        ("ninja!=1.11.1.2", True),
    ],
)
def test_a_requirement_line_of_any_form(
    line: str, kept: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fi007, "requirements_of", lambda target: [line])
    fi007._required.cache_clear()
    fi007._required_names.cache_clear()
    try:
        assert fi007._required_names("9.9") == set(fi007._required("9.9", None))
        assert bool(fi007._required_names("9.9")) is kept
    finally:
        fi007._required.cache_clear()
        fi007._required_names.cache_clear()
