"""The bundled API data: coverage, provenance, known facts, and agreement with the real wheels."""

from __future__ import annotations

import ast
import hashlib
import itertools
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from migrate_fi.api.differ import api_for, compare_callables, diff_releases
from migrate_fi.api.extract import extract_release
from migrate_fi.api.index import first_change, trigger_paths
from migrate_fi.api.store import available_releases, load_release
from migrate_fi.base.versions import KNOWN_RELEASES


def names(version: str, path: str) -> list[str]:
    c = api_for(version).callable(path)
    assert c is not None, f"{path} not in {version}"
    return [p.name for p in c.params]


def test_every_known_release_is_bundled() -> None:
    assert available_releases() == list(KNOWN_RELEASES)


def test_provenance() -> None:
    for v in available_releases():
        prov = load_release(v)["provenance"]
        assert prov["version"] == v
        assert prov["source"] == f"flashinfer_python-{v}-py3-none-any.whl"
        assert re.fullmatch(r"[0-9a-f]{64}", prov["sha256"])


# ------------------------------------------------ facts checked against the wheels by hand


def test_fp4_quantize_history() -> None:
    old = ["input", "global_scale", "sf_vec_size", "sf_use_ue8m0", "is_sf_swizzled_layout"]
    old += ["is_sf_8x4_layout", "enable_pdl", "backend"]
    assert names("0.6.8.post1", "flashinfer.fp4_quantize") == old
    assert names("0.6.10", "flashinfer.fp4_quantize") == old
    new = [*old[:6], "is_global_scale_inversed", *old[6:]]
    for v in ("0.6.11", "0.6.14", "0.7.0"):
        assert names(v, "flashinfer.fp4_quantize") == new
        assert names(v, "flashinfer.quantization.fp4_quantize") == new
    assert names("0.7.1", "flashinfer.fp4_quantize") == [*new, "nvfp4_4over6"]
    c = api_for("0.7.4").callable("flashinfer.fp4_quantize")
    assert c is not None
    params = {p.name: p for p in c.params}
    assert params["backend"].default == "'auto'"
    assert params["batch_invariant"].kind == "K"
    d = compare_callables(
        api_for("0.6.10").callable("flashinfer.fp4_quantize"),  # type: ignore[arg-type]
        api_for("0.6.11").callable("flashinfer.fp4_quantize"),  # type: ignore[arg-type]
    )
    assert d.misbinding_index == 6


def test_allreduce_workspace_group() -> None:
    path = "flashinfer.comm.create_allreduce_fusion_workspace"
    assert "group" not in names("0.6.10", path)
    assert names("0.6.10.post1", path)[-1] == "group"
    assert names("0.6.14", path) == [
        "backend",
        "world_size",
        "rank",
        "max_token_num",
        "hidden_dim",
        "dtype",
        "gpus_per_node",
        "comm_backend",
        "force_oneshot_support",
        "group",
    ]


def test_cute_dsl_moe_wrapper_init() -> None:
    def params(v: str) -> dict[str, str | None]:
        c = api_for(v).callable("flashinfer.CuteDslMoEWrapper")
        assert c is not None
        return {p.name: p.default for p in c.params}

    assert params("0.6.13")["max_num_tokens"] == "4096"
    assert "activation" not in params("0.6.13")
    assert params("0.6.14")["max_num_tokens"] == "None"
    assert params("0.6.14")["activation"] == "'silu'"
    assert "activation_type" in params("0.6.15") and "activation" not in params("0.6.15")
    assert list(params("0.6.14"))[:4] == [
        "num_experts",
        "top_k",
        "hidden_size",
        "intermediate_size",
    ]


def test_only_cute_dsl_moe_wrapper_stopped_preallocating_for_cuda_graphs() -> None:
    """FI005 covers one wrapper; this searches the release data for any other with the same
    change (a class whose constructor takes `use_cuda_graph` and whose instances stop holding
    buffer attributes in the next release), so new data with another one fails here."""

    def graph_classes(version: str) -> dict[str, set[str]]:
        out = {}
        for key, d in load_release(version)["defs"].items():
            init = d.get("methods", {}).get("__init__", {}).get("sig", [])
            if d.get("k") == "c" and any(p[0] == "use_cuda_graph" for p in init):
                out[key] = set(d.get("iattrs") or ())
        return out

    buffer = re.compile(r"buf|output|workspace|scale|_out")
    found = []
    releases = available_releases()
    for old, new in itertools.pairwise(releases):
        before, after = graph_classes(old), graph_classes(new)
        for key in before.keys() & after.keys():
            if any(buffer.search(a) for a in before[key] - after[key]):
                found.append((new, key.rsplit(".", 1)[1]))
    # 0.6.0 dropped BatchPrefillWithPagedKVCacheWrapper's FA3 vector-sparse index buffers
    # (`_vector_sparse_indices_buffer`, `_vector_sparse_indptr_buffer`: scratch the FA3 path
    # filled in plan(), read from 0.5.3's and 0.6.0's prefill.py); the outputs and the buffers a
    # graph-mode wrapper is given are unchanged, so no graph test stops capturing: not FI005's
    assert found == [
        ("0.6.0", "BatchPrefillWithPagedKVCacheWrapper"),
        ("0.6.14", "CuteDslMoEWrapper"),
    ]


