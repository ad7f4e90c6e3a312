"""Reliability diagrams and the other figures of the paper (matplotlib, Agg).

Every plotting function takes ``ax=None`` (a new figure is made) and returns
the Axes it drew on (:func:`synthetic_shapes_figure` returns an array of Axes,
one per shape). :func:`save` writes PDF and PNG atomically.

Binning (METHODS.md §2) is done here by :func:`bin_assignment`, a small local
helper, because the binning family (``families/binning.py``) did not exist when
this module was written; it follows the same specification (ES: edges at the
first score of each ``numpy.array_split`` group, intervals [e_{b-1}, e_b), the
last closed; EW: index min(floor(s·B), B − 1)).
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.patches import Polygon  # noqa: E402

from . import tables  # noqa: E402
from .validation import check_binary, check_scores, logit  # noqa: E402

STYLES = ("bars", "bars_centres", "histogram", "diagonal_filling")
_UNDER = "#1f77b4"   # ȳ > s̄: under-confident (blue)
_OVER = "#d62728"    # ȳ < s̄: over-confident (red)


def _new_ax(ax, figsize=(4.2, 4.2)):
    if ax is None:
        _, ax = plt.subplots(figsize=figsize, constrained_layout=True)
    return ax


# ---------------------------------------------------------------------------
# binning and the diagonal-filling geometry


def bin_assignment(scores, n_bins: int = 15, scheme: str = "ew") -> tuple[np.ndarray, np.ndarray]:
    """Bin index of every score and the bin edges (length n_bins + 1).

    ``scheme``: "ew" (equal width) or "es" (equal size, METHODS.md §2).
    """
    s = check_scores(scores)
    if int(n_bins) < 1:
        raise ValueError(f"n_bins must be >= 1, got {n_bins}")
    B = int(n_bins)
    if scheme == "ew":
        edges = np.linspace(0.0, 1.0, B + 1)
        idx = np.minimum(np.floor(s * B).astype(np.int64), B - 1)
        return idx, edges
    if scheme == "es":
        s_sorted = np.sort(s)
        sizes = np.array([len(a) for a in np.array_split(np.arange(s.size), B)])
        starts = np.cumsum(sizes)[:-1]
        inner = np.where(starts < s.size, s_sorted[np.minimum(starts, s.size - 1)], 1.0)
        edges = np.concatenate([[0.0], inner, [1.0]])
        idx = np.searchsorted(inner, s, side="right")
        return idx.astype(np.int64), edges
    raise ValueError(f"scheme must be 'ew' or 'es', got {scheme!r}")


@dataclass
class FillingGeometry:
    """Per-bin geometry of the diagonal-filling reliability diagram.

    In bin b the filling is the band between the diagonal and the slope-1 map
    ĉ(s) = s + gap_b, gap_b = ȳ_b − s̄_b, over the bin's interval [lo_b, hi_b].
    Its vertical distance to the diagonal is |gap_b| everywhere in the bin, so
    the instance-weighted distance Σ_b weight_b·|gap_b| (weight_b = n_b / n) is
    the classic ECE (Theorem 2). Empty bins have weight 0, gap 0 and no polygon.
    """

    edges: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    counts: np.ndarray
    weights: np.ndarray
    mean_score: np.ndarray
    mean_label: np.ndarray
    gap: np.ndarray
    polygons: list            # (4, 2) vertex arrays, None for empty bins
    bin_index: np.ndarray     # bin of every data point

    @property
    def ece(self) -> float:
        return float(np.sum(self.weights * np.abs(self.gap)))

    def top(self, s) -> np.ndarray:
        """The filling's upper/lower boundary (slope-1 map) at scores ``s``."""
        s = np.asarray(s, dtype=np.float64)
        b = np.clip(np.searchsorted(self.edges[1:-1], s, side="right"), 0, self.gap.size - 1)
        return s + self.gap[b]


