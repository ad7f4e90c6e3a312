"""Memory of the binning families' bootstrap replicates (issue #23.5): the
replicates are computed from per-code counts of resamples drawn in chunks, so
no R x n array (indices, codes, labels) is ever held. tracemalloc sees numpy's
allocations; the bounds are fractions of what one R x n int64 array needs."""
import tracemalloc

import numpy as np
import pytest

from fitontest import families
from fitontest.families.base import resample_chunks
from fitontest.inference.intervals import ce_interval

N = 200_000


def _sample(n=N, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.random(n)
    return s, (rng.random(n) < s ** 1.2).astype(float)


def _peak(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_interval_at_200k_stays_under_half_an_r_by_n_index_array():
    s, y = _sample()
    n_boot = 100
    peak = _peak(lambda: ce_interval("ece_es15", s, y, n_boot=n_boot, seed=1, method="basic"))
    assert peak < n_boot * N * 8 / 2, peak / 2 ** 20


def test_inverted_interval_peak_does_not_grow_with_the_replicates():
    """The default (inverted) draws its worlds' resamples in chunks of a fixed
    number of cells: 5x the replicates (9 worlds x 100 rows instead of 9 x 20)
    leave the peak where it was, far below one row of indices per replicate."""
    s, y = _sample()
    small = _peak(lambda: ce_interval("ece_es15", s, y, n_boot=40, seed=1, method="inverted"))
    large = _peak(lambda: ce_interval("ece_es15", s, y, n_boot=200, seed=1, method="inverted"))
    # holding the 9 x 80 extra rows' indices would add 720 N int64
    assert large - small < 80 * N * 8 / 8, ((large - small) / 2 ** 20, small / 2 ** 20)
    assert large < 9 * 100 * N * 8 / 4, large / 2 ** 20


@pytest.mark.parametrize("name", ["ece_es_sweep", "ece_es_cv"])
def test_replicates_peak_does_not_grow_with_the_number_of_resamples(name):
    s, y = _sample()
    fam = families.get(name)
    def peak(n_boot):           # resamples drawn two rows at a time
        return _peak(lambda: fam.bootstrap_replicates(
            s, y, resample_chunks(N, n_boot, 0, max_bytes=2 * N * 8)))

    small, large = peak(4), peak(28)
    # holding the 24 extra resamples' indices alone would add 24 n int64
    assert large - small < 24 * N * 8 / 4, ((large - small) / 2 ** 20, small / 2 ** 20)


def test_chunked_resamples_are_one_index_matrix_in_rows():
    """resample_chunks draws exactly the rows of one (R, n) integers call, so
    chunking changes no interval for a given seed."""
    whole = np.random.default_rng(7).integers(0, 1001, size=(37, 1001))
    parts = np.concatenate(list(resample_chunks(1001, 37, 7, max_bytes=5 * 1001 * 8)))
    np.testing.assert_array_equal(parts, whole)
    assert len(list(resample_chunks(1001, 37, 7, max_bytes=5 * 1001 * 8))) == 8


def test_replicates_do_not_depend_on_how_the_resamples_are_chunked():
    rng = np.random.default_rng(3)
    s = np.round(rng.random(3000), 3)
    y = (rng.random(3000) < s).astype(float)
    for name in ("ece_es_sweep", "ece_ew_cv"):
        fam = families.get(name)
        one = fam.bootstrap_replicates(s, y, resample_chunks(3000, 9, 4, max_bytes=3000 * 8))
        all_ = fam.bootstrap_replicates(s, y, [np.random.default_rng(4).integers(0, 3000,
                                                                                  (9, 3000))])
        np.testing.assert_allclose(one, all_, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name", ["ece_es_cv", "ece_ew_cv", "ece_es_sweep", "ece_es15"])
def test_replicates_of_rows_shorter_than_the_sample_equal_refitting(name):
    """The consistency worlds of ``intervals`` (method "inverted") draw n
    points from a doubled sample of 2n (each score with label 0 and with
    label 1): the batched path must cut its CV folds by the row's length, as
    a refit on that row does."""
    rng = np.random.default_rng(4)
    n = 300
    s = rng.random(n)
    s2, y2 = np.concatenate((s, s)), np.concatenate((np.zeros(n), np.ones(n)))
    idx = rng.integers(0, n, size=(5, n)) + n * (rng.random((5, n)) < s[None, :] ** 1.3)
    fam = families.get(name)
    batched = fam.bootstrap_replicates(s2, y2, [idx], p=1)
    from fitontest.families.base import used_estimates, estimates
    refit = [used_estimates(estimates(families.get(name).fit(s2[r], y2[r]), s2[r]))[0]
             for r in idx]
    np.testing.assert_allclose(batched, refit, rtol=0, atol=1e-12)
    iv = ce_interval(name, s, (rng.random(n) < s).astype(float), method="inverted", n_boot=40)
    assert 0.0 <= iv.lo <= iv.hi
