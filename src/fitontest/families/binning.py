"""Binning families: classic ECE and its sweep / cross-validated variants (docs/methods.md §2).

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
  (:func:`fitontest.selection.kfold_indices`, ``seed``); for each B the map
  (slope-1 by default) is fitted on the training folds and scored by the mean
  held-out squared error (c(s) - y)^2; fold means are averaged; the smallest B
  within ``tol`` (0.1 %) of the minimum wins
  (:func:`fitontest.selection.complexity_rule`); refit on all points. The CV is
  vectorised over folds' points and all candidate B at once: scores are coded
  by their rank among the unique scores, so the ES edges of every candidate sit
  in one sorted integer array (one ``searchsorted`` + ``bincount`` per fold),
  and the assignment is exactly the one the refit uses.
"""
from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

from fitontest.core import calibration_error
from ..selection import complexity_rule, kfold_indices
from fitontest.core.validation import check_scores
from . import CalibrationFamily, register

SCHEMES = ("es", "ew")
VARIANTS = ("ours", "paper")
SELECTIONS = ("fixed", "sweep", "cv")
MAPS = ("slope1", "flat")


# --------------------------------------------------------------------------
# bin helpers shared with scaling-binning and the truth estimators
# --------------------------------------------------------------------------

def es_group_starts(n: int, n_bins: int) -> np.ndarray:
    """Start positions (in sorted order) of groups 2..B of ``array_split(n, B)``."""
    b = np.arange(1, n_bins)
    q, r = divmod(n, n_bins)
    return b * q + np.minimum(b, r)


def es_edges(sorted_scores: np.ndarray, n_bins: int) -> np.ndarray:
    """ES edges ``[0, e_1, ..., e_{B-1}, 1]`` of sorted scores (see module doc)."""
    n = sorted_scores.shape[0]
    starts = es_group_starts(n, n_bins)
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
    starts = es_group_starts(n, n_bins)
    return np.searchsorted(starts, np.arange(n), side="right").astype(np.int64)


