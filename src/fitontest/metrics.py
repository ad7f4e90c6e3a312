"""Calibration errors and the scores of evaluators (docs/methods/06-truth-and-scores.md §6).

The estimators' one home: the calibration-map families use them, so this
module sits in the foundation layer, below the families (docs/architecture.md).
The intervals, tests and bands built on them live in the inference package:
:mod:`fitontest.inference.intervals`, :mod:`fitontest.inference.calibration_tests`,
:mod:`fitontest.inference.bands`.

Conventions: ``p`` is 1 (absolute) or 2 (squared); every function returns a
plain float and validates its arrays.

>>> import numpy as np
>>> from fitontest import metrics
>>> s = np.array([0.2, 0.4, 0.9])
>>> round(metrics.true_ce(s, np.array([0.25, 0.4, 0.8])), 4)
0.05
"""
from __future__ import annotations

import numpy as np

from fitontest.core.validation import check_binary, check_scores


def check_p(p: int) -> int:
    """``p`` if it is 1 or 2 (the L^p of a CE), else a ValueError naming it."""
    if p not in (1, 2):
        raise ValueError(f"p must be 1 or 2, got {p!r}")
    return p


def _pair(a, b, name_a: str, name_b: str, *, bounded_b: bool = True):
    a = check_scores(a, name_a)
    b = np.asarray(b, dtype=np.float64)
    if bounded_b:
        b = check_scores(b, name_b)
    elif b.ndim != 1 or not np.isfinite(b).all():
        raise ValueError(f"{name_b} must be a finite 1-D array")
    if a.shape != b.shape:
        raise ValueError(f"{name_a} and {name_b} differ in length: {a.shape[0]} != {b.shape[0]}")
    if a.size == 0:
        raise ValueError(f"{name_a} is empty")
    return a, b


def _mean_pow(d: np.ndarray, p: int) -> float:
    d = np.abs(d)
    return float(np.mean(d if check_p(p) == 1 else d * d))


def true_ce(scores, c_true, p: int = 1) -> float:
    """True calibration error mean |s - c(s)|^p of scores under the true map."""
    s, c = _pair(scores, c_true, "scores", "c_true")
    return _mean_pow(s - c, p)


def ce_estimate(scores, c_hat, p: int = 1) -> float:
    """Plug-in CE estimate mean |c_hat(s) - s|^p.

    ``c_hat`` may leave [0, 1] (the slope-1 binning map is not clipped, which
    is what makes Theorem 2 exact), so it is only checked to be finite.
    """
    s, c = _pair(scores, c_hat, "scores", "c_hat", bounded_b=False)
    return _mean_pow(c - s, p)


def cmee(c_hat, c_true, p: int = 1) -> float:
    """Calibration-map estimation error mean |c_hat - c|^p."""
    c, ch = _pair(c_true, c_hat, "c_true", "c_hat", bounded_b=False)
    return _mean_pow(ch - c, p)


# --------------------------------------------------------------------------
# calibration error after calibration (Table 2)
# --------------------------------------------------------------------------

def ceac(calibrated_scores, c_true_of_calibrated, p: int = 1) -> float:
    """CE after calibration: mean |c_hat_i - c'(c_hat_i)|^p.

    ``calibrated_scores`` are the calibrator's outputs c_hat_i on the hold-out,
    ``c_true_of_calibrated`` the true map c' *of the calibrated scores*
    evaluated there (a truth estimator fitted on (c_hat, y)). This is the true
    CE of the calibrated model (:func:`true_ce` of the calibrated scores).
    """
    s, c = _pair(calibrated_scores, c_true_of_calibrated, "calibrated_scores",
                 "c_true_of_calibrated")
    return _mean_pow(s - c, p)


# --------------------------------------------------------------------------
# rank correlation (Table 4)
# --------------------------------------------------------------------------

