"""Tidy frame -> wide tables: rows = groups, columns = evaluators/calibrators
(docs/methods/10-results-and-tables.md §10.2,
docs/methods/11-verdicts.md §11.4).

:func:`aggregate` gives one statistic per cell (plain mean, std over seeds,
mode). :func:`aggregate_units` gives the cells of a ranked table with their
intervals, in three steps (:mod:`.policy` names the keys): the rows of a cell
are averaged within each unit (e.g. a (model, task, calibrator, seed): its
test sizes share one permutation), the unit means within each independent
cluster (e.g. the seed: its units share the test images), and the cell is the
mean of its cluster means with a t-interval over them (:mod:`.stats`). The
cluster means of each table row are kept for the paired significance tests.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from fitontest.study.schema import with_network
from .frames import order
from ..inference.stats import t_bounds


def _widen(agg: pd.Series, frame: pd.DataFrame, rows: list[str], columns: str,
           column_order: Sequence) -> pd.DataFrame:
    """Unstack ``agg`` (indexed by rows + [columns]) into the display layout."""
    wide = agg.unstack(columns) if len(agg) else pd.DataFrame(
        index=pd.MultiIndex.from_tuples([], names=rows + [columns])).unstack(columns)
    wide = wide.reindex(columns=list(column_order)).astype(np.float64)
    wide.columns.name = None
    if rows == ["_all"]:
        wide = wide.reindex(["all"])
        wide.index = pd.Index(["all"], name="")
    elif len(rows) == 1:
        wide = wide.reindex(order(frame, rows[0]))
        wide.index.name = rows[0]
    else:
        present = set(wide.index)
        full = pd.MultiIndex.from_product([order(frame, r) for r in rows], names=rows)
        wide = wide.reindex(pd.MultiIndex.from_tuples([t for t in full if t in present],
                                                      names=rows))
    return wide


def _row_keys(frame: pd.DataFrame, rows: Sequence[str]) -> tuple[pd.DataFrame, list[str]]:
    rows = list(rows)
    if not rows:
        frame = frame.assign(_all="all")
        rows = ["_all"]
    return frame, rows


def aggregate(frame: pd.DataFrame, measure: str, rows: Sequence[str] = (), *,
              columns: str = "evaluator", stat: str = "mean", scale: float = 1.0,
              column_order: Sequence | None = None) -> pd.DataFrame:
    """Wide table: rows = groups of ``rows`` (one row "all" if empty),
    columns = values of ``columns``, cells = ``stat`` of ``measure`` x ``scale``.

    ``stat``: "mean" (of every matching row); "std" (sample std over seeds of
    the per-seed means); "mode" (most frequent value, smallest on ties). NaN
    measures are skipped; a column whose every value is NaN stays, as NaN.
    """
    if column_order is None:
        column_order = order(frame, columns)
    f, rows = _row_keys(frame, rows)
    f = f[rows + [columns] + (["seed"] if stat == "std" else []) + [measure]].copy()
    f[measure] = pd.to_numeric(f[measure], errors="coerce").astype(np.float64)
    keys = rows + [columns]
    g = f.groupby(keys, sort=False, dropna=False)[measure]
    if stat == "mean":
        agg = g.mean()
    elif stat == "std":
        per_seed = f.groupby(keys + ["seed"], sort=False, dropna=False)[measure].mean()
        agg = per_seed.groupby(level=list(range(len(keys))), sort=False).std(ddof=1)
    elif stat == "mode":
        def _mode(x):
            m = x.dropna().mode()
            return float(m.min()) if len(m) else np.nan
        agg = g.agg(_mode)
    else:
        raise ValueError(f"unknown stat {stat!r}; use 'mean', 'std' or 'mode'")
    return _widen(agg, frame, rows, columns, column_order) * scale


@dataclass
class Cells:
    """Cell means with their t-intervals and cluster counts (same layout), and
    per table row the clusters x columns matrix of cluster means (scaled)."""

    mean: pd.DataFrame
    lo: pd.DataFrame
    hi: pd.DataFrame
    n_units: pd.DataFrame
    units: dict


def aggregate_units(frame: pd.DataFrame, measure: str, rows: Sequence[str], units: Sequence[str],
                    *, columns: str = "evaluator", scale: float = 1.0,
                    column_order: Sequence | None = None, level: float = 0.95,
                    clusters: Sequence[str] | None = None) -> Cells:
    """Cells of ``measure`` x ``scale``: the mean over the independent
    ``clusters`` (default: every unit is its own cluster) of the mean over
    their ``units`` (keys; those among ``rows`` are fixed by the row, and a
    row that fixes every cluster key has one cluster per cell)."""
    if column_order is None:
        column_order = order(frame, columns)
    # a frame of one network per architecture, written before the column existed
    frame = with_network(frame) if "network" in units else frame
    f, rows = _row_keys(frame, rows)
    unit_keys = [u for u in units if u not in rows and u != columns]
    if not unit_keys:   # the row fixes the unit: one unit per cell
        f = f.assign(_unit=0)
        unit_keys = ["_unit"]
    missing = [k for k in unit_keys if k not in f.columns]
    if missing:
        raise ValueError(f"unit keys {missing} are not columns of the frame")
    f = f[rows + [columns] + unit_keys + [measure]].copy()
    f[measure] = pd.to_numeric(f[measure], errors="coerce").astype(np.float64) * scale
    um = f.groupby(rows + [columns] + unit_keys, sort=False, dropna=False)[measure].mean()
    um = um.dropna()
    if clusters is not None:
        bad = [c for c in clusters if c not in units]
        if bad:
            raise ValueError(f"cluster keys {bad} are not among the unit keys {list(units)}")
        ckeys = [c for c in clusters if c in unit_keys]
        if ckeys != unit_keys:
            if not ckeys:
                um = um.groupby(level=list(range(len(rows) + 1)), sort=False).mean()
                um = pd.Series(um.to_numpy(), index=pd.MultiIndex.from_frame(
                    um.index.to_frame(index=False).assign(_unit=0)))
            else:
                um = um.groupby(level=rows + [columns] + ckeys, sort=False).mean()
    g = um.groupby(level=list(range(len(rows) + 1)), sort=False)
    mean, std, n = g.mean(), g.std(ddof=1), g.size()
    lo, hi = t_bounds(mean.to_numpy(), std.to_numpy(), n.to_numpy(), level)
    out = [_widen(pd.Series(v, index=mean.index), frame, rows, columns, column_order)
           for v in (mean.to_numpy(), lo, hi, n.to_numpy(dtype=np.float64))]
    out[3] = out[3].fillna(0).astype(int)
    by_row = um.unstack(columns).reindex(columns=list(column_order))
    by_row.columns.name = None
    unit_mats = {}
    index = out[0].index
    if len(by_row):
        grouped = by_row.groupby(level=list(range(len(rows))), sort=False)
        for key, sub in grouped:
            label = "all" if rows == ["_all"] else (key[0] if len(rows) == 1 else key)
            if isinstance(label, tuple) and len(rows) == 1:
                label = label[0]
            unit_mats[label] = sub.droplevel(list(range(len(rows))))
    unit_mats = {k: v for k, v in unit_mats.items() if k in index}
    return Cells(*out, units=unit_mats)
