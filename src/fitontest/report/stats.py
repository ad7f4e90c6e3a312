"""Intervals, significance markers and the Friedman test of the tables.

Choices (docs/methods.md §11.3-§11.6; README "Reading the tables"):

- **Interval of a cell**: Student-t 95 % interval of the mean over the cell's
  independent units (scipy.stats.t). A unit's value is itself a mean over
  many score rows (sizes, CE levels, ...), so the t-interval is accurate
  already for a few units; it is deterministic and vectorises over every
  cell of a table at once, where a bootstrap would cost a resampling loop
  per cell on ~10^6 rows. Fewer than two units: NaN bounds.
- **Significance markers**: the best column of a row (by mean) and every
  column not significantly worse than it. "Worse" is a one-sided Wilcoxon
  signed-rank test (scipy.stats.wilcoxon) of the paired differences over
  the units both columns have; the p-values of a row are Holm-corrected
  (family-wise error ``alpha`` over the row's comparisons; :func:`holm`, a
  few lines, since statsmodels' ``multipletests`` runs a full garbage
  collection per call, a third of the build time on the paper grid). Wilcoxon needs
  no normality of the differences, which are heavy-tailed for CE errors;
  Holm holds under any dependence between the comparisons.
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


def holm(pvalues) -> np.ndarray:
    """Holm step-down adjusted p-values (same order as given)."""
    p = np.asarray(pvalues, dtype=np.float64)
    if p.size == 0:
        return p
    idx = np.argsort(p)
    adj = np.minimum(1.0, np.maximum.accumulate((p.size - np.arange(p.size)) * p[idx]))
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


def significance_markers(wide: pd.DataFrame, *, lower_is_better: bool = True,
                         alpha: float = 0.05) -> pd.Series:
    """True for the best column (by mean) and every column not significantly
    worse than it.

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


def binomial_interval(k, n, level: float = 0.95) -> tuple[float, float]:
    """Clopper-Pearson interval of a proportion k / n (NaN when n == 0)."""
    if int(n) == 0:
        return float("nan"), float("nan")
    ci = stats.binomtest(int(k), int(n)).proportion_ci(confidence_level=level, method="exact")
    return float(ci.low), float(ci.high)
