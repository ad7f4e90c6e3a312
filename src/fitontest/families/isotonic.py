"""Isotonic regression (docs/methods/03-binary-families.md §3.4), with its bootstrap replicates
computed from per-score label counts (§3.4, "Replicates")."""
from __future__ import annotations

import functools
from typing import Iterable

import numpy as np

from . import CalibrationFamily, register
from .bincounts import Codes

#: scikit-learn pools scores closer than this to the first score of a tie group
#: (``_make_unique`` in sklearn/_isotonic.pyx: ``numpy.finfo(float64).resolution``)
TIE_EPS = float(np.finfo(np.float64).resolution)
#: cells (rows x 2 x distinct scores) of one bincount over a chunk of resampled rows
#: (2 MiB of counts: stays in cache, where the bincount's scattered adds are cheap)
CHUNK_CELLS = 2 ** 18
#: the methods whose override by a subclass disables the shortcut (it is this map's)
_SHORTCUT_ASSUMES = ("_fit", "_predict", "ce_estimate", "ce_estimate_debiased")


@register("isotonic")
class IsotonicFamily(CalibrationFamily):
    """Isotonic regression: the least-squares non-decreasing step map (scikit-learn).

    ``sklearn.isotonic.IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip")``
    on the scores (increasing). Fitted: ``regressor_``. Prediction interpolates
    linearly between the fitted thresholds (sklearn's behaviour) and is
    constant beyond the fitted range.

    :meth:`bootstrap_replicates` does not refit scikit-learn per resample: it
    pools each resample's labels per distinct score and runs scipy's weighted
    pool-adjacent-violators on them, equal to the refit to rounding."""

    def __init__(self):
        pass

    def _fit(self, s, y):
        from sklearn.isotonic import IsotonicRegression

        self.regressor_ = IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True,
                                             out_of_bounds="clip").fit(s, y)

    def _predict(self, s):
        return np.asarray(self.regressor_.predict(s), dtype=np.float64)

    def bootstrap_replicates(self, scores, labels, resamples: Iterable[np.ndarray],
                             p: int = 1) -> np.ndarray:
        """Plug-in L^p estimate of the isotonic map refitted on every resample
        ``scores[ix], labels[ix]``, shape (R,) -- as the base class's refit
        loop, without refitting scikit-learn (docs/methods/03-binary-families.md §3.4).

        The sample's distinct scores are sorted once; a chunk of rows gets its
        per-score counts of label 0 and 1 from one bincount; per row, the
        weighted PAV (:func:`scipy.optimize.isotonic_regression`) of the label
        means of the scores present is the fitted map at them, and the
        estimate is their count-weighted mean of |fit - s|^p."""
        if any(getattr(type(self), m) is not getattr(IsotonicFamily, m)
               for m in _SHORTCUT_ASSUMES):
            return super().bootstrap_replicates(scores, labels, resamples, p=p)
        if p not in (1, 2):
            raise ValueError(f"p must be 1 or 2, got {p!r}")
        s, y = self._check_sample(scores, labels)
        codes = Codes(s, y)
        # scores sklearn could pool although distinct (closer than TIE_EPS):
        # only then does a row need the grouping pass
        near = bool(np.any(np.diff(codes.uniq) < TIE_EPS))
        step = max(1, CHUNK_CELLS // (2 * codes.m))
        tiled = np.tile(codes.uniq, step)         # a chunk's rows of distinct scores
        out = []
        for block in resamples:
            block = np.asarray(block)
            if block.ndim == 2 and block.shape[0] == 0:
                continue
            if block.ndim != 2 or not np.issubdtype(block.dtype, np.integer):
                raise ValueError(f"resamples must be (k, n) integer index arrays, got shape "
                                 f"{block.shape} and dtype {block.dtype}")
            if block.shape[1] < self.min_points:
                raise ValueError(f"need at least {self.min_points} points, got {block.shape[1]}")
            for r0 in range(0, block.shape[0], step):
                out.append(_chunk_estimates(codes, tiled, block[r0:r0 + step], p, near))
        return np.concatenate(out) if out else np.empty(0)


def _chunk_estimates(codes: Codes, tiled: np.ndarray, rows: np.ndarray, p: int,
                     near: bool) -> np.ndarray:
    """Plug-in estimates of the rows ``rows`` (k, n) of indices into the sample;
    ``tiled``: the distinct scores repeated for at least k rows."""
    k, n, m = rows.shape[0], rows.shape[1], codes.m
    # pairs = code + m * label, so row r's counts are cells [2 m r, 2 m (r + 1))
    cells = codes.pairs[rows] + (2 * m * np.arange(k, dtype=np.int64))[:, None]
    counts = np.bincount(cells.ravel(), minlength=2 * m * k).reshape(k, 2, m)
    w = counts[:, 0] + counts[:, 1]
    present = (w > 0).ravel()
    # the scores present in each row, rows one after another (row r: [ends[r-1], ends[r]));
    # numpy.compress, as it is several times faster than boolean indexing here
    x = np.compress(present, tiled[:k * m])
    weight = np.compress(present, w.ravel()).astype(np.float64)
    pos = np.compress(present, counts[:, 1].ravel()).astype(np.float64)
    ends = np.cumsum(np.count_nonzero(present.reshape(k, m), axis=1))
    fit = np.empty_like(x)
    for a, b in zip(np.r_[0, ends[:-1]], ends):
        fit[a:b] = fitted_map(x[a:b], weight[a:b], pos[a:b], near)
    d = np.abs(fit - x)
    return np.add.reduceat(weight * (d if p == 1 else d * d), np.r_[0, ends[:-1]]) / n


def fitted_map(x: np.ndarray, w: np.ndarray, pos: np.ndarray, near: bool = True) -> np.ndarray:
    """The isotonic map fitted on a sample with ``w[j]`` points, ``pos[j]`` of
    them labelled 1, at the sorted distinct scores ``x[j]``, evaluated at ``x``.

    As scikit-learn: tied scores are pooled into their weighted label mean, and
    so are distinct scores closer than :data:`TIE_EPS` to the first score of
    their group (``near``: ``x`` may hold such; the map is then interpolated
    between the groups' first scores, as sklearn's prediction is).
    """
    pav = _pav()
    starts = _group_starts(x) if near else None
    if starts is None or starts.all():
        # counts are exact in float64, so pos / w is sklearn's weighted mean of 0/1
        return pav(pos / w, w)
    group = np.cumsum(starts) - 1
    gw, gpos = np.bincount(group, w), np.bincount(group, pos)
    return np.interp(x, x[starts], pav(gpos / gw, gw))


@functools.cache
def _pav():
    """Weighted PAV ``(y, w) -> fit``, the routine scikit-learn's isotonic fit uses:
    scipy's (scipy >= 1.12), else scikit-learn's own (its wrapper costs ~0.2 ms)."""
    try:
        from scipy.optimize import isotonic_regression
    except ImportError:                                         # pragma: no cover
        from sklearn.isotonic import isotonic_regression as sk

        return lambda y, w: sk(y, sample_weight=w)
    return lambda y, w: isotonic_regression(y, weights=w).x


def _group_starts(x: np.ndarray) -> np.ndarray:
    """Which sorted distinct scores ``x`` start a group of scikit-learn's
    ``_make_unique``: a score joins the group of the last start unless it is at
    least TIE_EPS above it (differences rounded as sklearn rounds them)."""
    starts = np.ones(x.size, dtype=bool)
    starts[1:] = np.diff(x) >= TIE_EPS
    if starts.all():
        return starts
    # only runs of scores closer than TIE_EPS to their predecessor need the
    # sequential rule; the score before a run starts a group, and within a run
    # the (rounded) difference to that start does not decrease
    inside = np.flatnonzero(~starts)
    for run in np.split(inside, np.flatnonzero(np.diff(inside) > 1) + 1):
        start, last = run[0] - 1, run[-1]
        while True:
            nxt = start + 1 + int(np.searchsorted(x[start + 1:last + 1] - x[start], TIE_EPS))
            if nxt > last:
                break
            starts[nxt] = True
            start = nxt
    return starts
