"""Real small training scripts, each with one planted bottleneck, run unmodified under the profiler
(in this process, through the same runner as `pitstop profile`): the verdict names the planted
cause first, and every run's phases add up to its wall time."""

import statistics
from pathlib import Path

import pytest

from pitstop.profile.script import run_profile
from pitstop.profile.settings import ProfileSettings

SCRIPTS = Path(__file__).parent / "scripts"
SETTINGS = ProfileSettings(wait=2, warmup=1, active=1, native_bf16=True)  # hardware-independent verdicts


def profiled(name, steps=12):
    report, code = run_profile(str(SCRIPTS / name), ["--steps", str(steps)], SETTINGS)
    assert code == 0 and report.exit == {"status": "ok"}
    assert report.steps == steps
    for step in report.timeline:  # every step: its phases add up to its wall time
        assert sum(step["phases"].values()) == pytest.approx(step["wall_ms"], rel=1e-6)
    # the report's statistics are those of its steps: the measured ones, stalls left out (the sum of
    # the phase medians is no invariant: it drifted 25% from the median step on a busy machine)
    stalled = {x["step"] for x in report.stalls}
    kept = [s for s in report.timeline if s["measured"] and s["step"] not in stalled]
    assert report.step_ms["median"] == pytest.approx(statistics.median(s["wall_ms"] - s.get("eval_ms", 0.0)
                                                                       for s in kept))
    for phase in report.phases:
        if phase["median_ms"] is not None:
            assert phase["median_ms"] == pytest.approx(statistics.median(s["phases"].get(phase["name"], 0.0)
                                                                         for s in kept), abs=1e-9), phase
    return report


@pytest.mark.parametrize("script, cause", [
    ("slow_loader.py", "input-bound"),
    ("anomaly.py", "debug-mode"),
    ("autograd_profiler.py", "debug-mode"),  # the script's own profiler: the drill-down stands aside
    ("threads.py", "threads-oversubscribed"),
    ("foreach_off.py", "optimizer-bound"),
    ("fp32.py", "compute-fp32"),
])
def test_the_planted_cause_comes_first(script, cause):
    report = profiled(script)
    assert report.causes[0] == cause, report.verdict
    assert report.verdict[0]["action"]  # each names what to run next
    assert any(cmd in report.verdict[0]["action"] for cmd in ("pitstop data", "pitstop train", "pitstop profile",
                                                              "pitstop bench"))


def test_a_per_step_item_is_found_at_its_line_with_its_count():
    report = profiled("item_sync.py")
    row = report.syncs[0]
    assert row["where"].endswith("item_sync.py:11") and row["kind"] == ".item()" and row["per_step"] == 128
    # on a CPU an .item() is microseconds: found, but not a verdict (on CUDA the wait would make it one)


def test_the_clean_script_gets_no_false_verdict():
    report = profiled("clean_mlp.py")
    assert report.causes in ([], ["compute-bound"]), report.verdict
    assert report.share("data") is None and report.syncs == []


def test_a_crashing_script_still_gets_its_report(tmp_path):
    script = tmp_path / "crash.py"
    script.write_text((SCRIPTS / "clean_mlp.py").read_text().replace("opt.step()", "opt.step()\n    if _ == 8:\n"
                                                                      "        raise RuntimeError('boom')"))
    (tmp_path / "_common.py").write_text((SCRIPTS / "_common.py").read_text())
    report, code = run_profile(str(script), [], SETTINGS)
    assert code == 1 and report.exit["status"] == "crashed" and "boom" in report.exit["error"]
    assert report.steps == 9 and report.step_ms["median"] > 0
