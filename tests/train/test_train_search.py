"""The train search's decisions on given probe measurements (the rules, not the clock): which
finalists are planned, compiled autograd as a refinement, and the winner."""

import re

import numpy as np
import pytest

from pitstop.bench.result import BenchResult
from pitstop.engine.measurement import Measurement
from pitstop.train.config import NAIVE_NAME
from pitstop.train.search import Stage
from tests.fixtures.train_names import parse_train_variant


def samples(ms, n=40, spread=0.01, seed=0):
    rng = np.random.default_rng(seed)
    return [list(ms / 1e3 * (1 + spread * rng.standard_normal(n))) for _ in range(2)]


def stage(name, medians):
    result = BenchResult("m", {}, {}, {}, NAIVE_NAME)
    for i, (variant, ms) in enumerate(medians.items()):
        config = parse_train_variant(variant)
        result.rows.append(Measurement(variant, config.to_dict(2), 8, replica_samples_s=samples(ms, seed=i)))
    return Stage(name, result)


def test_the_strongest_axes_are_combined_and_compiled_autograd_refines_a_compiled_finalist(search):
    search.outcome.stages = [stage("probe", {
        NAIVE_NAME: 100.0, "bf16-autocast": 50.0, "compile": 80.0, "foreach": 130.0,  # foreach: slower, pruned
        "channels_last": 90.0})]
    finalists = [c.name for c in search.finalists()]
    assert finalists[0] == "bf16-autocast"  # the fastest single: measured, never dropped
    assert finalists[1] == "bf16-autocast+compile"  # the two strongest axes
    assert "bf16-autocast+compile+channels_last" in finalists  # all that survived
    assert not any("foreach" in f for f in finalists)
    assert finalists[-1] == "bf16-autocast+compiled-autograd"  # the refinement comes last


def test_the_first_finalist_with_loader_workers_is_refined_with_batches_made_further_ahead(search):
    search.outcome.stages = [stage("probe", {NAIVE_NAME: 100.0, "workers2": 50.0, "workers1": 70.0,
                                             "bf16-autocast": 90.0})]
    finalists = [c.name for c in search.finalists()]
    assert finalists[0] == "workers2" and finalists[-1] == "workers2+prefetch4"  # a refinement: last
    assert sum("prefetch" in f for f in finalists) == 1


def test_a_short_budget_keeps_the_fastest_single_over_a_speculative_composition(search):
    """The encoder case: compile alone slower than naive, bf16 faster; when the final has room for
    one finalist, it is the measured bf16 step, not the untried bf16+compile."""
    search.outcome.stages = [stage("probe", {NAIVE_NAME: 1100.0, "bf16-autocast": 650.0, "compile": 1300.0})]
    finalists = search.finalists()
    assert [c.name for c in finalists[:2]] == ["bf16-autocast", "bf16-autocast+compile"]
    search.limit_s = 0.0  # no time left: the plan keeps the first finalist only
    planned, replicas = search._plan(finalists)
    assert [c.name for c in planned] == ["bf16-autocast"] and replicas == 1


def test_the_fused_optimizer_refines_the_first_combination_when_it_was_within_noise_alone(search):
    """zoo:cnn: fused alone is no faster than the naive step, yet pays on bf16+channels_last."""
    search.outcome.stages = [stage("probe", {NAIVE_NAME: 100.0, "bf16-autocast": 50.0, "channels_last": 80.0,
                                             "fused": 101.0})]
    finalists = [c.name for c in search.finalists()]
    assert finalists[:2] == ["bf16-autocast", "bf16-autocast+channels_last"]
    assert finalists[-1] == "bf16-autocast+fused+channels_last"  # a refinement: dropped first when short
    search.outcome.stages = [stage("probe", {NAIVE_NAME: 100.0, "bf16-autocast": 50.0, "channels_last": 80.0,
                                             "fused": 80.0})]  # survived: combined like any other axis
    assert "bf16-autocast+fused+channels_last" in [c.name for c in search.finalists()]


def test_no_compiled_autograd_without_a_compiled_finalist(search):
    search.outcome.stages = [stage("probe", {NAIVE_NAME: 100.0, "bf16-autocast": 50.0, "channels_last": 90.0})]
    assert not any(c.compile for c in search.finalists())


def test_the_winner_is_the_fastest_beyond_noise_and_a_simpler_tie_stays(search):
    search.outcome.stages = [stage("final", {NAIVE_NAME: 100.0, "bf16-autocast": 50.0,
                                             "bf16-autocast+compile": 49.9})]
    search._decide()
    assert search.outcome.winner.variant == "bf16-autocast"  # within 3% and noise: the simpler one
    search.outcome.stages = [stage("final", {NAIVE_NAME: 100.0, "bf16-autocast": 50.0,
                                             "bf16-autocast+compile": 40.0})]
    search._decide()
    assert search.outcome.winner.variant == "bf16-autocast+compile"


