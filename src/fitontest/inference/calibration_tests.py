"""Tests of perfect calibration P(Y = 1 | S = s) = s (docs/methods/11-tests-and-bands.md §11.8).

:func:`calibration_test` returns a :class:`CalibrationTestResult` with
``statistic`` and ``pvalue``, as ``scipy.stats`` tests do. Methods:

- ``"consistency"``: any registered evaluator's *used* CE estimate
  (:func:`fitontest.families.base.used_estimates`) as the statistic, its null
  distribution by Monte Carlo: the labels are redrawn as Bernoulli(score) with
  the scores held fixed, the evaluator refitted on every redraw (binning
  evaluators with fixed bins: all redraws at once from per-bin sums).
  p = (1 + #{T* >= T}) / (1 + B).
- ``"tcal"``: T-Cal (Lee, Huang, Hassani & Dobriban 2023): the debiased
  squared binned CE over the equal-width bin counts m = 2, 4, ...,
  2^M, M = floor(2 log2(n / sqrt(ln n))), each against its own Monte Carlo
  null from the same redraws. Combined (``combine="max"``, default) by the
  largest statistic standardised by its exact null standard deviation, whose
  own null comes from the same redraws; or by Bonferroni over the per-m
  Monte Carlo p-values (``"bonferroni"``, the paper's rule).
- ``"kuiper"`` / ``"ks"``: the cumulative-difference tests of Arrieta-Ibarra,
  Gujral, Tannen, Tygert & Xu (2022): O(n log n), no bins, asymptotic
  p-values from the range / supremum of standard Brownian motion on [0, 1].

Holding the scores fixed makes the Monte Carlo tests exact: under the null
the observed labels and the B redraws are exchangeable given the scores, so
P(p <= a) <= a for every n (the +1 counts the observed sample among them).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
from scipy.special import ndtr
from sklearn.base import clone

from .. import families
from ..metrics import check_p, debiased_bin_terms
from ..core.validation import check_labels, check_option, check_scores
from ..families.base import estimates, used_estimates
from ..families.binning import BinningFamily
from .sizes import CHUNK_CELLS   # redraws are generated in blocks of about this many labels

METHODS = ("consistency", "tcal", "kuiper", "ks")
ALTERNATIVES = ("two-sided", "greater", "less")
COMBINES = ("max", "bonferroni")


@dataclass(frozen=True)
class CalibrationTestResult:
    """Outcome of a test of perfect calibration.

    ``statistic``: the test statistic (the evaluator's CE estimate for
    ``consistency``; the debiased squared binned CE at ``n_bins`` for
    ``tcal``; the normalised range or supremum of the cumulative differences
    for ``kuiper`` / ``ks``). ``pvalue`` in (0, 1]. ``n_resamples``: label
    redraws (0 for the asymptotic tests); ``n_bins``: the T-Cal bin count with
    the smallest p-value. ``valid``: whether the test's size at alpha = 0.05
    was measured to hold for this method, n and settings (None where not
    measured: :mod:`fitontest.inference.domains`, written from
    benchmarks/measured/calibration_tests.md), ``validity_note`` why.
    """

    statistic: float
    pvalue: float
    method: str
    n: int
    n_resamples: int = 0
    evaluator: str | None = None
    p: int | None = None
    alternative: str = "two-sided"
    n_bins: int | None = None
    valid: bool | None = None
    validity_note: str = ""

    def rejects(self, alpha: float = 0.05) -> bool:
        return bool(self.pvalue <= alpha)


# ---------------------------------------------------------------- Brownian motion tails
def _n_terms(x: np.ndarray, scale: float = 1.0) -> int:
    """Terms of a series in Phi-bar(k x) until k x > 40 (the rest is below 1e-300)."""
    xmin = max(float(np.min(x)) if x.size else 1.0, 1e-3)
    return int(np.ceil(40.0 / (scale * xmin))) + 2


def sup_abs_bm_sf(x) -> np.ndarray:
    """P(sup_{t in [0,1]} |B(t)| >= x) for standard Brownian motion B.

    Reflection (images) series 4 sum_{k>=0} (-1)^k Phi-bar((2k+1) x) for
    x >= 1; for x < 1 the eigenfunction series
    1 - (4/pi) sum_{k>=0} (-1)^k/(2k+1) exp(-(2k+1)^2 pi^2 / (8 x^2)),
    which converges fast there (docs/methods/11-tests-and-bands.md §11.8).
    """
    x = np.atleast_1d(np.asarray(x, dtype=np.float64))
    out = np.ones_like(x)
    big = x >= 1.0
    if big.any():
        xb = x[big]
        k = np.arange(_n_terms(xb, 2.0))
        terms = ((-1.0) ** k)[None, :] * ndtr(-(2 * k + 1)[None, :] * xb[:, None])
        out[big] = 4.0 * terms.sum(axis=1)
    small = (x > 0) & ~big
    if small.any():
        xs = x[small]
        k = np.arange(40)
        odd = 2 * k + 1
        terms = (((-1.0) ** k) / odd)[None, :] * np.exp(
            -(odd[None, :] ** 2) * np.pi ** 2 / (8.0 * xs[:, None] ** 2))
        out[small] = 1.0 - 4.0 / np.pi * terms.sum(axis=1)
    return np.clip(out, 0.0, 1.0)


def range_bm_sf(x) -> np.ndarray:
    """P(sup B - inf B >= x) on [0, 1] for standard Brownian motion (Feller 1951):
    the range has density 8 sum_{k>=1} (-1)^(k-1) k^2 phi(k x), so the tail is
    8 sum_{k>=1} (-1)^(k-1) k Phi-bar(k x) (docs/methods/11-tests-and-bands.md §11.8)."""
    x = np.atleast_1d(np.asarray(x, dtype=np.float64))
    out = np.ones_like(x)
    pos = x > 0.05                       # below, P(range < 0.05) < 1e-300
    if pos.any():
        xp = x[pos]
        k = np.arange(1, _n_terms(xp) + 1)
        terms = (((-1.0) ** (k - 1)) * k)[None, :] * ndtr(-k[None, :] * xp[:, None])
        out[pos] = 8.0 * terms.sum(axis=1)
    return np.clip(out, 0.0, 1.0)


def sup_bm_sf(x) -> np.ndarray:
    """P(sup_{t in [0,1]} B(t) >= x) = 2 Phi-bar(x) for x >= 0 (reflection principle)."""
    x = np.atleast_1d(np.asarray(x, dtype=np.float64))
    return np.where(x > 0, np.minimum(2.0 * ndtr(-x), 1.0), 1.0)


# ---------------------------------------------------------------- cumulative differences
def cumulative_differences(s: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """(C, sigma): the cumulative sums of y - s in the order of increasing score,
    taken at the end of every run of tied scores (so the order among ties does
    not matter), with C_0 = 0 in front; sigma = sqrt(sum s (1 - s)), their
    standard deviation at the end under the null."""
    order = np.argsort(s, kind="stable")
    ss = s[order]
    c = np.cumsum(y[order] - ss)
    ends = np.flatnonzero(np.append(ss[1:] != ss[:-1], True))
    return np.concatenate(([0.0], c[ends])), float(np.sqrt(np.sum(s * (1.0 - s))))


def _cumulative_test(s, y, method, alternative):
    c, sigma = cumulative_differences(s, y)
    if method == "kuiper":
        dev = float(c.max() - c.min())
    elif alternative == "two-sided":
        dev = float(np.abs(c).max())
    else:
        dev = float(max((c if alternative == "greater" else -c).max(), 0.0))
    if sigma == 0.0:                     # every score 0 or 1: labels are determined
        return (0.0, 1.0) if dev < 1e-9 else (float("inf"), 0.0)
    stat = dev / sigma
    if method == "kuiper":
        pval = range_bm_sf(stat)[0]
    elif alternative == "two-sided":
        pval = sup_abs_bm_sf(stat)[0]
    else:
        pval = sup_bm_sf(stat)[0]
    return stat, float(pval)


# ---------------------------------------------------------------- label redraws
def _redraws(s: np.ndarray, n_resamples: int, rng):
    """Blocks of label redraws y* ~ Bernoulli(s), shape (block, n), as float64."""
    block = max(1, min(n_resamples, CHUNK_CELLS // max(s.size, 1)))
    done = 0
    while done < n_resamples:
        b = min(block, n_resamples - done)
        yield (rng.random((b, s.size)) < s).astype(np.float64)
        done += b


def _redraw_rng(seed) -> np.random.Generator:
    """The redraws' generator: a child of ``SeedSequence(seed)``, so that it never
    replays the stream of ``default_rng(seed)`` that may have drawn the data."""
    return np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])


def _mc_pvalue(stat: float, null: np.ndarray) -> float:
    return float((1 + np.count_nonzero(null >= stat)) / (1 + null.size))


# ---------------------------------------------------------------- evaluator statistic
def _fixed_bins(fam) -> bool:
    """Bins that do not depend on the labels: all redraws in one pass."""
    return (type(fam) is BinningFamily and fam.selection == "fixed"
            and fam.variant == "ours")


def _binned_used(fam, s, y_block, p):
    """Used (debiased) estimate of a fixed-bin binning family fitted on every row
    of ``y_block``: the bins come from the scores alone, so only the per-bin label
    sums change (equal to refitting, tests/test_calibration_tests.py)."""
    idx = fam.bin_index(s)
    nb = fam.n_bins_
    counts = fam.bin_counts_
    rows = y_block.shape[0]
    flat = (idx[None, :] + nb * np.arange(rows)[:, None]).ravel()
    sum_y = np.bincount(flat, weights=y_block.ravel(), minlength=rows * nb).reshape(rows, nb)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_y = sum_y / counts
    terms = debiased_bin_terms(counts, fam.bin_mean_scores_, mean_y, p=p)
    return terms @ (counts / counts.sum())


def _registered_name(fam) -> str:
    """The registered name whose class and defaults ``fam`` has, else its class name."""
    mine = fam.get_params()
    for name in families.names():
        if families.entry(name) is type(fam) and all(
                mine.get(k) == v for k, v in families.FAMILIES.defaults(name).items()):
            return name
    return type(fam).__name__


def _evaluator(evaluator, params):
    if evaluator is None:
        evaluator = "ece_es15"
    if isinstance(evaluator, str):
        if evaluator not in families.FAMILIES:
            raise ValueError(f"unknown evaluator {evaluator!r}; registered: "
                             f"{', '.join(families.names())}")
        return evaluator, families.get(evaluator, **dict(params or {}))
    if isinstance(evaluator, families.CalibrationFamily):
        fam = clone(evaluator).set_params(**dict(params or {}))
        return _registered_name(fam), fam
    raise ValueError("evaluator must be a registered family name or a CalibrationFamily "
                     f"instance, got {type(evaluator).__name__}")


def _used_on_rows(fam, s: np.ndarray, y_block: np.ndarray, p: int) -> np.ndarray:
    """Used L^p estimate of (unfitted) ``fam`` fitted on (s, row) for every row."""
    if _fixed_bins(fam):
        fitted = clone(fam).fit(s, y_block[0])          # bins from the scores alone
        return _binned_used(fitted, s, y_block, p)
    return np.array([used_estimates(estimates(clone(fam).fit(s, yb), s))[p - 1]
                     for yb in y_block])


def consistency_null(fam, s: np.ndarray, n_resamples: int, seed=0, p: int = 1) -> np.ndarray:
    """The used L^p estimate of (unfitted) ``fam`` on ``n_resamples`` label redraws
    y* ~ Bernoulli(s), scores fixed: the statistic's null distribution given s."""
    rng = _redraw_rng(seed)
    return np.concatenate([_used_on_rows(fam, s, block, p)
                           for block in _redraws(s, n_resamples, rng)])