def diagonal_filling_geometry(scores, labels, n_bins: int = 15, scheme: str = "ew") -> FillingGeometry:
    """Pure geometry of the diagonal filling (no plotting); see :class:`FillingGeometry`."""
    s, y = check_binary(scores, labels, need_both_classes=False, min_points=1)
    idx, edges = bin_assignment(s, n_bins, scheme)
    B = edges.size - 1
    counts = np.bincount(idx, minlength=B).astype(np.float64)
    sum_s = np.bincount(idx, weights=s, minlength=B)
    sum_y = np.bincount(idx, weights=y, minlength=B)
    nz = counts > 0
    mean_s = np.full(B, np.nan)
    mean_y = np.full(B, np.nan)
    mean_s[nz] = sum_s[nz] / counts[nz]
    mean_y[nz] = sum_y[nz] / counts[nz]
    gap = np.zeros(B)
    gap[nz] = mean_y[nz] - mean_s[nz]
    lo, hi = edges[:-1].copy(), edges[1:].copy()
    polys = []
    for b in range(B):
        if not nz[b]:
            polys.append(None)
            continue
        polys.append(np.array([[lo[b], lo[b]], [hi[b], hi[b]],
                               [hi[b], hi[b] + gap[b]], [lo[b], lo[b] + gap[b]]]))
    return FillingGeometry(edges=edges, lo=lo, hi=hi, counts=counts, weights=counts / s.size,
                           mean_score=mean_s, mean_label=mean_y, gap=gap, polygons=polys,
                           bin_index=idx)


# ---------------------------------------------------------------------------
# reliability diagrams (Figure 4)


def reliability_diagram(scores, labels, n_bins: int = 15, scheme: str = "ew",
                        style: str = "bars", ax=None, title: str | None = None):
    """Reliability diagram in one of the four styles of the paper's Figure 4.

    - "bars": one bar per bin, height = fraction of positives ȳ_b;
    - "bars_centres": the bars plus each bin's centre of mass (s̄_b, ȳ_b) and
      its gap to the diagonal;
    - "histogram": the bars plus the histogram of the scores (right axis);
    - "diagonal_filling": per bin, the band between the diagonal and the
      slope-1 map s + (ȳ_b − s̄_b); its instance-weighted height is the ECE.
    """
    if style not in STYLES:
        raise ValueError(f"style must be one of {STYLES}, got {style!r}")
    g = diagonal_filling_geometry(scores, labels, n_bins, scheme)
    ax = _new_ax(ax)
    nz = g.counts > 0
    ax.plot([0, 1], [0, 1], color="0.4", lw=1, ls="--", zorder=5, label="perfect calibration")
    width = g.hi - g.lo
    if style in ("bars", "bars_centres"):
        ax.bar(g.lo[nz], g.mean_label[nz], width=width[nz], align="edge", color="#9ecae1",
               edgecolor="#08519c", lw=0.8, zorder=2, label="fraction of positives")
    if style == "histogram":   # outlined bars, so the score histogram shows beneath
        ax.bar(g.lo[nz], g.mean_label[nz], width=width[nz], align="edge", fill=False,
               edgecolor="#08519c", lw=1.4, zorder=3, label="fraction of positives")
    if style == "bars_centres":
        for b in np.flatnonzero(nz):
            ax.plot([g.mean_score[b]] * 2, [g.mean_score[b], g.mean_label[b]],
                    color=_OVER if g.gap[b] < 0 else _UNDER, lw=1.5, zorder=3)
        ax.scatter(g.mean_score[nz], g.mean_label[nz], s=14, color="k", zorder=4,
                   label="bin centre (s̄, ȳ)")
    if style == "histogram":
        ax2 = ax.twinx()
        ax2.bar(g.lo[nz], g.counts[nz] / g.counts.sum(), width=width[nz], align="edge",
                color="0.55", alpha=0.45, lw=0)
        ax.set_zorder(ax2.get_zorder() + 1)   # reliability bars and diagonal on top
        ax.patch.set_visible(False)
        top = g.weights.max() if g.weights.size else 1.0
        ax2.set_ylim(0, 4 * max(top, 1e-12))
        ax2.set_ylabel("share of scores", color="0.4")
        ax2.tick_params(axis="y", colors="0.4", labelsize=7)
    if style == "diagonal_filling":
        wmax = g.weights.max() if g.weights.size else 1.0
        for b in np.flatnonzero(nz):
            colour = _OVER if g.gap[b] < 0 else _UNDER
            alpha = 0.25 + 0.6 * g.weights[b] / max(wmax, 1e-12)
            ax.add_patch(Polygon(g.polygons[b], closed=True, facecolor=colour, alpha=alpha,
                                 edgecolor=colour, lw=0.6, zorder=2))
            ax.plot([g.lo[b], g.hi[b]], [g.lo[b] + g.gap[b], g.hi[b] + g.gap[b]],
                    color=colour, lw=1.2, zorder=3)
        for e in g.edges[1:-1]:
            ax.axvline(e, color="0.85", lw=0.5, zorder=0)
        lo_y = min(0.0, float(np.nanmin(g.lo + g.gap))) if nz.any() else 0.0
        hi_y = max(1.0, float(np.nanmax(g.hi + g.gap))) if nz.any() else 1.0
        ax.set_ylim(lo_y - 0.01, hi_y + 0.01)
    else:
        ax.set_ylim(0, 1)
    ax.set_xlim(0, 1)
    ax.set_xlabel("score s")
    ax.set_ylabel("fraction of positives")
    ax.set_title(title or f"{style.replace('_', ' ')}: ECE = {g.ece:.4f} "
                 f"({scheme.upper()}, {len(g.counts)} bins)", fontsize=9)
    return ax


