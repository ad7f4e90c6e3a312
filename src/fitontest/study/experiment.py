"""Scoring post-hoc calibrators and fit-on-test evaluators (docs/methods/06-truth-and-scores.md §6).

The workflow's scripts are thin: they load npz files and call these functions,
which return tidy frames with the columns of :mod:`fitontest.schema`.
"""
from __future__ import annotations

import time
from typing import Any, Mapping

import numpy as np
import pandas as pd

from fitontest import families
from fitontest.families.base import estimates, used_estimates
from .schema import CALIBRATOR_COLUMNS, SCORE_COLUMNS


def takes_threads(name: str) -> bool:
    """Whether family ``name`` spreads one fit over threads (an ``n_threads``
    parameter: PL / PL3, the same result on any number of threads)."""
    return "n_threads" in families.get(name).get_params()

def family_params(name: str, config_params: Mapping[str, Mapping[str, Any]] | None,
                  seed: int | None = None) -> dict[str, Any]:
    """Constructor overrides for family ``name``: the config's ``family_params``
    entry, plus the config seed for every family that takes a ``seed``."""
    params = dict((config_params or {}).get(name, {}) or {})
    if seed is not None and "seed" not in params:
        if "seed" in families.get(name).get_params():
            params["seed"] = int(seed)
    return params


def fit_family(name: str, scores, labels, params: Mapping[str, Any] | None = None):
    """A fresh family fitted on (scores, labels) and the seconds the fit took."""
    fam = families.get(name, **dict(params or {}))
    t0 = time.perf_counter()
    fam.fit(scores, labels)
    return fam, time.perf_counter() - t0


class ScoreGrid:
    """Scores deduplicated and sorted once, for maps evaluated on them many
    times (every evaluator fit is scored on the whole hold-out, issue 37).

    A calibration map acts on each score alone, so its values on the distinct
    scores, spread back by ``inverse``, are its values on the scores -- bit
    for bit (every family is checked in tests/test_experiment.py) -- and the
    families' predictions (np.interp, searchsorted, ...) run several times
    faster on sorted input, far faster still where the scores take few values
    (the scores of an isotonic or binning calibrator)."""

    def __init__(self, scores: np.ndarray):
        self.scores = scores
        self.values, self.inverse = np.unique(scores, return_inverse=True)

    def predict(self, fam) -> np.ndarray:
        """``fam.predict(scores)``, computed on the distinct scores where the
        family's values do not depend on the other scores of the call."""
        if not fam.pointwise_predict:
            return fam.predict(self.scores)
        return fam.predict(self.values)[self.inverse]


def mean_abs(d: np.ndarray, p: int) -> float:
    """mean |d|^p for p = 1 or 2."""
    d = np.abs(d)
    return float(np.mean(d if p == 1 else d * d))


def mean_abs_pair(d: np.ndarray) -> tuple[float, float]:
    """(mean |d|, mean |d|^2), the values of :func:`mean_abs`; ``d`` is
    overwritten (a temporary of the caller: a hold-out-sized array per fit)."""
    a = np.abs(d, out=d)
    m1 = float(np.mean(a))
    return m1, float(np.mean(np.multiply(a, a, out=a)))


def interval_columns(ci) -> dict[str, float]:
    """``ce_lo``, ``ce_hi``, ``ci_level`` of a :class:`~fitontest.inference.intervals.CEInterval`;
    all NaN where no interval was computed (``ci`` None)."""
    if ci is None:
        return {"ce_lo": np.nan, "ce_hi": np.nan, "ci_level": np.nan}
    return {"ce_lo": float(ci.lo), "ce_hi": float(ci.hi), "ci_level": float(ci.level)}


def score_rows(c_hat_holdout: np.ndarray | None, est: Mapping[str, float],
               holdout_scores: np.ndarray, positions: np.ndarray,
               truths: Mapping[str, np.ndarray], pop: Mapping[str, float],
               interval=None) -> list[dict[str, float]]:
    """One row per truth estimator for one fitted evaluator.

    ``c_hat_holdout`` is the evaluator's map on every hold-out score (None for
    estimate-only evaluators); ``positions`` index the fitting subset in the
    hold-out; ``truths`` map truth names to c(s) on the hold-out; ``interval``
    the bootstrap interval of the L1 estimate on the subset, or None.
    ``true_ce_pop`` is the population CE the interval targets: mean |s - c(s)|
    over the whole hold-out, ``pop`` its value per truth (:func:`population_ce`,
    the same for every subset: computed once by the caller).
    """
    s_sub = holdout_scores[positions]
    ce_used, ce_used_sq = used_estimates(est)
    rows = []
    for truth, c_true in truths.items():
        c_sub = c_true[positions]
        row = {"truth": truth, **est, "ce_used": ce_used, "ce_used_sq": ce_used_sq,
               "true_ce": mean_abs(s_sub - c_sub, 1), "true_ce_sq": mean_abs(s_sub - c_sub, 2),
               **interval_columns(interval),
               "true_ce_pop": pop[truth]}
        row["ce_error"] = abs(ce_used - row["true_ce"])
        row["ce_error_sq"] = abs(ce_used_sq - row["true_ce_sq"])
        if c_hat_holdout is None:
            row.update(cmee=np.nan, cmee_sq=np.nan, cmee_subset=np.nan, cmee_subset_sq=np.nan)
        else:
            d = c_hat_holdout - c_true
            sub = d[positions]
            row["cmee"], row["cmee_sq"] = mean_abs_pair(d)
            row["cmee_subset"], row["cmee_subset_sq"] = mean_abs_pair(sub)
        rows.append(row)
    return rows


