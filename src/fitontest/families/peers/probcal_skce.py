"""probcal's squared kernel calibration error (Widmann, Lindsten & Zachariah
2019; package ``probcal``; docs/methods/03-binary-families.md §3.12). ``kce`` is ours (RBF kernel).

``probcal.metrics.skce(y, f)``: the unbiased quadratic estimator (``"uq"``) of
the SKCE with probcal's defaults -- a Laplace kernel exp(-|f_i - f_j| / h) on
the scores, h the median pairwise distance -- and its binary term
h_ij = 2 k(f_i, f_j)(y_i - f_i)(y_j - f_j). p = 2: the SKCE itself (a squared
quantity, unbiased, possibly negative); p = 1: its signed square root, as
``kce`` (**choice**: on the scale of an L1 error, monotone, so the same
rankings). Estimand ``"SKCE"``: not the L1 or L2 CE. No map; probcal's
``skce_test`` gives a p-value, not an interval. O(n^2) memory (about 3 GB at
n = 10,000: ``estimator="ul"``, probcal's linear estimator, is O(n)).
"""
from __future__ import annotations

import numpy as np

from fitontest.families import register
from .base import PeerEstimate


@register("probcal_skce")
class ProbcalSKCE(PeerEstimate):
    """probcal's SKCE (Laplace kernel, median bandwidth): at p = 2, its signed root at p = 1.

    ``estimator``, ``kernel``, ``bandwidth``: probcal's parameters (its
    defaults; ``seed`` is its ``random_state``, used by ``"ul"`` only).
    Fitted: ``estimates_``."""

    package = "probcal"
    needs_both_classes = False
    estimand = "SKCE"

    def __init__(self, estimator: str = "uq", kernel: str = "laplace",
                 bandwidth: float | None = None, seed: int = 42):
        self.estimator = estimator
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.seed = seed

    def _estimates(self, s, y):
        skce = float(self._module("probcal.metrics").skce(
            y, s, estimator=self.estimator, kernel=self.kernel, bandwidth=self.bandwidth,
            random_state=int(self.seed)))
        return {1: (float(np.sign(skce) * np.sqrt(abs(skce))), np.nan), 2: (skce, np.nan)}