# ---------------------------------------------------------------------------
# fit-on-test diagram (Figure 5) and logit-logit plot (Figure 7)


def _family(family_or_name):
    """A fresh, unfitted family from a name or an estimator (cloned)."""
    if isinstance(family_or_name, str):
        from . import families

        return families.get(family_or_name), family_or_name
    from sklearn.base import clone

    name = getattr(family_or_name, "name", None)
    if not isinstance(name, str):
        name = repr(family_or_name)             # sklearn repr: class + non-default params
        name = name if len(name) <= 40 else type(family_or_name).__name__
    return clone(family_or_name), name


def _eval_map(m, s: np.ndarray) -> np.ndarray:
    """Values of a map at sorted scores ``s``: a callable, a fitted family
    (``predict``) or an array aligned with ``s``."""
    if hasattr(m, "predict"):
        return np.asarray(m.predict(s), dtype=np.float64)
    if callable(m):
        return np.asarray(m(s), dtype=np.float64)
    arr = np.asarray(m, dtype=np.float64)
    if arr.shape != s.shape:
        raise ValueError(f"a map given as an array must have one value per score "
                         f"({s.shape[0]}), got shape {arr.shape}")
    return arr


def fit_on_test_diagram(family_or_name, scores, labels, true_map=None, ax=None, p: int = 1,
                        n_grid: int = 400):
    """Figure 5: fit a family on (scores, labels) and draw its map ĉ.

    ``family_or_name``: a registered name or an estimator (cloned, then fitted
    on these data). ``true_map``: a callable c(s) or an array of c(s_i)
    aligned with ``scores``. The title gives the CE estimate mean |ĉ(s) − s|^p
    (and the debiased one where the family has it) and the true CE.
    """
    s, y = check_binary(scores, labels, need_both_classes=False)
    fam, name = _family(family_or_name)
    fam.fit(s, y)
    return _draw_fit_on_test(fam, name, s, true_map, ax, p, n_grid)


def _draw_fit_on_test(fam, name, s, true_map, ax, p, n_grid):
    ax = _new_ax(ax)
    ax.plot([0, 1], [0, 1], color="0.4", lw=1, ls="--", label="diagonal")
    parts = []
    if getattr(fam, "provides_map", True):
        grid = np.linspace(s.min(), s.max(), n_grid)
        ax.plot(grid, fam.predict(grid), color="C1", lw=2, label=f"{name} (fit on test)")
    parts.append(f"CE est. {fam.ce_estimate(s, p=p):.4f}")
    debias = getattr(fam, "ce_estimate_debiased", None)
    if callable(debias):
        parts.append(f"debiased {float(debias(s, p=p)):.4f}")
    if true_map is not None:
        order = np.argsort(s)
        c = _eval_map(true_map, s[order]) if callable(true_map) else \
            _eval_map(np.asarray(true_map, dtype=np.float64)[order], s[order])
        ax.plot(s[order], c, color="k", lw=1.2, label="true map")
        d = np.abs(s[order] - c)
        parts.append(f"true CE {float(np.mean(d if p == 1 else d * d)):.4f}")
    rug = s if s.size <= 3000 else s[np.linspace(0, s.size - 1, 3000).astype(int)]
    ax.plot(rug, np.zeros_like(rug), "|", color="0.3", ms=6, alpha=0.3)
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("score s")
    ax.set_ylabel("estimated calibrated probability ĉ(s)")
    ax.set_title(f"{name}: " + ", ".join(parts), fontsize=8)
    ax.legend(fontsize=7, loc="upper left")
    return ax