def population_ce(holdout_scores: np.ndarray, truths: Mapping[str, np.ndarray]) -> dict[str, float]:
    """mean |s - c(s)| over the whole hold-out, per truth."""
    s = np.asarray(holdout_scores, dtype=np.float64)
    return {t: mean_abs(s - c, 1) for t, c in truths.items()}


def subset_interval(name: str, fam, s: np.ndarray, y: np.ndarray, est: Mapping[str, float],
                    interval: Mapping[str, Any] | None, seed: list[int]):
    """Bootstrap interval (docs/methods/11-intervals.md §11.1) of a fitted evaluator's L1 estimate
    on its subset, as the ``interval`` config block says for family ``name``
    (None where disabled); ``seed`` makes each subset's resamples its own."""
    from fitontest.inference.intervals import family_interval, interval_settings

    settings = interval_settings(name, interval)
    if settings is None:
        return None
    # the interval the family comes with: its package's own (the peers), else the bootstrap
    return family_interval(fam, s, y, est, p=1, seed=seed, **settings)


def score_evaluator(name: str, params: Mapping[str, Any] | None, holdout_scores: np.ndarray,
                    holdout_labels: np.ndarray, truths: Mapping[str, np.ndarray],
                    subsets: Mapping[tuple[int, int], np.ndarray], log=None, *,
                    interval: Mapping[str, Any] | None = None,
                    interval_seed: int = 0, grid: ScoreGrid | None = None,
                    pop: Mapping[str, float] | None = None) -> pd.DataFrame:
    """Fit evaluator ``name`` on every (size, seed) subset of the hold-out and score it.

    ``interval``: the ``evaluation.interval`` config block (None: no
    intervals); the resamples of subset (size, seed) are seeded by
    ``[interval_seed, size, seed]``. ``grid``: the :class:`ScoreGrid` of
    ``holdout_scores`` where the caller scores several evaluators on them;
    ``pop``: their :func:`population_ce` (computed here when None).
    Returns rows with (evaluator, size, seed, truth) and every value column of
    ``schema.SCORE_VALUES``; the caller adds (arch, task, calibrator).
    """
    holdout_scores = np.asarray(holdout_scores, dtype=np.float64)
    holdout_labels = np.asarray(holdout_labels)
    rows = []
    if pop is None:                                # the same for every subset
        pop = population_ce(holdout_scores, truths)
    grid = ScoreGrid(holdout_scores) if grid is None else grid
    for (size, seed), pos in sorted(subsets.items()):
        s, y = holdout_scores[pos], holdout_labels[pos]
        fam, seconds = fit_family(name, s, y, params)
        c_hat = grid.predict(fam) if fam.provides_map else None
        est = estimates(fam, s)
        t0 = time.perf_counter()
        ci = subset_interval(name, fam, s, y, est, interval, [interval_seed, size, seed])
        ci_seconds = time.perf_counter() - t0
        for row in score_rows(c_hat, est, holdout_scores, pos, truths, pop, interval=ci):
            row.update(evaluator=name, size=int(size), seed=int(seed),
                       hyper=fam.chosen_hyperparameter(), fit_seconds=seconds)
            rows.append(row)
        if log:
            log(f"{name}: size={size} seed={seed} fitted in {seconds:.2f}s"
                + (f", interval in {ci_seconds:.2f}s" if ci is not None else ""))
    return pd.DataFrame(rows)


