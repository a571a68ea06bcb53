"""``pitstop.train(...)`` in-process (isolate=False, one cheap axis): the setup applies the winner,
its step trains, the report renders and validates; bad arguments are one-line usage errors."""

import jsonschema
import pytest
import torch
from torch import nn

import pitstop
from pitstop.errors import UsageError
from pitstop.schemas import TRAIN_SCHEMA


def model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 4))


X, Y = torch.randn(16, 16), torch.randint(0, 4, (16,))


@pytest.fixture(scope="module")
def setup():
    return pitstop.train(model(), (X,), Y, loss_fn=nn.CrossEntropyLoss(),
                         optimizer=lambda params: torch.optim.AdamW(params, lr=1e-2), time_budget_s=10,
                         techniques=("zero_grad",), isolate=False, replicas=1)


def test_train_is_a_callable_package(setup):
    assert callable(pitstop.train) and "train" in pitstop.__all__
    assert isinstance(setup, pitstop.train.result.TrainSetup)


def test_setup_applies_the_chosen_step_and_it_trains(setup):
    fresh = model()
    _, optimizer, step = setup.apply(fresh)
    losses = [float(step((X,), Y)) for _ in range(15)]
    assert losses[-1] < losses[0]
    assert isinstance(optimizer, torch.optim.AdamW) and optimizer.defaults["lr"] == 1e-2
    assert setup.config.name in setup.recipe


def test_report_renders_and_validates(setup):
    doc = setup.report.to_dict()
    jsonschema.validate(doc, TRAIN_SCHEMA)
    assert doc["environment"]["isolation"].startswith("inline")
    assert doc["problem"]["optimizer"]["name"] == "AdamW"
    naive = next(r for r in doc["results"] if r["variant"] == "naive" and r["stage"] == "final")
    assert len(naive["fidelity"]["trajectory"]["losses"]) == 3
    from pitstop.train.search import MIN_ROUNDS
    for row in (r for r in doc["results"] if r["stage"] == "probe" and r["status"] == "ok"):
        turns = row["details"]["turns"]  # every variant timed in several interleaved turns, not one long one
        assert all(len(t) >= MIN_ROUNDS for t in turns) and sum(map(sum, turns)) == len(row["samples_ms"]), \
            (row["variant"], turns, [(r["variant"], r["stage"], r["status"], r.get("reason")) for r in doc["results"]])
    inside = [x * 1e3 for g in naive["details"]["optimizer_samples_s"] for x in g]  # optimizer.step(), timed apart
    assert len(inside) == len(naive["samples_ms"]) and all(
        0 < x < t for x, t in zip(inside, naive["samples_ms"], strict=True))
    text = str(setup.report)
    assert "zero-grad-zeros" in text and "Winner:" in text
    assert "<table>" in setup.report._repr_html_()


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"target": torch.zeros(3, dtype=torch.long)}, "batch dimension 0 must be the batch size 16"),
    ({"loss_fn": lambda out, y: out.sum()}, "cannot be rebuilt"),
    ({"warp": 9}, "unknown option"),
    ({"time_budget_s": float("nan")}, "time_budget_s: must be a finite number"),
    ({"seed": -1}, "seed: must be an integer in 0 .. 2\\*\\*63-1"),
    ({"seed": 10**23}, "seed: must be an integer"),
    ({"steps": float("nan")}, "steps: must be a finite number"),
    ({"timeout_s": float("nan")}, "timeout_s: must be a finite number"),
    ({"target": "flot[B]"}, "expected a dtype"),
])
def test_bad_arguments_are_usage_errors(kwargs, message):
    args = {"target": Y, "time_budget_s": 10, **kwargs}
    with pytest.raises(UsageError, match=message):
        pitstop.train(model(), (X,), isolate=False, techniques=("zero_grad",), **args)


def test_variants_not_started_before_the_deadline_are_skipped_with_the_reason():
    """The budget bounds the search: once a stage's deadline has passed, every variant but the
    naive reference is skipped (and says why) instead of being profiled past the budget."""
    import time

    from pitstop.engine.source import make_source
    from pitstop.engine.timer import TimingPolicy
    from pitstop.train.config import NAIVE
    from pitstop.train.group import TrainGroup
    from pitstop.train.problem import LossSpec, OptimizerSpec, ProblemRequest
    from pitstop.train.settings import TrainSettings

    request = ProblemRequest(OptimizerSpec.named("adamw", lr=1e-2), LossSpec.of(nn.CrossEntropyLoss(), True), Y)
    settings = TrainSettings(threads=1, isolate=False, replicas=1, time_budget_s=10)
    group = TrainGroup(make_source(model(), (X,), 0), settings, request)
    rows: list = []
    try:
        group.run([NAIVE, NAIVE.with_(zero_grad="zeros"), NAIVE.with_(optimizer="foreach")], rows,
                  policy=TimingPolicy(budget_s=0.2, min_samples=3), deadline=time.monotonic())
    finally:
        group.close()
    by_name = {r.variant: r for r in rows}
    assert by_name["naive"].status == "ok" and len(by_name["naive"].samples_s) >= 3
    skipped = [r for r in rows if r.variant != "naive"]
    assert [r.status for r in skipped] == ["skipped", "skipped"]
    assert all("time budget (10 s) ran out first" in r.reason for r in skipped)


def test_a_probe_variant_whose_first_step_outlasts_the_probe_is_skipped_with_the_reason():
    """A compilation still running when the probe's share of the budget (and its grace) is spent is
    stopped, so that the final keeps its time; the reference is never cut."""
    import time

    from pitstop.engine.source import make_source
    from pitstop.engine.timer import TimingPolicy
    from pitstop.train.config import NAIVE
    from pitstop.train.group import TrainGroup
    from pitstop.train.problem import LossSpec, OptimizerSpec, ProblemRequest
    from pitstop.train.settings import TrainSettings

    request = ProblemRequest(OptimizerSpec.named("adamw", lr=1e-2), LossSpec.of(nn.CrossEntropyLoss(), True), Y)
    group = TrainGroup(make_source(model(), (X,), 0), TrainSettings(threads=1, isolate=False, replicas=1,
                                                                    time_budget_s=10), request)
    rows: list = []
    try:
        group.run([NAIVE, NAIVE.with_(compile="default")], rows, policy=TimingPolicy(budget_s=0.2, min_samples=3),
                  deadline=time.monotonic() + 60, first_step_by=time.monotonic())
    finally:
        group.close()
    by_name = {r.variant: r for r in rows}
    assert by_name["naive"].status == "ok" and len(by_name["naive"].samples_s) >= 3
    assert by_name["compile"].status == "skipped", by_name["compile"]
    assert "its compilation had not ended when the probe's share of the time budget (10 s)" in by_name["compile"].reason
