"""Saving figures, and the figure sets of the workflow's ``figures`` rule."""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from fitontest.core.io import atomic_path
from fitontest.tasks import CONFIDENCE
from ..frames import one_truth, order
from .. import policy
from ..policy import MAIN_TRUTH
from .axes import legend_outside
from .maps import draw_fit_on_test, family_and_name, logit_logit_plot
from .reliability import STYLES, reliability_diagram
from .shapes import synthetic_shapes_figure
from .study import ranking_figure, summary_by_size


def save(fig, path_stem, dpi: int = 150) -> list[Path]:
    """Write ``{path_stem}.pdf`` and ``{path_stem}.png`` atomically; close the figure."""
    stem = Path(path_stem)
    paths = []
    for ext in ("pdf", "png"):
        final = stem.parent / f"{stem.name}.{ext}"
        with atomic_path(final, suffix=f".{ext}") as tmp:
            # no creation date in the PDF: same inputs, same bytes
            fig.savefig(tmp, format=ext, dpi=dpi, bbox_inches="tight",
                        metadata={"CreationDate": None} if ext == "pdf" else None)
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
    from fitontest import families

    out = []
    for name in order(scores_df, "evaluator"):
        if name in families.names():
            try:
                if families.entry(name).provides_map:
                    out.append(name)
            except KeyError:  # pragma: no cover
                pass
    return out[:limit]


def _comparison(evs, s, y, c, out_dir: Path, stem: str, log, band=None) -> list[Path]:
    """Grid of fit-on-test diagrams (each with the band of the map at level
    ``band``, None for none) and the logit-logit plot of the same fits."""
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
            fam, name = family_and_name(ev)
            while name in fitted:
                name += "'"
            fitted[name] = fam.fit(s, y)
            draw_fit_on_test(fam, name, s, c, a, 1, 400, y=y, band=band)
        except Exception as exc:  # one failing family must not lose the figure
            a.set_title(f"{ev}: failed ({type(exc).__name__})", fontsize=8)
            if log:
                log(f"fit-on-test diagram of {ev} failed: {exc}")
    for a in axes.ravel()[len(evs):]:
        a.set_visible(False)
    paths += save(fig, out_dir / f"{stem}fit_on_test")
    maps = {k: v for k, v in fitted.items() if v.provides_map}
    if maps:
        fig, ax = plt.subplots(figsize=(5, 5), constrained_layout=True)
        logit_logit_plot(maps, s, true_map=c, ax=ax)
        paths += save(fig, out_dir / f"{stem}logit_logit")
    return paths


def _summaries(scores_df, out_dir: Path, name: str, truth, measures, tasks="all") -> list[Path]:
    if scores_df is None or scores_df.empty:
        return []
    f = one_truth(scores_df, truth)
    fig, axes = plt.subplots(1, len(measures), figsize=(4.4 * len(measures) + 1.8, 3.8),
                             layout="constrained", squeeze=False)
    handles: dict = {}
    for a, m in zip(axes[0], measures):
        try:
            summary_by_size(f, m, tasks=tasks, ax=a, legend=False)
        except ValueError:
            a.set_visible(False)
            continue
        for h, lab in zip(*a.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    if handles:   # one legend for every panel, to the right, best first on the first measure
        first = pd.to_numeric(f[measures[0]], errors="coerce") if measures[0] in f else None
        if first is not None:
            rank = first.groupby(f["evaluator"]).mean()
            handles = dict(sorted(handles.items(), key=lambda kv: (
                not np.isfinite(rank.get(kv[0], np.nan)), rank.get(kv[0], 0.0))))
        legend_outside(fig, list(handles.values()), list(handles), fontsize=7.5)
        fig.legends[-1].set_title(f"by mean {measures[0]}" if first is not None else None,
                                  prop={"size": 7.5})
    kind = "synthetic" if "ce_level" in f.columns else "scores"
    fig.suptitle(f"bars: 95 % intervals; population: "
                 f"{policy.inference_for(kind, frame=f).population}",
                 fontsize=8)
    return save(fig, out_dir / name)


def _subsample(n: int, k: int, seed: int) -> np.ndarray:
    if n <= k:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size=k, replace=False))


