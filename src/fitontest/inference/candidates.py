"""Every candidate evaluator fitted and scored in the worlds (docs/methods/14-chooser.md §14.2).

:func:`world_losses` is the unit of work of :func:`fitontest.inference.choose.choose_tasks`:
each candidate's |CE error|, CMEE, 1 - Spearman and signed CE error in world
``w``; :func:`all_world_losses` runs it over every world (one by one, or over
processes with joblib).
"""
from __future__ import annotations

import sys
import time
from typing import Sequence

import numpy as np

#: temperatures of the versions ranked by ``criterion="ranking"`` (s -> sigmoid(logit(s) / T))
RANK_TEMPERATURES = (0.7, 0.85, 1.0, 1.2, 1.5)


def _versions(s: np.ndarray) -> np.ndarray:
    """(len(RANK_TEMPERATURES), n) temperature-scaled versions of the scores."""
    from scipy.special import expit, logit

    z = logit(np.clip(s, 1e-12, 1.0 - 1e-12))
    return expit(z[None, :] / np.asarray(RANK_TEMPERATURES)[:, None])


def fit_used(name: str, s: np.ndarray, y: np.ndarray, p: int, at: np.ndarray | None):
    """(used L^p estimate, map at ``at`` or None) of family ``name`` on (s, y);
    (NaN, None) where it cannot be fitted on this sample."""
    from .. import families
    from ..families.base import estimates, used_estimates

    try:
        fam = families.get(name).fit(s, y)
        est = used_estimates(estimates(fam, s))[p - 1]
        c = fam.predict(at) if at is not None and fam.provides_map else None
    except (ValueError, FloatingPointError, np.linalg.LinAlgError):
        return float("nan"), None
    return float(est), c


def world_losses(w: int, tasks: list[tuple[np.ndarray, np.ndarray]], names: Sequence[str],
                 p: int, ranking: bool, seed) -> np.ndarray:
    """(4, E) losses of the E candidates in world ``w``: |CE error|, CMEE,
    1 - Spearman (NaN unless ``ranking``) and the signed CE error (estimate -
    true CE: its mean over the worlds is the candidate's bias); ``tasks``: (user
    scores, world map at them) per task."""
    from scipy.stats import rankdata

    from .worlds import world_sample

    E, K = len(names), len(tasks)
    est, cm = np.full((K, E), np.nan), np.full((K, E), np.nan)
    true = np.empty(K)
    n_v = len(RANK_TEMPERATURES) if ranking else 0
    est_v, true_v = np.full((K, n_v, E), np.nan), np.empty((K, n_v))
    for k, (s, c) in enumerate(tasks):
        rng = np.random.default_rng([*seed, 2, w, k])
        sw, yw, cw = world_sample(rng, s, c)
        true[k] = np.mean(np.abs(cw - sw) ** p)
        for j, name in enumerate(names):
            est[k, j], chat = fit_used(name, sw, yw, p, s)
            if chat is not None:
                cm[k, j] = np.mean(np.abs(chat - c) ** p)
        if ranking:
            for v, sv in enumerate(_versions(sw)):
                # the version's true map at its score sv_i is c(s_i): a monotone
                # transform of the score keeps P(Y = 1 | score)
                true_v[k, v] = np.mean(np.abs(cw - sv) ** p)
                for j, name in enumerate(names):
                    est_v[k, v, j] = fit_used(name, sv, yw, p, None)[0]
    out = np.full((4, E), np.nan)
    out[3] = est.mean(axis=0) - true.mean()
    out[0] = np.abs(out[3])
    out[1] = cm.mean(axis=0)
    if ranking:
        e, t = est_v.mean(axis=0), true_v.mean(axis=0)          # (V, E), (V,)
        re, rt = rankdata(e, axis=0), rankdata(t)
        re, rt = re - re.mean(axis=0), rt - rt.mean()
        with np.errstate(invalid="ignore", divide="ignore"):
            rho = (rt @ re) / np.sqrt((rt @ rt) * (re * re).sum(axis=0))
        ok = np.isfinite(e).all(axis=0)
        out[2] = np.where(ok, 1.0 - np.nan_to_num(rho, nan=0.0), np.nan)
    return out


class Progress:
    """A one-line progress bar on stderr (worlds done, seconds)."""

    def __init__(self, total: int, on: bool):
        self.total, self.on, self.t0, self.done = total, on, time.perf_counter(), 0

    def step(self):
        self.done += 1
        if self.on:
            k = int(30 * self.done / self.total)
            sys.stderr.write(f"\rchoose: worlds {self.done}/{self.total} [{'#' * k}"
                             f"{'.' * (30 - k)}] {time.perf_counter() - self.t0:.0f}s")
            if self.done == self.total:
                sys.stderr.write("\n")
            sys.stderr.flush()


def all_world_losses(tasks: list[tuple[np.ndarray, np.ndarray]], names: Sequence[str], p: int,
                     ranking: bool, seed, n_jobs: int = 1, progress: bool = False
                     ) -> np.ndarray:
    """(W, 4, E) :func:`world_losses` of every world, in order: world by world or
    over ``n_jobs`` processes (joblib), with a :class:`Progress` bar when
    ``progress``; ``tasks``: (user scores, (W, n) world maps at them) per task."""
    n_worlds = int(tasks[0][1].shape[0])
    seq = [seed]
    bar = Progress(n_worlds, progress)

    def args(w):
        return w, [(s, maps[w]) for s, maps in tasks], names, p, ranking, seq

    rows = []
    if n_jobs == 1:
        for w in range(n_worlds):
            rows.append(world_losses(*args(w)))
            bar.step()
    else:
        from joblib import Parallel, delayed

        for r in Parallel(n_jobs=n_jobs, return_as="generator")(
                delayed(world_losses)(*args(w)) for w in range(n_worlds)):
            rows.append(r)
            bar.step()
    return np.stack(rows)


__all__ = ["RANK_TEMPERATURES", "world_losses", "all_world_losses", "fit_used", "Progress"]
