"""smece's batched bootstrap replicates equal the refit loop (the base class's path)."""
import tracemalloc

import numpy as np
import pytest

from fitontest import families
from fitontest.families import smece as sm
from fitontest.families.base import CalibrationFamily
from fitontest.inference.intervals import ce_interval

TOL = 1e-10


def sample(kind, n, seed):
    rng = np.random.default_rng(seed)
    if kind == "calibrated":                  # true CE 0
        s = rng.random(n)
        y = rng.random(n) < s
    elif kind == "miscalibrated":
        s = rng.beta(2, 5, n)
        y = rng.random(n) < s ** 2
    elif kind == "ends":                      # saturated scores: near, and exactly at, 0 and 1
        s = rng.beta(0.2, 0.2, n)
        s[: n // 10] = rng.choice([0.0, 1.0, 1e-5, 1 - 1e-5], n // 10)
        y = rng.random(n) < np.clip(s + 0.1, 0, 1)
    else:                                     # ties: scores on a grid of 21 values
        s = np.round(rng.random(n) * 20) / 20
        y = rng.random(n) < s ** 0.7
    return s, y.astype(float)


def resamples(n, rows, seed):
    """Bootstrap index matrix with a repeated row and a row of one point
    repeated n times (a single score: the extreme tie)."""
    idx = np.random.default_rng(seed).integers(0, n, size=(rows, n))
    idx[1] = idx[0]
    idx[-1] = idx[-1, 0]
    return idx


def refit(fam, s, y, blocks, p):
    return CalibrationFamily.bootstrap_replicates(fam, s, y, blocks, p=p)


@pytest.mark.parametrize("kind,n,rows,eps", [
    ("calibrated", 50, 12, 1e-3), ("calibrated", 2000, 8, 1e-3),
    ("calibrated", 10000, 4, 1e-3), ("calibrated", 3000, 6, 0.05),
    ("miscalibrated", 50, 12, 1e-3), ("miscalibrated", 1000, 8, 1e-3),
    ("miscalibrated", 10000, 4, 1e-3), ("ends", 200, 10, 1e-3), ("ends", 3000, 6, 1e-3),
    ("ties", 100, 10, 1e-3), ("ties", 5000, 4, 1e-3)])
def test_batched_equals_refit(kind, n, rows, eps):
    s, y = sample(kind, n, seed=n + rows)
    fam = families.get("smece", eps=eps).fit(s, y)
    idx = resamples(n, rows, seed=n)
    # two blocks (as resample_chunks gives them): the rows stay in order
    blocks = [idx[:3], idx[3:]]
    for p in (1, 2):
        want = refit(fam, s, y, blocks, p)
        got = fam.bootstrap_replicates(s, y, blocks, p=p)
        assert got.shape == want.shape == (rows,)
        np.testing.assert_allclose(got, want, rtol=0, atol=TOL)


def test_bandwidths_below_the_coarse_grid():
    """A large calibrated sample: sigma* < 0.01, so the bisection and the
    final estimate use the finer grids (m > 1001)."""
    s, y = sample("calibrated", 40_000, seed=2)
    fam = families.get("smece").fit(s, y)
    assert fam.sigma_ < 0.01
    idx = resamples(s.size, 3, seed=0)
    for p in (1, 2):
        np.testing.assert_allclose(fam.bootstrap_replicates(s, y, [idx], p=p),
                                   refit(fam, s, y, [idx], p), rtol=0, atol=TOL)


@pytest.mark.parametrize("sigma", [0.3, 0.05, 0.0123, 20 / 2002, 20 / 2003, 0.004, 0.0011])
def test_rows_at_a_fixed_bandwidth_equal_smece_sigma(sigma):
    """The batched kernel sums at any bandwidth, including odd and even grid
    sizes (20 / 2002: m = 1002), against the scalar smece_sigma."""
    s, y = sample("ends", 500, seed=3)
    idx = resamples(s.size, 4, seed=1)
    counts = np.stack([np.bincount(ix, minlength=s.size) for ix in idx]).astype(float)
    m = int(sm._grid_sizes(np.array([sigma]))[0][0])
    assert m == sm.kernel_grid(sigma).size
    spectra = sm._mirrored_spectra(counts, sm._split_matrix(s, s - y, m), m)
    got = sm._smece_rows(spectra, np.full(len(idx), sigma), m)
    for p in (1, 2):
        want = [sm.smece_sigma(s[ix], y[ix], sigma, p=p) for ix in idx]
        np.testing.assert_allclose(got[p - 1], want, rtol=0, atol=TOL)


def test_sub_blocks_give_the_same_replicates(monkeypatch):
    """A tiny memory ceiling splits blocks into one-row sub-blocks; the
    replicates do not change (beyond rounding: batched FFTs may round
    differently from single ones)."""
    s, y = sample("calibrated", 10000, seed=5)
    fam = families.get("smece").fit(s, y)
    idx = resamples(s.size, 5, seed=2)
    whole = fam.bootstrap_replicates(s, y, [idx])
    monkeypatch.setattr(sm, "BLOCK_FLOATS", 1000)
    np.testing.assert_allclose(fam.bootstrap_replicates(s, y, [idx]), whole, rtol=0, atol=1e-14)


def test_peak_memory_does_not_grow_with_the_rows_of_a_block():
    """Sub-blocks bound the working arrays: ten times the rows in one block
    add (far) less than the counts of the extra rows would take."""
    s, y = sample("miscalibrated", 2000, seed=4)
    fam = families.get("smece").fit(s, y)

    def peak(rows):
        idx = resamples(s.size, rows, seed=rows)
        tracemalloc.start()
        try:
            fam.bootstrap_replicates(s, y, [idx])
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    small, large = peak(64), peak(640)
    assert large - small < 576 * s.size * 8 / 4, ((large - small) / 2 ** 20, small / 2 ** 20)


@pytest.mark.parametrize("p", [1, 2])
def test_inverted_interval_equals_the_refit_path(monkeypatch, p):
    s, y = sample("miscalibrated", 300, seed=7)
    fast = ce_interval("smece", s, y, method="inverted", n_boot=40, p=p)
    monkeypatch.setattr(sm.SmoothECE, "bootstrap_replicates",
                        CalibrationFamily.bootstrap_replicates)
    slow = ce_interval("smece", s, y, method="inverted", n_boot=40, p=p)
    assert (fast.lo, fast.hi) == pytest.approx((slow.lo, slow.hi), abs=TOL, rel=0)
    assert fast.n_boot == slow.n_boot and fast.estimate == slow.estimate


def test_bad_requests_are_named():
    s, y = sample("ties", 60, seed=0)
    fam = families.get("smece").fit(s, y)
    idx = resamples(s.size, 3, seed=0)
    with pytest.raises(ValueError, match="p must be 1 or 2"):
        fam.bootstrap_replicates(s, y, [idx], p=3)
    with pytest.raises(ValueError, match="2-D"):
        fam.bootstrap_replicates(s, y, [idx[0]])
    with pytest.raises(ValueError, match="at least 2"):
        fam.bootstrap_replicates(s, y, [idx[:, :1]])
    with pytest.raises(ValueError, match="at least 2"):
        fam.bootstrap_replicates(s, y, [idx[:, :0]])
    with pytest.raises(ValueError, match="must lie in"):
        fam.bootstrap_replicates(s, y, [idx + 1])
    assert fam.bootstrap_replicates(s, y, []).shape == (0,)
    assert families.get("smece").batched_replicates is False
