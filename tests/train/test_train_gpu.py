"""CUDA paths (``pytest -m gpu`` where a GPU is lent): fp16 autocast with a GradScaler, CUDA
graphs through compile's reduce-overhead, CUDA-event timing and the scaler's skipped steps."""

import pytest
import torch
from torch import nn
from train_helpers import namespace

from pitstop.bench.source import ModuleSource
from pitstop.bench.timer import TimingPolicy
from pitstop.models.inputs import Inputs
from pitstop.train.config import NAIVE, TrainConfig
from pitstop.train.group import TrainGroup
from pitstop.train.problem import LossSpec, OptimizerSpec, Problem
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


def test_group_on_cuda_times_with_events_and_counts_scaler_skips():
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
    source = ModuleSource(mlp(), Inputs((x,)), "mlp")
    problem = Problem(OptimizerSpec.named("adamw", lr=1e-3), LossSpec.of(None, True), target=y)
    group = TrainGroup(source, TrainSettings(batch_size=32, threads=1, device="cuda"), problem)
    rows = []
    try:
        group.run([NAIVE, TrainConfig(precision="fp16-autocast")], rows, replicas=1, trajectory=True,
                  policy=TimingPolicy(budget_s=0.5, min_samples=5, target=0.1))
    finally:
        group.close()
    naive, fp16 = rows
    assert naive.status == "ok" and fp16.status in ("ok", "rejected"), fp16.reason
    assert "scaler" in fp16.fidelity and fp16.fidelity["scaler"]["steps"] >= 20
    assert fp16.samples_s
    assert fp16.peak_memory_bytes is None or fp16.peak_memory_bytes > 0
