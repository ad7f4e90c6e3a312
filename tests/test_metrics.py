"""metrics: CEAC, Spearman, debiased ECE helpers, KCE."""
import numpy as np
import pytest
from scipy.spatial.distance import pdist
from scipy.stats import spearmanr

from fitontest import metrics


def test_ceac_is_mean_gap_to_the_true_map_of_calibrated_scores():
    c_hat = np.array([0.2, 0.5, 0.9])
    c_prime = np.array([0.25, 0.5, 0.7])
    assert metrics.ceac(c_hat, c_prime) == pytest.approx((0.05 + 0 + 0.2) / 3)
    assert metrics.ceac(c_hat, c_prime, p=2) == pytest.approx((0.0025 + 0.04) / 3)
    with pytest.raises(ValueError, match="differ in length"):
        metrics.ceac(c_hat, c_prime[:2])
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        metrics.ceac(c_hat, [0.1, 0.2, 1.2])


def test_spearman_matches_scipy_with_ties():
    rng = np.random.default_rng(0)
    for _ in range(20):
        a = rng.integers(0, 5, 8).astype(float)
        b = a + rng.normal(0, 2, 8)
        if np.ptp(a) == 0:
            continue
        assert metrics.spearman(a, b) == pytest.approx(spearmanr(a, b).statistic, abs=1e-12)
    assert metrics.spearman([1, 2, 3], [10, 20, 30]) == pytest.approx(1.0)
    assert metrics.spearman([3, 2, 1], [10, 20, 30]) == pytest.approx(-1.0)


def test_spearman_constant_inputs():
    assert metrics.spearman([0.1, 0.1, 0.1], [1, 2, 3]) == 0.0       # evaluator cannot rank
    assert np.isnan(metrics.spearman([1, 2, 3], [0.5, 0.5, 0.5]))    # nothing to rank
    with pytest.raises(ValueError, match="at least 2"):
        metrics.spearman([1.0], [2.0])
    with pytest.raises(ValueError, match="finite"):
        metrics.spearman([1.0, np.nan], [2.0, 3.0])


def test_folded_normal_mean_against_monte_carlo():
    rng = np.random.default_rng(1)
    for d, sig in [(0.0, 0.1), (0.05, 0.1), (-0.2, 0.05), (0.3, 0.0), (0.01, 0.3)]:
        z = rng.normal(size=2_000_000)
        mc = np.mean(np.abs(d + sig * z))
        assert metrics.folded_normal_mean(d, sig) == pytest.approx(mc, abs=3e-4)


def test_debiased_terms_by_hand():
    n = np.array([4, 1, 0, 10])
    sb = np.array([0.3, 0.9, np.nan, 0.5])
    yb = np.array([0.5, 1.0, np.nan, 0.5])
    t2 = metrics.debiased_bin_terms(n, sb, yb, p=2)
    assert t2 == pytest.approx([0.04 - 0.25 / 3, 0.01, 0.0, -0.25 / 9])
    assert metrics.debiased_ece(n, sb, yb, p=2) == pytest.approx(
        (4 * t2[0] + t2[1] + 10 * t2[3]) / 15)
    t1 = metrics.debiased_bin_terms(n, sb, yb, p=1)
    assert t1[1] == pytest.approx(0.1)                 # sigma = 0: plain |gap|
    assert t1[2] == 0.0


def naive_skce(s, y, bw):
    total = 0.0
    n = len(s)
    for i in range(n):
        for j in range(n):
            if i != j:
                total += (y[i] - s[i]) * (y[j] - s[j]) * np.exp(-(s[i] - s[j]) ** 2 / (2 * bw ** 2))
    return total / (n * (n - 1))


def test_kce_equals_double_sum_and_is_chunk_invariant():
    rng = np.random.default_rng(2)
    s = rng.random(57)
    y = (rng.random(57) < s ** 2).astype(float)
    ref = naive_skce(s, y, 0.2)
    assert metrics.kce(s, y, bandwidth=0.2) == pytest.approx(ref, rel=1e-12, abs=1e-15)
    assert metrics.kce(s, y, bandwidth=0.2, chunk=5) == pytest.approx(ref, rel=1e-12, abs=1e-15)
    bw = metrics.median_heuristic(s)
    assert metrics.kce(s, y) == pytest.approx(naive_skce(s, y, bw), rel=1e-12)


def test_median_heuristic_is_the_median_pairwise_distance():
    rng = np.random.default_rng(3)
    for n in (6, 50, 51):
        s = rng.random(n)
        d = np.sort(pdist(s[:, None]))
        lower_median = d[(d.size - 1) // 2]
        assert metrics.median_heuristic(s) == pytest.approx(lower_median, abs=1e-11)
    assert metrics.median_heuristic([0.5, 0.5, 0.5, 0.7]) == 0.0
