"""Confidence bands for the calibration map c(s) = P(Y = 1 | S = s) (docs/methods.md §11.9).

:func:`reliability_band` returns a :class:`ReliabilityBand`: lower and upper
ends ``lo``, ``hi`` on a grid ``s`` at nominal ``level``, the method that built
it, whether it claims to hold the map at every grid point at once
(``simultaneous``) or at each point on its own, and whether its coverage was
measured to hold (``valid``, as :class:`~fitontest.intervals.CEInterval`).

Methods (``method=``; alpha = 1 - level):

- ``"monotone"`` (simultaneous, finite sample; Dimitriadis, Dümbgen, Henzi,
  Puke & Ziegel 2023): the sorted scores are cut into G groups of about equal
  count (ties kept together; G = every distinct score up to ``n_groups``). For
  each of the G(G + 1) / 2 runs of consecutive groups the mean of c over the
  run's points has one-sided Clopper-Pearson bounds at alpha / (G (G + 1))
  each (Bonferroni over runs and sides). If c is non-decreasing, c(s) is at
  least the mean over any run whose largest score is <= s and at most the mean
  over any run whose smallest score is >= s, so lo(s) is the largest lower
  bound of the first kind and hi(s) the smallest upper bound of the second.
  Guarantee: given the scores, P(lo(s) <= c(s) <= hi(s) for every s in
  [0, 1]) >= level for every n, if c is non-decreasing (the binomial bound is
  valid for the mean of unequal Bernoulli means at these small levels:
  Hoeffding 1956). Both ends are non-decreasing.
- ``"monotone_dyadic"`` (simultaneous, finite sample): the same with only the
  dyadic runs (length 2^e, start a multiple of max(1, 2^(e-1)); about 4 G of
  them) and Bonferroni over their number. Same guarantee (the runs are fixed by
  the scores alone); a few per cent narrower.
- ``"clopper_pearson"`` (pointwise; the scikit-learn prototype's recipe): B
  equal-count bins, each bin's two-sided Clopper-Pearson interval for its
  fraction of positives at ``level``, drawn as a step over the bin.
  ``"clopper_pearson_bonferroni"``: the same at 1 - alpha / B per bin
  (simultaneous over the bins' means, not over c(s) inside a bin).
- ``"bootstrap"`` (pointwise; the peers' percentile recipe): the bins' label
  means on ``n_boot`` resamples (bins fixed), central ``level`` percentile
  range per bin. A bin whose labels are all 0 (or all 1) gives every replicate
  the same mean: zero width (scikit-learn issue 30664).
- ``"family_bootstrap"`` (simultaneous by construction, asymptotic): the map
  of a fit-on-test family (``family``, default ``"isotonic"``) refitted on
  ``n_boot`` resamples; band = fitted map +/- q sd(s), sd the replicates'
  standard deviation on the grid and q the ``level`` quantile of the
  replicates' largest standardised deviation over the grid (sup-t band).
- ``"world"`` (simultaneous, calibrated in the project's worlds,
  :mod:`fitontest.worlds`): around a fit-on-test family (``family``, default
  ``"reference"``: the worlds' reference map; any registered family with a
  map), labels redrawn ``n_boot`` (default 200) times at the user's scores
  from the reference map, the family refitted per world; q the ``level``
  quantile of the largest |refit - world map| / sd over the grid (sup-t, the
  worlds' bias included), band = fit +/- k q sd with k = WORLD_BAND_SCALE
  calibrated once on the coverage benchmark. No finite-sample guarantee: its
  coverage is what benchmarks/band_coverage.py measured.
- ``"auto"`` (default): :data:`AUTO`, chosen by benchmarks/band_coverage.py
  (the narrowest method whose simultaneous coverage was >= level - 3 points in
  every cell at level 0.9); below ``WORLD_MIN_POINTS`` points, ``monotone``.

``valid``: False where benchmarks/band_coverage.py measured this method short
(the coverage it claims, simultaneous or pointwise, below ``VALID_COVERAGE``
by more than 2 Monte Carlo SEs in some cell at level 0.9; a
:class:`BandCoverageWarning` is issued), True where no cell was short, None
where not measured.

The band and the calibration test agree for ``"monotone"`` (and
``"monotone_dyadic"`` with ``dyadic=True``): :func:`monotone_band_test`
rejects perfect calibration at alpha exactly when the diagonal leaves the
level 1 - alpha band on its default grid (which holds every jump of the
band's step ends). The ``"world"`` band has no matching test.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np
from scipy import stats
from sklearn.base import clone

from . import families
from .families.binning import BinningFamily, assign_bins, bin_stats
from .calibration_tests import CalibrationTestResult
from .core.validation import check_binary
from .intervals import IntervalCoverageWarning

_BUILDERS: dict[str, Callable] = {}
SIMULTANEOUS: dict[str, bool] = {}


def band_method(name: str, simultaneous: bool):
    """Register a band builder ``f(s, y, grid, level, **options) -> (lo, hi, fit, grid)``."""
    def register(fn):
        _BUILDERS[name] = fn
        SIMULTANEOUS[name] = simultaneous
        return fn
    return register


# "auto" at any level: the narrowest method whose simultaneous coverage was within
# 3 points of 0.9 in every cell of benchmarks/measured/band_coverage.md: "world" (mean
# width 0.213 against 0.292 for monotone_dyadic and 0.297 for monotone; its smallest
# cells: stairs under U at n = 3000, 91.8 %, and at n = 500, 92.7 %)
AUTO = "world"
# "auto" below WORLD_MIN_POINTS points (world refuses them): the finite-sample band
AUTO_SMALL = "monotone"
WORLD_MIN_POINTS = 20

# (smallest coverage of the kind the method claims, samples of that cell) at level
# 0.9 over the cells of benchmarks/measured/band_coverage.md (benchmarks/band_coverage.py)
# (run of 2026-11-26, --reps 110: 36 cells of 110 samples; the smallest cell decides)
MEASURED_MIN_COVERAGE: dict[str, tuple[float, int]] = {
    "monotone": (0.991, 110),
    "monotone_dyadic": (0.964, 110),
    "world": (0.918, 110),
    "clopper_pearson": (0.518, 110),
    "clopper_pearson_bonferroni": (0.000, 110),
    "bootstrap": (0.501, 110),
    "family_bootstrap": (0.000, 110),
}
VALID_COVERAGE = 0.87
DEFAULT_GRID = 201


class BandCoverageWarning(IntervalCoverageWarning):
    """The band's method was measured to hold the true map less often than it claims."""


