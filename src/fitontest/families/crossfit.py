"""Cross-fitted fit-on-test evaluators (``cf_*``, docs/methods/03-binary-families.md
§3.11): any map family fitted on K - 1 folds of the test sample and read on the held-out fold.

With folds k(i) (stratified, seeded) and g_{-k} the family fitted without fold
k, every point gets an out-of-fold value g_i = g_{-k(i)}(s_i) from a map that
never saw its label. Two estimates of the fitting sample follow:

- ``ce_est``: the plug-in of the out-of-fold values, mean |g_i - s_i|^p;
- ``ce_est_debiased`` (what the tables use): the cross-fitted residual form,
  p = 1: mean sign(g_i - s_i)(y_i - s_i), p = 2: mean (g_i - s_i)(y_i - s_i).
  Because g_i is independent of y_i given the scores, its expectation is
  E[sign(g - s)(c(s) - s)] (<= the L1 CE, equal when g sits on the right side
  of s) and E[(g - s)(c(s) - s)] (= the squared L2 CE where g is unbiased for
  c); both are 0 in expectation on a calibrated model, where the plug-ins are
  positive. The p = 1 form is probmetrics' proper-L1 loss gain with this
  family as the calibrator (docs/methods/03-binary-families.md §3.12).

The map (``predict``, what CMEE scores) is the mean of the K fold maps
(**choice**: the refit on all points would be the plain family's map, and
the fold maps are the ones the estimate used). The chosen hyper-parameter is
the mean of the folds' (NaN for families without one).
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np
from sklearn.utils.validation import check_is_fitted

from fitontest.metrics import check_p

from . import CalibrationFamily, register


def fold_indices(y: np.ndarray, n_folds: int, seed: int) -> np.ndarray:
    """Fold of every point: stratified by label when each class has ``n_folds``
    points, else plain; shuffled with ``seed``."""
    from sklearn.model_selection import KFold, StratifiedKFold

    counts = np.bincount(y.astype(np.int64), minlength=2)
    splitter = (StratifiedKFold if counts.min() >= n_folds else KFold)(
        n_splits=n_folds, shuffle=True, random_state=seed)
    fold = np.empty(y.size, dtype=np.int64)
    for k, (_, test) in enumerate(splitter.split(np.zeros(y.size), y)):
        fold[test] = k
    return fold


@register("cf_isotonic", family="isotonic")
@register("cf_beta", family="beta")
@register("cf_platt", family="platt")
@register("cf_pl_ce", family="pl_ce")
@register("cf_pl3_ce", family="pl3_ce")
@register("cf_ece_es15", family="ece_es15")
@register("cf_ece_ew15", family="ece_ew15")
@register("cf_ece_es_cv", family="ece_es_cv")
@register("cf_ece_ew_cv", family="ece_ew_cv")
class CrossFitted(CalibrationFamily):
    """A map family cross-fitted on the test sample: the out-of-fold residual CE, the mean fold map.

    ``family``: the registered map family; ``n_folds``: K; ``seed``: the
    folds' (and, where it takes one, the family's) seed; ``params``: the
    family's constructor arguments. Fitted: ``maps_`` (the K fold fits),
    ``fold_`` (each point's fold), ``oof_`` (the out-of-fold values g_i),
    ``estimates_`` ({p: (plug-in, residual)})."""

    def __init__(self, family: str = "isotonic", n_folds: int = 5, seed: int = 0,
                 params: Mapping[str, Any] | None = None):
        self.family = family
        self.n_folds = n_folds
        self.seed = seed
        self.params = params

    # the wrapped family's properties
    def _entry(self):
        from . import entry

        return entry(self.family)

    # properties over the base's class attributes: the wrapped family answers
    @property
    def needs_both_classes(self) -> bool:  # type: ignore[override]
        return bool(self._entry().needs_both_classes)

    @property
    def pointwise_predict(self) -> bool:  # type: ignore[override]
        return bool(self._entry().pointwise_predict)

    def _inner(self):
        from . import get

        cls = self._entry()
        if not cls.provides_map:
            raise ValueError(f"{self.family!r} gives no map: only map families can be "
                             "cross-fitted")
        fam = get(self.family, **dict(self.params or {}))
        if "seed" in fam.get_params() and "seed" not in (self.params or {}):
            fam.set_params(seed=int(self.seed))
        return fam

    def _fit(self, s, y):
        k = int(self.n_folds)
        if k < 2:
            raise ValueError(f"n_folds must be at least 2, got {self.n_folds!r}")
        self.fold_ = fold_indices(y, k, int(self.seed))
        self.oof_ = np.empty_like(s)
        self.maps_ = []
        for j in range(k):
            out = self.fold_ == j
            fam = self._inner().fit(s[~out], y[~out])
            self.oof_[out] = fam.predict(s[out])
            self.maps_.append(fam)
        g, r = self.oof_ - s, y - s
        self.estimates_ = {1: (float(np.mean(np.abs(g))), float(np.mean(np.sign(g) * r))),
                           2: (float(np.mean(g * g)), float(np.mean(g * r)))}

    def _predict(self, s):
        return np.mean([fam.predict(s) for fam in self.maps_], axis=0)

    def _estimate(self, scores, p, which: int) -> float:
        self._fitting_sample(scores)
        return self.estimates_[check_p(p)][which]

    def ce_estimate(self, scores, p: int = 1) -> float:
        """Plug-in of the out-of-fold values on the fitting sample."""
        return self._estimate(scores, p, 0)

    def ce_estimate_debiased(self, scores, p: int = 1) -> float:
        """The cross-fitted residual estimate on the fitting sample."""
        return self._estimate(scores, p, 1)

    def chosen_hyperparameter(self) -> float:
        check_is_fitted(self, "n_fit_")
        return float(np.mean([fam.chosen_hyperparameter() for fam in self.maps_]))
