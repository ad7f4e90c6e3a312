"""Multi-class post-hoc calibrators on K-class logits (METHODS.md §5).

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

from ..registry import Registry, import_submodules

MULTICLASS = Registry("multi-class calibrator")
register = MULTICLASS.register
_loaded = False


def _load() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        import_submodules(__name__, __path__)


def get(name: str, **params):
    """A fresh, unfitted multi-class calibrator registered as ``name``."""
    _load()
    return MULTICLASS.get(name, **params)


def names() -> list[str]:
    """Every registered multi-class calibrator name."""
    _load()
    return MULTICLASS.names()


def entry(name: str):
    _load()
    return MULTICLASS.entry(name)


from .base import MultiClassCalibrator  # noqa: E402  (re-exported for calibrator modules)

__all__ = ["MULTICLASS", "register", "get", "names", "entry", "MultiClassCalibrator"]
