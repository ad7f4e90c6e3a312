"""The finite-sample ``monotone`` band for a non-decreasing calibration map and
its matching test of calibration (Dimitriadis, Dümbgen, Henzi, Puke & Ziegel
2023; docs/methods/11-tests-and-bands.md §11.9).

The sorted scores are cut into G groups of about equal count (ties kept
together); for each run of consecutive groups the mean of c over the run has
one-sided Clopper-Pearson bounds, Bonferroni over the runs (all of them, or
the dyadic ones) and both sides. If c is non-decreasing, lo(s) is the largest
lower bound of the runs whose largest score is <= s and hi(s) the smallest
upper bound of those whose smallest score is >= s. Guarantee: given the
scores, P(lo(s) <= c(s) <= hi(s) for every s) >= level for every n, for every
non-decreasing c -- smooth, with kinks or a step function.
:func:`monotone_band_test` rejects perfect calibration at alpha exactly when
the diagonal leaves the level 1 - alpha band on its default grid.
:func:`monotonicity_test` tests the band's own assumption, that c is
non-decreasing (a permutation test on the largest drop between runs of score
groups); ``reliability_band`` gates ``valid`` with it.
"""
from __future__ import annotations

import numpy as np
from scipy import stats

from .calibration_tests import CalibrationTestResult
from ..core.validation import check_binary


def score_groups(s_sorted: np.ndarray, n_groups: int) -> np.ndarray:
    """Group of every sorted score: consecutive runs of about n / G points, ties
    together, G = min(distinct scores, ``n_groups``). From the scores alone."""
    values, start = np.unique(s_sorted, return_index=True)
    if values.size <= n_groups:
        gid = np.arange(values.size)
    else:
        gid = np.floor(start * (n_groups / s_sorted.size)).astype(np.int64)
        gid = np.unique(gid, return_inverse=True)[1]
    counts = np.diff(np.append(start, s_sorted.size))
    return np.repeat(gid, counts)


def default_groups(n: int) -> int:
    """G for n points: 2 sqrt(n), between 10 and 400 (runs of >= sqrt(n) / 2 points)."""
    return int(np.clip(round(2.0 * np.sqrt(n)), 10, 400))


def _runs(s: np.ndarray, y: np.ndarray, n_groups):
    """Per run [j, k] of consecutive groups (j <= k): label sum, count, the
    groups' smallest and largest score, and (j, k)."""
    order = np.argsort(s, kind="stable")
    ss, yy = s[order], y[order]
    gid = score_groups(ss, default_groups(s.size) if n_groups is None else int(n_groups))
    G = int(gid[-1]) + 1
    cnt = np.bincount(gid, minlength=G).astype(np.float64)
    pos = np.bincount(gid, weights=yy, minlength=G)
    gmin = np.full(G, np.inf)
    gmax = np.full(G, -np.inf)
    np.minimum.at(gmin, gid, ss)
    np.maximum.at(gmax, gid, ss)
    j, k = np.triu_indices(G)
    cc = np.concatenate(([0.0], np.cumsum(cnt)))
    cp = np.concatenate(([0.0], np.cumsum(pos)))
    return cp[k + 1] - cp[j], cc[k + 1] - cc[j], gmin, gmax, j, k, ss, yy


