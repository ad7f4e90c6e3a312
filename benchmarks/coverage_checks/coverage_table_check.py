"""Do the run's coverage tables' intervals hold the coverage measured with exact
truth? (docs/methods/11-intervals.md §11.3, "Interval of a coverage cell")

Each cell of ``coverage_ovr`` / ``coverage_confidence`` (under the run's
``posterior`` truth) is set against the same (family, task kind, n) cell of
benchmarks/coverage_checks/interval_coverage_study.py on that run's worlds (``posterior``
maps, p = 1, today's default alpha scale): exact truth, hundreds of
independent samples. Prints, per cell, the table's share with its
Korn-Graubard interval over the seeds and, for comparison, the
Clopper-Pearson interval over the rows as if independent, and how many cells
each holds the exact-truth figure in.

    python benchmarks/coverage_checks/coverage_table_check.py --results results/default
        [--study benchmarks/measured/interval_coverage_study.md]
"""
from __future__ import annotations

import argparse
import re
from pathlib import Path

import pandas as pd
from scipy import stats

from fitontest.inference.intervals import INVERTED_ALPHA_SCALE
from fitontest.report.specs import build, spec_named

KINDS = {"coverage_confidence": "confidence", "coverage_ovr": "ovr"}


def exact_cells(text: str) -> dict:
    """{(family, kind, n): coverage %} of the study's p = 1 rows at today's default
    alpha scale, posterior maps (a file may hold several runs, each with its own
    default scale in its header)."""
    out = {}
    for run in text.split("\n## run: "):
        if "### map posterior, by task kind" not in run:
            continue
        got = re.search(r"default alpha scale ([\d.]+)", run)
        label = ("inverted" if got and float(got.group(1)) == INVERTED_ALPHA_SCALE
                 else f"inverted k={INVERTED_ALPHA_SCALE:g}")
        section = run.split("### map posterior, by task kind")[1].split("\n### ")[0]
        lines = [[c.strip() for c in ln.strip().strip("|").split("|")]
                 for ln in section.splitlines() if ln.startswith("|")]
        head = lines[0]
        for parts in lines[2:]:
            if parts[1] == "1" and parts[2] == label:
                for kind in KINDS.values():
                    out[(parts[0], kind, int(parts[3]))] = float(
                        parts[head.index(kind)].split()[0])
    return out


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=level, method="exact")
    return 100 * ci.low, 100 * ci.high


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", default="results/default")
    ap.add_argument("--study", default="benchmarks/measured/interval_coverage_study.md")
    args = ap.parse_args()
    exact = exact_cells(Path(args.study).read_text(encoding="utf-8"))
    frame = pd.read_parquet(Path(args.results, "scores.parquet"))
    rows = []
    for name, kind in KINDS.items():
        t = build(spec_named(name), {"scores": frame}, "posterior")
        for n in t.values.index:
            for fam in t.values.columns:
                if (fam, kind, int(n)) not in exact:
                    continue
                e, v, rows_n = exact[(fam, kind, int(n))], t.values.at[n, fam], t.n_units.at[n, fam]
                lo, hi = t.lo.at[n, fam], t.hi.at[n, fam]
                clo, chi = clopper_pearson(round(v / 100 * rows_n), int(rows_n))
                rows.append((kind, fam, int(n), round(v, 1), e, f"[{lo:.1f}, {hi:.1f}]",
                             lo <= e <= hi, f"[{clo:.1f}, {chi:.1f}]", clo <= e <= chi,
                             hi - lo, chi - clo))
    df = pd.DataFrame(rows, columns=["kind", "family", "n", "table %", "exact %", "korn-graubard",
                                     "holds", "clopper-pearson", "holds ", "w_kg", "w_cp"])
    print(df.drop(columns=["w_kg", "w_cp"]).to_string(index=False))
    print(f"\nexact-truth coverage inside the table's interval: Korn-Graubard "
          f"{int(df['holds'].sum())} of {len(df)} cells (mean width {df['w_kg'].mean():.1f} "
          f"points), Clopper-Pearson over rows {int(df['holds '].sum())} of {len(df)} "
          f"(mean width {df['w_cp'].mean():.1f})")


if __name__ == "__main__":
    main()
