"""Row selection and ordering of the tidy frames, and Spearman per group.

The tidy frames are those of :mod:`fitontest.schema`: ``scores`` (evaluators),
``calibrators`` (post-hoc calibrators on the hold-out) and ``synthetic``.
"""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from fitontest.study.schema import SCORE_DESIGN
from fitontest.tasks import CONFIDENCE

#: the in-memory column of a frame asking for a scope (:func:`.policy.with_scope`)
SCOPE = "scope"

#: The paper's six calibrators whose estimated vs true CE rankings give the
#: Spearman tables (Table 4). The single source of this list: the config's
#: ``evaluation.ranked_calibrators`` default (workflow/schemas/config.schema.yaml,
#: config/config.yaml, config/paper.yaml) is data that tests/test_tables.py
#: checks equals it.
PAPER_RANKED_CALIBRATORS = ("beta", "vecs", "platt", "pl3_ce", "scaling_binning", "isotonic")
TASK_WORDS = {"ovr": "one-vs-rest tasks", "confidence": "the confidence task", "all": "all tasks"}


def unique(values: Iterable) -> list:
    """Distinct values in order of first appearance."""
    s = values if isinstance(values, pd.Series) else pd.Series(list(values))
    return list(s.unique())


def order(frame: pd.DataFrame, key: str) -> list:
    """Display order of the values of ``key``: numbers sorted, the tasks with
    ``confidence`` last, calibrators by kind (none, multiclass, binary),
    everything else in order of first appearance."""
    vals = unique(frame[key].dropna())
    if key in ("size", "seed", "ce_level") or all(
            isinstance(v, (int, float, np.integer, np.floating)) for v in vals):
        return sorted(vals)
    if key == "task":
        return [v for v in vals if v != CONFIDENCE] + [v for v in vals if v == CONFIDENCE]
    if key == "calibrator" and "kind" in frame.columns:
        kind_rank = {"none": 0, "multiclass": 1, "binary": 2}
        first_kind = frame.drop_duplicates("calibrator").set_index("calibrator")["kind"]
        return sorted(vals, key=lambda c: (kind_rank.get(first_kind.get(c), 3), vals.index(c)))
    if key == "calibrator":
        return sorted(vals, key=lambda c: (c != "none", vals.index(c)))
    return vals


def select_truth(frame: pd.DataFrame | None, truth: str | None) -> pd.DataFrame:
    """Rows of one truth estimator (``None``: the frame must hold only one)."""
    if frame is None:
        return pd.DataFrame()
    if frame.empty or "truth" not in frame.columns:
        return frame
    if truth is None:
        truths = unique(frame["truth"])
        if len(truths) > 1:
            raise ValueError(f"the frame holds several truth estimators {truths}; pass truth=")
        return frame
    return frame[frame["truth"] == truth]


def task_subset(frame: pd.DataFrame, tasks: str) -> pd.DataFrame:
    """``tasks``: "ovr" (every task but ``confidence``), "confidence" or "all"."""
    if tasks not in TASK_WORDS:
        raise ValueError(f"tasks must be 'ovr', 'confidence' or 'all', got {tasks!r}")
    if tasks == "all" or frame.empty or "task" not in frame.columns:
        return frame
    is_conf = frame["task"] == CONFIDENCE
    return frame[~is_conf] if tasks == "ovr" else frame[is_conf]


def truths(*frames: pd.DataFrame | None) -> list[str]:
    """Truth estimators present in the frames, in order of first appearance."""
    out: list[str] = []
    for f in frames:
        if f is not None and not f.empty and "truth" in f.columns:
            out += [t for t in unique(f["truth"]) if t not in out]
    return out


def one_truth(frame: pd.DataFrame, truth: str | None) -> pd.DataFrame:
    """Rows of ``truth`` if present, else of the first truth in the frame."""
    present = unique(frame["truth"])
    return frame[frame["truth"] == (truth if truth in present else present[0])]


def spearman_by_group(frame: pd.DataFrame, *, item: str = "calibrator",
                      x: str = "ce_used", y: str = "true_ce",
                      keys: Sequence[str] | None = None,
                      items: Sequence | None = None) -> pd.DataFrame:
    """Spearman correlation across ``item`` between ``x`` and ``y`` per group.

    ``keys`` default to the frame's key columns other than ``item``
    (arch, network, task, size, seed, evaluator, truth, the design column
    ``subsets`` and the scope asked for, for evaluator scores; shape,
    size, seed, evaluator, truth for synthetic rows, whose ``item`` is
    ``ce_level``). Rows with NaN ``x`` or ``y`` are dropped; a group with
    fewer than two items, or with constant ``x`` or ``y``, gets NaN.
    Returns ``keys`` + ``spearman`` + ``n_items``. Ties get average ranks
    (this is scipy.stats.spearmanr, vectorised over groups).
    """
    if keys is None:
        cand = ["arch", "network", "task", "calibrator", "shape", "ce_level",
                "evaluator", "size", "seed", "truth", SCORE_DESIGN, SCOPE]
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
    present = unique(present)
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
