"""Tidy result frames -> the paper's tables (CSV, Markdown, LaTeX).

Inputs are the frames of :mod:`fitontest.schema`: ``scores`` (evaluators, one
row per arch, task, calibrator, evaluator, size, seed, truth), ``calibrators``
(post-hoc calibrators on the hold-out) and optionally ``synthetic``.

Layout (as in the paper): evaluators (or calibrators) are the **columns**,
aggregation groups (task, model, test size, shape) are the **rows**. Within
each row the columns are ranked (rank 1 = best: lowest error, highest
Spearman; ties share the average rank; NaN cells get no rank), and a final
row "avg. rank" averages each column's ranks over the rows where it has one.
Errors are shown x 1000; Spearman correlations and hyper-parameters as they
are. Undefined cells (e.g. CMEE of the estimate-only KCE) show "–" ("--" in
LaTeX).

Aggregation: a cell is the plain mean of every matching tidy row (so e.g.
``table3_cmee_by_size`` averages over models, tasks, calibrators and seeds).
Standard deviations (``*_std`` tables) are taken over seeds: the cell's rows
are first averaged per seed, then the sample standard deviation (ddof = 1)
of those seed means is reported (NaN with one seed).

Spearman (Table 4): for each (arch, task, size, seed, evaluator, truth) the
rank correlation across calibrators between ``ce_used`` and ``true_ce``
(``ce_used_sq``/``true_ce_sq`` for the L2 variant), restricted to the ranked
calibrators (default: the paper's six, intersected with those present; if
fewer than two of them are present, every calibrator present is used). A
group whose estimates or true values are constant has no defined correlation:
it is NaN and skipped in the mean, and the caption says how many were skipped.
On synthetic data the correlation is across the CE levels per
(shape, size, seed, evaluator).

Output naming scheme (:func:`write_all`): every table ``NAME`` is written for
every truth estimator ``T`` present as ``NAME__T.{csv,ranks.csv,md,tex}``; the
tables of the main truth (default ``isotonic``; the first truth present if it
is absent) are also written without suffix as ``NAME.{...}``. ``NAME.csv``
holds the displayed numbers (already x 1000 where the caption says so) at full
precision; ``NAME.ranks.csv`` the ranks with the "avg. rank" row (not written
for tables without ranks). An ``index.md`` listing every table is written last.
Table names:

- ``table2_ceac``, ``table2_ceac_by_model``: CEAC of every calibrator, rows =
  task (mean over models) or (model, task); ``table2_cmee_binary``,
  ``table2_cmee_binary_by_model``: CMEE of the binary calibrators;
- ``table3_cmee`` (sections: overall, by model, by size, by task) and the
  sections alone ``table3_cmee_overall``, ``table3_cmee_by_model``,
  ``table3_cmee_by_size``, ``table3_cmee_by_task``;
- ``table4_ce_error_ovr``, ``table4_ce_error_confidence``,
  ``table4_spearman_ovr``, ``table4_spearman_confidence`` (rows = size;
  "ovr" = every task except ``confidence``);
- ``hyper_mean_by_size``, ``hyper_mode_by_size``: chosen hyper-parameters;
- ``synthetic_{cmee,ce_error,spearman}`` (sections = shape, rows = size) and
  their ``_by_shape`` / ``_by_size`` versions.

L2 variants insert ``_sq`` after the measure (``table3_cmee_sq_by_size``,
``table4_spearman_sq_ovr``, ``synthetic_ce_error_sq_by_shape``); standard
deviations append ``_std`` (``table3_cmee_std``, ``table4_ce_error_ovr_std``).
A table whose input is missing (no binary calibrators, no confidence task, no
synthetic frame) is not written.
"""
from __future__ import annotations

import math
import os
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

PAPER_RANKED_CALIBRATORS = ("beta", "vecs", "platt", "pl3_ce", "scaling_binning", "isotonic")
CONFIDENCE_TASK = "confidence"
AVG_RANK = "avg. rank"
DASH_MD = "–"
DASH_TEX = "--"

# ---------------------------------------------------------------------------
# the Table object


