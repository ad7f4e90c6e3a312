"""The ``world`` band of the calibration map (docs/methods/11-tests-and-bands.md §11.9):
a sup-t band around a fit-on-test family, calibrated in worlds whose map is the
data's reference map (labels redrawn at the user's scores, the family refitted
per world). :mod:`fitontest.inference.bands` registers it as ``method="world"``;
measured to miss step maps and one-vs-rest score laws, so flagged
``valid=False`` there (benchmarks/measured/band_coverage.md).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.base import clone

from .. import families
from ..families.binning import BinningFamily, assign_bins, bin_stats
from .monotone_band import monotone_band
from .sizes import chunk_rows, reference_bin_count


def _need(n: int, need: int) -> None:
    if n < need:
        raise ValueError(f"method 'world' needs at least {need} points, got {n}")


# Inflation k of the world band's sup-t half-width (band = fit +/- k q sd between
# the reference map's first and last bin mean scores): the worlds' true map is the
# reference map itself, whose refits have less bias than the fit has against a
# real map with kinks. k: the smallest of {1.0, 1.05, ..., 2.5} whose smallest
# cell of the tuning shapes (identity and the five synthetic shapes at CE 0.1,
# c ~ U(0, 1) and Beta(2, 5), n = 50 ... 20000, 40 samples a cell) held the map
# on the figures' grid in >= the level at each of the levels 0.8, 0.9 and 0.95
# (`band_coverage.py --tune-k --seed 7 --reps 40`: 82.5 / 90.0 / 95.0 % at 1.45);
# reported on held-out score laws and maps (benchmarks/measured/band_coverage.md;
# docs/methods/11-tests-and-bands.md §11.9)
WORLD_BAND_SCALE = 1.45
WORLD_BAND_WORLDS = 200
WORLD_MIN_POINTS = 20


def _reference_fitter(s_sorted: np.ndarray):
    """Vectorised refit of the worlds' reference map
    (:func:`fitontest.inference.worlds.reference_gap`, p = 1; tests/test_bands.py keeps
    the two equal) at the fixed sorted scores:
    ``fit(Y, grid) -> (R, grid) maps`` for a label matrix Y (R, n), m the smallest
    bin's count and the bins' mean scores. The ES bins come from the scores
    alone, so one reduceat per world does the refit (reference_gap per world:
    50 times slower)."""
    from scipy.optimize import isotonic_regression   # sklearn's validates each call: 10x slower

    n = s_sorted.size
    edges = BinningFamily(scheme="es", n_bins=reference_bin_count(n), selection="fixed").fit(
        s_sorted, np.zeros(n)).edges_
    idx = assign_bins(s_sorted, edges, "es")
    nb, sb, _ = bin_stats(idx, s_sorted, np.zeros(n), edges.size - 1)
    full = nb > 0
    nb, sb = nb[full], sb[full]
    starts = np.searchsorted(idx, np.flatnonzero(full))   # idx is sorted with s

    def fit(Y: np.ndarray, grid: np.ndarray) -> np.ndarray:
        means = np.add.reduceat(np.asarray(Y, dtype=np.float64), starts, axis=1) / nb
        if sb.size < 2:
            return np.clip(grid[None, :] + (means - sb), 0.0, 1.0)
        # label means lie in [0, 1], so the monotone fit does too
        gaps = [np.interp(grid, sb, isotonic_regression(yb, weights=nb).x - sb) for yb in means]
        return np.clip(grid[None, :] + np.array(gaps), 0.0, 1.0)

    return fit, float(nb.min()), sb


@dataclass(frozen=True)
class WorldParts:
    """The ``world`` band before its level: ``centre`` and refit ``sd`` on the
    grid, ``sup`` (per world, the largest |refit - world map| / sd over the
    ``inner`` grid points, those between the first and last bin mean scores)."""

    centre: np.ndarray
    sd: np.ndarray
    sup: np.ndarray
    inner: np.ndarray

    def half_width(self, level: float) -> np.ndarray:
        """q sd on the grid, q the ``level`` quantile of ``sup`` (before k)."""
        return np.quantile(self.sup, level) * self.sd


def world_parts(s, y, grid, family="reference", params=None, n_boot=None, seed=0) -> WorldParts:
    """Worlds of the ``world`` band: labels redrawn ``n_boot`` times at the user's
    scores from the reference map (clipped to [1 / m, 1 - 1 / m], m the smallest
    reference bin's count, so that no world is noiseless), the family
    refitted per world (docs/methods/11-tests-and-bands.md §11.9)."""
    _need(s.size, WORLD_MIN_POINTS)
    R = WORLD_BAND_WORLDS if n_boot is None else n_boot
    if isinstance(R, bool) or int(R) < 10:
        raise ValueError(f"n_boot must be an integer >= 10 for 'world', got {n_boot!r}")
    order = np.argsort(s, kind="stable")
    ss, yy = s[order], y[order]
    ref, m, sb = _reference_fitter(ss)
    eps = min(1.0 / m, 0.5)
    truth_s = np.clip(ref(yy[None, :], ss)[0], eps, 1.0 - eps)
    inner = (grid >= sb[0]) & (grid <= sb[-1]) if sb.size > 1 else np.zeros(grid.size, bool)
    g = grid[inner]
    truth_g = np.clip(ref(yy[None, :], g)[0], eps, 1.0 - eps)
    if family == "reference":
        centre = ref(yy[None, :], grid)[0]
        refit = ref
    else:
        fam = families.resolve(family, params)[1]
        _need(s.size, max(int(fam.min_points), WORLD_MIN_POINTS))
        fitted = clone(fam).fit(ss, yy)
        if not fitted.provides_map:
            raise ValueError(f"family {family!r} has no calibration map to draw a band around")
        centre = np.clip(fitted.predict(grid), 0.0, 1.0)

        def refit(Y, at):
            return np.stack([np.clip(clone(fam).fit(ss, row).predict(at), 0.0, 1.0) for row in Y])
    sd = np.full(grid.size, 0.5 / m)
    if not g.size:                       # no grid point inside: the band is monotone's
        return WorldParts(centre=centre, sd=sd, sup=np.zeros(1), inner=inner)
    rng = np.random.default_rng(seed)
    step = chunk_rows(s.size)
    reps = np.concatenate([refit((rng.random((min(step, int(R) - r0), s.size)) < truth_s)
                                 .astype(np.float64), g)
                           for r0 in range(0, int(R), step)])
    sd[inner] = np.maximum(reps.std(axis=0, ddof=1), 0.5 / m)
    sup = np.max(np.abs(reps - truth_g) / sd[inner], axis=1)
    return WorldParts(centre=centre, sd=sd, sup=sup, inner=inner)


def world_ends(s, y, grid, level, parts: WorldParts, scale: float = WORLD_BAND_SCALE,
               outer=None):
    """(lo, hi) of the ``world`` band at ``level`` from its ``parts``: fit +/- k q sd
    on the inner grid points, the ``monotone`` band beyond them (``outer``: its
    (lo, hi) on the whole grid when already at hand)."""
    half = scale * parts.half_width(level)
    lo = np.clip(parts.centre - half, 0.0, 1.0)
    hi = np.clip(parts.centre + half, 0.0, 1.0)
    out = ~parts.inner
    if out.any():
        if outer is None:
            lo[out], hi[out] = monotone_band(s, y, grid[out], level)[:2]
        else:
            lo[out], hi[out] = outer[0][out], outer[1][out]
    return lo, hi


__all__ = ["WorldParts", "world_parts", "world_ends", "WORLD_BAND_SCALE", "WORLD_BAND_WORLDS",
           "WORLD_MIN_POINTS"]
