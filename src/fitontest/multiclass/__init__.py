"""Multi-class post-hoc calibrators on K-class logits (docs/methods/05-multiclass.md §5).

Each calibrator is a scikit-learn-style estimator: ``fit(logits, labels)``
returns ``self``; ``predict_proba(logits)`` returns calibrated class
probabilities (float64, rows sum to 1). Every module in this package is
imported on first use, so a new calibrator is one module with
``@register("name")`` on its class:

>>> from fitontest import multiclass
>>> cal = multiclass.get("temps").fit(val_logits, val_labels)   # doctest: +SKIP
>>> probs = cal.predict_proba(holdout_logits)                   # doctest: +SKIP

``"none"`` is the identity (softmax of the logits): the uncalibrated model is
a calibrator too, so the workflow treats every calibrator uniformly.
"""
from __future__ import annotations

from fitontest.core.registry import Registry
from .base import MultiClassCalibrator  # also re-exported for the calibrator modules

MULTICLASS = Registry("multi-class calibrator", package=__name__, path=__path__,
                      base=MultiClassCalibrator)
register = MULTICLASS.register
get = MULTICLASS.get        # a fresh, unfitted calibrator registered as ``name``
names = MULTICLASS.names    # every registered calibrator name
entry = MULTICLASS.entry    # the registered class


__all__ = ["MULTICLASS", "register", "get", "names", "entry", "MultiClassCalibrator"]
