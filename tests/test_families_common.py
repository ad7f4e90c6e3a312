"""The estimator contract of every registered family, and the synthetic shapes."""
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from fitontest import families, metrics
from fitontest.data import synthetic

MINE = ["ece_ew15", "ece_es15", "ece_ew_sweep", "ece_es_sweep", "ece_ew_cv", "ece_es_cv",
        "platt", "temp_1vsrest", "beta", "isotonic", "scaling_binning", "kde",
        "spline_natural", "spline_cubic", "spline_parabolic", "pl_de", "pl_de2", "kce"]
ALL = families.names()
# small settings for fitting tests only (the contract is the same)
FAST = {"pl_de": dict(max_segments=3, n_folds=5), "pl_de2": dict(max_segments=2, n_folds=5)}


def test_my_families_are_registered():
    assert set(MINE) <= set(ALL)


@pytest.mark.parametrize("name", ALL)
def test_sklearn_contract(name):
    fam = families.get(name)
    params = fam.get_params()
    twin = clone(fam)
    assert twin.get_params() == params and twin is not fam
    assert type(families.get(name, **params)) is type(fam)
    with pytest.raises(NotFittedError):
        fam.predict([0.2, 0.4])
    with pytest.raises(NotFittedError):
        fam.ce_estimate([0.2, 0.4])
    if fam.hyper_attr is not None:
        with pytest.raises(NotFittedError):
            fam.chosen_hyperparameter()


@pytest.mark.parametrize("name", ALL)
def test_bad_input_is_named(name):
    fam = families.get(name)
    n = 40
    s = np.linspace(0.05, 0.95, n)
    y = np.arange(n) % 2
    with pytest.raises(ValueError, match="NaN"):
        fam.fit(np.r_[s[:-1], np.nan], y)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        fam.fit(np.r_[s[:-1], 1.2], y)
    with pytest.raises(ValueError, match="0 or 1"):
        fam.fit(s, np.r_[y[:-1], 2])
    with pytest.raises(ValueError, match="differ in length"):
        fam.fit(s, y[:-1])
    if fam.needs_both_classes:
        with pytest.raises(ValueError, match="single class"):
            fam.fit(s, np.ones(n))
    folds = fam.get_params().get("n_folds")
    if folds is not None and fam._n_folds_needed() is not None:
        with pytest.raises(ValueError, match="fewer points"):
            fam.fit(s[: folds - 1], np.arange(folds - 1) % 2)


@pytest.mark.parametrize("name", MINE)
def test_scores_exactly_zero_and_one(name):
    rng = np.random.default_rng(0)
    s = rng.random(300)
    s[:15], s[15:30] = 0.0, 1.0
    y = (rng.random(300) < s).astype(float)
    fam = families.get(name, **FAST.get(name, {})).fit(s, y)
    if not fam.provides_map:
        assert np.isfinite(fam.ce_estimate(s, p=1)) and np.isfinite(fam.ce_estimate(s, p=2))
        return
    c = fam.predict(np.r_[0.0, 1.0, s])
    assert np.all(np.isfinite(c))
    if not name.startswith("ece_"):          # the slope-1 binning map is not clipped
        assert np.all((c >= 0) & (c <= 1))
    assert np.isfinite(fam.ce_estimate(s)) and np.isfinite(fam.chosen_hyperparameter()) \
        or fam.hyper_attr is None
    # single-class sets are fine for families that do not need both classes
    if not fam.needs_both_classes:
        families.get(name, **FAST.get(name, {})).fit(s, np.zeros(300))


def test_isotonic_cmee_identical_across_shapes():
    """c and y depend only on (seed, n); the shapes are monotone maps of c, so
    isotonic regression fits the same values at the same points."""
    values = []
    for shape in synthetic.SHAPES:
        p, y, c = synthetic.sample(shape, 0.05, 1000, seed=3)
        fam = families.get("isotonic").fit(p, y)
        values.append(metrics.cmee(fam.predict(p), c))
    assert np.allclose(values, values[0], rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", [m for m in MINE if m != "kce"])
def test_every_map_beats_identity_on_a_strong_miscalibration(name):
    shape, ce = "beta2", 0.1
    p, y, c = synthetic.sample(shape, ce, 2000, seed=0)
    p_test, c_test = synthetic.test_sample(shape, ce, 50_000, seed=0)
    fam = families.get(name, **FAST.get(name, {})).fit(p, y)
    identity = metrics.cmee(p_test, c_test)
    assert metrics.cmee(fam.predict(p_test), c_test) < 0.6 * identity


@pytest.mark.parametrize("name", MINE)
def test_constant_scores_and_tiny_sets(name):
    """Degenerate but valid input: every score equal; and n just above the folds."""
    import warnings

    rng = np.random.default_rng(1)
    for s, y in [(np.full(40, 0.3), np.arange(40) % 2),
                 (rng.random(12), np.arange(12) % 2)]:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            fam = families.get(name, **FAST.get(name, {})).fit(s, y)
            out = fam.predict(np.linspace(0, 1, 7)) if fam.provides_map else fam.ce_estimate(s)
        assert np.all(np.isfinite(out))
