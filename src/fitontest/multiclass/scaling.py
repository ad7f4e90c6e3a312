"""The identity ("none"), temperature scaling and vector scaling.

All fits minimise the mean validation NLL in float64 with scipy L-BFGS and
analytic gradients, starting from the identity map.
"""
from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from . import register
from .base import MultiClassCalibrator, minimize_lbfgs, nll_and_grad, warn_not_converged


@register("none")
class Uncalibrated(MultiClassCalibrator):
    """The uncalibrated model: softmax of the logits (the identity calibrator).

    ``fit`` only validates and records K, so "none" runs through the same
    code path (and the same K checks) as every other calibrator.
    """

    def _fit(self, z, y):
        pass

    def _transform(self, z):
        return z


@register("temps")
class TemperatureScaling(MultiClassCalibrator):
    """Temperature scaling (Guo et al. 2017): softmax(z / T), T > 0.

    Optimises ``t = log T`` (identity start ``t = 0``) with L-BFGS-B inside
    ``|t| <= log_t_bound``; a solution on that bound (data separable, or
    logits carrying no signal at all) warns with ``ConvergenceWarning``.

    Fitted: ``temperature_``, ``n_iter_``, ``nll_`` (training mean NLL).
    """

    def __init__(self, max_iter: int = 200, tol: float = 1e-9, log_t_bound: float = 15.0):
        self.max_iter = max_iter
        self.tol = tol
        self.log_t_bound = log_t_bound

    def _fit(self, z, y):
        def fun(x):
            a = np.exp(-x[0])
            nll, g = nll_and_grad(a * z, y)
            return nll, np.array([-a * float(np.sum(g * z))])

        bound = float(self.log_t_bound)
        res = minimize_lbfgs(fun, np.zeros(1), max_iter=self.max_iter, gtol=self.tol,
                             bounds=[(-bound, bound)])
        t = float(res.x[0])
        if not res.converged:
            warn_not_converged("temperature scaling", res)
        elif abs(t) >= bound * (1 - 1e-9):
            warnings.warn(f"temperature scaling stopped at the bound T = {np.exp(t):.3g} "
                          "(|log T| = log_t_bound): the labels may be separable by the "
                          "logits or the logits uninformative", ConvergenceWarning,
                          stacklevel=3)
        self.temperature_ = float(np.exp(t))
        self.n_iter_ = res.n_iter
        self.nll_ = res.fun

    def _transform(self, z):
        return z * (1.0 / self.temperature_)


@register("vecs")
class VectorScaling(MultiClassCalibrator):
    """Vector scaling (Guo et al. 2017): softmax(w * z + b), unregularised.

    Identity start (``w = 1``, ``b = 0``); ``b`` is reported centred (mean 0,
    softmax is invariant to a common shift). A class absent from the
    training labels drives its ``b`` to minus infinity, which shows up as a
    ``ConvergenceWarning``; use MS-ODIR (penalised intercepts) then.

    Fitted: ``w_``, ``b_``, ``n_iter_``, ``nll_``.
    """

    def __init__(self, max_iter: int = 1000, tol: float = 1e-7):
        self.max_iter = max_iter
        self.tol = tol

    def _fit(self, z, y):
        k = z.shape[1]

        def fun(x):
            w, b = x[:k], x[k:]
            nll, g = nll_and_grad(z * w + b, y)
            return nll, np.concatenate([np.einsum("ij,ij->j", g, z), g.sum(axis=0)])

        x0 = np.concatenate([np.ones(k), np.zeros(k)])
        res = minimize_lbfgs(fun, x0, max_iter=self.max_iter, gtol=self.tol)
        if not res.converged:
            warn_not_converged("vector scaling", res)
        self.w_ = res.x[:k].copy()
        self.b_ = res.x[k:] - res.x[k:].mean()
        self.n_iter_ = res.n_iter
        self.nll_ = res.fun

    def _transform(self, z):
        return z * self.w_ + self.b_
