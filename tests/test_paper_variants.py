"""The authors' variants (``variant="paper"``, ``sampling="paper"``; docs/differences.md).

Each test uses a hand-made input on which the default and the paper variant
give different results, both computed by hand (or by an independent
reference: numpy's legacy generator, ``numpy.polyfit``).
"""
import numpy as np
import pytest
from sklearn.base import clone

from fitontest.study import truth
from fitontest.data import synthetic
from fitontest.families.binning import BinningFamily
from fitontest.families.kde import KDEFamily
from fitontest.families.piecewise_de import PiecewiseDEFamily

# --------------------------------------------------------------- ES ties
S_TIES = np.array([0.1, 0.2, 0.2, 0.2, 0.3, 0.4])
Y_TIES = np.array([0, 0, 1, 1, 1, 0])


def test_es_ties_split_by_position_vs_kept_together():
    # array_split(6, 2): positions 0-2 | 3-5; the cut falls inside the run of 0.2s
    ours = BinningFamily(scheme="es", n_bins=2).fit(S_TIES, Y_TIES)
    paper = BinningFamily(scheme="es", n_bins=2, variant="paper").fit(S_TIES, Y_TIES)
    np.testing.assert_array_equal(ours.edges_, paper.edges_)          # edges 0, 0.2, 1
    # ours: {0.1} | {0.2, 0.2, 0.2, 0.3, 0.4}; shifts -0.1 and 0.6 - 0.26
    np.testing.assert_allclose(ours.predict([0.1, 0.2, 0.4]), [0.0, 0.54, 0.74])
    # paper: groups {0.1, 0.2, 0.2} (ybar 1/3, sbar 1/6) and {0.2, 0.3, 0.4}
    # (ybar 2/3, sbar 0.3); a score equal to the edge 0.2 gets the later group
    np.testing.assert_allclose(paper.bin_counts_, [3, 3])
    np.testing.assert_allclose(paper.predict([0.1, 0.2, 0.4]),
                               [0.1 + 1 / 6, 0.2 + 2 / 3 - 0.3, 0.4 + 2 / 3 - 0.3])
    np.testing.assert_allclose(paper.predict_flat([0.1, 0.2]), [1 / 3, 2 / 3])
    assert clone(paper).get_params()["variant"] == "paper"


def test_es100_paper_truth_splits_ties_by_position():
    # 150 distinct values, each twice: 100 groups of 3 cut every other pair
    v = np.arange(150) / 150.0
    s = np.repeat(v, 2)
    y = (np.arange(300) % 3 == 0).astype(int)                # labels by position
    groups_y = y.reshape(100, 3).mean(axis=1)
    starts = s[::3]                                           # first score of every group
    # a score takes the last group whose first score is <= it
    expect = np.array([groups_y[np.flatnonzero(starts <= x)[-1]] for x in s])
    np.testing.assert_allclose(truth.estimate("es100_flat_paper", s, y), expect)
    assert not np.allclose(truth.estimate("es100_flat", s, y), expect)


# ----------------------------------------------------- empty training bin
def test_ew_cv_empty_training_bin_predicts_zero():
    # leave-one-out (4 folds of 1 point: the shuffle does not matter); B = 2
    # equal-width bins [0, .5), [.5, 1]. Leaving out 0.9 empties bin 2.
    s, y = np.array([0.1, 0.2, 0.3, 0.9]), np.array([0, 1, 1, 1])
    kw = dict(scheme="ew", selection="cv", max_bins=2, n_folds=4)
    ours = BinningFamily(**kw).fit(s, y)
    paper = BinningFamily(**kw, variant="paper").fit(s, y)
    # B = 1, held-out squared errors (one bin, slope-1 shift from the others)
    b1 = np.mean([(0.9 + 2 / 3 - 0.2 - 1) ** 2,
                  (0.1 + 1 - 1.4 / 3) ** 2,
                  (0.2 + 2 / 3 - 1.3 / 3 - 1) ** 2,
                  (0.3 + 2 / 3 - 1.2 / 3 - 1) ** 2])
    # B = 2: 0.1 -> 0.85, 0.2 -> 0.5, 0.3 -> 0.65; 0.9 -> 0.9 (ours) or 0 (paper)
    common = (0.85 - 0) ** 2 + (0.5 - 1) ** 2 + (0.65 - 1) ** 2
    np.testing.assert_allclose(ours.cv_scores_, [b1, (common + 0.01) / 4])
    np.testing.assert_allclose(paper.cv_scores_, [b1, (common + 1.0) / 4])