@dataclass
class Table:
    """A table of numbers with per-row ranks of its columns.

    ``values``: rows = aggregation groups (a plain index, or a two-level
    MultiIndex whose first level is a section), columns = evaluators or
    calibrators; numbers as displayed (already scaled). ``ranks``: same shape
    (None for tables without ranks, e.g. hyper-parameters or std).
    """

    values: pd.DataFrame
    ranks: pd.DataFrame | None
    name: str
    caption: str
    lower_is_better: bool = True
    scale: float = 1000.0
    decimals: int | None = None     # None: chosen from the magnitude of the values
    notes: list[str] = field(default_factory=list)

    @property
    def avg_rank(self) -> pd.Series | None:
        """Mean rank of each column over the rows where it is ranked."""
        if self.ranks is None:
            return None
        return self.ranks.mean(axis=0, skipna=True)

    def ranks_with_average(self) -> pd.DataFrame | None:
        if self.ranks is None:
            return None
        r = self.ranks.copy()
        r.index = _flat_index(r.index)
        avg = self.avg_rank.to_frame().T
        avg.index = [AVG_RANK]
        return pd.concat([r, avg])

    def renamed(self, name: str, caption: str | None = None) -> "Table":
        return replace(self, name=name, caption=self.caption if caption is None else caption)

    def full_caption(self) -> str:
        return " ".join([self.caption, *self.notes]).strip()

    # -- rendering ------------------------------------------------------
    def _decimals(self) -> int:
        if self.decimals is not None:
            return self.decimals
        v = np.abs(self.values.to_numpy(dtype=np.float64).ravel())
        v = v[np.isfinite(v) & (v > 0)]
        if v.size == 0:
            return 1
        return int(np.clip(2 - math.floor(math.log10(float(np.median(v)))), 0, 4))

    def _cells(self, latex: bool) -> tuple[list[tuple[str, str]], list[list[str]]]:
        """Row (section, label) pairs and formatted cells, avg-rank row last."""
        dec = self._decimals()
        dash = DASH_TEX if latex else DASH_MD
        labels = _row_labels(self.values.index)
        rows = []
        for i in range(len(self.values)):
            cells = []
            for j in range(self.values.shape[1]):
                v = self.values.iat[i, j]
                r = None if self.ranks is None else self.ranks.iat[i, j]
                cells.append(_fmt_cell(v, r, dec, latex, dash))
            rows.append(cells)
        if self.ranks is not None:
            labels.append(("", AVG_RANK))
            rows.append([dash if not np.isfinite(a) else f"{a:.2f}" for a in self.avg_rank])
        return labels, rows

    def _row_header(self) -> str:
        names = [n for n in self.values.index.names if n is not None]
        if isinstance(self.values.index, pd.MultiIndex):
            names = names[1:]
        return " / ".join(str(n) for n in names)

    def to_markdown(self) -> str:
        labels, rows = self._cells(latex=False)
        cols = [str(c) for c in self.values.columns]
        out = [f"**{self.name}** — {self.full_caption()}", "",
               "| " + " | ".join([self._row_header()] + cols) + " |",
               "|" + "|".join([":---"] + ["---:"] * len(cols)) + "|"]
        last_section = None
        for (section, label), cells in zip(labels, rows):
            if section and section != last_section:
                out.append("| " + " | ".join([f"**{section}**"] + [""] * len(cols)) + " |")
            last_section = section or last_section
            lab = f"*{label}*" if label == AVG_RANK else str(label)
            out.append("| " + " | ".join([lab] + cells) + " |")
        return "\n".join(out) + "\n"

    def to_latex(self) -> str:
        labels, rows = self._cells(latex=True)
        cols = [_tex_escape(str(c)) for c in self.values.columns]
        ncol = len(cols) + 1
        body = [r"\toprule",
                " & ".join([_tex_escape(self._row_header())] + cols) + r" \\",
                r"\midrule"]
        last_section = None
        for (section, label), cells in zip(labels, rows):
            if label == AVG_RANK:
                body.append(r"\midrule")
            elif section and section != last_section:
                if last_section is not None:
                    body.append(r"\midrule")
                body.append(rf"\multicolumn{{{ncol}}}{{l}}{{\textit{{{_tex_escape(section)}}}}} \\")
            last_section = section or last_section
            body.append(" & ".join([_tex_escape(str(label))] + cells) + r" \\")
        body.append(r"\bottomrule")
        tabular = [rf"\begin{{tabular}}{{l{'r' * len(cols)}}}", *body, r"\end{tabular}"]
        if len(cols) > 8:
            tabular = [r"\resizebox{\linewidth}{!}{%", *tabular, "}"]
        return "\n".join([
            "% generated by fitontest.tables; needs \\usepackage{booktabs,graphicx}",
            r"\begin{table}[t]",
            r"\centering",
            rf"\caption{{{_tex_escape(self.full_caption())}}}",
            rf"\label{{tab:{self.name}}}",
            *tabular,
            r"\end{table}",
        ]) + "\n"


def _fmt_rank(r: float) -> str:
    return f"{r:.0f}" if float(r).is_integer() else f"{r:.1f}"


