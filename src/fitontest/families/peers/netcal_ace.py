"""netcal's Average Calibration Error (Neumann, Zisserman & Vedaldi 2018; package
``netcal``; docs/methods/03-binary-families.md §3.12).

``netcal.metrics.ACE(bins=10).measure(f, y)`` on the binary scores (netcal reads
a 1-D input as P(y = 1)): the *unweighted* mean over the non-empty of 10
equal-width bins of |mean y - mean f| (tests/test_peers.py checks this reading
against a direct computation). Every non-empty bin counts the same whatever
its mass, so it estimates neither the L1 CE nor the binned CE (estimand
``"ACE"``); it is scored against the L1 truth like every estimate, which is how
papers use it. netcal's ACE has no L2 form (``ce_est_sq`` NaN), no map and no
interval.
"""
from __future__ import annotations

import numpy as np

from fitontest.families import register
from .base import PeerEstimate


@register("netcal_ace")
class NetcalACE(PeerEstimate):
    """netcal's ACE: equal-width bins, each non-empty bin weighted equally.

    ``bins``, ``equal_intervals``, ``sample_threshold``: netcal's parameters
    (its defaults). Fitted: ``estimates_``."""

    package = "netcal"
    needs_both_classes = False
    estimand = "ACE"

    def __init__(self, bins: int = 10, equal_intervals: bool = True, sample_threshold: int = 1):
        self.bins = bins
        self.equal_intervals = equal_intervals
        self.sample_threshold = sample_threshold

    def _estimates(self, s, y):
        ace = self._module("netcal.metrics").ACE(bins=int(self.bins),
                                                 equal_intervals=bool(self.equal_intervals),
                                                 sample_threshold=int(self.sample_threshold))
        return {1: (float(ace.measure(s, y.astype(np.int64))), np.nan), 2: (np.nan, np.nan)}
