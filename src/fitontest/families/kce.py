"""Kernel calibration error: an estimate-only evaluator (docs/methods/03-binary-families.md §3)."""
from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

from fitontest import metrics
from . import CalibrationFamily, register


@register("kce")
class KCEFamily(CalibrationFamily):
    """Kernel calibration error (KCE, Widmann et al. 2019): an unbiased squared CE, no map.

    The unbiased squared kernel calibration error of the
    fitting sample, RBF kernel on the binary prediction
    (:func:`fitontest.metrics.kce`).

    ``bandwidth=None`` uses the median heuristic: the median pairwise distance
    |s_i - s_j| of the fitting scores (std of the scores if that is 0).

    It provides no calibration map (``provides_map = False``; ``predict``
    raises). :meth:`ce_estimate` returns, for ``p=2``, the SKCE itself (a
    squared quantity, unbiased, possibly negative), and for ``p=1`` its signed
    square root sign(SKCE) sqrt|SKCE| **(choice)**: on the scale of an L1
    error, and monotone, so rankings are the same. The estimate belongs to the
    fitting sample: ``scores`` must be the fitting scores (same length) and are
    only checked. Fitted: ``skce_``, ``bandwidth_``.
    """

    provides_map = False
    estimand = "SKCE"

    def __init__(self, bandwidth: float | None = None):
        self.bandwidth = bandwidth

    def _fit(self, s, y):
        bw = self.bandwidth
        if bw is None:
            bw = metrics.median_heuristic(s)
            if bw <= 0:
                bw = float(np.std(s)) or 1.0
        self.bandwidth_ = float(bw)
        self.skce_ = metrics.kce(s, y, bandwidth=self.bandwidth_)

    def ce_estimate(self, scores, p: int = 1) -> float:
        self._fitting_sample(scores)
        if p == 2:
            return float(self.skce_)
        if p == 1:
            return float(np.sign(self.skce_) * np.sqrt(abs(self.skce_)))
        raise ValueError(f"p must be 1 or 2, got {p!r}")

    def predict(self, scores):
        check_is_fitted(self, "n_fit_")
        raise NotImplementedError("kce is an estimate-only evaluator: it provides no "
                                  "calibration map (provides_map = False)")
