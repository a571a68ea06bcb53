"""pitstop on a torchrun job (issue 28), on this machine: a DDP job of 2 ranks on gloo.

1. The profile's overhead: the job run plain and under `torchrun -m pitstop profile --no-drill-down`,
   interleaved over --rounds rounds; the job times its own steps (each rank appends the time of
   every optimizer step to a file), so both runs are measured the same way. Goal: <= 3%.
   And in one process (--only in-process): on both ranks, blocks of steps alternate between two
   identical DDP jobs, one plain and one under pitstop.profile() attached for its blocks (which job
   is made first alternates between --runs runs); the ratio with its bootstrap 95% interval.
   With `--in-rank`, a third side joins the rounds: the same profiler run in the rank's own process
   (`pitstop.profile.script.run_profile`, what the CLI's child runs, with no waiting parent and no
   child): which part of the whole-process cost is the profiler in the rank, and which the CLI's
   process per rank.
   And taking turns (--only turns, the headline): the plain job and the job under the CLI run at the
   same time as two whole torchrun jobs, each rank handing the cores to the same rank of the other
   job every --block-steps steps (--runs runs of --blocks turns per side): whole processes, but the
   machine's drift over seconds meets both sides alike, so the interval is a few times narrower.
   With --versus, the second side is another thing against the same plain job: the profiler
   attached in the script itself (api, api-nosync), the doctor's session alone, or the plain job
   again (an A/A run: the noise floor of the method).
2. The trained patch: `pitstop train --nproc-per-node 2 --patch` on the job, the patch applied with
   git apply, then the original and the patched job run whole, interleaved; the speed-up of the
   median step (the slowest rank's, as the job waits for it).

    python benchmarks/distributed.py [--rounds 5] [--budget-s 240] [--steps 200] [--runs 6] [--blocks 16]
        [--block-steps 20] [--pin] [--malloc as-is|fixed] [--in-rank]
        [--versus cli|api|api-nosync|session|plain] [--only overhead|turns|in-process|trained]
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1] / "src")
SETUP = """
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(512, 1024), nn.GELU(), nn.Linear(1024, 1024), nn.GELU(), nn.Linear(1024, 10)))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(rank)
"""
"""The job's model, optimizer and data on every rank (JOB and TURNS)."""
STEP = """
x = torch.randn(64, 512, generator=g)
y = x[:, :10].argmax(1)
opt.zero_grad()
loss = nn.functional.cross_entropy(model(x), y)
loss.backward()
opt.step()
"""
"""One training step of the job."""
JOB = """
import os, resource, sys, time
import torch, torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

steps = int(sys.argv[1])
if os.environ.get("PIN_RANKS"):  # every thread of this rank on one core (--pin): no migrations
    core = sorted(os.sched_getaffinity(0))[int(os.environ["LOCAL_RANK"]) % len(os.sched_getaffinity(0))]
    for task in os.listdir("/proc/self/task"):
        os.sched_setaffinity(int(task), {core})
""" + SETUP + """log = open(f"{os.environ['STEP_LOG']}.rank{rank}", "a")
for step in range(steps):
""" + textwrap.indent(STEP, "    ") + """    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    log.write(f"{time.perf_counter():.6f} {time.process_time():.6f} {faults}\\n")
log.close()
dist.destroy_process_group()
"""


BLOCKS = """
import os, sys, time
import torch, torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
import pitstop

blocks, per_block = int(sys.argv[1]), int(sys.argv[2])
dist.init_process_group("gloo")
rank = dist.get_rank()


def job():
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(512, 1024), nn.GELU(), nn.Linear(1024, 1024), nn.GELU(),
                              nn.Linear(1024, 10)))
    return model, torch.optim.AdamW(model.parameters(), lr=1e-3)


first, second = job(), job()  # two identical DDP jobs (DDP's timers stay on for the profiled one); which is
sides = ({"plain": first, "profiled": second} if sys.argv[3] == "0"  # profiled alternates between runs
         else {"plain": second, "profiled": first})
profiler = pitstop.profile(drill_down=False)
g = torch.Generator().manual_seed(rank)
log = open(f"{os.environ['STEP_LOG']}.rank{rank}", "w")
for block in range(blocks):
    for side in ("plain", "profiled") if block % 2 == 0 else ("profiled", "plain"):
        model, opt = sides[side]
        if side == "profiled":
            profiler.attach()
        last = time.perf_counter()
        for step in range(per_block):
""" + textwrap.indent(STEP, "            ") + """            now = time.perf_counter()
            if step >= 2:  # the first steps of a block: the switch between the two jobs' memory
                log.write(f"{side} {block} {now - last:.6f}\\n")
            last = now
        if side == "profiled":
            profiler.detach()
log.close()
if rank == 0:  # what the profiled side saw: its steps, and whether its all-reduce was timed
    print(f"profiled side: all-reduce timed: {profiler.comm.timed}, in {len(profiler.comm.comm_s)} steps")
dist.destroy_process_group()
"""