def _consistency(s, y, fam, n_resamples, seed, p):
    # the observed statistic by the same arithmetic as the redraws, so that ties
    # between them are exact ties
    stat = float(_used_on_rows(fam, s, y[None, :], p)[0])
    null = consistency_null(fam, s, n_resamples, seed=seed, p=p)
    return stat, _mc_pvalue(stat, null)


# ---------------------------------------------------------------- T-Cal
def tcal_grid(n: int) -> np.ndarray:
    """Bin counts 2^1..2^M, M = floor(2 log2(n / sqrt(ln n))) (at least 1)."""
    m_max = int(np.floor(2.0 * np.log2(n / np.sqrt(np.log(n))))) if n > 2 else 1
    return 2 ** np.arange(1, max(m_max, 1) + 1, dtype=np.int64)


def _tcal_bounds(s_sorted: np.ndarray, grid: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per bin count: (start, end) positions in the sorted scores of the non-empty
    equal-width bins holding at least 2 points (the others add nothing)."""
    out = []
    for m in grid:
        ids = np.minimum(np.floor(s_sorted * float(m)).astype(np.int64), m - 1)
        cut = np.flatnonzero(ids[1:] != ids[:-1]) + 1
        start = np.concatenate(([0], cut))
        end = np.concatenate((cut, [s_sorted.size]))
        keep = end - start >= 2
        out.append((start[keep], end[keep]))
    return out


def _tcal_stats(resid_sorted: np.ndarray, bounds, n: int) -> np.ndarray:
    """Debiased squared binned CE of every row of ``resid_sorted`` (rows x n, in
    score order) for every bin count: (1/n) sum_b (S_b^2 - Q_b) / (n_b - 1), with
    S_b, Q_b the sum of the residuals y - s and of their squares in bin b. Given
    the scores its mean is 0 under the null, exactly."""
    r = np.atleast_2d(resid_sorted)
    zero = np.zeros((r.shape[0], 1))
    c1 = np.concatenate((zero, np.cumsum(r, axis=1)), axis=1)
    c2 = np.concatenate((zero, np.cumsum(r * r, axis=1)), axis=1)
    out = np.empty((r.shape[0], len(bounds)))
    for j, (start, end) in enumerate(bounds):
        s1 = c1[:, end] - c1[:, start]
        s2 = c2[:, end] - c2[:, start]
        out[:, j] = ((s1 * s1 - s2) / (end - start - 1.0)).sum(axis=1) / n
    return out


def _tcal_null_sd(s_sorted: np.ndarray, bounds, n: int) -> np.ndarray:
    """Exact standard deviation of each bin count's statistic under the null, given
    the scores: Var = (2 / n^2) sum_b (V_b^2 - W_b) / (n_b - 1)^2, with V_b, W_b the
    sums of v_i = s_i (1 - s_i) and of v_i^2 in bin b (the pairs i != j of a bin
    are uncorrelated, E[r_i r_j r_k r_l] vanishes unless the pairs coincide)."""
    v = s_sorted * (1.0 - s_sorted)
    c1 = np.concatenate(([0.0], np.cumsum(v)))
    c2 = np.concatenate(([0.0], np.cumsum(v * v)))
    out = np.empty(len(bounds))
    for j, (start, end) in enumerate(bounds):
        vb, wb = c1[end] - c1[start], c2[end] - c2[start]
        out[j] = np.sqrt(max(2.0 * np.sum((vb * vb - wb) / (end - start - 1.0) ** 2), 0.0)) / n
    return out


def _tcal(s, y, n_resamples, seed, combine):
    order = np.argsort(s, kind="stable")
    ss = s[order]
    grid = tcal_grid(s.size)
    bounds = _tcal_bounds(ss, grid)
    obs = _tcal_stats(y[order] - ss, bounds, s.size)[0]
    rng = _redraw_rng(seed)
    null = np.concatenate([_tcal_stats(block - ss, bounds, s.size)
                           for block in _redraws(ss, n_resamples, rng)])
    if combine == "bonferroni":
        p_each = (1 + (null >= obs[None, :]).sum(axis=0)) / (1 + n_resamples)
        best = int(np.argmin(p_each))
        return float(obs[best]), min(1.0, float(p_each[best]) * grid.size), int(grid[best])
    # the largest standardised statistic over the grid, calibrated on the same
    # redraws: one Monte Carlo p-value, no multiplicity penalty, exact
    sd = _tcal_null_sd(ss, bounds, s.size)
    ok = sd > 0
    if not ok.any():                     # no bin with two non-degenerate scores
        return 0.0, 1.0, int(grid[0])
    z_obs = np.where(ok, obs / np.where(ok, sd, 1.0), -np.inf)
    z_null = np.where(ok, null / np.where(ok, sd, 1.0), -np.inf)
    best = int(np.argmax(z_obs))
    return float(obs[best]), _mc_pvalue(float(z_obs[best]), z_null.max(axis=1)), int(grid[best])


# ---------------------------------------------------------------- front
def _check(method, alternative, n_resamples, p, combine):
    check_option("method", method, METHODS)
    check_option("alternative", alternative, ALTERNATIVES)
    if alternative != "two-sided" and method != "ks":
        raise ValueError(f"alternative={alternative!r} is defined for method='ks' only; "
                         f"{method!r} detects miscalibration of either sign")
    if method in ("consistency", "tcal") and (
            isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer))
            or n_resamples < 1):
        raise ValueError(f"n_resamples must be an integer >= 1, got {n_resamples!r}")
    check_p(p)
    check_option("combine", combine, COMBINES)


def calibration_test(scores, labels, method: str = "kuiper", *, evaluator=None,
                     params: Mapping[str, Any] | None = None, n_resamples: int = 500,
                     seed=0, p: int = 1, alternative: str = "two-sided",
                     combine: str = "max") -> CalibrationTestResult:
    """Test the null hypothesis that the scores are calibrated, P(Y = 1 | s) = s.

    ``method``: ``"kuiper"`` (default; asymptotic, O(n log n)), ``"ks"``,
    ``"consistency"`` (``evaluator``: a registered family name, default
    ``"ece_es15"``, or an unfitted family instance; ``params`` its
    parameters; ``p`` the CE exponent of its used estimate) or ``"tcal"``
    (``combine``: ``"max"`` or ``"bonferroni"``). ``n_resamples``: label
    redraws of the Monte Carlo tests; ``seed``: an int or a sequence of ints
    (the redraws use a child of ``numpy.random.SeedSequence(seed)``).
    ``alternative`` (``"ks"`` only): ``"greater"`` tests for labels above the
    scores (under-prediction), ``"less"`` below. See the module docstring.
    """
    _check(method, alternative, n_resamples, p, combine)
    s = check_scores(scores)
    y = check_labels(labels)
    if s.shape != y.shape:
        raise ValueError(f"scores and labels differ in length: {s.shape[0]} != {y.shape[0]}")
    if s.size < 2:
        raise ValueError(f"need at least 2 points, got {s.size}")
    n = int(s.size)
    if method in ("kuiper", "ks"):
        stat, pval = _cumulative_test(s, y, method, alternative)
        return _result(stat, pval, method, n, alternative=alternative)
    if method == "tcal":
        stat, pval, m = _tcal(s, y, int(n_resamples), seed, combine)
        return _result(stat, pval, method, n, int(n_resamples), n_bins=m, p=2, combine=combine)
    name, fam = _evaluator(evaluator, params)
    stat, pval = _consistency(s, y, fam, int(n_resamples), seed, p)
    return _result(stat, pval, method, n, int(n_resamples), evaluator=name, p=p)


def _result(stat, pval, method, n, n_resamples=0, combine="max", **kw) -> CalibrationTestResult:
    """The result, with the validity of its size where it was measured (alpha 0.05)."""
    from .domains import measured

    key = method if method != "consistency" else f"consistency/{kw.get('evaluator')}"
    v = measured("calibration_tests").validity(
        key, level=0.05, n=n, alternative=kw.get("alternative", "two-sided"), combine=combine)
    return CalibrationTestResult(stat, pval, method, n, n_resamples, valid=v.valid,
                                 validity_note=v.why, **kw)


__all__ = ["CalibrationTestResult", "calibration_test", "consistency_null", "METHODS",
           "sup_abs_bm_sf", "sup_bm_sf", "range_bm_sf", "cumulative_differences", "tcal_grid"]
