"""Migrated code against the real FlashInfer on a GPU.

Each test takes a legacy snippet, migrates it with migrate-fi (the engine the CLI uses), and runs
both the legacy and the migrated snippet against the installed FlashInfer release. They skip,
with the reason, where there is no CUDA GPU or no FlashInfer (CI has neither).
"""

from __future__ import annotations

import ast
import inspect
import warnings

import pytest

from migrate_fi.base.results import Status
from migrate_fi.base.versions import parse_version
from migrate_fi.framework.rule import RunOptions
from migrate_fi.run.pipeline import Mode, process_source
from migrate_fi.run.registry import select

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch", reason="needs torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU (torch.cuda.is_available() is False)", allow_module_level=True)
flashinfer = pytest.importorskip("flashinfer", reason="needs flashinfer-python installed")

INSTALLED = parse_version(flashinfer.__version__.split("+")[0])


def migrate(source: str, from_version: str) -> str:
    """Run every rule of (from_version, installed] over ``source``, as `migrate-fi apply`."""
    from_v = parse_version(from_version)
    selection = select(from_v, INSTALLED)
    options = RunOptions(from_v, INSTALLED, rules=selection.settings())
    result = process_source(source.encode(), "snippet.py", selection.rules, options, Mode.APPLY)
    assert result.error is None, result.error
    assert result.status is Status.CHANGED, f"nothing migrated: {result.diagnostics}"
    assert result.new_text is not None
    return result.new_text


def call_arguments(source: str, namespace: dict) -> tuple[list, dict]:
    """The positional and keyword arguments of the one call in ``source``, evaluated."""
    (call,) = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call)]
    args = [eval(compile(ast.Expression(a), "<arg>", "eval"), namespace) for a in call.args]
    kwargs = {
        k.arg: eval(compile(ast.Expression(k.value), "<arg>", "eval"), namespace)
        for k in call.keywords
    }
    return args, kwargs


@pytest.mark.skipif(parse_version("0.6.11") > INSTALLED, reason="needs FlashInfer >= 0.6.11")
def test_fp4_quantize_binding_after_migration() -> None:
    legacy = (
        "import flashinfer\nout = flashinfer.fp4_quantize(x, gs, 16, False, True, False, True)\n"
    )
    migrated = migrate(legacy, "0.6.10")
    assert migrated == (
        "import flashinfer\n"
        "out = flashinfer.fp4_quantize(x, gs, 16, False, True, False, enable_pdl=True)\n"
    )
    x = torch.randn(128, 256, device="cuda", dtype=torch.bfloat16)
    gs = torch.tensor([1.0], device="cuda", dtype=torch.float32)
    ns = {"flashinfer": flashinfer, "x": x, "gs": gs}
    sig = inspect.signature(flashinfer.fp4_quantize)

    args, kwargs = call_arguments(legacy, ns)
    legacy_bound = sig.bind(*args, **kwargs).arguments
    assert legacy_bound["is_global_scale_inversed"] is True  # the silent misbinding
    assert "enable_pdl" not in legacy_bound

    args, kwargs = call_arguments(migrated, ns)
    migrated_bound = sig.bind(*args, **kwargs).arguments
    assert migrated_bound["enable_pdl"] is True  # what the 0.6.10 code meant
    assert "is_global_scale_inversed" not in migrated_bound

    # and the migrated call runs (on SM90 the values are not meaningful: compare shapes only;
    # from 0.7.4 the release refuses GPUs below SM100: the binding above is then the proof)
    major, _minor = torch.cuda.get_device_capability()
    try:
        exec(compile(migrated, "snippet.py", "exec"), ns)
    except RuntimeError as exc:
        if major < 10 and "requires SM100" in str(exc):
            pytest.skip(f"the binding is as meant; FlashInfer {INSTALLED} refuses this GPU: {exc}")
        raise
    x_fp4, _x_sf = ns["out"]
    assert x_fp4.shape == (128, 128)
    assert x_fp4.dtype == torch.uint8
    print(f"fp4_quantize on {INSTALLED}: legacy binds {dict(legacy_bound).keys() - {'input'}}")


DECODE_LEGACY = """\
import flashinfer
import torch

wrapper = flashinfer.BatchDecodeWithPagedKVCacheWrapper(workspace, "NHD")
wrapper.plan(kv_indptr, kv_indices, kv_last_page_len, num_qo_heads, num_kv_heads, head_dim, page_size, "NONE", -1, None, torch.float16, torch.float16)
out = wrapper.run(q, kv_cache)
"""


