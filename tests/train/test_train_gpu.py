"""CUDA paths (``pytest -m gpu`` where a GPU is lent): fp16 autocast with a GradScaler, CUDA
graphs through compile's reduce-overhead, CUDA-event timing and the scaler's skipped steps."""

import pytest
import torch
from torch import nn
from train_helpers import namespace

from pitstop.engine.source import make_source
from pitstop.engine.timer import TimingPolicy
from pitstop.train.config import NAIVE, TrainConfig
from pitstop.train.group import TrainGroup
from pitstop.train.problem import LossSpec, OptimizerSpec, ProblemRequest
from pitstop.train.settings import TrainSettings

pytestmark = pytest.mark.gpu


def mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))


def test_fp16_with_grad_scaler_trains_on_cuda(tmp_path):
    ns = namespace(TrainConfig(precision="fp16-autocast"), tmp_path, batch_size=32, device="cuda")
    assert ns["SCALER"] is not None
    model, opt = ns["apply"](mlp())
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
    losses = [float(ns["train_step"](model, opt, ((x,), y))) for _ in range(30)]
    assert next(model.parameters()).is_cuda and losses[-1] < losses[0]
    assert ns["SCALER"].get_scale() > 0


def test_reduce_overhead_compiles_with_cuda_graphs(tmp_path):
    ns = namespace(TrainConfig(compile="reduce-overhead"), tmp_path, batch_size=32, device="cuda")
    model, opt = ns["apply"](mlp())
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
    losses = [float(ns["train_step"](model, opt, ((x,), y))) for _ in range(10)]
    assert losses[-1] < losses[0]


def group_rows(device: str, configs: list[TrainConfig]) -> list:
    """The naive step and ``configs`` measured by a group of workers on ``device``, as ``pitstop train`` does."""
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
    request = ProblemRequest(OptimizerSpec.named("adamw", lr=1e-3), LossSpec.of(None, True), y)
    group = TrainGroup(make_source(mlp(), (x,), 0), TrainSettings(batch_size=32, threads=1, device=device), request)
    rows: list = []
    try:
        group.run([NAIVE, *configs], rows, replicas=1, trajectory=True,
                  policy=TimingPolicy(budget_s=0.5, min_samples=5, target=0.1))
    finally:
        group.close()
    return rows


def test_group_on_cuda_times_with_events_and_counts_scaler_skips():
    rows = group_rows("cuda", [TrainConfig(precision="fp16-autocast")])
    naive, fp16 = rows
    assert naive.status == "ok" and fp16.status in ("ok", "rejected"), fp16.reason
    assert "scaler" in fp16.fidelity and fp16.fidelity["scaler"]["steps"] >= 20
    assert fp16.samples_s
    assert fp16.peak_memory_bytes is None or fp16.peak_memory_bytes > 0


CUDA_SCRIPT = '''
import argparse
import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--iters", type=int, default=60)
args = parser.parse_args()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(2048, 4096), nn.GELU(), nn.Linear(4096, 4096), nn.GELU(), nn.Linear(4096, 16)).cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
data = torch.randn(4096, 2048, device="cuda")
labels = data[:, :16].argmax(dim=1)
for step in range(args.iters):
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(data), labels)
    loss.backward()
    optimizer.step()
print(f"final loss {loss.item():.4f}")
'''


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (run with pytest -m gpu)")
def test_script_mode_on_cuda_times_the_gpu_work_and_patches_bf16(tmp_path):
    """A CUDA script (fp32, matmul-bound): each variant's step holds its kernels, not only their
    launches (every MFU at most 1; launches alone would put it far above the measured matmul peak),
    and bf16 autocast, native on the GPU, wins; the patch applies and the patched script trains."""
    import json
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    (tmp_path / "cuda_loop.py").write_text(CUDA_SCRIPT)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    proc = subprocess.run([sys.executable, "-m", "pitstop", "train", "--time-budget-s", "60", "--techniques",
                           "precision,optimizer", "--replicas", "1", "--json", "t.json", "--patch", "speedup.diff",
                           "cuda_loop.py", "--iters", "300"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    doc = json.loads((tmp_path / "t.json").read_text())
    assert doc["script"]["flops_per_step"] > 0
    ok = [r for r in doc["results"] if r["status"] == "ok"]
    fractions = [r["mfu"]["fraction"] for r in ok if r.get("mfu")]
    assert fractions and all(f is not None and 0 < f <= 1.0 for f in fractions), [r.get("mfu") for r in ok]
    assert "bf16" in doc["winner"]["variant"], doc["winner"]
    subprocess.run(["git", "apply", "speedup.diff"], cwd=tmp_path, check=True)
    assert "torch.autocast('cuda', dtype=torch.bfloat16)" in (tmp_path / "cuda_loop.py").read_text()
    after = subprocess.run([sys.executable, "cuda_loop.py", "--iters", "20"], cwd=tmp_path, capture_output=True,
                           text=True, timeout=300)
    assert after.returncode == 0 and "final loss" in after.stdout, after.stderr[-2000:]
