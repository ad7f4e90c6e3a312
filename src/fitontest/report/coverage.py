"""Coverage of the evaluators' CE intervals (``ce_lo``, ``ce_hi``;
docs/methods/11-intervals.md §11.3).

Score rows that carry a CE interval (columns ``ce_lo``, ``ce_hi``,
``ci_level``, ``true_ce_pop``; older frames lack them and get no coverage
table) are covered when ``ce_lo <= true_ce_pop <= ce_hi``: the population
true CE the interval targets (pseudo-real: over the whole hold-out under the
row's truth; synthetic: the exact CE level). A cell is the share of covered
rows (%) with a 95 % interval of that share; the nominal level is in the
caption. Rows of one cluster share data (pseudo-real: the test images of a
(model, task, seed), or of a seed in the paper design; synthetic: the draws of
c and y), so they are not independent draws: the interval is Korn and Graubard's
(:func:`.stats.cluster_binomial_interval`) over the policy's independent clusters
(:mod:`.policy`: the run's design), a Clopper-Pearson interval at the effective
number of rows that the clusters' spread allows. Evaluators without intervals are left out.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from . import policy
from .aggregate import aggregate
from .frames import order
from ..inference.stats import cluster_binomial_interval
from .table import Table

COVERAGE_COLUMNS = ("ce_lo", "ce_hi", "ci_level", "true_ce_pop")


def covered(frame: pd.DataFrame) -> pd.Series:
    """1.0 where the row's interval holds ``true_ce_pop``, 0.0 where it does
    not, NaN where the row has no interval or no population CE."""
    lo, hi, t = (pd.to_numeric(frame[c], errors="coerce") for c in ("ce_lo", "ce_hi",
                                                                      "true_ce_pop"))
    ok = lo.notna() & hi.notna() & t.notna()
    return ((lo <= t) & (t <= hi)).astype(np.float64).where(ok)


def coverage_table(frame: pd.DataFrame, spec, truth: str | None, *,
                   level: float = 0.95) -> Table | None:
    """The coverage table of ``spec`` (rows ``spec.rows``, columns evaluators)."""
    if any(c not in frame.columns for c in COVERAGE_COLUMNS):
        return None
    f = frame.assign(_covered=covered(frame))
    with_ci = f.groupby(spec.columns, sort=False)["_covered"].apply(lambda s: s.notna().any())
    cols = [c for c in order(f, spec.columns) if with_ci.get(c, False)]
    f = f[f[spec.columns].isin(cols) & f["_covered"].notna()]
    if f.empty:
        return None
    rows = list(spec.rows)
    inf = spec.inf(frame)
    clusters = list(inf.clusters)
    k = aggregate(f, "_covered", rows, columns=spec.columns, column_order=cols)
    per = f.groupby(rows + [spec.columns] + clusters, sort=False)["_covered"].agg(["sum", "size"])
    n = (per["size"].groupby(level=list(range(len(rows) + 1))).sum().unstack(spec.columns)
         .reindex(index=k.index, columns=cols).fillna(0).astype(int))
    lo, hi = (pd.DataFrame(np.nan, index=k.index, columns=cols) for _ in range(2))
    for key, g in per.groupby(level=list(range(len(rows) + 1)), sort=False):
        *row, col = key
        at = row[0] if len(row) == 1 else tuple(row)
        lo.at[at, col], hi.at[at, col] = cluster_binomial_interval(g["sum"], g["size"], level)
    n_clusters = per.groupby(level=list(range(len(rows) + 1))).size()
    a, b = int(n_clusters.min()), int(n_clusters.max())
    nominal = sorted(pd.to_numeric(f["ci_level"], errors="coerce").dropna().unique())
    notes = [f"Nominal level: {', '.join(f'{v:.0%}' for v in nominal)}. "
             f"Cells: coverage [Korn-Graubard {level:.0%} interval] over n_units rows in "
             f"{a if a == b else f'{a}-{b}'} independent cluster{'s' if b > 1 else ''} "
             f"{policy.words(clusters)}: the Clopper-Pearson interval at the effective number "
             f"of rows that the spread of the clusters' coverage allows (k - 1 degrees of "
             f"freedom; no interval with fewer than 2 clusters); population: "
             f"{inf.population}."]
    if truth:
        notes.append(f"Truth: {truth}.")
    false = pd.DataFrame(False, index=k.index, columns=cols)
    return Table(values=k * spec.scale, ranks=None, name=spec.name, caption=spec.caption,
                 scale=spec.scale, decimals=spec.decimals, notes=notes,
                 lo=lo * spec.scale, hi=hi * spec.scale, n_units=n, best=false,
                 not_worse=false, bracket=True)