@dataclass(frozen=True)
class ReliabilityBand:
    """Band [lo, hi] for the calibration map on the grid ``s`` at nominal ``level``.

    ``fit``: the method's estimate of the map on ``s`` (isotonic regression for
    ``monotone``, the bins' fractions of positives for the bin methods, the
    family's map for ``family_bootstrap``). ``simultaneous``: the level is
    claimed for all of ``s`` at once (else for each point); ``valid``:
    coverage measured to hold (module docstring).
    """

    s: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    level: float
    method: str
    simultaneous: bool
    n: int
    fit: np.ndarray | None = None
    valid: bool | None = None
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def width(self) -> float:
        """Mean width over the grid."""
        return float(np.mean(self.hi - self.lo))

    def holds(self, c) -> np.ndarray:
        """Per grid point: whether the map ``c`` (a callable, or values on ``s``) is inside."""
        v = np.asarray(c(self.s) if callable(c) else c, dtype=np.float64)
        return (self.lo <= v) & (v <= self.hi)

    def holds_diagonal(self) -> bool:
        """Whether the diagonal c(s) = s lies inside the band on the whole grid."""
        return bool(self.holds(self.s).all())

    def plot(self, ax=None, color: str = "C0", alpha: float = 0.22, label: str | None = None,
             fit: bool = False):
        """Shade the band on ``ax`` (a new figure when None); returns ``ax``.

        The legend entry names the level, pointwise or simultaneous, and the method.
        """
        if ax is None:
            import matplotlib.pyplot as plt

            _, ax = plt.subplots(figsize=(4.2, 4.2), constrained_layout=True)
        kind = "simultaneous" if self.simultaneous else "pointwise"
        note = "" if self.valid is not False else ", measured short"
        ax.fill_between(self.s, self.lo, self.hi, step=None, color=color, alpha=alpha, lw=0,
                        label=label or f"{self.level:.0%} {kind} band ({self.method}{note})")
        if fit and self.fit is not None:
            ax.plot(self.s, self.fit, color=color, lw=1.5, label=f"{self.method} estimate")
        return ax