def test_fused_is_the_optimizer_survivor_when_it_ties_with_foreach(search):
    """nanoGPT: foreach and fused tie on the fp32 step, fused is 13% faster under bf16: of tied
    implementations the fused one combines."""
    search.outcome.stages = [stage("probe", {NAIVE_NAME: 100.0, "bf16-autocast": 60.0, "foreach": 92.5,
                                             "fused": 93.0})]
    assert "bf16-autocast+fused" in [c.name for c in search.finalists()]
    assert not any("foreach" in c.name for c in search.finalists())


def test_a_comparison_that_drifts_twice_ends_without_a_winner(search, monkeypatch):
    """Issue 25: a final whose comparison moved while it ran is measured again on one thread (by
    CPU time); when it moves again the search cannot measure reliably: it fails with that reason
    (the CLI's exit 1, no recipe) instead of choosing from a drifting clock."""
    steady = [[0.1 + 0.001 * (i % 3) for i in range(30)]]
    moving = [[0.05] * 10 + [0.06] * 10 + [0.075] * 10]  # the speed-up falls from 2x to 1.33x meanwhile
    planned = []

    def fake_stage(name, configs, **kw):
        planned.append((name, [c.name for c in configs], search.group.one_thread))
        result = BenchResult("m", {}, {}, {}, NAIVE_NAME)
        for config in configs:
            runs = steady if config.name == NAIVE_NAME or name == "probe" else moving
            result.rows.append(Measurement(config.name, config.to_dict(2), 8, replica_samples_s=runs,
                                           details={"cpu_samples_s": runs}))
        found = Stage(name, result, elapsed_s=0.0)
        search.outcome.stages.append(found)
        return found

    monkeypatch.setattr(search, "_stage", fake_stage)
    monkeypatch.setattr(search, "_check_load", lambda monitor: None)
    monkeypatch.setattr(search.group, "prepare", lambda: None)
    monkeypatch.setattr(search, "finalists", lambda: [parse_train_variant("foreach")])
    monkeypatch.setattr(search, "_plan", lambda finalists: (finalists, 1))
    search._stages()
    assert [p[0] for p in planned] == ["probe", "final", "final-2"]
    assert planned[2][2] is True  # measured again on one thread, by CPU time
    assert search.outcome.failed.startswith("could not measure reliably: foreach's speed-up")
    assert any(n.startswith("final stage measured again") for n in search.outcome.notes)


def test_a_drift_that_settles_when_measured_again_decides_on_the_second_final(search, monkeypatch):
    steady = [[0.1 + 0.001 * (i % 3) for i in range(30)]]
    moving = [[0.05] * 10 + [0.06] * 10 + [0.075] * 10]

    def fake_stage(name, configs, **kw):
        result = BenchResult("m", {}, {}, {}, NAIVE_NAME)
        for config in configs:
            runs = moving if (name == "final" and config.name != NAIVE_NAME) else \
                steady if config.name == NAIVE_NAME else [[x / 2 for x in steady[0]]]
            result.rows.append(Measurement(config.name, config.to_dict(2), 8, replica_samples_s=runs,
                                           details={"cpu_samples_s": runs}))
        found = Stage(name, result)
        search.outcome.stages.append(found)
        return found

    monkeypatch.setattr(search, "_stage", fake_stage)
    monkeypatch.setattr(search, "_check_load", lambda monitor: None)
    monkeypatch.setattr(search.group, "prepare", lambda: None)
    monkeypatch.setattr(search, "finalists", lambda: [parse_train_variant("foreach")])
    monkeypatch.setattr(search, "_plan", lambda finalists: (finalists, 1))
    search._stages()
    assert not search.outcome.failed and search.outcome.stages[-1].name == "final-2"


def with_optimizer_phase(found, phases, spread=0.02):
    """Seconds inside optimizer.step() per step for each named row (what the step hooks time)."""
    for i, row in enumerate(found.result.rows):
        if row.variant in phases:
            row.details = {"optimizer_samples_s": samples(phases[row.variant], spread=spread, seed=100 + i)}
    return found


def noisy_stage(name, medians, spread):
    result = BenchResult("m", {}, {}, {}, NAIVE_NAME)
    for i, (variant, ms) in enumerate(medians.items()):
        config = parse_train_variant(variant)
        result.rows.append(Measurement(variant, config.to_dict(2), 8,
                                       replica_samples_s=samples(ms, n=12, spread=spread, seed=i)))
    return Stage(name, result)


