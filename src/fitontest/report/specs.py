"""The paper's tables, declared as data, and the one builder that makes them.

A table is one :class:`TableSpec` in :data:`SPECS`: its source frame, the
measure, the row grouping, a filter, the independent units of a cell, the
Friedman blocks and the caption. :func:`build` turns a spec and the tidy
frames into a :class:`~.table.Table`; :func:`fitontest.report.write.write_all`
writes every spec under every truth estimator. Adding a table is one entry
plus a test, e.g. CMEE by model on the confidence task only::

    SPECS.append(TableSpec(
        name="table3_cmee_confidence_by_model", source="scores", measure="cmee",
        rows=("arch",), where="confidence",
        caption="CMEE of the evaluators on the confidence task, by model (values ×1000)."))

    def test_cmee_confidence_by_model():
        t = build(spec_named("table3_cmee_confidence_by_model"), {"scores": frame}, "isotonic")
        assert list(t.values.index) == ["r110", "d40"]   # + the expected cell means

Statistics (``stat``; docs/methods/11-intervals.md §11.3,
docs/methods/11-verdicts.md §11.4-§11.6): "interval" = mean over the
independent clusters of the spec's :class:`~.policy.Inference` (by default the
policy's for its source and measure) with a 95 % cluster t-interval, per-row
ranks and significance markers (:mod:`.policy`, :mod:`.stats`);
"mean" = plain mean of the rows; "std" = standard deviation over seeds of the
per-seed means (ddof 1; NaN with one seed); "mode" = most frequent value;
"coverage" = share of rows whose CE interval holds the population CE
(:mod:`.coverage`). Measures are score columns, or "spearman"/"spearman_sq":
the rank correlation across the ranked calibrators (across CE levels on
synthetic rows) between ``ce_used`` and ``true_ce`` (``_sq``: squared CE) per
(model, task, size, seed, evaluator), see :func:`.frames.spearman_by_group`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from fitontest.tasks import CONFIDENCE
from . import coverage
from .aggregate import aggregate, aggregate_units
from .frames import (TASK_WORDS, order, resolve_ranked_calibrators,
                     select_truth, spearman_by_group)
from . import policy
from .policy import Inference, inference_for
from ..inference.stats import friedman, significance_markers
from .table import Table, sections

# Friedman blocks: the units of the policy (descriptive: blocks of one seed
# share test images, so the Friedman p-value is optimistic; the caption says so)
SCORE_BLOCKS = policy.INFERENCE[("scores", "independent", "networks")].units
SPEARMAN_BLOCKS = policy.INFERENCE[("spearman", "independent", "networks")].units

FILTERS: dict[str, Callable[[pd.DataFrame], pd.Series]] = {
    "all": lambda f: pd.Series(True, index=f.index),
    "ovr": lambda f: f["task"] != CONFIDENCE,
    "confidence": lambda f: f["task"] == CONFIDENCE,
    "binary": lambda f: f["kind"] == "binary",
}


@dataclass(frozen=True)
class TableSpec:
    """One table. ``rows``: grouping columns, or sections as
    ``((label, columns), ...)``; ``section_by``: instead, one section per value
    of that column. ``blocks``: Friedman test and critical-difference diagram
    over these blocks (None: none)."""

    name: str
    source: str                       # "scores", "calibrators" or "synthetic"
    measure: str
    rows: tuple
    caption: str
    columns: str = "evaluator"
    where: str = "all"
    section_by: str | None = None
    stat: str = "interval"
    inference: Inference | None = None    # None: the policy's for source, measure and design
    blocks: tuple | None = None
    lower_is_better: bool = True
    scale: float | None = None            # None: the policy's for the measure
    decimals: int | None = None

    def inf(self, frame: pd.DataFrame | None = None) -> Inference:
        """The units and clusters of the cells: the spec's own, else the
        policy's for its source and measure under ``frame``'s design."""
        return self.inference or inference_for(self.source, self.measure, frame)

    @property
    def factor(self) -> float:
        return policy.scale_for(self.measure) if self.scale is None else self.scale


_words = policy.words


# ---------------------------------------------------------------------------
# the paper's tables

def _table2() -> list[TableSpec]:
    out = []
    what = {"ceac": "Calibration error after calibration (CEAC)",
            "cmee": "CMEE of the binary calibrators against the true map of the uncalibrated "
                    "scores"}
    for measure in ("ceac", "cmee", "ceac_sq", "cmee_sq"):
        base, sq = measure.replace("_sq", ""), measure.endswith("_sq")
        for by_model in (False, True):
            name = (f"table2_{base}{'_binary' if base == 'cmee' else ''}{'_sq' if sq else ''}"
                    f"{'_by_model' if by_model else ''}")
            out.append(TableSpec(
                name=name, source="calibrators", measure=measure, columns="calibrator",
                rows=("arch", "task") if by_model else ("task",),
                where="binary" if base == "cmee" else "all",
                blocks=("arch", "task") if name == "table2_ceac" else None,
                caption=(f"{what[base]}{', squared (L2)' if sq else ''} on the hold-out "
                         f"(values ×1000), "
                         f"{'per model and task' if by_model else 'per task, mean over models'}.")))
    return out


_T3_SECTIONS = (("overall", ()), ("by architecture", ("arch",)), ("by size", ("size",)),
                ("by task", ("task",)))


def _table3() -> list[TableSpec]:
    out = []
    for sq in ("", "_sq"):
        what = (f"CMEE{' (L2, squared)' if sq else ''} of the evaluators on the hold-out "
                f"(values ×1000)")
        common = dict(source="scores", measure="cmee" + sq)
        out.append(TableSpec(name=f"table3_cmee{sq}", rows=_T3_SECTIONS,
                             blocks=SCORE_BLOCKS if not sq else None,
                             caption=f"{what}, overall and by architecture, size and task.",
                             **common))
        for (label, rows), suffix in zip(_T3_SECTIONS, ("overall", "by_model", "by_size",
                                                       "by_task")):
            out.append(TableSpec(name=f"table3_cmee{sq}_{suffix}", rows=rows,
                                 caption=f"{what}, {label}.", **common))
        out.append(TableSpec(name=f"table3_cmee{sq}_std", rows=_T3_SECTIONS, stat="std",
                             caption=f"Standard deviation over seeds of the {what}, overall and "
                                     f"by architecture, size and task.", **common))
    return out


def _table4() -> list[TableSpec]:
    out = []
    for sq in ("", "_sq"):
        for tasks in ("ovr", "confidence"):
            l2 = " (L2: squared CE)" if sq else ""
            err = (f"CE-estimation error{l2} |estimate - true CE| of the evaluators on "
                   f"{TASK_WORDS[tasks]}, by test size (values ×1000); binning evaluators use "
                   f"their debiased estimate.")
            rho = (f"Spearman correlation{l2} between estimated and true CE across "
                   f"calibrators, per model, task, size and seed, averaged; "
                   f"{TASK_WORDS[tasks]}, by test size; higher is better.")
            for stat in ("interval", "std"):
                std = "_std" if stat == "std" else ""
                pre = "Standard deviation over seeds of the " if std else ""
                main = not sq and not std
                out.append(TableSpec(
                    name=f"table4_ce_error{sq}_{tasks}{std}", source="scores",
                    measure="ce_error" + sq, rows=("size",), where=tasks, stat=stat,
                    blocks=SCORE_BLOCKS if main else None,
                    caption=pre + err))
                out.append(TableSpec(
                    name=f"table4_spearman{sq}_{tasks}{std}", source="scores",
                    measure="spearman" + sq, rows=("size",), where=tasks, stat=stat,
                    blocks=SPEARMAN_BLOCKS if main else None,
                    lower_is_better=False, decimals=3, caption=pre + rho))
    return out


def _hyper() -> list[TableSpec]:
    return [TableSpec(
        name=f"hyper_{stat}_by_size", source="scores", measure="hyper", rows=("size",),
        stat=stat, decimals=1 if stat == "mean" else 0,
        caption=(f"{'Mean' if stat == 'mean' else 'Most frequent'} chosen hyper-parameter "
                 f"(number of bins, pieces, ...) of each evaluator by test size, over models, "
                 f"tasks, calibrators and seeds.")) for stat in ("mean", "mode")]


def _synthetic() -> list[TableSpec]:
    out = []
    what = {"cmee": "CMEE", "ce_error": "CE-estimation error |estimate - true CE|",
            "spearman": "Spearman correlation across the CE levels between estimated and "
                        "true CE"}
    for measure in ("cmee", "ce_error", "spearman"):
        for sq in ("", "_sq"):
            rho = measure == "spearman"
            for by in (None, "shape", "size"):
                where = ("by shape and test size" if by is None else
                         f"by {'shape' if by == 'shape' else 'test size'}")
                out.append(TableSpec(
                    name=f"synthetic_{measure}{sq}{'' if by is None else '_by_' + by}",
                    source="synthetic", measure=measure + sq,
                    rows=("size",) if by is None else (by,),
                    section_by="shape" if by is None else None,
                    lower_is_better=not rho, decimals=3 if rho else None,
                    caption=(f"Synthetic study: {what[measure]}{' (L2, squared)' if sq else ''} "
                             f"of the evaluators, {where}, mean over CE levels and seeds"
                             f"{'; higher is better' if rho else ' (values ×1000)'}.")))
    return out


def _coverage() -> list[TableSpec]:
    words = ("Coverage (%) of the evaluators' CE intervals: share of {what} whose interval "
             "[ce_lo, ce_hi] holds the population true CE, by test size.")
    return [TableSpec(name=f"coverage_{tasks}", source="scores", measure="coverage",
                      rows=("size",), where=tasks, stat="coverage", scale=100.0, decimals=1,
                      caption=words.format(what=f"score rows on {TASK_WORDS[tasks]}"))
            for tasks in ("ovr", "confidence")] + [
        TableSpec(name="synthetic_coverage", source="synthetic", measure="coverage",
                  rows=("size",), stat="coverage", scale=100.0, decimals=1,
                  caption=words.format(what="synthetic rows (every shape and CE level)"))]


SPECS: list[TableSpec] = _table2() + _table3() + _table4() + _hyper() + _synthetic() + _coverage()


def spec_named(name: str) -> TableSpec:
    for s in SPECS:
        if s.name == name:
            return s
    raise ValueError(f"no table spec named {name!r}")


# ---------------------------------------------------------------------------
# building

def _spearman_data(f: pd.DataFrame, spec: TableSpec, ranked_calibrators, notes: list[str]):
    x, y = ("ce_used_sq", "true_ce_sq") if spec.measure.endswith("_sq") else ("ce_used", "true_ce")
    if spec.source == "synthetic":
        rho = spearman_by_group(f, item="ce_level", x=x, y=y)
    else:
        chosen, note = resolve_ranked_calibrators(f["calibrator"], ranked_calibrators)
        notes.append(note)
        rho = spearman_by_group(f, item="calibrator", x=x, y=y, items=chosen)
    n_nan = int(rho["spearman"].isna().sum())
    if rho.empty:
        notes.append(f"No finite ({x}, {y}) pairs: every correlation is undefined.")
    elif n_nan:
        notes.append(f"{n_nan} of {len(rho)} groups had a constant estimate or truth "
                     f"(correlation undefined) and were skipped.")
    if rho.empty:   # keep the table's rows and units, every cell undefined
        keys = [k for k in ("arch", "network", "task", "shape", "size", "seed", "evaluator")
                if k in f]
        rho = f[keys].drop_duplicates().assign(spearman=np.nan)
    return rho, "spearman"


def _parts(data: pd.DataFrame, spec: TableSpec) -> list[tuple[str | None, pd.DataFrame, tuple]]:
    if spec.section_by is not None:
        return [(str(v), data[data[spec.section_by] == v], spec.rows)
                for v in order(data, spec.section_by)]
    if spec.rows and isinstance(spec.rows[0], tuple):
        return [(label, data, rows) for label, rows in spec.rows]
    return [(None, data, spec.rows)]


def _markers(cells, lower: bool, alpha: float,
             min_clusters: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Best (lowest mean, highest where higher is better) and not-significantly-
    worse cells of every row (:func:`.stats.significance_markers` on the row's
    clusters x columns matrix; too few clusters: every defined cell)."""
    mean = cells.mean
    vals = mean.to_numpy(dtype=np.float64)
    defined = np.isfinite(vals)
    best = np.zeros_like(defined)
    rows_ok = defined.any(axis=1)
    if rows_ok.any():
        filled = np.where(defined, vals if lower else -vals, np.inf)
        best[np.flatnonzero(rows_ok), filled[rows_ok].argmin(axis=1)] = True
    tie = defined.copy()
    for i, label in enumerate(mean.index):
        units = cells.units.get(label)
        if units is not None and rows_ok[i]:
            tie[i] = significance_markers(units, lower_is_better=lower, alpha=alpha,
                                          min_clusters=min_clusters)\
                .reindex(mean.columns).fillna(False).to_numpy(dtype=bool) & defined[i]
    wrap = lambda a: pd.DataFrame(a, index=mean.index, columns=mean.columns)  # noqa: E731
    return wrap(best), wrap(tie & ~best)


