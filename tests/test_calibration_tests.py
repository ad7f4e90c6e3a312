"""Tests of perfect calibration (fitontest.inference.calibration_tests, docs/methods/11-tests-and-bands.md §11.8).

Independent checks: the Brownian-motion tails against a seeded random-walk
simulation and against the known means E sup|B| = sqrt(pi/2) and
E range = 2 sqrt(2/pi); the statistics against brute-force sums; the
p-values' null distribution against U(0, 1) (scipy.stats.kstest).
"""
import numpy as np
import pytest
from scipy import stats
from scipy.integrate import quad
from sklearn.base import clone

from fitontest import families
from fitontest.inference import calibration_tests as ct
from fitontest.families.base import estimates, used_estimates


def calibrated(n, seed):
    rng = np.random.default_rng(seed)
    s = rng.random(n)
    return s, (rng.random(n) < s).astype(float)


# ------------------------------------------------------------ Brownian motion tails
@pytest.fixture(scope="module")
def walks():
    """5000 seeded random walks of 1000 steps scaled to [0, 1], with W_0 = 0."""
    n, reps = 1000, 5000
    w = np.cumsum(np.random.default_rng(7).standard_normal((reps, n)), axis=1) / np.sqrt(n)
    return np.hstack((np.zeros((reps, 1)), w)), n


@pytest.mark.parametrize("x", [0.8, 1.2, 1.6, 2.0, 2.4])
def test_tails_match_a_simulated_brownian_motion(walks, x):
    w, n = walks
    # a walk observed at n steps misses part of the continuous excursion; Siegmund's
    # correction shifts each barrier by 0.5826 / sqrt(n)
    shift = 0.5826 / np.sqrt(n)
    se_tol = lambda p: 4.0 * np.sqrt(p * (1 - p) / w.shape[0]) + 0.004  # noqa: E731
    for observed, formula in [
            (np.abs(w).max(axis=1) >= x, ct.sup_abs_bm_sf(x + shift)[0]),
            (w.max(axis=1) >= x, ct.sup_bm_sf(x + shift)[0]),
            (w.max(axis=1) - w.min(axis=1) >= x + 0.6, ct.range_bm_sf(x + 0.6 + 2 * shift)[0])]:
        assert abs(observed.mean() - formula) < se_tol(formula)


def test_tails_integrate_to_the_known_means():
    # E X = int_0^inf P(X >= x) dx; E sup|B| = sqrt(pi/2), E range = 2 sqrt(2/pi)
    assert quad(lambda x: ct.sup_abs_bm_sf(x)[0], 0, 20, limit=200)[0] == \
        pytest.approx(np.sqrt(np.pi / 2), rel=1e-8)
    assert quad(lambda x: ct.range_bm_sf(x)[0], 0, 20, limit=200)[0] == \
        pytest.approx(2 * np.sqrt(2 / np.pi), rel=1e-8)
    assert quad(lambda x: ct.sup_bm_sf(x)[0], 0, 20)[0] == pytest.approx(np.sqrt(2 / np.pi))


def test_tail_series_join_smoothly_and_stay_in_range():
    x = np.array([0.0, 1e-6, 0.3, 1 - 1e-9, 1.0, 1 + 1e-9, 5.0, 40.0])
    for f in (ct.sup_abs_bm_sf, ct.range_bm_sf, ct.sup_bm_sf):
        v = f(x)
        assert np.all((v >= 0) & (v <= 1)) and np.all(np.diff(v) <= 1e-12)
        assert v[0] == 1.0 and v[-1] < 1e-300
    v = ct.sup_abs_bm_sf(x)
    assert v[3] == pytest.approx(v[5], abs=1e-8)


# ------------------------------------------------------------ statistics
def test_cumulative_statistics_match_a_brute_force_sum():
    s, y = calibrated(300, 1)
    order = np.argsort(s)
    c = np.concatenate(([0.0], np.cumsum(y[order] - s[order])))
    sigma = np.sqrt(np.sum(s * (1 - s)))
    assert ct.calibration_test(s, y, "kuiper").statistic == \
        pytest.approx((c.max() - c.min()) / sigma)
    assert ct.calibration_test(s, y, "ks").statistic == pytest.approx(np.abs(c).max() / sigma)
    assert ct.calibration_test(s, y, "ks", alternative="less").statistic == \
        pytest.approx(max(-c.min(), 0) / sigma)