def in_process(folder: Path, runs: int, blocks: int, per_block: int) -> None:
    """Both sides in the same two ranks, in alternating blocks (the way benchmarks/doctor_overhead.py
    does it): what a profiled step costs, without the spread between one process and the next. Each
    side is its own DDP job (a comm hook cannot be taken off again), and which of the two is made
    first alternates from run to run (the second one made can be faster or slower for its memory)."""
    from pitstop.stats import speedup_groups

    (folder / "blocks.py").write_text(textwrap.dedent(BLOCKS))
    env = {**os.environ, "PYTHONPATH": SRC, "OMP_NUM_THREADS": "1", "STEP_LOG": str(folder / "blocks")}
    load = os.getloadavg()[0]
    groups: dict[str, list[list[float]]] = {"plain": [], "profiled": []}
    seen: list[str] = []
    for run_ in range(runs):
        proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                               "--master-port", str(29690 + run_), "blocks.py", str(blocks), str(per_block),
                               str(run_ % 2)], cwd=folder, env=env, check=True, capture_output=True, text=True,
                              timeout=1800)
        seen += [line for line in proc.stdout.splitlines() if line.startswith("profiled side")]
        rows = [line.split() for rank in (0, 1) for line in (folder / f"blocks.rank{rank}").read_text().splitlines()]
        steps: dict[tuple[str, str], list[float]] = {}
        for side, block, seconds in rows:  # rank 0's rows, then rank 1's: the step is the slowest rank's
            steps.setdefault((side, block), []).append(float(seconds))
        for (side, _), both in sorted(steps.items(), key=lambda kv: int(kv[0][1])):
            half = len(both) // 2
            groups[side].append([max(a, b) for a, b in zip(both[:half], both[half:], strict=True)])
    ratio = speedup_groups(groups["profiled"], groups["plain"])  # >1: the profiled step is slower
    noise = "within noise" if ratio.ci95[0] <= 1.0 <= ratio.ci95[1] else "beyond noise"
    plain = statistics.median(t for g in groups["plain"] for t in g)
    profiled = statistics.median(t for g in groups["profiled"] for t in g)
    print(f"profile overhead, in-process: plain {plain * 1e3:.2f} ms/step, profiled {profiled * 1e3:.2f} ms/step: "
          f"x{ratio.median:.3f} [{ratio.ci95[0]:.3f}-{ratio.ci95[1]:.3f}] ({noise}; goal <= x1.03) over "
          f"{runs} runs of {blocks} blocks of {per_block} steps per side, interleaved; load average {load:.2f} before, "
          f"{os.getloadavg()[0]:.2f} after; {seen[-1] if seen else 'profiled side: not reported'}")


