"""Smooth ECE (Błasiok & Nakkiran 2023, "Smooth ECE: principled reliability
diagrams via kernel smoothing"; docs/methods/03-binary-families.md §3.10).

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

Bootstrap replicates (``SmoothECE.bootstrap_replicates``, used by the CE
intervals) are the refit loop's values computed for a block of resamples at
once: grid masses from each resample's counts of the points (one bincount)
times a sparse split matrix, the bisection in lockstep (every row its own
bracket), the reflected convolutions as batched circular FFT convolutions.

The family's map is c_hat(s) = clip(s - r_hat(s), 0, 1) (**choice**: a
probability; the clip only moves it towards every true map), so CMEE and
every table apply to it. Its CE estimate is smECE itself, not the plug-in
mean |c_hat(s_i) - s_i| (which weights r_hat by the empirical rather than the
smoothed distribution): ``ce_estimate(s, 1)`` is smECE and
``ce_estimate(s, 2)`` its L2 analogue ∫ r_hat^2 den / ∫ den at the same
sigma* (**choice**). Like ``kce`` the estimate belongs to the fitting sample.
"""
from __future__ import annotations

from typing import Iterable

import numpy as np
from scipy import sparse
from scipy.fft import irfft, rfft
from sklearn.utils.validation import check_is_fitted

from fitontest.core.validation import check_scores
from . import CalibrationFamily, register

#: floor added to the smoothed density before dividing (relplot's ``smooth`` eps)
DENSITY_FLOOR = 1e-4
#: bisection halvings of the fixed-point search (relplot's ``search_param``)
N_HALVINGS = 10
#: grid size of every sigma >= 0.01 (``kernel_grid``): the batched replicates
#: compute these grid masses once per resample and reuse them at every step
COARSE_M = 1001
#: the most floats one array of the batched replicates holds (rows x points,
#: rows x FFT length): blocks are processed in sub-blocks below it
BLOCK_FLOATS = 4_000_000
#: and the most rows of a sub-block: beyond ~64 the per-row time grows again
#: (the FFT-side arrays leave the cache) while the peak memory grows with it
SUB_BLOCK_ROWS = 64


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
    # imported here: the registry imports every family module, and scipy.signal
    # would add ~80 ms to every `fitontest evaluate` start
    from scipy.signal import fftconvolve

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


def fixed_point_sigma(scores, labels, eps: float = 1e-3, n_halvings: int = N_HALVINGS) -> float:
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


# ------------------------------------------------- batched bootstrap replicates
# The functions below compute, for a block of resamples (rows of an index
# matrix), the same numbers as refitting ``smece`` on every row: the same grid,
# kernel, interpolation and bisection, only vectorised over rows. They agree
# with the refit loop to rounding (the FFT lengths and summation orders differ).

