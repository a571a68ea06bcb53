"""benchmarks/distributed.py --only turns: two whole torchrun jobs (plain, and under `pitstop
profile`, or with the profiler attached in the script: --versus api) that hand the cores to each
other every few steps through named pipes, end to end."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "distributed.py"


@pytest.mark.skipif(sys.platform != "linux", reason="torchrun with gloo on localhost, named pipes")
@pytest.mark.parametrize(("versus", "side"), [("cli", "profiled (CLI)"),
                                              ("api", "profiled (pitstop.profile() in the script)")])
def test_the_two_jobs_take_turns_and_the_ratio_is_printed(versus, side):
    proc = subprocess.run([sys.executable, str(BENCH), "--only", "turns", "--runs", "2", "--blocks", "3",
                           "--block-steps", "5", "--versus", versus], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("profile overhead, whole processes taking turns"))
    # 2 runs x 3 turns a side, the first 2 steps of each turn left out: 3 steps a turn on each side
    assert "over 2 runs of 3 turns of 5 steps per side" in line
    assert f"ms/step, {side} " in line
    ratio = float(re.search(r": x(\d+\.\d+) \[", line).group(1))
    assert 0.5 < ratio < 2.0, line
    assert "paired by turn" in proc.stdout
