"""Parametric and wrapped families against independent implementations."""
import warnings

import numpy as np
import pytest
from scipy.optimize import minimize

from fitontest import families
from fitontest.core.validation import logit


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    s = rng.beta(2, 3, 2000)
    y = (rng.random(2000) < s ** 1.5).astype(float)
    return s, y


def test_beta_equals_betacal(data):
    from betacal import BetaCalibration

    s, y = data
    fam = families.get("beta").fit(s, y)
    with warnings.catch_warnings():
        ref = BetaCalibration(parameters="abm").fit(s, y)
    grid = np.linspace(0.001, 0.999, 500)
    assert np.allclose(fam.predict(grid), ref.predict(grid), rtol=0, atol=1e-12)


def test_beta_leaves_warning_filters_alone(data):
    before = list(warnings.filters)
    families.get("beta").fit(*data)
    assert warnings.filters == before


def test_isotonic_equals_sklearn(data):
    from sklearn.isotonic import IsotonicRegression

    s, y = data
    fam = families.get("isotonic").fit(s, y)
    ref = IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip").fit(s, y)
    grid = np.linspace(0, 1, 1001)
    assert np.allclose(fam.predict(grid), ref.predict(grid), rtol=0, atol=1e-15)


def test_platt_reaches_the_smoothed_logloss_optimum(data):
    s, y = data
    n_pos, n_neg = y.sum(), y.size - y.sum()
    t = np.where(y == 1, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))
    z = np.log(np.clip(s, 1e-16, None)) - np.log(np.clip(1 - s, 1e-16, None))

    def loss(w):
        f = w[0] * z + w[1]
        return np.sum(np.logaddexp(0, f) - t * f)

    ref = minimize(loss, x0=[1.0, 0.0], method="BFGS", options={"gtol": 1e-10})
    fam = families.get("platt").fit(s, y)
    assert loss([fam.a_, fam.b_]) <= ref.fun + 1e-9
    assert np.allclose([fam.a_, fam.b_], ref.x, atol=1e-5)
    assert np.allclose(fam.predict(s), 1 / (1 + np.exp(-(fam.a_ * z + fam.b_))))


def test_platt_on_a_single_class_is_a_finite_constant():
    fam = families.get("platt").fit([0.2, 0.4, 0.9], [1, 1, 1])
    c = fam.predict([0.0, 0.5, 1.0])
    assert np.all(np.isfinite(c)) and np.ptp(c) < 1e-6 and c[0] == pytest.approx(4 / 5, abs=1e-6)


def test_temperature_is_the_logloss_optimum(data):
    s, y = data
    z = logit(s)

    def loss(T):
        f = z / T
        return np.sum(np.logaddexp(0, f) - y * f)

    fam = families.get("temp_1vsrest").fit(s, y)
    T = fam.temperature_
    Ts = T * np.exp(np.linspace(-0.5, 0.5, 1001))
    assert loss(T) <= min(loss(u) for u in Ts) + 1e-9
    assert np.allclose(fam.predict(s), 1 / (1 + np.exp(-z / T)))
    # recovers a known temperature
    rng = np.random.default_rng(1)
    zz = rng.normal(0, 3, 20000)
    yy = (rng.random(20000) < 1 / (1 + np.exp(-zz / 2.5))).astype(float)
    fam = families.get("temp_1vsrest").fit(1 / (1 + np.exp(-zz)), yy)
    assert fam.temperature_ == pytest.approx(2.5, rel=0.05)


def test_scaling_binning_maps_bins_to_mean_platt_output(data):
    s, y = data
    fam = families.get("scaling_binning").fit(s, y)
    out = fam.predict(np.linspace(0, 1, 5001))
    assert np.unique(out).size <= 10 and np.all(np.diff(out) >= 0)
    # reconstruct: Platt on the first half of the seeded split, bins on the second
    perm = np.random.default_rng(0).permutation(s.size)
    second = perm[s.size // 2:]
    q = 1 / (1 + np.exp(-(fam.a_ * logit(s[second]) + fam.b_)))
    groups = np.array_split(np.sort(q), 10)
    assert np.allclose(fam.bin_values_, [g.mean() for g in groups])
    assert fam.chosen_hyperparameter() == 10