def _stack(parts: list[tuple[str | None, pd.DataFrame]]) -> pd.DataFrame:
    return parts[0][1] if parts[0][0] is None else sections(parts)


def _friedman_note(spec: TableSpec, data: pd.DataFrame, col: str, cols: list,
                   inf: Inference):
    block_mat = data.groupby(list(spec.blocks) + [spec.columns], sort=False)[col].mean()\
        .unstack(spec.columns).reindex(columns=cols)
    block_mat.columns.name = None
    stat, p, nb, nm = friedman(block_mat)
    if not np.isfinite(p):
        return block_mat, p, (f"Friedman test undefined ({nb} complete blocks "
                              f"{_words(spec.blocks)}, {nm} methods).")
    return block_mat, p, (f"Friedman test over {nb} blocks = {_words(spec.blocks)}, each "
                          f"averaged over the table's rows, and the {nm} methods defined in "
                          f"every block: χ² = {stat:.1f}, p = {p:.2g} (descriptive: blocks "
                          f"that share a {_words(inf.clusters)} cluster are not "
                          f"independent, so this p-value is optimistic).")


def _cached(cache: dict | None, key, make):
    if cache is None:
        return make()
    if key not in cache:
        cache[key] = make()
    return cache[key]


def _rows_of(spec: TableSpec, frames, truth) -> pd.DataFrame | None:
    f = select_truth(frames.get(spec.source), truth)
    if f is None or f.empty:
        return None
    if spec.where not in FILTERS:
        raise ValueError(f"unknown filter {spec.where!r}; known: {sorted(FILTERS)}")
    return f[FILTERS[spec.where](f)]