def _fmt_cell(v, r, dec: int, latex: bool, dash: str) -> str:
    if v is None or not np.isfinite(v):
        return dash
    num = f"{v:.{dec}f}"
    if latex and num.startswith("-"):
        num = "-" + num[1:]
    if r is None or not np.isfinite(r):
        return f"${num}$" if latex else num
    return f"${num}_{{{_fmt_rank(r)}}}$" if latex else f"{num} ({_fmt_rank(r)})"


_TEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
                "^": r"\textasciicircum{}", "–": "--", "×": r"$\times$", "|": r"$|$",
                "−": "-"}


def _tex_escape(s: str) -> str:
    return "".join(_TEX_SPECIAL.get(ch, ch) for ch in s)


def _label(v) -> str:
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return str(int(v))
    return str(v)


def _row_labels(index: pd.Index) -> list[tuple[str, str]]:
    if isinstance(index, pd.MultiIndex):
        return [(_label(t[0]), " / ".join(_label(x) for x in t[1:])) for t in index]
    return [("", _label(v)) for v in index]


def _flat_index(index: pd.Index) -> pd.Index:
    if isinstance(index, pd.MultiIndex):
        return pd.Index([" / ".join(_label(x) for x in t) for t in index])
    return pd.Index([_label(v) for v in index])


# ---------------------------------------------------------------------------
# ordering, filtering, ranking, aggregation


def _unique(values: Iterable) -> list:
    return list(pd.unique(pd.Series(list(values))))


def _order(frame: pd.DataFrame, key: str) -> list:
    """Display order of the values of ``key``: numbers sorted, the tasks with
    ``confidence`` last, everything else in order of first appearance."""
    vals = _unique(frame[key].dropna())
    if key in ("size", "seed", "ce_level") or all(
            isinstance(v, (int, float, np.integer, np.floating)) for v in vals):
        return sorted(vals)
    if key == "task":
        return [v for v in vals if v != CONFIDENCE_TASK] + [v for v in vals if v == CONFIDENCE_TASK]
    if key == "calibrator" and "kind" in frame.columns:
        kind_rank = {"none": 0, "multiclass": 1, "binary": 2}
        first_kind = frame.drop_duplicates("calibrator").set_index("calibrator")["kind"]
        return sorted(vals, key=lambda c: (kind_rank.get(first_kind.get(c), 3), vals.index(c)))
    if key == "calibrator":
        return sorted(vals, key=lambda c: (c != "none", vals.index(c)))
    return vals


def rank_rows(values: pd.DataFrame, lower_is_better: bool = True) -> pd.DataFrame:
    """Rank the columns within each row (1 = best, ties averaged, NaN unranked)."""
    return values.rank(axis=1, ascending=lower_is_better, method="average", na_option="keep")


def select_truth(frame: pd.DataFrame | None, truth: str | None) -> pd.DataFrame:
    """Rows of one truth estimator (``None``: the frame must hold only one)."""
    if frame is None:
        return pd.DataFrame()
    if frame.empty or "truth" not in frame.columns:
        return frame
    if truth is None:
        truths = _unique(frame["truth"])
        if len(truths) > 1:
            raise ValueError(f"the frame holds several truth estimators {truths}; pass truth=")
        return frame
    return frame[frame["truth"] == truth]


def aggregate(frame: pd.DataFrame, measure: str, rows: Sequence[str] = (), *,
              columns: str = "evaluator", stat: str = "mean", scale: float = 1.0,
              column_order: Sequence | None = None) -> pd.DataFrame:
    """Wide table: rows = groups of ``rows`` (one row "all" if empty),
    columns = values of ``columns``, cells = ``stat`` of ``measure`` x ``scale``.

    ``stat``: "mean"; "std" (sample std over seeds of the per-seed means);
    "mode" (most frequent value, smallest on ties). NaN measures are skipped;
    a column whose every value is NaN stays, as NaN.
    """
    rows = list(rows)
    if column_order is None:
        column_order = _order(frame, columns)
    f = frame[rows + [columns] + (["seed"] if stat == "std" else []) + [measure]].copy()
    f[measure] = pd.to_numeric(f[measure], errors="coerce").astype(np.float64)
    if not rows:
        f["_all"] = "all"
        rows = ["_all"]
    keys = rows + [columns]
    if stat == "mean":
        agg = f.groupby(keys, sort=False, dropna=False)[measure].mean()
    elif stat == "std":
        per_seed = f.groupby(keys + ["seed"], sort=False, dropna=False)[measure].mean()
        agg = per_seed.groupby(level=list(range(len(keys))), sort=False).std(ddof=1)
    elif stat == "mode":
        def _mode(x):
            m = x.dropna().mode()
            return float(m.min()) if len(m) else np.nan
        agg = f.groupby(keys, sort=False, dropna=False)[measure].agg(_mode)
    else:
        raise ValueError(f"unknown stat {stat!r}; use 'mean', 'std' or 'mode'")
    wide = agg.unstack(columns)
    wide = wide.reindex(columns=list(column_order)).astype(np.float64) * scale
    wide.columns.name = None
    if rows == ["_all"]:
        wide.index = pd.Index(["all"], name="")
    elif len(rows) == 1:
        wide = wide.reindex(_order(frame, rows[0]))
        wide.index.name = rows[0]
    else:
        present = set(wide.index)
        full = pd.MultiIndex.from_product([_order(frame, r) for r in rows], names=rows)
        wide = wide.reindex(pd.MultiIndex.from_tuples([t for t in full if t in present],
                                                      names=rows))
    return wide