def logit_logit_plot(maps: Mapping[str, object], scores, true_map=None, ax=None):
    """Figure 7: calibration maps in logit-logit space.

    ``maps``: name -> callable, fitted family, or array aligned with
    ``scores``; ``true_map`` likewise. x = logit(s), y = logit(ĉ(s)).
    """
    s0 = check_scores(scores)
    order = np.argsort(s0)
    s = s0[order]
    ax = _new_ax(ax)
    z = logit(s)
    ax.plot([z[0], z[-1]], [z[0], z[-1]], color="0.4", lw=1, ls="--", label="identity")

    def values(m):
        if hasattr(m, "predict") or callable(m):
            return _eval_map(m, s)
        return _eval_map(np.asarray(m, dtype=np.float64)[order], s)

    for i, (name, m) in enumerate(maps.items()):
        ax.plot(z, logit(np.clip(values(m), 0.0, 1.0)), lw=1.5, color=f"C{i % 10}", label=name)
    if true_map is not None:
        ax.plot(z, logit(np.clip(values(true_map), 0.0, 1.0)), color="k", lw=2, label="true map")
    margin = 0.1 * max(z[-1] - z[0], 1.0)
    ax.set_xlim(z[0] - margin, z[-1] + margin)
    ax.set_ylim(z[0] - 2 * margin, z[-1] + 2 * margin)
    ax.set_xlabel("logit(s)")
    ax.set_ylabel("logit(ĉ(s))")
    ax.legend(fontsize=7)
    return ax


# ---------------------------------------------------------------------------
# synthetic shapes (Figure 8)


def synthetic_shapes_figure(shapes: Sequence[str] | None = None,
                            ce_levels: Sequence[float] = (0.05, 0.1), ax=None):
    """Figure 8: each base shape's true calibration map c(p) (p = f(c)) and
    two derivates f_a with true CE in ``ce_levels``.

    ``ax``: None (one row of panels is made) or a sequence of Axes, one per
    shape. Returns the array of Axes.
    """
    from .data import synthetic

    shapes = list(synthetic.SHAPES if shapes is None else shapes)
    if ax is None:
        fig, axes = plt.subplots(1, len(shapes), figsize=(2.6 * len(shapes), 2.9),
                                 constrained_layout=True, squeeze=False)
        axes = axes[0]
    else:
        axes = np.atleast_1d(np.asarray(ax, dtype=object))
        if axes.size != len(shapes):
            raise ValueError(f"need one Axes per shape ({len(shapes)}), got {axes.size}")
    c = np.linspace(0.0, 1.0, 801)
    for a, shape in zip(axes, shapes):
        a.plot([0, 1], [0, 1], color="0.6", lw=0.8, ls="--")
        base = synthetic.BASE_SHAPES[shape]
        a.plot(base(c), c, color="k", lw=1.8, label=f"base (CE {synthetic.base_ce(shape):.3f})")
        for i, ce in enumerate(ce_levels):
            if ce > synthetic.base_ce(shape):
                continue
            a.plot(synthetic.forward(shape, ce)(c), c, lw=1.3, color=f"C{i}", label=f"CE {ce:g}")
        a.set_title(shape, fontsize=9)
        a.set_xlim(0, 1)
        a.set_ylim(0, 1)
        a.set_aspect("equal")
        a.set_xlabel("prediction p")
        a.legend(fontsize=6, loc="upper left")
    axes[0].set_ylabel("true calibration map c(p)")
    return axes


# ---------------------------------------------------------------------------
# study figures from the tidy score frame


