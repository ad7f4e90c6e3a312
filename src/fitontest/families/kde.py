"""KDE calibration map (Zhang, Kailkhura & Han 2020, "Mix-n-Match";
docs/methods/03-binary-families.md §3)."""
from __future__ import annotations

import numpy as np

from . import CalibrationFamily, register


def _triweight(u: np.ndarray) -> np.ndarray:
    """35/32 (1 - u^2)^3 on |u| < 1 (unit support, variance 1/9)."""
    v = np.clip(1.0 - u * u, 0.0, None)
    return (35.0 / 32.0) * v * v * v


@register("kde")
class KDEFamily(CalibrationFamily):
    """Kernel-density map (Zhang et al. 2020): c(s) = pi f+(s) / f(s), triweight KDEs.

    c(x) = min(1, pi f+(x) / f(x)) with triweight KDEs reflected at 0 and 1.

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

    ``variant="paper"`` reproduces the authors' ``KDE_estimator``
    (Experiments_*/kde.py, after Zhang et al.'s demo; docs/differences.md):

    - the ratio is computed for the *negative* class on d = 1 - s and turned
      back, c(s) = 1 - min(1, pi0 f0(d) / f(d)), with the bandwidth
      ``std(scores of negatives) * (2 n)^(-1/5)``;
    - every point is mirrored (d < 0.5 about 0, the others about 1), the
      densities are read on ``linspace(-0.6, 1.6, 2**14)`` and set to 0 at
      grid points <= 0 and >= 1, and a score takes the value of its *nearest*
      grid point (no interpolation);
    - where max(f0, f) <= ``threshold`` the value of the nearest defined grid
      point on the lower-score side is carried (their loop carries the
      previous point of score-sorted data), and 0 (so c = 1) when there is
      none -- e.g. for scores within ~7e-5 of 0.

    The densities are exact windowed sums here (theirs: KDEpy's FFT on the
    same grid, which agrees to the binning error).

    Fitted: ``bandwidth_`` (h), ``grid_``, ``c_grid_``, ``pi_``.
    """

    needs_both_classes = True

    def __init__(self, n_grid: int = 8193, threshold: float = 1e-6, variant: str = "ours"):
        self.n_grid = n_grid
        self.threshold = threshold
        self.variant = variant

    def _fit(self, s, y):
        if self.variant not in ("ours", "paper"):
            raise ValueError(f"variant must be 'ours' or 'paper', got {self.variant!r}")
        if self.variant == "paper":
            self._fit_paper(s, y)
            return
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
        sums = _window_sums(self.grid_, pts, lab, radius)
        f_all = sums[:, 0] / (n * radius)
        n_pos = max(float(y.sum()), 1.0)
        f_pos = sums[:, 1] / (n_pos * radius)
        ok = f_all > float(self.threshold)
        c = np.full(self.grid_.shape, self.pi_)
        c[ok] = np.minimum(1.0, self.pi_ * f_pos[ok] / f_all[ok])
        if ok.any() and not ok.all():
            c = np.interp(self.grid_, self.grid_[ok], c[ok])
        self.c_grid_ = c

    def _fit_paper(self, s, y):
        n = s.size
        neg = y < 0.5
        self.pi_ = float(1.0 - neg.mean())
        factor = (2.0 * n) ** (-0.2)
        h = float(np.std(s[neg])) * factor
        if h <= 0:
            h = float(np.std(s)) * factor
        self.bandwidth_ = h
        x = np.linspace(-0.6, 1.6, 2 ** 14)                        # d = 1 - s
        self.grid_ = 1.0 - x[::-1]
        if h <= 0:
            self.c_grid_ = np.full(x.shape, self.pi_)
            return
        d = 1.0 - s
        pts = np.concatenate((d, np.where(d < 0.5, -d, 2.0 - d)))
        lab = np.concatenate((neg, neg)).astype(np.float64)
        radius = 3.0 * h
        sums = _window_sums(x, pts, lab, radius)
        inside = (x > 0.0) & (x < 1.0)
        f_all = np.where(inside, sums[:, 0], 0.0) / (n * radius)
        f_neg = np.where(inside, sums[:, 1], 0.0) / (max(float(neg.sum()), 1.0) * radius)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.minimum(1.0, (1.0 - self.pi_) * f_neg / f_all)
        ok = (np.maximum(f_neg, f_all) > float(self.threshold)) & ~np.isnan(r)
        # carry from the nearest defined point at larger d (lower score); 0 if none
        j = np.where(ok, np.arange(x.size), x.size)
        j = np.minimum.accumulate(j[::-1])[::-1]
        r = np.append(np.where(ok, r, 0.0), 0.0)[j]
        self.c_grid_ = 1.0 - r[::-1]

    def _predict(self, s):
        if self.variant == "paper":                               # nearest grid point
            g = self.grid_
            j = np.clip(np.searchsorted(g, s), 1, g.size - 1)
            j = np.where(s - g[j - 1] <= g[j] - s, j - 1, j)
            return self.c_grid_[j]
        return np.interp(s, self.grid_, self.c_grid_)


def _window_sums(grid, pts, lab, radius, block: int = 256) -> np.ndarray:
    """(len(grid), 2) triweight kernel sums of all points and of ``lab``-weighted ones."""
    order = np.argsort(pts, kind="stable")
    pts, lab = pts[order], lab[order]
    w = np.stack((np.ones_like(lab), lab), axis=1)
    sums = np.zeros((grid.size, 2))
    for g0 in range(0, grid.size, block):
        x = grid[g0:g0 + block]
        a = np.searchsorted(pts, x[0] - radius, side="left")
        b = np.searchsorted(pts, x[-1] + radius, side="right")
        if b > a:
            sums[g0:g0 + block] = _triweight((x[:, None] - pts[None, a:b]) / radius) @ w[a:b]
    return sums
