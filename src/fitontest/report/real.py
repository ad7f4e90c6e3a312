"""The paper's real-data table: average CE estimates as biases, beside a pseudo-real run.

Real data have no truth, so an evaluator's bias E[est] - CE cannot be
measured; what can be is its average estimate. Averaged over the same
calibrated models, every evaluator targets the same unknown mean CE at a
given test size, so the real biases are the average estimates minus one
unknown constant per size (row) — and the *ranking* of the evaluators by
signed bias does not depend on that constant (docs/methods/12-real-data.md §12.2):

- cell: the mean over calibrated models (arch, task, calibrator) of the mean
  over that model's disjoint test subsets of ``ce_used`` (pseudo-real: of
  ``ce_used - true_ce`` under the chosen truth), as the other tables (§11.4);
- row constant (anchor): where a pseudo-real row of the same size exists,
  the constant that gives the real row the pseudo-real row's mean over the
  common evaluators (``anchor = "pseudo_real"``); otherwise the mean over
  evaluators of the real estimates at the largest size, a proxy of the mean
  true CE (``anchor = "largest_size"``);
- ranks: 1 = most negative signed bias;
- agreement per size over the common evaluators: Spearman's rho and Kendall's
  tau (scipy.stats) with their p-values and two intervals of different
  populations (docs/methods/12-real-data.md §12.3):

  - the subset bootstrap (:func:`subset_bootstrap`): the test subsets of each
    network resampled with replacement (jointly over its tasks, calibrators
    and evaluators, which share them), in the real and the pseudo-real run,
    the cells and both statistics recomputed per replicate; percentile
    interval. It covers the agreement that a repeat of both runs on other test
    subsets of the same sizes would show (same calibrated models, as many
    subsets), i.e. the cells' noise; not defined (NaN) where a network of
    either run has one subset of that size;
  - Fisher z (standard errors sqrt(1.06 / (n - 3)) and sqrt(0.437 / (n - 4)),
    Fieller, Hartley & Pearson 1957): the evaluators as a sample of
    evaluators, the cells taken as exact.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

UNIT = ["arch", "task", "calibrator"]
TABLE_COLUMNS = ["evaluator", "size", "real_mean", "anchor", "anchor_kind", "real_bias",
                 "real_rank", "pseudo_bias", "pseudo_rank"]
AGREEMENT_COLUMNS = ["size", "n_evaluators", "spearman", "spearman_p", "spearman_boot_lo",
                     "spearman_boot_hi", "spearman_fisher_lo", "spearman_fisher_hi", "kendall",
                     "kendall_p", "kendall_boot_lo", "kendall_boot_hi", "kendall_fisher_lo",
                     "kendall_fisher_hi", "real_subsets", "pseudo_subsets", "n_boot", "level"]


def cell_means(frame: pd.DataFrame, value: pd.Series) -> pd.Series:
    """Mean over units of each unit's mean over subsets, per (evaluator, size)."""
    f = frame[UNIT + ["evaluator", "size"]].assign(v=np.asarray(value, dtype=np.float64))
    per_unit = f.groupby(UNIT + ["evaluator", "size"], observed=True)["v"].mean()
    return per_unit.groupby(["evaluator", "size"], observed=True).mean()


def real_means(real: pd.DataFrame) -> pd.Series:
    """Average CE estimate (``ce_used``) per (evaluator, size) of a real-data run."""
    if real.empty:
        raise ValueError("the real-data scores are empty")
    return cell_means(real, real["ce_used"])


def pseudo_biases(pseudo: pd.DataFrame, truth: str) -> pd.Series:
    """Average bias ``ce_used - true_ce`` per (evaluator, size) of a pseudo-real run."""
    have = sorted(pseudo["truth"].unique())
    if truth not in have:
        raise ValueError(f"the pseudo-real scores have no truth {truth!r}; they have {have}")
    f = pseudo[pseudo["truth"] == truth]
    return cell_means(f, f["ce_used"] - f["true_ce"])