TURNS = """
import os, sys, time
import torch, torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

blocks, per_block = int(sys.argv[1]), int(sys.argv[2])
side, other, first = os.environ["SIDE"], os.environ["OTHER"], os.environ["FIRST"] == "1"
versus = os.environ.get("VERSUS", "cli")  # what the second side is (--versus): the CLI's is attached by the CLI
if side == "profiled" and versus in ("api", "api-nosync", "session"):  # attached here, before the job is built
    import pitstop
    if versus == "session":
        from pitstop.hooks.session import Session
        held = Session().attach()  # the session's hooks alone, no profiler consumer
    else:
        held = pitstop.profile(drill_down=False, syncs=versus == "api").attach()
""" + SETUP + """baton = os.environ["BATON"]
mine = os.open(f"{baton}/to_{side}.{rank}", os.O_RDWR)  # O_RDWR: a FIFO opened without waiting for a writer
theirs = os.open(f"{baton}/to_{other}.{rank}", os.O_RDWR)
if not first:
    os.write(theirs, b"r")  # ready: the first side starts only once this one is built (no start-up beside it)
log = open(f"{os.environ['STEP_LOG']}.rank{rank}", "w")
for block in range(blocks):
    os.read(mine, 1)  # wait for the turn: a blocking read costs the running side nothing
    last, cpu = time.perf_counter(), time.process_time()
    for step in range(per_block):
""" + textwrap.indent(STEP, "        ") + """        now, now_cpu = time.perf_counter(), time.process_time()
        if step >= 2:  # the first steps of a turn: caches refilled after the other job's turn
            log.write(f"{block} {now - last:.6f} {now_cpu - cpu:.6f}\\n")
        last, cpu = now, now_cpu
    os.write(theirs, b"t")
log.close()
dist.destroy_process_group()
"""


VERSUS = {"cli": "profiled (CLI)", "api": "profiled (pitstop.profile() in the script)",
          "api-nosync": "profiled (pitstop.profile(syncs=False) in the script)",
          "session": "the doctor's session alone (its hooks, no profiler)", "plain": "plain again (A/A)"}
"""The second side of --only turns (--versus): what it measures against the plain job."""


def turns(folder: Path, runs: int, blocks: int, per_block: int, malloc: str = "as-is", versus: str = "cli") -> None:
    """Whole processes taking turns: the plain job and the job under `torchrun -m pitstop profile`
    run at the same time as two torchrun jobs, and each rank of one hands the cores to the same rank
    of the other every ``per_block`` steps (a named pipe per direction and rank; the waiting job
    blocks in a read). Everything that differs between whole processes stays (pitstop's imports, the
    script run by its exec path, the session attached from the start, the CLI's parent per rank),
    while the machine's drift over seconds (the same process's CPU per step moves by 20-40% on this
    VM from one minute to the next) meets both sides alike. Which side goes first alternates by run.
    ``versus`` other than "cli": the second side is the same job with the profiler (or the session
    alone, or nothing: an A/A run) attached in the script's own process, not under the CLI."""
    from pitstop.stats import median_ci, speedup_groups

    (folder / "turns.py").write_text(textwrap.dedent(TURNS))
    load = os.getloadavg()[0]
    groups: dict[str, list[list[float]]] = {"plain": [], "profiled": []}
    cpu: dict[str, list[float]] = {"plain": [], "profiled": []}
    for run_ in range(runs):
        first = "plain" if run_ % 2 == 0 else "profiled"
        for fifo in folder.glob("to_*"):
            fifo.unlink()
        for name in groups:
            for rank in (0, 1):
                os.mkfifo(folder / f"to_{name}.{rank}")
        procs = {}
        for name in ("plain", "profiled"):
            env = {**os.environ, "PYTHONPATH": SRC, "OMP_NUM_THREADS": "1", "STEP_LOG": str(folder / f"turns-{name}"),
                   "SIDE": name, "OTHER": "profiled" if name == "plain" else "plain", "BATON": str(folder),
                   "FIRST": "1" if name == first else "0", "VERSUS": versus,
                   **(MALLOC_FIXED if malloc == "fixed" else {})}
            head = (["-m", "pitstop", "profile", "--no-drill-down", "--json", str(folder / "t.json")]
                    if name == "profiled" and versus == "cli" else [])
            procs[name] = subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                                            "--master-port", str(29710 + 2 * run_ + (name == "profiled")), *head,
                                            "turns.py", str(blocks), str(per_block)], cwd=folder, env=env,
                                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for name, proc in procs.items():
            _, err = proc.communicate(timeout=1800)
            logs = [folder / f"turns-{name}.rank{rank}" for rank in (0, 1)]
            complete = all(log.exists() and len(log.read_text().splitlines()) == blocks * max(0, per_block - 2)
                           for log in logs)  # every step logged: an abort at exit (torch 2.13's gloo) costs nothing
            if proc.returncode and not complete:
                raise SystemExit(f"the {name} job failed (exit {proc.returncode}): {err.strip()[-600:]}")
        for name in groups:
            rows = [[line.split() for line in (folder / f"turns-{name}.rank{rank}").read_text().splitlines()]
                    for rank in (0, 1)]
            by_block: dict[str, list[float]] = {}
            for a, b in zip(*rows, strict=True):  # the step is the slower rank's
                by_block.setdefault(a[0], []).append(max(float(a[1]), float(b[1])))
                cpu[name].append((float(a[2]) + float(b[2])) / 2)
            groups[name] += list(by_block.values())
    ratio = speedup_groups(groups["profiled"], groups["plain"])  # >1: the profiled step is slower
    noise = "within noise" if ratio.ci95[0] <= 1.0 <= ratio.ci95[1] else "beyond noise"
    paired = [statistics.median(b) / statistics.median(a) for a, b in zip(groups["plain"], groups["profiled"],
                                                                             strict=True)]
    lo, hi = median_ci(paired)
    plain_ms = statistics.median(t for g in groups["plain"] for t in g) * 1e3
    prof_ms = statistics.median(t for g in groups["profiled"] for t in g) * 1e3
    how = ", allocator fixed" if malloc == "fixed" else ""
    print(f"profile overhead, whole processes taking turns{how}: plain {plain_ms:.2f} ms/step, {VERSUS[versus]} "
          f"{prof_ms:.2f} ms/step: x{ratio.median:.3f} [{ratio.ci95[0]:.3f}-{ratio.ci95[1]:.3f}] ({noise}; goal "
          f"<= x1.03) over {runs} runs of {blocks} turns of {per_block} steps per side; load average {load:.2f} "
          f"before, {os.getloadavg()[0]:.2f} after")
    plain_cpu, prof_cpu = statistics.median(cpu["plain"]), statistics.median(cpu["profiled"])
    print(f"  paired by turn: x{statistics.median(paired):.3f} [{lo:.3f}-{hi:.3f}]; CPU per step (mean of ranks): "
          f"plain {plain_cpu * 1e3:.2f} ms, profiled {prof_cpu * 1e3:.2f} ms, x{prof_cpu / plain_cpu:.3f}")