def ranking_figure(scores_df: pd.DataFrame, arch, task, size, *, truth: str | None = None,
                   seed=None, evaluators: Sequence[str] | None = None,
                   calibrators: Sequence[str] | None = None, squared: bool = False, ax=None):
    """Figure 15: how each evaluator ranks the calibrators of one model/task
    at one test size, next to the ranking by the true CE (first column).

    Estimates and true CE are averaged over seeds unless ``seed`` is given.
    Each evaluator's label shows its Spearman correlation with the truth.
    """
    f = tables.select_truth(scores_df, truth)
    f = f[(f["arch"] == arch) & (f["task"] == task) & (f["size"] == size)]
    if seed is not None:
        f = f[f["seed"] == seed]
    if calibrators is not None:
        f = f[f["calibrator"].isin(list(calibrators))]
    if evaluators is not None:
        f = f[f["evaluator"].isin(list(evaluators))]
    if f.empty:
        raise ValueError(f"no score rows for arch={arch!r}, task={task!r}, size={size!r}")
    x, yv = ("ce_used_sq", "true_ce_sq") if squared else ("ce_used", "true_ce")
    evs = list(evaluators) if evaluators is not None else tables._order(f, "evaluator")
    cals = tables._order(f, "calibrator")
    est = f.groupby(["evaluator", "calibrator"])[x].mean().unstack("calibrator")
    est = est.reindex(index=evs, columns=cals)
    true = f.groupby("calibrator")[yv].mean().reindex(cals)
    cols = pd.concat([true.rename("true CE").to_frame().T, est])
    ranks = cols.rank(axis=1, method="average")            # 1 = lowest CE
    ax = _new_ax(ax, figsize=(1.0 + 0.9 * len(cols), 0.8 + 0.35 * len(cals)))
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
            from scipy.stats import spearmanr

            rho = float(spearmanr(a, b).statistic)
        labels.append(f"{ev}\nρ={rho:.2f}" if np.isfinite(rho) else f"{ev}\nρ=–")
    ax.set_xticks(xs)
    ax.set_xticklabels(labels, rotation=45, ha="right", fontsize=7)
    ax.set_xlim(-1.2, len(cols) - 0.5)
    ax.set_ylim(len(cals) + 0.5, 0.5)
    ax.set_ylabel("rank of calibrator (1 = lowest CE)")
    ax.set_title(f"{arch}, {task}, n = {size}" + (f", seed {seed}" if seed is not None else ""),
                 fontsize=9)
    return ax


_MEASURE_WORDS = {"cmee": "CMEE ×1000", "cmee_sq": "CMEE² ×1000",
                  "ce_error": "|CE est. − true CE| ×1000", "ce_error_sq": "L2 CE error ×1000",
                  "spearman": "Spearman ρ", "spearman_sq": "Spearman ρ (L2)"}


def summary_by_size(scores_df: pd.DataFrame, measure: str = "cmee", *, truth: str | None = None,
                    tasks: str = "all", evaluators: Sequence[str] | None = None,
                    ranked_calibrators: Sequence[str] | None = None, ax=None):
    """Evaluator scores by test size: mean (×1000 for errors) with error bars
    = standard deviation over seeds. ``measure``: a score column ("cmee",
    "ce_error", ...) or "spearman"/"spearman_sq" (across calibrators, or across
    CE levels on a synthetic frame). ``tasks``: "all", "ovr" or "confidence"."""
    f = tables.select_truth(scores_df, truth)
    if tasks != "all" and "task" in f.columns:
        f = tables._task_subset(f, tasks)
    if evaluators is not None:
        f = f[f["evaluator"].isin(list(evaluators))]
    if f.empty:
        raise ValueError("no score rows to summarise")
    order = list(evaluators) if evaluators is not None else tables._order(f, "evaluator")
    if measure in ("spearman", "spearman_sq"):
        x, y = ("ce_used_sq", "true_ce_sq") if measure.endswith("_sq") else ("ce_used", "true_ce")
        if "ce_level" in f.columns:
            data = tables.spearman_by_group(f, item="ce_level", x=x, y=y)
        else:
            chosen, _ = tables.resolve_ranked_calibrators(f["calibrator"], ranked_calibrators)
            data = tables.spearman_by_group(f, item="calibrator", x=x, y=y, items=chosen)
        col, scale = "spearman", 1.0
    else:
        data, col, scale = f, measure, 1000.0
    mean = tables.aggregate(data, col, ["size"], scale=scale, column_order=order)
    std = tables.aggregate(data, col, ["size"], stat="std", scale=scale, column_order=order)
    ax = _new_ax(ax, figsize=(5.0, 3.6))
    sizes = mean.index.to_numpy(dtype=np.float64)
    k = len(order)
    for i, ev in enumerate(order):
        m = mean[ev].to_numpy()
        if not np.isfinite(m).any():
            continue
        jitter = 1.0 + 0.02 * (i - (k - 1) / 2)
        ax.errorbar(sizes * jitter, m, yerr=np.nan_to_num(std[ev].to_numpy()), marker="o",
                    ms=3.5, lw=1.3, capsize=2, color=f"C{i % 10}",
                    ls="-" if i < 10 else "--", label=str(ev))
    ax.set_xscale("log")
    ax.set_xticks(sizes)
    ax.set_xticklabels([f"{int(v)}" for v in sizes])
    ax.minorticks_off()
    ax.set_xlabel("test size n")
    ax.set_ylabel(_MEASURE_WORDS.get(measure, measure))
    ax.legend(fontsize=6, ncol=2 if k > 6 else 1)
    return ax