def write_default_figures(scores_df: pd.DataFrame | None, out_dir, *, scores=None, labels=None,
                          true_c=None, calibrated_npz=None, truth_npz=None,
                          truth: str = MAIN_TRUTH, evaluators=None, n_bins: int = 15,
                          scheme: str = "ew", n_diagram: int = 10000, n_fit: int = 1000,
                          seed: int = 0, scores_key: str | None = None,
                          labels_key: str | None = None, log: Callable | None = None,
                          band: float | None = 0.9, scope: str = "architectures") -> list[Path]:
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
    their figures. ``band``: the level of the map's band shaded on the
    reliability and fit-on-test diagrams (docs/methods/11-tests-and-bands.md §11.9; None: none).
    ``scope``: what the summaries' intervals generalise to (:func:`.policy.with_scope`).
    Returns the written paths.
    """
    out_dir = Path(out_dir)
    paths: list[Path] = []
    scores_df = policy.with_scope(scores_df, scope)
    s, y, c = _model_arrays(scores, labels, true_c, calibrated_npz, truth_npz, truth,
                            scores_key, labels_key)
    if s is not None and y is not None:
        s = np.asarray(s, dtype=np.float64)
        y = np.asarray(y)
        idx = _subsample(s.size, n_diagram, seed)
        for style in STYLES:
            fig, ax = plt.subplots(figsize=(4.2, 4.2), constrained_layout=True)
            reliability_diagram(s[idx], y[idx], n_bins=n_bins, scheme=scheme, style=style, ax=ax,
                                band=band)
            paths += save(fig, out_dir / f"reliability_{style}")
        idx = _subsample(s.size, n_fit, seed + 1)
        evs = _map_evaluators(scores_df, evaluators, 6)
        paths += _comparison(evs, s[idx], y[idx], None if c is None else np.asarray(c)[idx],
                             out_dir, "", log, band)
    paths += _summaries(scores_df, out_dir, "summary_by_size", truth,
                        ("cmee", "ce_error", "spearman"))
    if scores_df is not None and not scores_df.empty:
        f = one_truth(scores_df, truth)
        network, task = f["network"].iloc[0], f["task"].iloc[0]
        fig, ax = plt.subplots(figsize=(1.5 + 0.9 * (f["evaluator"].nunique() + 1), 4),
                               constrained_layout=True)
        ranking_figure(f, network, task, f["size"].max(), ax=ax)
        paths += save(fig, out_dir / "ranking")
    return paths


def write_all_figures(scores_df: pd.DataFrame | None, out_dir, *, models=None,
                      synthetic_df: pd.DataFrame | None = None, truth: str = MAIN_TRUTH,
                      evaluators=None, n_bins: int = 15, n_diagram: int = 10000,
                      n_fit: int = 1000, seed: int = 0, log: Callable | None = None,
                      band: float | None = 0.9, scope: str = "architectures") -> list[Path]:
    """Figures of the paper configuration.

    ``models``: mapping label -> dict with ``scores``, ``labels`` and optional
    ``true_c`` (or ``calibrated_npz``/``truth_npz``), e.g.
    ``{"resnet110_car_none": {...}}``. For each: reliability diagrams in the
    four styles for EW and ES (``{label}_reliability_{scheme}_{style}``),
    ``{label}_fit_on_test`` and ``{label}_logit_logit``. From ``scores_df``:
    ``summary_by_size`` and ``summary_by_size_{ovr,confidence}``, and
    ``ranking_{network}_{task}`` for every network and task at the largest size.
    Always ``synthetic_shapes``; with ``synthetic_df`` also
    ``synthetic_summary_by_size``. ``band``, ``scope``: as in :func:`write_default_figures`.
    """
    out_dir = Path(out_dir)
    paths: list[Path] = []
    scores_df = policy.with_scope(scores_df, scope)
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
                                    ax=ax, band=band)
                paths += save(fig, out_dir / f"{label}_reliability_{scheme}_{style}")
        idx = _subsample(s.size, n_fit, seed + 1)
        paths += _comparison(_map_evaluators(scores_df, evaluators, 9), s[idx], y[idx],
                             None if c is None else np.asarray(c)[idx], out_dir, f"{label}_", log,
                             band)
    if scores_df is not None and not scores_df.empty:
        measures = ("cmee", "ce_error", "spearman")
        paths += _summaries(scores_df, out_dir, "summary_by_size", truth, measures)
        tasks_present = set(scores_df["task"])
        if tasks_present - {CONFIDENCE}:
            paths += _summaries(scores_df, out_dir, "summary_by_size_ovr", truth, measures, "ovr")
        if CONFIDENCE in tasks_present:
            paths += _summaries(scores_df, out_dir, "summary_by_size_confidence", truth, measures,
                                "confidence")
        f = one_truth(scores_df, truth)
        size = f["size"].max()
        for network in order(f, "network"):
            for task in order(f, "task"):
                sub = f[(f["network"] == network) & (f["task"] == task)]
                if sub.empty:
                    continue
                fig, ax = plt.subplots(figsize=(1.5 + 0.9 * (sub["evaluator"].nunique() + 1), 4),
                                       constrained_layout=True)
                ranking_figure(sub, network, task, size, ax=ax)
                paths += save(fig, out_dir / f"ranking_{network}_{task}")
    axes = synthetic_shapes_figure()
    paths += save(axes[0].figure, out_dir / "synthetic_shapes")
    if synthetic_df is not None and not synthetic_df.empty:
        paths += _summaries(synthetic_df, out_dir, "synthetic_summary_by_size", None,
                            ("cmee", "ce_error", "spearman"))
    return paths
