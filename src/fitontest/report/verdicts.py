"""Measured error rates of the tables' verdicts: an A/A harness, interval
coverage and a replication check (docs/methods/11-verdicts.md §11.7).

A **procedure** (:class:`Procedure`) is what a ranked table does with a
frame: units and independent clusters (:class:`.policy.Inference`; None =
the policy's for the frame's design), the cluster t-interval of every cell
and a marker function. :data:`NEW` is the policy's; :data:`OLD` the earlier
rule (every (model, task, calibrator, seed) an independent unit, the best
column by mean, one-sided Wilcoxon of the others against it, Holm).

- :func:`aa_rate`: frames in which no difference exists (one evaluator's
  independent test seeds relabelled as several "evaluators",
  :func:`.simulate.relabel_as_evaluators`), the share of table rows in
  which a procedure calls some column "significantly worse" — its
  false-positive rate, to be at most ``alpha``.
- :func:`coverage`: the share of cells whose 95 % interval holds the
  population mean of :class:`.simulate.ScoreWorld` (these networks, tasks and
  calibrators; new test subsets).
- :func:`replication`: a fresh run (new seeds) against the first run's
  intervals: the share of new cell means inside them, next to the share the
  t model predicts (a 95 % interval for the mean holds a replicate's mean
  less often than 95 %, since both vary), and inside the prediction interval
  (half-width x sqrt(2)), which should hold 95 %.

Every rate comes with its Monte-Carlo standard error.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps

from . import policy
from .aggregate import aggregate_units
from .simulate import ScoreWorld, relabel_as_evaluators
from ..inference.stats import best_vs_rest_wilcoxon, significance_markers


@dataclass(frozen=True)
class Procedure:
    name: str
    inference: policy.Inference | None     # None: the policy's for the frame's design
    markers: Callable[..., pd.Series]

    def inf(self, frame: pd.DataFrame, measure: str = "") -> policy.Inference:
        return self.inference or policy.inference_for("scores", measure, frame)

    def cells(self, frame: pd.DataFrame, measure: str, rows: Sequence[str],
              level: float = policy.LEVEL):
        inf = self.inf(frame, measure)
        return aggregate_units(frame, measure, list(rows), inf.units, clusters=inf.clusters,
                               level=level)

    def worse(self, frame: pd.DataFrame, measure: str, rows: Sequence[str],
              alpha: float = policy.ALPHA) -> np.ndarray:
        """Per table row: True when some defined column is marked significantly worse."""
        cells = self.cells(frame, measure, rows)
        out = []
        for label in cells.mean.index:
            wide = cells.units.get(label)
            if wide is None or wide.shape[0] < 2:
                out.append(False)
                continue
            kw = {"alpha": alpha}
            if self.markers is significance_markers:
                kw["min_clusters"] = self.inf(frame, measure).min_clusters
            marked = self.markers(wide, lower_is_better=True, **kw)
            defined = wide.notna().any(axis=0)
            out.append(bool((defined & ~marked.reindex(wide.columns).fillna(False)).any()))
        return np.asarray(out)


_UNITS = policy.INFERENCE[("scores", "independent", "networks")].units
NEW = Procedure("new: the design's clusters, all pairs, Holm", None, significance_markers)
OLD = Procedure("old: (model, task, calibrator, seed) units, Wilcoxon vs best",
                policy.Inference(units=_UNITS, clusters=_UNITS, min_clusters=2,
                                 population="(treated as independent units)"),
                best_vs_rest_wilcoxon)


def _rates(hits: dict[str, list[float]]) -> pd.DataFrame:
    """One line per procedure: its false-positive rate over the replicates and
    the rate's Monte Carlo SE."""
    out = []
    for name, h in hits.items():
        h = np.asarray(h, dtype=np.float64)
        se = float(h.std(ddof=1) / np.sqrt(h.size)) if h.size > 1 else np.nan
        out.append({"procedure": name, "rate": h.mean(), "mc_se": se, "replicates": h.size})
    return pd.DataFrame(out)


def aa_rate(world: ScoreWorld, procedures: Sequence[Procedure] = (OLD, NEW), *,
            n_rep: int = 200, n_evaluators: int = 2, seeds_per_evaluator: int = 3,
            rows: Sequence[str] = ("size",), alpha: float = policy.ALPHA,
            rng_seed: int = 0) -> pd.DataFrame:
    """False-positive rate of "significantly worse" per procedure.

    Each replicate draws ``n_evaluators x seeds_per_evaluator`` independent
    test seeds of ``world``'s first evaluator, relabels them as
    ``n_evaluators`` evaluators with ``seeds_per_evaluator`` seeds each, builds
    the table rows ``rows`` and counts a row as a false positive when any
    column is marked worse (the row is the family whose error the markers
    control). Returns one line per procedure: the rate over rows, its
    Monte-Carlo SE (over replicates) and the replicates.
    """
    k, e = int(seeds_per_evaluator), int(n_evaluators)
    groups = [list(range(i * k, (i + 1) * k)) for i in range(e)]
    hits = {p.name: [] for p in procedures}
    for r in range(int(n_rep)):
        f = world.draw(e * k, rng_seed=[rng_seed, r])
        aa = relabel_as_evaluators(f, groups, evaluator=list(world.effects)[0])
        for p in procedures:
            hits[p.name].append(p.worse(aa, world.measure, rows, alpha).mean())
    return _rates(hits)


