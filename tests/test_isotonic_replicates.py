"""IsotonicFamily.bootstrap_replicates (per-score counts + scipy PAV) against
the base class's refit loop (scikit-learn refitted on every resample)."""
import numpy as np
import pytest

from fitontest.inference import intervals
from fitontest.families import isotonic
from fitontest.families.base import CalibrationFamily, resample_chunks
from fitontest.families.isotonic import IsotonicFamily

TOL = 1e-12


def refit(scores, labels, resamples, p):
    """The reference: the base class's default, one sklearn refit per row."""
    return CalibrationFamily.bootstrap_replicates(IsotonicFamily(), scores, labels, resamples, p=p)


def fast(scores, labels, resamples, p):
    return IsotonicFamily().bootstrap_replicates(scores, labels, resamples, p=p)


def world(n, power, seed, decimals=None):
    """Scores s ~ U(0,1) with labels ~ Bernoulli(s^power) (power 1: calibrated)."""
    rng = np.random.default_rng(seed)
    s = rng.random(n)
    if decimals is not None:
        s = np.round(s, decimals)
    return s, (rng.random(n) < s ** power).astype(float)


def assert_same(s, y, resamples, p):
    resamples = list(resamples)
    want, got = refit(s, y, resamples, p), fast(s, y, resamples, p)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=TOL)
    return got


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("n, power, decimals, rows", [
    (20, 1.0, None, 30), (20, 2.0, 1, 30),             # tiny: few distinct scores
    (300, 1.0, None, 12), (300, 0.6, 2, 12),           # calibrated; heavy ties
    (2000, 1.8, None, 6), (2000, 1.0, 2, 6),
    (10000, 1.5, None, 2), (10000, 1.0, 2, 2),
])
def test_equals_refit_on_bootstrap_resamples(n, power, decimals, rows, p):
    s, y = world(n, power, seed=n + int(10 * power), decimals=decimals)
    got = assert_same(s, y, resample_chunks(n, rows, seed=3), p)
    assert np.all(got > 0) and np.unique(got).size > 1      # real, differing estimates


@pytest.mark.parametrize("p", [1, 2])
def test_rows_of_one_label_and_one_score(p):
    s, y = world(200, 1.3, seed=5, decimals=2)
    ones, zeros = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    rng = np.random.default_rng(0)
    idx = np.stack([rng.choice(ones, 200), rng.choice(zeros, 200),
                    np.full(200, ones[0]), np.r_[np.full(100, zeros[0]), np.full(100, ones[0])],
                    rng.integers(0, 200, 200)])
    got = assert_same(s, y, [idx], p)
    # an all-one-label row fits a constant map at that label
    assert got[0] == pytest.approx(np.mean(np.abs(1.0 - s[idx[0]]) ** p), abs=TOL)
    assert got[1] == pytest.approx(np.mean(s[idx[1]] ** p), abs=TOL)


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("n, t, decimals", [(50, 0.0, None), (500, 0.0, 2), (500, 1.0, None),
                                             (3000, 0.5, None)])
def test_equals_refit_on_augmented_worlds(n, t, decimals, p):
    """The augmented sample of intervals.world_replicates: scores twice, labels
    0 then 1, a resampled point taking label 1 with probability c_t(s)."""
    s, y = world(n, 1.6, seed=n, decimals=decimals)
    c = np.clip(s + t * intervals.reference_gap(s, y), 0.0, 1.0)
    rng = np.random.default_rng(1)
    idx = rng.integers(0, n, size=(8, n))
    aug = idx + n * (rng.random((8, n)) < c[idx])
    assert_same(np.concatenate((s, s)), np.r_[np.zeros(n), np.ones(n)], [aug], p)


@pytest.mark.parametrize("p", [1, 2])
def test_pools_near_duplicate_scores_as_sklearn(p):
    """sklearn pools distinct scores closer than 1e-15 to their group's first
    score and interpolates between groups; without that pooling the estimates
    differ (so this test can fail)."""
    rng = np.random.default_rng(2)
    n = 1000
    s = np.concatenate([rng.random(n // 2), 1.0 - rng.integers(0, 20, n // 4) * 2.0 ** -53,
                        0.3 + rng.integers(0, 30, n // 4) * 1e-16])
    y = (rng.random(n) < 0.7).astype(float)
    idx = rng.integers(0, n, size=(10, n))
    got = assert_same(s, y, [idx], p)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(isotonic, "TIE_EPS", 0.0)
        assert np.abs(fast(s, y, [idx], p) - got).max() > 1e-4


def test_chunks_and_blocks_do_not_change_the_result(monkeypatch):
    s, y = world(400, 1.4, seed=9)
    idx = np.random.default_rng(4).integers(0, 400, size=(7, 400))
    whole = fast(s, y, [idx], 1)
    monkeypatch.setattr(isotonic, "CHUNK_CELLS", 3 * 2 * 400)     # 3 rows per bincount
    np.testing.assert_array_equal(fast(s, y, [idx[:2], idx[2:]], 1), whole)
    np.testing.assert_array_equal(fast(s, y, [idx], 1), whole)


def test_bad_input_and_subclass_fallback():
    s, y = world(50, 1.0, seed=1)
    fam = IsotonicFamily()
    with pytest.raises(ValueError, match="p must be 1 or 2"):
        fam.bootstrap_replicates(s, y, [np.zeros((1, 50), int)], p=3)
    with pytest.raises(ValueError, match=r"\(k, n\) integer index"):
        fam.bootstrap_replicates(s, y, [np.arange(50)])
    with pytest.raises(ValueError, match="at least 2 points"):
        fam.bootstrap_replicates(s, y, [np.zeros((3, 1), int)])
    with pytest.raises(IndexError):
        fam.bootstrap_replicates(s, y, [np.full((1, 50), 50)])
    assert fam.bootstrap_replicates(s, y, [np.empty((0, 50), int)]).shape == (0,)
    with pytest.raises(ValueError, match="integer index"):
        fam.bootstrap_replicates(s, y, [np.zeros((2, 50))])

    class Shifted(IsotonicFamily):       # another map: the shortcut must not apply
        def _predict(self, s):
            return np.clip(super()._predict(s) + 0.1, 0, 1)

    idx = np.random.default_rng(0).integers(0, 50, size=(3, 50))
    want = CalibrationFamily.bootstrap_replicates(Shifted(), s, y, [idx], p=1)
    np.testing.assert_array_equal(Shifted().bootstrap_replicates(s, y, [idx], p=1), want)


@pytest.mark.parametrize("p", [1, 2])
def test_inverted_interval_equals_the_refit_path(monkeypatch, p):
    s, y = world(300, 1.5, seed=11)
    got = intervals.ce_interval("isotonic", s, y, method="inverted", n_boot=40, p=p)
    monkeypatch.setattr(IsotonicFamily, "bootstrap_replicates",
                        CalibrationFamily.bootstrap_replicates)
    want = intervals.ce_interval("isotonic", s, y, method="inverted", n_boot=40, p=p)
    assert got.estimate == want.estimate
    assert got.lo == pytest.approx(want.lo, abs=TOL) and got.hi == pytest.approx(want.hi, abs=TOL)
    assert got.lo < got.hi and got.n_boot == want.n_boot
