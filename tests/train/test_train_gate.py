"""The fidelity gate on real training: a variant that never steps the optimizer, or whose fp16
gradients underflow without loss scaling, is rejected; bf16 on a CNN, whose batch-norm gradients
bend, is admitted because its trajectory stays inside the fp32 seeds' band."""

import pytest
import torch

from pitstop.bench.variants.handlers import Target
from pitstop.engine.source import SpecSource
from pitstop.engine.timer import TimingPolicy
from pitstop.models.inputs import parse_input_spec
from pitstop.models.spec import parse_model_spec
from pitstop.train import fidelity
from pitstop.train.config import NAIVE, TrainConfig
from pitstop.train.group import TrainGroup
from pitstop.train.problem import LossSpec, OptimizerSpec, ProblemRequest
from pitstop.train.settings import TrainSettings

QUICK = TimingPolicy(budget_s=0.3, min_samples=3, target=0.5, warmup_min_calls=1, warmup_max_s=0.2)


def group(models_file: str, name: str, loss: LossSpec | None = None, **settings) -> TrainGroup:
    source = SpecSource(parse_model_spec(f"{models_file}:{name}"), parse_input_spec("float32[B,3,16,16]"
                                                                                   if name == "cnn" else
                                                                                   "float32[B,16]"))
    problem = ProblemRequest(OptimizerSpec.named("adamw", lr=1e-2), loss or LossSpec.of(None, True),
                             target_spec="int64[B]{0,4}")
    return TrainGroup(source, TrainSettings(batch_size=16, threads=1, **settings), problem)


def session_run(g: TrainGroup, recipe: str, seed: int, steps: int = 20) -> tuple[dict, dict]:
    """A recipe run inline by the very session a worker runs: (prepare, trajectory)."""
    from pitstop.train.worker import TrainSession

    session = TrainSession()
    try:
        session.setup(str(g.payload), recipe, 1, "cpu", QUICK.to_dict(), seed=seed, module=g.module,
                      workdir=str(g.workdir / f"s{seed}{abs(hash(recipe))}"))
        return session.prepare(), session.trajectory(steps)
    finally:
        session.restore()


def test_a_variant_that_never_steps_is_rejected_by_the_trajectory(models_file):
    g = group(models_file, "mlp")
    try:
        g.prepare()
        naive = g.recipe(NAIVE)
        reference = [session_run(g, naive, seed)[1]["losses"] for seed in range(3)]
        band = fidelity.band(reference, 0.05)
        assert band["reference_decrease"] > 0.3  # the fp32 runs learn
        broken = naive.replace("        optimizer.step()", "        pass  # broken: the optimizer never steps")
        prepared, run = session_run(g, broken, 0)
        assert fidelity.gradient_verdict(prepared["gradients"], g.seed_cosine) is None  # step-1 gradients are right
        why = fidelity.trajectory_verdict([run["losses"]], band)
        assert why is not None and "outside the fp32 band" in why
        assert fidelity.trajectory_verdict(reference, band) is None
    finally:
        g.close()


def test_fp16_without_scaling_on_an_underflowing_loss_is_rejected_by_the_gradients(models_file):
    tiny = LossSpec("cross-entropy x 1e-9", body="return torch.nn.functional.cross_entropy(first_tensor(output), "
                                                 "target) * 1e-9")
    g = group(models_file, "mlp", loss=tiny)
    try:
        g.prepare()
        unscaled = g.recipe(TrainConfig(precision="bf16-autocast")).replace("dtype=torch.bfloat16",
                                                                            "dtype=torch.float16")
        prepared, _ = session_run(g, unscaled, 0, steps=1)
        why = fidelity.gradient_verdict(prepared["gradients"], g.seed_cosine)
        assert why is not None and "cosine" in why
        assert prepared["gradients"]["overall_cosine"] < 0.5
    finally:
        g.close()


def test_scaler_and_band_arithmetic():
    assert fidelity.scaler_verdict(0, 100) is None and fidelity.scaler_verdict(1, 100) is None
    assert "2 of 100" in fidelity.scaler_verdict(2, 100)
    band = fidelity.band([[2.0, 1.0], [2.0, 1.2]], 0.1)
    assert band["low"] == pytest.approx(1.0 - 0.09) and band["high"] == pytest.approx(1.2 + 0.09)


@pytest.mark.skipif(not Target.detect("cpu", torch.nn.Linear(1, 1), []).native_bf16, reason="needs native bf16")
def test_bf16_on_a_batchnorm_cnn_is_admitted(models_file):
    g = group(models_file, "cnn", replicas=1, isolate=False)  # the gate's verdict is logic: inline, no worker processes
    rows = []
    try:
        g.run([NAIVE, TrainConfig(precision="bf16-autocast")], rows, policy=QUICK, replicas=1, trajectory=True)
    finally:
        g.close()
    naive, bf16 = rows
    assert naive.status == "ok" and len(naive.fidelity["trajectory"]["losses"]) == 3  # the three fp32 seeds
    grads = bf16.fidelity["gradients"]
    assert bf16.status == "ok", bf16.reason
    assert grads["min_cosine"] < grads["overall_cosine"]  # some parameter bends more than the whole
    assert bf16.samples_s and naive.samples_s


def test_a_variants_runs_are_judged_as_draws_of_the_references_process():
    """Every run in the band, or their mean in it with none beyond it by more than the seeds' range: on
    draws of one normal process (4 reference runs, 3 of the variant, no widening) "every run inside"
    rejects most unchanged variants, the mean rule few; a shift of 3 standard deviations stays rejected."""
    import numpy as np

    rng = np.random.default_rng(0)

    def admitted(shift: float, trials: int = 2000) -> tuple[float, float]:
        every = by_draws = 0
        for _ in range(trials):
            ref, var = rng.normal(1.0, 0.01, 4), rng.normal(1.0 + shift, 0.01, 3)
            band = {**fidelity.band([[2.0, f] for f in ref], 0.0), "widened_by": 0.0}
            band["low"], band["high"] = float(ref.min()), float(ref.max())  # no widening: the rule alone
            every += not fidelity.outside_band(var.tolist(), band)
            by_draws += fidelity.finals_verdict(var.tolist(), band) is None
        return every / trials, by_draws / trials

    every, by_draws = admitted(0.0)
    assert every == pytest.approx(4 * 3 / (7 * 6), abs=0.04)  # the extremes of 7 draws both reference runs
    assert by_draws > 0.7 > 0.35 > every
    assert max(admitted(0.03)) < 0.1  # a variant that trains worse is still caught


def test_finals_verdict_names_why():
    band = fidelity.band([[2.0, 1.0], [2.0, 1.1]], 0.0)  # widened by 1% of the final: [0.9895, 1.1105]
    assert fidelity.finals_verdict([1.0, 1.05, 1.1], band) is None
    assert fidelity.finals_verdict([1.12, 1.05, 1.0], band) is None  # one run out, the mean in, by < the range
    assert "their mean" in fidelity.finals_verdict([1.13, 1.12, 1.1], band)
    assert "own range" in fidelity.finals_verdict([1.3, 1.0, 1.0, 1.0, 1.0], band)
    assert "not finite" in fidelity.finals_verdict([float("nan"), 1.0], band)
    assert "outside the fp32 band" in fidelity.finals_verdict([1.12], band)  # one run is judged as itself
    assert fidelity.outside_band([1.12, 1.0], band) == [1.12]
