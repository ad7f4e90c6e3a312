"""Binning families: classic ECE and its sweep / cross-validated variants
(docs/methods/02-binning.md §2).

One class, :class:`BinningFamily`, registered under several names:

=================  ======  =========  ==========================================
name               scheme  selection  bins
=================  ======  =========  ==========================================
``ece_es15``       ES      fixed      15
``ece_ew15``       EW      fixed      15
``ece_es_sweep``   ES      sweep      largest B with monotone bin means (<= n)
``ece_ew_sweep``   EW      sweep      same, equal-width
``ece_es_cv``      ES      cv         B in 1..40 by 10-fold CV + 0.1 % rule
``ece_ew_cv``      EW      cv         same, equal-width
=================  ======  =========  ==========================================

Bins
----
* **ES** (equal size) with B bins: sort the fitting scores, split the sorted
  order into ``numpy.array_split`` groups; edges are
  ``[0, first score of group 2, ..., first score of group B, 1]`` and bin b is
  ``[e_{b-1}, e_b)``, the last one closed. A score lands in bin
  ``#{interior edges <= s}``, so 1.0 always lands in the last bin and scores
  below the first interior edge (0 included) in the first one. Tied scores
  always share a bin: when a group starts inside a run of ties, the whole run
  goes to the later bin (bin sizes then differ from ``array_split``'s, and some
  ES bins may be empty, e.g. ``[0, 0)`` when many scores are exactly 0 -- then
  0 lands in the first *non-empty* bin). With fewer points than bins the
  missing groups get the edge 1.0 (empty bins ``[1, 1)``).
* **EW** (equal width): bin index ``min(floor(s * B), B - 1)``.

Maps
----
* flat: ``c(s) = ybar_b``; slope-1: ``c(s) = s + (ybar_b - sbar_b)`` (not
  clipped; this is what makes Theorem 2 exact). An empty bin maps s to itself
  under both maps **(choice)**.
* Classic ECE is *not* a separate formula here: it is
  ``fam.ce_estimate(fit_scores, p)`` of the slope-1 map (Theorem 2),
  i.e. mean |c_slope1(s_i) - s_i|^p = sum_b (n_b/n) |sbar_b - ybar_b|^p.

Paper variant
-------------
``variant="paper"`` reproduces the authors' code (Experiments_*/binnings.py;
docs/differences.md) where it differs from the defaults above:

* ES bins are the ``array_split`` groups of the sorted order *by position*:
  a run of tied scores that a group boundary cuts is split between the two
  groups, each group's (n_b, sbar_b, ybar_b) comes from its own points, and
  the map is then evaluated by the edges, so every score equal to an edge
  gets the later bin's map (the same edges as ours; only the statistics move).
  The ES sweep tests monotonicity on these groups. Which tied points fall on
  which side is the input order (stable sort; theirs: NumPy's default sort,
  whose order among ties is unspecified).
* The CV folds are scikit-learn's ``KFold(shuffle=True, random_state=seed)``
  (:func:`paper_kfold_indices`; the authors used ``random_state=1``, which
  config/paper.yaml sets as ``seed: 1``).
* A bin empty in the fitting data (EW bins, or a CV training fold) maps every
  score to 0 (their ``np.piecewise`` branch ``lambda pred: 0``), under both
  maps and inside the CV.

Selection
---------
* ``fixed``: ``n_bins`` bins.
* ``sweep`` (Roelofs et al. 2020): B = 1, 2, ... up to ``max_bins`` (``None``:
  the number of points); stop at the first B whose non-empty bins' label
  means are not non-decreasing (compared exactly, as integer cross-products);
  use the last monotone B.
* ``cv``: candidates B = 1..``max_bins``; ``n_folds``-fold shuffled split
  (:func:`fitontest.core.selection.kfold_indices`, ``seed``); for each B the map
  (slope-1 by default) is fitted on the training folds and scored by the mean
  held-out squared error (c(s) - y)^2; fold means are averaged; the smallest B
  within ``tol`` (0.1 %) of the minimum wins
  (:func:`fitontest.core.selection.complexity_rule`); refit on all points.

Implementation
--------------
Fitting (our variant) is :mod:`fitontest.families.bincounts`: scores are coded
by their rank among the distinct scores, every bin is a run of codes, and the
fixed bins, the sweep and the CV (all candidate B at once) work on cumulative
per-code sums. A plain fit is one row of counts; the bootstrap replicates
(:meth:`BinningFamily.bootstrap_replicates`, docs/methods/11-intervals.md §11.2) are the
same code on many rows. ``predict`` assigns new scores by the fitted score
edges (:func:`assign_bins`), which put every fitting score in its code-run bin.
"""
from __future__ import annotations

