"""fitontest: evaluate classifier calibration in the fit-on-test view.

A calibration-map family fitted on validation data is a post-hoc calibrator;
fitted on test data it is an evaluator. Both come from one registry:

>>> from fitontest import families, metrics
>>> fam = families.get("ece_es15").fit(scores, labels)      # doctest: +SKIP
>>> metrics.ce_estimate(scores, fam.predict(scores), p=1)   # doctest: +SKIP

The front door for a model's K-class predictions:

>>> import fitontest
>>> fitontest.evaluate(probs, labels, evaluator="smece")    # doctest: +SKIP
>>> fitontest.choose_evaluator(probs, labels)               # doctest: +SKIP
>>> fitontest.CalibratedClassifier(fitted_clf, method="temps").fit(X_val, y_val)  # doctest: +SKIP

The package is laid out like scikit-learn: the public modules are real
modules at the top (``families``, ``multiclass``, ``metrics``, ``intervals``,
``data``, ``models``); the workflow's layers sit beneath (``core``,
``vision``, ``study``, ``report``; docs/architecture.md).
"""
__version__ = "0.1.0"

# first: the numerical libraries read their CPU pins when they load (core/pins.py)
from .core import pins as _pins

_pins.apply()

from .api import EvaluationResult, evaluate
from .calibrated_classifier import CalibratedClassifier
from .choose import EvaluatorChoice, choose_evaluator

__all__ = ["evaluate", "EvaluationResult", "choose_evaluator", "EvaluatorChoice",
           "CalibratedClassifier", "__version__"]
