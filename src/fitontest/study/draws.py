"""Replicates of the calibrators' table: every calibrator refitted on
validation draws of the hold-out, each draw of each network fitted and
measured on its own points (docs/methods/06-truth-and-scores.md §6.4, §6.5).

Table 2 compares post-hoc calibrators fitted once per network on the
validation split: three networks are three units, too few for any honest
test. With ``draws`` > 0 Table 2 is computed over replicates instead, at a
small cost (the fits and their metrics only, no evaluator):

- each network has its own seeded permutation of the hold-out positions
  (``default_rng([seed, 4321, crc32(network)])``); its draw d = 1, 2, ...
  fits every calibrator on the d-th slice of ``n_val`` points
  (:func:`draw_positions`): a new validation set from the population of
  the validation split;
- the rest of the permutation is cut into ``draws`` disjoint measuring
  slices (:func:`measure_positions`): draw d's CEAC and CMEE are measured on
  slice d, with every truth re-estimated on it, as
  :func:`fitontest.study.experiment.calibrator_rows` does on the hold-out.

So no two draws of a network share a fitting or a measuring point, and the
draws of different networks are independent draws (overlapping by chance,
as the test subsets of §6.2). The study's own calibrators (draw 0) are not
among them: every network's were fitted on the same validation images, so
their rows move together. Measured on the layout (benchmarks/verdicts/draws_design.py,
benchmarks/measured/draws_design.md, docs/methods/06-truth-and-scores.md §6.5): draws that shared
their fitting points across networks (draw 0 among them) and their measuring
points within a network made Table 2's per-task A/A test reject 16.7-17.9 %
of the time at nominal 5 %, and the by-network intervals hold the clusters'
own mean in as few as 70.7 % of cells; this layout: 3.3-4.6 % and 94.8-95.4 %.
Rows carry ``draw`` (:data:`~fitontest.study.schema.CALIBRATOR_DRAW`); the
policy's clusters of Table 2 are then the (network, draw) pairs
(:mod:`fitontest.report.policy`).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from fitontest import multiclass
from fitontest.data.split import name_seed

from .. import tasks as task_lib
from . import truth as truth_lib
from .experiment import calibrator_rows, family_params, fit_family
from .schema import CALIBRATOR_COLUMNS, CALIBRATOR_DRAW
from .tasks import event_posterior

#: salt of the draws' permutation (distinct from the test subsets')
DRAW_SALT = 4321


def _permutation(n_holdout: int, n_val: int, draws: int, seed: int,
                 network: str | None) -> np.ndarray:
    n_holdout, n_val, draws = int(n_holdout), int(n_val), int(draws)
    if draws < 1 or n_val < 1:
        raise ValueError(f"need draws >= 1 and n_val >= 1, got {draws} and {n_val}")
    if draws * n_val > n_holdout // 2:
        raise ValueError(f"calibrators.draws: {draws} validation draws of {n_val} points need "
                         f"{draws * n_val} hold-out points, more than half of the "
                         f"{n_holdout}; reduce calibrators.draws or increase split.n_holdout")
    key = [int(seed), DRAW_SALT] + ([] if network is None else [name_seed(network)])
    return np.random.default_rng(key).permutation(n_holdout)


def draw_positions(n_holdout: int, n_val: int, draws: int, seed: int = 0,
                   network: str | None = None) -> list[np.ndarray]:
    """The fitting points of draws 1..``draws``: consecutive disjoint slices of
    ``n_val`` positions of the ``network``'s permutation
    ``default_rng([seed, 4321, crc32(network)]).permutation(n_holdout)``
    (without ``network``: ``[seed, 4321]``). They take at most half of the
    hold-out."""
    perm = _permutation(n_holdout, n_val, draws, seed, network)
    return [np.sort(perm[d * n_val:(d + 1) * n_val]) for d in range(int(draws))]


def measure_positions(n_holdout: int, n_val: int, draws: int, seed: int = 0,
                      network: str | None = None) -> list[np.ndarray]:
    """The measuring points of draws 1..``draws``: the rest of
    :func:`draw_positions`' permutation (the points no draw of the network
    fits on) cut into ``draws`` consecutive slices of near-equal size
    (``numpy.array_split``)."""
    perm = _permutation(n_holdout, n_val, draws, seed, network)
    return [np.sort(p) for p in np.array_split(perm[int(draws) * int(n_val):], int(draws))]


def draw_layout(n_holdout: int, n_val: int, draws: int, seed: int = 0,
                network: str | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """(fitting positions, measuring positions) of draws 1..``draws`` of
    ``network`` (:func:`draw_positions`, :func:`measure_positions`)."""
    return list(zip(draw_positions(n_holdout, n_val, draws, seed, network),
                    measure_positions(n_holdout, n_val, draws, seed, network)))


def calibrated_scores(fit: Mapping[str, np.ndarray], apply: Mapping[str, np.ndarray],
                      task_specs: Mapping[str, Any], multiclass_names: Sequence[str],
                      binary_names: Sequence[str], *,
                      config_params: Mapping[str, Mapping[str, Any]] | None = None,
                      seed: int = 0) -> dict[tuple[str, str], dict[str, np.ndarray]]:
    """Every calibrator fitted on the ``fit`` rows and applied to the ``apply``
    rows (each ``logits``, ``labels``; ``apply`` with ``posterior`` where
    known), as the rules calibrate_multiclass and calibrate_binary do: (task,
    calibrator) -> the hold-out keys of a calibrated file (``holdout_scores``,
    ``holdout_labels``, ``holdout_posterior``), ``none`` included."""
    fit_l, fit_y = np.asarray(fit["logits"], dtype=np.float64), np.asarray(fit["labels"])
    ev_l, ev_y = np.asarray(apply["logits"], dtype=np.float64), np.asarray(apply["labels"])
    ev_post = apply.get("posterior")
    out: dict[tuple[str, str], dict[str, np.ndarray]] = {}
    fit_scores: dict[str, tuple] = {}
    for name in dict.fromkeys(["none", *multiclass_names]):
        cal = multiclass.get(name).fit(fit_l, fit_y)
        p_fit, p_ev = cal.predict_proba(fit_l), cal.predict_proba(ev_l)
        for task, spec in task_specs.items():
            s_ev, y_ev = task_lib.reduce(spec, p_ev, ev_y)
            out[(task, name)] = {"holdout_scores": s_ev, "holdout_labels": y_ev}
            if ev_post is not None:
                out[(task, name)]["holdout_posterior"] = event_posterior(
                    spec, p_ev, ev_post)
            if name == "none":
                fit_scores[task] = task_lib.reduce(spec, p_fit, fit_y)
    for name in binary_names:
        params = family_params(name, config_params, seed)
        for task in task_specs:
            fam, _ = fit_family(name, *fit_scores[task], params)
            none = out[(task, "none")]
            out[(task, name)] = {**none, "holdout_scores": np.clip(
                fam.predict(none["holdout_scores"]), 0.0, 1.0)}
    return out


def measured_rows(calibrated: Mapping[tuple[str, str], Mapping[str, np.ndarray]],
                  multiclass_names: Sequence[str], truths: Sequence[str],
                  measure: np.ndarray | None = None) -> pd.DataFrame:
    """:func:`calibrator_rows` of every (task, calibrator) of ``calibrated``
    (as :func:`calibrated_scores` returns; each task's ``none`` included),
    on the points ``measure`` (None: all), the truths estimated there. Names
    not in ``multiclass_names`` (nor ``none``) are binary calibrators."""
    missing = sorted({t for t, _ in calibrated} - {t for t, n in calibrated if n == "none"})
    if missing:
        raise ValueError(f"the uncalibrated ('none') scores of task(s) {missing} are missing: "
                         f"CMEE is against their true map")
    at = slice(None) if measure is None else np.sort(np.asarray(measure, dtype=np.int64))
    scored = {key: {k: np.asarray(v)[at] for k, v in d.items()} for key, d in calibrated.items()}
    maps = {key: truth_lib.estimate_all(truths, d["holdout_scores"], d["holdout_labels"],
                                        posterior=d.get("holdout_posterior"))
            for key, d in scored.items()}
    mc = set(multiclass_names)
    rows = []
    for (task, name), d in scored.items():
        kind = "none" if name == "none" else ("multiclass" if name in mc else "binary")
        for row in calibrator_rows(kind, d["holdout_scores"], d["holdout_labels"],
                                   maps[(task, name)], maps[(task, "none")]):
            rows.append({"task": task, "calibrator": name, **row})
    return pd.DataFrame(rows)


def draw_rows(holdout: Mapping[str, np.ndarray], positions: np.ndarray,
              task_specs: Mapping[str, Any], multiclass_names: Sequence[str],
              binary_names: Sequence[str], truths: Sequence[str], *,
              config_params: Mapping[str, Mapping[str, Any]] | None = None,
              seed: int = 0, measure: np.ndarray | None = None) -> pd.DataFrame:
    """The calibrators' rows (:data:`CALIBRATOR_COLUMNS`, without ``arch``
    and ``draw``) of one draw: every calibrator fitted on the hold-out
    ``positions`` (:func:`calibrated_scores`), measured on the hold-out
    ``measure`` positions (None: every other hold-out point) with the truths
    re-estimated there.

    ``holdout``: the hold-out logits file (``logits``, ``labels`` and,
    for sources with a known posterior, ``posterior``)."""
    n = np.asarray(holdout["labels"]).size
    positions = np.asarray(positions, dtype=np.int64)
    if measure is None:
        measure = np.setdiff1d(np.arange(n), positions)
    measure = np.sort(np.asarray(measure, dtype=np.int64))
    if np.intersect1d(measure, positions).size:
        raise ValueError("a draw's measuring points must not include its fitting points")
    keys = [k for k in ("logits", "labels", "posterior") if k in holdout]
    scored = calibrated_scores({k: np.asarray(holdout[k])[positions] for k in keys},
                               {k: np.asarray(holdout[k])[measure] for k in keys},
                               task_specs, multiclass_names, binary_names,
                               config_params=config_params, seed=seed)
    return measured_rows(scored, multiclass_names, truths)


def calibrator_draws(holdout: Mapping[str, np.ndarray], n_val: int, draws: int,
                     task_specs: Mapping[str, Any], multiclass_names: Sequence[str],
                     binary_names: Sequence[str], truths: Sequence[str], *, arch: str,
                     network: str | None = None,
                     config_params: Mapping[str, Mapping[str, Any]] | None = None,
                     seed: int = 0, log=None) -> pd.DataFrame:
    """Rows of draws 1..``draws`` of network ``network`` (default ``arch``) of
    architecture ``arch`` (columns :data:`CALIBRATOR_COLUMNS` + ``draw``),
    each fitted and measured on its own points of the network's permutation
    (:func:`draw_layout`)."""
    network = arch if network is None else network
    n = int(np.asarray(holdout["labels"]).size)
    parts = []
    for d, (pos, measure) in enumerate(draw_layout(n, n_val, draws, seed, network), start=1):
        f = draw_rows(holdout, pos, task_specs, multiclass_names, binary_names, truths,
                      config_params=config_params, seed=seed, measure=measure)
        parts.append(f.assign(arch=arch, network=network, **{CALIBRATOR_DRAW: d}))
        if log:
            log(f"{network}: draw {d} of {draws}: {len(f)} rows, fitted on {pos.size} and "
                f"measured on {measure.size} hold-out points")
    return pd.concat(parts, ignore_index=True)[CALIBRATOR_COLUMNS + [CALIBRATOR_DRAW]]


__all__ = ["draw_positions", "measure_positions", "draw_layout", "calibrated_scores",
           "measured_rows", "draw_rows", "calibrator_draws", "DRAW_SALT"]
