"""The scikit-learn-style base class every calibration-map family derives from,
and the CE estimates of a fitted family (:func:`estimates`, :func:`used_estimates`)."""
from __future__ import annotations

from typing import Mapping

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from fitontest.core import calibration_error
from fitontest.core.validation import check_binary, check_scores


class CalibrationFamily(BaseEstimator):
    """Fit on (scores, labels); predict the estimated calibrated probability.

    Subclasses implement ``_fit(s, y)`` (validated float64 arrays) and
    ``_predict(s)``; hyper-parameters only in ``__init__``; fitted state in
    attributes ending in ``_``.

    Class attributes describing the family:

    - ``needs_both_classes``: fitting on one class is an error;
    - ``min_points``: the fewest points ``fit`` accepts;
    - ``hyper_attr``: name of the fitted attribute holding the chosen
      hyper-parameter (``"n_bins_"``, ``"n_pieces_"``), or ``None``;
    - ``provides_map``: ``False`` for estimate-only evaluators (KCE), which
      override :meth:`ce_estimate` and have no meaningful ``predict``.
    """

    needs_both_classes: bool = False
    min_points: int = 2
    hyper_attr: str | None = None
    provides_map: bool = True

    def _n_folds_needed(self) -> int | None:
        return getattr(self, "n_folds", None)

    def fit(self, scores, labels):
        s, y = check_binary(scores, labels, min_points=self.min_points,
                            need_both_classes=self.needs_both_classes,
                            n_folds=self._n_folds_needed())
        self._fit(s, y)
        self.n_fit_ = s.shape[0]
        return self

    def predict(self, scores) -> np.ndarray:
        check_is_fitted(self, "n_fit_")
        return self._predict(check_scores(scores))

    def ce_estimate(self, scores, p: int = 1) -> float:
        """Plug-in estimate mean |c_hat(s_i) - s_i|^p on ``scores``."""
        return calibration_error.ce_estimate(scores, self.predict(scores), p=p)

    def _fitting_sample(self, scores) -> np.ndarray:
        """``scores`` checked to be the fitting sample, for families whose CE
        estimate belongs to the sample they were fitted on (kce, smece)."""
        check_is_fitted(self, "n_fit_")
        s = check_scores(scores)
        if s.shape[0] != self.n_fit_:
            raise ValueError(f"{type(self).__name__} is an estimate of its fitting sample ({self.n_fit_} "
                             f"points); got {s.shape[0]} scores")
        return s

    def chosen_hyperparameter(self) -> float:
        """The selected complexity (bins, pieces, ...) or NaN if none."""
        check_is_fitted(self, "n_fit_")
        if self.hyper_attr is None:
            return float("nan")
        return float(getattr(self, self.hyper_attr))

    # subclass hooks
    def _fit(self, s: np.ndarray, y: np.ndarray) -> None:  # pragma: no cover
        raise NotImplementedError

    def _predict(self, s: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError


# ------------------------------------------------------------ a fitted family's estimates
def used_estimates(est: Mapping[str, float]) -> tuple[float, float]:
    """The (L1, L2) estimates the CE tables use: debiased where available."""
    l1 = est["ce_est_debiased"] if np.isfinite(est["ce_est_debiased"]) else est["ce_est"]
    l2 = est["ce_est_debiased_sq"] if np.isfinite(est["ce_est_debiased_sq"]) else est["ce_est_sq"]
    return l1, l2


def estimates(fam, s: np.ndarray) -> dict[str, float]:
    """CE estimates of a fitted evaluator on its fitting scores ``s``: ``ce_est``,
    ``ce_est_sq`` and the debiased pair (NaN where the family has none)."""
    # the family's own estimate: the plug-in mean |c_hat(s_i) - s_i|^p for most
    # (CalibrationFamily.ce_estimate), smECE for smece, the SKCE for kce
    out: dict[str, float] = {"ce_est": float(fam.ce_estimate(s, p=1)),
                             "ce_est_sq": float(fam.ce_estimate(s, p=2))}
    debias = getattr(fam, "ce_estimate_debiased", None)
    if callable(debias):
        out["ce_est_debiased"] = float(debias(s, p=1))
        out["ce_est_debiased_sq"] = float(debias(s, p=2))
    else:
        out["ce_est_debiased"] = out["ce_est_debiased_sq"] = np.nan
    return out
