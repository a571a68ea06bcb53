"""Issue 28: ``torchrun -m pitstop profile`` on real torchrun jobs (gloo, 2 ranks, 1 thread each):
every rank measures its own steps, rank 0 gathers their summaries over the job's process group and
names the straggler with its phase; a clean DDP job gets no straggler verdict."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.fixtures.torchrun import finished

SRC = str(Path(__file__).resolve().parents[2] / "src")
JOB = """
import os, time
import torch, torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset

SLOW_RANK = int(os.environ.get("SLOW_RANK", "-1"))
OWN_HOOK = os.environ.get("OWN_HOOK") == "1"


class Rows(Dataset):
    def __len__(self):
        return 4096

    def __getitem__(self, i):
        if dist.get_rank() == SLOW_RANK:
            time.sleep(0.0015)  # this rank's input path is slow: 48 ms per batch of 32
        g = torch.Generator().manual_seed(i)
        return torch.randn(64, generator=g), torch.randint(0, 4, (), generator=g)


dist.init_process_group("gloo")
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 4)))
if OWN_HOOK:  # the job's own comm hook (fp16 compression): left as it is
    from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import fp16_compress_hook
    model.register_comm_hook(None, fp16_compress_hook)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step, (x, y) in enumerate(DataLoader(Rows(), batch_size=32)):
    if step == 40:
        break
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
print(f"rank {dist.get_rank()} comm hooks: {[hook.__name__ for hook, _ in getattr(model, '_comm_hooks', [])]}")
dist.destroy_process_group()
"""


def torchrun_profile(tmp_path: Path, port: int, slow_rank: int, own_hook: bool = False,
                     ) -> tuple[dict, subprocess.CompletedProcess]:
    (tmp_path / "job.py").write_text(textwrap.dedent(JOB))
    env = {**os.environ, "PYTHONPATH": SRC, "OMP_NUM_THREADS": "1", "SLOW_RANK": str(slow_rank),
           "PITSTOP_DOCTOR_DIR": str(tmp_path / "ranks"), "OWN_HOOK": "1" if own_hook else "0"}
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-port",
                           str(port), "-m", "pitstop", "profile", "--json", "prof.json", "--no-drill-down", "job.py"],
                          capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert finished(proc) and (tmp_path / "prof.json").exists(), proc.stderr[-3000:]
    return json.loads((tmp_path / "prof.json").read_text()), proc


# Only real torchrun jobs prove these: the gather over the job's process group, DDP's own timers.
@pytest.mark.skipif(sys.platform != "linux", reason="torchrun with gloo on localhost")
def test_a_slow_data_rank_is_named_with_its_phase(tmp_path):
    doc, proc = torchrun_profile(tmp_path, 29531, slow_rank=1)
    job = doc["distributed"]
    assert job["world"] == 2 and [r["rank"] for r in job["ranks"]] == [0, 1]
    straggler = next(v for v in doc["verdict"] if v["cause"] == "straggler")
    assert straggler["rank"] == 1 and straggler["phase"] == "data", straggler
    assert job["straggler"]["rank"] == 1
    assert job["ranks"][0]["comm_wait_ms"] > job["ranks"][1]["comm_wait_ms"]  # rank 0 waits for rank 1
    assert proc.stdout.count("straggler on rank 1") == 1  # printed once, by rank 0
    for rank in job["ranks"]:  # the all-reduce timed on every rank: its time, its overlap
        assert rank["comm_ms"] > 0 and 0.0 <= rank["comm_overlapped"] <= 1.0, rank
    assert doc["comm"]["ms"] > 0 and doc["comm"]["steps"] >= 30
    assert "all-reduce ms" in proc.stdout
    # timed by DDP's own timers: the job runs DDP's built-in all-reduce, no comm hook of pitstop's
    assert proc.stdout.count("comm hooks: []") == 2, proc.stdout[-2000:]


@pytest.mark.skipif(sys.platform != "linux", reason="torchrun with gloo on localhost")
def test_the_jobs_own_comm_hook_is_left_as_it_is_and_still_timed(tmp_path):
    """A job that registered its own comm hook (fp16 compression) keeps it, and trains as before; on
    CPU its all-reduce is timed all the same, by DDP's own timers (pitstop adds no hook). No rank is
    slow in it: a clean DDP job gets no straggler verdict."""
    doc, proc = torchrun_profile(tmp_path, 29533, slow_rank=-1, own_hook=True)
    assert doc["steps"] == 40 and doc["exit"]["status"] == "ok"
    assert proc.stdout.count("comm hooks: ['fp16_compress_hook']") == 2, proc.stdout[-2000:]
    assert doc["comm"]["ms"] > 0 and doc["comm"]["steps"] >= 30
    for rank in doc["distributed"]["ranks"]:
        assert rank["comm_ms"] > 0 and 0.0 <= rank["comm_overlapped"] <= 1.0 and rank["comm_wait_ms"] is not None
    assert doc["distributed"]["world"] == 2
    assert "straggler" not in [v["cause"] for v in doc["verdict"]]
    assert not doc["distributed"].get("straggler")


def test_comm_bound_when_every_rank_waits_for_the_all_reduce():
    """The verdict's rule on given rank summaries: every rank waits over 20% of its step for the
    all-reduce and none works longer than the others: comm-bound, with DDP's knobs as the action."""
    from pitstop.profile.ranks import analyze

    def rank(step, wait, comm_ms=None, overlapped=None):
        return {"step_ms": step, "phases": {"data": 1.0, "forward": 10.0, "backward": 10.0 + wait, "optimizer": 2.0},
                "comm_wait_ms": wait, "comm_ms": comm_ms, "comm_overlapped": overlapped, "ddp": {
                    "bucket_cap_mb": 25.0, "gradient_as_bucket_view": False, "static_graph": False}}

    section, found = analyze([rank(40.0, 15.0, 30.0, 0.5), rank(40.5, 15.5, 31.0, 0.5)])
    assert [v["cause"] for v in found] == ["comm-bound"] and "straggler" not in section
    assert "gradient_as_bucket_view=True" in found[0]["action"] and "no_sync" in found[0]["action"]
    assert "the all-reduce takes 30.5 ms per step, 50% of it overlapped" in found[0]["evidence"]
    _, quiet = analyze([rank(30.0, 1.0), rank(30.2, 1.2)])
    assert quiet == []
