"""Intervals for the CE estimate of any calibration family (docs/methods/11-intervals.md §11.1).

:func:`ce_interval` returns a :class:`CEInterval`: the family's *used*
estimate (debiased where the family has ``ce_estimate_debiased``, as
:func:`fitontest.families.base.used_estimates`) with an interval [lo, hi] at
nominal ``level``, the method that built it, the CE it targets
(``estimand``) and whether its coverage was measured to hold (``valid``).

Methods (``method=``; alpha = 1 - level, theta_hat the used estimate):

- ``"inverted"`` (estimand: the population CE E|S - c(S)|^p): test inversion
  over model-based bootstrap worlds (:mod:`fitontest.inference.worlds`, docs/methods/14-chooser.md
  §14): world t has the true map c_t(s) = clip(s + t g, 0, 1), g the gap of the
  reference map, and known CE theta(t) = mean |c_t(s_i) - s_i|^p; its scores
  are resampled and its labels redrawn as Bernoulli(c_t(s)) (world 0 is
  consistency resampling: labels ~
  Bernoulli(s)), the family is refitted (batched for binning families) and
  its used estimate recorded, with common random numbers across worlds. The
  interval holds every theta(t) whose world puts theta_hat inside its central
  1 - k alpha range (k = :data:`INVERTED_ALPHA_SCALE`, calibrated on the
  coverage benchmark): lo = 0 exactly when world 0 does not reject calibration.
  Any bias of the estimator -- upward near 0, downward for coarse or
  cross-validated bins on curved maps -- is in the worlds, so it is undone.
  Cost: ``len(WORLD_T)`` worlds of ``n_boot // 2`` replicates each.
- ``"sun"`` (estimand: the binned CE of the family's fitted bins; binning
  families): the boundary-aware normal interval of Sun, Chaudhari, Barnett &
  Dobriban 2024 for the debiased squared binned CE, whose variance adds the
  miscalibrated (rate sqrt n) and the calibrated (rate n) terms, so it stays
  valid at CE = 0; the lower end is clipped at 0. p = 1: the binned L1 CE
  lies between the binned squared CE and its square root (|gap| <= 1,
  Jensen), so [lo_2, sqrt(hi_2)] of the p = 2 interval. No resampling.
- ``"basic"``: ``[theta_hat - (q_{1-alpha/2} - theta_0), theta_hat - (q_{alpha/2} - theta_0)]``
  of the nonparametric bootstrap replicates (quantiles q), theta_0 the
  family's plug-in CE of the full sample; ``"percentile"``:
  ``[q_{alpha/2}, q_{1-alpha/2}]``. Both target the family's own functional
  (binned CE for binning families) and both under-cover near CE = 0
  (benchmarks/measured/interval_coverage.md); kept to measure that.
- ``"auto"`` (default): per (family, p) the method of :data:`AUTO` (chosen
  from the coverage benchmark), ``"inverted"`` for unlisted families.

``valid``: read from the measured domain that benchmarks/coverage_checks/interval_auto.py
writes from benchmarks/measured/interval_coverage*.md
(``fitontest/inference/measured/intervals.json``, :mod:`fitontest.inference.domains`):
None -- "coverage not measured here", said in ``validity_note`` -- where the
(family, method, p), the level (0.9 only), n (the cells' range) or the
replicates (``n_boot`` >= 100) lie outside what was measured; False where the
worst measured cell is significantly (2 Monte Carlo SEs) below 0.87 (an
:class:`IntervalCoverageWarning` is issued); True otherwise. Both ends are clipped to
[0, mean max(s, 1 - s)^p] (no calibration map is further from the scores);
the estimate itself is not.

Cost: binning families (``BinningFamily``) compute all replicates at once
(:mod:`fitontest.families.bincounts`), isotonic and smece from counts (no
refit); every other family is refitted per replicate unless it overrides
``bootstrap_replicates``, so the workflow lets each family set its own number
of replicates (``per_family_n_boot``, 0 disables).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
from sklearn.base import clone

from .. import families
from ..families.base import estimates, resample_chunks, used_estimates
from fitontest.metrics import check_p, debiased_bin_terms
from fitontest.core.validation import check_binary, check_option
# the worlds of "inverted" (reference map, scaled gaps, label redraws) are one
# module with the evaluator chooser's (docs/methods/14-chooser.md §14)
from .worlds import largest_ce, reference_gap, world_replicates, world_reps

METHODS = ("auto", "inverted", "sun", "basic", "percentile")

# "auto": (family, p) -> method, derived by benchmarks/coverage_checks/interval_auto.py from
# benchmarks/measured/interval_coverage.md (about 400 samples per cell) and
# interval_coverage_study.md: the narrowest of inverted and sun with no cell more than
# one MC SE below 87 % at level 0.9 (sun at p = 1 only where its p = 2 interval
# qualifies; none does), else the one covering most; docs/methods/11-intervals.md §11.3.
AUTO: dict[tuple[str, int], str] = {
    (name, p): "inverted"
    for name in ("ece_es15", "ece_es_cv", "ece_es_sweep", "ece_ew15", "ece_ew_cv",
                 "ece_ew_sweep", "isotonic", "smece")
    for p in (1, 2)
}

AUTO_DEFAULT = "inverted"

# "inverted" reads the worlds' ranges at level 1 - k (1 - level): ranges from n_boot / 2
# replicates and worlds shaped like the data's noisy reference make k = 1 cover a
# few points short; k is the largest of {0.6, 0.7, 0.8, 1} with no p = 1 cell short
# of 87 % on both coverage benchmarks (synthetic worlds and the study's own score
# laws; docs/methods/11-intervals.md §11.1, §11.3). 0.7 was short on the study's one-vs-rest laws.
INVERTED_ALPHA_SCALE = 0.6

class IntervalCoverageWarning(UserWarning):
    """The interval's method was measured to under-cover for this family."""


