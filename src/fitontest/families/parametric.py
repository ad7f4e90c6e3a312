"""Parametric families: Platt scaling, binary temperature scaling, beta calibration
(docs/methods/03-binary-families.md §3). All work on logit(s) with s clipped to [1e-16, 1 - 1e-16]
(beta: betacal's own clipping), so scores of exactly 0 and 1 are fine.
"""
from __future__ import annotations

import warnings

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import expit

from fitontest.core.validation import logit
from . import CalibrationFamily, register


def _logloss_terms(f: np.ndarray, t: np.ndarray) -> np.ndarray:
    """-t log sigma(f) - (1 - t) log(1 - sigma(f)) = log(1 + e^f) - t f, stably."""
    return np.logaddexp(0.0, f) - t * f


def platt_targets(y: np.ndarray) -> np.ndarray:
    """Platt's smoothed targets: (N+ + 1)/(N+ + 2) for positives, 1/(N- + 2) for negatives."""
    n_pos = float(y.sum())
    n_neg = float(y.size - n_pos)
    return np.where(y > 0.5, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))


def fit_platt(z: np.ndarray, t: np.ndarray, max_iter: int = 100) -> tuple[float, float]:
    """(a, b) minimising sum log-loss(sigma(a z + b), t): Newton's method with
    backtracking (Lin, Lin & Weng 2007), no regularisation. ``t`` may be soft."""
    n_pos = float(t.sum())
    a, b = 0.0, float(np.log((n_pos + 1.0) / (t.size - n_pos + 1.0)))
    loss = float(np.sum(_logloss_terms(a * z + b, t)))
    for _ in range(max_iter):
        p = expit(a * z + b)
        r = p - t
        g = np.array([np.dot(r, z), r.sum()])
        w = p * (1.0 - p)
        h = np.array([[np.dot(w, z * z), np.dot(w, z)], [np.dot(w, z), w.sum()]])
        h[0, 0] += 1e-12
        h[1, 1] += 1e-12
        if np.max(np.abs(g)) < 1e-11 * max(1.0, t.size):
            break
        try:
            step = np.linalg.solve(h, g)
        except np.linalg.LinAlgError:
            step = np.linalg.lstsq(h, g, rcond=None)[0]
        alpha = 1.0
        while alpha > 1e-10:
            a_new, b_new = a - alpha * step[0], b - alpha * step[1]
            new = float(np.sum(_logloss_terms(a_new * z + b_new, t)))
            if new <= loss + 1e-4 * alpha * np.dot(g, -step):
                break
            alpha *= 0.5
        else:
            break
        if abs(a_new - a) + abs(b_new - b) < 1e-14 * (1 + abs(a) + abs(b)):
            a, b, loss = a_new, b_new, new
            break
        a, b, loss = a_new, b_new, new
    return float(a), float(b)


@register("platt")
class PlattFamily(CalibrationFamily):
    """Platt scaling: c(s) = sigmoid(a logit(s) + b), fitted by log-loss.

    Fitted against Platt's smoothed targets, without regularisation. Fitted: ``a_``, ``b_``.

    The smoothed targets lie strictly inside (0, 1), so a single-class fitting
    set still has a finite optimum (a constant map); both classes are not needed.
    """

    def __init__(self):
        pass

    def _fit(self, s, y):
        self.a_, self.b_ = fit_platt(logit(s), platt_targets(y))

    def _predict(self, s):
        return expit(self.a_ * logit(s) + self.b_)


@register("temp_1vsrest")
class BinaryTemperatureFamily(CalibrationFamily):
    """Binary temperature scaling: c(s) = sigmoid(logit(s) / T), T > 0, fitted by log-loss.

    The loss is convex in w = 1/T; it is minimised over log w in
    [log w_min, log w_max] = [-log 1e6, log 1e6] by bounded Brent search
    (unimodal there), so T is in [1e-6, 1e6]; ``temperature_`` is T.
    """

    needs_both_classes = True

    def __init__(self):
        pass

    def _fit(self, s, y):
        z = logit(s)

        def loss(u):
            return float(np.sum(_logloss_terms(np.exp(u) * z, y)))

        lim = np.log(1e6)
        res = minimize_scalar(loss, bounds=(-lim, lim), method="bounded",
                              options={"xatol": 1e-10, "maxiter": 500})
        self.temperature_ = float(np.exp(-res.x))

    def _predict(self, s):
        return expit(logit(s) / self.temperature_)


@register("beta")
class BetaFamily(CalibrationFamily):
    """Beta calibration (Kull et al. 2017): c(s) = sigmoid(a ln s - b ln(1 - s) + c).

    ``betacal.BetaCalibration(parameters="abm")``.

    betacal switches every warning off process-wide when it fits
    (``warnings.filterwarnings("ignore")``); the fit runs inside
    ``warnings.catch_warnings()`` so the caller's filters are restored.
    Fitted: ``calibrator_`` (the betacal object) and ``map_`` = [a, b, m].
    """

    needs_both_classes = True

    def __init__(self):
        pass

    def _fit(self, s, y):
        from betacal import BetaCalibration

        with warnings.catch_warnings():
            cal = BetaCalibration(parameters="abm")
            cal.fit(s, y)
        self.calibrator_ = cal
        self.map_ = np.asarray(cal.calibrator_.map_, dtype=np.float64)

    def _predict(self, s):
        # betacal's own prediction, except that the features are chosen by the
        # number the logistic regression was fitted on: betacal picks them from
        # a == 0 / b == 0, which breaks when a fitted coefficient is exactly 0
        # (constant scores) -- identical output otherwise.
        inner = self.calibrator_.calibrator_
        eps = np.finfo(np.float64).eps
        df = np.clip(s, eps, 1 - eps)
        x = np.column_stack((np.log(df), -np.log(1.0 - df)))
        if inner.lr_.n_features_in_ == 1:
            x = x[:, 1:] if self.map_[0] == 0 else x[:, :1]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            p = inner.lr_.predict_proba(x)[:, 1]
        return np.clip(np.asarray(p, dtype=np.float64), 0.0, 1.0)
