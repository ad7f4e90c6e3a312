"""What it would take: the independent clusters at which a claim left *not
distinguishable* would be decided with 80 % power (docs/methods/11-verdicts.md §11.5.2).

From the run's own variance components — per pair of methods the mean and
the between-cluster standard deviation of the paired differences of the
cluster means (the matrix the verdicts test) — the smallest number of
clusters k at which

- a two-sided paired t-test at level α / M (M = the tests of the claim's Holm
  family: Holm's first, strictest step) rejects with probability
  :data:`.policy.POWER` when the true difference is the observed one
  (non-central t, :func:`power_difference`);
- the TOST (:mod:`.equivalence`) at α / M shows the pair within its margin
  with that probability when the true difference is the observed one
  (exact: the normal mean integrated over the chi distribution of the
  standard deviation, :func:`power_tost`); never where the observed
  difference is outside the margin.

A claim needs several pairs (its check says which and how many:
:class:`Projection`); a claim is projected decided when the pairs it needs
are, each at that power (the strictest level for every test keeps the joint
power near the target). A result is a **factor** on the current clusters
(the rows of a claim may hold different numbers): :func:`knob` turns it into
the config value a user changes and the CPU it costs at this run's measured
cost per job.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps

from . import policy
from .equivalence import Margin

INF = float("inf")
#: more clusters than this count as never (a claim of no observed difference)
CAP = 10 ** 6
_MID = (np.arange(512) + 0.5) / 512


def power_difference(d: float, sd: float, k: int, level: float) -> float:
    """Power of the two-sided one-sample t-test at ``level`` with ``k``
    clusters when the true mean difference is ``d`` and its between-cluster
    sd ``sd`` (non-central t with k - 1 df)."""
    if k < 2:
        return 0.0
    df = k - 1
    q = sps.t.ppf(1 - level / 2, df)
    nc = d * math.sqrt(k) / sd
    return float(sps.nct.sf(q, df, nc) + sps.nct.cdf(-q, df, nc))


def power_tost(d: float, sd: float, delta: float, k: int, level: float) -> float:
    """Exact power of the TOST at ``level`` (each side) with ``k`` clusters,
    true difference ``d``, sd ``sd`` and margin ``delta``: E over s of
    P(-δ + t s/√k < mean < δ - t s/√k), over 512 mid-quantiles of s."""
    if k < 2 or abs(d) >= delta:
        return 0.0
    df = k - 1
    q = sps.t.ppf(1 - level, df)
    se = sd / math.sqrt(k)

    def inside(c):      # c ~ chi2(df): s = sd sqrt(c / df)
        w = delta - q * se * np.sqrt(c / df)
        return np.clip(sps.norm.cdf((w - d) / se) - sps.norm.cdf((-w - d) / se), 0.0, 1.0)

    # the mean over the mid-quantiles of chi2(df): a quadrature vectorised in one call
    return float(inside(sps.chi2.ppf(_MID, df)).mean())


def smallest_k(power: Callable[[int], float], start: float, target: float = policy.POWER,
               low: int = 2) -> float:
    """The smallest k ≥ ``low`` with ``power(k) ≥ target`` (power increasing
    in k), searched from ``start``; INF beyond :data:`CAP`."""
    if np.isfinite(start) and start > CAP:
        return INF
    hi = max(low, int(math.ceil(start)) if np.isfinite(start) else low)
    while power(hi) < target:
        if hi >= CAP:
            return INF
        hi = min(CAP, hi * 2)
    lo = low - 1
    while hi - lo > 1:          # power(lo) < target (or lo below low), power(hi) ≥ target
        mid = (lo + hi) // 2
        if mid >= low and power(mid) >= target:
            hi = mid
        else:
            lo = mid
    return float(hi)


def k_difference(d: float, sd: float, level: float, low: int = 2) -> float:
    """Clusters to detect the difference ``d`` (two-sided, ``level``)."""
    if not np.isfinite(d) or d == 0:
        return INF
    if not np.isfinite(sd) or sd <= 1e-12 * abs(d):
        return float(low)
    z = sps.norm.ppf(1 - level / 2) + sps.norm.ppf(policy.POWER)
    return smallest_k(lambda k: power_difference(d, sd, k, level), (z * sd / d) ** 2, low=low)


def k_equivalence(d: float, sd: float, delta: float, level: float, low: int = 2) -> float:
    """Clusters to show |difference| < ``delta`` by TOST at ``level`` when
    the true difference is ``d``; INF when |d| ≥ δ."""
    if not np.isfinite(d) or abs(d) >= delta:
        return INF
    if not np.isfinite(sd) or sd <= 1e-12 * delta:
        return float(low)
    beta = 1 - policy.POWER
    z = sps.norm.ppf(1 - level) + sps.norm.ppf(1 - (beta / 2 if d == 0 else beta))
    return smallest_k(lambda k: power_tost(d, sd, delta, k, level),
                      (z * sd / (delta - abs(d))) ** 2, low=low)


def kth(values, q: int) -> float:
    """The q-th smallest of ``values`` (INF if fewer than q; 0 if q ≤ 0)."""
    if q <= 0:
        return 0.0
    v = np.sort(np.asarray(list(values), dtype=np.float64))
    return float(v[q - 1]) if v.size >= q else INF


@dataclass
class Projection:
    """The pairs of one table row (clusters x methods ``wide``) with the
    factor on its current clusters at which each would be decided: ``wins``
    [a, b] = "a significantly better than b" (INF where the observed means
    order them the other way), and :meth:`equivalence` of a pair."""

    wide: pd.DataFrame
    lower_is_better: bool
    level: float
    margin: Margin | None
    min_clusters: int = 3

    def __post_init__(self):
        x = self.wide.to_numpy(dtype=np.float64)
        self.n = int(np.isfinite(x).any(axis=1).sum())
        cols = list(self.wide.columns)
        m = len(cols)
        wins = np.full((m, m), INF)
        for i in range(m):
            for j in range(i + 1, m):
                d, sd, _ = self._pair(cols[i], cols[j])
                k = k_difference(d, sd, self.level, self.min_clusters) / max(self.n, 1)
                better_i = (d < 0) == self.lower_is_better
                wins[(i, j) if better_i else (j, i)] = k
        self.wins = pd.DataFrame(wins, index=cols, columns=cols)

    def _pair(self, a: str, b: str) -> tuple[float, float, float]:
        """Mean and sd of the paired differences a - b, and the pair's mean."""
        xa, xb = self.wide[a].to_numpy(np.float64), self.wide[b].to_numpy(np.float64)
        ok = np.isfinite(xa) & np.isfinite(xb)
        d = xa[ok] - xb[ok]
        if d.size < 2:
            return float("nan"), float("nan"), float("nan")
        return float(d.mean()), float(d.std(ddof=1)), float((xa[ok].mean() + xb[ok].mean()) / 2)

    def win(self, a: str, others: Sequence[str], q: int) -> float:
        """Factor at which ``a`` is significantly better than ``q`` of ``others``."""
        return kth((self.wins.loc[a, o] for o in others if o != a), q)

    def loss(self, a: str, others: Sequence[str], q: int) -> float:
        return kth((self.wins.loc[o, a] for o in others if o != a), q)

    def equivalence(self, a: str, b: str) -> float:
        if self.margin is None:
            return INF
        d, sd, mean = self._pair(a, b)
        k = k_equivalence(d, sd, self.margin.delta(mean), self.level, self.min_clusters)
        return k / max(self.n, 1)

    def all_orders(self) -> float:
        """Factor at which every pair is ordered (then every rank is exact)."""
        w = self.wins.to_numpy()
        m = w.shape[0]
        i, j = np.triu_indices(m, 1)
        return float(np.minimum(w[i, j], w[j, i]).max()) if m > 1 else 0.0