def test_empty_fitted_bin_maps_to_zero_in_paper_variant():
    s, y = np.array([0.1, 0.2, 0.3]), np.array([0, 1, 1])
    ours = BinningFamily(scheme="ew", n_bins=2).fit(s, y)
    paper = BinningFamily(scheme="ew", n_bins=2, variant="paper").fit(s, y)
    np.testing.assert_allclose(ours.predict([0.8]), [0.8])
    np.testing.assert_allclose(paper.predict([0.8]), [0.0])
    np.testing.assert_allclose(paper.predict_flat([0.8, 0.1]), [0.0, 2 / 3])


# -------------------------------------------------------------- PL_DE clip
def test_pl_de_paper_variant_does_not_clip():
    s, y = np.array([0.0, 0.1, 0.9, 1.0]), np.array([0, 0, 1, 1])
    kw = dict(max_segments=1, n_folds=4)
    ours = PiecewiseDEFamily(**kw).fit(s, y)
    paper = PiecewiseDEFamily(**kw, variant="paper").fit(s, y)
    slope = 0.9 / 0.82                                       # least squares by hand
    line = np.array([0.5 - 0.5 * slope, 0.5 + 0.5 * slope])  # at 0 and 1
    np.testing.assert_allclose(paper.predict([0.0, 1.0]), line)
    np.testing.assert_allclose(ours.predict([0.0, 1.0]), [0.0, 1.0])
    # leave-one-out CV score of the single line, clipped or not (numpy.polyfit)
    raw, clipped = [], []
    for i in range(4):
        keep = np.arange(4) != i
        pred = np.polyval(np.polyfit(s[keep], y[keep], 1), s[i])
        raw.append((pred - y[i]) ** 2)
        clipped.append((np.clip(pred, 0, 1) - y[i]) ** 2)
    assert not np.isclose(np.mean(raw), np.mean(clipped))
    np.testing.assert_allclose(paper.cv_scores_, [np.mean(raw)], rtol=1e-9)
    np.testing.assert_allclose(ours.cv_scores_, [np.mean(clipped)], rtol=1e-9)


# ------------------------------------------------------------------- KDE
def test_kde_paper_variant_uses_the_negative_class():
    # skewed classes, separated: 5 negatives around 0.25, 2 positives at 0.75 / 0.8
    s = np.array([0.2, 0.25, 0.3, 0.2, 0.3, 0.75, 0.8])
    y = np.array([0, 0, 0, 0, 0, 1, 1])
    factor = 14.0 ** -0.2                                    # (2 n)^(-1/5)
    ours = KDEFamily().fit(s, y)
    paper = KDEFamily(variant="paper").fit(s, y)
    np.testing.assert_allclose(ours.bandwidth_, 0.025 * factor)          # std of positives
    np.testing.assert_allclose(paper.bandwidth_, np.sqrt(0.002) * factor)  # of negatives
    # inside each cluster only one class has density: c = 0 / 1 under both
    for fam in (ours, paper):
        np.testing.assert_allclose(fam.predict([0.25, 0.775]), [0.0, 1.0], atol=1e-12)
    # where both densities vanish: ours interpolates between the clusters'
    # edges and is constant beyond them; the paper carries the value from the
    # lower-score side, and 0 for the negative class (c = 1) below all data
    assert 0.0 < ours.predict([0.5])[0] < 1.0
    np.testing.assert_allclose(paper.predict([0.5]), [0.0])
    np.testing.assert_allclose(ours.predict([0.0]), [0.0])
    np.testing.assert_allclose(paper.predict([0.0]), [1.0])


def test_variant_names_are_checked():
    with pytest.raises(ValueError, match="variant"):
        KDEFamily(variant="theirs").fit([0.1, 0.9], [0, 1])
    with pytest.raises(ValueError, match="variant"):
        BinningFamily(variant="theirs").fit([0.1, 0.9], [0, 1])
    with pytest.raises(ValueError, match="sampling"):
        synthetic.sample("square", 0.01, 10, 0, sampling="theirs")


# -------------------------------------------------------------- sampling
@pytest.mark.parametrize("seed,n", [(0, 1000), (3, 37)])
def test_paper_sampling_matches_the_legacy_global_generator(seed, n):
    state = np.random.get_state()
    try:
        np.random.seed(seed + n)
        c_ref = np.sort(np.random.dirichlet([1, 1], n)[:, 0])
        y_ref = np.random.binomial(n=1, p=c_ref)
    finally:
        np.random.set_state(state)
    before = np.random.get_state()[1].copy()
    p, y, c = synthetic.sample("sqrt", 0.05, n, seed, sampling="paper")
    np.testing.assert_array_equal(np.random.get_state()[1], before)   # global RNG untouched
    np.testing.assert_array_equal(c, c_ref)
    np.testing.assert_array_equal(y, y_ref)
    np.testing.assert_allclose(p, synthetic.forward("sqrt", 0.05)(c_ref))
    p_t, c_t = synthetic.test_sample("sqrt", 0.05, n, seed=seed, sampling="paper")
    np.testing.assert_array_equal(c_t, c_ref)                          # same seed + n