# ---------------------------------------------------------------------------
# writing


def save(fig, path_stem, dpi: int = 150) -> list[Path]:
    """Write ``{path_stem}.pdf`` and ``{path_stem}.png`` atomically; close the figure."""
    stem = Path(path_stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = []
    for ext in ("pdf", "png"):
        final = stem.parent / f"{stem.name}.{ext}"
        fd, tmp = tempfile.mkstemp(dir=stem.parent, prefix=f".{final.name}.", suffix=f".{ext}")
        os.close(fd)
        try:
            fig.savefig(tmp, format=ext, dpi=dpi, bbox_inches="tight")
            os.replace(tmp, final)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        paths.append(final)
    plt.close(fig)
    return paths


_SCORE_KEYS = ("holdout_scores", "scores_holdout", "holdout", "scores", "s")
_LABEL_KEYS = ("holdout_labels", "labels_holdout", "labels", "y")


def _load(obj) -> Mapping[str, np.ndarray]:
    if obj is None or isinstance(obj, Mapping):
        return obj
    with np.load(obj, allow_pickle=False) as f:
        return {k: f[k] for k in f.files}


def _pick(data: Mapping[str, np.ndarray], keys: Sequence[str], what: str) -> np.ndarray:
    for k in keys:
        if k in data:
            return np.asarray(data[k])
    raise ValueError(f"cannot find the {what} in the npz: tried {list(keys)}, "
                     f"it holds {sorted(data)}")


def _model_arrays(scores, labels, true_c, calibrated_npz, truth_npz, truth, scores_key,
                  labels_key):
    cal = _load(calibrated_npz)
    if scores is None and cal is not None:
        scores = _pick(cal, ([scores_key] if scores_key else []) + list(_SCORE_KEYS), "scores")
    if labels is None and cal is not None:
        labels = _pick(cal, ([labels_key] if labels_key else []) + list(_LABEL_KEYS), "labels")
    tr = _load(truth_npz)
    if true_c is None and tr is not None:
        true_c = _pick(tr, [truth, "c_true", "truth"], f"true map {truth!r}")
    return scores, labels, true_c


def _map_evaluators(scores_df, evaluators, limit: int):
    """Evaluators to fit for the comparison figures: names or estimators."""
    if evaluators is not None:
        return list(evaluators)[:limit]
    if scores_df is None or scores_df.empty:
        return []
    from . import families

    out = []
    for name in tables._order(scores_df, "evaluator"):
        if name in families.names():
            try:
                if getattr(families.entry(name), "provides_map", True):
                    out.append(name)
            except KeyError:  # pragma: no cover
                pass
    return out[:limit]


def _comparison(evs, s, y, c, out_dir: Path, stem: str, log) -> list[Path]:
    """Grid of fit-on-test diagrams and the logit-logit plot of the same fits."""
    paths: list[Path] = []
    if not evs:
        return paths
    ncol = min(3, len(evs))
    nrow = int(np.ceil(len(evs) / ncol))
    fig, axes = plt.subplots(nrow, ncol, figsize=(3.6 * ncol, 3.5 * nrow),
                             constrained_layout=True, squeeze=False)
    fitted = {}
    for a, ev in zip(axes.ravel(), evs):
        try:
            fam, name = _family(ev)
            while name in fitted:
                name += "'"
            fitted[name] = fam.fit(s, y)
            _draw_fit_on_test(fam, name, s, c, a, 1, 400)
        except Exception as exc:  # one failing family must not lose the figure
            a.set_title(f"{ev}: failed ({type(exc).__name__})", fontsize=8)
            if log:
                log(f"fit-on-test diagram of {ev} failed: {exc}")
    for a in axes.ravel()[len(evs):]:
        a.set_visible(False)
    paths += save(fig, out_dir / f"{stem}fit_on_test")
    maps = {k: v for k, v in fitted.items() if getattr(v, "provides_map", True)}
    if maps:
        fig, ax = plt.subplots(figsize=(5, 5), constrained_layout=True)
        logit_logit_plot(maps, s, true_map=c, ax=ax)
        paths += save(fig, out_dir / f"{stem}logit_logit")
    return paths


def _summaries(scores_df, out_dir: Path, name: str, truth, measures, tasks="all") -> list[Path]:
    if scores_df is None or scores_df.empty:
        return []
    f = _one_truth(scores_df, truth)
    fig, axes = plt.subplots(1, len(measures), figsize=(4.6 * len(measures), 3.6),
                             constrained_layout=True, squeeze=False)
    for a, m in zip(axes[0], measures):
        try:
            summary_by_size(f, m, tasks=tasks, ax=a)
        except ValueError:
            a.set_visible(False)
    return save(fig, out_dir / name)


def _one_truth(frame: pd.DataFrame, truth: str | None) -> pd.DataFrame:
    """Rows of ``truth`` if present, else of the first truth in the frame."""
    truths = list(pd.unique(frame["truth"]))
    return frame[frame["truth"] == (truth if truth in truths else truths[0])]


def _subsample(n: int, k: int, seed: int) -> np.ndarray:
    if n <= k:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size=k, replace=False))


