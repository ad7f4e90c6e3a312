"""Shared machinery of the multi-class calibrators.

- input checks for (logits, labels) made once, at the boundary (``ValueError``
  naming the problem, never a silent NaN);
- numerically stable softmax / log-softmax and the mean-NLL gradient with
  respect to calibrated logits (the building block of every analytic
  gradient in this package);
- the optimisers, float64: an L-BFGS wrapper (scipy) and a damped Newton
  method for the small convex matrix problems; both report non-convergence
  with a :class:`sklearn.exceptions.ConvergenceWarning`;
- :class:`MultiClassCalibrator`, the scikit-learn-style base class.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted
from threadpoolctl import threadpool_limits

from fitontest.core import validation
from fitontest.core.validation import _first_bad, check_fit_size

#: rows per chunk in :meth:`MultiClassCalibrator.predict_proba` (bounds the
#: float64 temporaries to a few tens of MB whatever the hold-out size).
CHUNK_ROWS = 1 << 17


# --------------------------------------------------------------------------- checks
def check_logits(logits, name: str = "logits", n_classes: int | None = None) -> np.ndarray:
    """2-D (n, K) array of finite real values, K >= 2.

    The dtype is kept (float32 logits are not copied here; callers convert
    chunks to float64). ``n_classes`` checks K against the fitted K.
    """
    z = validation.check_array_real(logits, name)
    if z.ndim != 2:
        raise ValueError(f"{name} must be a 2-D (n_samples, n_classes) array, got shape {z.shape}")
    if z.shape[1] < 2:
        raise ValueError(f"{name} must have at least 2 classes (columns), got {z.shape[1]}")
    if n_classes is not None and z.shape[1] != n_classes:
        raise ValueError(f"{name} have {z.shape[1]} classes (columns) but the calibrator "
                         f"was fitted on {n_classes}")
    if z.shape[0] == 0:
        raise ValueError(f"{name} is empty (0 rows)")
    if not np.issubdtype(z.dtype, np.integer):
        bad = ~np.isfinite(z)
        if bad.any():
            rows = np.flatnonzero(bad.any(axis=1))
            raise ValueError(f"{name} contain NaN or infinity: {rows.size} row(s), "
                             f"first at row {rows[0]}")
    return z


def check_class_labels(labels, n_classes: int, name: str = "labels") -> np.ndarray:
    """1-D int64 array of class indices in 0..n_classes-1.

    Integer dtypes and integral-valued floats are accepted; booleans are not
    (a class index is not a truth value).
    """
    y = validation.check_array_real(labels, name)
    if y.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {y.shape}")
    if not np.issubdtype(y.dtype, np.integer):
        bad = ~np.isfinite(y) | (y != np.round(y))
        if bad.any():
            raise ValueError(f"{name} must be integer class indices: {_first_bad(bad)} "
                             "are not whole numbers")
    bad = (y < 0) | (y >= n_classes)
    if bad.any():
        raise ValueError(f"{name} must lie in 0..{n_classes - 1} (K = {n_classes} classes): "
                         f"{_first_bad(bad)} outside (min {y.min():g}, max {y.max():g})")
    return y.astype(np.int64, copy=False)


def check_fit_inputs(logits, labels, *, min_points: int = 2,
                     n_folds: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Validate a (logits, labels) fitting set; float64 logits, int64 labels."""
    z = check_logits(logits)
    y = check_class_labels(labels, z.shape[1])
    check_fit_size(z.shape[0], y.shape[0], "logits", min_points=min_points, n_folds=n_folds)
    return np.ascontiguousarray(z, dtype=np.float64), y


