"""True-calibration-map estimators on a large hold-out (METHODS.md §6).

Each estimator is fitted *and evaluated* on the hold-out: ``estimate(name,
scores, labels)`` returns c(s_i) at the given hold-out scores. They reuse the
calibration-map families (no second implementation):

- ``isotonic`` (main): the ``isotonic`` family fitted on the hold-out;
- ``es100_flat``: equal-size binning with 100 bins, flat map (mean label);
- ``es100_slope1``: the same bins, slope-1 map s + (ybar_b - sbar_b), clipped
  to [0, 1] **(choice: a true map is a probability, and the metrics check it)**.

New estimators register with ``@TRUTHS.register("name")`` on a function
``(scores, labels) -> c``.
"""
from __future__ import annotations

import numpy as np

from .registry import Registry
from .validation import check_binary

TRUTHS = Registry("truth estimator")


@TRUTHS.register("isotonic")
def _isotonic(s: np.ndarray, y: np.ndarray) -> np.ndarray:
    from .families.isotonic import IsotonicFamily

    return IsotonicFamily().fit(s, y).predict(s)


def _es100(s: np.ndarray, y: np.ndarray, map: str) -> np.ndarray:
    from .families.binning import BinningFamily

    fam = BinningFamily(scheme="es", n_bins=100, selection="fixed", map=map).fit(s, y)
    return np.clip(fam.predict(s), 0.0, 1.0)


@TRUTHS.register("es100_flat")
def _es100_flat(s: np.ndarray, y: np.ndarray) -> np.ndarray:
    return _es100(s, y, "flat")


@TRUTHS.register("es100_slope1")
def _es100_slope1(s: np.ndarray, y: np.ndarray) -> np.ndarray:
    return _es100(s, y, "slope1")


def names() -> list[str]:
    """Every registered truth estimator."""
    return TRUTHS.names()


def estimate(name: str, scores, labels) -> np.ndarray:
    """c(s) at the hold-out ``scores``, estimated on (scores, labels) by ``name``."""
    s, y = check_binary(scores, labels, need_both_classes=False)
    c = np.asarray(TRUTHS.entry(name)(s, y), dtype=np.float64)
    if c.shape != s.shape or not np.isfinite(c).all():
        raise ValueError(f"truth estimator {name!r} returned an invalid map")
    return c
