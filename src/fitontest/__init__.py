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
modules at the top (``families``, ``multiclass``, ``metrics``, ``tasks``,
``inference``, ``data``, ``models``); the workflow's layers sit beneath
(``core``, ``vision``, ``study``, ``report``; docs/architecture.md). Every
public name has one home; an older address warns and names it
(:data:`fitontest.core.moved.MOVED`). The command line is the separate
package ``fitontest_cli``.
"""
__version__ = "0.1.0"

# first: the numerical libraries read their CPU pins when they load (core/pins.py)
from .core import pins as _pins

_pins.apply()

from importlib import import_module as _import_module  # noqa: E402  (after the pins)

#: the front door's names, loaded on first use (PEP 562): ``import fitontest``
#: stays cheap for the workflow, which parses the Snakefile once per job
_FRONT_DOOR = {"evaluate": ".api", "EvaluationResult": ".results",
               "CalibratedClassifier": ".calibrated_classifier",
               "choose_evaluator": ".choose", "EvaluatorChoice": ".inference.choose"}

__all__ = ["evaluate", "EvaluationResult", "choose_evaluator", "EvaluatorChoice",
           "CalibratedClassifier", "__version__"]


def __getattr__(name: str):
    if name in _FRONT_DOOR:
        value = getattr(_import_module(_FRONT_DOOR[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'fitontest' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_FRONT_DOOR})
