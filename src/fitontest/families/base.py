"""The scikit-learn-style base class every calibration-map family derives from,
its optional capabilities, the adapter for duck-typed evaluators, and the CE
estimates of a fitted family (:func:`estimates`, :func:`used_estimates`)."""
from __future__ import annotations

from typing import Any, Iterable, Iterator, Mapping, NamedTuple

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.utils.validation import check_is_fitted

from fitontest import metrics
from fitontest.core.validation import check_binary, check_scores


class OwnInterval(NamedTuple):
    """A CE interval computed by a family's own package (``CalibrationFamily.own_interval``):
    the estimate it brackets, the bounds, the package's level and resamples, the
    L^p it is of, and the family's plug-in CE of the sample (``target``)."""

    estimate: float
    lo: float
    hi: float
    level: float
    n_boot: int
    p: int
    target: float


class CalibrationFamily(BaseEstimator):
    """Fit on (scores, labels); predict the estimated calibrated probability.

    Subclasses implement ``_fit(s, y)`` (validated float64 arrays) and
    ``_predict(s)``; hyper-parameters only in ``__init__``; fitted state in
    attributes ending in ``_``.

    Class attributes describing the family:

    - ``needs_both_classes``: fitting on one class is an error;
    - ``min_points``: the fewest points ``fit`` accepts;
    - ``hyper_attr``: name of the fitted attribute holding the chosen
      hyper-parameter (``"n_bins_"``, ``"n_pieces_"``), or ``None``;
    - ``provides_map``: ``False`` for estimate-only evaluators (KCE), which
      override :meth:`ce_estimate` and have no meaningful ``predict``;
    - ``estimand``: what the family's CE estimate targets (``"population"``:
      the model's CE; ``"binned"``: the CE of the binned map; ``"smECE"``,
      ``"SKCE"``: their own quantities), reported with every CE interval;
    - ``batched_replicates``: :meth:`bootstrap_replicates` costs far less than
      refitting per replicate (the binning families), so intervals default to
      the full number of replicates for it (``intervals.interval_settings``);
    - ``pointwise_predict``: ``predict``'s value at a score does not depend on
      the other scores of the call, bit for bit (``False`` where a BLAS product
      over the whole call rounds by position: pwlf), so the workflow may score
      a map once per distinct hold-out score (``study.experiment.ScoreGrid``).

    Optional capabilities, declared here with their defaults and overridden by
    the families that have them (callers never probe for them):

    - :meth:`ce_estimate_debiased` -- NaN: no debiased estimate;
    - :meth:`max_calibration_error` -- raises :class:`MissingCapability`;
    - :meth:`bin_statistics` -- raises :class:`MissingCapability` (the
      boundary-aware ``sun`` interval needs the bins);
    - :meth:`bootstrap_replicates` -- refits a clone on every resample;
    - :meth:`own_interval` -- None (families whose own package gives a CE
      interval return it: the peers, docs/methods/03-binary-families.md §3.12).
    """

    needs_both_classes: bool = False
    min_points: int = 2
    hyper_attr: str | None = None
    provides_map: bool = True
    estimand: str = "population"
    batched_replicates: bool = False
    pointwise_predict: bool = True

    def _n_folds_needed(self) -> int | None:
        return getattr(self, "n_folds", None)

    def fit(self, scores, labels):
        s, y = self._check_sample(scores, labels)
        self._fit(s, y)
        self.n_fit_ = s.shape[0]
        return self

    def predict(self, scores) -> np.ndarray:
        check_is_fitted(self, "n_fit_")
        return self._predict(check_scores(scores))

    def ce_estimate(self, scores, p: int = 1) -> float:
        """Plug-in estimate mean |c_hat(s_i) - s_i|^p on ``scores``."""
        return metrics.ce_estimate(scores, self.predict(scores), p=p)

    def _fitting_sample(self, scores) -> np.ndarray:
        """``scores`` checked to be the fitting sample, for families whose CE
        estimate belongs to the sample they were fitted on (kce, smece)."""
        check_is_fitted(self, "n_fit_")
        s = check_scores(scores)
        if s.shape[0] != self.n_fit_:
            raise ValueError(f"{type(self).__name__} is an estimate of its fitting sample "
                             f"({self.n_fit_} points); got {s.shape[0]} scores")
        return s

    def chosen_hyperparameter(self) -> float:
        """The selected complexity (bins, pieces, ...) or NaN if none."""
        check_is_fitted(self, "n_fit_")
        if self.hyper_attr is None:
            return float("nan")
        return float(getattr(self, self.hyper_attr))

    def _check_sample(self, scores, labels):
        """(scores, labels) validated as a fitting sample of this family."""
        return check_binary(scores, labels, min_points=self.min_points,
                            need_both_classes=self.needs_both_classes,
                            n_folds=self._n_folds_needed())

    # ------------------------------------------------ optional capabilities
    def ce_estimate_debiased(self, scores, p: int = 1) -> float:
        """Debiased CE estimate on ``scores``; NaN: this family has none (the
        default; the binning families override it)."""
        return float("nan")

    def max_calibration_error(self) -> float:
        """Maximum calibration error of the fitted map (``p="max"``); the
        default raises :class:`MissingCapability` naming the family."""
        raise MissingCapability(f"the maximum calibration error (p='max') is not defined for "
                                f"{type(self).__name__}: it is defined for the binning "
                                "families (ece_*) and for families that override "
                                "CalibrationFamily.max_calibration_error")

    def bin_statistics(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(counts, mean scores, mean labels) of the fitted bins; the default
        raises :class:`MissingCapability` naming the family."""
        raise MissingCapability(f"{type(self).__name__} has no bins: the 'sun' interval "
                                "needs a binning family (ece_*)")

    def bootstrap_replicates(self, scores, labels, resamples: Iterable[np.ndarray],
                             p: int = 1) -> np.ndarray:
        """Used L^p estimate (:func:`used_estimates`) of this family refitted on
        every resample ``scores[ix], labels[ix]``, shape (R,).

        ``resamples``: an iterable of (k, n) integer index arrays whose rows
        are the resamples in order -- :func:`resample_chunks` (drawn chunk by
        chunk, never R x n at once) or ``[idx]`` for one explicit matrix. The
        default refits a clone per row; families with a cheaper exact path
        override it (binning: from per-code counts).
        """
        s, y = self._check_sample(scores, labels)
        out = []
        for block in resamples:
            for ix in block:
                rep = clone(self).fit(s[ix], y[ix])
                out.append(used_estimates(estimates(rep, s[ix]))[p - 1])
        return np.asarray(out, dtype=np.float64)

    def own_interval(self, scores, labels, *, p: int = 1, level: float = 0.9,
                     n_boot: int = 200, seed=0) -> OwnInterval | None:
        """The CE interval the family's own package gives on (``scores``,
        ``labels``), as an :class:`OwnInterval`; None (the default) where it has
        none. :func:`fitontest.inference.intervals.family_interval` turns it into
        a ``CEInterval`` (the peers, docs/methods/03-binary-families.md §3.12)."""
        return None

    # subclass hooks
    def _fit(self, s: np.ndarray, y: np.ndarray) -> None:  # pragma: no cover
        raise NotImplementedError

    def _predict(self, s: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError


class MissingCapability(ValueError):
    """A family lacks an optional capability a caller asked for (e.g. ``p="max"``)."""


class DuckFamily(CalibrationFamily):
    """A duck-typed evaluator -- any object with ``fit(scores, labels)`` and
    ``ce_estimate(scores, p)`` (and ``predict`` for a map) that does not
    derive from :class:`CalibrationFamily` -- seen as a family.

    Fitting fits a copy (``sklearn.base.clone``, a deep copy for
    non-estimators); the optional capabilities are the wrapped object's
    methods of the same name where it has them, else the defaults (no
    debiased estimate; ``p="max"`` undefined; intervals by refitting). This
    class is the only place that asks a duck-typed object what it has.
    """

    REQUIRED = ("fit", "ce_estimate")

    def __init__(self, estimator: Any = None):
        self.estimator = estimator

    @classmethod
    def missing(cls, obj) -> list[str]:
        """The required methods ``obj`` lacks."""
        return [m for m in cls.REQUIRED if not callable(getattr(obj, m, None))]

    def _fit(self, s, y):
        self.estimator_ = clone(self.estimator, safe=False).fit(s, y)

    def _predict(self, s):
        return np.asarray(self.estimator_.predict(s), dtype=np.float64)

    def ce_estimate(self, scores, p: int = 1) -> float:
        check_is_fitted(self, "n_fit_")
        return float(self.estimator_.ce_estimate(scores, p=p))

    def _own(self, name: str):
        check_is_fitted(self, "n_fit_")
        return getattr(self.estimator_, name, None)

    def ce_estimate_debiased(self, scores, p: int = 1) -> float:
        own = self._own("ce_estimate_debiased")
        return float(own(scores, p=p)) if callable(own) else float("nan")

    def max_calibration_error(self) -> float:
        own = self._own("max_calibration_error")
        if callable(own):
            return float(own())
        raise MissingCapability(f"the maximum calibration error (p='max') is not defined for "
                                f"{type(self.estimator).__name__}: it has no "
                                "max_calibration_error() method")


def resample_chunks(n: int, n_boot: int, seed=0, max_bytes: int = 16 * 2 ** 20
                    ) -> Iterator[np.ndarray]:
    """Bootstrap resamples of ``range(n)`` as (k, n) index chunks, rows in order.

    One generator ``numpy.random.default_rng(seed)`` draws the chunks in turn
    (at most ``max_bytes`` each), so the rows are exactly those of one
    ``default_rng(seed).integers(0, n, size=(n_boot, n))`` call
    (:func:`fitontest.inference.intervals.bootstrap_indices`) without holding them all.
    """
    rng = np.random.default_rng(seed)
    rows = max(1, int(max_bytes // (8 * max(n, 1))))
    for start in range(0, int(n_boot), rows):
        yield rng.integers(0, n, size=(min(rows, int(n_boot) - start), n))


# ------------------------------------------------------------ a fitted family's estimates
def used_estimates(est: Mapping[str, float]) -> tuple[float, float]:
    """The (L1, L2) estimates the CE tables use: debiased where available."""
    l1 = est["ce_est_debiased"] if np.isfinite(est["ce_est_debiased"]) else est["ce_est"]
    l2 = est["ce_est_debiased_sq"] if np.isfinite(est["ce_est_debiased_sq"]) else est["ce_est_sq"]
    return l1, l2


def estimates(fam, s: np.ndarray) -> dict[str, float]:
    """CE estimates of a fitted evaluator on its fitting scores ``s``: ``ce_est``,
    ``ce_est_sq`` and the debiased pair (NaN where the family has none)."""
    # the family's own estimate: the plug-in mean |c_hat(s_i) - s_i|^p for most
    # (CalibrationFamily.ce_estimate), smECE for smece, the SKCE for kce
    return {"ce_est": float(fam.ce_estimate(s, p=1)),
            "ce_est_sq": float(fam.ce_estimate(s, p=2)),
            "ce_est_debiased": float(fam.ce_estimate_debiased(s, p=1)),
            "ce_est_debiased_sq": float(fam.ce_estimate_debiased(s, p=2))}
