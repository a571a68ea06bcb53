"""The profiler on CUDA: phases from CUDA events, host-to-device copies as their own phase, a
sync's wait at its line, and no device-wide synchronisation added (pytest -m gpu)."""

import traceback

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
    calls = []  # who synchronised the device: the files of the calling frames
    original = torch.cuda.synchronize

    def synchronize(*a, **k):
        calls.append([f.filename for f in traceback.extract_stack()[:-1]])
        return original(*a, **k)

    monkeypatch.setattr(torch.cuda, "synchronize", synchronize)
    with pitstop.profile(wait=2, active=2) as prof:
        for _ in range(12):
            x, y = torch.randn(512, 256).to("cuda"), torch.randint(0, 10, (512,)).cuda()
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            last = loss.item()  # a sync: its wait is measured at this line
    # pitstop adds no synchronisation; torch.profiler's own end of trace (the drill-down's one cycle)
    # synchronises once, to collect the device's activity (seen on an H200)
    assert last > 0 and len(calls) <= 1, calls
    assert all(any("profiler" in f and "pitstop" not in f for f in stack) for stack in calls), calls
    report = prof.report
    assert report.clock == "CUDA events"
    assert report.share("h2d") > 0 and report.share("forward") > 0
    assert any(r["kind"] == ".item()" and r["per_step"] == 1 for r in report.syncs)
    total = sum(p["median_ms"] for p in report.phases if p["median_ms"] is not None)
    assert total == pytest.approx(report.step_ms["median"], rel=0.05)
    assert report.top_ops.get("forward") and report.top_ops["forward"][0]["on"] == "device"


@pytest.mark.skipif(not torch.distributed.is_available() or not torch.distributed.is_nccl_available(),
                    reason="needs NCCL")
def test_a_cuda_ddp_jobs_all_reduce_is_timed_by_the_comm_hook():
    """One rank of NCCL on one GPU: the CUDA path times each bucket's all-reduce with pitstop's comm
    hook (DDP's CUDA timers would make the next forward wait), one sample per measured step."""
    import os
    import socket

    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("nccl", rank=0, world_size=1)
    try:
        torch.manual_seed(0)
        model = DDP(nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 10)).cuda(), device_ids=[0])
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        steps = 12
        with pitstop.profile(drill_down=False) as prof:
            for _ in range(steps):
                opt.zero_grad()
                x, y = torch.randn(256, 1024, device="cuda"), torch.randint(0, 10, (256,), device="cuda")
                nn.functional.cross_entropy(model(x), y).backward()
                opt.step()
        assert prof.comm.timed is True and not prof.comm._timers  # the hook, not DDP's timers
        assert prof.comm.comm_s and all(c > 0 for c in prof.comm.comm_s)
        assert all(0 <= o <= c for o, c in zip(prof.comm.overlap_s, prof.comm.comm_s, strict=True))
        assert prof.report.clock == "CUDA events"
    finally:
        dist.destroy_process_group()
