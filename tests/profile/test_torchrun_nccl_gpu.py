"""Issue 28 item 4: the torchrun paths on CUDA with NCCL (pytest -m gpu, two GPUs or more): the
profile of a DDP job per rank (the straggler named with its phase, the all-reduce timed by the
comm hook, which completes when the NCCL work is done), and the doctor's per-rank findings merged
over the NCCL process group. The same jobs as the gloo tests, one GPU per rank."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (pytest -m gpu)")]
two_gpus = pytest.mark.skipif(torch.cuda.device_count() < 2, reason="NCCL needs a GPU per rank: two GPUs")

SRC = str(Path(__file__).resolve().parents[2] / "src")
JOB = """
import os, time
import torch, torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

SLOW_RANK = int(os.environ.get("SLOW_RANK", "-1"))
BUG_RANK = int(os.environ.get("BUG_RANK", "-1"))
dist.init_process_group("nccl")
rank = dist.get_rank()
device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
torch.cuda.set_device(device)
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 10)).to(device), device_ids=[device])
opt = torch.optim.SGD(model.parameters(), lr=0.01)
kept = []
for step in range(60):
    if rank == SLOW_RANK:
        time.sleep(0.02)  # this rank's input path is slow
    x, y = torch.randn(256, 1024).to(device), torch.randint(0, 10, (256,)).to(device)
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    if rank == BUG_RANK:
        kept.append(loss)  # PIT102 on this rank only: every step's graph kept alive
dist.destroy_process_group()
"""


def torchrun(tmp_path: Path, port: int, command: list[str], nproc: int = 2,
             **env: str) -> tuple[dict, subprocess.CompletedProcess]:
    (tmp_path / "job.py").write_text(textwrap.dedent(JOB))
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(nproc),
                           "--master-port", str(port), "-m", "pitstop", *command, "--json", "out.json", "job.py"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=600,
                          env={**os.environ, "PYTHONPATH": SRC, **env})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads((tmp_path / "out.json").read_text()), proc


@two_gpus
def test_nccl_profile_names_the_straggler_and_times_the_all_reduce(tmp_path):
    doc, _ = torchrun(tmp_path, 29541, ["profile", "--no-drill-down"], SLOW_RANK="1")
    assert doc["clock"] == "CUDA events" and doc["distributed"]["world"] == 2
    straggler = next(v for v in doc["verdict"] if v["cause"] == "straggler")
    assert straggler["rank"] == 1, straggler
    assert all(r["comm_ms"] and r["comm_ms"] > 0 for r in doc["distributed"]["ranks"])


@two_gpus
def test_nccl_doctor_names_the_rank_with_the_bug(tmp_path):
    doc, _ = torchrun(tmp_path, 29542, ["doctor", "--fail-on", "never"], BUG_RANK="1")
    kept = [f for f in doc["findings"] if f["code"] == "PIT102"]
    assert kept and kept[0]["ranks"] == [1], doc["findings"]


def test_one_gpu_torchrun_job_profiled_and_doctored_over_nccl(tmp_path):
    """A one-GPU machine still runs the NCCL paths end to end: torchrun with one rank (a job of one
    rank is reported as one process: nothing to gather, no distributed section), its all-reduce timed
    by the comm hook; the doctor's finding found on it."""
    doc, _ = torchrun(tmp_path, 29543, ["profile", "--no-drill-down"], nproc=1)
    assert doc["clock"] == "CUDA events" and doc["distributed"] is None
    assert doc["comm"]["ms"] > 0 and doc["comm"]["steps"] > 0, doc["comm"]
    doc, _ = torchrun(tmp_path, 29544, ["doctor", "--fail-on", "never"], nproc=1, BUG_RANK="0")
    assert any(f["code"] == "PIT102" for f in doc["findings"]), doc["findings"]