def test_trtllm_fp4_block_scale_moe() -> None:
    path = "flashinfer.trtllm_fp4_block_scale_moe"
    assert "per_token_scale" not in names("0.6.10", path)
    assert names("0.6.11", path).index("per_token_scale") == 28
    assert first_change(path, "0.6.10", "0.7.4") == "0.6.11"


def test_enum_renumbered() -> None:
    changes = diff_releases("0.6.10", "0.6.11")
    assert any(
        c.kind == "enum-value"
        and c.symbol.endswith("RoutingMethodType")
        and "Unspecified: 8 -> 9" in c.detail
        for c in changes
    )


def test_deprecation_shim_is_read_from_the_release() -> None:
    path = "flashinfer.BatchDecodeWithPagedKVCacheWrapper().plan"
    before, after = api_for("0.6.14").callable(path), api_for("0.6.15").callable(path)
    assert before is not None and after is not None
    assert after.shim is not None and after.shim["legacy"][:2] == [
        "pos_encoding_mode",
        "window_left",
    ]
    d = compare_callables(before, after)
    assert d.misbinding_index is None
    assert d.deprecated_index == 7  # everything after page_size
    assert d.removed == [] and d.newly_required == []


def test_silent_positional_changes_match_the_facts() -> None:
    """Known silent insertions (read in the wheels by hand): first index that binds differently."""
    expected = {
        ("0.6.10", "0.6.11", "flashinfer.trtllm_fp4_block_scale_routed_moe"): 28,
        ("0.6.10", "0.6.11", "flashinfer.prefill.trtllm_ragged_attention_deepseek"): 21,
        ("0.6.10", "0.6.11", "flashinfer.gemm.group_gemm_nvfp4_nt_groupwise"): 9,
        ("0.6.10", "0.6.11", "flashinfer.gdn_kernels.gated_delta_rule"): 10,
        ("0.6.12", "0.6.13", "flashinfer.trtllm_bf16_routed_moe"): 17,
        ("0.6.12", "0.6.13", "flashinfer.trtllm_fp8_block_scale_routed_moe"): 21,
        ("0.6.14", "0.6.15", "flashinfer.trtllm_fp8_block_scale_moe"): 23,
        ("0.6.15.post1", "0.6.16", "flashinfer.fused_moe.cutlass_fused_moe"): 26,
        ("0.6.18.post1", "0.7.0", "flashinfer.decode.trtllm_batch_decode_with_kv_cache"): 30,
    }
    for (old, new, path), index in expected.items():
        before, after = api_for(old).callable(path), api_for(new).callable(path)
        assert before is not None and after is not None, path
        assert compare_callables(before, after).misbinding_index == index, path


def _renames(old: str, new: str, path: str) -> dict[str, tuple[str, str]]:
    before, after = api_for(old).callable(path), api_for(new).callable(path)
    assert before is not None and after is not None, path
    d = compare_callables(before, after)
    return {a: (b, d.rename_evidence[a]) for a, b in d.renamed.items()}


def test_renames_found_in_real_releases() -> None:
    """Renames read in the wheels by hand, and how sure each is."""
    # same place, kind and default, same words (order and plural aside): certain
    assert _renames("0.7.0.post1", "0.7.1", "flashinfer.fp4_paged_mqa_logits") == {
        "sf_q": ("q_sf", "same"),
        # moved as well: the closest name, for a person
        "block_table": ("block_tables", "likely"),
        "context_lens": ("seq_lens", "likely"),
        "max_context_len": ("max_seq_len", "likely"),
    }
    # several at once, in place, a word dropped from each
    assert _renames("0.6.15.post1", "0.6.16", "flashinfer.comm.mnnvl.HandleExchanger") == {
        "comm_backend": ("comm", "place"),
        "group_rank": ("rank", "place"),
        "group_size": ("size", "place"),
    }
    # a word added, next to two removed parameters (SGLang renamed it by hand)
    assert _renames("0.7.0.post1", "0.7.1", "flashinfer.moe_ep.Bf16CutedslMegaMoeConfig") == {
        "in_kernel_fc2_reduce": ("enable_in_kernel_fc2_reduce", "place")
    }
    # declared by FlashInfer: the old keyword still works there
    assert _renames("0.7.2.post1", "0.7.4", "flashinfer.moe_ep.Nvfp4CutedslMegaMoeConfig") == {
        "apply_topk_in_fc1": ("apply_routing_weights_before_fc2", "declared")
    }
    # torch's `dtype` is "data type" (vLLM 0.34's call passes the old keywords)
    renames = _renames(
        "0.7.2.post1", "0.7.4", "flashinfer.attention.prims_ts.BatchDecodePagedTSWrapper().plan"
    )
    assert renames["q_data_type"] == ("q_dtype", "same")
    assert renames["kv_data_type"] == ("kv_dtype", "same")
    assert renames["o_data_type"] == ("out_dtype", "likely")  # (`o` is not `out` for certain)


