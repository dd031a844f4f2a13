"""Callers across a project's modules: what FI003 reads about a parameter from every call of its
function (migrate_fi/rules/_callers.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

QUANT = """\
from flashinfer import fp4_quantize


def quantize(x, scale):
    return fp4_quantize(x, scale)
"""


def _project(tmp_path: Path, users: dict[str, str]) -> Path:
    pkg = tmp_path / "proj"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "quant.py").write_text(QUANT)
    for name, text in users.items():
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return tmp_path


def _fi003(root: Path, *paths: str) -> list[dict[str, object]]:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "migrate_fi",
            "check",
            "--from",
            "0.6.8.post1",
            "--to",
            "0.6.11",
            "--select",
            "FI003",
            "--output-format",
            "json",
            "--exit-zero",
            *(paths or ["."]),
        ],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return list(json.loads(proc.stdout)["diagnostics"])


ONE = "import torch\nfrom proj.quant import quantize\n\nquantize(None, torch.ones(1))\n"
MANY = (
    "import torch\nfrom proj import quant\n\n\ndef run(x):\n    quant.quantize(x, torch.ones(8))\n"
)


def test_every_caller_in_other_modules_passes_one_element(tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        {
            "proj/user.py": ONE,
            "proj/sub/__init__.py": "",
            "proj/sub/more.py": ONE.replace("proj.quant", "..quant"),
        },
    )
    assert _fi003(root) == []


def test_a_caller_in_another_module_is_named(tmp_path: Path) -> None:
    root = _project(tmp_path, {"proj/user.py": ONE, "proj/bad.py": MANY})
    found = _fi003(root)
    assert len(found) == 1 and found[0]["path"] == "proj/quant.py"
    message = str(found[0]["message"])
    assert "the call at proj/bad.py:6 passes `torch.ones(8)`" in message, message


def test_callers_outside_the_package_count_in_a_git_tree(tmp_path: Path) -> None:
    test = "import torch\nfrom proj.quant import quantize\n\n\ndef test_it():\n    quantize(None, torch.rand(4))\n"
    root = _project(tmp_path, {"proj/user.py": ONE, "tests/test_quant.py": test})
    (root / ".git").mkdir()
    found = _fi003(root, "proj")  # only the package is checked; its callers are looked for
    assert [d["path"] for d in found] == ["proj/quant.py"]
    assert "tests/test_quant.py:6" in str(found[0]["message"])


def test_a_function_handed_around_is_not_judged_by_its_calls(tmp_path: Path) -> None:
    hooks = "from proj.quant import quantize\n\nHOOKS = {'q': quantize}\n"
    root = _project(tmp_path, {"proj/user.py": ONE, "proj/hooks.py": hooks})
    found = _fi003(root)
    assert len(found) == 1 and "not all of its calls can be seen" in str(found[0]["message"])


def test_a_custom_op_is_also_called_through_torch_ops(tmp_path: Path) -> None:
    op = """\
import torch
from flashinfer import fp4_quantize


@torch.library.custom_op("proj::quantize_op", mutates_args=[])
def quantize_op(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return fp4_quantize(x, scale)[0]


def direct(x):
    return quantize_op(x, torch.ones(1))
"""
    through_ops = (
        "import torch\n\n\ndef run(x):\n    return torch.ops.proj.quantize_op(x, torch.ones(8))\n"
    )
    root = _project(tmp_path, {"proj/op.py": op, "proj/user.py": through_ops})
    found = [d for d in _fi003(root) if d["path"] == "proj/op.py"]
    assert len(found) == 1 and "proj/user.py:5" in str(found[0]["message"])
    (root / "proj/user.py").write_text(through_ops.replace("ones(8)", "ones(1)"))
    assert [d for d in _fi003(root) if d["path"] == "proj/op.py"] == []


def test_the_searched_files_kept_fit_in_their_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A caller search reads every file of its root: their bytes are kept for the next search
    only up to a budget, the oldest dropped first, and what is read is always the file."""
    from migrate_fi.rules import _callers

    monkeypatch.setattr(_callers, "_READ_BUDGET", 250)
    monkeypatch.setattr(_callers, "_kept", {})
    monkeypatch.setattr(_callers, "_kept_bytes", 0)
    paths = []
    for i in range(5):
        path = tmp_path / f"m{i}.py"
        path.write_bytes(bytes([65 + i]) * 100)
        paths.append(str(path))
    (tmp_path / "big.py").write_bytes(b"x" * 300)
    for i, path in enumerate(paths):
        assert _callers._read(path) == bytes([65 + i]) * 100
        assert _callers._kept_bytes == sum(len(v or b"") for v in _callers._kept.values()) <= 250
    assert list(_callers._kept) == paths[3:]  # the newest two fit
    assert _callers._read(str(tmp_path / "big.py")) == b"x" * 300  # read, never kept
    assert str(tmp_path / "big.py") not in _callers._kept
    assert _callers._read(str(tmp_path / "missing.py")) is None