@dataclass(frozen=True)
class CEInterval:
    """A CE estimate with its interval [lo, hi] at nominal ``level``.

    ``method``: the method that built it (``"auto"`` resolved); ``estimand``:
    ``"population"`` (E|S - c(S)|^p of the model) or ``"binned"`` (the CE of
    the family's bins) or the family's own functional (``"smECE"``,
    ``"SKCE"``); ``valid``: coverage measured to hold (module docstring);
    ``target``: the family's plug-in CE of the full sample; ``n_boot``: the
    replicates drawn in all; ``validity_note``: why ``valid`` is what it is (the
    measured file, or what lies outside its domain).
    """

    estimate: float
    lo: float
    hi: float
    level: float
    n_boot: int
    method: str
    p: int = 1
    target: float = float("nan")
    estimand: str = "population"
    valid: bool | None = None
    validity_note: str = ""

    def contains(self, value: float) -> bool:
        return bool(self.lo <= value <= self.hi)


def _check_settings(level, n_boot, method, p) -> None:
    if isinstance(level, bool) or not isinstance(level, (int, float)) \
            or not 0.0 < float(level) < 1.0:
        raise ValueError(f"level must be a number in (0, 1), got {level!r}")
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 1:
        raise ValueError(f"n_boot must be an integer >= 1, got {n_boot!r}")
    check_option("method", method, METHODS)
    check_p(p)


def _family(estimator_or_name, params: Mapping[str, Any] | None = None):
    return families.resolve(estimator_or_name, params)[1]


def registered_name(fam) -> str | None:
    """The registered name whose defaults equal ``fam``'s parameters, or None."""
    params = fam.get_params()
    for name in families.names():
        if families.entry(name) is type(fam) and families.get(name).get_params() == params:
            return name
    return None


def resolve_method(method: str, name: str | None, p: int) -> str:
    """The method ``"auto"`` stands for with family ``name`` (others unchanged)."""
    if method != "auto":
        return method
    return AUTO.get((name, p), AUTO_DEFAULT) if name is not None else AUTO_DEFAULT


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
    """(lo, hi) of ``basic`` or ``percentile`` from the replicates, clipped to >= 0."""
    alpha = 1.0 - float(level)
    q_lo, q_hi = np.quantile(replicates, [alpha / 2.0, 1.0 - alpha / 2.0])
    if method == "percentile":
        lo, hi = q_lo, q_hi
    else:
        lo, hi = estimate - (q_hi - target), estimate - (q_lo - target)
    return max(float(lo), 0.0), max(float(hi), 0.0)


# ------------------------------------------------------------------ sun
def sun_se(counts, mean_scores, mean_labels) -> tuple[float, float]:
    """(debiased squared binned CE, its standard error) from per-bin statistics."""
    nb = np.asarray(counts, dtype=np.float64)
    full = nb > 0
    sb = np.where(full, mean_scores, 0.0)
    yb = np.where(full, mean_labels, 0.0)
    w = nb / nb.sum()
    d = debiased_bin_terms(nb, sb, yb, p=2)
    v = yb * (1.0 - yb) * np.where(nb > 1, nb / np.maximum(nb - 1.0, 1.0), 1.0)
    safe = np.where(full, nb, 1.0)
    # Var of (gbar_b)^2 with gbar_b ~ N(g_b, v_b / n_b): 4 g^2 v / n_b + 2 v^2 / n_b^2;
    # the first term dominates when miscalibrated, the second when calibrated.
    # g_b^2 is estimated by D_b (unbiased) and the first term's sum clipped at 0:
    # max(D_b, 0) per bin would add noise-only terms at CE = 0
    first = max(float(np.sum(np.where(full, w * w * 4.0 * d * v / safe, 0.0))), 0.0)
    var = first + float(np.sum(np.where(full, w * w * 2.0 * v * v / (safe * safe), 0.0)))
    return float(np.dot(w, d)), float(np.sqrt(var))


