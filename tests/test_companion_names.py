"""FI007's prefilter names (what the target release requires with a version) are read without
parsing each requirement: never fewer than the parsed requirements give, on every release's
data and on requirement lines of every form."""

from __future__ import annotations

import pytest

from migrate_fi.api import releases
from migrate_fi.base.messages import Said
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


def test_a_move_names_only_a_release_the_index_serves() -> None:
    """The target's minimum may be a version never published (`>=4.7.0a0`): the pin moves to
    the lowest release served that fits; without index data it is not moved; a requirement
    whose other bounds exclude every fitting release is not moved either."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    from migrate_fi.project.pins import Kind, VersionRef

    def ref(op: str, version: str, package: str) -> VersionRef:
        return VersionRef("p.txt", 1, 0, 1, version, package, Kind.REQUIREMENT, op)

    floor = ref("==", "4.6.2", "nvidia-cutlass-dsl")
    found = fi007._published_floor(
        "nvidia-cutlass-dsl", SpecifierSet(">=4.7.0a0"), [floor], floor, Version("4.7.0a0")
    )
    assert found == Version("4.7.0")
    unknown = ref("==", "1.0", "no-such-package-anywhere")
    said = fi007._published_floor(
        "no-such-package-anywhere", SpecifierSet(">=2.0"), [unknown], unknown, Version("2.0")
    )
    assert isinstance(said, Said) and "not checked against the package index" in said.en
    low, high = ref(">=", "0.1.5", "apache-tvm-ffi"), ref("<", "0.1.6", "apache-tvm-ffi")
    said = fi007._published_floor(
        "apache-tvm-ffi", SpecifierSet(">=0.1.11,<0.2"), [low, high], low, Version("0.1.11")
    )
    assert isinstance(said, Said) and "change the pin by hand" in said.en
    assert "请手动修改版本约束" in said.zh