IN_RANK = """
import sys
from pitstop.profile.script import run_profile
from pitstop.profile.settings import ProfileSettings

report, code = run_profile(sys.argv[1], sys.argv[2:], ProfileSettings(drill_down=False))
sys.exit(code)
"""


MALLOC_FIXED = {"MALLOC_MMAP_THRESHOLD_": str(256 << 20), "MALLOC_TRIM_THRESHOLD_": str(1 << 30)}
"""glibc's allocator held in one state (--malloc fixed): every tensor of this job from the heap, and the
heap never given back. As it is, glibc moves its mmap threshold up whenever a mapped block is freed, so
whether a step's 4 MB temporaries are mapped afresh (a page fault per 4 KiB page, ~2,000 a step here)
or reused depends on what the process freed before: one process is fast or slow for its whole life."""


@dataclasses.dataclass
class Run:
    """One whole job: each step's interval (the slowest rank's; the first 10 left out), and per step
    the process CPU time and minor page faults (the mean of the two ranks)."""

    steps: list[float]
    cpu_ms: float
    faults: float


def run(folder: Path, log: Path, steps: int, profiled: bool, port: int) -> float:
    """One whole job; the median step (max over ranks of each step's interval, first 10 left out)."""
    return statistics.median(run_steps(folder, log, steps, profiled, port).steps)