def spearman(est, true) -> float:
    """Spearman rank correlation between estimated and true CEs.

    Pearson correlation of the average ranks (ties share their mean rank), as
    ``scipy.stats.spearmanr``. Constant inputs, where the correlation is
    undefined, are defined **(choice)** as:

    - ``true`` constant (nothing to rank): NaN -- callers average with nanmean;
    - otherwise ``est`` constant (the evaluator cannot tell the cases apart):
      0.0, as good as a random ranking, so it is not silently dropped.

    Needs at least 2 finite, paired values.
    """
    from scipy.stats import rankdata

    a = np.asarray(est, dtype=np.float64)
    b = np.asarray(true, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"est and true must be 1-D of equal length, got {a.shape} and {b.shape}")
    if a.size < 2:
        raise ValueError(f"need at least 2 values to rank, got {a.size}")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("est and true must be finite")
    if np.all(b == b[0]):
        return float("nan")
    if np.all(a == a[0]):
        return 0.0
    ra = rankdata(a) - (a.size + 1) / 2.0
    rb = rankdata(b) - (b.size + 1) / 2.0
    r = float(np.dot(ra, rb) / np.sqrt(np.dot(ra, ra) * np.dot(rb, rb)))
    return max(-1.0, min(1.0, r))


# --------------------------------------------------------------------------
# debiased binned ECE (docs/methods/02-binning.md §2)
# --------------------------------------------------------------------------

def folded_normal_mean(d, sigma) -> np.ndarray:
    """E|d + sigma Z| for Z ~ N(0, 1), elementwise; |d| where sigma == 0."""
    from scipy.special import ndtr

    d = np.abs(np.asarray(d, dtype=np.float64))
    sigma = np.asarray(sigma, dtype=np.float64)
    pos = sigma > 0
    safe = np.where(pos, sigma, 1.0)
    val = (safe * np.sqrt(2.0 / np.pi) * np.exp(-0.5 * (d / safe) ** 2)
           + d * (1.0 - 2.0 * ndtr(-d / safe)))
    return np.where(pos, val, d)


def debiased_bin_terms(counts, mean_scores, mean_labels, p: int = 1) -> np.ndarray:
    """Per-bin debiased terms D_b of the debiased ECE; 0 for empty bins.

    - p = 2: D_b = (sbar_b - ybar_b)^2 - ybar_b (1 - ybar_b) / (n_b - 1)
      (a bin with n_b = 1 has ybar_b (1 - ybar_b) = 0 and no correction);
    - p = 1: D_b = 2 |sbar_b - ybar_b| - E_R |sbar_b - R|,
      R ~ Normal(ybar_b, ybar_b (1 - ybar_b) / n_b) (closed-form folded-normal
      mean, :func:`folded_normal_mean`).
    """
    check_p(p)
    n = np.asarray(counts, dtype=np.float64)
    full = n > 0
    sb = np.where(full, np.asarray(mean_scores, dtype=np.float64), 0.0)
    yb = np.where(full, np.asarray(mean_labels, dtype=np.float64), 0.0)
    var = yb * (1.0 - yb)
    gap = sb - yb
    if p == 2:
        corr = np.where(n > 1, var / np.where(n > 1, n - 1.0, 1.0), 0.0)
        terms = gap * gap - corr
    else:
        sigma = np.sqrt(np.maximum(var, 0.0) / np.where(full, n, 1.0))
        terms = 2.0 * np.abs(gap) - folded_normal_mean(gap, sigma)
    return np.where(full, terms, 0.0)


def debiased_ece(counts, mean_scores, mean_labels, p: int = 1) -> float:
    """Debiased ECE sum_b (n_b / n) D_b from per-bin statistics (see
    :func:`debiased_bin_terms`); ``counts`` are the bin sizes n_b."""
    n = np.asarray(counts, dtype=np.float64)
    if n.ndim != 1 or n.sum() <= 0:
        raise ValueError("counts must be a 1-D array with a positive total")
    return float(np.dot(n / n.sum(), debiased_bin_terms(n, mean_scores, mean_labels, p=p)))


# --------------------------------------------------------------------------
# kernel calibration error (Widmann et al. 2019)
# --------------------------------------------------------------------------