def sun_interval(counts, mean_scores, mean_labels, level: float, p: int) -> tuple[float, float]:
    """(lo, hi) of the boundary-aware normal interval (Sun et al. 2024) for the
    binned CE of bins with these statistics (module docstring)."""
    from scipy.stats import norm

    theta, se = sun_se(counts, mean_scores, mean_labels)
    z = float(norm.ppf(0.5 + float(level) / 2.0))
    lo, hi = max(theta - z * se, 0.0), max(theta + z * se, 0.0)
    return (lo, hi) if p == 2 else (lo, float(np.sqrt(hi)))


def _sun(fitted, level: float, p: int) -> tuple[float, float]:
    counts, mean_scores, mean_labels = fitted.bin_statistics()
    return sun_interval(counts, mean_scores, mean_labels, level, p)


# ------------------------------------------------------------- inverted
def _crossing(theta: np.ndarray, q: np.ndarray, value: float) -> float:
    """theta where the non-decreasing curve q(theta) reaches ``value`` (linear
    between worlds, extrapolated past the last one, theta[0] below the first)."""
    if value <= q[0]:
        return float(theta[0])
    if value > q[-1]:
        dq = q[-1] - q[-2]
        slope = (theta[-1] - theta[-2]) / dq if dq > 0 else 1.0
        return float(theta[-1] + (value - q[-1]) * slope)
    j = int(np.searchsorted(q, value, side="left"))     # q[j-1] < value <= q[j]
    dq = q[j] - q[j - 1]
    frac = (value - q[j - 1]) / dq if dq > 0 else 1.0
    return float(theta[j - 1] + frac * (theta[j] - theta[j - 1]))


def inverted_level(level: float, scale: float | None = None) -> float:
    """Level at which "inverted" reads the worlds' ranges for nominal ``level``
    (``scale``: the alpha scale k, :data:`INVERTED_ALPHA_SCALE` when None)."""
    k = INVERTED_ALPHA_SCALE if scale is None else float(scale)
    return 1.0 - k * (1.0 - float(level))


def invert(estimate: float, theta: np.ndarray, reps: np.ndarray, level: float):
    """(lo, hi): every world theta whose central ``level`` range of ``reps``
    holds ``estimate``; the range edges are made non-decreasing in theta."""
    alpha = 1.0 - float(level)
    # plotting positions i / (R + 1): unbiased for the CDF, so a small R does not
    # pull the range edges inwards as linear interpolation does
    q_lo, q_hi = np.quantile(reps, [alpha / 2.0, 1.0 - alpha / 2.0], axis=1, method="weibull")
    q_lo, q_hi = np.maximum.accumulate(q_lo), np.maximum.accumulate(q_hi)
    lo = _crossing(theta, q_hi, estimate)
    hi = _crossing(theta, q_lo, estimate) if estimate >= q_lo[0] else float(theta[0])
    return max(lo, 0.0), max(hi, lo, 0.0)


# --------------------------------------------------------------- public
def _estimand(fitted, method: str) -> str:
    # inverted scores the population CE of simulated worlds, whatever the family
    return "population" if method == "inverted" else fitted.estimand


def validity(name: str | None, method: str, p: int, level: float, n: int, n_boot: int):
    """:class:`fitontest.inference.domains.Validity` of an interval: its measured
    domain (module docstring); warns where it was measured short."""
    from .domains import measured

    key = f"{name}/{method}/{p}"
    settings = {} if method == "sun" else {"n_boot": int(n_boot)}
    v = measured("intervals").validity(key, level=float(level), n=int(n), **settings)
    if v.valid is False:
        warnings.warn(f"{method!r} intervals of {name} (p={p}): {v.why}",
                      IntervalCoverageWarning, stacklevel=3)
    return v