def test_cumulative_statistics_ignore_the_order_among_tied_scores():
    rng = np.random.default_rng(2)
    s = rng.choice([0.1, 0.35, 0.6, 0.9], size=400)
    y = (rng.random(400) < s).astype(float)
    perm = rng.permutation(400)
    for method in ("kuiper", "ks"):
        a = ct.calibration_test(s, y, method)
        b = ct.calibration_test(s[perm], y[perm], method)
        assert a.statistic == pytest.approx(b.statistic) and a.pvalue == pytest.approx(b.pvalue)


def test_tcal_statistic_matches_a_pairwise_sum():
    s, y = calibrated(120, 3)
    ss = np.sort(s)
    r = (y - s)[np.argsort(s)]
    grid = ct.tcal_grid(s.size)
    got = ct._tcal_stats(r, ct._tcal_bounds(ss, grid), s.size)[0]
    for j, m in enumerate(grid[:6]):
        b = np.minimum(np.floor(ss * m), m - 1)
        total = 0.0
        for k in np.unique(b):
            rb = r[b == k]
            if rb.size >= 2:
                pairs = np.outer(rb, rb)
                total += (pairs.sum() - np.trace(pairs)) / (rb.size - 1)
        assert got[j] == pytest.approx(total / s.size, abs=1e-14)


def test_tcal_null_moments_are_exact():
    s = np.sort(np.random.default_rng(4).random(200))
    bounds = ct._tcal_bounds(s, ct.tcal_grid(200)[:5])
    null = ct._tcal_stats((np.random.default_rng(5).random((20000, 200)) < s) - s, bounds, 200)
    sd = ct._tcal_null_sd(s, bounds, 200)
    assert np.all(np.abs(null.mean(axis=0)) < 4 * sd / np.sqrt(20000))
    assert null.std(axis=0) / sd == pytest.approx(np.ones(5), abs=0.03)


@pytest.mark.parametrize("name", ["ece_es15", "ece_ew15"])
@pytest.mark.parametrize("p", [1, 2])
def test_batched_binning_statistic_equals_refitting(name, p):
    s, _ = calibrated(500, 6)
    ys = (np.random.default_rng(8).random((5, 500)) < s).astype(float)
    fam = families.get(name)
    refit = [used_estimates(estimates(clone(fam).fit(s, yb), s))[p - 1] for yb in ys]
    assert ct._used_on_rows(fam, s, ys, p) == pytest.approx(refit, abs=1e-14)


# ------------------------------------------------------------ null and alternative
@pytest.mark.parametrize("method", ["kuiper", "ks"])
def test_asymptotic_pvalues_are_uniform_under_calibration(method):
    pv = [ct.calibration_test(*calibrated(2000, 100 + i), method).pvalue for i in range(200)]
    assert stats.kstest(pv, "uniform").pvalue > 0.01


@pytest.mark.parametrize("method,kw", [("consistency", {"evaluator": "ece_es15"}),
                                       ("tcal", {}), ("tcal", {"combine": "bonferroni"})])
def test_resampling_pvalues_hold_their_level(method, kw):
    pv = np.array([ct.calibration_test(*calibrated(400, 500 + i), method, n_resamples=99,
                                            seed=i, **kw).pvalue for i in range(150)])
    assert np.all((pv > 0) & (pv <= 1))
    # exact Monte Carlo test: P(p <= a) <= a; 4 standard errors of 150 draws
    for a in (0.1, 0.3):
        assert np.mean(pv <= a) <= a + 4 * np.sqrt(a * (1 - a) / pv.size)
    if kw.get("combine") != "bonferroni":                 # Bonferroni is conservative
        assert stats.kstest(pv, "uniform").pvalue > 0.001


