"""Calibration errors, evaluator scores, CE intervals and map bands (docs/methods/06-truth-and-scores.md §6,
docs/methods/11-intervals.md §11).

The public face of the scores: the estimators themselves live in
:mod:`fitontest.core.calibration_error` (the families use them, so they sit
below the families), the bootstrap intervals in :mod:`fitontest.inference.intervals`,
the bands of the calibration map in :mod:`fitontest.inference.bands`.

>>> import numpy as np
>>> from fitontest import metrics
>>> s = np.array([0.2, 0.4, 0.9])
>>> round(metrics.true_ce(s, np.array([0.25, 0.4, 0.8])), 4)
0.05
"""
from fitontest.core.calibration_error import (ceac, ce_estimate, cmee, debiased_bin_terms,
                                              debiased_ece, folded_normal_mean, kce,
                                              median_heuristic, spearman, true_ce)
from fitontest.inference.intervals import CEInterval, ce_interval
from fitontest.inference.calibration_tests import CalibrationTestResult, calibration_test
from fitontest.inference.bands import ReliabilityBand, monotone_band_test, reliability_band

__all__ = ["true_ce", "ce_estimate", "cmee", "ceac", "spearman", "folded_normal_mean",
           "debiased_bin_terms", "debiased_ece", "median_heuristic", "kce",
           "ce_interval", "CEInterval", "calibration_test", "CalibrationTestResult",
           "reliability_band", "ReliabilityBand", "monotone_band_test"]