def write_default_figures(scores_df: pd.DataFrame | None, out_dir, *, scores=None, labels=None,
                          true_c=None, calibrated_npz=None, truth_npz=None,
                          truth: str = "isotonic", evaluators=None, n_bins: int = 15,
                          scheme: str = "ew", n_diagram: int = 10000, n_fit: int = 1000,
                          seed: int = 0, scores_key: str | None = None,
                          labels_key: str | None = None, log: Callable | None = None) -> list[Path]:
    """Figures of the default run, written as PDF + PNG into ``out_dir``.

    One model's hold-out (``scores``/``labels`` arrays, or ``calibrated_npz``,
    a path or mapping with the keys ``scores_key``/``labels_key`` or
    ``holdout_scores``/``holdout_labels``/``scores``/``labels``) and its true
    map (``true_c`` aligned with the scores, or ``truth_npz`` keyed by the
    truth name) give ``reliability_{style}`` for the four styles (a seeded
    subset of ``n_diagram`` points), ``fit_on_test`` (up to six evaluators,
    fitted on ``n_fit`` points, true map overlaid) and ``logit_logit``.
    ``scores_df`` gives ``summary_by_size`` (CMEE, CE error, Spearman) and
    ``ranking`` (first model and task, largest size). Missing inputs skip
    their figures. Returns the written paths.
    """
    out_dir = Path(out_dir)
    paths: list[Path] = []
    s, y, c = _model_arrays(scores, labels, true_c, calibrated_npz, truth_npz, truth,
                            scores_key, labels_key)
    if s is not None and y is not None:
        s = np.asarray(s, dtype=np.float64)
        y = np.asarray(y)
        idx = _subsample(s.size, n_diagram, seed)
        for style in STYLES:
            fig, ax = plt.subplots(figsize=(4.2, 4.2), constrained_layout=True)
            reliability_diagram(s[idx], y[idx], n_bins=n_bins, scheme=scheme, style=style, ax=ax)
            paths += save(fig, out_dir / f"reliability_{style}")
        idx = _subsample(s.size, n_fit, seed + 1)
        evs = _map_evaluators(scores_df, evaluators, 6)
        paths += _comparison(evs, s[idx], y[idx], None if c is None else np.asarray(c)[idx],
                             out_dir, "", log)
    paths += _summaries(scores_df, out_dir, "summary_by_size", truth,
                        ("cmee", "ce_error", "spearman"))
    if scores_df is not None and not scores_df.empty:
        f = _one_truth(scores_df, truth)
        arch, task = f["arch"].iloc[0], f["task"].iloc[0]
        fig, ax = plt.subplots(figsize=(1.5 + 0.9 * (f["evaluator"].nunique() + 1), 4),
                               constrained_layout=True)
        ranking_figure(f, arch, task, f["size"].max(), ax=ax)
        paths += save(fig, out_dir / "ranking")
    return paths


