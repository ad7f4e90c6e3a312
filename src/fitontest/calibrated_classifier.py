"""A scikit-learn meta-estimator: a fitted classifier plus a registered calibrator.

>>> from fitontest import CalibratedClassifier
>>> clf = LogisticRegression().fit(X_train, y_train)                      # doctest: +SKIP
>>> cal = CalibratedClassifier(clf, method="temps").fit(X_val, y_val)     # doctest: +SKIP
>>> cal.predict_proba(X_test)                                             # doctest: +SKIP

``method`` names either a multi-class calibrator (``fitontest.multiclass``:
``temps``, ``vecs``, ``msodir``, ``dirodir``, ``dirl2``, ``iop_oi``;
docs/methods/05-multiclass.md §5) or a binary calibration-map family (``fitontest.families``:
``platt``, ``beta``, ``isotonic``, ``pl3_ce``, ...; docs/methods/02-binning.md §2,
docs/methods/03-binary-families.md §3, docs/methods/04-pl.md §4).

- Multi-class calibrators work on logits: the classifier's
  ``decision_function`` when it returns all K columns (K >= 3), otherwise the
  log of ``predict_proba`` (clipped at 1e-16), which is the logit vector up to
  a per-row constant, so softmax gives back the classifier's probabilities.
- Binary families, ``mode="ovr"`` (default): one family per class, fitted on
  (p_k, 1[y = k]); the calibrated p_k are renormalised to sum to 1 (a row
  whose calibrated values are all 0 keeps the classifier's probabilities).
  With K = 2 one family is fitted on p_1 and p_0 = 1 - c(p_1).
- Binary families, ``mode="confidence"``: one family on the top-label task
  (max_k p_k, prediction correct); the top class gets c(max_k p_k), the other
  classes share the rest in proportion to their probabilities (uniformly when
  those are all 0). The predicted class can change when c is small.

``cv="prefit"`` is the only mode: the classifier is used as fitted and the
calibrator is fitted on the data given to :meth:`fit` (held-out data).
``clone`` copies the classifier unfitted, as for any scikit-learn
meta-estimator; to keep a prefit classifier through ``clone`` (grid search,
``Pipeline`` cloning) wrap it in ``sklearn.frozen.FrozenEstimator``.
"""
from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from fitontest.core.validation import check_option

from . import families, multiclass

MODES = ("ovr", "confidence")
LOG_FLOOR = 1e-16


