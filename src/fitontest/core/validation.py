"""Input checks made once, at the library boundary.

Bad input raises ``ValueError`` naming the problem; nothing returns NaN silently.
"""
from __future__ import annotations

import numpy as np

EPS = 1e-16


def _first_bad(mask: np.ndarray) -> str:
    idx = np.flatnonzero(mask)
    return f"{idx.size} value(s), first at index {idx[0]}"


def _float_1d(values, name: str, kind: str) -> np.ndarray:
    """``values`` as a 1-D float64 array; numbers or booleans only."""
    a = np.asarray(values)
    if a.dtype == object or not (np.issubdtype(a.dtype, np.number) or a.dtype == bool):
        raise ValueError(f"{name} must be {kind}, got dtype {a.dtype}")
    a = a.astype(np.float64, copy=False)
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {a.shape}")
    return a


def check_scores(scores, name: str = "scores") -> np.ndarray:
    """1-D float64 array of finite values in [0, 1]."""
    s = _float_1d(scores, name, "numeric")
    bad = ~np.isfinite(s)
    if bad.any():
        raise ValueError(f"{name} contain NaN or infinity: {_first_bad(bad)}")
    bad = (s < 0.0) | (s > 1.0)
    if bad.any():
        raise ValueError(f"{name} must lie in [0, 1]: {_first_bad(bad)} outside "
                         f"(min {s.min():.6g}, max {s.max():.6g})")
    return s


def check_labels(labels, name: str = "labels") -> np.ndarray:
    """1-D float64 array of values in {0, 1}."""
    y = _float_1d(labels, name, "numeric 0/1")
    bad = ~np.isin(y, (0.0, 1.0))
    if bad.any():
        raise ValueError(f"{name} must be 0 or 1: {_first_bad(bad)} are not")
    return y


def check_fit_size(n: int, n_labels: int, what: str, *, min_points: int,
                   n_folds: int | None) -> None:
    """A fitting set of ``n`` inputs (``what``) and ``n_labels`` labels: equal
    lengths, at least ``min_points`` points and no fewer than ``n_folds``."""
    if n != n_labels:
        raise ValueError(f"{what} and labels differ in length: {n} != {n_labels}")
    if n < min_points:
        raise ValueError(f"need at least {min_points} points, got {n}")
    if n_folds is not None and n < n_folds:
        raise ValueError(f"fewer points ({n}) than cross-validation folds ({n_folds})")


def check_binary(scores, labels, *, min_points: int = 2, need_both_classes: bool = True,
                 n_folds: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Validate a (scores, labels) fitting set."""
    s = check_scores(scores)
    y = check_labels(labels)
    check_fit_size(s.shape[0], y.shape[0], "scores", min_points=min_points, n_folds=n_folds)
    if need_both_classes:
        n_pos = int(y.sum())
        if n_pos == 0 or n_pos == y.shape[0]:
            only = "1" if n_pos else "0"
            raise ValueError(f"labels contain a single class (all {only}); "
                             "this family needs both classes")
    return s, y


def logit(scores) -> np.ndarray:
    """logit of scores clipped to [1e-16, 1 - 1e-16] (docs/methods/README.md notation).

    1 - 1e-16 is not a float64, so s and 1 - s are clipped separately: the
    ends are exactly -/+ ln((1 - 1e-16) / 1e-16) ~ -/+36.84, symmetric.
    """
    s = np.asarray(scores, dtype=np.float64)
    return np.log(np.maximum(s, EPS)) - np.log(np.maximum(1.0 - s, EPS))


def sigmoid(z) -> np.ndarray:
    from scipy.special import expit

    return expit(np.asarray(z, dtype=np.float64))


def check_indices(indices, n: int) -> np.ndarray:
    """1-D int64 array of indices into a collection of ``n`` items."""
    idx = np.asarray(indices)
    if idx.ndim != 1:
        raise ValueError(f"indices must be 1-D, got shape {idx.shape}")
    if idx.size and not np.issubdtype(idx.dtype, np.integer):
        raise ValueError(f"indices must be integers, got dtype {idx.dtype}")
    idx = idx.astype(np.int64, copy=False)
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise IndexError(f"image indices must lie in [0, {n}); got "
                         f"min {idx.min()}, max {idx.max()}")
    return idx