def median_heuristic(scores) -> float:
    """Median of the pairwise distances |s_i - s_j|, i < j (exact, O(n log n) per
    bisection step: pairs within t are counted with ``searchsorted`` on the
    sorted scores, t is bisected to 1e-12)."""
    s = np.sort(check_scores(scores))
    n = s.size
    if n < 2:
        raise ValueError("need at least 2 scores for the median heuristic")
    n_pairs = n * (n - 1) // 2
    # lower median of the n_pairs distances: smallest t with count(d <= t) >= k
    k = (n_pairs + 1) // 2
    idx = np.arange(n)

    def count(t):
        return int(np.sum(np.searchsorted(s, s + t, side="right") - idx - 1))

    lo, hi = 0.0, float(s[-1] - s[0])
    if count(lo) >= k:
        return 0.0
    while hi - lo > 1e-12:
        mid = 0.5 * (lo + hi)
        if count(mid) >= k:
            hi = mid
        else:
            lo = mid
    return hi


def kce(scores, labels, bandwidth: float | None = None, chunk: int = 1024) -> float:
    """Unbiased squared kernel calibration error (SKCE_uq, Widmann et al. 2019).

    Binary form, with the RBF kernel on the predicted probability:
    ``SKCE = 1/(n(n-1)) sum_{i != j} (y_i - s_i)(y_j - s_j) k(s_i, s_j)``,
    ``k(s, t) = exp(-(s - t)^2 / (2 l^2))``. (With the prediction written as the
    two-class vector (s, 1 - s) and the kernel ``exp(-||p - p'||^2 / (2 l'^2)) I``
    the value is exactly twice this, for l' = sqrt(2) l.) It is an unbiased
    estimate of E[(Y - S)(Y' - S') k(S, S')], which is 0 iff the scores are
    calibrated, and may be negative.

    ``bandwidth`` l: ``None`` uses the median heuristic (median pairwise
    distance of the scores, :func:`median_heuristic`); when that is 0 (over
    half the pairs tied) the standard deviation of the scores, and 1 when all
    scores are equal **(choice)**.

    Exact O(n^2) time (the upper triangle only), O(chunk^2 / 4) memory: the
    kernel matrix is built tile by tile (``chunk // 4`` rows x ``chunk``
    columns, in place in one buffer) and never held whole.
    """
    s, y = check_binary(scores, labels, need_both_classes=False)
    if bandwidth is None:
        bandwidth = median_heuristic(s)
        if bandwidth <= 0:
            bandwidth = float(np.std(s)) or 1.0
    bandwidth = float(bandwidth)
    if not np.isfinite(bandwidth) or bandwidth <= 0:
        raise ValueError(f"bandwidth must be positive, got {bandwidth!r}")
    n = s.size
    r = y - s
    scale = -0.5 / bandwidth ** 2
    rows = max(1, int(chunk) // 4)           # tiles of rows x chunk: cache-sized, in place
    cols = max(1, int(chunk))
    buf = np.empty((rows, cols))

    def tile_sum(i0, i1, j0, j1):
        k = buf[: i1 - i0, : j1 - j0]
        np.subtract(s[i0:i1, None], s[None, j0:j1], out=k)
        np.multiply(k, k, out=k)
        k *= scale
        np.exp(k, out=k)
        return float(r[i0:i1] @ (k @ r[j0:j1]))

    total = 0.0
    for i0 in range(0, n, rows):
        i1 = min(i0 + rows, n)
        total += tile_sum(i0, i1, i0, i1)                 # diagonal tile, both orders
        for j0 in range(i1, n, cols):                     # strict upper triangle, twice
            total += 2.0 * tile_sum(i0, i1, j0, min(j0 + cols, n))
    total -= float(np.dot(r, r))                          # remove i == j (k = 1)
    return total / (n * (n - 1))


__all__ = ["true_ce", "ce_estimate", "cmee", "ceac", "spearman", "folded_normal_mean",
           "debiased_bin_terms", "debiased_ece", "median_heuristic", "kce"]

# the interval, test and band names published here before issue 58 warn and
# point to their homes in the inference package (core/moved.py)
from fitontest.core.moved import moved as _moved  # noqa: E402

__getattr__, __dir__ = _moved(__name__)
