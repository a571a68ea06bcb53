"""The profiler on CUDA: phases from CUDA events, host-to-device copies as their own phase, a
sync's wait at its line, and no device-wide synchronisation added (pytest -m gpu)."""

import pytest
import torch
from torch import nn

import pitstop

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (run with pytest -m gpu)")]


def test_cuda_phases_are_events_and_nothing_synchronises_the_device(monkeypatch):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    calls = []
    original = torch.cuda.synchronize
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: (calls.append(1), original(*a, **k))[1])
    with pitstop.profile(wait=2, active=2) as prof:
        for _ in range(12):
            x, y = torch.randn(512, 256).to("cuda"), torch.randint(0, 10, (512,)).cuda()
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            last = loss.item()  # a sync: its wait is measured at this line
    assert calls == [] and last > 0
    report = prof.report
    assert report.clock == "CUDA events"
    assert report.share("h2d") > 0 and report.share("forward") > 0
    assert any(r["kind"] == ".item()" and r["per_step"] == 1 for r in report.syncs)
    total = sum(p["median_ms"] for p in report.phases if p["median_ms"] is not None)
    assert total == pytest.approx(report.step_ms["median"], rel=0.05)
    assert report.top_ops.get("forward") and report.top_ops["forward"][0]["on"] == "device"