def bias_table(real: pd.DataFrame, pseudo: pd.DataFrame | None = None,
               truth: str = "isotonic") -> pd.DataFrame:
    """One row per (evaluator, size) with the columns :data:`TABLE_COLUMNS`."""
    r = real_means(real).rename("real_mean").reset_index()
    p = (pseudo_biases(pseudo, truth).rename("pseudo_bias").reset_index()
         if pseudo is not None and not pseudo.empty
         else pd.DataFrame(columns=["evaluator", "size", "pseudo_bias"]))
    p["size"] = p["size"].astype(np.int64)
    t = r.merge(p, on=["evaluator", "size"], how="left")
    largest = r.loc[r["size"] == r["size"].max(), "real_mean"].mean()
    anchors = {}
    for size, row in t.groupby("size"):
        both = row.dropna(subset=["pseudo_bias"])
        if len(both):
            anchors[size] = (both["real_mean"].mean() - both["pseudo_bias"].mean(), "pseudo_real")
        else:
            anchors[size] = (largest, "largest_size")
    t["anchor"] = t["size"].map(lambda s: anchors[s][0])
    t["anchor_kind"] = t["size"].map(lambda s: anchors[s][1])
    t["real_bias"] = t["real_mean"] - t["anchor"]
    t["real_rank"] = t.groupby("size")["real_bias"].rank(method="min")
    t["pseudo_rank"] = t.groupby("size")["pseudo_bias"].rank(method="min")
    return t[TABLE_COLUMNS].sort_values(["size", "evaluator"], ignore_index=True)


def _fisher(r: float, se: float, level: float) -> tuple[float, float]:
    if not np.isfinite(r) or not np.isfinite(se):
        return np.nan, np.nan
    z, q = np.arctanh(np.clip(r, -0.999999, 0.999999)), stats.norm.ppf(0.5 + level / 2)
    return float(np.tanh(z - q * se)), float(np.tanh(z + q * se))


