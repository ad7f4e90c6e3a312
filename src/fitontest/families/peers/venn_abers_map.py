"""Inductive Venn-Abers predictors (Vovk & Petej 2014; Vovk, Petej & Fedorova
2015; package ``venn-abers``; docs/methods/03-binary-families.md §3.12).

``venn_abers.VennAbers().fit(P, y)`` with P = (1 - f, f) fitted on the test
sample (the fit-on-test view) gives at every score two isotonic fits, p0 and
p1 (the sample with that score added once with label 0, once with label 1),
and the calibrated probability p = p1 / (1 - p0 + p1). The family's map is
that p (``predict``); its CE estimate is the plug-in mean |p(f_i) - f_i|^p over
the fitting sample, like every map family's (p = 2: squared).

Venn-Abers' own intervals are per score, [p0(f), p1(f)]
(:meth:`VennAbersMap.probability_interval`): a multiprobability with a
validity guarantee for one of its ends, not an interval of the CE, so the
family gives no CE interval of its own (``interval`` is the base class's).
"""
from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

from fitontest.core.validation import check_scores
from fitontest.families import CalibrationFamily, register
from .base import peer_module


def _two_columns(s: np.ndarray) -> np.ndarray:
    return np.column_stack([1.0 - s, s])


@register("venn_abers")
class VennAbersMap(CalibrationFamily):
    """Inductive Venn-Abers on the test sample: the map p1 / (1 - p0 + p1), the plug-in CE.

    Fitted: ``predictor_`` (the package's ``VennAbers``)."""

    needs_both_classes = True

    def __init__(self):
        pass

    def _fit(self, s, y):
        va = peer_module("venn_abers", "the venn_abers evaluator").VennAbers()
        with np.errstate(divide="ignore", invalid="ignore"):   # the package's 0/0 slopes
            self.predictor_ = va.fit(_two_columns(s), y.astype(np.int64))

    def _outputs(self, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.predictor_.predict_proba(_two_columns(s))

    def _predict(self, s):
        return np.asarray(self._outputs(s)[0][:, 1], dtype=np.float64)

    def probability_interval(self, scores) -> tuple[np.ndarray, np.ndarray]:
        """(p0, p1) at ``scores``: Venn-Abers' multiprobability, one interval per score."""
        check_is_fitted(self, "n_fit_")
        p0p1 = self._outputs(check_scores(scores))[1]
        return np.asarray(p0p1[:, 0], dtype=np.float64), np.asarray(p0p1[:, 1], dtype=np.float64)
