"""Smooth ECE (Błasiok & Nakkiran 2023, "Smooth ECE: principled reliability
diagrams via kernel smoothing"; docs/methods.md §3.10).

The residuals r_i = s_i - y_i are smoothed by a Gaussian kernel reflected at 0
and 1 (the kernel mass leaving [0, 1] is folded back, so every point keeps its
full weight): with ``num(t) = sum_i r_i K_sigma(t, s_i)`` and
``den(t) = sum_i K_sigma(t, s_i)``,

    r_hat(t) = num(t) / den(t),      smECE_sigma = ∫ |r_hat| den / ∫ den,

and smECE is smECE_sigma at the fixed point sigma* where smECE_sigma = sigma.

Discretisation, chosen to match the reference implementation (``relplot``
1.0.3, ``relplot.smECE``) to rounding on every sample without scores within
one grid cell (at most 1e-3) of 0 or 1:

- the points are split linearly onto the two nearest nodes of a uniform grid
  of ``m = max(2000, round(20 / sigma)) // 2 + 1`` nodes on [0, 1]; the grid
  is convolved (FFT) with the Gaussian density sampled at the node offsets,
  after mirroring the grid about its end nodes; ``num``/``den`` between
  nodes are linear interpolations. The one deviation (**choice**): the mass
  on an end node is its own mirror image and counts twice, so every point's
  kernel integrates to 1 over [0, 1]; relplot counts it once, which halves
  the weight of scores exactly at 0 or 1 (saturated confidences);
- r_hat = num / (den + 1e-4) (a tiny floor: far from every point r_hat -> 0,
  i.e. the map is the identity where there is no data);
- the integrals are sums over ``max(round(10 / sigma), 200)`` equally spaced
  points of [0, 1];
- sigma* is found by bisection on [0, 1] (10 halvings) of
  ``sigma < eps or sigma < smECE_sigma``, keeping the smallest tested sigma at
  which the test fails (relplot's ``search_param``): sigma* within 2^-10.

The family's map is c_hat(s) = clip(s - r_hat(s), 0, 1) (**choice**: a
probability; the clip only moves it towards every true map), so CMEE and
every table apply to it. Its CE estimate is smECE itself, not the plug-in
mean |c_hat(s_i) - s_i| (which weights r_hat by the empirical rather than the
smoothed distribution): ``ce_estimate(s, 1)`` is smECE and
``ce_estimate(s, 2)`` its L2 analogue ∫ r_hat^2 den / ∫ den at the same
sigma* (**choice**). Like ``kce`` the estimate belongs to the fitting sample.
"""
from __future__ import annotations

import numpy as np
from scipy.signal import fftconvolve
from sklearn.utils.validation import check_is_fitted

from fitontest.core.validation import check_scores
from . import CalibrationFamily, register

#: floor added to the smoothed density before dividing (relplot's ``smooth`` eps)
DENSITY_FLOOR = 1e-4


def kernel_grid(sigma: float) -> np.ndarray:
    """The nodes (uniform on [0, 1]) on which the kernel sums are computed."""
    m = max(2000, round(20.0 / sigma)) // 2 + 1
    return np.linspace(0.0, 1.0, m)


def _to_grid(s: np.ndarray, w: np.ndarray, m: int) -> np.ndarray:
    """Weights ``w`` at ``s`` split linearly onto the two nearest of ``m`` nodes."""
    pos = s * (m - 1)
    left = np.clip(pos.astype(np.int64), 0, m - 2)
    frac = pos - left
    return (np.bincount(left, weights=(1.0 - frac) * w, minlength=m)
            + np.bincount(left + 1, weights=frac * w, minlength=m))


