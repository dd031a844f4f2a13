"""FI014: which private names the release data says are gone, and what the rule reads."""

from __future__ import annotations

from pathlib import Path

from packaging.version import Version
from rule_runs import messages

from migrate_fi.api.differ import api_for, private_names_gone
from migrate_fi.api.index import private_gone_in_range
from migrate_fi.framework.rule import RunOptions
from migrate_fi.run.pipeline import must_see, rule_tests
from migrate_fi.run.registry import all_rules


def test_private_names_gone_between_two_releases() -> None:
    gone = private_names_gone("0.7.2.post1", "0.7.4")
    # (vLLM 0.33 and 0.34 read the first, SGLang 0.5.20-0.5.23 the second)
    assert "flashinfer.gemm.gemm_base._get_cache_buf" in gone
    assert "flashinfer.mla._core._get_trtllm_gen_multi_ctas_kv_counter_buffer" in gone
    old, new = api_for("0.7.2.post1"), api_for("0.7.4")
    for path in gone:
        module, _, name = path.rpartition(".")
        assert name.startswith("_") and not name.startswith("__") and name.strip("_"), path
        assert old.exists(path) is True and new.exists(path) is False, path
        assert new.exists(module) is not False, path  # (a module gone: FI002's)
    # names still bound, public names and a private module's imports are not listed
    assert "flashinfer.gemm.gemm_base._cutedsl_low_latency_blockscaled_gemm_runner" not in gone
    assert not any(p.rpartition(".")[2] in {"torch", "logger"} for p in gone)


def test_the_range_is_every_pair_in_it() -> None:
    pairs = [("0.7.1", "0.7.2"), ("0.7.2", "0.7.2.post1"), ("0.7.2.post1", "0.7.4")]
    union = set().union(*(private_names_gone(a, b) for a, b in pairs))
    assert private_gone_in_range("0.7.1", "0.7.4") == union


def test_a_name_gone_and_back_inside_the_range_is_not_reported(tmp_path: Path) -> None:
    # gone in 0.6.12, bound again by 0.6.14: listed for the range, not gone between its ends
    path = "flashinfer.gdn_kernels.gdn_decode_bf16_state._GPU_MAJOR"
    assert path in private_gone_in_range("0.6.11.post3", "0.6.14")
    source = tmp_path / "use.py"
    source.write_text(
        "import flashinfer.gdn_kernels.gdn_decode_bf16_state as state\n\nMAJOR = state._GPU_MAJOR\n"
    )
    assert messages(tmp_path, "0.6.11.post3", "0.6.14", "FI014") == []
    assert len(messages(tmp_path, "0.6.11.post3", "0.6.12", "FI014")) == 1


def test_the_finer_test_wants_the_whole_name_outside_flashinfer(tmp_path: Path) -> None:
    options = RunOptions(Version("0.7.2.post1"), Version("0.7.4"))
    tests = rule_tests([c for c in all_rules() if c.code == "FI014"], options)
    text = b"from flashinfer.gemm import gemm_base\n\nb = gemm_base._get_cache_buf('w', 1, None)\n"
    assert must_see(tests, text, str(tmp_path / "user.py"), options) == ("private_names",)
    longer = text.replace(b"_get_cache_buf", b"_get_cache_buffer")  # (a name that contains it)
    assert must_see(tests, longer, str(tmp_path / "user.py"), options) is None
    own = tmp_path / "flashinfer" / "gemm" / "user.py"  # (FlashInfer's own module: the release)
    for folder in (own.parent.parent, own.parent):
        folder.mkdir(exist_ok=True)
        (folder / "__init__.py").write_text("")
    assert must_see(tests, text, str(own), options) is None
