"""Spline calibration (Gupta et al. 2021, "Calibration of neural networks using
splines"; docs/methods/03-binary-families.md §3).

Sort the fitting points by score; with the rank fraction t_i = i / n
(i = 1..n) and the cumulative residual curve F(t_i) = (1/n) sum_{j<=i}(y_j - s_j)
(cumulative labels minus cumulative scores, as in the authors' code), fit by
least squares a cubic spline with K knots equally spaced in t (so the knots
are equal-mass in score). Its derivative F'(t) estimates E[Y - S | rank t],
and c(s_i) = s_i + F'(t_i). The map on new scores interpolates linearly
between the fitting scores (tied fitting scores averaged) and beyond them
continues with slope 1, c(s) = s + (c(s_end) - s_end) **(choice; the authors
extrapolate linearly)**; the result is clipped to [0, 1] **(choice)** so that it
is a probability.

End conditions ("runout") of the spline, on the second derivatives M at the knots:
natural M_0 = M_{K-1} = 0; parabolic M_0 = M_1, M_{K-1} = M_{K-2}; cubic
M_0 = 2 M_1 - M_2 (and mirrored) -- the classic end conditions of the
authors' spline code.

K is chosen by 10-fold CV as for binning (held-out squared error of the
clipped map, 0.1 % rule) over K = ``min_knots``..``max_knots`` = 4..20 knots
(3..19 cubic pieces) **(choice: 4 is the fewest knots for which all three end
conditions determine the spline; the authors used a fixed K of about 6)**.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from functools import lru_cache

import numpy as np

from ..core.validation import check_option
from ..core.selection import complexity_rule, kfold_indices
from . import CalibrationFamily, register
from fitontest.core.runtime import blas_threads

RUNOUTS = ("natural", "parabolic", "cubic")
_MIN_KNOTS = {"natural": 2, "parabolic": 3, "cubic": 4}


@lru_cache(maxsize=None)
def _second_derivative_map(n_knots: int, runout: str) -> np.ndarray:
    """Q with M = Q v: knot values v -> second derivatives M of the interpolating spline."""
    k = n_knots
    h = 1.0 / (k - 1)
    a = np.zeros((k, k))
    r = np.zeros((k, k))
    for j in range(1, k - 1):
        a[j, j - 1:j + 2] = (h / 6.0, 2.0 * h / 3.0, h / 6.0)
        r[j, j - 1:j + 2] = (1.0 / h, -2.0 / h, 1.0 / h)
    if runout == "natural":
        a[0, 0] = a[-1, -1] = 1.0
    elif runout == "parabolic":
        a[0, :2] = (1.0, -1.0)
        a[-1, -2:] = (-1.0, 1.0)
    else:
        a[0, :3] = (1.0, -2.0, 1.0)
        a[-1, -3:] = (1.0, -2.0, 1.0)
    q = np.linalg.solve(a, r)
    q.setflags(write=False)
    return q


def spline_design(t: np.ndarray, n_knots: int, runout: str):
    """(Phi, dPhi): the spline and its derivative at t are Phi @ v and dPhi @ v."""
    q = _second_derivative_map(n_knots, runout)
    h = 1.0 / (n_knots - 1)
    j = np.minimum(np.floor(t / h).astype(np.int64), n_knots - 2)
    u = t / h - j
    rows = np.arange(t.size)
    phi = (h * h / 6.0 * ((1 - u) ** 3 - (1 - u)))[:, None] * q[j] \
        + (h * h / 6.0 * (u ** 3 - u))[:, None] * q[j + 1]
    phi[rows, j] += 1.0 - u
    phi[rows, j + 1] += u
    dphi = (-h / 6.0 * (3 * (1 - u) ** 2 - 1))[:, None] * q[j] \
        + (h / 6.0 * (3 * u ** 2 - 1))[:, None] * q[j + 1]
    dphi[rows, j] -= 1.0 / h
    dphi[rows, j + 1] += 1.0 / h
    return phi, dphi


def _spline_solver(n: int, n_knots: int, runout: str):
    """For n fitting points: (Q, R^-1, dPhi) with Phi = Q R, so the least-squares
    knot values are v = R^-1 Q' F and the derivative at the points dPhi v.
    Depends only on (n, K, runout) -- the rank fractions are i / n -- so CV
    folds of equal size, and every fit at one n, share it (:func:`_solver`)."""
    t = np.arange(1, n + 1) / n
    phi, dphi = spline_design(t, n_knots, runout)
    q, r = np.linalg.qr(phi)
    r_inv = np.linalg.pinv(r)
    for a in (q, r_inv, dphi):
        a.setflags(write=False)
    return q, r_inv, dphi


#: bytes of factorisations :func:`_solver` keeps across fits (least recently used
#: dropped first): at n = 10,000 one runout's 17 CV sizes take about 30 MB, and the
#: design and QR were 40 % of a fit's time (the evaluator chooser refits every
#: spline at one n in each of its worlds)
SOLVER_CACHE_BYTES = 128 * 2 ** 20
_SOLVERS: OrderedDict = OrderedDict()
_SOLVERS_LOCK = threading.Lock()      # fits in threads of one process share the cache


def _solver(n: int, n_knots: int, runout: str):
    """:func:`_spline_solver`, kept in a least-recently-used cache of at most
    :data:`SOLVER_CACHE_BYTES` (read-only arrays: sharing is safe)."""
    key = (int(n), int(n_knots), runout)
    with _SOLVERS_LOCK:
        if key in _SOLVERS:
            _SOLVERS.move_to_end(key)
            return _SOLVERS[key]
    out = _spline_solver(*key)
    with _SOLVERS_LOCK:
        if sum(a.nbytes for a in out) <= SOLVER_CACHE_BYTES:
            _SOLVERS[key] = out
            while sum(a.nbytes for v in _SOLVERS.values() for a in v) > SOLVER_CACHE_BYTES:
                _SOLVERS.popitem(last=False)
    return out


def tie_groups(s_sorted: np.ndarray):
    """(unique scores, index of each one's first point) of sorted scores."""
    return np.unique(s_sorted, return_index=True)


def fit_spline_map(s_sorted: np.ndarray, y_sorted: np.ndarray, n_knots: int, runout: str,
                   ties=None):
    """(unique fitting scores, c at them) of the spline map, before clipping.
    ``ties``: :func:`tie_groups` of ``s_sorted``, when the caller fits several K
    on one sample."""
    n = s_sorted.size
    f = np.cumsum(y_sorted - s_sorted) / n
    q, r_inv, dphi = _solver(n, n_knots, runout)
    v = r_inv @ (q.T @ f)
    acc = s_sorted + dphi @ v
    uniq, first = tie_groups(s_sorted) if ties is None else ties
    if uniq.size < n:                                   # average the map over tied scores
        counts = np.diff(np.append(first, n))
        acc = np.add.reduceat(acc, first) / counts
    return uniq, acc


def eval_spline_map(x: np.ndarray, knots_x: np.ndarray, knots_c: np.ndarray) -> np.ndarray:
    out = np.interp(x, knots_x, knots_c)
    below, above = x < knots_x[0], x > knots_x[-1]
    out[below] = x[below] + (knots_c[0] - knots_x[0])
    out[above] = x[above] + (knots_c[-1] - knots_x[-1])
    return np.clip(out, 0.0, 1.0)


@register("spline_natural", runout="natural")
@register("spline_cubic", runout="cubic")
@register("spline_parabolic", runout="parabolic")
class SplineFamily(CalibrationFamily):
    """Spline map (Gupta et al. 2021): a smoothed cumulative-residual curve, knots chosen by CV.

    Fitted: ``n_knots_``, ``candidates_``, ``cv_scores_``, ``x_`` (unique
    fitting scores) and ``c_`` (the map there, unclipped).
    """

    hyper_attr = "n_knots_"

    def __init__(self, runout: str = "natural", min_knots: int = 4, max_knots: int = 20,
                 n_folds: int = 10, tol: float = 1e-3, seed: int = 0):
        self.runout = runout
        self.min_knots = min_knots
        self.max_knots = max_knots
        self.n_folds = n_folds
        self.tol = tol
        self.seed = seed

    def _candidates(self) -> np.ndarray:
        check_option("runout", self.runout, RUNOUTS)
        lo = int(self.min_knots)
        if lo < _MIN_KNOTS[self.runout] or int(self.max_knots) < lo:
            raise ValueError(f"need {_MIN_KNOTS[self.runout]} <= min_knots <= max_knots for "
                             f"{self.runout} runout, got {self.min_knots}..{self.max_knots}")
        return np.arange(lo, int(self.max_knots) + 1)

    def _fit(self, s, y):
        with blas_threads(1):
            self._fit_cv(s, y)

    def _fit_cv(self, s, y):
        cands = self._candidates()
        folds = kfold_indices(s.size, int(self.n_folds), int(self.seed))
        scores = np.zeros((len(folds), cands.size))
        sorted_folds = []
        for train, test in folds:
            o = np.argsort(s[train], kind="stable")
            st = s[train][o]
            sorted_folds.append((st, y[train][o], tie_groups(st), s[test], y[test]))
        # K outside, folds inside: one K's solver serves every fold in turn, even
        # where the cache cannot hold them all (n = 100,000: 290 MB a runout)
        for c, k in enumerate(cands):
            for f, (st, yt, ties, s_test, y_test) in enumerate(sorted_folds):
                kx, kc = fit_spline_map(st, yt, int(k), self.runout, ties)
                scores[f, c] = np.mean((eval_spline_map(s_test, kx, kc) - y_test) ** 2)
        self.candidates_ = cands
        self.cv_scores_ = scores.mean(axis=0)
        self.n_knots_ = int(complexity_rule(cands, self.cv_scores_, tol=float(self.tol)))
        o = np.argsort(s, kind="stable")
        self.x_, self.c_ = fit_spline_map(s[o], y[o], self.n_knots_, self.runout)

    def _predict(self, s):
        return eval_spline_map(s, self.x_, self.c_)