from typing import Iterable

import numpy as np
from sklearn.utils.validation import check_is_fitted

from fitontest import metrics
from ..core.selection import complexity_rule
from fitontest.core.validation import check_option, check_scores
from . import CalibrationFamily, register
from . import bincounts
from .bincounts import es_starts

SCHEMES = ("es", "ew")
VARIANTS = ("ours", "paper")
SELECTIONS = ("fixed", "sweep", "cv")
MAPS = ("slope1", "flat")


# --------------------------------------------------------------------------
# score-edge helpers: predict, the paper variant, scaling-binning
# --------------------------------------------------------------------------

def es_edges(sorted_scores: np.ndarray, n_bins: int) -> np.ndarray:
    """ES edges ``[0, e_1, ..., e_{B-1}, 1]`` of sorted scores (see module doc)."""
    n = sorted_scores.shape[0]
    starts = es_starts(n, n_bins, np.arange(1, n_bins))
    interior = np.ones(n_bins - 1)
    ok = starts < n
    interior[ok] = sorted_scores[starts[ok]]
    return np.concatenate(([0.0], interior, [1.0]))


def ew_edges(n_bins: int) -> np.ndarray:
    return np.arange(n_bins + 1, dtype=np.float64) / n_bins


def assign_bins(scores: np.ndarray, edges: np.ndarray, scheme: str) -> np.ndarray:
    """Bin of every score (0-based), for validated scores in [0, 1]."""
    n_bins = edges.shape[0] - 1
    if scheme == "ew":
        return np.minimum(np.floor(scores * n_bins).astype(np.int64), n_bins - 1)
    return np.searchsorted(edges[1:-1], scores, side="right").astype(np.int64)


def es_position_groups(n: int, n_bins: int) -> np.ndarray:
    """Group (0-based) of each *sorted position* under ``array_split(n, B)``."""
    starts = es_starts(n, n_bins, np.arange(1, n_bins))
    return np.searchsorted(starts, np.arange(n), side="right").astype(np.int64)


def paper_kfold_indices(n: int, n_folds: int, seed: int):
    """The authors' folds: ``sklearn.model_selection.KFold(n_folds, shuffle=True,
    random_state=seed)``, i.e. ``array_split`` of a legacy ``RandomState(seed)``
    permutation (the same (train, held-out) layout as
    :func:`fitontest.core.selection.kfold_indices`)."""
    from sklearn.model_selection import KFold

    idx = np.arange(n)
    return [(tr, te) for tr, te in KFold(int(n_folds), shuffle=True,
                                         random_state=int(seed)).split(idx)]