def bootstrap_interval(fitted, scores, labels, est: Mapping[str, float] | None = None, *,
                       p: int = 1, level: float = 0.9, n_boot: int = 200, seed=0,
                       method: str = "auto", family: str | None = None) -> CEInterval:
    """Interval around a family already fitted on (scores, labels).

    ``est`` is :func:`fitontest.families.base.estimates` of ``fitted`` on
    ``scores`` (computed when None); callers that scored the fit already pass
    it to save the work. ``family``: the registered name (looked up from the
    parameters when None), which ``"auto"`` and ``valid`` key on.
    """
    _check_settings(level, n_boot, method, p)
    s, y = check_binary(scores, labels, min_points=fitted.min_points,
                        need_both_classes=fitted.needs_both_classes,
                        n_folds=fitted._n_folds_needed())
    est = estimates(fitted, s) if est is None else est
    estimate = float(used_estimates(est)[p - 1])
    target = float(est["ce_est"] if p == 1 else est["ce_est_sq"])
    name = family if family is not None else registered_name(fitted)
    method = resolve_method(method, name, p)
    v = validity(name, method, p, level, s.size, n_boot)
    if method == "sun":
        lo, hi = _sun(fitted, level, p)
        n_boot = 0
    elif method == "inverted":
        theta, reps = world_replicates(fitted, s, y, world_reps(n_boot), seed, p,
                                       gap=reference_gap(s, y, p))
        lo, hi = invert(estimate, theta, reps, inverted_level(level))
        n_boot = reps.size
    else:
        reps = replicate_estimates(fitted, s, y, resample_chunks(s.size, int(n_boot), seed),
                                   p=p)
        lo, hi = interval_from(reps, estimate, target, level, method)
    # no map can be further from s than 0 or 1 are: an upper end extrapolated
    # past the last world (a CV family whose estimate barely moves with the
    # worlds' CE) is capped there rather than reported above any possible CE
    bound = largest_ce(s, p)
    lo, hi = min(lo, bound), min(hi, bound)
    return CEInterval(estimate=estimate, lo=lo, hi=hi, level=float(level), n_boot=int(n_boot),
                      method=method, p=p, target=target, estimand=_estimand(fitted, method),
                      valid=v.valid, validity_note=v.why)


def family_interval(fitted, scores, labels, est: Mapping[str, float] | None = None, *,
                    p: int = 1, level: float = 0.9, n_boot: int = 200, seed=0,
                    method: str = "auto", family: str | None = None) -> CEInterval:
    """The interval a fitted family comes with: its package's own
    (``fitted.own_interval``, ``method="own"``, whatever ``method`` says;
    coverage not measured here, so ``valid`` is None), else
    :func:`bootstrap_interval` with these arguments."""
    own = fitted.own_interval(scores, labels, p=p, level=level, n_boot=n_boot, seed=seed)
    if own is None:
        return bootstrap_interval(fitted, scores, labels, est, p=p, level=level, n_boot=n_boot,
                                  seed=seed, method=method, family=family)
    return CEInterval(estimate=own.estimate, lo=own.lo, hi=own.hi, level=own.level,
                      n_boot=own.n_boot, method="own", p=own.p, target=own.target,
                      estimand=fitted.estimand, valid=None,
                      validity_note="the package's own interval: its coverage is not "
                                    "measured by this project's benchmarks")


def ce_interval(estimator_or_name, scores, labels, *, p: int = 1, level: float = 0.9,
                n_boot: int = 200, seed=0, method: str = "auto",
                params: Mapping[str, Any] | None = None) -> CEInterval:
    """CE estimate of a family on (scores, labels) with an interval.

    ``estimator_or_name``: a registered family name (constructed with
    ``params``) or an unfitted family instance (cloned, never modified).
    ``seed``: an int or a sequence of ints (``numpy.random.default_rng``).
    See the module docstring for the methods, their estimands and cost.
    """
    _check_settings(level, n_boot, method, p)
    fam = _family(estimator_or_name, params).fit(scores, labels)
    name = estimator_or_name if isinstance(estimator_or_name, str) and not params else None
    return bootstrap_interval(fam, scores, labels, p=p, level=level, n_boot=n_boot, seed=seed,
                              method=method, family=name)


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
            "method": config.get("method", "auto"), "family": name}


# WORLD_T, world_replicates, world_reps, largest_ce and reference_gap are used
# here but homed in fitontest.inference.worlds (one address per public name)
__all__ = ["CEInterval", "METHODS", "AUTO", "INVERTED_ALPHA_SCALE",
           "IntervalCoverageWarning", "ce_interval", "bootstrap_interval", "bootstrap_indices",
           "replicate_estimates", "refit_replicates", "interval_from", "interval_settings",
           "batched", "sun_interval", "sun_se", "invert", "inverted_level", "resolve_method",
           "registered_name"]
