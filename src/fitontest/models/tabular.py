"""scikit-learn classifiers as the "networks" of the tabular study
(docs/methods/13-tabular.md §13.2).

One registry, :data:`CLASSIFIERS`; a new classifier is one ``@register("name")``
line on a factory ``(seed, generator) -> estimator`` (a scikit-learn
classifier with ``fit`` and ``predict_proba``). Fixed hyper-parameters (no
tuning: the study needs miscalibrated models of several kinds, not the best
ones):

- ``logreg``: standardised features, L2 logistic regression (C = 1) — a
  linear model of quadratic Bayes boundaries;
- ``gnb``: Gaussian naive Bayes — ignores the feature correlation, so
  over-confident;
- ``rf``: random forest, 100 trees — averaged votes, typically under-confident;
- ``hgb``: histogram gradient boosting, 100 iterations;
- ``mlp``: one hidden layer of 64 ReLU units, Adam, 300 epochs, no early
  stopping — over-fits a small training set, so over-confident;
- ``svc``: RBF support-vector machine with Platt's probabilities (sigmoid
  on 5-fold cross-validated decision values);
- ``bayes``: the generator's exact posterior itself (``fit`` ignores the
  data) — perfectly calibrated, a check of the truth.

The workflow's logits of a classifier are ``log(max(predict_proba, 1e-12))``
(:func:`log_proba`): softmax gives back the probabilities, so the multi-class
calibrators act on them as on a network's logits.
"""
from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from fitontest.core.registry import Registry

CLASSIFIERS = Registry("tabular classifier")
register = CLASSIFIERS.register
names = CLASSIFIERS.names
PROBA_FLOOR = 1e-12


def get(name: str, seed: int = 0, generator=None):
    """A fresh (unfitted) classifier registered as ``name``."""
    return CLASSIFIERS.entry(name)(seed=int(seed), generator=generator)


def log_proba(clf, X, n_classes: int | None = None) -> np.ndarray:
    """(n, K) float32 logits: the log of the predicted probabilities, floored.

    ``n_classes``: K; a class the training rows lacked (absent from
    ``clf.classes_``) gets probability 0, i.e. the floor."""
    p = clf.predict_proba(X)
    if n_classes is not None and p.shape[1] != n_classes:
        full = np.zeros((p.shape[0], n_classes))
        full[:, np.asarray(clf.classes_, dtype=np.int64)] = p
        p = full
    return np.log(np.maximum(p, PROBA_FLOOR)).astype(np.float32)


@register("logreg")
def _logreg(seed, generator=None):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=2000))


@register("gnb")
def _gnb(seed, generator=None):
    from sklearn.naive_bayes import GaussianNB

    return GaussianNB()


@register("rf")
def _rf(seed, generator=None):
    from sklearn.ensemble import RandomForestClassifier

    return RandomForestClassifier(n_estimators=100, random_state=seed, n_jobs=1)


@register("hgb")
def _hgb(seed, generator=None):
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier(max_iter=100, early_stopping=False, random_state=seed)


@register("mlp")
def _mlp(seed, generator=None):
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), MLPClassifier(
        hidden_layer_sizes=(64,), max_iter=300, early_stopping=False, random_state=seed))


@register("svc")
def _svc(seed, generator=None):
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    # Platt's sigmoid on 5-fold cross-validated decision values, one final SVC
    # (what SVC(probability=True) did; that flag is deprecated in scikit-learn 1.9)
    return make_pipeline(StandardScaler(), CalibratedClassifierCV(
        SVC(random_state=seed), method="sigmoid", cv=5, ensemble=False))


class BayesClassifier(ClassifierMixin, BaseEstimator):
    """The generator's exact posterior as a classifier (``fit`` learns nothing)."""

    def __init__(self, generator=None):
        self.generator = generator

    def fit(self, X, y=None):
        if self.generator is None:
            raise ValueError("BayesClassifier needs the data generator (TabularGenerator)")
        self.classes_ = np.arange(self.generator.num_classes)
        return self

    def predict_proba(self, X) -> np.ndarray:
        return self.generator.posterior(X)

    def predict(self, X) -> np.ndarray:
        return self.predict_proba(X).argmax(axis=1)


@register("bayes")
def _bayes(seed, generator=None):
    return BayesClassifier(generator)