def _make(values: pd.DataFrame, name: str, caption: str, *, lower_is_better: bool = True,
          ranked: bool = True, scale: float = 1000.0, decimals: int | None = None,
          notes: Sequence[str] = ()) -> Table:
    ranks = rank_rows(values, lower_is_better) if ranked else None
    return Table(values=values, ranks=ranks, name=name, caption=caption,
                 lower_is_better=lower_is_better, scale=scale, decimals=decimals,
                 notes=list(notes))


def sections(parts: Sequence[tuple[str, pd.DataFrame]]) -> pd.DataFrame:
    """Stack wide tables into one with a (section, row) MultiIndex."""
    frames = []
    for label, wide in parts:
        w = wide.copy()
        w.index = pd.MultiIndex.from_tuples(
            [(label, lab) for _, lab in _row_labels(w.index)], names=["section", "group"])
        frames.append(w)
    out = pd.concat(frames)
    return out


def _scale_words(scale: float) -> str:
    return " (values ×1000)" if scale == 1000 else ""


def _truth_words(truth: str | None) -> str:
    return f" Truth: {truth}." if truth else ""


# ---------------------------------------------------------------------------
# Spearman


def spearman_by_group(frame: pd.DataFrame, *, item: str = "calibrator",
                      x: str = "ce_used", y: str = "true_ce",
                      keys: Sequence[str] | None = None,
                      items: Sequence | None = None) -> pd.DataFrame:
    """Spearman correlation across ``item`` between ``x`` and ``y`` per group.

    ``keys`` default to the frame's key columns other than ``item``
    (arch, task, size, seed, evaluator, truth for evaluator scores; shape,
    size, seed, evaluator, truth for synthetic rows, whose ``item`` is
    ``ce_level``). Rows with NaN ``x`` or ``y`` are dropped; a group with
    fewer than two items, or with constant ``x`` or ``y``, gets NaN.
    Returns ``keys`` + ``spearman`` + ``n_items``. Ties get average ranks
    (this is scipy.stats.spearmanr, vectorised over groups).
    """
    if keys is None:
        cand = ["arch", "task", "calibrator", "shape", "ce_level",
                "evaluator", "size", "seed", "truth"]
        keys = [k for k in cand if k in frame.columns and k != item]
    keys = list(keys)
    f = frame[keys + [item, x, y]].copy()
    if items is not None:
        f = f[f[item].isin(list(items))]
    f[x] = pd.to_numeric(f[x], errors="coerce")
    f[y] = pd.to_numeric(f[y], errors="coerce")
    f = f.dropna(subset=[x, y])
    if f.empty:
        return pd.DataFrame(columns=keys + ["spearman", "n_items"])
    g = f.groupby(keys, sort=False, dropna=False)
    rx = g[x].rank(method="average")
    ry = g[y].rank(method="average")
    dx = rx - rx.groupby([f[k] for k in keys], sort=False, dropna=False).transform("mean")
    dy = ry - ry.groupby([f[k] for k in keys], sort=False, dropna=False).transform("mean")
    tmp = pd.DataFrame({"xy": dx * dy, "xx": dx * dx, "yy": dy * dy})
    for k in keys:
        tmp[k] = f[k].to_numpy()
    s = tmp.groupby(keys, sort=False, dropna=False).agg(
        xy=("xy", "sum"), xx=("xx", "sum"), yy=("yy", "sum"), n_items=("xy", "size"))
    denom = np.sqrt(s["xx"].to_numpy() * s["yy"].to_numpy())
    eps = 1e-12 * np.maximum(1.0, s["n_items"].to_numpy(dtype=np.float64) ** 3)
    ok = (denom > eps) & (s["n_items"].to_numpy() >= 2)
    rho = np.full(len(s), np.nan)
    rho[ok] = np.clip(s["xy"].to_numpy()[ok] / denom[ok], -1.0, 1.0)
    out = s.reset_index()[keys]
    out["spearman"] = rho
    out["n_items"] = s["n_items"].to_numpy()
    return out


