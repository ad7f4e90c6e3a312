"""Binary calibration-map families: one registry for calibrators and evaluators.

Every module in this package is imported on first use, so a new family is one
module with ``@register("name")`` on its class.
"""
from __future__ import annotations

from fitontest.core.registry import Registry
from .base import CalibrationFamily  # also re-exported for the family modules

FAMILIES = Registry("calibration-map family", package=__name__, path=__path__,
                    base=CalibrationFamily)
register = FAMILIES.register
get = FAMILIES.get        # a fresh, unfitted family estimator registered as ``name``
names = FAMILIES.names    # every registered family name
entry = FAMILIES.entry    # the registered class


__all__ = ["FAMILIES", "register", "get", "names", "entry", "CalibrationFamily"]
