"""On CPU the profile reads a DDP job's all-reduce from DDP's own timers, with no comm hook of its own:
one real DDP module (gloo, one process) trained with ``no_sync`` accumulation under the profiler."""

from __future__ import annotations

import socket

import pytest
import torch
from torch import nn

import pitstop


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.skipif(not torch.distributed.is_available(), reason="torch.distributed")
def test_the_all_reduce_is_read_from_ddps_timers_once_per_synced_step():
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    # an in-process store, no TCP rendezvous: a clean-clone run (e96f70e+1) hung here, as the checkpoint
    # test's TCP rendezvous once did; one rank needs no network to find itself
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        torch.manual_seed(0)
        model = DDP(nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 4)))
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        steps = 12
        with pitstop.profile(drill_down=False) as prof:
            for _ in range(steps):
                opt.zero_grad()
                with model.no_sync():  # a micro-batch without the all-reduce: no stamps of its own
                    nn.functional.cross_entropy(model(torch.randn(8, 64)), torch.randint(0, 4, (8,))).backward()
                nn.functional.cross_entropy(model(torch.randn(8, 64)), torch.randint(0, 4, (8,))).backward()
                opt.step()
        assert prof.comm.timed is True
        assert getattr(model, "_comm_hooks", []) == []  # DDP's built-in all-reduce ran: no hook was added
        # one sample per synced step, read at the next step's synced forward: steps 2..11 (step 1 is
        # the warm-up, left out; the last step has no next forward)
        assert len(prof.comm.comm_s) == steps - 2
        assert all(c > 0 for c in prof.comm.comm_s)
        assert all(0 <= o <= c for o, c in zip(prof.comm.overlap_s, prof.comm.comm_s, strict=True))
        assert prof.report.to_dict()["comm"]["steps"] == steps - 2
    finally:
        dist.destroy_process_group()