def spearman_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Spearman's rho of every row pair of (R, n) arrays: Pearson's r of the
    rows' average ranks (scipy.stats.rankdata), as scipy.stats.spearmanr."""
    ra, rb = stats.rankdata(a, axis=-1), stats.rankdata(b, axis=-1)
    ra -= ra.mean(axis=-1, keepdims=True)
    rb -= rb.mean(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (ra * rb).sum(-1) / np.sqrt((ra ** 2).sum(-1) * (rb ** 2).sum(-1))


def kendall_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Kendall's tau-b of every row pair of (R, n) arrays, as scipy.stats.kendalltau:
    (concordant - discordant) / sqrt(untied pairs of a * untied pairs of b)."""
    i, j = np.triu_indices(a.shape[-1], 1)
    da, db = np.sign(a[..., i] - a[..., j]), np.sign(b[..., i] - b[..., j])
    with np.errstate(invalid="ignore", divide="ignore"):
        return (da * db).sum(-1) / np.sqrt((da != 0).sum(-1) * (db != 0).sum(-1))


def subset_arrays(frame: pd.DataFrame, value, size: int, evaluators) -> list[np.ndarray]:
    """Per network, the (subsets, units, evaluators) array of ``value`` at test
    size ``size`` (NaN where a cell is missing); units are (task, calibrator),
    subsets the ``seed`` column, evaluators in the order given."""
    f = frame[UNIT + ["evaluator", "size", "seed"]].assign(v=np.asarray(value, dtype=np.float64))
    f = f[(f["size"] == size) & f["evaluator"].isin(evaluators)]
    g = f.groupby(["arch", "seed", "task", "calibrator", "evaluator"], observed=True)["v"].mean()
    out = []
    for _, x in g.groupby(level="arch", observed=True):
        x = x.droplevel("arch").unstack("evaluator").reindex(columns=list(evaluators))
        seeds = x.index.get_level_values("seed").unique()
        units = x.index.droplevel("seed").unique()
        full = pd.MultiIndex.from_tuples([(s_, *u) for s_ in seeds for u in units],
                                         names=x.index.names)
        out.append(x.reindex(full).to_numpy().reshape(len(seeds), len(units), len(evaluators)))
    return out


def bootstrap_cells(arrays: list[np.ndarray], n_boot: int, rng, weights=None) -> np.ndarray:
    """(n_boot, E) cells (:func:`cell_means`: mean over units of each unit's mean
    over subsets) with each network's subsets drawn with replacement. A
    network's subset j holds the same test points for all its tasks,
    calibrators and evaluators, so these are drawn together. ``weights`` (per
    network an (R, m) array of multiplicities) replaces the draws: all ones
    gives the cells themselves."""
    units = []
    for i, x in enumerate(arrays):
        m = x.shape[0]
        if weights is not None:
            w = np.asarray(weights[i], dtype=np.float64)
        else:
            draws = rng.integers(0, m, size=(n_boot, m)) + m * np.arange(n_boot)[:, None]
            w = np.bincount(draws.ravel(), minlength=n_boot * m).reshape(n_boot, m) * 1.0
        flat = x.reshape(m, -1)
        ok = np.isfinite(flat)
        with np.errstate(invalid="ignore", divide="ignore"):
            units.append(((w @ np.where(ok, flat, 0.0)) / (w @ ok)).reshape(len(w), *x.shape[1:]))
    allu = np.concatenate(units, axis=1)
    ok = np.isfinite(allu)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(ok, allu, 0.0).sum(1) / ok.sum(1)


def bootstrap_intervals(real_arrays: list[np.ndarray], pseudo_arrays: list[np.ndarray],
                        level: float = 0.95, n_boot: int = 2000, rng=None) -> dict:
    """Percentile intervals of Spearman's rho and Kendall's tau between the
    real and the pseudo-real cells with both runs' subsets redrawn
    (:func:`bootstrap_cells`): ``{spearman,kendall}_boot_{lo,hi}``,
    ``real_subsets`` and ``pseudo_subsets`` (the fewest of a network). NaN
    where a network of either run has one subset (nothing to redraw: the
    cells' noise is not measured) or ``n_boot`` is 0."""
    rng = np.random.default_rng(rng)
    m_real = min((x.shape[0] for x in real_arrays), default=0)
    m_pseudo = min((x.shape[0] for x in pseudo_arrays), default=0)
    out = {"real_subsets": m_real, "pseudo_subsets": m_pseudo}
    reps = {}
    if n_boot and min(m_real, m_pseudo) >= 2:
        r = bootstrap_cells(real_arrays, n_boot, rng)
        p = bootstrap_cells(pseudo_arrays, n_boot, rng)
        reps = {"spearman": spearman_rows(r, p), "kendall": kendall_rows(r, p)}
    for name in ("spearman", "kendall"):
        rep = reps.get(name, np.array([]))
        rep = rep[np.isfinite(rep)]
        lo, hi = (np.quantile(rep, [(1 - level) / 2, (1 + level) / 2]) if rep.size
                  else (np.nan, np.nan))
        out[f"{name}_boot_lo"], out[f"{name}_boot_hi"] = float(lo), float(hi)
    return out


def subset_bootstrap(real: pd.DataFrame, pseudo: pd.DataFrame, truth: str, size: int,
                     evaluators, level: float = 0.95, n_boot: int = 2000, seed: int = 0) -> dict:
    """:func:`bootstrap_intervals` of the real run's ``ce_used`` and the
    pseudo-real run's ``ce_used - true_ce`` (truth ``truth``) at test size
    ``size``, seeded by ``[seed, size]``."""
    p = pseudo[pseudo["truth"] == truth]
    return bootstrap_intervals(subset_arrays(real, real["ce_used"], size, evaluators),
                               subset_arrays(p, p["ce_used"] - p["true_ce"], size, evaluators),
                               level, n_boot, [seed, size])


def rank_agreement(table: pd.DataFrame, level: float = 0.95, *, real: pd.DataFrame | None = None,
                   pseudo: pd.DataFrame | None = None, truth: str = "isotonic",
                   n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Spearman and Kendall agreement of real and pseudo-real biases per size,
    with Fisher-z intervals and, given both runs' scores, the subset
    bootstrap's (:func:`subset_bootstrap`; NaN without them)."""
    rows = []
    for size, row in table.dropna(subset=["pseudo_bias"]).groupby("size"):
        n = len(row)
        out = {"size": int(size), "n_evaluators": n, "level": level, "n_boot": int(n_boot)}
        if n >= 3:
            rho, p_rho = stats.spearmanr(row["real_bias"], row["pseudo_bias"])
            tau, p_tau = stats.kendalltau(row["real_bias"], row["pseudo_bias"])
        else:
            rho = p_rho = tau = p_tau = np.nan
        se_rho = np.sqrt(1.06 / (n - 3)) if n > 3 else np.nan
        se_tau = np.sqrt(0.437 / (n - 4)) if n > 4 else np.nan
        out.update(spearman=float(rho), spearman_p=float(p_rho), kendall=float(tau),
                   kendall_p=float(p_tau))
        out["spearman_fisher_lo"], out["spearman_fisher_hi"] = _fisher(rho, se_rho, level)
        out["kendall_fisher_lo"], out["kendall_fisher_hi"] = _fisher(tau, se_tau, level)
        if real is not None and pseudo is not None and n >= 3:
            out.update(subset_bootstrap(real, pseudo, truth, int(size), list(row["evaluator"]),
                                        level, n_boot, seed))
        rows.append(out)
    return pd.DataFrame(rows, columns=AGREEMENT_COLUMNS)


def _fmt(v, digits: int = 4) -> str:
    return "" if v is None or (isinstance(v, float) and not np.isfinite(v)) else f"{v:.{digits}f}"


def _int(v) -> str:
    return "" if v is None or not np.isfinite(v) else str(int(v))


def markdown(table: pd.DataFrame, agreement: pd.DataFrame, truth: str | None = None,
             notes=()) -> str:
    """The table as Markdown: evaluators as rows, per size the real and pseudo-real
    bias with their ranks, then the agreement per size; ``notes`` (how the
    files were read: probabilities, guessed names, capped sizes) in the caption."""
    sizes = sorted(table["size"].unique())
    has_pseudo = table["pseudo_bias"].notna().any()
    head = ["evaluator"]
    for s in sizes:
        head += [f"real {s}", "rank"] + ([f"pseudo {s}", "rank"] if has_pseudo else [])
    lines = ["# Real-data CE-estimation bias", "",
             "Average CE estimate per evaluator and test size minus a row constant "
             "(anchor; docs/methods/12-real-data.md §12.2)"
             + (f", beside the pseudo-real bias (truth {truth})" if has_pseudo else "")
             + ". Rank 1 = most negative bias.", ""]
    if len(notes):
        lines += ["Data: " + "; ".join(notes) + ".", ""]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    by = table.set_index(["evaluator", "size"])
    for e in sorted(table["evaluator"].unique()):
        cells = [e]
        for s in sizes:
            if (e, s) in by.index:
                r = by.loc[(e, s)]
                cells += [_fmt(r["real_bias"]), _fmt(r["real_rank"], 0)]
                if has_pseudo:
                    cells += [_fmt(r["pseudo_bias"]), _fmt(r["pseudo_rank"], 0)]
            else:
                cells += [""] * (4 if has_pseudo else 2)
        lines.append("| " + " | ".join(cells) + " |")
    anchors = table.groupby("size")[["anchor", "anchor_kind"]].first()
    lines += ["", "Anchors: " + "; ".join(f"{s}: {_fmt(a.anchor)} ({a.anchor_kind})"
                                          for s, a in anchors.iterrows()), ""]
    if agreement.empty:
        lines.append("No pseudo-real scores given: no rank agreement "
                     "(set real.pseudo_real_scores).")
    else:
        def iv(a, name, kind):
            return f"[{_fmt(a[f'{name}_{kind}_lo'], 3)}, {_fmt(a[f'{name}_{kind}_hi'], 3)}]"

        lines += ["## Rank agreement with the pseudo-real biases", "",
                  "| size | evaluators | Spearman rho | subset bootstrap | Fisher z | p "
                  "| Kendall tau | subset bootstrap | Fisher z | p | subsets real / pseudo |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
        for _, a in agreement.iterrows():
            lines.append(f"| {_int(a['size'])} | {_int(a['n_evaluators'])} | "
                         f"{_fmt(a['spearman'], 3)} | "
                         f"{iv(a, 'spearman', 'boot')} | {iv(a, 'spearman', 'fisher')} | "
                         f"{_fmt(a['spearman_p'], 3)} | {_fmt(a['kendall'], 3)} | "
                         f"{iv(a, 'kendall', 'boot')} | {iv(a, 'kendall', 'fisher')} | "
                         f"{_fmt(a['kendall_p'], 3)} | {_int(a['real_subsets'])} / "
                         f"{_int(a['pseudo_subsets'])} |")
        a0 = agreement.iloc[0]
        lines.append(f"\nIntervals at level {a0['level']:g} (docs/methods/12-real-data.md "
                     "§12.3). Subset "
                     f"bootstrap ({_int(a0['n_boot'])} replicates): each network's test subsets "
                     "redrawn in both runs; it covers the agreement a repeat on other test "
                     "subsets of these sizes would show (the cells' noise); empty where a "
                     "network has one subset. Fisher z: the evaluators as a sample of "
                     "evaluators, the cells taken as exact (their noise ignored).")
    return "\n".join(lines) + "\n"


def write_real_tables(real: pd.DataFrame, pseudo: pd.DataFrame | None, bias_csv, agreement_csv,
                      md_path, truth: str = "isotonic", level: float = 0.95, n_boot: int = 2000,
                      seed: int = 0, notes=()) -> pd.DataFrame:
    """Compute and write the three files (atomically); returns the agreement frame."""
    from fitontest.core.io import write_text

    table = bias_table(real, pseudo, truth)
    agreement = rank_agreement(table, level, real=real, pseudo=pseudo, truth=truth,
                               n_boot=n_boot, seed=seed)
    write_text(bias_csv, table.to_csv(index=False, float_format="%.6g"))
    write_text(agreement_csv, agreement.to_csv(index=False, float_format="%.6g"))
    write_text(md_path, markdown(table, agreement, truth if pseudo is not None else None, notes))
    return agreement