def test_the_fused_optimizer_is_judged_on_its_optimizer_step_when_the_whole_step_is_too_noisy(search):
    """word_lm_lstm: the optimizer is 9% of a step whose run-to-run noise is larger than what fused
    saves; timed apart, its optimizer step is 2x faster beyond doubt, and the step is not slower."""
    final = with_optimizer_phase(noisy_stage("final", {NAIVE_NAME: 100.0, "fused": 96.0}, spread=0.15),
                                 {NAIVE_NAME: 9.0, "fused": 4.5})
    search.outcome.stages = [final]
    assert search.ratio(final, final.result.row("fused", 8)).verdict == "within noise"  # the whole step cannot tell
    search._decide()
    assert search.outcome.winner is not None and search.outcome.winner.variant == "fused"
    note = next(n for n in search.outcome.notes if n.startswith("fused: chosen on its optimizer step"))
    assert "2.00x faster" in note and re.search(r"than naive's, saving 4\.\d% of that step \(1\.05x\)", note), note
    # the summary says what chose it, and does not call a whole step within noise "faster"
    from pitstop.train.result import TrainReport, verdict_lines

    assert search.outcome.verdict.startswith("its optimizer step is faster beyond noise (2.00x, 1.0")
    line = verdict_lines(TrainReport("m", {"time_budget_s": 60}, {}, search.outcome, "", {}))[-1]
    assert line.startswith("Winner: fused: ") and "per step, within noise of naive" in line, line
    assert "faster per step" not in line, line
    final = with_optimizer_phase(noisy_stage("final", {NAIVE_NAME: 100.0, "fused": 96.0}, spread=0.15),
                                 {NAIVE_NAME: 9.0, "fused": 8.9})  # the optimizer step itself no faster
    search.outcome.stages, search.outcome.notes = [final], []
    search._decide()
    assert search.outcome.winner is None


def test_a_faster_optimizer_step_does_not_excuse_a_slower_whole_step(search):
    final = with_optimizer_phase(noisy_stage("final", {NAIVE_NAME: 100.0, "fused": 130.0}, spread=0.02),
                                 {NAIVE_NAME: 9.0, "fused": 4.5})  # e.g. a fused kernel that costs elsewhere
    search.outcome.stages = [final]
    search._decide()
    assert search.outcome.winner is None


def test_fused_on_a_combination_stays_when_its_optimizer_step_is_faster(search):
    """bf16+fused within noise of bf16 on the step: the simpler bf16 would stay by the tie rule,
    unless fused's own step is faster; then the fused one is kept."""
    medians = {NAIVE_NAME: 100.0, "bf16-autocast": 60.0, "bf16-autocast+fused": 59.0}
    final = noisy_stage("final", medians, spread=0.05)
    search.outcome.stages = [final]
    search._decide()
    assert search.outcome.winner.variant == "bf16-autocast"  # no phase timed: the tie rule
    search.outcome.stages = [with_optimizer_phase(noisy_stage("final", medians, spread=0.05),
                                                  {NAIVE_NAME: 9.0, "bf16-autocast": 9.0,
                                                   "bf16-autocast+fused": 4.0})]
    search._decide()
    assert search.outcome.winner.variant == "bf16-autocast+fused"


def test_a_fused_optimizer_within_noise_on_the_probe_survives_by_its_optimizer_step(search):
    probe = with_optimizer_phase(noisy_stage("probe", {NAIVE_NAME: 100.0, "fused": 99.0, "foreach": 99.5},
                                             spread=0.15), {NAIVE_NAME: 9.0, "fused": 4.5, "foreach": 8.9})
    search.outcome.stages = [probe]
    assert [c.name for c in search.finalists()][:1] == ["fused"]


def test_the_finals_start_up_is_the_probes_scaled_to_the_processes_it_starts(search):
    """The probe starts every variant's process at once, sharing the cores; the final starts fewer:
    its estimated start-up is the probe's longest scaled by that share, never above it."""
    probe = stage("probe", {NAIVE_NAME: 200.0, **{f"workers{n}": 120.0 for n in (1, 2, 4)},
                            "foreach": 200.0, "fused": 200.0, "zero-grad-zeros": 200.0, "threads1": 250.0})
    for row in probe.rows:
        row.phases_s["start"] = 30.0
    probe.rows[-1].status = "skipped"  # started with the others, never timed: not counted as a process
    search.outcome.stages = [probe]
    rows = {r.variant: r for r in probe.rows}
    assert search._start_s(rows, 4) == pytest.approx(30.0 * 4 / 7)
    assert search._start_s(rows, 20) == 30.0
    steps = search.settings.trajectory_steps + 6 + 2
    one = search.cost([parse_train_variant("workers1")], 1)
    assert one == pytest.approx(1.2 * (30.0 * 4 / 7 + 3 * steps * 0.2 + steps * 0.12), rel=0.05)
