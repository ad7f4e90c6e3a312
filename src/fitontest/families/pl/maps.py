"""The map of one fitted PL (probability space) or PL3 (logit space)
parameter set: knots and heights to calibrated probabilities
(docs/methods/04-pl.md §4.1).

Its own module: the family (``family.py``) and the batched trainer
(``trainer.py``) both evaluate maps, and the trainer is loaded by the family.
"""
from __future__ import annotations

import numpy as np

from fitontest.core.validation import logit


def evaluate_map(space: str, knots: np.ndarray, heights: np.ndarray, s: np.ndarray,
                 x: np.ndarray | None = None) -> np.ndarray:
    """Calibrated probabilities of one PL (``space="prob"``) or PL3
    (``"logit"``) map at scores ``s``; ``x`` may pass a precomputed
    ``logit(s)`` for PL3."""
    if space == "prob":
        return interp_knots(s, knots, heights)
    from scipy.special import expit

    return expit(interp_knots(logit(s) if x is None else x, knots, heights))


def interp_knots(x: np.ndarray, knots: np.ndarray, heights: np.ndarray) -> np.ndarray:
    """``np.interp(x, knots, heights)``, made a function of x where rounding
    leaves the knots out of order.

    In exact arithmetic a map's knots are ordered (``0 = t_0 <= ... <=
    t_{k+1} = 1``), but ``cumsum(softmax(beta))`` can reach 1 + 2^-52 before the
    end knot, set to exactly 1.0. np.interp needs ordered knots: at a score on
    or past such a knot (a score of exactly 1.0 on the 1.0 knot) its answer
    depends on where its search starts, i.e. on the point before it in the
    array -- one prediction gave the same score two values. Those points get
    the map of the ordered knots (each knot lowered to the smallest knot after
    it), the height of the last knot at or below x on a knot; every other
    point keeps np.interp's value, bit for bit."""
    v = np.interp(x, knots, heights)
    ordered = np.minimum.accumulate(knots[::-1])[::-1]
    past = np.flatnonzero(ordered < knots)                 # knots out of order
    repeated = ordered[1:][ordered[1:] == ordered[:-1]]
    if past.size == 0 and repeated.size == 0:
        return v
    at = np.isin(x, repeated)
    for k in past:
        at |= (x >= ordered[k]) & (x <= knots[k])
    xa = x[at]
    i = np.clip(np.searchsorted(ordered, xa, side="right") - 1, 0, knots.size - 1)
    j = np.minimum(i + 1, knots.size - 1)
    width = ordered[j] - ordered[i]
    inside = width > 0
    frac = np.zeros_like(xa)
    frac[inside] = (xa[inside] - ordered[i][inside]) / width[inside]
    v[at] = heights[i] + (heights[j] - heights[i]) * np.clip(frac, 0.0, 1.0)
    return v
