"""The ``page-faults`` cause: a step whose 64 MiB temporary glibc maps afresh every step faults on
each of its pages; the count is the process's own, one fault's cost is measured on this machine,
and the action the verdict names (the allocator held through two environment variables) takes the
faults away when the same script is profiled again with them."""

import json
import mmap
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from pitstop.hooks.session import Session
from pitstop.profile.faults import HOLD, fault_cost_us, minor_faults, summary
from pitstop.profile.observe import Observations
from pitstop.profile.verdict import Facts, verdict
from pitstop.schemas import PROFILE_SCHEMA

SCRIPTS = Path(__file__).parent / "scripts"
SHARES = {"data": None, "h2d": None, "forward": 0.4, "backward": 0.4, "optimizer": 0.1, "sync": 0.0, "other": 0.1}


def test_faults_are_counted_and_one_costs_a_measured_time():
    before = minor_faults()
    region = mmap.mmap(-1, 8 << 20)  # 8 MiB mapped afresh (not the allocator's: a long process reuses its heap)
    region.write(b"\x01" * (8 << 20))
    region.close()
    assert minor_faults() - before >= 1000  # 2,048 pages, each faulted in once
    cost = fault_cost_us()
    assert cost is not None and 0.01 < cost < 1000
    pf = summary([2000, 2100, 1900], step_ms=10.0)
    assert pf["per_step"] == 2000 and pf["ms_per_step"] == pytest.approx(2000 * cost / 1e3)
    assert pf["share"] == min(pf["ms_per_step"] / 10.0, 1.0)
    assert summary([0, 0, 0], 10.0) == {"per_step": 0, "us_each": None, "ms_per_step": None, "share": None}
    assert summary([], 10.0) is None


def test_the_cause_needs_an_estimated_five_percent_of_the_step():
    def causes(share):
        pf = {"per_step": 1000.0, "us_each": 3.0, "ms_per_step": 10.0 * share, "share": share}
        return [v["cause"] for v in verdict(Facts(SHARES, [], Observations(Session()), False, 2, False, 10.0,
                                                  "pitstop train train.py --epochs 1", pf))]

    assert causes(0.04) == ["compute-bound"]
    assert causes(0.6)[0] == "page-faults"
    found = verdict(Facts(SHARES, [], Observations(Session()), False, 2, False, 10.0, "pitstop train train.py",
                          {"per_step": 2500.0, "us_each": 3.0, "ms_per_step": 7.5, "share": 0.75}))[0]
    assert "~2500 minor page faults in each step" in found["evidence"] and found["saves"] == pytest.approx(0.6)
    assert "pitstop profile train.py" in found["action"] and "LD_PRELOAD" in found["action"]


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the action's variables are glibc's")
def test_the_faulting_step_is_named_and_the_held_allocator_takes_the_faults_away(tmp_path):
    for name in ("page_faults.py", "_common.py"):
        shutil.copy(SCRIPTS / name, tmp_path / name)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}

    def profile(out, extra):
        proc = subprocess.run([sys.executable, "-m", "pitstop", "profile", "--no-drill-down", "--json", out,
                               "page_faults.py", "--steps", "12"], cwd=tmp_path, env={**env, **extra},
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        doc = json.loads((tmp_path / out).read_text())
        jsonschema.validate(doc, PROFILE_SCHEMA)
        return doc, proc.stdout

    faulting, text = profile("as_is.json", {})
    assert faulting["page_faults"]["per_step"] >= 16384  # every page of the 64 MiB buffer, every step
    first = faulting["verdict"][0]
    assert first["cause"] == "page-faults", faulting["verdict"]
    hold = " ".join(f"{k}={v}" for k, v in HOLD.items())
    assert f"`{hold} pitstop profile page_faults.py --steps 12`" in first["action"]
    assert "page faults: ~" in text and "minor faults per step" in text
    held, _ = profile("held.json", HOLD)  # the action, as the verdict words it
    assert held["page_faults"]["per_step"] < 100
    assert "page-faults" not in [v["cause"] for v in held["verdict"]]


def test_under_torchrun_a_faulting_rank_other_than_0_is_named_with_its_rank():
    """Rank 0's own verdict tests its own faults; rank 0 names any other rank whose faults take an
    estimated 5% of its step, from the summaries it gathered, and the rank table shows every rank's count."""
    from pitstop.profile.ranks import analyze
    from pitstop.report import text

    def rank(faults, share):
        return {"step_ms": 30.0, "phases": {"data": 1.0, "forward": 10.0, "backward": 12.0, "optimizer": 5.0},
                "comm_wait_ms": 2.0, "page_faults": {"per_step": faults, "us_each": 3.0,
                                                     "ms_per_step": faults * 3e-3, "share": share}}

    section, found = analyze([rank(2400, 0.24), rank(2500, 0.25), rank(4, 0.0004)], "pitstop train train.py --x 1")
    assert [(v["cause"], v["rank"]) for v in found] == [("page-faults", 1)]
    assert found[0]["evidence"].startswith("rank 1: ~2500 minor page faults")
    assert "pitstop profile train.py --x 1" in found[0]["action"]
    shown = text({"kind": "profile", "step_ms": {"median": 30.0, "ci95": [29, 31], "n": 10}, "steps": 12,
                  "phases": [], "distributed": section, "verdict": found})
    assert "faults/step" in shown and " 2500" in shown


SNAPSHOT_THEN_FINAL = """
import torch
from torch import nn
import pitstop
from pitstop.profile import faults

model = nn.Linear(64, 64)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
with pitstop.profile(model, opt, drill_down=False) as prof:
    for _ in range(6):
        big = torch.ones(8 << 20)  # 32 MiB, mapped afresh by glibc: faults in every step
        opt.zero_grad()
        model(torch.randn(8, 64) + big[:64]).sum().backward()
        opt.step()
    snapshot = prof.report.page_faults  # while attached: a snapshot of the run so far
    print("snapshot", snapshot["per_step"] >= 1, snapshot["us_each"], faults._cost_us)
print("final", prof.report.page_faults["us_each"] is not None, faults._cost_us is not None)
"""


def test_a_snapshot_of_a_running_profile_measures_no_fault_cost_the_final_report_does():
    # a fresh process: the cost is measured once per process, and an earlier test here may have done it
    out = subprocess.run([sys.executable, "-c", SNAPSHOT_THEN_FINAL], capture_output=True, text=True, timeout=300,
                         check=True).stdout.splitlines()
    assert out == ["snapshot True None None", "final True True"]