def _reflected_convolve(values: np.ndarray, sigma: float) -> np.ndarray:
    """``values`` on the grid convolved with the Gaussian reflected at both ends."""
    m = values.size
    offsets = np.linspace(0.0, 1.0, m) - 0.5
    kernel = np.exp(-0.5 * (offsets / sigma) ** 2) / (np.sqrt(2.0 * np.pi) * sigma)
    # mirror about the end nodes; a point on an end node is its own mirror
    # image, so the end nodes count twice (relplot counts them once: its
    # points within one grid cell of 0 or 1 lose up to half their mass)
    centre = values.copy()
    centre[[0, -1]] *= 2.0
    mirrored = np.concatenate([values[:0:-1], centre, values[-2::-1]])
    full = fftconvolve(mirrored, kernel, mode="valid")
    return full[m // 2: m // 2 + m]


def smooth_sums(scores, residuals, sigma: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(grid, num, den): the reflected kernel sums of the residuals and of 1."""
    s = np.asarray(scores, dtype=np.float64)
    grid = kernel_grid(sigma)
    m = grid.size
    num = _reflected_convolve(_to_grid(s, np.asarray(residuals, dtype=np.float64), m), sigma)
    den = _reflected_convolve(_to_grid(s, np.ones_like(s), m), sigma)
    return grid, num, den


def smoothed_map(scores, labels, sigma: float, at) -> np.ndarray:
    """c_hat(at) = clip(at - r_hat(at), 0, 1) of a sample at a fixed bandwidth."""
    s = np.asarray(scores, dtype=np.float64)
    grid, num, den = smooth_sums(s, s - np.asarray(labels, dtype=np.float64), sigma)
    at = np.asarray(at, dtype=np.float64)
    r = np.interp(at, grid, num) / (np.interp(at, grid, den) + DENSITY_FLOOR)
    return np.clip(at - r, 0.0, 1.0)


def smece_sigma(scores, labels, sigma: float, p: int = 1) -> float:
    """smECE at a fixed bandwidth ``sigma`` (p = 2: the L2 analogue)."""
    s = np.asarray(scores, dtype=np.float64)
    grid, num, den = smooth_sums(s, s - np.asarray(labels, dtype=np.float64), sigma)
    t = np.linspace(0.0, 1.0, max(round(10.0 / sigma), 200))
    num_t = np.interp(t, grid, num)
    den_t = np.interp(t, grid, den) + DENSITY_FLOOR
    r = np.abs(num_t / den_t)
    return float(np.sum((r if p == 1 else r * r) * den_t) / np.sum(den_t))


def fixed_point_sigma(scores, labels, eps: float = 1e-3, n_halvings: int = 10) -> float:
    """sigma* with smECE_sigma* ~ sigma* (bisection, see the module docstring)."""
    def too_small(sigma):
        return sigma < eps or sigma < smece_sigma(scores, labels, sigma)

    if too_small(1.0):
        return 1.0
    hi, lo = 1.0, 0.0
    for _ in range(int(n_halvings)):
        mid = 0.5 * (hi + lo)
        if too_small(mid):
            lo = mid
        else:
            hi = mid
    return hi


def smece(scores, labels, eps: float = 1e-3) -> tuple[float, float]:
    """(smECE, sigma*) of a sample, as ``relplot.smECE(f, y, return_width=True)``."""
    sigma = fixed_point_sigma(scores, labels, eps=eps)
    return smece_sigma(scores, labels, sigma), sigma


@register("smece")
class SmoothECE(CalibrationFamily):
    """Smooth ECE (smECE, Blasiok & Nakkiran 2023): Gaussian kernel smoothing, fixed-point bandwidth.

    Fitted: ``sigma_`` (the bandwidth, reported as the hyper-parameter),
    ``smece_`` and ``smece_sq_`` (the L1 / L2 estimates on the fitting sample),
    ``grid_``, ``num_``, ``den_`` (the kernel sums the map interpolates).
    """

    hyper_attr = "sigma_"
    estimand = "smECE"

    def __init__(self, eps: float = 1e-3):
        self.eps = eps

    def _fit(self, s, y):
        if not 0 < float(self.eps) < 1:
            raise ValueError(f"eps must lie in (0, 1), got {self.eps!r}")
        self.smece_, self.sigma_ = smece(s, y, eps=float(self.eps))
        self.smece_sq_ = smece_sigma(s, y, self.sigma_, p=2)
        self.grid_, self.num_, self.den_ = smooth_sums(s, s - y, self.sigma_)

    def residual(self, scores) -> np.ndarray:
        """The smoothed residual r_hat(s) = E[s - y | s] (vectorised interpolation)."""
        check_is_fitted(self, "n_fit_")
        s = check_scores(scores)
        return np.interp(s, self.grid_, self.num_) / (np.interp(s, self.grid_, self.den_)
                                                       + DENSITY_FLOOR)

    def _predict(self, s):
        return np.clip(s - self.residual(s), 0.0, 1.0)

    def ce_estimate(self, scores, p: int = 1) -> float:
        """smECE (p = 1) or its L2 analogue (p = 2) of the fitting sample."""
        self._fitting_sample(scores)
        if p == 1:
            return float(self.smece_)
        if p == 2:
            return float(self.smece_sq_)
        raise ValueError(f"p must be 1 or 2, got {p!r}")