def score_external(name: str, output: Mapping[str, np.ndarray], holdout_scores: np.ndarray,
                   truths: Mapping[str, np.ndarray],
                   subsets: Mapping[tuple[int, int], np.ndarray]) -> pd.DataFrame:
    """Score the npz written by an external evaluator rule (the contract of
    docs/guide/adding-an-evaluator.md).

    ``output`` has ``size`` and ``seed`` (R,), and ``c_hat`` (R x n_holdout,
    the map at every hold-out score) and/or ``ce_est`` (R,); optional
    ``ce_est_sq``, ``ce_est_debiased``, ``ce_est_debiased_sq``, ``hyper``,
    ``fit_seconds`` (R,).
    """
    holdout_scores = np.asarray(holdout_scores, dtype=np.float64)
    for key in ("size", "seed"):
        if key not in output:
            raise ValueError(f"external evaluator {name!r}: output lacks the key {key!r}")
    if "c_hat" not in output and "ce_est" not in output:
        raise ValueError(f"external evaluator {name!r}: output needs 'c_hat' or 'ce_est'")
    sizes, seeds = np.asarray(output["size"]), np.asarray(output["seed"])
    got = {(int(a), int(b)): r for r, (a, b) in enumerate(zip(sizes, seeds))}
    missing = sorted(set(subsets) - set(got))
    if missing:
        raise ValueError(f"external evaluator {name!r}: no row for (size, seed) {missing}")
    c_hat_all = output.get("c_hat")
    if c_hat_all is not None:
        c_hat_all = np.asarray(c_hat_all, dtype=np.float64)
        if c_hat_all.shape != (sizes.size, holdout_scores.size):
            raise ValueError(f"external evaluator {name!r}: c_hat has shape {c_hat_all.shape}, "
                             f"expected ({sizes.size}, {holdout_scores.size})")
        if not np.isfinite(c_hat_all).all():
            raise ValueError(f"external evaluator {name!r}: c_hat contains NaN or infinity")

    def opt(key, r):
        return float(output[key][r]) if key in output else np.nan

    rows = []
    pop = population_ce(holdout_scores, truths)
    for (size, seed), pos in sorted(subsets.items()):
        r = got[(size, seed)]
        c_hat = None if c_hat_all is None else c_hat_all[r]
        if c_hat is not None:
            d = c_hat[pos] - holdout_scores[pos]
            est = {"ce_est": mean_abs(d, 1), "ce_est_sq": mean_abs(d, 2)}
        else:
            est = {"ce_est": opt("ce_est", r), "ce_est_sq": opt("ce_est_sq", r)}
        est.update(ce_est_debiased=opt("ce_est_debiased", r),
                   ce_est_debiased_sq=opt("ce_est_debiased_sq", r))
        for row in score_rows(c_hat, est, holdout_scores, pos, truths, pop):
            row.update(evaluator=name, size=int(size), seed=int(seed),
                       hyper=opt("hyper", r), fit_seconds=opt("fit_seconds", r))
            rows.append(row)
    return pd.DataFrame(rows)


def calibrator_rows(kind: str, calibrated_scores: np.ndarray, labels: np.ndarray,
                    truth_calibrated: Mapping[str, np.ndarray],
                    truth_uncalibrated: Mapping[str, np.ndarray]) -> list[dict[str, Any]]:
    """Table-2 measures of one calibrated model/task on the hold-out, per truth.

    CEAC = mean |c_hat_i - c'(c_hat_i)| with c' the true map of the calibrated
    scores; CMEE = mean |c_hat(s_i) - c(s_i)| with c the true map of the
    uncalibrated scores (Theorem 3: CMEE >= CEAC for binary calibrators).
    """
    s = np.asarray(calibrated_scores, dtype=np.float64)
    acc = float(np.mean((s >= 0.5) == (np.asarray(labels) == 1)))
    rows = []
    for truth, c_cal in truth_calibrated.items():
        d_cal = s - c_cal
        d_unc = s - truth_uncalibrated[truth]
        rows.append({"truth": truth, "kind": kind,
                     "ceac": mean_abs(d_cal, 1), "ceac_sq": mean_abs(d_cal, 2),
                     "cmee": mean_abs(d_unc, 1), "cmee_sq": mean_abs(d_unc, 2),
                     "accuracy": acc})
    return rows


def tidy(frame: pd.DataFrame, columns: list[str], **keys: Any) -> pd.DataFrame:
    """Add constant key columns and order the columns as the schema says."""
    frame = frame.copy()
    for k, v in keys.items():
        frame[k] = v
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"result frame lacks columns {missing}")
    return frame[columns]


def in_grid_order(frame: pd.DataFrame, order: Mapping[str, list]) -> pd.DataFrame:
    """``frame``'s rows sorted by the key columns of ``order`` (the first the
    outermost), each in its listed order; rows with equal keys keep theirs."""
    if not order:
        return frame
    codes = [pd.Categorical(frame[c], categories=list(v)).codes for c, v in order.items()]
    unknown = [c for c, k in zip(order, codes) if (k < 0).any()]
    if unknown:
        raise ValueError(f"values of {unknown} outside the config's lists")
    return frame.iloc[np.lexsort(codes[::-1])].reset_index(drop=True)


__all__ = ["family_params", "fit_family", "estimates", "used_estimates", "score_rows",
           "score_evaluator", "interval_columns", "subset_interval", "score_external",
           "calibrator_rows", "tidy", "in_grid_order", "SCORE_COLUMNS", "CALIBRATOR_COLUMNS"]
