"""The round trip of benchmarks/roundtrip.py, on the bundled projects: apply changes only the
files it says it rewrote, a second apply changes not one byte, nothing fails. (The benchmark
runs the same on big real trees.)"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("roundtrip", ROOT / "benchmarks" / "roundtrip.py")
assert spec is not None and spec.loader is not None
roundtrip = importlib.util.module_from_spec(spec)
spec.loader.exec_module(roundtrip)


@pytest.mark.parametrize("project", ["demo", "sglang_like", "verify_sample"])
def test_round_trip(project: str) -> None:
    tree = ROOT / "tests" / "fixtures" / "projects" / project
    assert roundtrip.roundtrip(tree, ["--from", "0.6.8.post1"]) == []


def test_round_trip_of_the_fixture_inputs(tmp_path: Path) -> None:
    """Every fixture input at once, as one tree (many shapes, many rules)."""
    tree = tmp_path / "inputs"
    tree.mkdir()
    for before in (ROOT / "tests" / "fixtures").glob("*/*.before.py"):
        (tree / f"{before.parent.name}__{before.name}").write_bytes(before.read_bytes())
    assert roundtrip.roundtrip(tree, ["--from", "0.6.8.post1"]) == []
