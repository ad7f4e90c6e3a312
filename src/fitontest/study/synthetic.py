"""The synthetic study (docs/methods/07-synthetic.md §7): evaluators against exact calibration maps.

One call scores one evaluator on one base shape over every CE level, size and
seed, which is the job granularity of the workflow (a few hundred jobs for
the paper's grid). Rows have the columns of ``schema.SYNTHETIC_COLUMNS``.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd

from fitontest.data import synthetic
from .experiment import ScoreGrid, fit_family, interval_columns, mean_abs, subset_interval
from fitontest.families.base import estimates, used_estimates
from .schema import SYNTHETIC_COLUMNS


@lru_cache(maxsize=8)
def _test_grid(shape: str, ce: float, n_test: int, seed: int, sampling: str):
    """The CMEE test sample of (shape, level) and its :class:`ScoreGrid`, read-only:
    every evaluator of a job scores its maps on the same sample (a shape's
    levels fit in the cache)."""
    p_test, c_test = synthetic.test_sample(shape, ce, n_test, seed=seed, sampling=sampling)
    grid = ScoreGrid(p_test)
    for a in (grid.scores, grid.values, grid.inverse, c_test):
        a.setflags(write=False)
    return grid, c_test


def score_shape(evaluator: str, params: Mapping[str, Any] | None, shape: str,
                ce_levels: Iterable[float], sizes: Iterable[int], seeds: Iterable[int],
                n_test: int = 1_000_000, test_seed: int = 0, log=None, *,
                interval: Mapping[str, Any] | None = None,
                sampling: str = "ours") -> pd.DataFrame:
    """Fit ``evaluator`` on every (CE level, size, seed) sample of ``shape``.

    CMEE is measured on a separate test sample of ``n_test`` points whose true
    calibrated probabilities are known exactly (no numerical inversion: the
    sample is drawn in c and mapped forward). The true CE of a fitting sample
    is mean |p_i - c_i| with its exact c_i; the population CE
    (``true_ce_pop``) is the level itself, exactly: c ~ U(0, 1) gives
    E|f_a(c) - c| = a E|f(c) - c| = CE (:mod:`fitontest.data.synthetic`; the paper's
    sampling draws c from Dirichlet(1, 1), also uniform).
    ``interval``: the ``synthetic.interval`` config block (None: no
    intervals); resamples of (level, size, seed) are seeded by
    ``[test_seed, size, seed]`` (paired across levels, as the samples are).
    ``sampling`` picks the generator of both samples (:mod:`fitontest.data.synthetic`:
    ``"ours"`` or ``"paper"``).
    """
    rows = []
    for ce in ce_levels:
        grid, c_test = _test_grid(shape, float(ce), int(n_test), int(test_seed), sampling)
        for size in sizes:
            for seed in seeds:
                p, y, c = synthetic.sample(shape, ce, size, seed, sampling=sampling)
                fam, seconds = fit_family(evaluator, p, y, params)
                est = estimates(fam, p)
                ci = subset_interval(evaluator, fam, p, y, est, interval,
                                     [test_seed, size, seed])
                ce_used, ce_used_sq = used_estimates(est)
                row = {"shape": shape, "ce_level": float(ce), "evaluator": evaluator,
                       "size": int(size), "seed": int(seed), "truth": "exact", **est,
                       "ce_used": ce_used, "ce_used_sq": ce_used_sq,
                       "true_ce": mean_abs(p - c, 1), "true_ce_sq": mean_abs(p - c, 2),
                       **interval_columns(ci), "true_ce_pop": float(ce),
                       "hyper": fam.chosen_hyperparameter(), "fit_seconds": seconds}
                row["ce_error"] = abs(ce_used - row["true_ce"])
                row["ce_error_sq"] = abs(ce_used_sq - row["true_ce_sq"])
                if fam.provides_map:
                    d_test = grid.predict(fam) - c_test
                    d_sub = fam.predict(p) - c
                    row.update(cmee=mean_abs(d_test, 1), cmee_sq=mean_abs(d_test, 2),
                               cmee_subset=mean_abs(d_sub, 1), cmee_subset_sq=mean_abs(d_sub, 2))
                else:
                    row.update(cmee=np.nan, cmee_sq=np.nan, cmee_subset=np.nan,
                               cmee_subset_sq=np.nan)
                rows.append(row)
                if log:
                    log(f"{evaluator} {shape} ce={ce} n={size} seed={seed}: "
                        f"{seconds:.2f}s, CMEE {row['cmee']:.5f}")
    return pd.DataFrame(rows)[SYNTHETIC_COLUMNS]