#: the fixed-network design: every (network, task, seed) an independent cluster,
#: as if the study's networks were the population (the design before networks
#: were replicated; config ``report.scope: networks``)
FIXED_NETWORKS = Procedure("fixed networks: (network, task, seed) clusters",
                           policy.INFERENCE[("scores", "independent", "networks")],
                           significance_markers)


def aa_rate_networks(world: ScoreWorld, procedures: Sequence[Procedure] = (FIXED_NETWORKS, NEW),
                     *, n_rep: int = 200, seeds: int = 3, rows: Sequence[str] = ("size",),
                     alpha: float = policy.ALPHA, rng_seed: int = 0) -> pd.DataFrame:
    """False-positive rate of "significantly worse" in a world whose
    evaluators are equal on average over networks (equal ``effects``, no
    fixed interaction) but each network shifts them its own way
    (``network_evaluator``): each replicate is a new study — new networks,
    new test subsets — and a row with any column marked worse is a false
    positive. Returns one line per procedure, as :func:`aa_rate`."""
    if len(set(world.effects.values())) != 1 or world.fixed_sd.get("interaction", 0.0):
        raise ValueError("an A/A world needs equal evaluator effects and no fixed interaction")
    hits = {p.name: [] for p in procedures}
    for r in range(int(n_rep)):
        f = world.draw(int(seeds), rng_seed=[rng_seed, r])
        for p in procedures:
            hits[p.name].append(p.worse(f, world.measure, rows, alpha).mean())
    return _rates(hits)


def aa_rate_frame(frame: pd.DataFrame, evaluator: str, procedures=(OLD, NEW), *,
                  measure: str = "cmee", rows: Sequence[str] = ("size",),
                  truth: str | None = None, alpha: float = policy.ALPHA) -> pd.DataFrame:
    """The A/A verdicts on a real scores frame: every split of ``evaluator``'s
    seeds into two equal halves, relabelled as two evaluators (no difference
    exists). Returns per procedure the share of table rows with a "worse"
    marker over the splits (few splits: a coarse rate; the synthetic
    :func:`aa_rate` gives the Monte-Carlo one)."""
    from itertools import combinations

    from .frames import select_truth
    f = select_truth(frame, policy.pick_truth(frame["truth"], truth))
    f = f[f["evaluator"] == evaluator]
    seeds = sorted(f["seed"].unique())
    k = len(seeds) // 2
    if k < 1:
        raise ValueError(f"{evaluator!r} has {len(seeds)} seed(s); an A/A split needs 2")
    splits = [(list(a), [s for s in seeds if s not in a][:k]) for a in combinations(seeds, k)]
    out = []
    for p in procedures:
        h = [p.worse(relabel_as_evaluators(f, list(g)), measure, rows, alpha).mean()
             for g in splits]
        out.append({"procedure": p.name, "rate": float(np.mean(h)), "splits": len(h),
                    "seeds_per_evaluator": k})
    return pd.DataFrame(out)


def _truth_cells(world: ScoreWorld, rows: Sequence[str]) -> pd.DataFrame:
    """Population cell means (balanced design: the mean over the cell's strata)."""
    pop = world.population_mean()
    keys = list(rows) + ["evaluator"]
    return pop.groupby(keys)["mean"].mean().unstack("evaluator") if rows else \
        pop.groupby("evaluator")["mean"].mean().to_frame().T.set_axis(["all"])


def coverage(world: ScoreWorld, procedures: Sequence[Procedure] = (OLD, NEW), *,
             n_rep: int = 200, seeds: int = 3, rows: Sequence[str] = ("size",),
             level: float = policy.LEVEL, rng_seed: int = 1) -> pd.DataFrame:
    """Share of cells (rows x evaluators) whose interval holds the population mean."""
    truth = _truth_cells(world, rows)
    hits = {p.name: [] for p in procedures}
    for r in range(int(n_rep)):
        f = world.draw(seeds, rng_seed=[rng_seed, r])
        for p in procedures:
            c = p.cells(f, world.measure, rows, level)
            t = truth.reindex(index=c.mean.index, columns=c.mean.columns).to_numpy()
            lo, hi = c.lo.to_numpy(), c.hi.to_numpy()
            hits[p.name].append(np.mean((lo <= t) & (t <= hi)))
    return pd.DataFrame([{"procedure": p.name, "coverage": np.mean(hits[p.name]),
                          "mc_se": float(np.std(hits[p.name], ddof=1) / np.sqrt(n_rep))
                          if n_rep > 1 else np.nan, "replicates": n_rep}
                         for p in procedures])


