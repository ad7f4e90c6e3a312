"""Binary calibration-map families: one registry for calibrators and evaluators.

Every module in this package is imported on first use, so a new family is one
module with ``@register("name")`` on its class.
"""
from __future__ import annotations

from ..registry import Registry, import_submodules

FAMILIES = Registry("calibration-map family")
register = FAMILIES.register
_loaded = False


def _load() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        import_submodules(__name__, __path__)


def get(name: str, **params):
    """A fresh, unfitted family estimator registered as ``name``."""
    _load()
    return FAMILIES.get(name, **params)


def names() -> list[str]:
    """Every registered family name."""
    _load()
    return FAMILIES.names()


def entry(name: str):
    _load()
    return FAMILIES.entry(name)


from .base import CalibrationFamily  # noqa: E402  (re-exported for family modules)

__all__ = ["FAMILIES", "register", "get", "names", "entry", "CalibrationFamily"]
