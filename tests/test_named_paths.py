"""FI015: which strings its finer test lets through, and what a run reports of them."""

from __future__ import annotations

from pathlib import Path

from packaging.version import Version
from rule_runs import messages

from migrate_fi.framework.rule import RunOptions
from migrate_fi.run.pipeline import must_see, rule_tests
from migrate_fi.run.registry import all_rules

OPTIONS = RunOptions(Version("0.6.18"), Version("0.7.4"))


def test_the_finer_test_wants_a_string_naming_what_the_range_removed(tmp_path: Path) -> None:
    tests = rule_tests([c for c in all_rules() if c.code == "FI015"], OPTIONS)
    user = str(tmp_path / "user.py")
    probe = b'import importlib.util\nok = importlib.util.find_spec("flashinfer.comm.trtllm_moe_alltoall")\n'
    assert must_see(tests, probe, user, OPTIONS) == ("named_paths",)
    pair = b'REQUIRED = [("flashinfer.comm.trtllm_alltoall", "MnnvlMoe")]\n'
    assert must_see(tests, pair, user, OPTIONS) == ("named_paths",)
    # no import of FlashInfer needed: a string reaches it by name
    assert b"import flashinfer" not in pair
    # a backend's name, a module still there, words in a message: nothing to parse for
    for text in (
        b'use = backend == "flashinfer"\n',
        b'importlib.import_module("flashinfer.comm")\n',
        b'print("flashinfer trtllm_alltoall is gone")\n',
    ):
        assert must_see(tests, text, user, OPTIONS) is None, text
    own = tmp_path / "flashinfer" / "comm" / "user.py"  # (FlashInfer's own module: the release)
    for folder in (own.parent.parent, own.parent):
        folder.mkdir(exist_ok=True)
        (folder / "__init__.py").write_text("")
    assert must_see(tests, probe, str(own), OPTIONS) is None


def test_one_finding_per_statement_and_path_with_the_module_that_went(tmp_path: Path) -> None:
    (tmp_path / "probe.py").write_text(
        "import importlib\n\n\n"
        "def probe():\n"
        '    for name in ("flashinfer.comm.trtllm_alltoall", "flashinfer.comm.trtllm_alltoall"):\n'
        "        importlib.import_module(name)\n"
        '    return ("flashinfer.comm.trtllm_alltoall", "MnnvlMoe")\n'
    )
    found = messages(tmp_path, "0.6.18", "0.7.4", "FI015")
    assert len(found) == 2, found
    assert found[0].startswith("flashinfer.comm.trtllm_alltoall, named in this string (in probe())")
    assert "(the module flashinfer.comm.trtllm_alltoall is gone)" in found[1]
    # the same strings in a range that keeps the module: nothing
    assert messages(tmp_path, "0.6.17", "0.6.18", "FI015") == []


def test_a_probe_is_wanted_where_the_object_is_imported_from_flashinfer(tmp_path: Path) -> None:
    options = RunOptions(Version("0.6.8.post1"), Version("0.7.4"))
    tests = rule_tests([c for c in all_rules() if c.code == "FI015"], options)
    user = str(tmp_path / "user.py")
    probe = b'import flashinfer.comm as fi_comm\n\nOK = hasattr(fi_comm, "MoeAlltoAll")\n'
    assert must_see(tests, probe, user, options) == ("named_paths",)
    # the same name asked of objects no FlashInfer import binds: nothing to parse for
    other = b'import flashinfer\nimport torch\n\nOK = hasattr(torch, "MoeAlltoAll")\n'
    assert must_see(tests, other, user, options) is None
