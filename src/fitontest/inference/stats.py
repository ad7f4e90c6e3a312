"""Intervals, significance markers and the Friedman test of the tables.

Choices (docs/methods/11-intervals.md §11.3,
docs/methods/11-verdicts.md §11.4-§11.6; docs/guide/reading-the-tables.md):

- **Interval of a cell**: Student-t 95 % interval of the mean over the cell's
  independent clusters (scipy.stats.t; :mod:`.policy` names them). A
  cluster's value is itself a mean over many score rows (units, sizes, CE
  levels, ...), so the t-interval is accurate already for a few clusters; it
  is deterministic and vectorises over every cell of a table at once, where
  a bootstrap would cost a resampling loop per cell. Fewer than two
  clusters: NaN bounds.
- **Significance markers** (:func:`significance_markers`): the columns of a
  row that are *not significantly worse than any other column* — a
  confidence set for the best column. Every pair of columns gets a two-sided
  paired t-test over the independent clusters both have (the caller passes
  one row per cluster, :mod:`.policy`), the p-values of the row's
  m(m-1)/2 pairs are Holm-corrected together, and a column is "worse" when
  a rejected pair has it on the worse side. The choice of the best column
  never enters a test, so the family-wise error holds including the
  selection; with fewer than ``min_clusters`` clusters no test is made.
  :func:`best_vs_rest_wilcoxon` is the earlier rule (pick the best by mean,
  one-sided Wilcoxon of each column against it over dependent units), kept
  for the A/A harness (:mod:`.verdicts`) that shows why it was replaced.
- **Friedman test** (scipy.stats.friedmanchisquare) over the blocks x
  methods matrix, and the Nemenyi post-hoc p-values
  (scikit_posthocs.posthoc_nemenyi_friedman) of the critical-difference
  diagram (Demšar 2006).
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from scipy import stats


def t_bounds(mean, std, n, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised t-interval bounds from means, sample stds (ddof 1) and counts;
    NaN where ``n < 2``."""
    mean = np.asarray(mean, dtype=np.float64)
    std = np.asarray(std, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    ok = n >= 2
    half = np.full(np.broadcast(mean, std, n).shape, np.nan)
    q = stats.t.ppf(0.5 + level / 2, np.where(ok, n - 1, 1.0))
    half[ok] = (q * std / np.sqrt(np.where(ok, n, 1.0)))[ok]
    return mean - half, mean + half


def mean_interval(values, level: float = 0.95) -> tuple[float, float, float]:
    """(mean, lo, hi): the t-interval of the mean of the finite ``values``;
    NaN bounds with fewer than two finite values (NaN mean with none)."""
    v = np.asarray(values, dtype=np.float64).ravel()
    v = v[np.isfinite(v)]
    if v.size == 0:
        return float("nan"), float("nan"), float("nan")
    m = float(v.mean())
    sd = float(v.std(ddof=1)) if v.size > 1 else float("nan")
    lo, hi = t_bounds(m, sd, v.size, level)
    return m, float(lo), float(hi)


def holm(pvalues, max_true: int | None = None) -> np.ndarray:
    """Holm step-down adjusted p-values (same order as given).

    ``max_true``: at most this many of the hypotheses can be true at once
    (logical constraints, Shaffer 1986): step j multiplies by
    min(max_true, n - j + 1) instead of n - j + 1 (docs/methods/11-verdicts.md §11.5.1)."""
    p = np.asarray(pvalues, dtype=np.float64)
    if p.size == 0:
        return p
    idx = np.argsort(p)
    mult = p.size - np.arange(p.size)
    if max_true is not None:
        mult = np.minimum(mult, max(int(max_true), 1))
    adj = np.minimum(1.0, np.maximum.accumulate(mult * p[idx]))
    out = np.empty(p.size)
    out[idx] = adj
    return out


def _worse_pvalue(diff: np.ndarray, lower_is_better: bool) -> float:
    """One-sided Wilcoxon p-value of "the column is worse than the best".

    Zero differences are dropped (Wilcoxon's convention). The exact null
    distribution is used up to 50 differences without ties in |d|, else the
    normal approximation with tie correction: scipy's default would switch to
    a permutation test there, which is slow and (above 13 pairs) random.
    """
    diff = diff[diff != 0]
    if diff.size == 0:
        return 1.0
    exact = diff.size <= 50 and np.unique(np.abs(diff)).size == diff.size
    return float(stats.wilcoxon(diff, alternative="greater" if lower_is_better else "less",
                                method="exact" if exact else "approx").pvalue)


def best_vs_rest_wilcoxon(wide: pd.DataFrame, *, lower_is_better: bool = True,
                          alpha: float = 0.05) -> pd.Series:
    """The earlier markers: True for the best column (by mean) and every column
    not significantly worse than it (one-sided Wilcoxon against the best,
    Holm over the row). Its false-positive rate exceeds ``alpha``: the best is
    chosen by the same data, and the units it pairs are not independent.

    ``wide``: one row per paired unit, one column per method (NaN allowed:
    each comparison uses the units where both columns are present). A
    column with no values is False; one that shares no unit with the best
    cannot be shown worse and is True.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    x = wide.astype(np.float64)
    means = x.mean(axis=0, skipna=True)
    out = pd.Series(False, index=wide.columns, dtype=bool)
    if not means.notna().any():
        return out
    best = means.idxmin() if lower_is_better else means.idxmax()
    others = [c for c in x.columns if c != best and np.isfinite(means[c])]
    b = x[best].to_numpy()
    p = []
    for c in others:
        d = x[c].to_numpy() - b
        p.append(_worse_pvalue(d[np.isfinite(d)], lower_is_better))
    out[best] = True
    for c, padj in zip(others, holm(p)):
        out[c] = bool(padj >= alpha)
    return out


def pairwise_t(wide) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Paired t-tests of every pair of columns of ``wide`` (rows = independent
    clusters, NaN allowed: each pair uses the rows both have), vectorised.

    Returns (mean difference column i - column j, two-sided p, number of
    pairs), each m x m. A pair with fewer than two rows gets p = 1; with zero
    variance p = 0 when the mean differs from 0, else 1.
    """
    x = np.asarray(wide, dtype=np.float64)
    ok = np.isfinite(x)
    both = ok[:, :, None] & ok[:, None, :]
    d = np.where(both, np.nan_to_num(x)[:, :, None] - np.nan_to_num(x)[:, None, :], 0.0)
    n = both.sum(axis=0)
    nn = np.maximum(n, 1)
    mean = d.sum(axis=0) / nn
    ss = (np.where(both, d - mean, 0.0) ** 2).sum(axis=0)
    var = ss / np.maximum(n - 1, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean / np.sqrt(var / nn)
    p = 2 * stats.t.sf(np.abs(t), np.maximum(n - 1, 1))
    tiny = var <= 1e-24 * np.maximum(1.0, mean ** 2)
    p = np.where(tiny, np.where(np.abs(mean) > 1e-12 * np.nanmax(np.abs(x), initial=1.0), 0.0,
                                1.0), p)
    p = np.where(n >= 2, p, 1.0)
    return mean, p, n


def pairwise_better(wide: pd.DataFrame, *, lower_is_better: bool = True,
                    alpha: float = 0.05, min_clusters: int = 3) -> pd.DataFrame:
    """Columns x columns: True where the row's column is significantly better
    than the column's.

    ``wide``: one row per independent cluster, one column per method (NaN
    allowed). Every pair is tested (two-sided paired t, :func:`pairwise_t`)
    and the p-values of all m(m-1)/2 pairs are Holm-corrected together, so
    the whole matrix holds with family-wise error ``alpha``. Pairs with fewer
    than ``min_clusters`` shared clusters are not tested (never significant).
    """
    return pairwise_family(wide, lower_is_better=lower_is_better, alpha=alpha,
                           min_clusters=min_clusters)[0]


def pairwise_family(wide: pd.DataFrame, extra_p=(), *, lower_is_better: bool = True,
                    alpha: float = 0.05, min_clusters: int = 3) -> tuple[pd.DataFrame, np.ndarray]:
    """:func:`pairwise_better` with ``extra_p`` — p-values of further tests
    about the same pairs (equivalence, :mod:`.equivalence`) — in the same Holm
    family. At most one hypothesis per pair can be true (a pair cannot both
    be equal and differ by a margin), so at most m(m-1)/2 are true at once:
    :func:`holm` with that ``max_true``; without ``extra_p`` it is the plain
    Holm of the tables. Returns the "significantly better" matrix and which
    ``extra_p`` are rejected."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    x = wide.to_numpy(dtype=np.float64)
    m = x.shape[1]
    extra = np.asarray(extra_p, dtype=np.float64).ravel()
    out = np.zeros((m, m), dtype=bool)
    i, j = np.triu_indices(m, 1)
    if m >= 2 and np.isfinite(x).any(axis=0).sum() >= 2:
        mean, p, n = pairwise_t(x)
        p = np.where(n >= max(2, min_clusters), p, 1.0)
        diff = mean[i, j] if lower_is_better else -mean[i, j]   # < 0: column i is better
    else:
        p, diff = np.ones((m, m)), np.zeros(i.size)
    rej = holm(np.concatenate([p[i, j], extra]), max_true=max(i.size, 1)) < alpha
    rej, extra_rej = rej[:i.size], rej[i.size:]
    out[i[rej & (diff < 0)], j[rej & (diff < 0)]] = True
    out[j[rej & (diff > 0)], i[rej & (diff > 0)]] = True
    return pd.DataFrame(out, index=wide.columns, columns=wide.columns), extra_rej


def rank_bounds(better: pd.DataFrame) -> pd.DataFrame:
    """Simultaneous bounds of every method's rank (1 = best) from
    :func:`pairwise_better`: ``lo`` = 1 + the number of methods significantly
    better than it, ``hi`` = m - the number significantly worse. They hold
    together whenever every significant pair is ordered truly."""
    b = better.to_numpy(dtype=bool)
    m = b.shape[0]
    return pd.DataFrame({"lo": 1 + b.sum(axis=0), "hi": m - b.sum(axis=1)},
                        index=better.index)


def significance_markers(wide: pd.DataFrame, *, lower_is_better: bool = True,
                         alpha: float = 0.05, min_clusters: int = 3) -> pd.Series:
    """True for every column not significantly worse than any other column.

    ``wide``: one row per independent cluster, one column per method (NaN
    allowed). All pairs are tested (:func:`pairwise_better`: two-sided paired
    t, Holm over the row's pairs); a column is False when it has no value or a
    rejected pair has it worse. Pairs with fewer than ``min_clusters`` shared
    clusters are not tested: with too few clusters every column with a value
    is True (not distinguishable).
    """
    defined = np.isfinite(wide.to_numpy(dtype=np.float64)).any(axis=0)
    better = pairwise_better(wide, lower_is_better=lower_is_better, alpha=alpha,
                             min_clusters=min_clusters)
    worse = better.to_numpy().any(axis=0)
    return pd.Series(defined & ~worse, index=wide.columns, dtype=bool)


def complete_blocks(wide: pd.DataFrame) -> pd.DataFrame:
    """Blocks x methods without all-NaN methods and then without incomplete blocks."""
    w = wide.dropna(axis=1, how="all")
    return w.dropna(axis=0, how="any")


def friedman(wide: pd.DataFrame) -> tuple[float, float, int, int]:
    """(statistic, p, n_blocks, n_methods) of the Friedman test on the
    complete blocks; NaN statistic and p with fewer than 3 methods or 2
    blocks, or when every block ties every method."""
    w = complete_blocks(wide)
    nb, nm = w.shape
    if nm < 3 or nb < 2:
        return float("nan"), float("nan"), nb, nm
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        res = stats.friedmanchisquare(*[w[c].to_numpy() for c in w.columns])
    return float(res.statistic), float(res.pvalue), nb, nm


def average_ranks(wide: pd.DataFrame, lower_is_better: bool = True) -> pd.Series:
    """Mean within-block rank of each method over the complete blocks (1 = best)."""
    w = complete_blocks(wide)
    return w.rank(axis=1, ascending=lower_is_better, method="average").mean(axis=0)


def nemenyi(wide: pd.DataFrame) -> pd.DataFrame:
    """Nemenyi post-hoc p-values (methods x methods) on the complete blocks."""
    import scikit_posthocs as sp

    w = complete_blocks(wide)
    return sp.posthoc_nemenyi_friedman(w.to_numpy())\
        .set_axis(w.columns, axis=0).set_axis(w.columns, axis=1)


def cluster_binomial_interval(hits, sizes, level: float = 0.95) -> tuple[float, float]:
    """Korn-Graubard interval of a proportion from clustered 0/1 rows: ``hits``
    and ``sizes`` per independent cluster (rows of one cluster may be
    correlated).

    The design-based variance of the share (the ratio estimator over the k
    clusters, k / (k - 1) sum_c (hits_c - p size_c)^2 / N^2) gives the design
    effect d = var / (p (1 - p) / N), floored at 1 (rows of one cluster share
    data, so they are never less variable than independent ones); the
    Clopper-Pearson interval is then taken at the effective sample size
    N / d, shrunk by (z / t_{k-1})^2 for the k - 1 degrees of freedom of that
    variance (Korn & Graubard 1998; R survey's ``svyciprop(method="beta")``).
    Clopper-Pearson's own interval when d = 1 and the clusters are many; NaN with
    fewer than two clusters.
    """
    h = np.asarray(hits, dtype=np.float64).ravel()
    m = np.asarray(sizes, dtype=np.float64).ravel()
    keep = m > 0
    h, m = h[keep], m[keep]
    k, n = h.size, m.sum()
    if k < 2:
        return float("nan"), float("nan")
    p = h.sum() / n
    var = k / (k - 1) * np.sum((h - p * m) ** 2) / n ** 2
    binom = p * (1 - p) / n
    deff = max(var / binom, 1.0) if binom > 0 else 1.0
    a = 1 - level
    n_eff = n / deff * (stats.norm.ppf(a / 2) / stats.t.ppf(a / 2, k - 1)) ** 2
    x = p * n_eff
    lo = stats.beta.ppf(a / 2, x, n_eff - x + 1) if x > 0 else 0.0
    hi = stats.beta.ppf(1 - a / 2, x + 1, n_eff - x) if x < n_eff else 1.0
    return float(lo), float(hi)
