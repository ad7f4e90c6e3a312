"""Replicates of the calibrators' table: every calibrator refitted on further
validation draws (docs/methods.md §6.4).

Table 2 compares post-hoc calibrators fitted once per network on the
validation split: three networks are three units, too few for any honest
test. The replicates here give each network ``draws`` more independent
fits at a small cost (the fits and their metrics only, no evaluator):

- draw d = 1, 2, ... fits every calibrator on ``n_val`` hold-out points,
  disjoint from the other draws' (one seeded permutation of the hold-out
  positions, :func:`draw_positions`) — a new validation set from the same
  population as the validation split (draw 0, the study's own fits);
- its CEAC and CMEE are measured on the rest of the hold-out (every point
  not used by that draw's fit), with the truths re-estimated there, exactly
  as :func:`fitontest.study.experiment.calibrator_rows` does for draw 0.

Rows carry ``draw`` (:data:`~fitontest.study.schema.CALIBRATOR_DRAW`); the
policy's clusters of Table 2 are then the (network, draw) pairs
(:mod:`fitontest.report.policy`).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from fitontest import multiclass
from . import tasks as task_lib
from . import truth as truth_lib
from .experiment import calibrator_rows, family_params, fit_family
from .schema import CALIBRATOR_COLUMNS, CALIBRATOR_DRAW

#: salt of the draws' permutation (distinct from the test subsets')
DRAW_SALT = 4321


def draw_positions(n_holdout: int, n_val: int, draws: int, seed: int = 0) -> list[np.ndarray]:
    """``draws`` disjoint sets of ``n_val`` hold-out positions (draws 1, 2, ...):
    consecutive slices of ``default_rng([seed, 4321]).permutation(n_holdout)``.
    At least half of the hold-out stays for measuring each draw."""
    n_holdout, n_val, draws = int(n_holdout), int(n_val), int(draws)
    if draws < 0 or n_val < 1:
        raise ValueError(f"need draws >= 0 and n_val >= 1, got {draws} and {n_val}")
    if draws * n_val > n_holdout // 2:
        raise ValueError(f"calibrators.draws: {draws} validation draws of {n_val} points need "
                         f"{draws * n_val} hold-out points, more than half of the "
                         f"{n_holdout}; reduce calibrators.draws or increase split.n_holdout")
    perm = np.random.default_rng([int(seed), DRAW_SALT]).permutation(n_holdout)
    return [np.sort(perm[d * n_val:(d + 1) * n_val]) for d in range(draws)]


def draw_layout(n_holdout: int, n_val: int, draws: int,
                seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """(fitting positions, measuring positions) of draws 1..``draws`` in the
    hold-out: :func:`draw_positions`, each measured on every other point."""
    out = []
    for pos in draw_positions(n_holdout, n_val, draws, seed):
        rest = np.ones(int(n_holdout), dtype=bool)
        rest[pos] = False
        out.append((pos, np.flatnonzero(rest)))
    return out


def draw_rows(holdout: Mapping[str, np.ndarray], positions: np.ndarray,
              task_specs: Mapping[str, Any], multiclass_names: Sequence[str],
              binary_names: Sequence[str], truths: Sequence[str], *,
              config_params: Mapping[str, Mapping[str, Any]] | None = None,
              seed: int = 0, measure: np.ndarray | None = None) -> pd.DataFrame:
    """The calibrators' rows (:data:`CALIBRATOR_COLUMNS`, without ``arch``
    and ``draw``) of one draw: every calibrator fitted on the hold-out
    ``positions``, measured on the hold-out ``measure`` positions (None:
    every other hold-out point) with the truths re-estimated there.

    ``holdout``: the hold-out logits file (``logits``, ``labels`` and,
    for sources with a known posterior, ``posterior``)."""
    logits = np.asarray(holdout["logits"], dtype=np.float64)
    labels = np.asarray(holdout["labels"])
    post = holdout.get("posterior")
    if measure is None:
        rest = np.ones(labels.size, dtype=bool)
        rest[positions] = False
    else:
        rest = np.sort(np.asarray(measure, dtype=np.int64))
        if np.intersect1d(rest, positions).size:
            raise ValueError("a draw's measuring points must not include its fitting points")
    fit_l, fit_y, ev_l, ev_y = logits[positions], labels[positions], logits[rest], labels[rest]
    ev_post = None if post is None else np.asarray(post)[rest]
    # calibrated scores on the measuring points: (task, calibrator) -> (scores, labels, posterior)
    scored: dict[tuple[str, str], tuple] = {}
    fit_scores: dict[str, tuple] = {}
    for name in dict.fromkeys(["none", *multiclass_names]):
        cal = multiclass.get(name).fit(fit_l, fit_y)
        p_fit, p_ev = cal.predict_proba(fit_l), cal.predict_proba(ev_l)
        for task, spec in task_specs.items():
            s_ev, y_ev = task_lib.reduce(spec, p_ev, ev_y)
            q = None if ev_post is None else task_lib.event_posterior(spec, p_ev, ev_post)
            scored[(task, name)] = (s_ev, y_ev, q)
            if name == "none":
                fit_scores[task] = task_lib.reduce(spec, p_fit, fit_y)
    for name in binary_names:
        params = family_params(name, config_params, seed)
        for task in task_specs:
            s_fit, y_fit = fit_scores[task]
            fam, _ = fit_family(name, s_fit, y_fit, params)
            s0, y0, q0 = scored[(task, "none")]
            scored[(task, name)] = (np.clip(fam.predict(s0), 0.0, 1.0), y0, q0)
    maps: dict[tuple[str, str], dict[str, np.ndarray]] = {
        key: {t: truth_lib.estimate(t, s, y, posterior=q) for t in truths}
        for key, (s, y, q) in scored.items()}
    kinds = {n: "multiclass" for n in multiclass_names} | {n: "binary" for n in binary_names}
    kinds["none"] = "none"
    rows = []
    for (task, name), (s, y, _) in scored.items():
        for row in calibrator_rows(kinds[name], s, y, maps[(task, name)], maps[(task, "none")]):
            rows.append({"task": task, "calibrator": name, **row})
    return pd.DataFrame(rows)


def calibrator_draws(holdout: Mapping[str, np.ndarray], n_val: int, draws: int,
                     task_specs: Mapping[str, Any], multiclass_names: Sequence[str],
                     binary_names: Sequence[str], truths: Sequence[str], *, arch: str,
                     config_params: Mapping[str, Mapping[str, Any]] | None = None,
                     seed: int = 0, log=None) -> pd.DataFrame:
    """Rows of draws 1..``draws`` of network ``arch`` (columns
    :data:`CALIBRATOR_COLUMNS` + ``draw``)."""
    n = int(np.asarray(holdout["labels"]).size)
    parts = []
    for d, (pos, measure) in enumerate(draw_layout(n, n_val, draws, seed), start=1):
        f = draw_rows(holdout, pos, task_specs, multiclass_names, binary_names, truths,
                      config_params=config_params, seed=seed, measure=measure)
        parts.append(f.assign(arch=arch, **{CALIBRATOR_DRAW: d}))
        if log:
            log(f"{arch}: draw {d} of {draws}: {len(f)} rows")
    cols = CALIBRATOR_COLUMNS + [CALIBRATOR_DRAW]
    if not parts:
        return pd.DataFrame(columns=cols)
    return pd.concat(parts, ignore_index=True)[cols]


__all__ = ["draw_positions", "draw_layout", "draw_rows", "calibrator_draws", "DRAW_SALT"]
