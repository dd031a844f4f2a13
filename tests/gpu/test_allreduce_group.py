"""FI004 on two GPUs: migrated workspace creation, with the group it adds, against the real
FlashInfer all-reduce fusion and `torch.distributed.all_reduce`.

A legacy workspace factory (the shape of SGLang's before its 0.6.11 upgrade) is migrated with
migrate-fi's engine; the migrated code then runs on two processes, one per GPU, with `group=` a
`torch.distributed.new_group` of both ranks (a group object that is not WORLD): `allreduce_fusion`
eagerly and replayed from a CUDA graph must match `torch.distributed.all_reduce` on that group.
Two legacy shapes: keywords from a dict, and SGLang's manager whose method takes the group as a
parameter defaulting to None that every caller passes. Skipped, with the reason, without two CUDA GPUs
or an installed flashinfer-python (CI has neither). The first run compiles the kernels (minutes).
"""

from __future__ import annotations

import json
import os
import socket
import textwrap

import pytest

from migrate_fi.base.versions import parse_version
from migrate_fi.framework.rule import RunOptions
from migrate_fi.run.pipeline import Mode, process_source
from migrate_fi.run.registry import select

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch", reason="needs torch")
if not torch.cuda.is_available() or torch.cuda.device_count() < 2:
    pytest.skip("needs two CUDA GPUs", allow_module_level=True)
flashinfer = pytest.importorskip("flashinfer", reason="needs flashinfer-python installed")

INSTALLED = parse_version(flashinfer.__version__.split("+")[0])

LEGACY = textwrap.dedent(
    """
    import torch
    import flashinfer.comm as comm


    def make_workspace(world_size, rank, device_group, cpu_group):
        kwargs = dict(
            backend="trtllm",
            world_size=world_size,
            rank=rank,
            max_token_num=128,
            hidden_dim=1024,
            dtype=torch.bfloat16,
        )
        return comm.create_allreduce_fusion_workspace(**kwargs)
    """
)
# SGLang's manager shape: the group is a parameter of a method that defaults to None, and every
# caller passes it (FI004 judges the callers: no report, one fix)
MANAGER = textwrap.dedent(
    """
    import torch
    import flashinfer.comm as comm


    class WorkspaceManager:
        def __init__(self):
            self.workspace = None

        def initialize(self, world_size, rank, device_group=None):
            self.workspace = comm.create_allreduce_fusion_workspace(
                backend="trtllm",
                world_size=world_size,
                rank=rank,
                max_token_num=128,
                hidden_dim=1024,
                dtype=torch.bfloat16,
            )


    def make_workspace(world_size, rank, device_group, cpu_group):
        manager = WorkspaceManager()
        manager.initialize(world_size, rank, device_group=device_group)
        return manager.workspace
    """
)
SHAPES = {"dict_kwargs": LEGACY, "manager_method": MANAGER}


def migrated(legacy: str = LEGACY) -> str:
    from_v = parse_version("0.6.10")
    selection = select(from_v, INSTALLED, ["FI004"])
    options = RunOptions(from_v, INSTALLED, rules=selection.settings())
    result = process_source(legacy.encode(), "ws.py", selection.rules, options, Mode.APPLY)
    assert result.error is None, result.error
    assert result.new_text is not None, result.diagnostics
    assert not [d for d in result.diagnostics if not d.applies], result.diagnostics
    return result.new_text


def _worker(rank: int, port: int, source: str, out_dir: str) -> None:
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=2, device_id=torch.device("cuda", rank))
    group = dist.new_group([0, 1])
    namespace: dict = {}
    exec(compile(source, "ws.py", "exec"), namespace)
    workspace = namespace["make_workspace"](2, rank, group, None)
    from flashinfer.comm import AllReduceFusionPattern, allreduce_fusion

    torch.manual_seed(rank)
    x = torch.randn(64, 1024, device="cuda", dtype=torch.bfloat16)
    expected = x.clone()
    dist.all_reduce(expected, group=group)
    out = torch.empty_like(x)
    result = allreduce_fusion(
        input=x, workspace=workspace, pattern=AllReduceFusionPattern.kAllReduce, output=out
    )
    eager = (result if result is not None else out).float()
    torch.cuda.synchronize()
    # the same, captured in a CUDA graph and replayed on new data in the static input
    graph_out = torch.empty_like(x)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            allreduce_fusion(
                input=x,
                workspace=workspace,
                pattern=AllReduceFusionPattern.kAllReduce,
                output=graph_out,
            )
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        allreduce_fusion(
            input=x,
            workspace=workspace,
            pattern=AllReduceFusionPattern.kAllReduce,
            output=graph_out,
        )
    x.copy_(torch.randn(64, 1024, device="cuda", dtype=torch.bfloat16, generator=None) * (rank + 2))
    expected_replay = x.clone()
    dist.all_reduce(expected_replay, group=group)
    graph.replay()
    torch.cuda.synchronize()
    report = {
        "rank": rank,
        "eager_max_abs_diff": (eager - expected.float()).abs().max().item(),
        "replay_max_abs_diff": (graph_out.float() - expected_replay.float()).abs().max().item(),
        "replay_changed": bool((graph_out != out).any().item()),
        "max_abs_value": expected.float().abs().max().item(),
    }
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as fh:
        json.dump(report, fh)
    if hasattr(workspace, "destroy"):
        workspace.destroy()
    dist.destroy_process_group()


@pytest.mark.skipif(
    parse_version("0.6.10.post1") > INSTALLED, reason="needs FlashInfer >= 0.6.10.post1"
)
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_migrated_workspace_with_group_matches_all_reduce(tmp_path, shape: str) -> None:
    source = migrated(SHAPES[shape])
    assert "group=device_group" in source
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    torch.multiprocessing.spawn(_worker, args=(port, source, str(tmp_path)), nprocs=2, join=True)
    for rank in (0, 1):
        report = json.loads((tmp_path / f"rank{rank}.json").read_text())
        print(f"FI004 GPU proof ({shape}): {report}")
        # bf16 sums of two values: within a few ulps of the all-reduce's own result
        assert report["eager_max_abs_diff"] <= 0.0625, report
        assert report["replay_max_abs_diff"] <= 0.0625, report
        assert report["replay_changed"], report
