"""The optional dependencies (pyproject.toml's extras) and one error for a missing one.

``pip install fitontest`` installs the core (numpy, scipy, scikit-learn,
pandas, matplotlib and small pure-Python pieces). What needs more names its
extra here, so that every "not installed" message says what to install.
"""
from __future__ import annotations

import importlib.util

#: extra -> the modules it provides (checked without importing them)
EXTRAS: dict[str, tuple[str, ...]] = {
    "fast": ("numba", "torch"),
    "torch": ("torch",),
    "vision": ("torch",),
    "workflow": ("snakemake", "pyarrow", "scikit_posthocs"),
    # the field's estimators from their own packages (fitontest.families.peers)
    "peers": ("probmetrics", "catboost", "calibration", "relplot", "netcal", "torchmetrics",
              "venn_abers", "probcal"),
}


class MissingExtraError(ImportError):
    """An optional dependency is not installed; the message names the extra."""


def missing(extra: str) -> list[str]:
    """The modules of ``extra`` that are not installed (none are imported)."""
    return [m for m in EXTRAS[extra] if not _installed(m)]


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):    # blocked, or a broken entry in sys.modules
        return False


def require(extra: str, what: str) -> None:
    """Raise :class:`MissingExtraError` when a module of ``extra`` is missing.

    ``what`` names the feature that needs it, e.g. "the PL / PL3 family".
    """
    lacking = missing(extra)
    if lacking:
        raise MissingExtraError(f"{what} needs {' and '.join(lacking)}, not installed: "
                                f"pip install 'fitontest[{extra}]'")