@pytest.mark.skipif(parse_version("0.6.15") > INSTALLED, reason="needs FlashInfer >= 0.6.15")
def test_decode_plan_positional_optionals_after_migration() -> None:
    migrated = migrate(DECODE_LEGACY, "0.6.14")
    assert (
        'page_size, pos_encoding_mode="NONE", window_left=-1, logits_soft_cap=None,'
        " q_data_type=torch.float16, kv_data_type=torch.float16)" in migrated
    )
    torch.manual_seed(0)
    batch, pages_per_seq, page_size = 4, 8, 16
    num_qo_heads, num_kv_heads, head_dim = 32, 8, 128
    total_pages = batch * pages_per_seq
    kv_cache = torch.randn(
        total_pages, 2, page_size, num_kv_heads, head_dim, device="cuda", dtype=torch.float16
    )
    q = torch.randn(batch, num_qo_heads, head_dim, device="cuda", dtype=torch.float16)
    ns = {
        "flashinfer": flashinfer,
        "torch": torch,
        "workspace": torch.empty(128 * 1024 * 1024, dtype=torch.uint8, device="cuda"),
        "kv_indptr": torch.arange(0, batch + 1, device="cuda", dtype=torch.int32) * pages_per_seq,
        "kv_indices": torch.arange(0, total_pages, device="cuda", dtype=torch.int32),
        "kv_last_page_len": torch.full((batch,), page_size, dtype=torch.int32, device="cuda"),
        "num_qo_heads": num_qo_heads,
        "num_kv_heads": num_kv_heads,
        "head_dim": head_dim,
        "page_size": page_size,
        "q": q,
        "kv_cache": kv_cache,
    }
    legacy_ns = dict(ns)
    with pytest.warns(DeprecationWarning, match="positionally is deprecated"):
        exec(compile(DECODE_LEGACY, "legacy.py", "exec"), legacy_ns)
    migrated_ns = dict(ns)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        exec(compile(migrated, "migrated.py", "exec"), migrated_ns)
    torch.cuda.synchronize()
    assert torch.equal(legacy_ns["out"], migrated_ns["out"])

    # both match a plain torch attention (GQA, full pages)
    k = kv_cache[:, 0].reshape(batch, pages_per_seq * page_size, num_kv_heads, head_dim)
    v = kv_cache[:, 1].reshape(batch, pages_per_seq * page_size, num_kv_heads, head_dim)
    group = num_qo_heads // num_kv_heads
    k = k.repeat_interleave(group, dim=2).float()
    v = v.repeat_interleave(group, dim=2).float()
    scores = torch.einsum("bhd,bthd->bht", q.float(), k) / head_dim**0.5
    ref = torch.einsum("bht,bthd->bhd", scores.softmax(-1), v)
    err = (migrated_ns["out"].float() - ref).abs().max().item()
    assert err < 1e-2, err
    print(f"decode plan on {INSTALLED}: outputs bitwise equal; max abs error vs torch {err:.2e}")


@pytest.mark.skipif(parse_version("0.6.15") > INSTALLED, reason="needs FlashInfer >= 0.6.15")
def test_activation_value_map_binds_on_the_installed_release() -> None:
    """FI010's 0.6.15 entry: `activation="silu"` becomes `activation_type=ActivationType.Swiglu`,
    which the installed wrapper takes and reads as the gated SwiGLU the string meant."""
    legacy = (
        "from flashinfer import CuteDslMoEWrapper\n"
        "w = CuteDslMoEWrapper(num_experts=8, top_k=2, hidden_size=256, intermediate_size=512,"
        ' activation="silu")\n'
    )
    migrated = migrate(legacy, "0.6.14")
    assert "activation_type=ActivationType.Swiglu" in migrated
    assert "from flashinfer import ActivationType, CuteDslMoEWrapper" in migrated
    ns: dict = {}
    exec("from flashinfer import ActivationType", ns)  # the name the new value needs
    if not hasattr(flashinfer, "CuteDslMoEWrapper"):  # (exported only where it can be built)
        pytest.skip("flashinfer exports CuteDslMoEWrapper only with nvidia-cutlass-dsl installed")
    exec(migrated.split("\nw = ")[0], ns)  # the imports, as migrated
    sig = inspect.signature(flashinfer.CuteDslMoEWrapper)
    args, kwargs = call_arguments(legacy, ns)
    with pytest.raises(TypeError):
        sig.bind(*args, **kwargs)  # the old keyword is gone on the installed release
    args, kwargs = call_arguments(migrated, ns)
    bound = sig.bind(*args, **kwargs).arguments
    from flashinfer.fused_moe.cute_dsl.moe_utils import normalize_cute_dsl_moe_activation_type

    kind, gated = normalize_cute_dsl_moe_activation_type(bound["activation_type"])
    assert kind is flashinfer.ActivationType.Swiglu and gated


def test_enum_values_in_the_data_are_the_installed_ones() -> None:
    """FI011 reads enum numbers from the bundled data: they are what the installed FlashInfer
    defines (a wrong number would make its fixes wrong)."""
    from migrate_fi.api.differ import api_for

    api = api_for(str(INSTALLED))
    for name in ("ActivationType", "RoutingMethodType"):
        enum = getattr(flashinfer, name)
        recorded = api.defs[api.canonical(f"flashinfer.{name}") or ""]["enum"]
        assert {m.name: m.value for m in enum} == recorded, name
