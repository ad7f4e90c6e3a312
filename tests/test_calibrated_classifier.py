"""CalibratedClassifier: a fitted classifier + a registered calibrator, sklearn style."""
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.exceptions import NotFittedError
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer

from fitontest import CalibratedClassifier


class Overconfident(LogisticRegression):
    """Logistic regression whose probabilities are the softmax of 4x its scores."""

    def predict_proba(self, X):
        z = 4.0 * np.atleast_2d(self.decision_function(X).T).T
        if z.shape[1] == 1:
            z = np.hstack([-z / 2, z / 2])
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)


def split(n_classes, seed=0):
    X, y = make_classification(n_samples=6000, n_features=10, n_informative=6,
                               n_classes=n_classes, n_clusters_per_class=1, flip_y=0.1,
                               random_state=seed)
    y = np.array(["a", "b", "c", "d"])[y]        # string labels: classes_ are kept
    return (X[:2000], y[:2000]), (X[2000:4000], y[2000:4000]), (X[4000:], y[4000:])


@pytest.mark.parametrize("n_classes,method,mode", [
    (3, "temps", "ovr"), (3, "vecs", "ovr"), (3, "isotonic", "ovr"),
    (3, "platt", "confidence"), (2, "platt", "ovr"), (2, "temps", "ovr"),
    (3, "smece", "ovr")])
def test_calibration_improves_an_overconfident_model(n_classes, method, mode):
    (Xtr, ytr), (Xval, yval), (Xte, yte) = split(n_classes)
    clf = Overconfident(max_iter=1000).fit(Xtr, ytr)
    cal = CalibratedClassifier(clf, method=method, mode=mode).fit(Xval, yval)
    p = cal.predict_proba(Xte)
    assert p.shape == (len(Xte), n_classes)
    assert np.allclose(p.sum(axis=1), 1.0) and (p >= 0).all()
    assert list(cal.classes_) == list(clf.classes_)
    before = log_loss(yte, clf.predict_proba(Xte), labels=clf.classes_)
    after = log_loss(yte, np.clip(p, 1e-12, 1), labels=clf.classes_)
    assert after < before, (before, after)
    assert set(cal.predict(Xte)) <= set(clf.classes_)
    acc = np.mean(cal.predict(Xte) == yte)
    assert acc > 0.5


def test_temps_keeps_the_predicted_class():
    (Xtr, ytr), (Xval, yval), (Xte, _) = split(3)
    clf = LogisticRegression(max_iter=1000).fit(Xtr, ytr)
    cal = CalibratedClassifier(clf, method="temps").fit(Xval, yval)
    assert (cal.predict(Xte) == clf.predict(Xte)).all()


def test_clone_and_pipeline():
    (Xtr, ytr), (Xval, yval), (Xte, _) = split(3)
    clf = LogisticRegression(max_iter=1000).fit(Xtr, ytr)
    cal = CalibratedClassifier(clf, method="platt", mode="ovr")
    twin = clone(cal)
    assert twin.get_params()["method"] == "platt" and twin.get_params()["mode"] == "ovr"
    with pytest.raises(NotFittedError, match="FrozenEstimator"):
        twin.fit(Xval, yval)          # clone unfits the classifier, as in scikit-learn
    frozen = clone(CalibratedClassifier(FrozenEstimator(clf), method="platt"))
    direct = CalibratedClassifier(clf, method="platt").fit(Xval, yval).predict_proba(Xte)
    assert np.allclose(frozen.fit(Xval, yval).predict_proba(Xte), direct)
    pipe = Pipeline([("identity", FunctionTransformer()),
                     ("cal", CalibratedClassifier(clf, method="temps"))]).fit(Xval, yval)
    ref = CalibratedClassifier(clf, method="temps").fit(Xval, yval).predict_proba(Xte)
    assert np.allclose(pipe.predict_proba(Xte), ref)


def test_bad_arguments_are_named():
    (Xtr, ytr), (Xval, yval), _ = split(3)
    clf = LogisticRegression(max_iter=1000).fit(Xtr, ytr)
    with pytest.raises(ValueError, match="unknown method"):
        CalibratedClassifier(clf, method="nope").fit(Xval, yval)
    with pytest.raises(ValueError, match="cv must be"):
        CalibratedClassifier(clf, cv=5).fit(Xval, yval)
    with pytest.raises(ValueError, match="mode must be"):
        CalibratedClassifier(clf, method="platt", mode="top").fit(Xval, yval)
    with pytest.raises(ValueError, match="does not know"):
        CalibratedClassifier(clf).fit(Xval, np.where(yval == "a", "z", yval))
    with pytest.raises(NotFittedError):
        CalibratedClassifier(LogisticRegression()).fit(Xval, yval)
