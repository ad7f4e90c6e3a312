"""fitontest: evaluate classifier calibration in the fit-on-test view.

A calibration-map family fitted on validation data is a post-hoc calibrator;
fitted on test data it is an evaluator. Both come from one registry:

>>> from fitontest import families, metrics
>>> fam = families.get("ece_es15").fit(scores, labels)      # doctest: +SKIP
>>> metrics.ce_estimate(scores, fam.predict(scores), p=1)   # doctest: +SKIP

The front door for a model's K-class predictions:

>>> import fitontest
>>> fitontest.evaluate(probs, labels, evaluator="smece")    # doctest: +SKIP
>>> fitontest.CalibratedClassifier(fitted_clf, method="temps").fit(X_val, y_val)  # doctest: +SKIP
"""
__version__ = "0.1.0"

from . import _public

_public.install()

# Loaded on first use (PEP 562): `import fitontest` (every workflow job does)
# stays light, and no name shadows a submodule.
_LAZY = {
    "evaluate": ("api", "evaluate"),
    "EvaluationResult": ("api", "EvaluationResult"),
    "CalibratedClassifier": ("calibrated_classifier", "CalibratedClassifier"),
}


def __getattr__(name):
    import importlib

    if name in _LAZY:
        module, attr = _LAZY[name]
        return getattr(importlib.import_module(f".{module}", __name__), attr)
    if name in _public.PUBLIC:  # fitontest.families etc. (docs/architecture.md)
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'fitontest' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_LAZY, *_public.PUBLIC])