def run_steps(folder: Path, log: Path, steps: int, profiled: bool | str, port: int, pin: bool = False,
              malloc: str = "as-is") -> Run:
    """One whole job. ``profiled``: False (plain), True (the CLI) or ``"in-rank"`` (the profiler in
    the rank's own process: ``IN_RANK``). ``pin``: each rank pins its threads to one core (rank i on
    core i) before it starts; ``malloc="fixed"``: glibc's allocator in one state (``MALLOC_FIXED``)."""
    head = ["-m", "pitstop", "profile", "--no-drill-down", "--json", str(folder / "p.json")] if profiled else []
    if profiled == "in-rank":
        (folder / "in_rank.py").write_text(textwrap.dedent(IN_RANK))
        head = ["in_rank.py"]
    env = {**os.environ, "PYTHONPATH": SRC, "OMP_NUM_THREADS": "1", "STEP_LOG": str(log)}
    if pin:
        env["PIN_RANKS"] = "1"
    if malloc == "fixed":
        env.update(MALLOC_FIXED)
    for path in folder.glob(f"{log.name}.rank*"):
        path.unlink()
    subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-port",
                    str(port), *head, "job.py", str(steps)], cwd=folder, env=env, check=True, capture_output=True,
                   timeout=900)
    per_rank = [[[float(x) for x in line.split()] for line in p.read_text().splitlines()][10:]
                for p in sorted(folder.glob(f"{log.name}.rank*"))]
    gaps = [[b[0] - a[0] for a, b in itertools.pairwise(rows)] for rows in per_rank]
    per_step = lambda col: statistics.mean((rows[-1][col] - rows[0][col]) / (len(rows) - 1)  # noqa: E731
                                           for rows in per_rank)
    return Run([max(g[i] for g in gaps) for i in range(min(map(len, gaps)))], per_step(1) * 1e3, per_step(2))


def overhead(folder: Path, rounds: int, steps: int, pin: bool = False, malloc: str = "as-is",
             in_rank: bool = False) -> None:
    """Whole jobs, plain and profiled, interleaved; the ratio of pooled medians with a hierarchical
    bootstrap interval (runs resampled, then steps within them: on this VM one whole run's median
    differs from the next by up to 20%, so the interval says what the rounds can resolve). And
    paired: each round's profiled run against the plain run next to it (the order of the sides
    rotates), the median of those ratios with its order-statistic interval: a drift of the machine
    over minutes (a neighbour on the host) moves all runs of a round, so pairing takes it out.
    ``pin``: all sides with each rank pinned to its own core, which takes the scheduler's placement
    of the ranks' threads (a whole run fast or slow by ~15% on 2 cores) out of the comparison.
    ``malloc="fixed"``: all sides with glibc's allocator held in one state, which takes its page
    faults (0 to ~2,800 a step from one process to the next, as it is) out of the comparison; the page
    faults and CPU time per step are printed either way. ``in_rank``: a third side, the profiler in
    the rank's own process (no CLI parent, no child)."""
    from pitstop.stats import median_ci, speedup_groups

    sides: dict[str, bool | str] = {"plain": False, "profiled": True, **({"in-rank": "in-rank"} if in_rank else {})}
    got: dict[str, list[Run]] = {name: [] for name in sides}
    names = list(sides)
    load = os.getloadavg()[0]
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            got[name].append(run_steps(folder, folder / "steps", steps, sides[name], 29601 + r, pin, malloc))
    plain = got["plain"]
    how = (", ranks pinned to cores" if pin else "") + (", allocator fixed" if malloc == "fixed" else "")
    runs = lambda groups: [round(statistics.median(g.steps) * 1e3, 1) for g in groups]  # noqa: E731
    plain_ms = statistics.median(t for g in plain for t in g.steps) * 1e3
    print(f"whole processes{how}, {rounds} interleaved rounds of {steps} steps; load average {load:.2f} before, "
          f"{os.getloadavg()[0]:.2f} after; plain {plain_ms:.2f} ms/step, run medians {runs(plain)}")
    for name in names[1:]:
        side = got[name]
        what = "profile overhead (CLI)" if name == "profiled" else "profile overhead (in the rank's process)"
        ratio = speedup_groups([p.steps for p in side], [p.steps for p in plain])  # >1: the profiled step is slower
        noise = "within noise" if ratio.ci95[0] <= 1.0 <= ratio.ci95[1] else "beyond noise"
        print(f"{what}: {statistics.median(t for g in side for t in g.steps) * 1e3:.2f} ms/step: "
              f"x{ratio.median:.3f} [{ratio.ci95[0]:.3f}-{ratio.ci95[1]:.3f}] ({noise}; goal <= x1.03); run "
              f"medians {runs(side)}")
        paired = [statistics.median(b.steps) / statistics.median(a.steps) for a, b in zip(plain, side, strict=True)]
        lo, hi = median_ci(paired)
        noise = ("within noise" if lo <= 1.0 <= hi else "beyond noise") if rounds >= 3 else "too few rounds to say"
        print(f"  paired by round: x{statistics.median(paired):.3f} [{lo:.3f}-{hi:.3f}] ({noise}); per round "
              f"{[round(x, 3) for x in paired]}")
        cpu = [b.cpu_ms / a.cpu_ms for a, b in zip(plain, side, strict=True)]
        lo, hi = median_ci(cpu)
        print(f"  CPU time per step (process, mean of ranks), paired by round: x{statistics.median(cpu):.3f} "
              f"[{lo:.3f}-{hi:.3f}]; plain {[round(p.cpu_ms, 1) for p in plain]} ms, {name} "
              f"{[round(p.cpu_ms, 1) for p in side]} ms")
        print(f"  minor page faults per step: plain {[round(p.faults) for p in plain]}, {name} "
              f"{[round(p.faults) for p in side]}")


