"""The doctor on CUDA: values stay on the device and are read every sync_every steps (pytest -m gpu)."""

import pytest
import torch
from torch import nn

import pitstop

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (run with pytest -m gpu)")]


def loop(model, opt, steps, nan_at=None):
    for i in range(steps):
        opt.zero_grad()
        x = torch.randn(16, 32, device="cuda")
        if i == nan_at:
            x[0, 0] = float("nan")
        nn.functional.mse_loss(model(x), torch.zeros(16, 1, device="cuda")).backward()
        opt.step()


def test_cuda_defers_reads_and_still_reports_at_the_end():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    dr = pitstop.Doctor(model, opt).attach()
    loop(model, opt, 10, nan_at=7)
    assert dr.sync_every == 50 and not dr.findings  # nothing read yet: no per-step synchronisation
    dr.detach()  # reads what is pending
    found = {f.code: f for f in dr.report()}
    assert found["PIT106"].step == 8


def test_cuda_guard_reads_every_step_and_keeps_weights_finite():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1)).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    with pitstop.Doctor(model, opt, guard=True) as dr:
        loop(model, opt, 6, nan_at=3)
    assert dr.report().skipped_steps == [4]
    assert all(torch.isfinite(p).all() for p in model.parameters())