def expected_capture(k: int, level: float = policy.LEVEL) -> float:
    """P(a replicate's mean lies in the first run's t-interval) when both runs
    have ``k`` iid clusters of one normal law: |m2 - m1| / (s1 sqrt(2/k)) is
    t with k - 1 degrees of freedom."""
    q = sps.t.ppf(0.5 + level / 2, k - 1)
    return float(2 * sps.t.cdf(q / np.sqrt(2), k - 1) - 1)


def replication(world: ScoreWorld, procedures: Sequence[Procedure] = (OLD, NEW), *,
                n_rep: int = 200, seeds: int = 3, rows: Sequence[str] = ("size",),
                level: float = policy.LEVEL, rng_seed: int = 2) -> pd.DataFrame:
    """Run 1 on seeds 0..k-1, run 2 on fresh seeds k..2k-1 (same networks):
    share of run-2 cell means in run 1's intervals (``capture``; the t model
    predicts ``expected``) and in its prediction intervals (``predict``, target
    ``level``)."""
    cap = {p.name: [] for p in procedures}
    pred = {p.name: [] for p in procedures}
    k = {p.name: seeds for p in procedures}
    for r in range(int(n_rep)):
        f = world.draw(2 * seeds, rng_seed=[rng_seed, r])
        first, second = f[f["seed"] < seeds], f[f["seed"] >= seeds]
        for p in procedures:
            a = p.cells(first, world.measure, rows, level)
            k[p.name] = int(a.n_units.to_numpy().max())     # the independent clusters
            b = p.cells(second, world.measure, rows, level).mean.reindex_like(a.mean)
            m, lo, hi, x = (v.to_numpy() for v in (a.mean, a.lo, a.hi, b))
            cap[p.name].append(np.mean((lo <= x) & (x <= hi)))
            w = (hi - lo) / 2 * np.sqrt(2)
            pred[p.name].append(np.mean(np.abs(x - m) <= w))
    return pd.DataFrame([{"procedure": p.name, "capture": np.mean(cap[p.name]),
                          "predict": np.mean(pred[p.name]),
                          "expected_capture": expected_capture(k[p.name], level),
                          "replicates": n_rep} for p in procedures])


def power(world: ScoreWorld, procedure: Procedure = NEW, *, n_rep: int = 200, seeds: int = 3,
          rows: Sequence[str] = (), alpha: float = policy.ALPHA,
          rng_seed: int = 3) -> pd.DataFrame:
    """Share of truly different pairs of evaluators (different ``world.effects``)
    that ``procedure``'s pairwise tests (:func:`.stats.pairwise_better`, Holm
    over each table row's pairs) order correctly (``detected``) and wrongly
    (``reversed``), and of equal pairs called different (``false``), per true
    log-scale gap. One line per gap; Monte-Carlo SE over replicates."""
    from ..inference.stats import pairwise_better

    eff = pd.Series(dict(world.effects), dtype=np.float64)
    names = list(eff.index)
    gaps = np.abs(eff.to_numpy()[:, None] - eff.to_numpy()[None, :])
    stats: dict[float, list] = {}
    for r in range(int(n_rep)):
        f = world.draw(seeds, rng_seed=[rng_seed, r])
        inf = procedure.inf(f, world.measure)
        cells = procedure.cells(f, world.measure, rows)
        for wide in cells.units.values():
            b = pairwise_better(wide[names], alpha=alpha, min_clusters=inf.min_clusters)
            b = b.to_numpy()
            for i in range(len(names)):
                for j in range(i + 1, len(names)):
                    g = round(float(gaps[i, j]), 6)
                    truly_i = eff.iloc[i] < eff.iloc[j]          # i better (lower) in truth
                    right = b[i, j] if truly_i else b[j, i]
                    wrong = b[j, i] if truly_i else b[i, j]
                    stats.setdefault(g, []).append((r, bool(right), bool(wrong)))
    out = []
    for g, v in sorted(stats.items()):
        a = pd.DataFrame(v, columns=["rep", "right", "wrong"]).groupby("rep").mean()
        se = lambda x: float(x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else np.nan  # noqa: E731
        if g == 0:
            rate = a["right"] + a["wrong"]     # any call on an equal pair is false
            out.append({"gap": g, "detected": np.nan, "reversed": np.nan,
                        "false": rate.mean(), "mc_se": se(rate), "pairs": len(v)})
        else:
            out.append({"gap": g, "detected": a["right"].mean(), "reversed": a["wrong"].mean(),
                        "false": np.nan, "mc_se": se(a["right"]), "pairs": len(v)})
    return pd.DataFrame(out)