def trained(folder: Path, rounds: int, steps: int, budget_s: float) -> None:
    subprocess.run(["git", "init", "-q"], cwd=folder, check=True)
    env = {**os.environ, "PYTHONPATH": SRC, "OMP_NUM_THREADS": "1", "STEP_LOG": str(folder / "search-steps")}
    proc = subprocess.run([sys.executable, "-m", "pitstop", "train", "--nproc-per-node", "2", "--time-budget-s",
                           str(budget_s), "--patch", "ddp.diff", "--json", "t.json", "job.py", str(steps * 3)],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=int(budget_s * 4) + 600)
    print(f"pitstop train --nproc-per-node 2: exit {proc.returncode}; "
          + (proc.stdout.strip().splitlines() or ["(no output)"])[-1][:300])
    if (folder / "t.json").exists():  # what the search reached in its budget, stage by stage
        import json

        doc = json.loads((folder / "t.json").read_text())
        for stage in doc.get("search", {}).get("stages", []):
            print(f"  stage {stage['name']} ({stage['elapsed_s']:.0f} s): {', '.join(stage['variants'])}")
        print(f"  winner: {(doc.get('winner') or {}).get('variant')} ({(doc.get('winner') or {}).get('verdict')})")
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
    ap.add_argument("--runs", type=int, default=6, help="in-process, turns: runs (which side goes first alternates)")
    ap.add_argument("--blocks", type=int, default=16, help="in-process, turns: blocks (turns) per side and run")
    ap.add_argument("--block-steps", type=int, default=20, help="in-process, turns: steps per block")
    ap.add_argument("--pin", action="store_true", help="overhead part: each rank pinned to its own core, both sides")
    ap.add_argument("--malloc", choices=("as-is", "fixed"), default="as-is",
                    help="overhead, turns: glibc's allocator as it is, or held in one state on both sides (no page "
                         "faults from its moving mmap threshold)")
    ap.add_argument("--in-rank", action="store_true",
                    help="overhead part: a third side, the profiler in the rank's process (no CLI parent, no child)")
    ap.add_argument("--versus", choices=tuple(VERSUS), default="cli",
                    help="turns: the second side (default: the job under `torchrun -m pitstop profile`; api: "
                         "pitstop.profile() attached in the script; api-nosync: the same without the sync watch; "
                         "session: the doctor's session alone; plain: the plain job again, an A/A run)")
    ap.add_argument("--only", choices=("overhead", "turns", "in-process", "trained"), help="one part alone")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="pitstop-distributed-") as tmp:
        folder = Path(tmp)
        (folder / "job.py").write_text(textwrap.dedent(JOB))
        if args.only in (None, "overhead"):
            overhead(folder, args.rounds, args.steps, args.pin, args.malloc, args.in_rank)
        if args.only in (None, "turns"):
            turns(folder, args.runs, args.blocks, args.block_steps, args.malloc, args.versus)
        if args.only in (None, "in-process"):
            in_process(folder, args.runs, args.blocks, args.block_steps)
        if args.only in (None, "trained"):
            trained(folder, args.rounds, args.steps, args.budget_s)


if __name__ == "__main__":
    main()