def write_all_figures(scores_df: pd.DataFrame | None, out_dir, *, models=None,
                      synthetic_df: pd.DataFrame | None = None, truth: str = "isotonic",
                      evaluators=None, n_bins: int = 15, n_diagram: int = 10000,
                      n_fit: int = 1000, seed: int = 0, log: Callable | None = None) -> list[Path]:
    """Figures of the paper configuration.

    ``models``: mapping label -> dict with ``scores``, ``labels`` and optional
    ``true_c`` (or ``calibrated_npz``/``truth_npz``), e.g.
    ``{"resnet110_car_none": {...}}``. For each: reliability diagrams in the
    four styles for EW and ES (``{label}_reliability_{scheme}_{style}``),
    ``{label}_fit_on_test`` and ``{label}_logit_logit``. From ``scores_df``:
    ``summary_by_size`` and ``summary_by_size_{ovr,confidence}``, and
    ``ranking_{arch}_{task}`` for every model and task at the largest size.
    Always ``synthetic_shapes``; with ``synthetic_df`` also
    ``synthetic_summary_by_size``.
    """
    out_dir = Path(out_dir)
    paths: list[Path] = []
    for label, m in (models or {}).items():
        s, y, c = _model_arrays(m.get("scores"), m.get("labels"), m.get("true_c"),
                                m.get("calibrated_npz"), m.get("truth_npz"), truth,
                                m.get("scores_key"), m.get("labels_key"))
        s = np.asarray(s, dtype=np.float64)
        y = np.asarray(y)
        idx = _subsample(s.size, n_diagram, seed)
        for scheme in ("ew", "es"):
            for style in STYLES:
                fig, ax = plt.subplots(figsize=(4.2, 4.2), constrained_layout=True)
                reliability_diagram(s[idx], y[idx], n_bins=n_bins, scheme=scheme, style=style,
                                    ax=ax)
                paths += save(fig, out_dir / f"{label}_reliability_{scheme}_{style}")
        idx = _subsample(s.size, n_fit, seed + 1)
        paths += _comparison(_map_evaluators(scores_df, evaluators, 9), s[idx], y[idx],
                             None if c is None else np.asarray(c)[idx], out_dir, f"{label}_", log)
    if scores_df is not None and not scores_df.empty:
        measures = ("cmee", "ce_error", "spearman")
        paths += _summaries(scores_df, out_dir, "summary_by_size", truth, measures)
        tasks_present = set(scores_df["task"])
        if tasks_present - {tables.CONFIDENCE_TASK}:
            paths += _summaries(scores_df, out_dir, "summary_by_size_ovr", truth, measures, "ovr")
        if tables.CONFIDENCE_TASK in tasks_present:
            paths += _summaries(scores_df, out_dir, "summary_by_size_confidence", truth, measures,
                                "confidence")
        f = _one_truth(scores_df, truth)
        size = f["size"].max()
        for arch in tables._order(f, "arch"):
            for task in tables._order(f, "task"):
                sub = f[(f["arch"] == arch) & (f["task"] == task)]
                if sub.empty:
                    continue
                fig, ax = plt.subplots(figsize=(1.5 + 0.9 * (sub["evaluator"].nunique() + 1), 4),
                                       constrained_layout=True)
                ranking_figure(sub, arch, task, size, ax=ax)
                paths += save(fig, out_dir / f"ranking_{arch}_{task}")
    axes = synthetic_shapes_figure()
    paths += save(axes[0].figure, out_dir / "synthetic_shapes")
    if synthetic_df is not None and not synthetic_df.empty:
        paths += _summaries(synthetic_df, out_dir, "synthetic_summary_by_size", None,
                            ("cmee", "ce_error", "spearman"))
    return paths


__all__ = ["STYLES", "bin_assignment", "FillingGeometry", "diagonal_filling_geometry",
           "reliability_diagram", "fit_on_test_diagram", "logit_logit_plot",
           "synthetic_shapes_figure", "ranking_figure", "summary_by_size", "save",
           "write_default_figures", "write_all_figures"]
