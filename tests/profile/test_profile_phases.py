"""The phase timeline: exclusive phases that add up to each step's wall time (an injected clock
for the accounting; real loops for the events and for the wall time measured independently)."""

import itertools
import statistics
import time

import pytest
import torch
from torch import nn

import pitstop
from pitstop.profile.phases import PHASES, PhaseTimer


class FakeClock:
    device = "cpu"

    def __init__(self):
        self.now = 0.0

    def mark(self):
        return self.now

    def ready(self, mark):
        return True

    def wait(self, mark):
        pass

    def seconds(self, a, b):
        return b - a


def test_phases_are_exclusive_and_add_up_to_the_step():
    timer, clock = PhaseTimer(excluded=lambda step: False), FakeClock()
    timer.clock = timer._clock_chosen = clock
    timer.start()
    for phase, dt in (("data", 2.0), ("forward", 3.0)):
        timer.enter(phase)
        clock.now += dt
        if phase == "forward":
            timer.enter("sync")  # a .item() inside the forward takes its time from it
            clock.now += 1.0
            timer.leave("sync")
            clock.now += 0.5
        timer.leave(phase)
    clock.now += 0.25  # between phases: other
    timer.enter("backward")
    timer.leave("optimizer")  # not open: ignored
    clock.now += 4.0
    timer.on_iteration(1)  # a phase left open ends with its step
    step = timer.steps[0]
    assert step.phases == {"data": 2.0, "h2d": 0.0, "forward": 3.5, "backward": 4.0, "optimizer": 0.0,
                           "sync": 1.0, "other": 0.25}
    assert step.wall_s == pytest.approx(sum(step.phases.values())) == pytest.approx(10.75)
    assert timer.seen == {"data", "forward", "sync", "backward", "other"}


def mlp():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
    return model, torch.optim.SGD(model.parameters(), lr=0.01)


def test_steps_match_the_loops_own_clock_and_unmeasured_phases_are_not_zero():
    model, opt = mlp()
    ends = []
    with pitstop.profile(wait=2, active=1) as prof:
        ends.append(time.perf_counter())
        for _ in range(30):
            opt.zero_grad()
            nn.functional.cross_entropy(model(torch.randn(32, 64)), torch.randint(0, 10, (32,))).backward()
            opt.step()
            ends.append(time.perf_counter())
    report = prof.report
    assert report.steps == 30 and [s["step"] for s in report.timeline] == list(range(1, 31))
    apart, ours, loops, pairs = [], 0.0, 0.0, []
    for s, (a, b) in zip(report.timeline[1:], itertools.pairwise(ends[1:]), strict=False):
        assert sum(s["phases"].values()) == pytest.approx(s["wall_ms"], rel=1e-6)
        ours, loops = ours + s["wall_ms"], loops + (b - a) * 1e3
        pairs.append((round(s["wall_ms"], 2), round((b - a) * 1e3, 2)))
        apart.append((ours - loops, loops))
    # pitstop's step ends inside opt.step(), the loop's clock just after it: the running totals part by
    # the gap between the two at the first boundary minus the gap now. A core taken by another process
    # (or a garbage collection) in one gap moves time from one step to the next in one clock only, and
    # when that gap is the first one every later total is off by it (CI, busy: 2.3 ms at step 1, 24 of
    # 29 totals apart, none by more). So the reference is the totals' usual offset, not the first
    # gap: most totals sit on it (a step's misplaced boundary would move them off it for good)
    usual = statistics.median(d for d, _ in apart)
    agree = [abs(d - usual) <= 0.05 * total + 0.5 for d, total in apart]
    marks = "".join("." if ok else "x" for ok in agree)
    assert "xxxxx" not in marks and sum(agree) >= 0.6 * len(agree), (marks, usual, pairs)
    assert sum(s["wall_ms"] for s in report.timeline[1:]) == pytest.approx((ends[-1] - ends[1]) * 1e3, rel=0.05, abs=5)
    # each step's phases add up to it exactly (above); medians of the parts add up to the median step
    # only roughly: 26 steps of ~0.6 ms (CI saw 0.564 against 0.601 over 6 steps)
    total = sum(p["median_ms"] for p in report.phases if p["median_ms"] is not None)
    assert total == pytest.approx(report.step_ms["median"], rel=0.1)
    shares = {p["name"]: p["share"] for p in report.phases}
    assert shares["data"] is None and shares["h2d"] is None  # no DataLoader, no CUDA: not measured
    assert shares["forward"] > 0 and shares["backward"] > 0 and shares["optimizer"] > 0
    assert "data       not measured (no DataLoader seen)" in str(report)
    assert [s["measured"] for s in report.timeline] == [False] * 4 + [True] * 26  # step 1; 2-4: the drill-down


def test_gradient_accumulation_and_closures_count_optimizer_steps():
    model, opt = mlp()
    with pitstop.profile(drill_down=False) as prof:
        for _ in range(4):
            for _ in range(3):  # three micro-batches per optimizer step
                nn.functional.cross_entropy(model(torch.randn(8, 64)), torch.randint(0, 10, (8,))).backward()
            opt.step()
            opt.zero_grad()
    assert prof.report.steps == 4 and len(prof.report.timeline) == 4
    lbfgs = torch.optim.LBFGS(model.parameters(), max_iter=2)
    x, y = torch.randn(8, 64), torch.randint(0, 10, (8,))

    def closure():
        lbfgs.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        return loss

    with pitstop.profile(drill_down=False) as prof:
        for _ in range(3):
            lbfgs.step(closure)
    report = prof.report
    assert report.steps == 3
    assert report.share("forward") > 0 and report.share("backward") > 0  # inside step(): still their own phases
    assert set(PHASES) == {p["name"] for p in report.phases}


def test_a_dataloader_wait_is_the_data_phase():
    model, opt = mlp()

    class Slow(torch.utils.data.Dataset):
        def __len__(self):
            return 48

        def __getitem__(self, i):
            time.sleep(0.002)
            return torch.randn(64), i % 10

    with pitstop.profile(drill_down=False) as prof:
        for x, y in torch.utils.data.DataLoader(Slow(), batch_size=8):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
    report = prof.report
    assert report.share("data") > 0.5  # 16 ms of sleep against a sub-millisecond step
    assert report.causes[0] == "input-bound"
    assert "num_workers=0" in report.verdict[0]["evidence"] and "pitstop train" in report.verdict[0]["action"]
