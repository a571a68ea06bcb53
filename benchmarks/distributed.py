"""pitstop on a torchrun job (issue 28), on this machine: a DDP job of 2 ranks on gloo.

1. The profile's overhead: the job run plain and under `torchrun -m pitstop profile --no-drill-down`,
   interleaved over --rounds rounds; the job times its own steps (each rank appends the time of
   every optimizer step to a file), so both runs are measured the same way. Goal: <= 3%.
2. The trained patch: `pitstop train --nproc-per-node 2 --patch` on the job, the patch applied with
   git apply, then the original and the patched job run whole, interleaved; the speed-up of the
   median step (the slowest rank's, as the job waits for it).

    python benchmarks/distributed.py [--rounds 5] [--budget-s 240] [--steps 200]
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1] / "src")
JOB = """
import os, sys, time
import torch, torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

steps = int(sys.argv[1])
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(512, 1024), nn.GELU(), nn.Linear(1024, 1024), nn.GELU(), nn.Linear(1024, 10)))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(rank)
log = open(f"{os.environ['STEP_LOG']}.rank{rank}", "a")
for step in range(steps):
    x = torch.randn(64, 512, generator=g)
    y = x[:, :10].argmax(1)
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    log.write(f"{time.perf_counter():.6f}\\n")
log.close()
dist.destroy_process_group()
"""


def run(folder: Path, log: Path, steps: int, profiled: bool, port: int) -> float:
    """One whole job; the median step (max over ranks of each step's interval, first 10 left out)."""
    head = ["-m", "pitstop", "profile", "--no-drill-down", "--json", str(folder / "p.json")] if profiled else []
    env = {**os.environ, "PYTHONPATH": SRC, "OMP_NUM_THREADS": "1", "STEP_LOG": str(log)}
    for path in folder.glob(f"{log.name}.rank*"):
        path.unlink()
    subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-port",
                    str(port), *head, "job.py", str(steps)], cwd=folder, env=env, check=True, capture_output=True,
                   timeout=900)
    per_rank = [[float(t) for t in p.read_text().split()] for p in sorted(folder.glob(f"{log.name}.rank*"))]
    gaps = [[b - a for a, b in itertools.pairwise(ts)][10:] for ts in per_rank]
    return statistics.median(max(g[i] for g in gaps) for i in range(min(map(len, gaps))))


def overhead(folder: Path, rounds: int, steps: int) -> None:
    plain, profiled = [], []
    for r in range(rounds):
        for mode in (False, True) if r % 2 == 0 else (True, False):
            (profiled if mode else plain).append(run(folder, folder / "steps", steps, mode, 29601 + r))
    ratio = statistics.median(profiled) / statistics.median(plain)
    print(f"profile overhead: plain {statistics.median(plain) * 1e3:.2f} ms/step, profiled "
          f"{statistics.median(profiled) * 1e3:.2f} ms/step: x{ratio:.3f} ({(ratio - 1):+.1%}; goal <= +3%) over "
          f"{rounds} interleaved rounds; load average {os.getloadavg()[0]:.2f}")


def trained(folder: Path, rounds: int, steps: int, budget_s: float) -> None:
    subprocess.run(["git", "init", "-q"], cwd=folder, check=True)
    env = {**os.environ, "PYTHONPATH": SRC, "OMP_NUM_THREADS": "1", "STEP_LOG": str(folder / "search-steps")}
    proc = subprocess.run([sys.executable, "-m", "pitstop", "train", "--nproc-per-node", "2", "--time-budget-s",
                           str(budget_s), "--patch", "ddp.diff", "--json", "t.json", "job.py", str(steps * 3)],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=int(budget_s * 4) + 600)
    print(f"pitstop train --nproc-per-node 2: exit {proc.returncode}; "
          + (proc.stdout.strip().splitlines() or ["(no output)"])[-1][:300])
    patched = folder / "patched"
    patched.mkdir()
    (patched / "job.py").write_text((folder / "job.py").read_text())
    if not (folder / "ddp.diff").exists():
        print("no patch: the unmodified job stays")
        return
    subprocess.run(["git", "apply", "--directory", "patched", str(folder / "ddp.diff")], cwd=folder, check=True)
    print("patch:\n" + textwrap.indent((folder / "ddp.diff").read_text(), "  "))
    original, edited = [], []
    for r in range(rounds):
        for which in ("original", "patched") if r % 2 == 0 else ("patched", "original"):
            where = folder if which == "original" else patched
            (original if which == "original" else edited).append(run(where, where / "steps", steps, False,
                                                                     29651 + r))
    print(f"patched job: x{statistics.median(original) / statistics.median(edited):.2f} faster per step "
          f"({statistics.median(original) * 1e3:.2f} -> {statistics.median(edited) * 1e3:.2f} ms, {rounds} rounds "
          f"interleaved; load average {os.getloadavg()[0]:.2f})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--budget-s", type=float, default=240.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="pitstop-distributed-") as tmp:
        folder = Path(tmp)
        (folder / "job.py").write_text(textwrap.dedent(JOB))
        overhead(folder, args.rounds, args.steps)
        trained(folder, args.rounds, args.steps, args.budget_s)


if __name__ == "__main__":
    main()