def resolve_ranked_calibrators(present: Iterable[str],
                               ranked: Sequence[str] | None = None) -> tuple[list[str], str]:
    """The calibrators Spearman ranks across, and a note saying which."""
    present = _unique(present)
    wanted = list(PAPER_RANKED_CALIBRATORS if ranked is None else ranked)
    chosen = [c for c in wanted if c in present]
    if len(chosen) >= 2:
        missing = [c for c in wanted if c not in present]
        note = f"Spearman across the calibrators {', '.join(chosen)}."
        if missing:
            note += f" (Not present: {', '.join(missing)}.)"
        return chosen, note
    return present, (f"Spearman across every calibrator present ({', '.join(map(str, present))}); "
                     f"fewer than two of {', '.join(wanted)} were present.")


# ---------------------------------------------------------------------------
# the paper's tables


def table2_calibrators(calibrators: pd.DataFrame, truth: str | None = None, *,
                       measure: str = "ceac", by_model: bool = False,
                       binary_only: bool | None = None) -> Table | None:
    """Table 2: a calibrator measure on the hold-out, rows = task (mean over
    models) or (model, task), columns = calibrators.

    ``measure``: "ceac" (every calibrator) or "cmee" (binary calibrators only,
    the default for CMEE), or their ``_sq`` versions. None if nothing to show.
    """
    f = select_truth(calibrators, truth)
    if binary_only is None:
        binary_only = measure.startswith("cmee")
    if binary_only and not f.empty:
        f = f[f["kind"] == "binary"]
    if f.empty:
        return None
    rows = ["arch", "task"] if by_model else ["task"]
    values = aggregate(f, measure, rows, columns="calibrator", scale=1000.0)
    base = measure.replace("_sq", "")
    sq = measure.endswith("_sq")
    what = {"ceac": "Calibration error after calibration (CEAC)",
            "cmee": "CMEE of the binary calibrators against the true map of the uncalibrated scores"}[base]
    caption = (f"{what}{', squared (L2)' if sq else ''} on the hold-out{_scale_words(1000)}, "
               f"{'per model and task' if by_model else 'per task, mean over models'}; "
               f"rank within each row.{_truth_words(truth)}")
    name = f"table2_{base}{'_binary' if base == 'cmee' else ''}{'_sq' if sq else ''}"
    name += "_by_model" if by_model else ""
    return _make(values, name, caption)


_TABLE3_SECTIONS = (("overall", "overall", []), ("by model", "by_model", ["arch"]),
                    ("by size", "by_size", ["size"]), ("by task", "by_task", ["task"]))


def table3_cmee(scores: pd.DataFrame, truth: str | None = None, *, by: str | None = None,
                squared: bool = False, stat: str = "mean") -> Table | None:
    """Table 3: CMEE of the evaluators (hold-out column ``cmee``).

    ``by``: None for the paper's sectioned table (overall, by model, by size,
    by task) or one of "overall", "arch"/"model", "size", "task".
    ``stat="std"``: standard deviation over seeds, without ranks.
    """
    f = select_truth(scores, truth)
    if f.empty:
        return None
    measure = "cmee_sq" if squared else "cmee"
    col_order = _order(f, "evaluator")
    if by == "model":
        by = "arch"
    if by is None:
        parts = [(label, aggregate(f, measure, rows, stat=stat, scale=1000.0,
                                   column_order=col_order))
                 for label, _, rows in _TABLE3_SECTIONS]
        values, suffix, what = sections(parts), "", "overall and by model, size and task"
    else:
        match = [s for s in _TABLE3_SECTIONS if (s[2] == [by] or (by == "overall" and not s[2]))]
        if not match:
            raise ValueError(f"by must be None, 'overall', 'arch', 'size' or 'task', got {by!r}")
        label, suffix, rows = match[0]
        values = aggregate(f, measure, rows, stat=stat, scale=1000.0, column_order=col_order)
        suffix, what = "_" + suffix, label
    std = stat == "std"
    name = f"table3_{measure}{suffix}{'_std' if std else ''}"
    caption = (f"{'Standard deviation over seeds of the ' if std else ''}"
               f"CMEE{' (L2, squared)' if squared else ''} of the evaluators on the hold-out"
               f"{_scale_words(1000)}, {what}"
               f"{'' if std else '; rank within each row'}.{_truth_words(truth)}")
    return _make(values, name, caption, ranked=not std)