def test_a_new_default_in_the_same_place_is_not_a_rename() -> None:
    """`gated_act_type=0` -> `activation_type=ActivationType.Swiglu.value` (0.6.3) and `policy=None`
    -> `tactic=-1` (0.6.16): positional calls reach a parameter that means another thing."""
    path = "flashinfer.trtllm_fp4_block_scale_moe"
    before, after = api_for("0.6.2").callable(path), api_for("0.6.3").callable(path)
    assert before is not None and after is not None
    d = compare_callables(before, after)
    assert d.renamed == {} and d.removed == ["gated_act_type"] and d.misbinding_index == 27
    graph = "flashinfer.gemm.gemm_base.build_cudnn_gemm_bf16_graph"
    assert _renames("0.6.15.post1", "0.6.16", graph) == {}
    # an unrelated name in the same place is no rename either
    config = "flashinfer.cute_dsl.attention.AttentionConfig"
    assert "window_left" not in _renames("0.6.15.post1", "0.6.16", config)


def _sig(*params: tuple[str, str, str | None], aliases=()):  # type: ignore[no-untyped-def]
    from migrate_fi.api.differ import CallSignature, Param

    return CallSignature("flashinfer.f", tuple(Param(*p) for p in params), aliases=aliases)


def test_rename_rules_on_made_up_signatures() -> None:
    from migrate_fi.api.differ import match_renames

    a, x = ("a", "A", None), ("x", "A", None)
    # an appended parameter with a default is an addition, not a rename of anything
    assert match_renames(_sig(a), _sig(a, ("topk_ids", "A", "None"))) == {}
    # keyword-only fields (`field(kw_only=True)`): the same place among the keyword-only ones
    old = _sig(a, ("num_tokens", "K", "1"), ("eps", "K", "1e-6"))
    new = _sig(a, ("num_token", "K", "1"), ("eps", "K", "1e-6"))
    assert {k: (r.new, r.evidence) for k, r in match_renames(old, new).items()} == {
        "num_tokens": ("num_token", "same")
    }
    # the kind changed (positional to keyword-only): not the same parameter
    assert match_renames(_sig(a, ("n_tokens", "A", "1")), _sig(a, ("tokens", "K", "1"))) == {}
    # two adjacent renames at once, each the same words reordered
    old = _sig(x, ("selected_experts", "A", None), ("expert_scales", "A", None), a)
    new = _sig(x, ("experts_selected", "A", None), ("scales_expert", "A", None), a)
    assert {k: r.evidence for k, r in match_renames(old, new).items()} == {
        "selected_experts": "same",
        "expert_scales": "same",
    }
    # two equally close candidates: no rename (`ab_dtype` -> `a_dtype`, `b_dtype`)
    old = _sig(("ab_dtype", "A", None), a)
    new = _sig(("a_dtype", "A", None), ("b_dtype", "A", None), a)
    assert match_renames(old, new) == {}
    # a rename FlashInfer declares wins over anything read from the names
    old = _sig(("in_fc1", "A", "False"))
    new = _sig(("before_fc2", "A", "False"), aliases=(("in_fc1", "before_fc2"),))
    assert match_renames(old, new)["in_fc1"].evidence == "declared"


def test_moved_means_the_same_code() -> None:
    """0.7.0 moved `determine_mla_backend` to `flashinfer.utils` unchanged: "moved". A name only
    another definition shares is no move."""
    from migrate_fi.api.differ import moved_to

    old, new = api_for("0.6.18.post1"), api_for("0.7.0")
    assert moved_to(old, new, "flashinfer.mla.determine_mla_backend") == (
        "flashinfer.utils.determine_mla_backend",
        [],
    )
    changes = {c.symbol: c for c in diff_releases("0.6.18.post1", "0.7.0")}
    assert changes["flashinfer.mla.MaskMode"].kind == "moved"
    for change in changes.values():
        if change.kind == "moved":
            target = change.detail.split()[2]
            before = old.defs[old.canonical(change.symbol) or ""]["h"]
            assert new.defs[new.canonical(target) or ""]["h"] == before, change


