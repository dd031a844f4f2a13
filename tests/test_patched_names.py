"""FI013 across modules: a replacement defined in another module of the project is read there,
and the result depends on that module's bytes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PIN = '[project]\nname = "x"\ndependencies = ["flashinfer-python==0.6.15.post1"]\n'
LORA = """\
import flashinfer.fused_moe.core as fi_core


def build():
    from x.gen import ours

    fi_core.gen_trtllm_gen_fused_moe_sm100_module = ours
    return fi_core.get_trtllm_moe_sm100_module()
"""


def _check(root: Path, *extra: str) -> list[dict[str, object]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MIGRATE_FI_")}
    env["MIGRATE_FI_CACHE_DIR"] = str(root.parent / "cache")
    done = subprocess.run(
        [sys.executable, "-m", "migrate_fi", "check", "--to", "0.6.16", "--select", "FI013",
         "--output-format", "json", *extra, str(root)],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    found: list[dict[str, object]] = json.loads(done.stdout)["diagnostics"]
    return found


def test_replacement_from_another_module(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "x").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PIN)
    (root / "x" / "__init__.py").write_text("")
    (root / "x" / "lora.py").write_text(LORA)
    (root / "x" / "gen.py").write_text("def ours():\n    return None\n")
    (found,) = _check(root)
    assert found["code"] == "FI013" and "enable_rubin (a parameter" in str(found["message"])
    assert "by ours;" in str(found["message"])
    # the replacement made to take it: nothing left, with the cache and without
    (root / "x" / "gen.py").write_text("def ours(enable_rubin=False):\n    return None\n")
    assert _check(root) == [] == _check(root, "--no-cache")
    # one that takes anything by keyword
    (root / "x" / "gen.py").write_text("def ours(**kwargs):\n    return None\n")
    assert _check(root) == []
    # a package of that name wins over a module file, as Python's import finds them
    (root / "x" / "gen").mkdir()
    (root / "x" / "gen" / "__init__.py").write_text("def ours():\n    return None\n")
    assert len(_check(root)) == 1