def dyadic_runs(j: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Mask of the dyadic runs among runs [j, k] of groups: length L = 2^e and a
    start j that is a multiple of max(1, L / 2) (half-overlapping blocks of every
    dyadic length). About 4 G runs of G(G + 1) / 2, fixed by the scores alone."""
    length = k - j + 1
    dyadic = (length & (length - 1)) == 0
    return dyadic & (j % np.maximum(1, length // 2) == 0)


def monotone_ends(s, y, level, n_groups, dyadic=False):
    """(knots_lo, L, knots_hi, H, runs): lo(s) = L[k] for s in [gmax_k, gmax_k+1),
    0 below gmax_0; hi(s) = H[j] for s in (gmin_j-1, gmin_j], 1 above gmin_G-1.
    ``dyadic``: only the dyadic runs (:func:`dyadic_runs`), Bonferroni over them."""
    ysum, m, gmin, gmax, j, k, ss, yy = _runs(s, y, n_groups)
    G = gmin.size
    if dyadic:
        keep = dyadic_runs(j, k)
        ysum, m, j, k = ysum[keep], m[keep], j[keep], k[keep]
    a = (1.0 - level) / (2.0 * ysum.size)       # alpha / 2 per side over the runs
    with np.errstate(invalid="ignore"):
        lcb = np.where(ysum > 0, stats.beta.ppf(a, ysum, m - ysum + 1.0), 0.0)
        ucb = np.where(ysum < m, stats.beta.ppf(1.0 - a, ysum + 1.0, m - ysum), 1.0)
    best_lo = np.zeros(G)
    np.maximum.at(best_lo, k, lcb)              # largest lower bound of runs ending at k
    best_hi = np.ones(G)
    np.minimum.at(best_hi, j, ucb)              # smallest upper bound of runs starting at j
    L = np.maximum.accumulate(best_lo)
    H = np.minimum.accumulate(best_hi[::-1])[::-1]
    return gmax, L, gmin, H, (ysum, m, gmin, gmax, j, k, ss, yy)


def _isotonic_on(ss, yy, grid):
    from sklearn.isotonic import IsotonicRegression

    return IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(ss, yy).predict(grid)


def monotone_band(s, y, grid, level, n_groups=None, default_grid=False, dyadic=False):
    """(lo, hi, isotonic fit, grid) of the band on ``grid`` (sorted); ``default_grid``:
    add every jump of either end to the grid (the diagonal check is then exact)."""
    if s.size < 2:
        raise ValueError(f"method 'monotone' needs at least 2 points, got {s.size}")
    if n_groups is not None and (isinstance(n_groups, bool) or int(n_groups) < 1):
        raise ValueError(f"n_groups must be an integer >= 1, got {n_groups!r}")
    kl, L, kh, H, runs = monotone_ends(s, y, level, n_groups, dyadic)
    if default_grid:     # every jump of either end on the grid: the diagonal check is exact
        grid = np.unique(np.concatenate((grid, kl, kh)))
    il = np.searchsorted(kl, grid, side="right") - 1
    lo = np.where(il >= 0, L[np.clip(il, 0, None)], 0.0)
    ih = np.searchsorted(kh, grid, side="left")
    hi = np.where(ih < kh.size, H[np.clip(ih, None, kh.size - 1)], 1.0)
    return lo, hi, _isotonic_on(runs[6], runs[7], grid), grid


def monotone_band_test(scores, labels, *, n_groups=None,
                       dyadic: bool = False) -> CalibrationTestResult:
    """Test of perfect calibration matching the ``monotone`` band (``monotone_dyadic``
    with ``dyadic=True``): p-value the smallest alpha at which the diagonal leaves
    the band at level 1 - alpha, p = min(1, 2 N min_runs min(P(Bin(m, max score) >= y),
    P(Bin(m, min score) <= y))), N the number of runs (G (G + 1) / 2, or the dyadic
    ones). ``pvalue < alpha`` exactly when ``reliability_band(..., level=1 - alpha,
    method=...).holds_diagonal()`` is False. Valid under the null (the diagonal is a
    non-decreasing map); statistic: the smallest run p-value."""
    s, y = check_binary(scores, labels, need_both_classes=False)
    ysum, m, gmin, gmax, j, k, _, _ = _runs(s, y, n_groups)
    if dyadic:
        keep = dyadic_runs(j, k)
        ysum, m, j, k = ysum[keep], m[keep], j[keep], k[keep]
    # lower bound above the run's largest score <=> P(Bin(m, gmax) >= y) below the run's level
    p_up = np.where(ysum > 0, stats.binom.sf(ysum - 1, m, gmax[k]), 1.0)
    p_down = np.where(ysum < m, stats.binom.cdf(ysum, m, gmin[j]), 1.0)
    smallest = float(min(p_up.min(), p_down.min()))
    return CalibrationTestResult(statistic=smallest, pvalue=min(1.0, 2.0 * ysum.size * smallest),
                                 method="monotone_dyadic_band" if dyadic else "monotone_band",
                                 n=int(s.size))


# ------------------------------------------------------------------ the shape assumed
#: permutations of the labels behind :func:`monotonicity_test`'s p-value
SHAPE_RESAMPLES = 999


def shape_groups(n: int) -> int:
    """G of :func:`monotonicity_test` for n points: n^(1/3), between 8 and 32.

    Few, large groups: a map that turns down is told from noise by comparing
    long runs, and every extra group adds comparisons the permutation null
    pays for (pilot: benchmarks/measured/band_coverage.md, "Maps that turn
    down"). Declared from that pilot's tuning maps, not fitted."""
    return int(np.clip(round(n ** (1.0 / 3.0)), 8, 32))


def _largest_drop(cnt: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Per row of group label sums ``pos`` (R, G): the largest two-sample z of a
    drop, (mean of a run of groups - mean of a later run) / sqrt(1/m + 1/m'),
    over every pair of disjoint runs, the first left of the second; in units
    of the Bernoulli SD (the same for every row of a permutation null)."""
    G = cnt.size
    j, k = np.triu_indices(G)
    cc = np.concatenate(([0.0], np.cumsum(cnt)))
    m = cc[k + 1] - cc[j]
    a, b = np.nonzero(k[:, None] < j[None, :])          # run a ends before run b starts
    se = np.sqrt(1.0 / m[a] + 1.0 / m[b])
    out = np.empty(pos.shape[0])
    step = max(1, 4_000_000 // max(a.size, 1))          # rows per block: bounded memory
    for r0 in range(0, pos.shape[0], step):
        cp = np.concatenate((np.zeros((min(step, pos.shape[0] - r0), 1)),
                             np.cumsum(pos[r0:r0 + step], axis=1)), axis=1)
        mean = (cp[:, k + 1] - cp[:, j]) / m
        out[r0:r0 + step] = ((mean[:, a] - mean[:, b]) / se).max(axis=1, initial=-np.inf)
    return out


def monotonicity_test(scores, labels, *, n_groups=None, n_resamples: int = SHAPE_RESAMPLES,
                      seed=0) -> CalibrationTestResult:
    """Test of the ``monotone`` band's assumption, H0: c(s) = P(Y = 1 | S = s) is
    non-decreasing (docs/methods/11-tests-and-bands.md §11.9).

    The sorted scores are cut into G groups (:func:`score_groups`, G =
    :func:`shape_groups` (n) unless ``n_groups``); statistic: the largest
    standardised drop from a run of consecutive groups to a later run,
    max (ybar_R - ybar_R') / sqrt(pbar (1 - pbar) (1/m_R + 1/m_R')). p-value:
    the labels permuted ``n_resamples`` times over the scores (group sums
    drawn from the multivariate hypergeometric law), p = (1 + #{T* >= T}) /
    (1 + B). Exact for a constant map (the labels are then exchangeable);
    under a map that rises the drops only shrink, so it is conservative there:
    its size on non-decreasing maps and its power on maps that turn down were
    measured (benchmarks/measured/band_coverage.md, "Maps that turn down")."""
    s, y = check_binary(scores, labels, need_both_classes=False)
    if isinstance(n_resamples, bool) or int(n_resamples) < 1:
        raise ValueError(f"n_resamples must be an integer >= 1, got {n_resamples!r}")
    if n_groups is not None and (isinstance(n_groups, bool) or int(n_groups) < 2):
        raise ValueError(f"n_groups must be an integer >= 2, got {n_groups!r}")
    order = np.argsort(s, kind="stable")
    gid = score_groups(s[order], shape_groups(s.size) if n_groups is None else int(n_groups))
    G = int(gid[-1]) + 1
    cnt = np.bincount(gid, minlength=G)
    pos = np.bincount(gid, weights=y[order], minlength=G)
    total = int(round(pos.sum()))
    method = "monotonicity_permutation"
    if G < 2 or total in (0, s.size):         # one group, or one class: nothing can drop
        return CalibrationTestResult(statistic=0.0, pvalue=1.0, method=method, n=int(s.size),
                                     n_resamples=0, n_bins=G)
    null = np.random.default_rng(seed).multivariate_hypergeometric(
        cnt, total, size=int(n_resamples)).astype(np.float64)
    sd = np.sqrt(total / s.size * (1.0 - total / s.size))
    t = float(_largest_drop(cnt.astype(np.float64), pos[None, :])[0])
    tb = _largest_drop(cnt.astype(np.float64), null)
    p = (1.0 + np.count_nonzero(tb >= t - 1e-12)) / (1.0 + int(n_resamples))
    return CalibrationTestResult(statistic=t / sd, pvalue=float(p), method=method,
                                 n=int(s.size), n_resamples=int(n_resamples), n_bins=G)


__all__ = ["score_groups", "default_groups", "dyadic_runs", "monotone_ends", "monotone_band",
           "monotone_band_test", "monotonicity_test", "shape_groups", "SHAPE_RESAMPLES"]