class CalibratedClassifier(ClassifierMixin, MetaEstimatorMixin, BaseEstimator):
    """Calibrate an already fitted classifier with a registered calibrator.

    Parameters
    ----------
    estimator : fitted classifier
        Any scikit-learn classifier with ``predict_proba`` (and ``classes_``),
        already fitted (``cv="prefit"``).
    method : str, default "temps"
        A multi-class calibrator (:func:`fitontest.multiclass.names`) or a
        binary calibration-map family (:func:`fitontest.families.names`).
    mode : {"ovr", "confidence"}, default "ovr"
        How a binary family calibrates K classes (see the module docstring);
        ignored by the multi-class calibrators.
    cv : "prefit"
        The only mode: the calibrator is fitted on the data given to ``fit``.
    method_params : dict, optional
        Parameters of the calibrator (e.g. ``{"n_bins": 10}``).

    Attributes
    ----------
    classes_ : ndarray
        The classifier's classes.
    kind_ : {"multiclass", "binary"}
        Which registry ``method`` came from.
    calibrator_ : multi-class calibrator
        The fitted calibrator (``kind_ == "multiclass"``).
    calibrators_ : list of families
        The fitted binary families: one per class for ovr (one for K = 2),
        one for confidence (``kind_ == "binary"``).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.linear_model import LogisticRegression
    >>> from fitontest import CalibratedClassifier
    >>> X, y = make_classification(n_samples=3000, n_classes=3, n_informative=5,
    ...                            random_state=0)
    >>> clf = LogisticRegression(max_iter=1000).fit(X[:1000], y[:1000])
    >>> cal = CalibratedClassifier(clf, method="temps").fit(X[1000:2000], y[1000:2000])
    >>> proba = cal.predict_proba(X[2000:])
    >>> proba.shape, bool(np.allclose(proba.sum(axis=1), 1))
    ((1000, 3), True)
    >>> cal.calibrator_.temperature_ > 0
    True

    Temperature scaling keeps the predicted class:

    >>> bool((cal.predict(X[2000:]) == clf.predict(X[2000:])).all())
    True
    """

    def __init__(self, estimator, method: str = "temps", mode: str = "ovr", cv="prefit",
                 method_params: dict | None = None):
        self.estimator = estimator
        self.method = method
        self.mode = mode
        self.cv = cv
        self.method_params = method_params

    # ------------------------------------------------------------------ helpers
    def _check_estimator(self):
        try:
            check_is_fitted(self.estimator)
        except NotFittedError:
            raise NotFittedError(
                f"CalibratedClassifier(cv='prefit') needs a fitted estimator; "
                f"{type(self.estimator).__name__} is not fitted (after clone, wrap the "
                "classifier in sklearn.frozen.FrozenEstimator to keep it fitted)") from None
        if not hasattr(self.estimator, "predict_proba"):
            raise ValueError(f"{type(self.estimator).__name__} has no predict_proba")

    def _probs(self, X) -> np.ndarray:
        from .core import predictions

        # probabilities by the classifier's contract, checked (and rounding
        # renormalised) by the rule every entry point shares
        return predictions.read(self.estimator.predict_proba(X), "probabilities",
                                where=f"{type(self.estimator).__name__}.predict_proba(X)").probs

    def _logits(self, X, probs: np.ndarray) -> np.ndarray:
        k = probs.shape[1]
        if k >= 3 and hasattr(self.estimator, "decision_function"):
            z = np.asarray(self.estimator.decision_function(X), dtype=np.float64)
            if z.ndim == 2 and z.shape[1] == k:
                return z
        return np.log(np.maximum(probs, LOG_FLOOR))

    def _new(self, registry):
        return registry.get(self.method, **dict(self.method_params or {}))

    # ---------------------------------------------------------------------- fit
    def fit(self, X, y) -> "CalibratedClassifier":
        """Fit the calibrator on held-out data (X, y) through the fitted classifier.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Held-out inputs of the classifier (not its training data).
        y : array-like of shape (n_samples,)
            Their labels, among the classifier's ``classes_``.

        Returns
        -------
        self : CalibratedClassifier

        Raises
        ------
        ValueError
            A bad ``cv``, ``mode`` or ``method``, or labels the classifier
            does not know.
        sklearn.exceptions.NotFittedError
            The classifier is not fitted.
        """
        if self.cv != "prefit":
            raise ValueError(f"cv must be 'prefit' (the classifier is already fitted), "
                             f"got {self.cv!r}")
        check_option("mode", self.mode, MODES)
        self._check_estimator()
        classes = np.asarray(self.estimator.classes_)
        y = np.asarray(y)
        idx = np.searchsorted(classes, y)
        idx = np.clip(idx, 0, classes.size - 1)
        unknown = classes[idx] != y
        if unknown.any():
            raise ValueError(f"labels contain classes the classifier does not know: "
                             f"{np.unique(y[unknown])[:5].tolist()}; its classes: "
                             f"{classes.tolist()}")
        probs = self._probs(X)
        if self.method in multiclass.names():
            self.kind_ = "multiclass"
            self.calibrator_ = self._new(multiclass).fit(self._logits(X, probs), idx)
        elif self.method in families.names():
            self.kind_ = "binary"
            self.calibrators_ = [self._new(families).fit(s, t)
                                 for s, t in self._binary_tasks(probs, idx)]
        else:
            raise ValueError(f"unknown method {self.method!r}; multi-class calibrators: "
                             f"{', '.join(multiclass.names())}; binary families: "
                             f"{', '.join(families.names())}")
        self.classes_ = classes
        if hasattr(self.estimator, "n_features_in_"):
            self.n_features_in_ = self.estimator.n_features_in_
        return self

    def _binary_tasks(self, probs, idx):
        if self.mode == "confidence":
            top = np.argmax(probs, axis=1)
            return [(probs[np.arange(probs.shape[0]), top], (top == idx).astype(np.int64))]
        ks = [1] if probs.shape[1] == 2 else range(probs.shape[1])
        return [(probs[:, k], (idx == k).astype(np.int64)) for k in ks]

    # ------------------------------------------------------------------ predict
    def predict_proba(self, X) -> np.ndarray:
        """Calibrated class probabilities, shape (n_samples, n_classes), rows summing to 1."""
        check_is_fitted(self, "kind_")
        probs = self._probs(X)
        if self.kind_ == "multiclass":
            return self.calibrator_.predict_proba(self._logits(X, probs))
        maps = [np.clip(fam.predict(s), 0.0, 1.0) for fam, (s, _) in
                zip(self.calibrators_, self._binary_tasks(probs, np.zeros(len(probs), int)))]
        n, k = probs.shape
        if self.mode == "confidence":
            top = np.argmax(probs, axis=1)
            rows = np.arange(n)
            rest = probs.copy()
            rest[rows, top] = 0.0
            total = rest.sum(axis=1, keepdims=True)
            share = np.where(total > 0, rest / np.where(total > 0, total, 1.0), 1.0 / (k - 1))
            share[rows, top] = 0.0
            out = share * (1.0 - maps[0])[:, None]
            out[rows, top] = maps[0]
            return out
        if k == 2:
            return np.column_stack([1.0 - maps[0], maps[0]])
        out = np.column_stack(maps)
        total = out.sum(axis=1, keepdims=True)
        return np.where(total > 0, out / np.where(total > 0, total, 1.0), probs)

    def predict(self, X) -> np.ndarray:
        """The class of largest calibrated probability."""
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]
