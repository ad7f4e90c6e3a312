"""Binary calibration-map families: one registry for calibrators and evaluators.

Every module in this package is imported on first use, so a new family is one
module with ``@register("name")`` on its class. :func:`resolve` turns what a
user passes as an evaluator (a name, a family, a duck-typed object) into a
family for ``evaluate``, the intervals, the tests and the CLI.
"""
from __future__ import annotations

from typing import Any, Mapping

from sklearn.base import clone

from fitontest.core.registry import Registry
from .base import CalibrationFamily, DuckFamily, MissingCapability  # also for the family modules

FAMILIES = Registry("calibration-map family", package=__name__, path=__path__,
                    base=CalibrationFamily)
register = FAMILIES.register
get = FAMILIES.get        # a fresh, unfitted family estimator registered as ``name``
names = FAMILIES.names    # every registered family name
entry = FAMILIES.entry    # the registered class


def resolve(evaluator, params: Mapping[str, Any] | None = None) -> tuple[str, CalibrationFamily]:
    """(name, fresh unfitted family) for ``evaluator``:

    - a registered name: the family built with ``params`` (an unknown name is
      the registry's :class:`~fitontest.core.registry.UnknownNameError`, a
      ValueError that suggests close names);
    - a :class:`CalibrationFamily` instance: an unfitted clone with ``params``
      set (the caller's object is never modified); its name is the class name;
    - any other object with ``fit`` and ``ce_estimate``: wrapped in a
      :class:`~fitontest.families.base.DuckFamily` (``params`` set on a copy
      of it), so it works wherever a family does.
    """
    params = dict(params or {})
    if isinstance(evaluator, str):
        return evaluator, get(evaluator, **params)
    if isinstance(evaluator, type):
        raise ValueError(f"an evaluator must be an instance, got the class {evaluator.__name__} "
                         f"(pass {evaluator.__name__}() or a registered name)")
    if isinstance(evaluator, CalibrationFamily):
        return type(evaluator).__name__, clone(evaluator).set_params(**params)
    missing = DuckFamily.missing(evaluator)
    if missing:
        raise ValueError("an evaluator must be a registered family name, a CalibrationFamily "
                         "instance or an object with fit() and ce_estimate() methods; got "
                         f"{type(evaluator).__name__}, which lacks {', '.join(missing)}")
    inner = clone(evaluator, safe=False)
    if params:
        inner.set_params(**params)
    return type(evaluator).__name__, DuckFamily(inner)


__all__ = ["FAMILIES", "register", "get", "names", "entry", "resolve", "CalibrationFamily",
           "DuckFamily", "MissingCapability"]