def build(spec: TableSpec, frames: Mapping[str, pd.DataFrame | None], truth: str | None = None,
          *, ranked_calibrators: Sequence[str] | None = None, level: float = 0.95,
          alpha: float = 0.05, cache: dict | None = None) -> Table | None:
    """The table of ``spec`` from ``frames`` (``{"scores": ..., "calibrators":
    ..., "synthetic": ...}``) under one truth; None when its input is missing.
    ``cache``: a dict shared by the builds of one set of frames and truth (the
    filtered rows and the Spearman correlations are computed once)."""
    if spec.where not in FILTERS:
        raise ValueError(f"unknown filter {spec.where!r}; known: {sorted(FILTERS)}")
    f = _cached(cache, ("rows", spec.source, spec.where),
                lambda: _rows_of(spec, frames, truth))
    if f is None or f.empty:
        return None
    if spec.stat == "coverage":
        return coverage.coverage_table(f, spec, truth, level=level)
    cols = order(f, spec.columns)
    notes: list[str] = []
    if spec.measure.startswith("spearman"):
        def spearman():
            words: list[str] = []
            return _spearman_data(f, spec, ranked_calibrators, words), words
        key = ("spearman", spec.source, spec.where, spec.measure.endswith("_sq"))
        (data, col), words = _cached(cache, key, spearman)
        notes += words
    else:
        data, col = f, spec.measure
    parts = _parts(data, spec)
    ranked = spec.stat == "interval"
    extra = {}
    if ranked:
        inf = spec.inf(f)
        cells = [(lab, aggregate_units(d, col, rows, inf.units, columns=spec.columns,
                                       scale=spec.factor, column_order=cols, level=level,
                                       clusters=inf.clusters))
                 for lab, d, rows in parts]
        marks = [(lab, _markers(c, spec.lower_is_better, alpha, inf.min_clusters))
                 for lab, c in cells]
        values = _stack([(lab, c.mean) for lab, c in cells])
        extra = dict(lo=_stack([(lab, c.lo) for lab, c in cells]),
                     hi=_stack([(lab, c.hi) for lab, c in cells]),
                     n_units=_stack([(lab, c.n_units) for lab, c in cells]),
                     best=_stack([(lab, m[0]) for lab, m in marks]),
                     not_worse=_stack([(lab, m[0] | m[1]) for lab, m in marks]))
        notes.insert(0, policy.method_note(inf, level, alpha))
        if spec.blocks:
            extra["blocks"], extra["friedman_p"], note = _friedman_note(spec, data, col, cols, inf)
            notes.append(note)
    else:
        stat = "mean" if spec.stat == "mean" else spec.stat
        values = _stack([(lab, aggregate(d, col, rows, columns=spec.columns, stat=stat,
                                         scale=spec.factor, column_order=cols))
                         for lab, d, rows in parts])
    if truth:
        notes.append(f"Truth: {truth}.")
    ranks = (values.rank(axis=1, ascending=spec.lower_is_better, method="average",
                         na_option="keep") if ranked else None)
    return Table(values=values, ranks=ranks, name=spec.name, caption=spec.caption,
                 lower_is_better=spec.lower_is_better, scale=spec.factor,
                 decimals=spec.decimals, notes=notes, **extra)


def build_tables(frames: Mapping[str, pd.DataFrame | None], truth: str | None, *,
                 sources: Sequence[str] = ("calibrators", "scores"),
                 ranked_calibrators: Sequence[str] | None = None) -> list[Table]:
    """Every table of ``SPECS`` from ``sources`` under one truth (those with input)."""
    cache: dict = {}
    out = [build(s, frames, truth, ranked_calibrators=ranked_calibrators, cache=cache)
           for s in SPECS if s.source in sources]
    return [t for t in out if t is not None]
