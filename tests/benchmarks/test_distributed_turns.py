"""benchmarks/distributed.py --only turns: two whole torchrun jobs (plain, and under `pitstop
profile`, or with the profiler attached in the script: --versus api) that hand the cores to each
other every few steps through named pipes, end to end. The command lines run are the ones
docs/distributed.md shows, shrunk to a few turns."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks" / "distributed.py"
PAGE = "docs/distributed.md"
SIDES = {"cli": "profiled (CLI)", "api": "profiled (pitstop.profile() in the script)"}


def documented() -> tuple[list[list[str]], list[str]]:
    """The page's `--only turns` commands (their arguments), and the other sides it names after them."""
    text = " ".join((ROOT / PAGE).read_text().split())
    commands = re.findall(r"`python benchmarks/distributed\.py (--only turns[^`]*)`", text)
    assert len(commands) == 2, commands
    others = re.search(r"--versus api` \(or ((?:`[\w-]+`,? ?)+)", text)
    assert others, "the page names the other sides of --versus"
    return [shlex.split(c) for c in commands], re.findall(r"`([\w-]+)`", others.group(1))


def shrunk(args: list[str], runs: int) -> list[str]:
    """``args`` with ``runs`` runs of 3 turns of 5 steps (the first 2 of a turn are left out: 3 timed steps a turn)."""
    out, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg in ("--runs", "--blocks", "--block-steps"):
            skip = True
        else:
            out.append(arg)
    return [*out, "--runs", str(runs), "--blocks", "3", "--block-steps", "5"]


@pytest.mark.skipif(sys.platform != "linux", reason="torchrun with gloo on localhost, named pipes")
# Only whole torchrun jobs prove the turns: two jobs' ranks handing the cores over through named pipes.
# The CLI side (index 0) runs 2 runs, so the profiled job also goes first once; the api side (1) one run.
@pytest.mark.parametrize("index,runs", [(0, 2), (1, 1)])
def test_the_two_jobs_take_turns_and_the_ratio_is_printed(index, runs):
    commands, others = documented()
    args = commands[index]
    versus = args[args.index("--versus") + 1] if "--versus" in args else "cli"
    proc = subprocess.run([sys.executable, str(BENCH), *shrunk(args, runs)], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("profile overhead, whole processes taking turns"))
    assert f"over {runs} runs of 3 turns of 5 steps per side" in line
    assert f"ms/step, {SIDES[versus]} " in line
    ratio = float(re.search(r": x(\d+\.\d+) \[", line).group(1))
    assert 0.5 < ratio < 2.0, line
    assert "paired by turn" in proc.stdout
    if index == 1:  # the other sides the page names are the benchmark's choices
        helptext = subprocess.run([sys.executable, str(BENCH), "--help"], capture_output=True, text=True).stdout
        choices = re.search(r"--versus \{([\w,-]+)\}", helptext).group(1).split(",")
        assert others and set(others) <= set(choices), (others, choices)