@pytest.mark.parametrize("method,kw", [("kuiper", {}), ("ks", {}), ("tcal", {}),
                                       ("consistency", {}),
                                       ("consistency", {"evaluator": "ece_es_sweep", "p": 2}),
                                       ("consistency", {"evaluator": "platt"})])
def test_a_grossly_miscalibrated_sample_is_rejected(method, kw):
    s, y = calibrated(1000, 9)
    r = ct.calibration_test(s ** 2, y, method, n_resamples=49, **kw)
    assert r.pvalue <= 0.05 and r.rejects(0.05)
    assert r.method == method and r.n == 1000


def test_one_sided_ks_sees_the_direction():
    s, y = calibrated(2000, 10)
    under = np.clip(s - 0.08, 0, 1)          # the labels are above the scores
    assert ct.calibration_test(under, y, "ks", alternative="greater").pvalue < 1e-6
    assert ct.calibration_test(under, y, "ks", alternative="less").pvalue > 0.5


def test_result_fields_and_seeding():
    s, y = calibrated(300, 11)
    a = ct.calibration_test(s, y, "consistency", n_resamples=30, seed=3)
    b = ct.calibration_test(s, y, "consistency", n_resamples=30, seed=3)
    assert a == b and a.evaluator == "ece_es15" and a.n_resamples == 30 and a.p == 1
    t = ct.calibration_test(s, y, "tcal", n_resamples=30)
    assert t.n_bins in set(ct.tcal_grid(300)) and t.p == 2
    fitted = families.get("ece_ew15").fit(s, y)            # an instance: cloned, named
    r = ct.calibration_test(s, y, "consistency", evaluator=fitted, n_resamples=30, seed=3)
    assert r.evaluator == "ece_ew15" and r.pvalue == ct.calibration_test(
        s, y, "consistency", evaluator="ece_ew15", n_resamples=30, seed=3).pvalue


def test_redraws_do_not_replay_the_stream_that_drew_the_data():
    # data drawn with default_rng(0) and a test with seed=0: were the redraws
    # default_rng(0) too, the first one would reuse the data's uniforms
    assert not np.allclose(ct._redraw_rng(0).random(5), np.random.default_rng(0).random(5))
    s = np.random.default_rng(0).random(300) ** 2
    first = next(ct._redraws(s, 3, ct._redraw_rng(0)))
    assert np.all(first.sum(axis=1) > 50)


def test_degenerate_scores():
    s = np.array([0.0, 1.0, 1.0, 0.0])
    assert ct.calibration_test(s, s, "kuiper").pvalue == 1.0
    assert ct.calibration_test(s, 1 - s, "ks").pvalue == 0.0


# ------------------------------------------------------------ bad input
@pytest.mark.parametrize("args,kw,match", [
    (([0.2, 0.5], [0, 1, 1]), {}, "differ in length"),
    (([0.2, 1.5], [0, 1]), {}, r"scores must lie in \[0, 1\]"),
    (([0.2, np.nan], [0, 1]), {}, "NaN"),
    (([0.2, 0.5], [0, 2]), {}, "labels must be 0 or 1"),
    (([0.2], [0]), {}, "at least 2 points"),
    (([0.2, 0.5], [0, 1], "chi2"), {}, "method must be one of"),
    (([0.2, 0.5], [0, 1], "kuiper"), {"alternative": "greater"}, "method='ks' only"),
    (([0.2, 0.5], [0, 1], "ks"), {"alternative": "bigger"}, "alternative must be"),
    (([0.2, 0.5], [0, 1], "tcal"), {"n_resamples": 0}, "n_resamples"),
    (([0.2, 0.5], [0, 1], "tcal"), {"combine": "fisher"}, "combine"),
    (([0.2, 0.5], [0, 1], "consistency"), {"evaluator": "nope"}, "unknown evaluator"),
    (([0.2, 0.5], [0, 1], "consistency"), {"evaluator": 3}, "evaluator must be"),
    (([0.2, 0.5], [0, 1], "consistency"), {"p": 3}, "p must be 1 or 2"),
])
def test_bad_input_raises_a_clear_error(args, kw, match):
    with pytest.raises(ValueError, match=match):
        ct.calibration_test(*args, **kw)
