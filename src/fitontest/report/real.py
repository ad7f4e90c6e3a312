"""The paper's real-data table: average CE estimates as biases, beside a pseudo-real run.

Real data have no truth, so an evaluator's bias E[est] - CE cannot be
measured; what can be is its average estimate. Averaged over the same
calibrated models, every evaluator targets the same unknown mean CE at a
given test size, so the real biases are the average estimates minus one
unknown constant per size (row) — and the *ranking* of the evaluators by
signed bias does not depend on that constant (docs/methods.md §12.2):

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
  tau (scipy.stats) with their p-values and Fisher-z intervals (standard
  errors sqrt(1.06 / (n - 3)) and sqrt(0.437 / (n - 4)), Fieller, Hartley &
  Pearson 1957).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

UNIT = ["arch", "task", "calibrator"]
TABLE_COLUMNS = ["evaluator", "size", "real_mean", "anchor", "anchor_kind", "real_bias",
                 "real_rank", "pseudo_bias", "pseudo_rank"]
AGREEMENT_COLUMNS = ["size", "n_evaluators", "spearman", "spearman_lo", "spearman_hi",
                     "spearman_p", "kendall", "kendall_lo", "kendall_hi", "kendall_p", "level"]


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


def rank_agreement(table: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """Spearman and Kendall agreement of real and pseudo-real biases per size."""
    rows = []
    for size, row in table.dropna(subset=["pseudo_bias"]).groupby("size"):
        n = len(row)
        out = {"size": int(size), "n_evaluators": n, "level": level}
        if n >= 3:
            rho, p_rho = stats.spearmanr(row["real_bias"], row["pseudo_bias"])
            tau, p_tau = stats.kendalltau(row["real_bias"], row["pseudo_bias"])
        else:
            rho = p_rho = tau = p_tau = np.nan
        se_rho = np.sqrt(1.06 / (n - 3)) if n > 3 else np.nan
        se_tau = np.sqrt(0.437 / (n - 4)) if n > 4 else np.nan
        out.update(spearman=float(rho), spearman_p=float(p_rho), kendall=float(tau),
                   kendall_p=float(p_tau))
        out["spearman_lo"], out["spearman_hi"] = _fisher(rho, se_rho, level)
        out["kendall_lo"], out["kendall_hi"] = _fisher(tau, se_tau, level)
        rows.append(out)
    return pd.DataFrame(rows, columns=AGREEMENT_COLUMNS)


def _fmt(v, digits: int = 4) -> str:
    return "" if v is None or (isinstance(v, float) and not np.isfinite(v)) else f"{v:.{digits}f}"


def markdown(table: pd.DataFrame, agreement: pd.DataFrame, truth: str | None = None) -> str:
    """The table as Markdown: evaluators as rows, per size the real and pseudo-real
    bias with their ranks, then the agreement per size."""
    sizes = sorted(table["size"].unique())
    has_pseudo = table["pseudo_bias"].notna().any()
    head = ["evaluator"]
    for s in sizes:
        head += [f"real {s}", "rank"] + ([f"pseudo {s}", "rank"] if has_pseudo else [])
    lines = ["# Real-data CE-estimation bias", "",
             "Average CE estimate per evaluator and test size minus a row constant "
             "(anchor; docs/methods.md §12.2)"
             + (f", beside the pseudo-real bias (truth {truth})" if has_pseudo else "")
             + ". Rank 1 = most negative bias.", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
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
        lines.append("No pseudo-real scores given: no rank agreement (set real.pseudo_real_scores).")
    else:
        lines += ["## Rank agreement with the pseudo-real biases", "",
                  "| size | evaluators | Spearman rho [interval] | p | Kendall tau [interval] | p |",
                  "|---|---|---|---|---|---|"]
        for _, a in agreement.iterrows():
            lines.append(f"| {a['size']} | {a['n_evaluators']} | {_fmt(a['spearman'], 3)} "
                         f"[{_fmt(a['spearman_lo'], 3)}, {_fmt(a['spearman_hi'], 3)}] | "
                         f"{_fmt(a['spearman_p'], 3)} | {_fmt(a['kendall'], 3)} "
                         f"[{_fmt(a['kendall_lo'], 3)}, {_fmt(a['kendall_hi'], 3)}] | "
                         f"{_fmt(a['kendall_p'], 3)} |")
        lines.append(f"\nIntervals: Fisher z at level {agreement['level'].iloc[0]:g}.")
    return "\n".join(lines) + "\n"


def write_real_tables(real: pd.DataFrame, pseudo: pd.DataFrame | None, bias_csv, agreement_csv,
                      md_path, truth: str = "isotonic", level: float = 0.95) -> pd.DataFrame:
    """Compute and write the three files (atomically); returns the agreement frame."""
    from fitontest.core.io import write_text

    table = bias_table(real, pseudo, truth)
    agreement = rank_agreement(table, level)
    write_text(bias_csv, table.to_csv(index=False, float_format="%.6g"))
    write_text(agreement_csv, agreement.to_csv(index=False, float_format="%.6g"))
    write_text(md_path, markdown(table, agreement, truth if pseudo is not None else None))
    return agreement