def bin_stats(idx: np.ndarray, s: np.ndarray, y: np.ndarray, n_bins: int):
    """(counts, mean scores, mean labels) per bin; means are NaN in empty bins."""
    counts = np.bincount(idx, minlength=n_bins).astype(np.float64)
    sum_s = np.bincount(idx, weights=s, minlength=n_bins)
    sum_y = np.bincount(idx, weights=y, minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        return counts, sum_s / counts, sum_y / counts


@register("ece_es15", scheme="es", n_bins=15, selection="fixed")
@register("ece_ew15", scheme="ew", n_bins=15, selection="fixed")
@register("ece_es_sweep", scheme="es", selection="sweep", max_bins=None)
@register("ece_ew_sweep", scheme="ew", selection="sweep", max_bins=None)
@register("ece_es_cv", scheme="es", selection="cv", max_bins=40)
@register("ece_ew_cv", scheme="ew", selection="cv", max_bins=40)
class BinningFamily(CalibrationFamily):
    """Histogram binning (the ECE): ES or EW bins, their number fixed, by CV or by a sweep.

    Fitted attributes: ``n_bins_``, ``edges_`` (B + 1), ``bin_counts_``,
    ``bin_mean_scores_`` and ``bin_mean_labels_`` (NaN in empty bins),
    ``bin_shift_`` (ybar - sbar, 0 in empty bins); for ``selection="cv"`` also
    ``candidates_`` and ``cv_scores_``.

    Capabilities (:class:`~fitontest.families.base.CalibrationFamily` hooks):
    the debiased estimate, the maximum calibration error and bootstrap
    replicates without refitting (our variant; ``variant="paper"`` refits).
    """

    hyper_attr = "n_bins_"
    estimand = "binned"
    batched_replicates = True

    def __init__(self, scheme: str = "es", n_bins: int | None = 15, selection: str = "fixed",
                 max_bins: int | None = 40, n_folds: int = 10, tol: float = 1e-3,
                 seed: int = 0, map: str = "slope1", variant: str = "ours"):
        self.scheme = scheme
        self.n_bins = n_bins
        self.selection = selection
        self.max_bins = max_bins
        self.n_folds = n_folds
        self.tol = tol
        self.seed = seed
        self.map = map
        self.variant = variant

    # ------------------------------------------------------------------ fit
    def _n_folds_needed(self):
        return self.n_folds if self.selection == "cv" else None

    def _check_params(self):
        check_option("scheme", self.scheme, SCHEMES)
        check_option("selection", self.selection, SELECTIONS)
        check_option("variant", self.variant, VARIANTS)
        check_option("map", self.map, MAPS)
        if self.selection == "fixed" and (self.n_bins is None or int(self.n_bins) < 1):
            raise ValueError(f"n_bins must be a positive integer, got {self.n_bins!r}")
        if self.selection == "cv" and (self.max_bins is None or int(self.max_bins) < 1):
            raise ValueError(f"max_bins must be a positive integer for CV, got {self.max_bins!r}")
        if self.max_bins is not None and int(self.max_bins) < 1:
            raise ValueError(f"max_bins must be a positive integer or None, got {self.max_bins!r}")

    def _fit(self, s, y):
        self._check_params()
        if self.variant == "paper":
            self._fit_paper(s, y)
            return
        codes = bincounts.Codes(s, y)
        n_bins, edges, cnt, sum_s, sum_y, cv, _ = bincounts.fit_rows(
            self, codes.pairs[None, :], codes)
        self.n_bins_ = int(n_bins[0])
        self.edges_ = codes.value_edges(edges[0], self.scheme)
        with np.errstate(invalid="ignore", divide="ignore"):
            self._set_bins(cnt[0], sum_s[0] / cnt[0], sum_y[0] / cnt[0])
        if cv is not None:
            self.candidates_ = np.arange(1, int(self.max_bins) + 1)
            self.cv_scores_ = cv[0]

    def _set_bins(self, counts, mean_s, mean_y):
        self.bin_counts_, self.bin_mean_scores_, self.bin_mean_labels_ = counts, mean_s, mean_y
        self.bin_shift_ = np.where(counts > 0, mean_y - mean_s, 0.0)

    # the authors' variant (point-based: its ES groups split tied scores) --------
    def _fit_paper(self, s, y):
        if self.selection == "fixed":
            n_bins = int(self.n_bins)
        elif self.selection == "sweep":
            n_bins = self._sweep_paper(s, y)
        else:
            cands = np.arange(1, int(self.max_bins) + 1)
            folds = paper_kfold_indices(s.shape[0], int(self.n_folds), int(self.seed))
            scores = np.array([self._cv_fold_scores_paper(s, y, tr, te, cands)
                               for tr, te in folds])
            self.candidates_, self.cv_scores_ = cands, scores.mean(axis=0)
            n_bins = int(complexity_rule(cands, self.cv_scores_, tol=float(self.tol)))
        self._fit_bins_paper(s, y, n_bins)

    def _fit_bins_paper(self, s, y, n_bins):
        self.n_bins_ = int(n_bins)
        order = np.argsort(s, kind="stable")
        if self.scheme == "es":
            self.edges_ = es_edges(s[order], self.n_bins_)
            idx = es_position_groups(s.size, self.n_bins_)       # ties split by position
            s, y = s[order], y[order]
        else:
            self.edges_ = ew_edges(self.n_bins_)
            idx = assign_bins(s, self.edges_, "ew")
        self._set_bins(*bin_stats(idx, s, y, self.n_bins_))

    def _sweep_paper(self, s, y) -> int:
        """The sweep on the paper's bins: ES groups by sorted position (EW bins
        are ours, so the EW sweep is the shared one)."""
        if self.scheme == "ew":
            codes = bincounts.Codes(s, y)
            rows = bincounts.Dense.of_pairs(codes.pairs[None, :], codes)
            return int(bincounts.sweep(rows, codes, "ew", self.max_bins)[0])
        n = s.shape[0]
        cap = n if self.max_bins is None else min(int(self.max_bins), n)
        cum_y = np.concatenate(([0], np.cumsum(y[np.argsort(s, kind="stable")].astype(np.int64))))
        best = 1
        for n_bins in range(2, cap + 1):
            pos = np.concatenate(([0], es_starts(n, n_bins, np.arange(1, n_bins)), [n]))
            if bincounts.decreasing(np.diff(pos)[None], np.diff(cum_y[pos])[None])[0]:
                break
            best = n_bins
        return best

    def _cv_fold_scores_paper(self, s, y, train, test, cands):
        """Held-out MSE per candidate B with the paper's bins (one refit per B:
        position groups for ES, empty training bins predict 0)."""
        fold = BinningFamily(scheme=self.scheme, selection="fixed", map=self.map,
                             variant="paper")
        out = np.empty(cands.size)
        for j, n_bins in enumerate(cands):
            fold._fit_bins_paper(s[train], y[train], int(n_bins))
            out[j] = np.mean((fold._map(s[test]) - y[test]) ** 2)
        return out

    # ------------------------------------------------------------- predict
    def _map(self, s):
        """The fitted map on validated scores (the variant decides empty bins)."""
        b = assign_bins(s, self.edges_, self.scheme)
        empty = self.bin_counts_[b] == 0
        if self.map == "slope1":
            c = s + self.bin_shift_[b]
        else:
            c = np.where(empty, s, np.nan_to_num(self.bin_mean_labels_)[b])
        return np.where(empty, 0.0 if self.variant == "paper" else s, c)

    def bin_index(self, scores) -> np.ndarray:
        """Bin (0-based) of each score under the fitted edges."""
        check_is_fitted(self, "n_fit_")
        return assign_bins(check_scores(scores), self.edges_, self.scheme)

    def predict_slope1(self, scores) -> np.ndarray:
        """s + (ybar_b - sbar_b); not clipped; empty bins: identity (0 for the paper variant)."""
        return self._map_named("slope1", scores)

    def predict_flat(self, scores) -> np.ndarray:
        """ybar_b; empty bins: identity (0 for the paper variant)."""
        return self._map_named("flat", scores)

    def _map_named(self, map, scores):
        check_is_fitted(self, "n_fit_")
        saved, self.map = self.map, map
        try:
            return self._map(check_scores(scores))
        finally:
            self.map = saved

    def _predict(self, s):
        return self._map(s)

    # ---------------------------------------------------------- capabilities
    def ce_estimate_debiased(self, scores, p: int = 1) -> float:
        """Debiased binned CE (docs/methods/02-binning.md §2) from the *fitting* bins.

        Each bin b of the fitting data has a debiased term ``D_b`` computed
        from its fitting statistics (n_b, sbar_b, ybar_b) -- see
        :func:`fitontest.metrics.debiased_bin_terms`. ``scores`` only sets the
        weights: the result is the mean of ``D_{b(s_i)}`` over ``scores``
        (points in empty fitting bins contribute 0). On the fitting scores the
        weights are n_b / n, so ``ce_estimate_debiased(fit_scores, p)`` is
        exactly the paper's debiased ECE
        ``sum_b (n_b/n) D_b`` (:func:`fitontest.metrics.debiased_ece`).
        """
        check_is_fitted(self, "n_fit_")
        s = check_scores(scores)
        if s.size == 0:
            raise ValueError("scores is empty")
        terms = metrics.debiased_bin_terms(self.bin_counts_, self.bin_mean_scores_,
                                                     self.bin_mean_labels_, p=p)
        weights = np.bincount(assign_bins(s, self.edges_, self.scheme),
                              minlength=self.n_bins_) / s.size
        return float(np.dot(weights, terms))

    def max_calibration_error(self) -> float:
        """max_b |ybar_b - sbar_b| over the non-empty fitting bins."""
        check_is_fitted(self, "n_fit_")
        return float(np.max(np.abs(self.bin_shift_[self.bin_counts_ > 0])))

    def bin_statistics(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(counts, mean scores, mean labels) of the fitting bins."""
        check_is_fitted(self, "n_fit_")
        return self.bin_counts_, self.bin_mean_scores_, self.bin_mean_labels_

    def bootstrap_replicates(self, scores, labels, resamples: Iterable[np.ndarray],
                             p: int = 1) -> np.ndarray:
        """Used estimate refitted on every resample, computed from per-code counts
        without refitting (docs/methods/11-intervals.md §11.2); the paper variant, whose ES
        groups split tied scores, is refitted (the base class's path)."""
        self._check_params()
        if self.variant == "paper":
            return super().bootstrap_replicates(scores, labels, resamples, p=p)
        s, y = self._check_sample(scores, labels)
        return bincounts.replicate_estimates(self, s, y, resamples, p=p)
