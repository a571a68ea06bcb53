import numpy as np
import pytest

from pitstop.stats import median_ci, speedup, summarize


def test_summary_of_known_samples():
    s = summarize([5.0, 1.0, 3.0, 2.0, 4.0])
    assert s.median == 3.0 and s.n == 5
    assert s.p10 == pytest.approx(1.4) and s.p90 == pytest.approx(4.6)
    assert s.ci95 == (1.0, 5.0)  # fewer than 6 samples: the range


def test_median_interval_contains_median_and_shrinks_with_n():
    rng = np.random.default_rng(0)
    small = rng.normal(10, 1, 30)
    large = rng.normal(10, 1, 3000)
    lo_s, hi_s = median_ci(small)
    lo_l, hi_l = median_ci(large)
    assert lo_s <= np.median(small) <= hi_s
    assert lo_l <= np.median(large) <= hi_l
    assert (hi_l - lo_l) < (hi_s - lo_s) / 5


def test_median_interval_has_about_95_percent_coverage():
    rng = np.random.default_rng(1)
    hits = sum(lo <= 0.0 <= hi for lo, hi in (median_ci(rng.standard_normal(50)) for _ in range(2000)))
    assert 0.93 <= hits / 2000 <= 0.99


def test_clear_speedup_is_faster():
    rng = np.random.default_rng(2)
    base = rng.normal(10.0, 0.3, 200)
    fast = rng.normal(5.0, 0.15, 200)
    r = speedup(base, fast)
    assert r.verdict == "faster" and r.median == pytest.approx(2.0, rel=0.03)
    assert r.ci95[0] > 1.9 and r.ci95[1] < 2.1


def test_same_distribution_is_within_noise():
    rng = np.random.default_rng(3)
    r = speedup(rng.normal(10, 1, 100), rng.normal(10, 1, 100))
    assert r.verdict == "within noise" and r.ci95[0] < 1.0 < r.ci95[1]


def test_regression_is_slower():
    rng = np.random.default_rng(4)
    assert speedup(rng.normal(10, 0.2, 100), rng.normal(11, 0.2, 100)).verdict == "slower"


def test_speedup_is_deterministic_and_needs_samples():
    assert speedup([1, 2, 3], [1, 2, 2]) == speedup([1, 2, 3], [1, 2, 2])
    with pytest.raises(ValueError):
        speedup([], [1.0])


def test_speedup_of_a_huge_sample_set_against_a_small_one():
    from pitstop.stats import speedup

    ratio = speedup([2e-3] * 20_000, [1e-3] * 50)  # the huge side gets fewer resamples: still comparable
    assert ratio.median == 2.0 and ratio.verdict == "faster"


def test_one_or_two_calls_a_side_never_give_a_verdict():
    from pitstop.stats import speedup

    assert speedup([2.0], [1.0]).verdict == "within noise"  # a bootstrap of one call is a point, not proof
    assert speedup([2.0, 2.1], [1.0, 1.0, 1.1, 1.0]).ci95[0] <= 1.0
    assert speedup([2.0, 2.1, 2.0], [1.0, 1.0, 1.1]).verdict == "faster"
