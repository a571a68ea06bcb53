"""Advice and claims are derived from raw samples: synthetic sample sets make them deterministic."""

import numpy as np

from pitstop.bench.claims import check_claims
from pitstop.bench.result import BenchResult
from pitstop.bench.variants.config import GRAD_MODES
from pitstop.engine.measurement import Measurement


def make_result(medians_ms, batch_size=256, claims_key="zoo:mlp", note=None, spread=0.01, n=200):
    rng = np.random.default_rng(0)
    rows = []
    for config, median in zip(GRAD_MODES, medians_ms, strict=True):
        samples = list(rng.normal(median, median * spread, n) / 1e3)
        rows.append(Measurement(config.name, config.to_dict(2), batch_size, replica_samples_s=[samples]))
    rows[0].note = note
    return BenchResult("zoo:mlp", {batch_size: "float32[256,1024]"}, {"timing": {"target": 0.02}},
                       {"threads": 2}, "train+grad", rows, complete=True, claims_key=claims_key)


def test_advice_recommends_the_measured_winner_with_its_interval():
    advice = make_result([10.0, 9.0, 7.0, 5.0]).advice()
    assert advice.startswith("Run inference as model.eval() with torch.inference_mode(): measured faster than "
                             "train+grad by 2.00x at batch 256 [95% CI")


def test_advice_when_nothing_is_faster_says_so_and_never_invents_a_gain():
    advice = make_result([10.0, 10.0, 10.0, 10.0], note="train mode changes the outputs").advice()
    assert advice.startswith("Grad modes make no meaningful difference for this model here")
    assert "marginal" not in advice
    assert "outputs differ in train mode" in advice


def test_a_tiny_significant_gain_is_called_marginal_not_recommended():
    advice = make_result([10.0, 9.8, 10.0, 10.0], spread=0.001).advice()
    assert advice.startswith("Grad modes make no meaningful difference")
    assert "marginal, under 5%: eval+grad 1.02x at batch 256 [95% CI" in advice


def test_mlp_claims_do_not_hold_when_measured_equal():
    checks = {(c.claim.text, c.batch_size): c for c in check_claims(make_result([10.0, 10.0, 10.0, 10.0]))}
    published = checks[("no_grad 25.6% faster than default", 256)]
    assert published.verdict == "does not hold here" and abs(published.measured) < 0.01


def test_claim_consistent_when_the_measured_cut_matches():
    # no_grad 25.6% less time than train+grad -> 7.44 ms instead of 10 ms
    checks = {c.claim.text: c for c in check_claims(make_result([10.0, 10.0, 7.44, 10.0]))}
    assert checks["no_grad 25.6% faster than default"].verdict == "consistent"


def test_claim_inconclusive_when_too_noisy():
    checks = {c.claim.text: c for c in check_claims(make_result([10.0, 10.0, 9.0, 10.0], spread=0.3, n=12))}
    assert checks["no_grad 25.6% faster than default"].verdict == "inconclusive"


def test_generic_claims_apply_to_any_model():
    texts = {c.claim.text for c in check_claims(make_result([10.0, 9.0, 8.0, 7.0], claims_key="zoo:cnn"))}
    assert texts == {"no_grad makes CPU inference 10-25% faster", "inference_mode is 10-20% faster than no_grad"}


def test_table_shows_claimed_beside_measured():
    text = make_result([10.0, 10.0, 7.0, 5.0]).table()
    assert "Claimed vs measured here" in text and "25.6%" in text and "34.4%" in text
