"""True-calibration-map estimators on a large hold-out (docs/methods/06-truth-and-scores.md §6).

Each estimator is fitted *and evaluated* on the hold-out: ``estimate(name,
scores, labels)`` returns c(s_i) at the given hold-out scores. They reuse the
calibration-map families (no second implementation):

- ``isotonic`` (main): the ``isotonic`` family fitted on the hold-out;
- ``es100_flat``: equal-size binning with 100 bins, flat map (mean label);
- ``es100_slope1``: the same bins, slope-1 map s + (ybar_b - sbar_b), clipped
  to [0, 1] **(choice: a true map is a probability, and the metrics check it)**.

- ``es100_flat_paper`` / ``es100_slope1_paper``: the authors' ES-100 truths
  (Experiments_Pseudo/gen_cgt.py; docs/differences.md): the binning family's
  ``variant="paper"`` (tied scores split between bins by position, the map
  evaluated by the edges), and the slope-1 map is *not* clipped.

- ``posterior``: isotonic regression of the *known* event posterior
  q(x) = P(Y = 1 | x) on the scores, since c(s) = E[Y | S = s] = E[q(X) | S = s].
  Same estimator as ``isotonic`` with q in place of the labels, so far less
  variance; only for sources with a known posterior (the procedural images).

New estimators register with ``@TRUTHS.register("name")`` on a function
``(scores, labels) -> c``; one registered with ``needs_posterior=True`` is
called as ``(scores, labels, posterior)``. One registered with
``order_free=True`` declares that its value at a point does not depend on the
order of the points (isotonic regression sorts them itself): :func:`estimate_all`
then hands it the points sorted once by score, on which scikit-learn's own
(score, label) sort runs far faster (issue 37: a third of the truth stage's
CPU), and puts its values back in the input order. That sort still decides
the order, so the values are the same, bit for bit (tests/test_truth.py).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from fitontest.core.registry import Registry
from fitontest.core.validation import check_binary, check_scores

TRUTHS = Registry("truth estimator")


@TRUTHS.register("isotonic", order_free=True)
def _isotonic(s: np.ndarray, y: np.ndarray) -> np.ndarray:
    from fitontest.families.isotonic import IsotonicFamily

    return IsotonicFamily().fit(s, y).predict(s)


def _es100(s: np.ndarray, y: np.ndarray, map: str, variant: str = "ours") -> np.ndarray:
    from fitontest.families.binning import BinningFamily

    fam = BinningFamily(scheme="es", n_bins=100, selection="fixed", map=map,
                        variant=variant).fit(s, y)
    c = fam.predict(s)
    return c if variant == "paper" else np.clip(c, 0.0, 1.0)


@TRUTHS.register("es100_flat")
def _es100_flat(s: np.ndarray, y: np.ndarray) -> np.ndarray:
    return _es100(s, y, "flat")


@TRUTHS.register("es100_slope1")
def _es100_slope1(s: np.ndarray, y: np.ndarray) -> np.ndarray:
    return _es100(s, y, "slope1")


@TRUTHS.register("es100_flat_paper")
def _es100_flat_paper(s: np.ndarray, y: np.ndarray) -> np.ndarray:
    return _es100(s, y, "flat", "paper")


@TRUTHS.register("es100_slope1_paper")
def _es100_slope1_paper(s: np.ndarray, y: np.ndarray) -> np.ndarray:
    return _es100(s, y, "slope1", "paper")


@TRUTHS.register("posterior", needs_posterior=True, order_free=True)
def _posterior(s: np.ndarray, y: np.ndarray, posterior: np.ndarray) -> np.ndarray:
    from sklearn.isotonic import IsotonicRegression

    iso = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip")
    return iso.fit(s, posterior).predict(s)


def needs_posterior(name: str) -> bool:
    """Whether estimator ``name`` needs the known event posterior."""
    return bool(TRUTHS.defaults(name).get("needs_posterior", False))


def order_free(name: str) -> bool:
    """Whether estimator ``name``'s values do not depend on the order of the points."""
    return bool(TRUTHS.defaults(name).get("order_free", False))


def names() -> list[str]:
    """Every registered truth estimator."""
    return TRUTHS.names()


def estimate(name: str, scores, labels, posterior=None) -> np.ndarray:
    """c(s) at the hold-out ``scores``, estimated on (scores, labels) by ``name``.

    ``posterior`` (the known P(Y = 1 | x) of each hold-out point) is required
    by estimators that need it and ignored by the others.
    """
    return estimate_all([name], scores, labels, posterior)[name]


def estimate_all(names: Sequence[str], scores, labels, posterior=None) -> dict[str, np.ndarray]:
    """:func:`estimate` of every estimator in ``names`` on the same points,
    the points sorted by score once for all the order-free ones."""
    s, y = check_binary(scores, labels, need_both_classes=False)
    q = None
    if any(needs_posterior(n) for n in names):
        if posterior is None:
            need = [n for n in names if needs_posterior(n)]
            raise ValueError(f"truth estimator {need[0]!r} needs the known posterior of the "
                             "hold-out, which this data source does not provide")
        q = check_scores(posterior, "posterior")
        if q.shape != s.shape:
            raise ValueError(f"posterior has {q.shape[0]} values for {s.shape[0]} scores")
    if any(order_free(n) for n in names):
        order = np.argsort(s)
        sorted_args = (s[order], y[order], None if q is None else q[order])
    maps = {}
    for name in names:
        args = sorted_args if order_free(name) else (s, y, q)
        c = TRUTHS.entry(name)(*(args if needs_posterior(name) else args[:2]))
        c = np.asarray(c, dtype=np.float64)
        if c.shape != s.shape or not np.isfinite(c).all():
            raise ValueError(f"truth estimator {name!r} returned an invalid map")
        if order_free(name):
            c[order] = c.copy()
        maps[name] = c
    return maps