def _task_subset(f: pd.DataFrame, tasks: str) -> pd.DataFrame:
    if tasks == "ovr":
        return f[f["task"] != CONFIDENCE_TASK]
    if tasks == "confidence":
        return f[f["task"] == CONFIDENCE_TASK]
    if tasks == "all":
        return f
    raise ValueError(f"tasks must be 'ovr', 'confidence' or 'all', got {tasks!r}")


def _task_rows(scores: pd.DataFrame, truth: str | None, tasks: str) -> pd.DataFrame:
    """The rows of one truth estimator and task subset (empty stays empty)."""
    return _task_subset(select_truth(scores, truth), tasks) if not scores.empty else scores


_TASK_WORDS = {"ovr": "one-vs-rest tasks", "confidence": "the confidence task", "all": "all tasks"}


def table4_ce_error(scores: pd.DataFrame, truth: str | None = None, *, tasks: str = "ovr",
                    squared: bool = False, stat: str = "mean") -> Table | None:
    """Table 4 (left): CE-estimation error |ce_used - true_ce| by test size."""
    f = _task_rows(scores, truth, tasks)
    if f.empty:
        return None
    measure = "ce_error_sq" if squared else "ce_error"
    values = aggregate(f, measure, ["size"], stat=stat, scale=1000.0)
    std = stat == "std"
    sq = "_sq" if squared else ""
    name = f"table4_ce_error{sq}_{tasks}{'_std' if std else ''}"
    caption = (f"{'Standard deviation over seeds of the ' if std else ''}"
               f"CE-estimation error{' (L2: squared CE)' if squared else ''} "
               f"|estimate - true CE| of the evaluators on {_TASK_WORDS[tasks]}, by test size"
               f"{_scale_words(1000)}; binning evaluators use their debiased estimate"
               f"{'' if std else '; rank within each row'}.{_truth_words(truth)}")
    return _make(values, name, caption, ranked=not std)


def _spearman_input(scores, truth, tasks, squared, ranked_calibrators):
    f = _task_rows(scores, truth, tasks)
    if f.empty:
        return None
    chosen, note = resolve_ranked_calibrators(f["calibrator"], ranked_calibrators)
    x, y = ("ce_used_sq", "true_ce_sq") if squared else ("ce_used", "true_ce")
    rho = spearman_by_group(f, item="calibrator", x=x, y=y, items=chosen)
    # keep every evaluator as a column, even one without any defined correlation
    return f, rho, note, x, y, _order(f, "evaluator")


def table4_spearman(scores: pd.DataFrame, truth: str | None = None, *, tasks: str = "ovr",
                    squared: bool = False, ranked_calibrators: Sequence[str] | None = None,
                    stat: str = "mean", _computed=None) -> Table | None:
    """Table 4 (right): mean Spearman correlation, across the ranked
    calibrators, between estimated and true CE, by test size (higher is better)."""
    computed = _computed or _spearman_input(scores, truth, tasks, squared, ranked_calibrators)
    if computed is None:
        return None
    f, rho, note, x, y, order = computed
    n_nan = int(rho["spearman"].isna().sum())
    notes = [note]
    if rho.empty:   # no estimate/truth pairs at all: every cell undefined
        values = pd.DataFrame(np.nan, index=pd.Index(_order(f, "size"), name="size"),
                              columns=order)
        notes.append(f"No finite ({x}, {y}) pairs: every correlation is undefined.")
    else:
        values = aggregate(rho, "spearman", ["size"], stat=stat, scale=1.0, column_order=order)
    if n_nan:
        notes.append(f"{n_nan} of {len(rho)} groups had a constant estimate or truth "
                     f"(correlation undefined) and were skipped.")
    std = stat == "std"
    sq = "_sq" if squared else ""
    name = f"table4_spearman{sq}_{tasks}{'_std' if std else ''}"
    caption = (f"{'Standard deviation over seeds of the ' if std else ''}"
               f"Spearman correlation{' (L2: squared CE)' if squared else ''} between "
               f"estimated and true CE across calibrators, per model, task, size and seed, "
               f"averaged; {_TASK_WORDS[tasks]}, by test size"
               f"{'' if std else '; higher is better, rank within each row'}.{_truth_words(truth)}")
    return _make(values, name, caption, lower_is_better=False, ranked=not std, scale=1.0,
                 decimals=3, notes=notes)


