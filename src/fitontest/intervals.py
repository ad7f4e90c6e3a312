"""Bootstrap intervals for the CE estimate of any calibration family (docs/methods.md §11.1).

:func:`ce_interval` resamples the test points with replacement ``n_boot`` times,
refits the family on every resample and takes its *used* estimate (debiased
where the family has ``ce_estimate_debiased``, as
:func:`fitontest.families.base.used_estimates`).

Methods (``method=``), with theta_hat the used estimate on the full sample,
q_a the a-quantile of the replicates and alpha = 1 - level:

- ``"basic"`` (default): ``[theta_hat - (q_{1-alpha/2} - theta_0),
  theta_hat - (q_{alpha/2} - theta_0)]``. The replicates' spread around
  theta_0, the target of the estimator in the bootstrap world, stands in for
  the estimator's error. theta_0 is ``T(F_n)``, the family's *plug-in* CE of
  the full sample (its map on the empirical distribution): for plug-in
  families theta_0 = theta_hat and this is the textbook basic interval
  ``2 theta_hat - q``; for the debiased binned CE it is the binned plug-in,
  which the resamples' debiased estimates centre on. The basic interval thus
  undoes the upward bias of CE estimates near zero, where a percentile
  interval sits wholly above the truth.
- ``"percentile"``: ``[q_{alpha/2}, q_{1-alpha/2}]``; correct only when the
  estimator is unbiased with a symmetric error, which the plug-in CE is not
  near zero. Offered to measure that (tests/test_intervals.py reports the
  coverage of both in the synthetic setting).

Measured coverage of the true CE (ece_es15, n = 1000, 200 synthetic samples
per level over the five shapes, nominal 0.9; tests/test_intervals.py):

=========  =====  =====  =====  =====
CE level   0      0.02   0.05   0.1
basic      0.59   0.83   0.835  0.88
percentile 0.0    0.15   0.88   0.91
=========  =====  =====  =====  =====

``basic`` is the default: near-calibrated models, the regime where CE
intervals matter, are where the percentile interval fails outright. Neither
reaches 0.9 near 0: the debiased L1 estimate is still biased at CE = 0, and
a bootstrap world whose CE is the plug-in value (> 0) cannot see a bias that
exists only near 0. Binning families also target the binned CE, slightly
below the true CE of a curved map.

BCa is not offered: its acceleration needs a jackknife (n refits), more
than the bootstrap itself for every refitting family. Both ends are clipped
to >= 0 (a CE is non-negative), so an interval never excludes 0 by a
negative upper end alone; the estimate itself is not clipped.

Cost: binning families (``BinningFamily``: fixed B, sweep, CV) compute all
replicates at once from per-resample bin counts
(:mod:`fitontest.binning_bootstrap`, no refit); every other family is refitted
per replicate (clone + fit), i.e. ``n_boot`` times its fit cost -- for PL/PL3
(1--9 s per fit, README cost table) that is minutes per interval, so the
workflow lets each family set its own number of replicates
(``per_family_n_boot``, 0 disables; config/README.md).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
from sklearn.base import clone

from . import families
from .families.base import estimates, resample_chunks, used_estimates
from fitontest.core.validation import check_binary

METHODS = ("basic", "percentile")


@dataclass(frozen=True)
class CEInterval:
    """A CE estimate with its bootstrap interval [lo, hi] at nominal ``level``.

    ``target`` is the plug-in CE of the full sample (theta_0 of the basic
    method); ``n_boot`` the replicates drawn.
    """

    estimate: float
    lo: float
    hi: float
    level: float
    n_boot: int
    method: str
    p: int = 1
    target: float = float("nan")

    def contains(self, value: float) -> bool:
        return bool(self.lo <= value <= self.hi)


def _check_settings(level, n_boot, method, p) -> None:
    if isinstance(level, bool) or not isinstance(level, (int, float)) \
            or not 0.0 < float(level) < 1.0:
        raise ValueError(f"level must be a number in (0, 1), got {level!r}")
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 1:
        raise ValueError(f"n_boot must be an integer >= 1, got {n_boot!r}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if p not in (1, 2):
        raise ValueError(f"p must be 1 or 2, got {p!r}")


def _family(estimator_or_name, params: Mapping[str, Any] | None = None):
    return families.resolve(estimator_or_name, params)[1]


def bootstrap_indices(n: int, n_boot: int, seed) -> np.ndarray:
    """(n_boot, n) resample indices, row r the r-th resample with replacement."""
    return np.random.default_rng(seed).integers(0, n, size=(n_boot, n))


def refit_replicates(fam, s: np.ndarray, y: np.ndarray, idx: np.ndarray,
                     p: int = 1) -> np.ndarray:
    """Used L^p estimate of ``fam`` refitted on every resample (the generic path)."""
    out = np.empty(idx.shape[0])
    for r, ix in enumerate(idx):
        rep = clone(fam).fit(s[ix], y[ix])
        out[r] = used_estimates(estimates(rep, s[ix]))[p - 1]
    return out


def replicate_estimates(fam, s: np.ndarray, y: np.ndarray, idx, p: int = 1) -> np.ndarray:
    """Used L^p estimate on every resample: the family's
    :meth:`~fitontest.families.base.CalibrationFamily.bootstrap_replicates`
    (binning: from per-code counts, no refit). ``idx``: an (R, n) index
    matrix, or an iterable of (k, n) chunks such as
    :func:`fitontest.families.base.resample_chunks`."""
    return fam.bootstrap_replicates(s, y, [idx] if isinstance(idx, np.ndarray) else idx, p=p)


def interval_from(replicates: np.ndarray, estimate: float, target: float, level: float,
                  method: str) -> tuple[float, float]:
    """(lo, hi) of ``method`` from the replicates (module docstring), clipped to >= 0."""
    alpha = 1.0 - float(level)
    q_lo, q_hi = np.quantile(replicates, [alpha / 2.0, 1.0 - alpha / 2.0])
    if method == "percentile":
        lo, hi = q_lo, q_hi
    else:
        lo, hi = estimate - (q_hi - target), estimate - (q_lo - target)
    return max(float(lo), 0.0), max(float(hi), 0.0)


def bootstrap_interval(fitted, scores, labels, est: Mapping[str, float] | None = None, *,
                       p: int = 1, level: float = 0.9, n_boot: int = 200, seed=0,
                       method: str = "basic") -> CEInterval:
    """Interval around a family already fitted on (scores, labels).

    ``est`` is :func:`fitontest.families.base.estimates` of ``fitted`` on
    ``scores`` (computed when None); callers that scored the fit already pass
    it to save the work.
    """
    _check_settings(level, n_boot, method, p)
    s, y = check_binary(scores, labels, min_points=fitted.min_points,
                        need_both_classes=fitted.needs_both_classes,
                        n_folds=fitted._n_folds_needed())
    est = estimates(fitted, s) if est is None else est
    estimate = float(used_estimates(est)[p - 1])
    target = float(est["ce_est"] if p == 1 else est["ce_est_sq"])
    reps = replicate_estimates(fitted, s, y, resample_chunks(s.size, int(n_boot), seed), p=p)
    lo, hi = interval_from(reps, estimate, target, level, method)
    return CEInterval(estimate=estimate, lo=lo, hi=hi, level=float(level), n_boot=int(n_boot),
                      method=method, p=p, target=target)


def ce_interval(estimator_or_name, scores, labels, *, p: int = 1, level: float = 0.9,
                n_boot: int = 200, seed=0, method: str = "basic",
                params: Mapping[str, Any] | None = None) -> CEInterval:
    """CE estimate of a family on (scores, labels) with a bootstrap interval.

    ``estimator_or_name``: a registered family name (constructed with
    ``params``) or an unfitted family instance (cloned, never modified).
    ``seed``: an int or a sequence of ints (``numpy.random.default_rng``).
    See the module docstring for the methods and their cost.
    """
    _check_settings(level, n_boot, method, p)
    fam = _family(estimator_or_name, params).fit(scores, labels)
    return bootstrap_interval(fam, scores, labels, p=p, level=level, n_boot=n_boot, seed=seed,
                              method=method)


def batched(name: str) -> bool:
    """Whether family ``name``'s replicates are computed in one pass (binning)."""
    return bool(families.entry(name).batched_replicates)


def interval_settings(name: str, config: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Keyword arguments of :func:`bootstrap_interval` for family ``name`` from an
    ``interval`` config block, or None where it is disabled.

    Replicates: ``per_family_n_boot[name]`` if given, else ``n_boot`` for
    batched (binning) families and ``refit_n_boot`` for every other family
    (which costs that many fits); 0 disables.
    """
    if not config:
        return None
    per_family = config.get("per_family_n_boot") or {}
    if name in per_family:
        n_boot = per_family[name]
    else:
        n_boot = config.get("n_boot", 200) if batched(name) else config.get("refit_n_boot", 0)
    if int(n_boot) <= 0:
        return None
    return {"level": float(config.get("level", 0.9)), "n_boot": int(n_boot),
            "method": config.get("method", "basic")}


__all__ = ["CEInterval", "METHODS", "ce_interval", "bootstrap_interval", "bootstrap_indices",
           "replicate_estimates", "refit_replicates", "interval_from", "interval_settings",
           "batched"]
