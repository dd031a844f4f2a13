"""FI005 on a GPU: the capture/replay pattern it writes really captures and replays a graph.

`CuteDslMoEWrapper.run()` needs an SM100 GPU, so the converted test runs here against a stand-in
wrapper whose `run()` launches real CUDA work (a small MoE: gating, top-k, two expert matmuls)
and, like 0.6.14's wrapper, returns a fresh tensor on every call. The legacy test (eager "graph"
runs) is converted by migrate-fi's engine, then executed: its replayed outputs must match the
eager wrapper, `run()` must be called only for the warm-ups and the capture (the outputs come
from replays), and replaying after new data is copied into the captured inputs must follow the
new data. Skipped, with the reason, without a CUDA GPU (CI has none).
"""

from __future__ import annotations

import sys
import textwrap
import types

import pytest

from migrate_fi.base.versions import parse_version
from migrate_fi.framework.rule import RunOptions
from migrate_fi.run.pipeline import Mode, process_source
from migrate_fi.run.registry import select

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch", reason="needs torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

LEGACY = textwrap.dedent(
    """
    import unittest

    import torch
    from flashinfer import CuteDslMoEWrapper


    def _run_wrapper(wrapper, tensors):
        return wrapper.run(tensors["x"], tensors["w_gate"], tensors["w1"], tensors["w2"])


    class TestMoE(unittest.TestCase):
        def test_v2_cuda_graph_parity(self):
            tensors = make_tensors()
            wrapper_args = dict(num_experts=8, top_k=2, hidden_size=256, intermediate_size=512)
            wrapper_no_graph = CuteDslMoEWrapper(**wrapper_args, use_cuda_graph=False)
            wrapper_graph = CuteDslMoEWrapper(**wrapper_args, use_cuda_graph=True, max_num_tokens=64)
            with torch.no_grad():
                out_no_graph = _run_wrapper(wrapper_no_graph, tensors)
                out_graph = _run_wrapper(wrapper_graph, tensors)
                out_graph2 = _run_wrapper(wrapper_graph, tensors)
            torch.testing.assert_close(out_no_graph, out_graph, atol=1e-2, rtol=1e-2)
            torch.testing.assert_close(out_graph, out_graph2, atol=1e-5, rtol=1e-5)
    """
)


class StandInMoEWrapper:
    """A MoE layer on real CUDA work; like 0.6.14's wrapper, run() allocates its output."""

    instances: list[StandInMoEWrapper] = []

    def __init__(
        self,
        num_experts,
        top_k,
        hidden_size,
        intermediate_size,
        use_cuda_graph=False,
        max_num_tokens=None,
    ):
        self.top_k = top_k
        self.calls = 0
        self.captured: tuple | None = None  # (static inputs, output) of the captured run
        StandInMoEWrapper.instances.append(self)

    def run(self, x, w_gate, w1, w2):
        self.calls += 1
        probs = torch.softmax(x @ w_gate, dim=-1)  # [T, E]
        weights, experts = torch.topk(probs, self.top_k, dim=-1)  # [T, K]
        hidden = torch.nn.functional.silu(torch.einsum("th,ehi->tei", x, w1))  # [T, E, I]
        per_expert = torch.einsum("tei,eih->teh", hidden, w2)  # [T, E, H]
        index = experts[..., None].expand(-1, -1, x.shape[1])
        out = (torch.gather(per_expert, 1, index) * weights[..., None]).sum(dim=1)  # [T, H]
        if torch.cuda.is_current_stream_capturing():
            self.captured = ((x, w_gate, w1, w2), out)
        return out


def make_tensors():
    g = torch.Generator(device="cuda").manual_seed(0)
    return {
        "x": torch.randn(64, 256, device="cuda", generator=g),
        "w_gate": torch.randn(256, 8, device="cuda", generator=g),
        "w1": torch.randn(8, 256, 512, device="cuda", generator=g) / 16,
        "w2": torch.randn(8, 512, 256, device="cuda", generator=g) / 16,
    }


def test_converted_test_captures_and_replays(monkeypatch: pytest.MonkeyPatch) -> None:
    from_v, to_v = parse_version("0.6.13"), parse_version("0.6.14")
    selection = select(from_v, to_v, ["FI005"])
    options = RunOptions(from_v, to_v, rules=selection.settings())
    result = process_source(
        LEGACY.encode(), "tests/test_moe.py", selection.rules, options, Mode.APPLY
    )
    assert result.error is None, result.error
    source = result.new_text
    assert source is not None and "torch.cuda.graph(graph)" in source, result.diagnostics
    print(source)

    # the converted test runs against the stand-in; its graphs are recorded to be replayed again
    fake = types.ModuleType("flashinfer")
    fake.CuteDslMoEWrapper = StandInMoEWrapper  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "flashinfer", fake)
    made: list[torch.cuda.CUDAGraph] = []

    class RecordingGraph(torch.cuda.CUDAGraph):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(torch.cuda, "CUDAGraph", RecordingGraph)
    StandInMoEWrapper.instances.clear()
    namespace: dict = {"make_tensors": make_tensors}
    exec(compile(source, "tests/test_moe.py", "exec"), namespace)
    test = namespace["TestMoE"]("test_v2_cuda_graph_parity")
    test.test_v2_cuda_graph_parity()  # its own assertions: replay 1 == eager, replays agree

    eager_wrapper, graph_wrapper = StandInMoEWrapper.instances
    assert eager_wrapper.calls == 1
    # 3 warm-ups and 1 capture; the two compared outputs came from replays, not from run()
    assert graph_wrapper.calls == 4
    assert len(made) == 1 and graph_wrapper.captured is not None
    (x, w_gate, w1, w2), captured_out = graph_wrapper.captured

    # the graph is real: new data copied into its static input, one more replay, and the output
    # follows the new data
    first = captured_out.clone()
    new_x = torch.randn_like(x) * 3
    x.copy_(new_x)
    made[0].replay()
    torch.cuda.synchronize()
    expected = StandInMoEWrapper(8, 2, 256, 512).run(new_x, w_gate, w1, w2)
    diff_new = (captured_out - expected).abs().max().item()
    diff_old = (captured_out - first).abs().max().item()
    print(
        f"FI005 GPU proof: after new input and replay, max|replayed - eager(new)| = {diff_new:.3e},"
        f" max|replayed - first replay| = {diff_old:.3e}; run() calls in the converted test:"
        f" graph-mode wrapper {graph_wrapper.calls} (3 warm-ups + 1 capture), eager"
        f" {eager_wrapper.calls}"
    )
    assert diff_new < 1e-3
    assert diff_old > 1e-2