def hyper_table(scores: pd.DataFrame, truth: str | None = None, *, stat: str = "mean") -> Table | None:
    """Chosen hyper-parameters (bins, pieces, ...) per evaluator and test size;
    "–" for evaluators without one."""
    f = select_truth(scores, truth)
    if f.empty:
        return None
    values = aggregate(f, "hyper", ["size"], stat=stat, scale=1.0)
    caption = (f"{'Mean' if stat == 'mean' else 'Most frequent'} chosen hyper-parameter "
               f"(number of bins, pieces, ...) of each evaluator by test size, over models, "
               f"tasks, calibrators and seeds.{_truth_words(truth)}")
    return _make(values, f"hyper_{stat}_by_size", caption, ranked=False, scale=1.0,
                 decimals=1 if stat == "mean" else 0)


def build_tables(scores: pd.DataFrame | None, calibrators: pd.DataFrame | None,
                 truth: str, *, ranked_calibrators: Sequence[str] | None = None) -> list[Table]:
    """Every real-data table under one truth estimator."""
    scores = select_truth(scores, truth)
    calibrators = select_truth(calibrators, truth)
    out: list[Table | None] = []
    if not calibrators.empty:
        for measure in ("ceac", "cmee", "ceac_sq", "cmee_sq"):
            for by_model in (False, True):
                out.append(table2_calibrators(calibrators, truth, measure=measure,
                                              by_model=by_model))
    if not scores.empty:
        for squared in (False, True):
            out.append(table3_cmee(scores, truth, squared=squared))
            for by in ("overall", "arch", "size", "task"):
                out.append(table3_cmee(scores, truth, by=by, squared=squared))
            out.append(table3_cmee(scores, truth, squared=squared, stat="std"))
        for squared in (False, True):
            for tasks in ("ovr", "confidence"):
                rho = _spearman_input(scores, truth, tasks, squared, ranked_calibrators)
                for stat in ("mean", "std"):
                    out.append(table4_ce_error(scores, truth, tasks=tasks, squared=squared,
                                               stat=stat))
                    out.append(table4_spearman(scores, truth, tasks=tasks, squared=squared,
                                               stat=stat, _computed=rho))
        out.append(hyper_table(scores, truth, stat="mean"))
        out.append(hyper_table(scores, truth, stat="mode"))
    return [t for t in out if t is not None]


# ---------------------------------------------------------------------------
# synthetic tables


def synthetic_table(synthetic: pd.DataFrame, measure: str = "cmee", *, by: str | None = None,
                    squared: bool = False, truth: str | None = None) -> Table | None:
    """Synthetic-study table of ``measure`` ("cmee", "ce_error" or "spearman").

    ``by``: None (sections = shape, rows = size), "shape" or "size".
    Spearman is across the CE levels per (shape, size, seed, evaluator).
    """
    f = select_truth(synthetic, truth)
    if f is None or f.empty:
        return None
    col_order = _order(f, "evaluator")
    notes: list[str] = []
    if measure == "spearman":
        x, y = ("ce_used_sq", "true_ce_sq") if squared else ("ce_used", "true_ce")
        data = spearman_by_group(f, item="ce_level", x=x, y=y)
        n_nan = int(data["spearman"].isna().sum())
        if n_nan:
            notes.append(f"{n_nan} of {len(data)} groups had a constant estimate or truth "
                         f"(correlation undefined) and were skipped.")
        col, scale, lower, dec = "spearman", 1.0, False, 3
        what = "Spearman correlation across the CE levels between estimated and true CE"
    elif measure in ("cmee", "ce_error"):
        data, col, scale, lower, dec = f, measure + ("_sq" if squared else ""), 1000.0, True, None
        what = {"cmee": "CMEE", "ce_error": "CE-estimation error |estimate - true CE|"}[measure]
    else:
        raise ValueError(f"measure must be 'cmee', 'ce_error' or 'spearman', got {measure!r}")
    if data.empty:
        return None
    if by is None:
        shapes = _order(data, "shape")
        values = sections([(sh, aggregate(data[data["shape"] == sh], col, ["size"], scale=scale,
                                          column_order=col_order)) for sh in shapes])
        where, suffix = "by shape and test size", ""
    elif by in ("shape", "size"):
        values = aggregate(data, col, [by], scale=scale, column_order=col_order)
        where, suffix = f"by {'shape' if by == 'shape' else 'test size'}", f"_by_{by}"
    else:
        raise ValueError(f"by must be None, 'shape' or 'size', got {by!r}")
    sq = "_sq" if squared else ""
    name = f"synthetic_{measure}{sq}{suffix}"
    caption = (f"Synthetic study: {what}{' (L2, squared)' if squared else ''} of the evaluators, "
               f"{where}, mean over CE levels and seeds{_scale_words(scale)}; "
               f"{'higher is better; ' if not lower else ''}rank within each row."
               f"{_truth_words(truth)}")
    return _make(values, name, caption, lower_is_better=lower, scale=scale, decimals=dec,
                 notes=notes)


