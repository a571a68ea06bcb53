"""How fast is `pitstop lint`? Files/s and lines/s on the installed torch package's source, next to
TorchFix (`pip install torchfix`) on the same tree in the same run, both pinned to one core.

Each tool runs as its own command (`pitstop lint --select ALL`, `torchfix -j 1 --select ALL`),
timed wall-clock and in CPU seconds (steadier on a loaded machine), alternating, `--repeats` times;
the medians are reported. Without TorchFix installed (`pip install "pitstop[bench]"`) the script
says so in one line and times pitstop alone. TorchFix parses with
libcst and is slow, so by default the shared tree is torch/nn + torch/optim; pitstop alone also
runs on the whole package. Target: >= 20,000 lines/s on one core and faster than TorchFix.

    python benchmarks/lint_speed.py [--repeats 3] [--full]     # --full: TorchFix on the whole package too
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

TORCH = Path(torch.__file__).parent


def size(paths: list[Path]) -> tuple[int, int]:
    files = [f for p in paths for f in ([p] if p.is_file() else p.rglob("*.py"))]
    return len(files), sum(f.read_bytes().count(b"\n") + 1 for f in files)


def one_core() -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def timed(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child): on a loaded machine the CPU time is the steadier one."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=one_core)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode not in (0, 1):
        raise SystemExit(f"{cmd[0]} failed ({out.returncode}): {out.stderr.strip()[-500:]}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def find_torchfix() -> str | None:
    """The torchfix command: on PATH, or next to this Python (a virtual environment's bin/)."""
    beside = Path(sys.executable).parent / "torchfix"
    return shutil.which("torchfix") or (str(beside) if beside.is_file() else None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--full", action="store_true", help="run TorchFix on the whole package too (slow)")
    args = parser.parse_args()
    torchfix = find_torchfix()
    if torchfix is None:
        print("torchfix is not installed (pip install torchfix, or the `bench` extra): timing pitstop lint alone")
    pitstop = [sys.executable, "-m", "pitstop", "lint", "--select", "ALL", "--fail-on", "never"]
    shared = [TORCH / "nn", TORCH / "optim"]
    trees = {"torch/nn + torch/optim": shared, "torch (whole package)": [TORCH]}
    print(f"torch {torch.__version__} source at {TORCH}; one core; median of {args.repeats} runs; wall clock "
          f"including each tool's start-up")
    for label, paths in trees.items():
        files, lines = size(paths)
        tools = {"pitstop lint": pitstop + [str(p) for p in paths]}
        if torchfix is not None and (label.startswith("torch/nn") or args.full):
            tools["torchfix -j 1"] = [torchfix, "-j", "1", "--select", "ALL", *map(str, paths)]
        times: dict[str, list[tuple[float, float]]] = {t: [] for t in tools}
        for _ in range(args.repeats):
            for tool, cmd in tools.items():  # alternating, in one run
                times[tool].append(timed(cmd))
        print(f"\n{label}: {files} files, {lines:,} lines")
        wall = {t: statistics.median(w for w, _ in v) for t, v in times.items()}
        cpu = {t: statistics.median(c for _, c in v) for t, v in times.items()}
        for tool in tools:
            runs = ", ".join(f"{w:.2f}" for w, _ in times[tool])
            w, c = wall[tool], cpu[tool]
            print(f"  {tool:<14} wall {w:7.2f} s ({lines / w:9,.0f} lines/s, {files / w:5.0f} files/s)  "
                  f"CPU {c:7.2f} s ({lines / c:9,.0f} lines/s)  (wall runs: {runs} s)")
        if len(tools) == 2:
            print(f"  pitstop lint is {wall['torchfix -j 1'] / wall['pitstop lint']:.1f}x faster than TorchFix in wall "
                  f"time, {cpu['torchfix -j 1'] / cpu['pitstop lint']:.1f}x in CPU time (target: faster; >= 20,000 "
                  f"lines/s)")


if __name__ == "__main__":
    main()
