"""Smooth ECE: agreement with the reference package relplot, and its kernel."""
import numpy as np
import pytest

from fitontest.study import experiment
from fitontest import families
from fitontest.families import smece as sm

relplot = pytest.importorskip("relplot")


def sample(seed, n, shape=1.5):
    rng = np.random.default_rng(seed)
    s = rng.beta(2, 5, n)
    y = (rng.random(n) < s ** shape).astype(float)
    return s, y


@pytest.mark.parametrize("seed,n,shape", [(0, 50, 1.5), (1, 400, 1.5), (2, 3000, 0.7),
                                          (3, 20000, 1.0), (4, 1000, 3.0)])
def test_smece_matches_relplot(seed, n, shape):
    s, y = sample(seed, n, shape)
    want, want_sigma = relplot.smECE(s, y, return_width=True)
    fam = families.get("smece").fit(s, y)
    assert fam.sigma_ == pytest.approx(want_sigma, abs=1e-12)
    assert fam.ce_estimate(s) == pytest.approx(want, abs=1e-6)
    # the workflow's estimate is the same number
    assert experiment.estimates(fam, s)["ce_est"] == pytest.approx(want, abs=1e-6)


def test_smece_at_fixed_sigma_matches_relplot():
    s, y = sample(5, 2000)
    for sigma in (0.01, 0.05, 0.3):
        assert sm.smece_sigma(s, y, sigma) == pytest.approx(
            relplot.smECE_sigma(s, y, sigma), abs=1e-9)


def test_smece_is_the_fixed_point():
    s, y = sample(6, 5000)
    value, sigma = sm.smece(s, y)
    # sigma is the upper end of a bracket of width 2^-10 around the crossing
    assert sigma >= sm.smece_sigma(s, y, sigma)
    assert sigma - 2 ** -10 < sm.smece_sigma(s, y, sigma - 2 ** -10)


def test_perfectly_calibrated_large_sample_is_small():
    rng = np.random.default_rng(7)
    s = rng.random(200_000)
    y = (rng.random(s.size) < s).astype(float)
    assert families.get("smece").fit(s, y).smece_ < 0.01
    # a miscalibrated sample of the same size is far from 0
    y_bad = (rng.random(s.size) < s ** 2).astype(float)
    assert families.get("smece").fit(s, y_bad).smece_ > 0.1


def test_reflected_kernel_keeps_all_mass_in_the_unit_interval():
    """Every point's kernel integrates to 1 over [0, 1], also on the end nodes
    (where relplot's discretisation keeps only half: the one deviation)."""
    sigma = 0.05
    for point in (0.0, 0.0004, 0.01, 0.5, 0.99, 0.9996, 1.0):
        grid, _, den = sm.smooth_sums(np.array([point]), np.zeros(1), sigma)
        assert np.trapezoid(den, grid) == pytest.approx(1.0, abs=2e-3)
    # uniform data: the smoothed density stays flat up to the ends (no boundary dip)
    s = np.linspace(0, 1, 20001)
    grid, _, den = sm.smooth_sums(s, np.zeros_like(s), sigma)
    assert np.allclose(den / s.size, 1.0, atol=5e-3)


def test_map_is_the_smoothed_label_mean():
    """Away from the ends, c_hat(t) = sum_i K(t - s_i) y_i / sum_i K(t - s_i) (plain Gaussian)."""
    s, y = sample(8, 3000)
    fam = families.get("smece").fit(s, y)
    t = np.array([0.2, 0.3, 0.4])
    w = np.exp(-0.5 * ((t[:, None] - s[None, :]) / fam.sigma_) ** 2)
    w += np.exp(-0.5 * ((t[:, None] + s[None, :]) / fam.sigma_) ** 2)  # reflection at 0
    direct = t - (w @ (s - y)) / w.sum(axis=1)
    assert fam.predict(t) == pytest.approx(direct, abs=2e-3)
    c = fam.predict(np.linspace(0, 1, 1001))
    assert np.all((c >= 0) & (c <= 1))


def test_ce_estimate_needs_the_fitting_sample():
    s, y = sample(9, 300)
    fam = families.get("smece").fit(s, y)
    with pytest.raises(ValueError, match="fitting sample"):
        fam.ce_estimate(s[:10])
    with pytest.raises(ValueError, match="p must be"):
        fam.ce_estimate(s, p=3)
    with pytest.raises(ValueError, match="eps"):
        families.get("smece", eps=0).fit(s, y)
