"""Calibration errors and the scores of evaluators (METHODS.md §6).

Conventions: ``p`` is 1 (absolute) or 2 (squared); every function returns a
plain float and validates its arrays.
"""
from __future__ import annotations

import numpy as np

from .validation import check_scores


def _check_p(p: int) -> int:
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
    return float(np.mean(d if _check_p(p) == 1 else d * d))


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