def test_same_name_elsewhere_is_every_public_path_of_that_name() -> None:
    """`Api.same_name_elsewhere` finds paths by name without indexing every public path (a
    few names searched, then an index of the keys): both ways agree with the definition, the
    public paths (`public_paths`) of the same last name, per definition the shortest of those
    through its own package (the defining module or one above it), else the shortest."""
    from migrate_fi.api.differ import Api
    from migrate_fi.api.store import load_release

    def expected(api: Api, path: str, kind: str | None) -> list[str]:
        best: dict[str, tuple[bool, int, str]] = {}
        for public, target in api.public_paths().items():
            if public.rpartition(".")[2] != path.rpartition(".")[2] or public == path:
                continue
            if kind is not None and api.kind(target) != kind:
                continue
            rank = (not target.startswith(public.rpartition(".")[0] + "."), len(public), public)
            if target not in best or rank < best[target]:
                best[target] = rank
        return sorted(public for _, _, public in best.values())

    for version in ("0.6.8.post1", "0.7.4"):
        api = Api(version, load_release(version))  # (its own lookups: none asked before)
        asked = ["flashinfer.comm.trtllm_alltoall.MnnvlMoe", "flashinfer", "no.such_name"]
        asked += (
            list(api.defs)[:: len(api.defs) // 40] + list(api.exports)[:: len(api.exports) // 20]
        )
        found_some = 0
        for path in asked:
            for kind in (None, "f", "c"):
                got = api.same_name_elsewhere(path, kind)
                assert got == expected(api, path, kind), (version, path, kind)
                found_some += bool(got)
        assert found_some > len(asked)  # (not a comparison of empty lists)
    # a path of one component, and one only an export names
    defs = {"top": {"k": "f"}, "m.top": {"k": "f"}, "m._top": {"k": "f"}, "n.top": {"k": "c"}}
    api = Api("0", {"defs": defs, "exports": {"pkg.top": "m.top"}, "modules": {}})
    assert api.same_name_elsewhere("old.top", "f") == ["m.top", "top"]
    assert api.same_name_elsewhere("old.top") == ["m.top", "n.top", "top"]


def test_body_hash_ignores_layout_and_docstrings() -> None:
    from migrate_fi.api.extract import body_hash

    def first(src: str) -> ast.FunctionDef:
        node = ast.parse(src).body[0]
        assert isinstance(node, ast.FunctionDef)
        return node

    a = first('def f(x):\n    """Doc."""\n    return x + 1\n')
    b = first("def f(x):\n    # a comment\n    return (x +\n            1)\n")
    c = first("def f(x):\n    return x + 2\n")
    assert body_hash(a) == body_hash(b) != body_hash(c)


def test_instance_calls_are_the_class_call_method() -> None:
    """`kernel(...)` on an instance is `__call__`, diffed like any method (0.6.16 inserted
    `mYNorm` before `mGlobalScale`)."""
    path = "flashinfer.cute_dsl.AddRMSNormFP4QuantKernel()"
    before, after = api_for("0.6.15.post1").callable(path), api_for("0.6.16").callable(path)
    assert before is not None and after is not None
    assert compare_callables(before, after).misbinding_index == 6
    assert "flashinfer.cute_dsl.AddRMSNormFP4QuantKernel" in trigger_paths("0.6.15.post1", "0.6.16")


def test_public_view_keeps_what_users_call() -> None:
    from migrate_fi.api.paths import is_user_facing

    assert is_user_facing("flashinfer.fp4_quantize")
    assert is_user_facing("flashinfer.comm.create_allreduce_fusion_workspace")
    assert is_user_facing("flashinfer.BatchDecodeWithPagedKVCacheWrapper().plan")
    assert not is_user_facing("flashinfer.moe_ep.kernel_src.sm90.x.Kernel")
    assert not is_user_facing("flashinfer.attention.prims_ts.kernels.fmha_context.FmhaTs")
    everything = [c for c in diff_releases("0.6.8.post1", "0.7.4") if c.kind != "added"]
    public = [c for c in everything if is_user_facing(c.symbol)]
    assert 0 < len(public) < len(everything)
    assert all("kernel_src" not in c.symbol for c in public)


def test_renamed_parameters_are_in_the_prefilter_index() -> None:
    """A file whose only use of FlashInfer is a renamed keyword is parsed."""
    assert "flashinfer.fp4_paged_mqa_logits" in trigger_paths("0.7.0.post1", "0.7.1")
    assert "flashinfer.comm.mnnvl.HandleExchanger" in trigger_paths("0.6.15.post1", "0.6.16")


@pytest.mark.slow
def test_prefilter_index_is_built_from_the_bundled_data() -> None:
    """changes.json is derived data: regenerated with the releases (`signatures build`), never
    edited by hand; a stale index would let files with changed calls skip the analysis."""
    import json

    from migrate_fi.api.index import INDEX_FILE, build_index

    with open(INDEX_FILE, encoding="utf-8") as fh:
        assert json.load(fh) == build_index()


def test_prefilter_index_names_the_changes() -> None:
    paths = trigger_paths("0.6.10", "0.6.11")
    assert "flashinfer.fp4_quantize" in paths and "flashinfer.trtllm_fp4_block_scale_moe" in paths
    assert "flashinfer.BatchDecodeWithPagedKVCacheWrapper" in trigger_paths("0.6.14", "0.6.15")
    # removed APIs too: their callers must be parsed to be told
    assert "flashinfer.comm.MoeAlltoAll" in trigger_paths("0.7.2", "0.7.4")


def _covers(index: set[tuple[str, ...]], exact: set[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """The exact triggers no index trigger matches wherever they match (a file holding every
    word of an exact trigger holds every word of some index trigger)."""
    return [t for t in sorted(exact) if not any(set(u) <= set(t) for u in index)]


def _tuples(triggers: tuple[str | tuple[str, ...], ...]) -> set[tuple[str, ...]]:
    return {(t,) if isinstance(t, str) else t for t in triggers}


_RANGES = [("0.6.8.post1", "0.7.4"), ("0.7.2", "0.7.4"), ("0.6.10", "0.6.11"), ("0.6.12", "0.6.14")]
_ALL_RANGES = [
    (a, b) for i, a in enumerate(available_releases()) for b in available_releases()[i + 1 :: 5]
]


def _index_triggers_cover_the_pair(old: str, new: str) -> None:
    from migrate_fi.api.differ import changed_defaults, changed_enums, enum_parameter_paths
    from migrate_fi.base.versions import parse_version
    from migrate_fi.codemods._api import path_words
    from migrate_fi.codemods.changed_defaults import ChangedDefaults
    from migrate_fi.codemods.enum_values import EnumValues
    from migrate_fi.framework.rule import RunOptions

    options = RunOptions(from_version=parse_version(old), to_version=parse_version(new))
    defaults = {path_words(c.path) for found in changed_defaults(old, new).values() for c in found}
    assert not _covers(_tuples(ChangedDefaults.triggers_for(options)), defaults), (old, new)
    enums = {path_words(p) for p in enum_parameter_paths(old, new)}
    enums |= {
        ("flashinfer", c.name, m)
        for c in changed_enums(old, new).values()
        for m in c.old
        if c.new and m not in c.new
    }
    assert not _covers(_tuples(EnumValues.triggers_for(options)), enums), (old, new)


@pytest.mark.parametrize(("old", "new"), _RANGES)
def test_index_triggers_cover_defaults_and_enums(old: str, new: str) -> None:
    """FI008 and FI011 take their prefilter from the index, a superset of what comparing the
    two releases names: no file with a changed default or enum goes unparsed."""
    _index_triggers_cover_the_pair(old, new)


@pytest.mark.slow
def test_index_triggers_cover_defaults_and_enums_on_many_ranges() -> None:
    for old, new in _ALL_RANGES:
        _index_triggers_cover_the_pair(old, new)


@pytest.mark.parametrize(("old", "new"), _RANGES[:2])
def test_per_callable_answers_are_the_pair_answers(old: str, new: str) -> None:
    """What FI008 and FI011 ask for one called API is what the whole pair answers for it."""
    from migrate_fi.api import differ

    defaults, parameters = differ.changed_defaults(old, new), differ.enum_parameters(old, new)
    paths = differ._callable_paths(differ.api_for(old))
    keys = {key: path for path, key in paths.items()}
    assert len(keys) == len(paths)
    assert set(defaults) <= set(keys) and set(parameters) <= set(keys)
    assert defaults and (parameters or old == "0.7.2")
    differ.forget()  # (each key's answer computed on its own)
    others = [f"{k}._x" for k in list(keys)[::50]] + [f"{k}().__init__" for k in list(keys)[::50]]
    for key in others:
        assert differ._callable_path(old, key) is None, key
    for key in [*keys, *others, "flashinfer.not_a_callable", "flashinfer._private"]:
        assert differ._callable_path(old, key) == keys.get(key), key
        assert differ.defaults_of(old, new, key) == defaults.get(key, ()), key
        assert differ.enum_parameters_of(old, new, key) == parameters.get(key, ()), key


# ------------------------------------------------------------------- the extractor


def test_extractor_on_a_small_package(tmp_path: Path) -> None:
    pkg = tmp_path / "flashinfer"
    (pkg / "ops").mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "from .ops import kernel as kernel\n"
        "from .ops.core import *\n"
        "try:\n    from .ops.core import Mode\nexcept ImportError:\n    Mode = None\n"
        "__version__ = '9.9.9'\n"
    )
    (pkg / "ops" / "__init__.py").write_text("from .core import kernel\n")
    (pkg / "ops" / "core.py").write_text(
        "import enum, warnings\n"
        "__all__ = ['kernel', 'Wrapper', 'Mode']\n"
        "_LEGACY = ('alpha', 'beta')\n"
        "def kernel(x, /, y, scale=1.0, *, out=None, **kw): ...\n"
        "def _private(): ...\n"
        "class Mode(enum.IntEnum):\n    A = 1\n    B = -2\n"
        "class Base:\n    def run(self, q, k=None): ...\n"
        "class Wrapper(Base):\n"
        "    def __init__(self, ws, layout='NHD'): ...\n"
        "    def plan(self, a, *deprecated, **kwargs):\n"
        "        merged = _merge(deprecated, _LEGACY, kwargs)\n"
        "        return self._plan_impl(a, **kwargs)\n"
        "    def _plan_impl(self, a, alpha=0, beta=1, gamma=2): ...\n"
        "    @staticmethod\n    def make(n): ...\n"
    )
    record = extract_release(str(tmp_path))
    defs, exports = record["defs"], record["exports"]
    assert record["provenance"]["version"] == "9.9.9"
    assert defs["flashinfer.ops.core.kernel"]["sig"] == [
        ["x", "P", None],
        ["y", "A", None],
        ["scale", "A", "1.0"],
        ["out", "K", "None"],
        ["kw", "W", None],
    ]
    assert "flashinfer.ops.core._private" not in defs  # not public API
    assert exports["flashinfer.kernel"] == "flashinfer.ops.core.kernel"
    assert exports["flashinfer.ops.kernel"] == "flashinfer.ops.core.kernel"
    assert exports["flashinfer.Wrapper"] == "flashinfer.ops.core.Wrapper"  # via `import *`
    assert exports["flashinfer.Mode"] == "flashinfer.ops.core.Mode"
    assert defs["flashinfer.ops.core.Mode"]["enum"] == {"A": 1, "B": -2}
    wrapper = defs["flashinfer.ops.core.Wrapper"]
    assert wrapper["bases"] == ["flashinfer.ops.core.Base"]
    assert wrapper["methods"]["plan"]["shim"] == {
        "legacy": ["alpha", "beta"],
        "forwards": "_plan_impl",
    }
    assert wrapper["methods"]["make"]["dec"] == "static"
    assert "_plan_impl" in wrapper["methods"]


def test_signatures_build_refuses_garbage(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from migrate_fi.cli import cli

    bad = tmp_path / "flashinfer_python-1.0-py3-none-any.whl"
    bad.write_bytes(b"not a zip")
    r = CliRunner().invoke(cli, ["signatures", "build", "--output-dir", str(tmp_path), str(bad)])
    assert r.exit_code == 2
    assert "not a readable wheel" in r.stderr


# ------------------------------------------------- against the real wheels (network)


def _render(args: ast.arguments, constants: dict[str, str] | None = None) -> str:
    """A parameter list without annotations, as Python prints it; a default that names one of
    ``constants`` (module constants: name -> the literal) as that literal."""
    for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
        if a is not None:
            a.annotation = None
    for i, d in enumerate(args.defaults):
        if isinstance(d, ast.Name) and d.id in (constants or {}):
            args.defaults[i] = ast.parse((constants or {})[d.id], mode="eval").body
    for i, kd in enumerate(args.kw_defaults):
        if isinstance(kd, ast.Name) and kd.id in (constants or {}):
            args.kw_defaults[i] = ast.parse((constants or {})[kd.id], mode="eval").body
    return ast.unparse(args)


def _constants(zf: zipfile.ZipFile, filename: str, tree: ast.Module) -> dict[str, str]:
    """The module's constants, read independently of the extractor: names assigned once at the
    top level to a literal, and those a relative import takes from a sibling module so."""

    def own(t: ast.Module) -> dict[str, str]:
        assigned: dict[str, list[ast.expr]] = {}
        for stmt in t.body:
            if isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    if isinstance(target, ast.Name):
                        assigned.setdefault(target.id, []).append(stmt.value)
        out = {}
        for name, values in assigned.items():
            try:
                ast.literal_eval(values[0])
            except ValueError:
                continue
            if len(values) == 1:
                out[name] = ast.unparse(values[0])
        return out

    found = own(tree)
    folder = filename.rsplit("/", 1)[0]
    for stmt in tree.body:
        if isinstance(stmt, ast.ImportFrom) and stmt.level == 1 and stmt.module:
            other = f"{folder}/{stmt.module.replace('.', '/')}.py"
            if other in zf.namelist():
                theirs = own(ast.parse(zf.read(other)))
                for alias in stmt.names:
                    if alias.name in theirs:
                        found.setdefault(alias.asname or alias.name, theirs[alias.name])
    return found


def _render_record(sig: list[list]) -> str:
    parts, slash_done, star_done = [], False, False
    kinds = [entry[1] for entry in sig]
    for name, kind, default, *_ in sig:
        if kind == "A" and "P" in kinds and not slash_done:
            parts.append("/")
            slash_done = True
        if kind == "K" and "V" not in kinds and not star_done:
            parts.append("*")
            star_done = True
        prefix = {"V": "*", "W": "**"}.get(kind, "")
        parts.append(prefix + name + (f"={default}" if default is not None else ""))
    return ", ".join(parts)


def _wheel(version: str, cache: Path) -> Path:
    found = list(cache.glob(f"flashinfer_python-{version}-*.whl"))
    if not found:
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "-q",
                "-d",
                str(cache),
                f"flashinfer-python=={version}",
            ],
            capture_output=True,
            text=True,
        )
        if r.returncode != 0:
            pytest.skip(f"cannot download flashinfer-python {version}: {r.stderr.strip()[-200:]}")
        found = list(cache.glob(f"flashinfer_python-{version}-*.whl"))
    return found[0]


@pytest.mark.parametrize("version", ["0.5.3", "0.6.4", "0.6.10", "0.6.11", "0.6.14"])
def test_recorded_signatures_equal_the_wheel_source(version: str) -> None:
    if os.environ.get("MIGRATE_FI_OFFLINE") == "1":
        pytest.skip("MIGRATE_FI_OFFLINE=1")
    cache = Path(os.environ.get("MIGRATE_FI_WHEEL_CACHE", Path.home() / ".cache/migrate-fi/wheels"))
    cache.mkdir(parents=True, exist_ok=True)
    wheel = _wheel(version, cache)
    record = load_release(version)
    assert hashlib.sha256(wheel.read_bytes()).hexdigest() == record["provenance"]["sha256"]
    zf = zipfile.ZipFile(wheel)
    targets = {
        "flashinfer.fp4_quantize": None,
        "flashinfer.trtllm_fp4_block_scale_moe": None,
        "flashinfer.BatchDecodeWithPagedKVCacheWrapper": "plan",
    }
    if version != "0.5.3":  # (both arrived in 0.6.x)
        targets["flashinfer.comm.create_allreduce_fusion_workspace"] = None
        targets["flashinfer.CuteDslMoEWrapper"] = "__init__"
    api = api_for(version)
    for path, method in targets.items():
        canonical = api.canonical(path)
        assert canonical is not None, path
        module, _, name = canonical.rpartition(".")
        filename = module.replace(".", "/") + ".py"
        if filename not in zf.namelist():
            filename = module.replace(".", "/") + "/__init__.py"
        tree = ast.parse(zf.read(filename))
        node = next(
            n
            for n in tree.body
            if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == name
        )
        if method:
            node = next(n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == method)
            sig = record["defs"][canonical]["methods"][method]["sig"]
        else:
            sig = record["defs"][canonical]["sig"]
        source_text = _render(node.args, _constants(zf, filename, tree))
        recorded = _render_record(sig)
        if "..." in recorded:  # long defaults are kept to 60 characters
            pattern = re.escape(recorded).replace(re.escape("..."), ".*")
            assert re.fullmatch(pattern, source_text), path
        else:
            assert recorded == source_text, path


@pytest.mark.slow
@pytest.mark.parametrize("version", ["0.5.0", "0.5.3", "0.6.0", "0.6.4", "0.6.7.post3"])
def test_the_bundled_record_is_what_the_wheel_gives_again(version: str) -> None:
    """Re-extract the release from its real wheel: the bundled record is exactly that (the old
    layouts of 0.5.x and early 0.6.x included)."""
    if os.environ.get("MIGRATE_FI_OFFLINE") == "1":
        pytest.skip("MIGRATE_FI_OFFLINE=1")
    from migrate_fi.api.extract import extract_release

    cache = Path(os.environ.get("MIGRATE_FI_WHEEL_CACHE", Path.home() / ".cache/migrate-fi/wheels"))
    cache.mkdir(parents=True, exist_ok=True)
    again = extract_release(str(_wheel(version, cache)))
    bundled = {k: v for k, v in load_release(version).items() if k != "format"}
    assert again == bundled


@pytest.mark.slow
def test_a_release_against_itself_changes_nothing() -> None:
    """`api-diff V V` is empty for every bundled release (positional-only parameters are not
    keywords that could disappear)."""
    for v in available_releases():
        assert diff_releases(v, v) == [], v


@pytest.mark.parametrize(
    ("old", "new"),
    [("0.6.8.post1", "0.7.4"), ("0.5.0", "0.7.4"), ("0.7.2", "0.7.4"), ("0.5.3", "0.6.16")],
)
def test_first_change_is_the_first_release_that_binds_old_calls_otherwise(
    old: str, new: str
) -> None:
    """`first_change` of every path a range's index names is the first release of the range
    on which positional calls written for ``old`` bind otherwise, found by comparing each
    release in turn; where one release alone changes the path it is read without any release
    in between (and it is right there too)."""
    from migrate_fi.api.index import changed_in
    from migrate_fi.api.paths import ApiPath
    from migrate_fi.base.versions import parse_version

    lo, hi = parse_version(old), parse_version(new)
    found = 0
    for path in trigger_paths(old, new):
        before = api_for(old).callable(path)
        expected = None
        if before is not None:
            named = ApiPath(path).owner if ApiPath(path).is_method else path
            candidates = changed_in(named)
            for v in available_releases():
                if not lo < parse_version(v) <= hi:
                    continue
                if candidates is not None and v not in candidates:
                    continue  # (its predecessor binds the path's calls as it does)
                after = api_for(v).callable(path)
                if after is not None and compare_callables(before, after).affected_from is not None:
                    expected = v
                    break
        assert first_change.__wrapped__(path, old, new) == expected, path
        found += expected is not None
    assert found  # (each range changes some)


def test_the_data_reads_what_defaults_mean_on_real_releases() -> None:
    """On the bundled releases, without the release notes: 0.7.1's
    `PcieIpcAllReduceWorkspace(max_blocks=AR_MAX_BLOCKS)` is 128 as before (no change at all),
    `recurrent_kda(backend=None)` is mapped back to 'cute-dsl' by its body (a change that keeps
    the value), and 0.7.4 warns about `BatchDecodeWithPagedKVCacheWrapper.run(q_len_per_req=)`."""
    from migrate_fi.api.differ import defaults_of

    old = api_for("0.7.0.post1")
    workspace = old.key("flashinfer.comm.PcieIpcAllReduceWorkspace")
    assert workspace is not None
    assert "max_blocks" not in {c.name for c in defaults_of("0.7.0.post1", "0.7.1", workspace)}
    kda = old.key("flashinfer.kda_decode.recurrent_kda")
    assert kda is not None
    (backend,) = [c for c in defaults_of("0.7.0.post1", "0.7.1", kda) if c.name == "backend"]
    assert (backend.old, backend.new, backend.same) == ("'cute-dsl'", "None", True)
    run = api_for("0.7.4").callable("flashinfer.BatchDecodeWithPagedKVCacheWrapper().run")
    assert run is not None and "q_len_per_req" in run.deprecated
    # a real change stays one: 0.7.4's use_fused_finalize=None is False under deterministic mode
    moe = api_for("0.7.2.post1").key("flashinfer.cutlass_fused_moe")
    assert moe is not None
    changes = {c.name: c.same for c in defaults_of("0.7.2.post1", "0.7.4", moe)}
    assert changes.get("use_fused_finalize") is False


def test_fi008_reads_a_default_kept_from_the_data_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no release notes at all, FI008 still leaves `recurrent_kda(backend=)` (0.7.1 maps
    None back to 'cute-dsl') and `PcieIpcAllReduceWorkspace(max_blocks=)` (AR_MAX_BLOCKS is
    128), and fixes `tune_batches`, whose old default (the constant TUNE_BATCHES) is written
    out as its value: 0.7.1's None derives the ladder from max_numel instead."""
    from click.testing import CliRunner

    from migrate_fi.api import notes
    from migrate_fi.cli import cli

    empty = tmp_path / "notes"
    empty.mkdir()
    monkeypatch.setattr(notes, "NOTES_DIR", str(empty))
    notes.forget()
    (tmp_path / "m.py").write_text(
        "from flashinfer.comm import PcieIpcAllReduceWorkspace\n"
        "from flashinfer.kda_decode import recurrent_kda\n\n\n"
        "def decode(q, k, v, g, beta, group):\n"
        "    workspace = PcieIpcAllReduceWorkspace(group)\n"
        "    return workspace, recurrent_kda(q, k, v, g, beta)\n"
    )
    monkeypatch.chdir(tmp_path)
    try:
        r = CliRunner().invoke(
            cli, ["check", "--no-cache", "--from", "0.7.0.post1", "--to", "0.7.1", "m.py"]
        )
    finally:
        notes.forget()
    assert r.exit_code == 1, r.output
    # (and 0.7.1 deprecated `recurrent_kda` as a whole: every call warns, FI012 says so)
    fi008, fi012 = r.stdout.splitlines()
    assert "FI008" in fi008 and "pass tune_batches=(1, 2, 4, 8, 16, 32, 64, 128)" in fi008
    assert "FI012 recurrent_kda is deprecated since FlashInfer 0.7.1: every call warns" in fi012
    # 0.6.13 made `run(q_len_per_req=)` default to None and warns when it is passed: FI008
    # never adds it (the data alone says so)
    (tmp_path / "m.py").write_text(
        "import flashinfer\n\n\n"
        "def decode(ws, q, cache):\n"
        "    w = flashinfer.BatchDecodeWithPagedKVCacheWrapper(ws, 'NHD')\n"
        "    return w.run(q, cache)\n"
    )
    try:
        r = CliRunner().invoke(
            cli, ["check", "--no-cache", "--from", "0.6.12", "--to", "0.6.13", "m.py"]
        )
    finally:
        notes.forget()
    assert "q_len_per_req" not in r.output


def test_a_rename_is_dated_by_the_release_that_made_it() -> None:
    """SGLang 0.5.21 migrated from 0.6.18 to 0.7.4: `in_kernel_fc2_reduce` became
    `enable_in_kernel_fc2_reduce` in 0.7.1, not in the range's target; a rename no release
    of the range shows is dated by the target."""
    from migrate_fi.api.index import renamed_in

    path = "flashinfer.moe_ep.Mxfp8CutedslMegaMoeConfig"
    old, new = "in_kernel_fc2_reduce", "enable_in_kernel_fc2_reduce"
    assert renamed_in(path, old, new, "0.6.18", "0.7.4") == "0.7.1"
    assert renamed_in(path, old, new, "0.7.0.post1", "0.7.1") == "0.7.1"
    assert renamed_in(path, "x", "y", "0.6.18", "0.7.4") == "0.7.4"


def test_a_cache_dropped_by_a_release() -> None:
    """0.6.16 dropped `functools.cache` from four module getters (their caches moved to
    private helpers): `api-diff` lists what the cache gave each as removed, with why; the
    prefilter index has those paths for the pair, and nothing for functions still cached."""
    found = {
        c.symbol: c.detail
        for c in diff_releases("0.6.15.post1", "0.6.16")
        if c.symbol.endswith(".cache_clear")
    }
    assert sorted(found) == [
        "flashinfer.fused_moe.core.get_trtllm_moe_sm100_module.cache_clear",
        "flashinfer.gemm.gemm_base.get_trtllm_gemm_module.cache_clear",
        "flashinfer.trtllm_low_latency_gemm.get_trtllm_low_latency_gemm_module.cache_clear",
        "flashinfer.xqa.get_xqa_module.cache_clear",
    ]
    assert all("no longer wrapped by functools.cache" in d for d in found.values())
    paths = trigger_paths("0.6.15.post1", "0.6.16")
    assert "flashinfer.xqa.get_xqa_module.cache_clear" in paths
    assert "flashinfer.utils.get_compute_capability.cache_clear" not in paths
    assert api_for("0.6.16").callable("flashinfer.utils.get_compute_capability.cache_clear")


def test_a_name_a_module_still_gives_is_not_listed_as_removed() -> None:
    from migrate_fi.api.differ import api_for, diff_releases

    cases = [
        # a deprecated alias given by the package's module `__getattr__`
        ("0.6.17", "0.6.18", "flashinfer.cute_dsl.sparse.bsa_attn_blk64_fwd"),
        # a function the package re-exports by `from ._core import *`
        ("0.6.8.post1", "0.7.4", "flashinfer.attention.get_holistic_attention_module"),
    ]
    for old, new, path in cases:
        assert api_for(new).exists(path) is True, path
        listed = [c for c in diff_releases(old, new) if c.symbol == path]
        assert not [c for c in listed if c.kind in ("removed", "moved")], listed
    # a function that did go is still listed
    gone = "flashinfer.comm.trtllm_alltoall.MnnvlMoe"
    assert any(
        c.symbol == gone and c.kind == "removed" for c in diff_releases("0.7.2.post1", "0.7.4")
    )
