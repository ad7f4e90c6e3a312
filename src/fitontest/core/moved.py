"""Names whose one home moved: the older address keeps working and warns.

A minimal stand-in for helper "names"' module of the same interface (issue 58;
the lead merges the two tables): :data:`MOVED` maps an old module to
``{name: home module}``; a shim module ends in
``__getattr__, __dir__ = moved(__name__)`` (PEP 562, no import hook), and an
old name, once used, is fetched from its home with a DeprecationWarning.
"""
from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from typing import Any

_TASKS = "fitontest.tasks"

#: old module -> {public name: its home module}
MOVED: dict[str, dict[str, str]] = {
    # the multi-class -> binary reduction is the library's (issue 58); the study keeps
    # event_posterior. check_probs reads rows by predictions.read's rule now (the
    # ROW_SUM_ATOL rule that raised where read renormalises is gone)
    "fitontest.study.tasks": {
        **dict.fromkeys(("CONFIDENCE", "ONE_VS_REST", "TASKS", "check_probs", "confidence",
                         "one_vs_rest", "reduce", "reduce_all", "task_kind",
                         "validate_tasks"), _TASKS),
        "ROW_SUM_ATOL": "fitontest.core.predictions"},
}


def moved(module: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """(``__getattr__``, ``__dir__``) of ``module``, whose old names :data:`MOVED`
    maps to their homes."""
    homes = MOVED[module]

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warnings.warn(f"{module}.{name} is deprecated: its home is {home} (use "
                      f"{home}.{name})", DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(home), name)

    def __dir__() -> list[str]:
        return sorted(set(vars(importlib.import_module(module))) | set(homes))

    return __getattr__, __dir__


__all__ = ["MOVED", "moved"]