def paper_kfold_indices(n: int, n_folds: int, seed: int):
    """The authors' folds: ``sklearn.model_selection.KFold(n_folds, shuffle=True,
    random_state=seed)``, i.e. ``array_split`` of a legacy ``RandomState(seed)``
    permutation (the same (train, held-out) layout as
    :func:`fitontest.selection.kfold_indices`)."""
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
    """

    hyper_attr = "n_bins_"

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
        if self.scheme not in SCHEMES:
            raise ValueError(f"scheme must be one of {SCHEMES}, got {self.scheme!r}")
        if self.selection not in SELECTIONS:
            raise ValueError(f"selection must be one of {SELECTIONS}, got {self.selection!r}")
        if self.variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {self.variant!r}")
        if self.map not in MAPS:
            raise ValueError(f"map must be one of {MAPS}, got {self.map!r}")
        if self.selection == "fixed" and (self.n_bins is None or int(self.n_bins) < 1):
            raise ValueError(f"n_bins must be a positive integer, got {self.n_bins!r}")
        if self.selection == "cv" and (self.max_bins is None or int(self.max_bins) < 1):
            raise ValueError(f"max_bins must be a positive integer for CV, got {self.max_bins!r}")
        if self.max_bins is not None and int(self.max_bins) < 1:
            raise ValueError(f"max_bins must be a positive integer or None, got {self.max_bins!r}")

    def _fit(self, s, y):
        self._check_params()
        if self.selection == "fixed":
            n_bins = int(self.n_bins)
        elif self.selection == "sweep":
            n_bins = self._sweep(s, y)
        else:
            n_bins = self._cv(s, y)
        self._fit_bins(s, y, n_bins)

    def _edges_for(self, s_sorted, n_bins):
        return es_edges(s_sorted, n_bins) if self.scheme == "es" else ew_edges(n_bins)

    def _fit_bins(self, s, y, n_bins):
        self.n_bins_ = int(n_bins)
        order = np.argsort(s, kind="stable")
        self.edges_ = self._edges_for(s[order], self.n_bins_)
        if self.scheme == "es" and self.variant == "paper":
            idx = es_position_groups(s.size, self.n_bins_)       # ties split by position
            s, y = s[order], y[order]
        else:
            idx = assign_bins(s, self.edges_, self.scheme)
        self.bin_counts_, self.bin_mean_scores_, self.bin_mean_labels_ = bin_stats(
            idx, s, y, self.n_bins_)
        nonempty = self.bin_counts_ > 0
        self.bin_shift_ = np.where(nonempty, self.bin_mean_labels_ - self.bin_mean_scores_, 0.0)

    # sweep -----------------------------------------------------------------
    def _sweep(self, s, y) -> int:
        n = s.shape[0]
        cap = n if self.max_bins is None else min(int(self.max_bins), n)
        order = np.argsort(s, kind="stable")
        s_sorted = s[order]
        cum_y = np.concatenate(([0], np.cumsum(y[order].astype(np.int64))))
        best = 1
        for n_bins in range(2, cap + 1):
            if self.scheme == "es":
                if self.variant == "paper":                      # position groups
                    pos = np.concatenate(([0], es_group_starts(n, n_bins), [n]))
                else:
                    edges = es_edges(s_sorted, n_bins)
                    pos = np.concatenate(([0], np.searchsorted(s_sorted, edges[1:-1], "left"),
                                          [n]))
                counts = np.diff(pos)
                pos_y = np.diff(cum_y[pos])
            else:
                idx = assign_bins(s, ew_edges(n_bins), "ew")
                counts = np.bincount(idx, minlength=n_bins)
                pos_y = np.bincount(idx, weights=y, minlength=n_bins).round().astype(np.int64)
            keep = counts > 0
            k, m = pos_y[keep], counts[keep]
            # ybar_b <= ybar_{b+1}  <=>  k_b * m_{b+1} <= k_{b+1} * m_b  (exact integers)
            if np.any(k[:-1] * m[1:] > k[1:] * m[:-1]):
                break
            best = n_bins
        return best

    # cross-validation --------------------------------------------------------
    def _cv(self, s, y) -> int:
        cands = np.arange(1, int(self.max_bins) + 1)
        split = paper_kfold_indices if self.variant == "paper" else kfold_indices
        folds = split(s.shape[0], int(self.n_folds), int(self.seed))
        scores = np.zeros((len(folds), cands.size))
        fold_scores = (self._cv_fold_scores_paper if self.variant == "paper"
                       else self._cv_fold_scores)
        for f, (train, test) in enumerate(folds):
            scores[f] = fold_scores(s, y, train, test, cands)
        self.candidates_ = cands
        self.cv_scores_ = scores.mean(axis=0)
        return int(complexity_rule(cands, self.cv_scores_, tol=float(self.tol)))

    def _cv_fold_scores(self, s, y, train, test, cands):
        """Held-out MSE of the map for every candidate B at once (no loop over B)."""
        n_c = cands.size
        bin_offset = np.concatenate(([0], np.cumsum(cands)[:-1]))   # first global bin of B
        total = int(cands.sum())
        if self.scheme == "ew":
            loc = np.minimum(np.floor(s[:, None] * cands[None, :]).astype(np.int64), cands - 1)
            glob = loc + bin_offset                                    # (n, n_c)
        else:
            glob = self._es_global_bins(s, train, cands, bin_offset)   # (n, n_c)
        g_tr = glob[train].ravel()
        cnt = np.bincount(g_tr, minlength=total).astype(np.float64)
        sum_s = np.bincount(g_tr, weights=np.repeat(s[train], n_c), minlength=total)
        sum_y = np.bincount(g_tr, weights=np.repeat(y[train], n_c), minlength=total)
        nonempty = cnt > 0
        safe = np.where(nonempty, cnt, 1.0)
        g_te = glob[test]                                              # (n_test, n_c)
        s_te = s[test][:, None]
        if self.map == "slope1":
            shift = np.where(nonempty, (sum_y - sum_s) / safe, 0.0)
            pred = s_te + shift[g_te]
        else:
            flat = sum_y / safe
            pred = np.where(nonempty[g_te], flat[g_te], s_te)
        return np.mean((pred - y[test][:, None]) ** 2, axis=0)

    def _cv_fold_scores_paper(self, s, y, train, test, cands):
        """Held-out MSE per candidate B with the paper's bins (one refit per B:
        position groups for ES, empty training bins predict 0)."""
        fold = BinningFamily(scheme=self.scheme, selection="fixed", map=self.map,
                             variant="paper")
        out = np.empty(cands.size)
        for j, n_bins in enumerate(cands):
            fold._fit_bins(s[train], y[train], int(n_bins))
            out[j] = np.mean((fold._map(s[test]) - y[test]) ** 2)
        return out

    @staticmethod
    def _es_global_bins(s, train, cands, bin_offset):
        """ES bins of every point for every candidate B, edges from the training fold."""
        uniq, codes = np.unique(s, return_inverse=True)
        code_one = int(np.searchsorted(uniq, 1.0, side="left"))   # code of the edge 1.0
        width = uniq.size + 2
        tc = np.sort(codes[train])
        n_tr = tc.size
        # interior edges of every candidate, concatenated: candidate j has B_j - 1
        n_int = cands - 1
        cand_of_edge = np.repeat(np.arange(cands.size), n_int)
        b = np.arange(n_int.sum()) - np.repeat(np.cumsum(n_int) - n_int, n_int) + 1
        B = cands[cand_of_edge]
        q, r = n_tr // B, n_tr % B
        starts = b * q + np.minimum(b, r)
        edge_code = np.where(starts < n_tr, tc[np.minimum(starts, n_tr - 1)], code_one)
        shifted = edge_code + cand_of_edge * width            # sorted: bands never overlap
        edges_before = np.cumsum(n_int) - n_int
        query = codes[:, None] + (np.arange(cands.size) * width)[None, :]
        pos = np.searchsorted(shifted, query.ravel(), side="right").reshape(query.shape)
        return pos - edges_before[None, :] + bin_offset[None, :]

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

    # ---------------------------------------------------------- estimates
    def ce_estimate_debiased(self, scores, p: int = 1) -> float:
        """Debiased binned CE (docs/methods.md §2) from the *fitting* bins.

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
        terms = calibration_error.debiased_bin_terms(self.bin_counts_, self.bin_mean_scores_,
                                           self.bin_mean_labels_, p=p)
        weights = np.bincount(assign_bins(s, self.edges_, self.scheme),
                              minlength=self.n_bins_) / s.size
        return float(np.dot(weights, terms))
