"""Figures of the study from the tidy score frames: the ranking of the
calibrators by each evaluator (Figure 15) and the evaluators by test size
with 95 % interval bars."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from ..aggregate import aggregate_units
from ..frames import order, resolve_ranked_calibrators, select_truth, spearman_by_group, task_subset
from .. import policy
from .axes import legend_outside, method_styles, new_ax

def ranking_figure(scores_df: pd.DataFrame, network, task, size, *, truth: str | None = None,
                   seed=None, evaluators: Sequence[str] | None = None,
                   calibrators: Sequence[str] | None = None, squared: bool = False, ax=None):
    """Figure 15: how each evaluator ranks the calibrators of one network and
    task at one test size, next to the ranking by the true CE (first column).

    ``network``: a value of the frame's ``network`` column (of ``arch`` in a
    frame without one). Estimates and true CE are averaged over seeds unless
    ``seed`` is given. Each evaluator's label shows its Spearman correlation
    with the truth.
    """
    f = select_truth(scores_df, truth)
    key = "network" if "network" in f.columns else "arch"
    f = f[(f[key] == network) & (f["task"] == task) & (f["size"] == size)]
    if seed is not None:
        f = f[f["seed"] == seed]
    if calibrators is not None:
        f = f[f["calibrator"].isin(list(calibrators))]
    if evaluators is not None:
        f = f[f["evaluator"].isin(list(evaluators))]
    if f.empty:
        raise ValueError(f"no score rows for {key}={network!r}, task={task!r}, size={size!r}")
    x, yv = ("ce_used_sq", "true_ce_sq") if squared else ("ce_used", "true_ce")
    evs = list(evaluators) if evaluators is not None else order(f, "evaluator")
    cals = order(f, "calibrator")
    est = f.groupby(["evaluator", "calibrator"])[x].mean().unstack("calibrator")
    est = est.reindex(index=evs, columns=cals)
    true = f.groupby("calibrator")[yv].mean().reindex(cals)
    cols = pd.concat([true.rename("true CE").to_frame().T, est])
    ranks = cols.rank(axis=1, method="average")            # 1 = lowest CE
    ax = new_ax(ax, figsize=(1.0 + 0.9 * len(cols), 0.8 + 0.35 * len(cals)))
    xs = np.arange(len(cols))
    for i, cal in enumerate(cals):
        r = ranks[cal].to_numpy()
        ax.plot(xs, r, "-o", color=f"C{i % 10}", lw=1.5, ms=4, label=str(cal))
        if np.isfinite(r[0]):
            ax.text(-0.15, r[0], str(cal), ha="right", va="center", fontsize=7, color=f"C{i % 10}")
    labels = ["true CE"]
    for ev in est.index:
        ok = np.isfinite(est.loc[ev].to_numpy()) & np.isfinite(true.to_numpy())
        a, b = est.loc[ev].to_numpy()[ok], true.to_numpy()[ok]
        rho = np.nan
        if ok.sum() >= 2 and np.ptp(a) > 0 and np.ptp(b) > 0:
            rho = float(spearmanr(a, b).statistic)
        labels.append(f"{ev}\nρ={rho:.2f}" if np.isfinite(rho) else f"{ev}\nρ=–")
    ax.set_xticks(xs)
    ax.set_xticklabels(labels, rotation=45, ha="right", fontsize=7)
    ax.set_xlim(-1.2, len(cols) - 0.5)
    ax.set_ylim(len(cals) + 0.5, 0.5)
    ax.set_ylabel("rank of calibrator (1 = lowest CE)")
    ax.set_title(f"{network}, {task}, n = {size}" + (f", seed {seed}" if seed is not None else ""),
                 fontsize=9)
    return ax


_MEASURE_WORDS = {"cmee": "CMEE ×1000", "cmee_sq": "CMEE² ×1000",
                  "ce_error": "|CE est. − true CE| ×1000", "ce_error_sq": "L2 CE error ×1000",
                  "spearman": "Spearman ρ", "spearman_sq": "Spearman ρ (L2)"}


def summary_by_size(scores_df: pd.DataFrame, measure: str = "cmee", *, truth: str | None = None,
                    tasks: str = "all", evaluators: Sequence[str] | None = None,
                    ranked_calibrators: Sequence[str] | None = None, ax=None,
                    legend: bool = True):
    """Evaluator scores by test size: mean (×1000 for errors) with error bars
    = the 95 % cluster t-interval of the tables (:mod:`..policy`: the seeds are
    the independent clusters; no bar with one cluster). ``measure``: a score
    column ("cmee", "ce_error", ...) or "spearman"/"spearman_sq" (across
    calibrators, or across CE levels on a synthetic frame). ``tasks``: "all",
    "ovr" or "confidence". Every evaluator has its own colour and marker
    (:func:`.axes.method_styles`); ``legend``: one to the right, off the data."""
    f = select_truth(scores_df, truth)
    if tasks != "all" and "task" in f.columns:
        f = task_subset(f, tasks)
    if evaluators is not None:
        f = f[f["evaluator"].isin(list(evaluators))]
    if f.empty:
        raise ValueError("no score rows to summarise")
    order_ = list(evaluators) if evaluators is not None else order(f, "evaluator")
    synthetic = "ce_level" in f.columns
    if measure in ("spearman", "spearman_sq"):
        x, y = ("ce_used_sq", "true_ce_sq") if measure.endswith("_sq") else ("ce_used", "true_ce")
        if synthetic:
            data = spearman_by_group(f, item="ce_level", x=x, y=y)
        else:
            chosen, _ = resolve_ranked_calibrators(f["calibrator"], ranked_calibrators)
            data = spearman_by_group(f, item="calibrator", x=x, y=y, items=chosen)
        col = "spearman"
    else:
        data, col = f, measure
    inf = policy.inference_for("synthetic" if synthetic else "scores", measure, f)
    cells = aggregate_units(data, col, ["size"], inf.units, scale=policy.scale_for(measure),
                            column_order=order_, clusters=inf.clusters)
    mean = cells.mean
    ax = new_ax(ax, figsize=(5.0, 3.6))
    sizes = mean.index.to_numpy(dtype=np.float64)
    k = len(order_)
    styles = method_styles(order_)
    for i, ev in enumerate(order_):
        m = mean[ev].to_numpy()
        if not np.isfinite(m).any():
            continue
        jitter = 1.0 + 0.015 * (i - (k - 1) / 2)
        yerr = np.nan_to_num(np.vstack([m - cells.lo[ev].to_numpy(), cells.hi[ev].to_numpy() - m]))
        ax.errorbar(sizes * jitter, m, yerr=yerr, ms=4, lw=1.2, elinewidth=0.8, capsize=1.5,
                    label=str(ev), **styles[ev])
    ax.set_xscale("log")
    ax.set_xticks(sizes)
    ax.set_xticklabels([f"{int(v)}" for v in sizes])
    ax.minorticks_off()
    ax.set_xlabel("test size n")
    ax.set_ylabel(_MEASURE_WORDS.get(measure, measure))
    ax.grid(True, which="major", axis="y", lw=0.4, alpha=0.5)
    if legend:
        legend_outside(ax, fontsize=6.5)
    return ax