def target_factor(values, target: float, margin: Margin | None, level: float,
                  min_clusters: int = 3) -> dict:
    """Factors for one method's cluster means against a fixed ``target``: the
    claim "the mean is above it" supported or contradicted (one-sided tests
    at ``level``, whichever side the observed mean is on), equivalent (TOST
    within the margin)."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if v.size < 2:
        return {}
    d, sd, n = float(v.mean() - target), float(v.std(ddof=1)), v.size
    k = k_difference(d, sd, 2 * level, min_clusters) / n     # one-sided at level
    out = {("supported" if d > 0 else "contradicted"): k}
    if margin is not None:
        out["equivalent"] = k_equivalence(d, sd, margin.delta(target), level, min_clusters) / n
    return out


@dataclass(frozen=True)
class Takes:
    """The outcome the observed means would reach first, at ``factor`` x the
    current clusters (INF: never, the means do not differ)."""

    outcome: str
    factor: float
    why: str = ""

    @staticmethod
    def pick(options: Mapping[str, float], why: Mapping[str, str] | None = None) -> "Takes":
        finite = {k: v for k, v in options.items() if np.isfinite(v)}
        if not finite:
            return Takes("", INF, "the observed means do not differ: no finite projection")
        best = min(finite, key=finite.get)
        return Takes(best, max(finite[best], 1.0), (why or {}).get(best, ""))


#: the rules that run once per network (their CPU grows with its count)
PER_NETWORK = ("train", "export_logits", "tabular_fit", "calibrate_multiclass",
               "calibrate_binary", "truth", "calibrator_draws", "evaluate")
#: the config knob that adds independent clusters, per cluster key, and the
#: rules whose CPU grows with it
KNOBS = {"seed": {"scores": ("evaluation.seeds", ("evaluate",)),
                  "synthetic": ("synthetic.seeds", ("synthetic_evaluate",))},
         "draw": {"calibrators": ("calibrators.draws", ("calibrator_draws",))},
         "network": {"scores": ("training.seeds", PER_NETWORK),
                     "calibrators": ("training.seeds", PER_NETWORK)}}


def knob(frame: str, clusters: Sequence[str], rows: pd.DataFrame, factor: float,
         costs: Mapping[str, float] | None = None) -> dict:
    """The config change that gives ``factor`` x the clusters of ``rows``:
    the knob, its current and new value, and the added CPU seconds at the
    run's measured cost of its rules (``costs``: CPU s per rule, e.g.
    :func:`fitontest.study.jobstats.summarise`; NaN without).

    The knob is that of the innermost cluster key that has one: test seeds
    where the clusters are (network, task, seed), the networks per
    architecture (``training.seeds``) where the networks are the clusters,
    validation draws where they are (network, draw)."""
    key = next((k for k in reversed(tuple(clusters))
                if k in KNOBS and frame in KNOBS[k] and k in rows), None)
    if key is None or not np.isfinite(factor):
        return {"knob": "", "now": np.nan, "new": np.nan, "cpu_s": np.nan}
    name, rules = KNOBS[key][frame]
    # one cluster per value of the knob: a seed, a network of each architecture, or a
    # draw of the rule (draws 1..N; the study's own fits, draw 0, are not among
    # them: docs/methods/06-truth-and-scores.md §6.4)
    if key == "network":
        replicates = int(rows.groupby("arch")["network"].nunique().min())
        units = int(rows["network"].nunique())          # the networks the costs paid for
        per_replicate = units / replicates              # networks added per seed
    else:
        replicates = int(rows[key].nunique())
        units, per_replicate = replicates, 1
    new = int(math.ceil(replicates * factor - 1e-9))
    cost = sum((costs or {}).get(r, 0.0) for r in rules) if costs else np.nan
    if costs and not any(r in costs for r in rules):
        cost = np.nan
    per = cost / units
    return {"knob": name, "now": replicates, "new": new,
            "cpu_s": float(per * per_replicate * (new - replicates))}
