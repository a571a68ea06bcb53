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

SRC = str(Path(__file__).resolve().parents[2] / "src")
JOB = """
import os, time
import torch, torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset

SLOW_RANK = int(os.environ.get("SLOW_RANK", "-1"))


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
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step, (x, y) in enumerate(DataLoader(Rows(), batch_size=32)):
    if step == 40:
        break
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
dist.destroy_process_group()
"""


def torchrun_profile(tmp_path: Path, port: int, slow_rank: int) -> tuple[dict, subprocess.CompletedProcess]:
    (tmp_path / "job.py").write_text(textwrap.dedent(JOB))
    env = {**os.environ, "PYTHONPATH": SRC, "OMP_NUM_THREADS": "1", "SLOW_RANK": str(slow_rank),
           "PITSTOP_DOCTOR_DIR": str(tmp_path / "ranks")}
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-port",
                           str(port), "-m", "pitstop", "profile", "--json", "prof.json", "--no-drill-down", "job.py"],
                          capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads((tmp_path / "prof.json").read_text()), proc


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


@pytest.mark.skipif(sys.platform != "linux", reason="torchrun with gloo on localhost")
def test_a_clean_ddp_job_has_no_straggler(tmp_path):
    doc, _ = torchrun_profile(tmp_path, 29532, slow_rank=-1)
    assert doc["distributed"]["world"] == 2
    assert "straggler" not in [v["cause"] for v in doc["verdict"]]
    assert not doc["distributed"].get("straggler")
