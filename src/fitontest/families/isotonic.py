"""Isotonic regression (docs/methods.md §3)."""
from __future__ import annotations

import numpy as np

from . import CalibrationFamily, register


@register("isotonic")
class IsotonicFamily(CalibrationFamily):
    """Isotonic regression: the least-squares non-decreasing step map (scikit-learn).

    ``sklearn.isotonic.IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip")``
    on the scores (increasing). Fitted: ``regressor_``. Prediction interpolates
    linearly between the fitted thresholds (sklearn's behaviour) and is
    constant beyond the fitted range."""

    def __init__(self):
        pass

    def _fit(self, s, y):
        from sklearn.isotonic import IsotonicRegression

        self.regressor_ = IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True,
                                             out_of_bounds="clip").fit(s, y)

    def _predict(self, s):
        return np.asarray(self.regressor_.predict(s), dtype=np.float64)