def build_synthetic_tables(synthetic: pd.DataFrame | None, truth: str | None = None) -> list[Table]:
    if synthetic is None or synthetic.empty:
        return []
    out = []
    for measure in ("cmee", "ce_error", "spearman"):
        for squared in (False, True):
            for by in (None, "shape", "size"):
                out.append(synthetic_table(synthetic, measure, by=by, squared=squared,
                                           truth=truth))
    return [t for t in out if t is not None]


# ---------------------------------------------------------------------------
# writing


def _write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _csv(frame: pd.DataFrame) -> str:
    f = frame.copy()
    if isinstance(f.index, pd.MultiIndex):
        f = f.reset_index()
    else:
        f.index = _flat_index(f.index)
        f.index.name = frame.index.name or "group"
        f = f.reset_index()
    return f.to_csv(index=False, float_format="%.10g", na_rep="")


def write_table(table: Table, out_dir, name: str | None = None) -> list[Path]:
    """Write ``{name}.csv``, ``{name}.ranks.csv`` (if ranked), ``{name}.md``
    and ``{name}.tex`` into ``out_dir`` atomically; returns the paths."""
    out_dir = Path(out_dir)
    name = name or table.name
    paths = []
    p = out_dir / f"{name}.csv"
    _write_text(p, _csv(table.values))
    paths.append(p)
    ranks = table.ranks_with_average()
    if ranks is not None:
        p = out_dir / f"{name}.ranks.csv"
        r = ranks.copy()
        r.index.name = "group"
        _write_text(p, r.reset_index().to_csv(index=False, float_format="%.10g", na_rep=""))
        paths.append(p)
    p = out_dir / f"{name}.md"
    _write_text(p, table.to_markdown())
    paths.append(p)
    p = out_dir / f"{name}.tex"
    _write_text(p, table.to_latex())
    paths.append(p)
    return paths


def _truths(*frames: pd.DataFrame | None) -> list[str]:
    out: list[str] = []
    for f in frames:
        if f is not None and not f.empty and "truth" in f.columns:
            out += [t for t in _unique(f["truth"]) if t not in out]
    return out


def _main(truths: list[str], main: str) -> str | None:
    if not truths:
        return None
    return main if main in truths else truths[0]


def write_all(scores: pd.DataFrame | None, calibrators: pd.DataFrame | None, out_dir,
              synthetic: pd.DataFrame | None = None,
              ranked_calibrators: Sequence[str] | None = None,
              main_truth: str = "isotonic") -> list[Path]:
    """Write every table under every truth (naming scheme in the module docstring).

    Returns the written paths; ``index.md`` (a list of the tables with their
    captions) is written last and is the final path.
    """
    out_dir = Path(out_dir)
    paths: list[Path] = []
    index: list[str] = ["# Tables", "",
                        "`NAME__TRUTH.*` exist for every truth estimator; `NAME.*` (no suffix) "
                        "are the main truth's.", ""]

    def emit(tables: list[Table], truth: str, is_main: bool) -> None:
        for t in tables:
            paths.extend(write_table(t, out_dir, f"{t.name}__{truth}"))
            if is_main:
                paths.extend(write_table(t, out_dir, t.name))
            index.append(f"- `{t.name}__{truth}`{' (main: `' + t.name + '`)' if is_main else ''}: "
                         f"{t.full_caption()}")

    truths = _truths(scores, calibrators)
    main = _main(truths, main_truth)
    for truth in truths:
        emit(build_tables(scores, calibrators, truth, ranked_calibrators=ranked_calibrators),
             truth, truth == main)
    syn_truths = _truths(synthetic)
    syn_main = _main(syn_truths, "exact")
    for truth in syn_truths:
        emit(build_synthetic_tables(synthetic, truth), truth, truth == syn_main)
    p = out_dir / "index.md"
    _write_text(p, "\n".join(index) + "\n")
    paths.append(p)
    return paths


__all__ = ["Table", "PAPER_RANKED_CALIBRATORS", "rank_rows", "select_truth", "aggregate",
           "sections", "spearman_by_group", "resolve_ranked_calibrators", "table2_calibrators",
           "table3_cmee", "table4_ce_error", "table4_spearman", "hyper_table", "build_tables",
           "synthetic_table", "build_synthetic_tables", "write_table", "write_all"]
