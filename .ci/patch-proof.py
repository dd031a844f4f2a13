"""What the installed FlashInfer does with three patterns FI002 and FI013 report (GPU machine).

    PYTHONPATH=<flashinfer>:<deps> python3 .ci/patch-proof.py   (logs: docs/gpu-proof/patches-*)

Prints, for the FlashInfer on the path:
1. whether `fused_moe.core.get_trtllm_moe_sm100_module` has `cache_clear` (functools.cache);
2. what happens when `fused_moe.core.gen_trtllm_gen_fused_moe_sm100_module` is replaced by a
   generator that takes no parameter, as SGLang's LoRA MoE path does, and the module is built:
   the replacement is called as before, or FlashInfer passes it a parameter (TypeError); the
   replacement raises before anything compiles;
3. which functions of `comm.mnnvl` read the global `is_mnnvl_fabric_supported` when they run
   (their code's global names), the name SGLang 0.5.11 replaces to force POSIX handles;
4. whether three private names FI014 reports are bound where projects read them.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect

import flashinfer.comm.mnnvl as mnnvl
import flashinfer.fused_moe.core as fi_core
import torch

print("flashinfer", importlib.metadata.version("flashinfer-python"), "torch", torch.__version__)
print("gpu", torch.cuda.get_device_name(0), torch.cuda.get_device_capability(0))

getter = fi_core.get_trtllm_moe_sm100_module
print("1. get_trtllm_moe_sm100_module has cache_clear:", hasattr(getter, "cache_clear"))


class Called(Exception):
    pass


def ours():  # SGLang's generator takes no parameter
    raise Called("the replacement was called with no argument")


fi_core.gen_trtllm_gen_fused_moe_sm100_module = ours
try:
    getter()
    print("2. the module was built without calling the replacement")
except Called as exc:
    print("2. replacement:", exc)
except TypeError as exc:
    print("2. replacement: TypeError:", exc)


def reads(function: object, name: str) -> bool:
    code = getattr(function, "__code__", None)
    if code is None:
        return False
    consts = [c for c in code.co_consts if inspect.iscode(c)]
    return name in code.co_names or any(name in c.co_names for c in consts)


readers = []
for owner_name, owner in inspect.getmembers(mnnvl):
    if inspect.isfunction(owner) and owner.__module__ == mnnvl.__name__:
        if reads(owner, "is_mnnvl_fabric_supported"):
            readers.append(owner_name)
    elif inspect.isclass(owner) and owner.__module__ == mnnvl.__name__:
        for method_name, method in vars(owner).items():
            if reads(getattr(method, "__func__", method), "is_mnnvl_fabric_supported"):
                readers.append(f"{owner_name}.{method_name}")
print("3. functions of comm.mnnvl that read is_mnnvl_fabric_supported:", sorted(readers) or "none")

# 4. private names FI014 reports gone on 0.7.4 (read as SGLang and vLLM read them)
for module_name, name in [
    ("flashinfer.gemm.gemm_base", "_get_cache_buf"),
    ("flashinfer.mla._core", "_get_trtllm_gen_multi_ctas_kv_counter_buffer"),
    ("flashinfer.fused_moe.core", "_moe_topk_ids_init"),
]:
    module = importlib.import_module(module_name)
    try:
        getattr(module, name)
        print(f"4. {module_name}.{name}: bound")
    except AttributeError as exc:
        print(f"4. {module_name}.{name}: AttributeError: {exc}")
