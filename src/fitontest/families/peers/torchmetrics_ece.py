"""torchmetrics' binned ECE, the one most papers report (package
``torchmetrics``; docs/methods/03-binary-families.md §3.12).

``torchmetrics.functional.classification.binary_calibration_error(f, y,
n_bins=15, norm)``: 15 equal-width bins, bin weights their shares of the
points; p = 1 with ``norm="l1"``, p = 2 the square of ``norm="l2"`` (torchmetrics
returns the root; ``ce_est_sq`` is squared). No debiasing (torchmetrics'
functions disable it), no map (the bins' map is ``ece_ew15``'s), no interval.
Its plug-in equals ``ece_ew15``'s ``ce_est`` on scores away from the bin edges
(tests/test_peers.py, on the confidence task): torchmetrics gives a score of
exactly 1 a bin of its own (``bucketize(..., right=True)``), ours puts it in
the last bin. Estimand ``"binned"``: the CE of the binned map.
"""
from __future__ import annotations

import numpy as np

from fitontest.families import register
from .base import PeerEstimate


@register("torchmetrics_ece")
class TorchmetricsECE(PeerEstimate):
    """torchmetrics' ECE: 15 equal-width bins, the L1 plug-in (the square of its L2 at p = 2).

    ``n_bins``: torchmetrics' parameter (its default). Fitted: ``estimates_``."""

    package = "torchmetrics"
    needs_both_classes = False
    estimand = "binned"

    def __init__(self, n_bins: int = 15):
        self.n_bins = n_bins

    def _estimates(self, s, y):
        ece = self._module("torchmetrics.functional.classification").binary_calibration_error
        torch = self._module("torch")
        f, t = torch.as_tensor(s), torch.as_tensor(y.astype(np.int64))
        l1 = float(ece(f, t, n_bins=int(self.n_bins), norm="l1"))
        l2 = float(ece(f, t, n_bins=int(self.n_bins), norm="l2"))
        return {1: (l1, np.nan), 2: (l2 * l2, np.nan)}
