"""CUDA code paths: event timing, allocator peak memory, device placement. Run with `pytest -m gpu`."""

import pytest
import torch

import pitstop
from pitstop.engine.peak import peak_bytes
from pitstop.engine.worker import CudaEventTimer

pytestmark = pytest.mark.gpu


def test_cuda_event_timer_times_gpu_work():
    a = torch.randn(2048, 2048, device="cuda")
    times = CudaEventTimer(lambda: a @ a, sync=torch.cuda.synchronize).times(5)
    assert len(times) == 5 and all(t > 0 for t in times)


def test_cuda_peak_memory_is_the_allocator_peak():
    n = 256 * 2**20

    def call():
        return torch.empty(n // 4, device="cuda").fill_(1).sum()

    peak, how = peak_bytes(call, torch.device("cuda"))
    assert how == "cuda max_memory_allocated" and n <= peak <= n + 2**20


def test_bench_on_cuda_in_workers(models_py):
    result = pitstop.bench(f"{models_py}:tiny", "float32[B,16]", batch_sizes=[8], device="cuda", budget_s=0.5,
                           replicas=1)
    assert result.environment["gpu"]["name"] and result.environment["device"] == "cuda"
    rows = {r.variant: r for r in result.rows}
    assert all(r.status == "ok" and r.samples_s for r in rows.values())
    assert rows["eval+grad"].activation_bytes > 0 and rows["eval+no_grad"].activation_bytes == 0
    assert all(r.peak_memory_bytes is not None for r in rows.values())


def test_zoo_cnn_on_cuda_matches_cpu_reference_closely():
    result = pitstop.bench("zoo:cnn", batch_sizes=[16], device="cuda", budget_s=0.5, replicas=1,
                           variants=["eval+no_grad", "eval+inference_mode"])
    assert all(r.status == "ok" for r in result.rows)


def test_fp16_autocast_and_cuda_graphs_run_on_cuda(tmp_path):
    from pitstop.bench.variants.config import parse_variant
    from pitstop.bench.variants.handlers import Target, apply, gate
    from pitstop.models.inputs import Inputs

    target = Target.detect("cuda", torch.nn.Linear(8, 8), [2])
    assert gate(parse_variant("eval+inference_mode+fp16-autocast"), target) is None
    assert "CPU only" in gate(parse_variant("eval+inference_mode+int8-dynamic"), target)
    x = torch.randn(4, 64, device="cuda")
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU()).cuda()
    fast, _ = apply(parse_variant("eval+inference_mode+fp16-autocast"), target, 1, model, Inputs((x,)), tmp_path)
    assert fast(x).dtype == torch.float16
    fast, _ = apply(parse_variant("eval+no_grad+compile-reduce-overhead"), target, 1, model, Inputs((x,)),
                    tmp_path / "g")
    for _ in range(3):
        y = fast(x)
    assert torch.allclose(y.float(), model(x).float(), atol=1e-3)


def test_optimize_on_cuda_in_workers(models_py):
    fast = pitstop.optimize(f"{models_py}:tiny_conv", device="cuda", techniques=("precision", "compile"),
                            time_budget_s=60, replicas=1)
    rows = {r.variant: r for _, r in fast.report.candidates()}
    assert rows["eval+inference_mode+fp16-autocast"].status in ("ok", "rejected")
    assert rows["eval+inference_mode+compile-reduce-overhead"].status != "skipped"
    assert fast.report.environment["device"] == "cuda"