# ------------------------------------------------------------------ checks
def _check_level(level) -> float:
    if isinstance(level, bool) or not isinstance(level, (int, float, np.floating)) \
            or not 0.0 < float(level) < 1.0:
        raise ValueError(f"level must be a number in (0, 1), got {level!r}")
    return float(level)


def _check_grid(grid, s: np.ndarray, method: str) -> np.ndarray:
    if grid is None:
        return np.linspace(s.min(), s.max(), DEFAULT_GRID)
    g = np.asarray(grid, dtype=np.float64)
    if g.ndim == 0:
        if int(g) < 2:
            raise ValueError(f"grid must be >= 2 points or an array of scores, got {grid!r}")
        return np.linspace(s.min(), s.max(), int(g))
    if g.ndim != 1 or g.size < 1 or not np.all(np.isfinite(g)):
        raise ValueError("grid must be a 1-D array of finite scores")
    if np.any(np.diff(g) < 0):
        raise ValueError("grid must be sorted in increasing order")
    return g


def _min_points(method: str, n: int, need: int) -> None:
    if n < need:
        raise ValueError(f"method {method!r} needs at least {need} points, got {n}")


# ------------------------------------------------------------------ monotone
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


def _monotone_ends(s, y, level, n_groups, dyadic=False):
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


def _monotone_band(s, y, grid, level, n_groups, default_grid, dyadic):
    _min_points("monotone", s.size, 2)
    if n_groups is not None and (isinstance(n_groups, bool) or int(n_groups) < 1):
        raise ValueError(f"n_groups must be an integer >= 1, got {n_groups!r}")
    kl, L, kh, H, runs = _monotone_ends(s, y, level, n_groups, dyadic)
    if default_grid:     # every jump of either end on the grid: the diagonal check is exact
        grid = np.unique(np.concatenate((grid, kl, kh)))
    il = np.searchsorted(kl, grid, side="right") - 1
    lo = np.where(il >= 0, L[np.clip(il, 0, None)], 0.0)
    ih = np.searchsorted(kh, grid, side="left")
    hi = np.where(ih < kh.size, H[np.clip(ih, None, kh.size - 1)], 1.0)
    return lo, hi, _isotonic_on(runs[6], runs[7], grid), grid


@band_method("monotone", simultaneous=True)
def _monotone(s, y, grid, level, *, n_groups=None, default_grid=False, **_):
    return _monotone_band(s, y, grid, level, n_groups, default_grid, False)


@band_method("monotone_dyadic", simultaneous=True)
def _monotone_dyadic(s, y, grid, level, *, n_groups=None, default_grid=False, **_):
    return _monotone_band(s, y, grid, level, n_groups, default_grid, True)


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


# ------------------------------------------------------------------ bins
def _bins(s, n_bins):
    """Equal-count bins from the scores: (bin of every point, edges)."""
    if isinstance(n_bins, bool) or int(n_bins) < 1:
        raise ValueError(f"n_bins must be an integer >= 1, got {n_bins!r}")
    edges = np.unique(np.quantile(s, np.linspace(0.0, 1.0, int(n_bins) + 1)))
    if edges.size < 2:
        edges = np.array([s[0], s[0]])
    idx = np.clip(np.searchsorted(edges[1:-1], s, side="right"), 0, edges.size - 2)
    return idx, edges


def _on_grid(values, edges, grid):
    b = np.clip(np.searchsorted(edges[1:-1], grid, side="right"), 0, edges.size - 2)
    return values[b]


