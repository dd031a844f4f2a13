"""A FlashInfer object reached through a parameter whose callers pass it: the function's calls
in its module are all of its calls only when no other module names it; otherwise the site is
reported with what else it may be, never rewritten."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from migrate_fi.cli import cli

RANGE = ("--from", "0.5.3", "--to", "0.6.1", "--select", "FI002")
ARGS = ", ".join(f"a[{i}]" for i in range(21))
BACKEND = f'''import functools

from flashinfer import BatchDecodeWithPagedKVCacheWrapper


def fast_decode_plan(self, a):
    """A faster plan(), bound onto each wrapper."""
    self.plan({ARGS})


class Backend:
    def __init__(self, a):
        self.wrappers = [BatchDecodeWithPagedKVCacheWrapper(a[0], "NHD") for _ in range(2)]
        for w in self.wrappers:
            w.begin_forward = functools.partial(fast_decode_plan, w)
'''
FIXED = "a[11], data_type=a[12], sm_scale=a[13]"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "backend.py").write_text(BACKEND)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_function_bound_onto_wrappers_in_its_own_module_is_fixed(project: Path) -> None:
    r = invoke("apply", *RANGE, ".")
    assert r.exit_code == 0, r.output
    assert FIXED in (project / "pkg" / "backend.py").read_text()


def test_a_function_another_module_names_is_reported_not_rewritten(project: Path) -> None:
    (project / "pkg" / "other.py").write_text(
        "from pkg.backend import fast_decode_plan\n\n\ndef go(x, a):\n    fast_decode_plan(x, a)\n"
    )
    r = invoke("check", *RANGE, ".")
    assert r.exit_code == 1
    assert "pkg/backend.py:8:5: FI002 this BatchDecodeWithPagedKVCacheWrapper.plan may also be" in (
        r.stdout
    )
    assert "left unchanged" in r.stdout
    assert invoke("apply", *RANGE, ".").exit_code == 1
    assert FIXED not in (project / "pkg" / "backend.py").read_text()