def _grid_sizes(sigma: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per bandwidth: the grid size of ``kernel_grid`` and the number of
    integration points of ``smece_sigma`` (numpy's round, like Python's, goes
    half to even)."""
    m = np.maximum(2000, np.round(20.0 / sigma)).astype(np.int64) // 2 + 1
    points = np.maximum(np.round(10.0 / sigma), 200).astype(np.int64)
    return m, points


def _period(m: int) -> int:
    """Length of the circular convolutions: the grid mirrored about both end
    nodes is periodic with period 2(m - 1), and ``_reflected_convolve``'s
    linear convolution of it, on the m outputs it keeps, reaches no further
    than half a kernel (m // 2 nodes) past either end, where the two agree."""
    return 2 * (m - 1)


def _split_matrix(s: np.ndarray, r: np.ndarray, m: int) -> sparse.csr_array:
    """Sparse (points, 2m): point i's weight 1 (columns :m) and residual r_i
    (columns m:) split linearly onto its two nearest of m nodes (``_to_grid``),
    so a resample's grid masses are its count vector times this matrix."""
    pos = s * (m - 1)
    left = np.clip(pos.astype(np.int64), 0, m - 2)
    frac = pos - left
    split = np.stack([1.0 - frac, frac], axis=1)                  # (points, 2)
    cols = np.stack([left, left + 1], axis=1)
    rows = np.broadcast_to(np.arange(s.size)[:, None], (s.size, 4))
    return sparse.csr_array((np.hstack([split, split * r[:, None]]).ravel(),
                             (rows.ravel(), np.hstack([cols, cols + m]).ravel())),
                            shape=(s.size, 2 * m))


def _mirrored_spectra(counts: np.ndarray, split: sparse.csr_array, m: int) -> np.ndarray:
    """rfft of one period of every row's mirrored grid masses, shape (2, rows,
    frequencies):
    [0] of the points (den), [1] of the residuals (num) -- ``_to_grid`` and the
    mirroring of ``_reflected_convolve`` for all rows at once. ``counts``:
    (rows, points) how often each point is in each resample."""
    values = (split.T @ counts.T).T.reshape(-1, 2, m).transpose(1, 0, 2)
    centre = values.copy()
    centre[..., [0, -1]] *= 2.0                            # end nodes are their own mirror image
    # one period of the mirrored grid: nodes 0..m-1, then m-2..1 reflected
    return rfft(np.concatenate([centre, values[..., -2:0:-1]], axis=-1), axis=-1)


def _smece_rows(spectra: np.ndarray, sigma: np.ndarray, m: int) -> np.ndarray:
    """(smECE_sigma, its L2 analogue) of every row at its own ``sigma``, shape
    (2, rows); the rows share the grid size ``m`` (``spectra`` from
    :func:`_mirrored_spectra`)."""
    period = _period(m)
    # rows bisecting in lockstep share few bandwidths: one kernel spectrum each
    uniq, which = np.unique(sigma, return_inverse=True)
    offsets = np.linspace(0.0, 1.0, m) - 0.5
    kernels = (np.exp(-0.5 * (offsets / uniq[:, None]) ** 2)
               / (np.sqrt(2.0 * np.pi) * uniq[:, None]))
    # kernel node j sits at offset j - m // 2 (``_reflected_convolve``'s slice)
    circular = irfft(spectra * rfft(kernels, n=period, axis=-1)[which], n=period, axis=-1)
    den_num = circular[..., m // 2:m // 2 + m]
    # each row's integration points linspace(0, 1, T), padded to the longest
    # (padding points are clipped to 1 and weighted 0)
    n_points = _grid_sizes(sigma)[1]
    j = np.arange(n_points.max())
    inside = j < n_points[:, None]
    pos = np.minimum(j * (1.0 / (n_points - 1))[:, None], 1.0) * (m - 1)
    left = np.minimum(pos.astype(np.int64), m - 2)
    frac = pos - left
    # np.interp on the uniform grid, every row at once (flat indices into (rows, m))
    flat = den_num.reshape(2, -1)
    left += m * np.arange(left.shape[0])[:, None]
    at_left = np.take(flat, left, axis=1)
    den_t, num_t = at_left + frac * (np.take(flat, left + 1, axis=1) - at_left)
    den_t += DENSITY_FLOOR
    r = np.abs(num_t / den_t)
    weight = den_t * inside
    total = weight.sum(axis=1)
    return np.stack([(r * weight).sum(axis=1) / total, (r * r * weight).sum(axis=1) / total])


def _replicates_of_rows(counts: np.ndarray, s: np.ndarray, r: np.ndarray,
                        eps: float) -> np.ndarray:
    """(smECE, its L2 analogue) of every resample, shape (2, rows), from its
    ``counts`` of the points (scores ``s``, residuals ``r``):
    ``fixed_point_sigma`` in lockstep, each row its own bracket."""
    k = counts.shape[0]
    coarse = _mirrored_spectra(counts, _split_matrix(s, r, COARSE_M), COARSE_M)

    def evaluate(rows, sigma):
        out = np.empty((2, rows.size))
        m = _grid_sizes(sigma)[0]
        for size in np.unique(m):          # sigma < 0.01 (rare): a finer grid per bandwidth
            at = np.flatnonzero(m == size)
            split = None if size == COARSE_M else _split_matrix(s, r, size)
            step = max(1, BLOCK_FLOATS // (2 * _period(size)))
            for c in range(0, at.size, step):
                sub = at[c:c + step]
                spec = (coarse[:, rows[sub]] if split is None else
                        _mirrored_spectra(counts[rows[sub]], split, size))
                out[:, sub] = _smece_rows(spec, sigma[sub], size)
        return out

    hi, lo = np.ones(k), np.zeros(k)
    at_hi = evaluate(np.arange(k), hi)     # the estimates at each row's upper end
    # sigma = 1 already too small: sigma* = 1, no bisection (fixed_point_sigma)
    active = ~((1.0 < eps) | (1.0 < at_hi[0]))
    for _ in range(N_HALVINGS):
        mid = 0.5 * (hi + lo)
        tested = np.flatnonzero(active & (mid >= eps))   # below eps: too small unevaluated
        v = evaluate(tested, mid[tested])
        large = mid[tested] >= v[0]                       # not too small: the new upper end
        up = tested[large]
        hi[up] = mid[up]
        at_hi[:, up] = v[:, large]
        too_small = active.copy()
        too_small[up] = False
        lo[too_small] = mid[too_small]
    return at_hi


def replicate_smece(s: np.ndarray, y: np.ndarray, resamples: Iterable[np.ndarray], p: int,
                    eps: float = 1e-3, min_points: int = 2) -> np.ndarray:
    """smECE (p = 1) or its L2 analogue (p = 2) of every resample ``s[ix], y[ix]``
    (rows of the (k, n) index blocks, in order), as refitting would give."""
    out = [np.empty(0)]
    for block in resamples:
        block = np.asarray(block)
        if block.ndim != 2:
            raise ValueError(f"resample blocks must be 2-D index arrays, got shape {block.shape}")
        if block.shape[0] == 0:
            continue
        if block.shape[1] < min_points:
            raise ValueError(f"resamples of {block.shape[1]} points: smECE needs at least "
                             f"{min_points}")
        if block.min() < 0 or block.max() >= s.size:
            # an index out of range would land in the next row's counts
            raise ValueError(f"resample indices must lie in [0, {s.size}), got "
                             f"[{block.min()}, {block.max()}]")
        # sub-blocks: rows x points and rows x FFT length within BLOCK_FLOATS
        step = max(1, min(SUB_BLOCK_ROWS, BLOCK_FLOATS // max(s.size, block.shape[1],
                                                                2 * _period(COARSE_M))))
        for start in range(0, block.shape[0], step):
            ix = block[start:start + step]
            # a resample's grid masses depend only on how often it holds each point
            counts = np.bincount((ix + s.size * np.arange(ix.shape[0])[:, None]).ravel(),
                                 minlength=ix.shape[0] * s.size).reshape(-1, s.size)
            out.append(_replicates_of_rows(counts.astype(np.float64), s, s - y, eps)[p - 1])
    return np.concatenate(out)


@register("smece")
class SmoothECE(CalibrationFamily):
    """Smooth ECE (smECE, Blasiok & Nakkiran 2023): Gaussian kernel, fixed-point bandwidth.

    Fitted: ``sigma_`` (the bandwidth, reported as the hyper-parameter),
    ``smece_`` and ``smece_sq_`` (the L1 / L2 estimates on the fitting sample),
    ``grid_``, ``num_``, ``den_`` (the kernel sums the map interpolates).
    """

    hyper_attr = "sigma_"
    estimand = "smECE"

    def __init__(self, eps: float = 1e-3):
        self.eps = eps

    def _check_eps(self) -> float:
        if not 0 < float(self.eps) < 1:
            raise ValueError(f"eps must lie in (0, 1), got {self.eps!r}")
        return float(self.eps)

    def _fit(self, s, y):
        self._check_eps()
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

    def bootstrap_replicates(self, scores, labels, resamples: Iterable[np.ndarray],
                             p: int = 1) -> np.ndarray:
        """smECE (p = 1) or its L2 analogue (p = 2) refitted on every resample,
        computed for a block of resamples at once (:func:`replicate_smece`):
        the refit loop's values to rounding, several times faster."""
        if p not in (1, 2):
            raise ValueError(f"p must be 1 or 2, got {p!r}")
        eps = self._check_eps()
        s, y = self._check_sample(scores, labels)
        return replicate_smece(s, y, resamples, p, eps=eps, min_points=self.min_points)
