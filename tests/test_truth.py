"""True-map estimators on a hold-out."""
import numpy as np
import pytest
from sklearn.isotonic import IsotonicRegression

from fitontest.families.binning import BinningFamily
from fitontest.study import truth


@pytest.fixture(scope="module")
def holdout():
    rng = np.random.default_rng(0)
    s = rng.beta(2, 5, 200_000)
    s[:10] = 0.0
    s[10:20] = 1.0
    y = (rng.random(s.size) < np.sqrt(s)).astype(np.int8)
    return s, y


def test_names():
    assert {"isotonic", "es100_flat", "es100_slope1"} <= set(truth.names())
    with pytest.raises(KeyError, match="unknown truth estimator"):
        truth.estimate("nope", [0.1, 0.2], [0, 1])


def test_isotonic_truth_is_isotonic_fit_on_holdout(holdout):
    s, y = holdout
    ref = IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip").fit(s, y).predict(s)
    assert np.allclose(truth.estimate("isotonic", s, y), ref, atol=1e-15)


def test_es100_truths_are_flat_and_slope1_bins(holdout):
    s, y = holdout
    order = np.argsort(s, kind="stable")
    groups = np.array_split(order, 100)
    # no ties at the group boundaries in this sample except the runs of 0 and 1
    flat = truth.estimate("es100_flat", s, y)
    slope = truth.estimate("es100_slope1", s, y)
    g = groups[50]
    assert np.allclose(flat[g], y[g].mean())
    assert np.allclose(slope[g], np.clip(s[g] + y[g].mean() - s[g].mean(), 0, 1))
    assert flat.min() >= 0 and slope.min() >= 0 and slope.max() <= 1
    # every label-based truth is close to the real map sqrt(s)
    for name in truth.names():
        if truth.needs_posterior(name):
            continue
        c = truth.estimate(name, s, y)
        assert np.mean(np.abs(c - np.sqrt(s))) < 0.02, name


def test_truth_validates_input():
    with pytest.raises(ValueError, match="NaN"):
        truth.estimate("isotonic", [0.1, np.nan], [0, 1])
    with pytest.raises(ValueError, match="0 or 1"):
        truth.estimate("es100_flat", [0.1, 0.2], [0, 3])


def test_posterior_truth_beats_label_truth_and_needs_the_posterior():
    """With the known event posterior q(x) the truth has far less variance."""
    rng = np.random.default_rng(5)
    n = 30_000
    s = rng.random(n)
    c = 0.2 + 0.6 * s ** 2                       # true map E[Y | s]
    q = np.clip(c + rng.uniform(-0.15, 0.15, n), 0, 1)   # E[q | s] = c (no clipping here)
    y = (rng.random(n) < q).astype(int)
    err_post = np.mean(np.abs(truth.estimate("posterior", s, y, posterior=q) - c))
    err_lab = np.mean(np.abs(truth.estimate("isotonic", s, y) - c))
    assert err_post < 0.5 * err_lab
    with pytest.raises(ValueError, match="needs the known posterior"):
        truth.estimate("posterior", s, y)


@pytest.mark.parametrize("steps", [None, 7])
def test_estimates_on_one_sort_equal_separate_fits_bit_for_bit(steps):
    """estimate_all sorts the points once for the order-free estimators; every
    map equals scikit-learn's (or the estimator's own) fit on the points in
    their given order, exactly -- with continuous scores and with scores of
    few values (a step calibrator), ties broken by posterior and label."""
    rng = np.random.default_rng(11)
    n = 50_000
    s = rng.beta(2, 3, n)
    if steps:
        s = np.round(s * steps) / steps
    q = np.clip(s ** 1.5 + rng.normal(0, 0.1, n), 0, 1)
    y = (rng.random(n) < q).astype(np.int64)
    iso = dict(y_min=0.0, y_max=1.0, out_of_bounds="clip")
    ref = {"isotonic": IsotonicRegression(**iso).fit(s, y.astype(float)).predict(s),
           "posterior": IsotonicRegression(**iso).fit(s, q).predict(s)}
    names = ["isotonic", "es100_flat_paper", "posterior"]
    maps = truth.estimate_all(names, s, y, posterior=q)
    assert list(maps) == names
    for name in ref:
        assert truth.order_free(name)
        assert np.array_equal(maps[name], ref[name]), name
    # not order-free: the paper's ES bins split ties by position, so they get the input order
    assert not truth.order_free("es100_flat_paper")
    paper = BinningFamily(scheme="es", n_bins=100, selection="fixed", map="flat", variant="paper")
    assert np.array_equal(maps["es100_flat_paper"], paper.fit(s, y).predict(s))
    # one estimator at a time gives the same maps
    for name in names:
        assert np.array_equal(truth.estimate(name, s, y, posterior=q), maps[name]), name
