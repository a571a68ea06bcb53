"""The stopping rules with a fake clock: every call advances it by a scripted duration."""

import pytest

from pitstop.engine.timer import CallTimer, TimingPolicy, chunk_size, precise_enough, settled
from pitstop.errors import UsageError


class FakeClock:
    def __init__(self, durations):
        self.now, self.durations, self.calls = 0.0, list(durations), 0

    def __call__(self):
        return self.now

    def work(self):
        self.now += self.durations[min(self.calls, len(self.durations) - 1)]
        self.calls += 1


def test_once_times_exactly_one_call():
    clock = FakeClock([0.25])
    assert CallTimer(clock.work, clock=clock).times(3) == [0.25, 0.25, 0.25]


def test_warmup_waits_until_timings_settle():
    # a slow first call, then a cooling-down phase, then a steady 1.0 s
    clock = FakeClock([9.0, 3.0, 2.5, 2.0, 1.6, 1.3, 1.1, 1.0] + [1.0] * 30)
    policy = TimingPolicy(warmup_window=3, warmup_tol=0.02, warmup_max_s=1000)
    w = CallTimer(clock.work, clock=clock).warmup(policy)
    assert w.settled and w.first_call_s == 9.0 and w.per_call_s == 1.0
    # after the first call: 3.0 2.5 2.0 | 1.6 1.3 1.1 | 1.0 1.0 1.0 | 1.0 1.0: the window medians
    # [1.1, 1.0, 1.0] and [1.0, 1.0, 1.0] agree after 11 more calls
    assert w.calls == 12


def test_warmup_stops_at_its_cap_when_timings_never_settle():
    clock = FakeClock([1.1**i for i in range(100)])  # keeps slowing down by 10% a call
    policy = TimingPolicy(warmup_window=2, warmup_tol=0.01, warmup_max_s=10.0, warmup_min_calls=3)
    w = CallTimer(clock.work, clock=clock).warmup(policy)
    assert not w.settled and 10.0 <= w.seconds <= 10.0 + 1.1**6


def test_warmup_runs_at_least_min_calls():
    clock = FakeClock([100.0])
    w = CallTimer(clock.work, clock=clock).warmup(TimingPolicy(warmup_min_calls=4, warmup_max_s=1))
    assert w.calls == 4


def test_settled_compares_two_windows():
    assert settled([5, 5, 1, 1], window=2, tol=0.05) is False
    assert settled([1, 1, 1.01, 1.0], window=2, tol=0.05) is True
    assert settled([1, 1, 1], window=2, tol=0.05) is False


def test_precise_enough_needs_min_samples_and_narrow_interval():
    policy = TimingPolicy(target=0.02, min_samples=10)
    assert not precise_enough([[1.0] * 9], policy)
    assert precise_enough([[1.0] * 10], policy)
    assert not precise_enough([[1.0, 2.0] * 20], policy)


def test_replicas_that_disagree_are_never_precise_enough():
    policy = TimingPolicy(target=0.02, min_samples=10)
    assert precise_enough([[1.0] * 50, [1.0] * 50, [1.001] * 50], policy)
    assert not precise_enough([[1.0] * 500, [1.1] * 500, [1.2] * 500], policy)


def test_chunk_size_targets_round_duration():
    policy = TimingPolicy(round_s=0.1, max_chunk=50)
    assert chunk_size(0.01, policy) == 10
    assert chunk_size(5.0, policy) == 1
    assert chunk_size(1e-6, policy) == 50
    assert chunk_size(0.01, policy, share=2) == 5  # two replicas split the round


@pytest.mark.parametrize("kwargs", [{"target": 0}, {"target": 1.5}, {"budget_s": -1}, {"min_samples": 0}])
def test_policy_validates(kwargs):
    with pytest.raises(UsageError):
        TimingPolicy(**kwargs)


def test_a_turns_first_call_after_a_switch_is_not_a_sample():
    from pitstop.engine.rounds import switched_in

    chunk = {"times": [0.031, 0.022, 0.023], "cpu_times": [0.05, 0.04, 0.04], "optimizer_times": [0.003, 0.002, 0.002],
             "steps": 40, "skipped": 0}
    kept = switched_in(chunk, 1)
    assert kept["times"] == [0.022, 0.023] and kept["cpu_times"] == [0.04, 0.04]  # aligned lists lose the same call
    assert kept["optimizer_times"] == [0.002, 0.002] and kept["steps"] == 40
    assert switched_in({"times": [0.031]}, 1) == {"times": [0.031]}  # a turn of one call keeps it
    assert switched_in(chunk, 0) is chunk  # bench: every call a sample
    assert switched_in({**chunk, "optimizer_times": []}, 1)["optimizer_times"] == []  # not timed: left as it is


def test_train_stages_time_turns_of_several_steps_whose_first_is_not_a_sample():
    from pitstop.train.search import MIN_ROUNDS, ROUND_S, SWITCH_IN, TrainSearch

    search = TrainSearch.__new__(TrainSearch)  # the policy of a stage needs only the clock and the limit
    search.t0, search.limit_s = __import__("time").monotonic(), 100.0
    policy = search._policy(4, 0.5, 0.02, 10)
    assert (policy.round_s, policy.switch_in) == (ROUND_S, SWITCH_IN) and SWITCH_IN >= 1
    assert chunk_size(0.022, policy, share=2) >= 10  # a 22 ms step, 2 replicas: 11 steps a turn, not 1
    search.limit_s = 2.0  # a small budget: shorter turns, still MIN_ROUNDS of them
    small = search._policy(4, 0.5, 0.02, 10)
    assert small.min_rounds == MIN_ROUNDS >= 3 and small.round_s * MIN_ROUNDS <= small.budget_s


def test_precision_ends_a_stage_only_after_min_rounds():
    """One long turn of identical samples is "precise" at once; with ``min_rounds`` it is one round of three."""
    from types import SimpleNamespace

    from pitstop.engine.measurement import Measurement
    from pitstop.engine.rounds import interleave

    def variant() -> SimpleNamespace:
        row = Measurement("v", {}, 1, "ok")
        row.replica_samples_s = [[]]
        return SimpleNamespace(alive=True, finished=False, per_call_s=[0.001], spent_s=0.0, row=row)

    def turn(v, i):
        v.row.replica_samples_s[i].extend([0.001] * 100)
        v.spent_s += 0.1

    for min_rounds, rounds in ((1, 1), (3, 3)):
        seen: list[int] = []
        interleave([variant(), variant()], TimingPolicy(budget_s=5.0, min_rounds=min_rounds), None, turn, seen.append)
        assert seen[-1] == rounds
    seen = []  # a first turn that overran the whole budget (a step slower than its warm-up said)
    interleave([variant(), variant()], TimingPolicy(budget_s=0.05, min_rounds=3), None, turn, seen.append)
    assert seen[-1] == 3
