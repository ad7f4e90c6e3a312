"""KDE calibration map (Zhang, Kailkhura & Han 2020, "Mix-n-Match"; METHODS.md §3)."""
from __future__ import annotations

import numpy as np

from . import CalibrationFamily, register


def _triweight(u: np.ndarray) -> np.ndarray:
    """35/32 (1 - u^2)^3 on |u| < 1 (unit support, variance 1/9)."""
    v = np.clip(1.0 - u * u, 0.0, None)
    return (35.0 / 32.0) * v * v * v


@register("kde")
class KDEFamily(CalibrationFamily):
    """c(x) = min(1, pi f+(x) / f(x)) with triweight KDEs reflected at 0 and 1.

    - ``pi`` is the positive rate, ``f+`` / ``f`` the densities of the scores
      of positives / of all points, both with one bandwidth
      ``h = std(scores of positives) * (2 n)^(-1/5)`` (``np.std``, ddof 0).
    - As in Zhang et al.'s code (KDEpy ``FFTKDE(bw=h, kernel="triweight")``),
      ``h`` is the kernel's *standard deviation*; the triweight kernel has
      variance 1/9 of its support radius squared, so the support radius is
      ``3 h``.
    - Reflection: the points within 3h of 0 (of 1) are mirrored to -s (2 - s),
      which is the full mirror of the data restricted to where it matters.
    - The ratio is evaluated exactly (windowed sums, no FFT binning) on a grid
      of ``n_grid`` points on [0, 1]; where f(x) <= ``threshold`` (1e-6, as in
      their code) it is undefined and filled by linear interpolation between
      defined grid points (constant beyond them). ``predict`` interpolates
      linearly on the grid.
    - If the positives' scores all coincide (std 0) the std of all scores is
      used; if all scores coincide the map is the constant pi **(choice)**.

    Fitted: ``bandwidth_`` (h), ``grid_``, ``c_grid_``, ``pi_``.
    """

    needs_both_classes = True

    def __init__(self, n_grid: int = 8193, threshold: float = 1e-6):
        self.n_grid = n_grid
        self.threshold = threshold

    def _fit(self, s, y):
        if int(self.n_grid) < 2:
            raise ValueError(f"n_grid must be >= 2, got {self.n_grid!r}")
        n = s.size
        pos = y > 0.5
        self.pi_ = float(pos.mean())
        factor = (2.0 * n) ** (-0.2)
        h = float(np.std(s[pos])) * factor
        if h <= 0:
            h = float(np.std(s)) * factor
        self.bandwidth_ = h
        self.grid_ = np.linspace(0.0, 1.0, int(self.n_grid))
        if h <= 0:
            self.c_grid_ = np.full(self.grid_.shape, self.pi_)
            return
        radius = 3.0 * h
        lo, hi = s < radius, s > 1.0 - radius
        pts = np.concatenate((s, -s[lo], 2.0 - s[hi]))
        lab = np.concatenate((y, y[lo], y[hi]))
        order = np.argsort(pts, kind="stable")
        pts, lab = pts[order], lab[order]
        w = np.stack((np.ones_like(lab), lab), axis=1)            # (m, 2): all, positives
        sums = np.zeros((self.grid_.size, 2))
        block = 256
        for g0 in range(0, self.grid_.size, block):
            x = self.grid_[g0:g0 + block]
            a = np.searchsorted(pts, x[0] - radius, side="left")
            b = np.searchsorted(pts, x[-1] + radius, side="right")
            if b > a:
                k = _triweight((x[:, None] - pts[None, a:b]) / radius)
                sums[g0:g0 + block] = k @ w[a:b]
        f_all = sums[:, 0] / (n * radius)
        n_pos = max(float(y.sum()), 1.0)
        f_pos = sums[:, 1] / (n_pos * radius)
        ok = f_all > float(self.threshold)
        c = np.full(self.grid_.shape, self.pi_)
        c[ok] = np.minimum(1.0, self.pi_ * f_pos[ok] / f_all[ok])
        if ok.any() and not ok.all():
            c = np.interp(self.grid_, self.grid_[ok], c[ok])
        self.c_grid_ = c

    def _predict(self, s):
        return np.interp(s, self.grid_, self.c_grid_)