def _cp(s, y, grid, level, n_bins, bonferroni):
    idx, edges = _bins(s, n_bins)
    nb = edges.size - 1
    _min_points("clopper_pearson", s.size, 2 * nb)
    cnt = np.bincount(idx, minlength=nb).astype(np.float64)
    pos = np.bincount(idx, weights=y, minlength=nb)
    a = (1.0 - level) / 2.0 / (nb if bonferroni else 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        lo = np.where(pos > 0, stats.beta.ppf(a, pos, cnt - pos + 1.0), 0.0)
        hi = np.where(pos < cnt, stats.beta.ppf(1.0 - a, pos + 1.0, cnt - pos), 1.0)
        frac = pos / cnt
    lo, hi = np.where(cnt > 0, lo, 0.0), np.where(cnt > 0, hi, 1.0)
    return _on_grid(lo, edges, grid), _on_grid(hi, edges, grid), _on_grid(frac, edges, grid), grid


@band_method("clopper_pearson", simultaneous=False)
def _clopper_pearson(s, y, grid, level, *, n_bins=15, **_):
    return _cp(s, y, grid, level, n_bins, False)


@band_method("clopper_pearson_bonferroni", simultaneous=True)
def _clopper_pearson_bonferroni(s, y, grid, level, *, n_bins=15, **_):
    return _cp(s, y, grid, level, n_bins, True)


def _resamples(n: int, n_boot, seed):
    if isinstance(n_boot, bool) or int(n_boot) < 2:
        raise ValueError(f"n_boot must be an integer >= 2, got {n_boot!r}")
    return np.random.default_rng(seed).integers(0, n, size=(int(n_boot), n))


@band_method("bootstrap", simultaneous=False)
def _bootstrap(s, y, grid, level, *, n_bins=15, n_boot=200, seed=0, **_):
    idx, edges = _bins(s, n_bins)
    nb = edges.size - 1
    _min_points("bootstrap", s.size, 2 * nb)
    rs = _resamples(s.size, n_boot, seed)
    flat = (idx[rs] + nb * np.arange(rs.shape[0])[:, None]).ravel()
    cnt = np.bincount(flat, minlength=rs.shape[0] * nb).reshape(-1, nb)
    pos = np.bincount(flat, weights=y[rs].ravel(), minlength=rs.shape[0] * nb).reshape(-1, nb)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = pos / cnt                       # NaN: bin empty in that resample
        frac = np.bincount(idx, weights=y, minlength=nb) / np.bincount(idx, minlength=nb)
    a = (1.0 - level) / 2.0
    lo, hi = np.nanquantile(means, [a, 1.0 - a], axis=0)
    return _on_grid(lo, edges, grid), _on_grid(hi, edges, grid), _on_grid(frac, edges, grid), grid


@band_method("family_bootstrap", simultaneous=True)
def _family_bootstrap(s, y, grid, level, *, family="isotonic", params=None, n_boot=200,
                      seed=0, **_):
    fam = families.resolve(family, params)[1]
    _min_points("family_bootstrap", s.size, max(int(fam.min_points), 10))
    fitted = clone(fam).fit(s, y)
    if not fitted.provides_map:
        raise ValueError(f"family {family!r} has no calibration map to draw a band around")
    centre = np.clip(fitted.predict(grid), 0.0, 1.0)
    reps = np.empty((int(n_boot), grid.size))
    for r, ix in enumerate(_resamples(s.size, n_boot, seed)):
        reps[r] = np.clip(clone(fam).fit(s[ix], y[ix]).predict(grid), 0.0, 1.0)
    # a floor of 1 / n on the spread: flat stretches (isotonic at 0 or 1) would
    # otherwise dominate the largest standardised deviation with 0 / 0
    sd = np.maximum(reps.std(axis=0, ddof=1), 1.0 / s.size)
    q = np.quantile(np.max(np.abs(reps - centre) / sd, axis=1), level)
    return np.clip(centre - q * sd, 0.0, 1.0), np.clip(centre + q * sd, 0.0, 1.0), centre, grid


# ------------------------------------------------------------------ worlds
# Inflation k of the world band's sup-t half-width (band = fit +/- k q sd): the
# worlds' true map is the smooth reference map, whose refits have less bias than
# the family has against a real map with kinks and with flat ends beyond the
# first and last bins' mean scores (steep ends: beta2, stairs at n = 500). k: the
# smallest of {1.0, 1.05, ..., 1.8} whose smallest cell held the map in >= 90 % of
# a pilot run (the 36 cells of benchmarks/band_coverage.py, 40 samples each, seeds
# apart from the run of record: `band_coverage.py --calibrate-world --seed 7
# --reps 40`; k = 1 gave 62 %, 1.4 gave 88 %, 1.5 gave 90 %, beta2 under U at
# n = 500); checked in benchmarks/measured/band_coverage.md (docs/methods.md §11.9)
WORLD_BAND_SCALE = 1.5
WORLD_BAND_WORLDS = 200


def _reference_fitter(s_sorted: np.ndarray):
    """Vectorised refit of the worlds' reference map (:func:`fitontest.worlds.reference_gap`,
    p = 1) at the fixed sorted scores: returns ``fit(Y, grid) -> (R, grid) maps``
    for a label matrix Y (R, n), and m, the smallest bin's count. The ES bins
    come from the scores alone, so one bincount per world does the refit."""
    from scipy.optimize import isotonic_regression   # sklearn's validates each call: 10x slower

    n = s_sorted.size
    n_bins = int(np.clip(round(n ** (1.0 / 3.0)), 1, max(1, n // 10)))
    edges = BinningFamily(scheme="es", n_bins=n_bins, selection="fixed").fit(
        s_sorted, np.zeros(n)).edges_
    idx = assign_bins(s_sorted, edges, "es")
    nb, sb, _ = bin_stats(idx, s_sorted, np.zeros(n), edges.size - 1)
    full = nb > 0
    nb, sb = nb[full], sb[full]
    starts = np.searchsorted(idx, np.flatnonzero(full))   # idx is sorted with s

    def fit(Y: np.ndarray, grid: np.ndarray) -> np.ndarray:
        means = np.add.reduceat(np.asarray(Y, dtype=np.float64), starts, axis=1) / nb
        out = np.empty((means.shape[0], grid.size))
        for r, yb in enumerate(means):
            if sb.size < 2:
                gap = np.full(grid.size, yb[0] - sb[0])
            else:
                # label means lie in [0, 1], so the monotone fit does too
                mono = isotonic_regression(yb, weights=nb).x
                gap = np.interp(grid, sb, mono - sb)
            out[r] = np.clip(grid + gap, 0.0, 1.0)
        return out

    return fit, float(nb.min())


def world_half_width(s, y, grid, level, family="reference", params=None, n_boot=None,
                     seed=0):
    """(fit on ``grid``, q sd) of the ``world`` band before the inflation k: the
    sup-t band around a fit-on-test family, calibrated in the project's worlds:
    labels redrawn at the user's scores from the reference map (clipped to
    [1 / m, 1 - 1 / m], m the smallest reference bin's count, so that no world is
    noiseless), the family refitted per world, q the ``level`` quantile of the
    largest |refit - world map| / sd over the grid, band = fit +/- k q sd."""
    _min_points("world", s.size, WORLD_MIN_POINTS)
    R = WORLD_BAND_WORLDS if n_boot is None else n_boot
    if isinstance(R, bool) or int(R) < 10:
        raise ValueError(f"n_boot must be an integer >= 10 for 'world', got {n_boot!r}")
    order = np.argsort(s, kind="stable")
    ss, yy = s[order], y[order]
    ref, m = _reference_fitter(ss)
    eps = min(1.0 / m, 0.5)
    truth_s = np.clip(ref(yy[None, :], ss)[0], eps, 1.0 - eps)
    truth_g = np.clip(ref(yy[None, :], grid)[0], eps, 1.0 - eps)
    if family == "reference":
        centre = ref(yy[None, :], grid)[0]
        refit = ref
    else:
        fam = families.resolve(family, params)[1]
        _min_points("world", s.size, max(int(fam.min_points), WORLD_MIN_POINTS))
        fitted = clone(fam).fit(ss, yy)
        if not fitted.provides_map:
            raise ValueError(f"family {family!r} has no calibration map to draw a band around")
        centre = np.clip(fitted.predict(grid), 0.0, 1.0)

        def refit(Y, g):
            return np.stack([np.clip(clone(fam).fit(ss, row).predict(g), 0.0, 1.0) for row in Y])
    rng = np.random.default_rng(seed)
    step = max(1, 4_000_000 // s.size)
    reps = np.concatenate([refit((rng.random((min(step, int(R) - r0), s.size)) < truth_s)
                                 .astype(np.float64), grid)
                           for r0 in range(0, int(R), step)])
    sd = np.maximum(reps.std(axis=0, ddof=1), 0.5 / m)
    q = np.quantile(np.max(np.abs(reps - truth_g) / sd, axis=1), level)
    return centre, q * sd


@band_method("world", simultaneous=True)
def _world(s, y, grid, level, *, family="reference", params=None, n_boot=None, seed=0, **_):
    centre, half = world_half_width(s, y, grid, level, family, params, n_boot, seed)
    half = WORLD_BAND_SCALE * half
    return np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 0.0, 1.0), centre, grid


# ------------------------------------------------------------------ front
METHODS = ("auto",) + tuple(_BUILDERS)
OPTIONS = ("n_groups", "n_bins", "n_boot", "seed", "family", "params")


def _validity(method: str) -> bool | None:
    """True unless a benchmark cell covered (the kind the method claims) less than
    VALID_COVERAGE by 2 Monte Carlo SEs of a share of 0.9; None where not measured."""
    got = MEASURED_MIN_COVERAGE.get(method)
    if got is None:
        return None
    cov, k = got
    if cov + 2.0 * np.sqrt(0.09 / k) < VALID_COVERAGE:
        kind = "simultaneously" if SIMULTANEOUS[method] else "pointwise"
        warnings.warn(f"{method!r} reliability bands held the true map {kind} in only "
                      f"{cov:.0%} (of {k} samples) in some cell at level 0.9 "
                      "(benchmarks/measured/band_coverage.md, docs/methods.md §11.9)",
                      BandCoverageWarning, stacklevel=3)
        return False
    return True


def reliability_band(scores, labels, level: float = 0.9, method: str = "auto", *,
                     grid=None, from_logits: bool | None = False, **options) -> ReliabilityBand:
    """Confidence band for the calibration map of (scores, labels).

    ``scores``: P(y = 1) of a binary task, read by the rule every entry point
    shares (:func:`fitontest.core.predictions.read`; docs/methods.md §1.1):
    ``from_logits=True`` takes logits (a sigmoid first), None lets the values
    decide (a negative one: logits).

    ``grid``: where the band is given (an array of scores, or a number of
    points between the smallest and largest score; default 201 such points,
    plus every jump of the ends for ``monotone``). ``options``: ``n_groups``
    (monotone), ``n_bins`` (bin methods, default 15), ``n_boot`` and ``seed``
    (bootstrap methods), ``family`` and ``params`` (family_bootstrap). See the
    module docstring for the methods and what each guarantees.
    """
    level = _check_level(level)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ValueError(f"unknown option(s) {unknown}; reliability_band takes {OPTIONS}")
    from .core import predictions

    raw = predictions.to_numpy(scores, "scores")
    if raw.ndim != 1:
        raise ValueError(f"scores must be 1-D (P(y = 1) of a binary task), got shape {raw.shape}")
    s = predictions.read(raw, predictions.kind_from_logits(from_logits), where="scores").probs[:, 1]
    s, y = check_binary(s, labels, need_both_classes=False)
    if method == "auto":
        method = AUTO if s.size >= WORLD_MIN_POINTS else AUTO_SMALL
    g = _check_grid(grid, s, method)
    lo, hi, fit, g = _BUILDERS[method](s, y, g, level, default_grid=grid is None, **options)
    return ReliabilityBand(s=g, lo=np.asarray(lo, dtype=np.float64),
                           hi=np.asarray(hi, dtype=np.float64), level=level, method=method,
                           simultaneous=SIMULTANEOUS[method], n=int(s.size),
                           fit=np.asarray(fit, dtype=np.float64),
                           # the world band was measured with its default family only
                           valid=None if method == "world" and options.get(
                               "family", "reference") != "reference" else _validity(method),
                           options=dict(options))


__all__ = ["ReliabilityBand", "reliability_band", "monotone_band_test", "BandCoverageWarning",
           "METHODS", "SIMULTANEOUS", "AUTO", "MEASURED_MIN_COVERAGE", "band_method",
           "score_groups", "default_groups", "dyadic_runs", "world_half_width",
           "WORLD_BAND_SCALE", "WORLD_BAND_WORLDS"]