# --------------------------------------------------------------------------- maths
def softmax(a: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Row softmax, stable (max-shifted), float64."""
    a = np.asarray(a, dtype=np.float64)
    out = np.subtract(a, a.max(axis=1, keepdims=True), out=out)
    np.exp(out, out=out)
    out /= out.sum(axis=1, keepdims=True)
    return out


def log_softmax(a: np.ndarray) -> np.ndarray:
    """Row log-softmax, stable, float64 (finite for finite input)."""
    a = np.asarray(a, dtype=np.float64)
    m = a.max(axis=1, keepdims=True)
    shifted = a - m
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


def nll_and_grad(a: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
    """Mean negative log-likelihood of calibrated logits ``a`` and its gradient.

    Returns ``(mean_i -log softmax(a_i)[y_i], G)`` with ``G = (softmax(a) -
    onehot(y)) / n``, the gradient with respect to ``a``; chain rules of the
    calibrators multiply ``G`` by their Jacobians.
    """
    n = a.shape[0]
    rows = np.arange(n)
    m = a.max(axis=1, keepdims=True)
    e = np.exp(a - m)
    s = e.sum(axis=1, keepdims=True)
    lse = np.log(s[:, 0]) + m[:, 0]
    nll = float(np.mean(lse - a[rows, y]))
    e /= s
    e[rows, y] -= 1.0
    e /= n
    return nll, e


def mean_nll(a: np.ndarray, y: np.ndarray) -> float:
    """Mean negative log-likelihood of calibrated logits ``a``."""
    lsm = log_softmax(a)
    return float(-np.mean(lsm[np.arange(a.shape[0]), y]))


# --------------------------------------------------------------------------- optimiser
@dataclass
class OptResult:
    x: np.ndarray
    fun: float
    n_iter: int
    converged: bool
    message: str


def minimize_lbfgs(fun_grad, x0: np.ndarray, *, max_iter: int = 1000, gtol: float = 1e-6,
                   ftol: float = 1e-12, bounds=None) -> OptResult:
    """Minimise ``fun_grad(x) -> (f, grad)`` with scipy L-BFGS-B in float64.

    Converged means scipy's own criteria were met, or the line search could
    not improve further while the largest gradient component was already
    within ``1000 * gtol`` (round-off at the optimum, not a failed fit).
    Gradient components of variables sitting on a bound are ignored there.
    """
    res = minimize(fun_grad, np.asarray(x0, dtype=np.float64), jac=True, method="L-BFGS-B",
                   bounds=bounds, options={"maxiter": int(max_iter), "gtol": gtol,
                                           "ftol": ftol, "maxcor": 20})
    converged = bool(res.success)
    if not converged and res.status == 2:
        g = np.asarray(res.jac, dtype=np.float64)
        if bounds is not None:
            lo = np.array([-np.inf if b[0] is None else b[0] for b in bounds])
            hi = np.array([np.inf if b[1] is None else b[1] for b in bounds])
            g = np.where((res.x <= lo) & (g > 0) | (res.x >= hi) & (g < 0), 0.0, g)
        converged = bool(np.all(np.isfinite(g)) and np.max(np.abs(g)) <= 1e3 * gtol)
    msg = res.message if isinstance(res.message, str) else str(res.message)
    return OptResult(x=np.asarray(res.x, dtype=np.float64), fun=float(res.fun),
                       n_iter=int(res.nit), converged=converged, message=msg)


def minimize_newton(fun, fun_grad_hess, x0: np.ndarray, *, max_iter: int = 100,
                    gtol: float = 1e-8, dtol: float = 1e-14) -> OptResult:
    """Damped Newton for smooth convex objectives with an analytic Hessian.

    ``fun(x) -> f``; ``fun_grad_hess(x) -> (f, g, H)``. Each step solves
    ``(H + r I) d = g`` by Cholesky (``r`` a tiny ridge, raised if ``H`` is
    numerically singular: softmax models have flat directions) and
    backtracks (Armijo) along ``-d``. Converged when ``max |g| <= gtol``, or
    when the Newton decrement ``g.d`` (twice the predicted decrease of ``f``)
    is below ``dtol * (1 + |f|)`` — the round-off level of ``f``, where steps
    can no longer be measured (heavily penalised fits have large Hessians, so
    their gradient stalls above ``gtol`` at the optimum) — or when no step
    decreases ``f`` any more while ``max |g| <= 1000 * gtol``.
    """
    from scipy.linalg import LinAlgError, cho_factor, cho_solve

    x = np.asarray(x0, dtype=np.float64).copy()
    f, g, H = fun_grad_hess(x)
    it, converged, msg = 0, False, "maximum number of iterations reached"
    eye = np.eye(x.size)
    while True:
        gmax = float(np.max(np.abs(g)))
        if not np.isfinite(f) or not np.isfinite(gmax):
            msg = "non-finite objective or gradient"
            break
        if gmax <= gtol:
            converged, msg = True, "gradient below tolerance"
            break
        if it >= max_iter:
            break
        scale = max(float(np.max(np.abs(np.diag(H)))), 1e-300)
        ridge = 1e-12 * scale
        for _ in range(12):
            try:
                d = cho_solve(cho_factor(H + ridge * eye, check_finite=False), g,
                              check_finite=False)
                break
            except LinAlgError:
                ridge *= 100.0
        else:
            d = g / scale
        slope = float(g @ d)
        if not slope > 0:  # not a descent direction: fall back to the gradient
            d, slope = g / scale, float(g @ g) / scale
        elif slope <= dtol * (1.0 + abs(f)):
            converged, msg = True, "Newton decrement at round-off level"
            break
        t, accepted = 1.0, False
        for _ in range(40):
            xn = x - t * d
            fn = fun(xn)
            if fn <= f - 1e-4 * t * slope:
                accepted = True
                break
            t *= 0.5
        it += 1
        if not accepted:
            converged = gmax <= 1e3 * gtol
            msg = "line search cannot decrease the objective further"
            break
        x = xn
        f, g, H = fun_grad_hess(x)
    return OptResult(x=x, fun=float(f), n_iter=it, converged=converged, message=msg)


def warn_not_converged(what: str, result: OptResult | None = None, extra: str = "") -> None:
    detail = f" after {result.n_iter} iterations ({result.message})" if result is not None else ""
    warnings.warn(f"{what} did not converge{detail}{extra}; consider raising max_iter",
                  ConvergenceWarning, stacklevel=3)


# --------------------------------------------------------------------------- base class
class MultiClassCalibrator(BaseEstimator):
    """Fit on (logits, labels); predict calibrated class probabilities.

    Subclasses implement ``_fit(z, y)`` (validated float64 logits, int64
    labels) and ``_transform(z)`` mapping a float64 chunk of logits to
    calibrated logits (any row-wise additive constant is irrelevant);
    hyper-parameters only in ``__init__``; fitted state in attributes ending
    in ``_``. ``n_classes_`` is set by :meth:`fit` after ``_fit`` succeeds.
    """

    min_points: int = 2

    def _n_folds_needed(self) -> int | None:
        """Folds the fit will cross-validate over (None when it will not)."""
        return None

    def fit(self, logits, labels):
        z, y = check_fit_inputs(logits, labels, min_points=self.min_points,
                                n_folds=self._n_folds_needed())
        # the matrices here are tiny (K x K); multi-threaded BLAS only adds
        # contention (x50 slower on a loaded 2-core machine), so use one thread
        with threadpool_limits(limits=1, user_api="blas"):
            self._fit(z, y)
        self.n_classes_ = int(z.shape[1])
        self.classes_ = np.arange(self.n_classes_)
        self.n_fit_ = int(z.shape[0])
        return self

    def _checked(self, logits) -> np.ndarray:
        check_is_fitted(self, "n_classes_")
        return check_logits(logits, n_classes=self.n_classes_)

    def _chunks(self, z: np.ndarray):
        """(slice, float64 chunk) pairs; BLAS limited to one thread meanwhile
        (K x K products: threads only add contention)."""
        with threadpool_limits(limits=1, user_api="blas"):
            for start in range(0, z.shape[0], CHUNK_ROWS):
                sl = slice(start, min(start + CHUNK_ROWS, z.shape[0]))
                yield sl, np.ascontiguousarray(z[sl], dtype=np.float64)

    def predict_logits(self, logits) -> np.ndarray:
        """Calibrated logits (float64); ``softmax`` of them is :meth:`predict_proba`."""
        z = self._checked(logits)
        out = np.empty(z.shape, dtype=np.float64)
        for sl, chunk in self._chunks(z):
            out[sl] = self._transform(chunk)
        return out

    def predict_proba(self, logits) -> np.ndarray:
        """Calibrated class probabilities, float64, rows summing to 1."""
        z = self._checked(logits)
        out = np.empty(z.shape, dtype=np.float64)
        for sl, chunk in self._chunks(z):
            softmax(self._transform(chunk), out=out[sl])
        return out

    def nll(self, logits, labels) -> float:
        """Mean negative log-likelihood of the calibrated probabilities."""
        z = self._checked(logits)
        y = check_class_labels(labels, self.n_classes_)
        if y.shape[0] != z.shape[0]:
            raise ValueError(f"logits and labels differ in length: {z.shape[0]} != {y.shape[0]}")
        total = 0.0
        for sl, chunk in self._chunks(z):
            total += mean_nll(self._transform(chunk), y[sl]) * chunk.shape[0]
        return total / z.shape[0]

    # subclass hooks
    def _fit(self, z: np.ndarray, y: np.ndarray) -> None:  # pragma: no cover
        raise NotImplementedError

    def _transform(self, z: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError
