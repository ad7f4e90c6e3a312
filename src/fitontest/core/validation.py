"""Input checks made once, at the library boundary.

Bad input raises ``ValueError`` naming the problem; nothing returns NaN silently.

The one check of each kind lives here (scikit-learn's ``utils.validation`` in
spirit): :func:`check_array_real` (an array of real numbers), :func:`check_option`
(a value among the allowed ones: the one "must be one of" message),
:func:`check_scores` / :func:`check_labels` / :func:`check_binary` (a binary
fitting sample). An array checked once need not be checked again below: a
caller that built it checked (the front door's reading, :mod:`fitontest.tasks`)
hands it down inside :func:`checked`, and these checks return it as it is
(scikit-learn's ``skip_parameter_validation``, per array rather than global).
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np

EPS = 1e-16

#: the arrays checked by the caller that built them (:func:`checked`); per
#: context, so threads and nested calls do not share it
_CHECKED: ContextVar[tuple[np.ndarray, ...]] = ContextVar("fitontest_checked", default=())


def check_array_real(a, name: str, *, bools: bool = False) -> np.ndarray:
    """``a`` as a numpy array of real numbers, its dtype kept: never objects,
    strings or complex values, nor booleans unless ``bools`` (a class index or
    a probability is not a truth value). The one "real numeric array" check.

    >>> check_array_real([1, 2], "x").dtype.kind
    'i'
    >>> check_array_real(["a"], "x")
    Traceback (most recent call last):
    ...
    ValueError: x must be a real numeric array, got dtype <U1
    """
    arr = np.asarray(a)
    if arr.dtype == bool and bools:
        return arr
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.number) or np.iscomplexobj(arr):
        raise ValueError(f"{name} must be a real numeric array, got dtype {arr.dtype}")
    return arr


def check_option(name: str, value: Any, allowed: Iterable[Any]) -> Any:
    """``value`` if it is one of ``allowed``, else the one "must be one of"
    ValueError naming ``name``, the allowed values and the value given.

    >>> check_option("mode", "ovr", ("confidence", "ovr"))
    'ovr'
    >>> check_option("mode", "x", ("confidence", "ovr"))
    Traceback (most recent call last):
    ...
    ValueError: mode must be one of 'confidence', 'ovr'; got 'x'
    """
    allowed = tuple(allowed)
    try:
        ok = bool(value in allowed)
    except (TypeError, ValueError):         # an array's == is no answer: not an option
        ok = False
    if not ok:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}; "
                         f"got {value!r}")
    return value


@contextmanager
def checked(*arrays: np.ndarray) -> Iterator[None]:
    """Within the block, :func:`check_scores` and :func:`check_labels` return
    each of ``arrays`` as it is, without a pass over it: the caller that built
    them checked them once (scores as float64 in [0, 1], labels as float64 0/1:
    what the checks would return).

    Only the very objects (identity, not equal values) are trusted, and only
    read-only ones, so that nothing can change them after their check; an
    array derived from them (a resample, a slice) is checked as any other.
    """
    if any(a.flags.writeable for a in arrays):
        raise ValueError("only read-only arrays can be handed down as checked")
    token = _CHECKED.set(_CHECKED.get() + arrays)
    try:
        yield
    finally:
        _CHECKED.reset(token)


def _already_checked(a) -> np.ndarray | None:
    """``a`` if a caller checked it (:func:`checked`), else None."""
    return a if any(a is c for c in _CHECKED.get()) else None


def _first_bad(mask: np.ndarray) -> str:
    idx = np.flatnonzero(mask)
    return f"{idx.size} value(s), first at index {idx[0]}"


def _float_1d(values, name: str) -> np.ndarray:
    """``values`` as a 1-D float64 array; numbers or booleans only."""
    a = check_array_real(values, name, bools=True).astype(np.float64, copy=False)
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {a.shape}")
    return a


def check_scores(scores, name: str = "scores") -> np.ndarray:
    """1-D float64 array of finite values in [0, 1]."""
    done = _already_checked(scores)
    if done is not None:
        return done
    s = _float_1d(scores, name)
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
    done = _already_checked(labels)
    if done is not None:
        return done
    y = _float_1d(labels, name)
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
