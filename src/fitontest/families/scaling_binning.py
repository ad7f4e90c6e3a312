"""Scaling-binning calibrator (Kumar, Liang & Ma 2019; docs/methods/03-binary-families.md §3)."""
from __future__ import annotations

import numpy as np

from fitontest.core.validation import logit, sigmoid as expit
from . import CalibrationFamily, register
from .binning import assign_bins, bin_stats, es_edges
from .parametric import fit_platt, platt_targets


@register("scaling_binning", n_bins=10)
class ScalingBinningFamily(CalibrationFamily):
    """Scaling-binning (Kumar et al. 2019): Platt scaling, then ES binning of its outputs.

    Platt on one half of the fitting data, then equal-size binning of the
    Platt outputs on the other half; each bin maps to the mean Platt output in it.

    The halves are a seeded random split (``seed``) **(choice)**: the first
    ``n // 2`` points of a permutation fit Platt, the rest form the bins. Bins
    are the ES bins of :mod:`fitontest.families.binning` on the Platt outputs
    of the second half (``n_bins`` = 10 **(choice)**); a bin left empty by ties
    maps a Platt output to itself. Fitted: ``a_``, ``b_`` (Platt), ``edges_``,
    ``bin_values_``, ``n_bins_``.
    """

    min_points = 4
    hyper_attr = "n_bins_"

    def __init__(self, n_bins: int = 10, seed: int = 0):
        self.n_bins = n_bins
        self.seed = seed

    def _fit(self, s, y):
        if self.n_bins is None or int(self.n_bins) < 1:
            raise ValueError(f"n_bins must be a positive integer, got {self.n_bins!r}")
        perm = np.random.default_rng(int(self.seed)).permutation(s.size)
        first, second = perm[: s.size // 2], perm[s.size // 2:]
        self.a_, self.b_ = fit_platt(logit(s[first]), platt_targets(y[first]))
        q = self._platt(s[second])
        self.n_bins_ = int(self.n_bins)
        self.edges_ = es_edges(np.sort(q), self.n_bins_)
        counts, means, _ = bin_stats(assign_bins(q, self.edges_, "es"), q, y[second],
                                     self.n_bins_)
        self.bin_counts_ = counts
        self.bin_values_ = means          # NaN in empty bins

    def _platt(self, s):
        return expit(self.a_ * logit(s) + self.b_)

    def _predict(self, s):
        q = self._platt(s)
        b = assign_bins(q, self.edges_, "es")
        return np.where(self.bin_counts_[b] > 0, np.nan_to_num(self.bin_values_)[b], q)
