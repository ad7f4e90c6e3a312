"""The league's table (docs/methods/10-results-and-tables.md §10.5): every evaluator of a finished run --
ours, the cross-fitted ones and the peers' -- on the run's truth, with the tables'
clusters, intervals and verdicts, and the run's CPU beside the base run's.

Reads ``RUN/scores.parquet`` (and ``RUN/synthetic_scores.parquet`` where the
run has the synthetic study) of a run made with ``--config league=true``; per
evaluator, over every (model, task, calibrator, size, seed) of the truth:

- CE error at p = 1 (|ce_used - true_ce|) and p = 2 (squared CE, |ce_used_sq -
  true_ce_sq|), CMEE where the evaluator has a map (all x 1000, as the tables);
- Spearman's rho between the estimated and the true CE across the ranked
  calibrators, per (model, task, size, seed), as Table 4;
- each cell: the mean over the run's independent clusters with its Student-t
  95 % interval, and the simultaneous rank bounds of the tables' paired tests
  (Holm, α = 5 %); ``*`` = not significantly worse than any other evaluator
  (the tables' underlining; ``fitontest_cli.commands.bench.ranking``);
- coverage of the evaluator's CE interval (its own, for the peers that have
  one) of the population CE: the share of rows, with the Korn-Graubard 95 %
  interval over the clusters, as the coverage tables;
- fit s: wall seconds per fit as the jobs recorded them (``fit_seconds``; one
  thread, so about its CPU on an idle machine, more on a loaded one).

``--cpu NAME=FILE.json ...``: ``benchmarks/speed/workflow_cpu.py --json`` files of the
runs (e.g. base and the league's increment), printed as a table.

    python benchmarks/truth/league.py results/tabular --title "tabular study" \\
        --cpu base=base.json league=league.json --out benchmarks/measured/league_tabular.md
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from fitontest_cli.commands.bench import ranking
from fitontest.report import policy
from fitontest.report.frames import resolve_ranked_calibrators, spearman_by_group
from fitontest.inference.stats import cluster_binomial_interval
from fitontest.study.league import CROSS_FITTED, PEERS

MEASURES = [("ce_error", "CE error p=1", 1000.0), ("ce_error_sq", "CE error p=2", 1000.0),
            ("cmee", "CMEE", 1000.0)]


def kind(name: str) -> str:
    return "cross-fitted" if name in CROSS_FITTED else "peer" if name in PEERS else "ours"


def cell(r, scale: float, decimals: int, min_clusters: int, sign: float = 1.0) -> str:
    if r is None:
        return "–"
    m, lo, hi = (sign * scale * r[k] for k in ("mean", "lo", "hi"))
    if r["clusters"] < min_clusters:            # no interval, no test: the rank by mean
        return f"{m:.{decimals}f} #{int(r['rank'])}"
    lo, hi = sorted((lo, hi))
    iv = f" [{lo:.{decimals}f}, {hi:.{decimals}f}]" if np.isfinite(lo) else ""
    b = (f"{int(r['rank_lo'])}" if r["rank_lo"] == r["rank_hi"]
         else f"{int(r['rank_lo'])}–{int(r['rank_hi'])}")
    return f"{m:.{decimals}f}{iv} r{b}{'*' if r['tied'] else ''}"


def coverage(f: pd.DataFrame, clusters) -> dict[str, str]:
    """Per evaluator with intervals: covered share [Korn-Graubard 95 %] (level)."""
    lo, hi, t = (pd.to_numeric(f[c], errors="coerce") for c in ("ce_lo", "ce_hi", "true_ce_pop"))
    ok = lo.notna() & hi.notna() & t.notna()
    g = f[ok].assign(_c=((lo <= t) & (t <= hi))[ok].astype(float))
    out = {}
    for name, e in g.groupby("evaluator", sort=False):
        per = e.groupby(list(clusters))["_c"].agg(["sum", "size"])
        a, b = cluster_binomial_interval(per["sum"], per["size"], 0.95)
        levels = ", ".join(f"{v:.0%}" for v in sorted(e["ci_level"].dropna().unique()))
        iv = f" [{100 * a:.1f}, {100 * b:.1f}]" if np.isfinite(a) else ""
        out[name] = f"{100 * e['_c'].mean():.1f}{iv} (level {levels}, {len(e)} rows)"
    return out


def league_table(f: pd.DataFrame, source: str) -> pd.DataFrame:
    """One row per evaluator (table order: by CE error at p = 1)."""
    inf = policy.inference_for(source, frame=f)
    ranks = {m: ranking(f, m, inf) for m, _, _ in MEASURES}
    if source == "synthetic":
        rho = spearman_by_group(f, item="ce_level")
        inf_rho = inf
    else:
        chosen, _ = resolve_ranked_calibrators(f["calibrator"].unique())
        rho = spearman_by_group(f, item="calibrator", items=chosen)
        inf_rho = policy.inference_for("scores", "spearman", frame=f)
    # higher rho is better: rank its negative, print it back
    ranks["spearman"] = ranking(rho.assign(neg=-rho["spearman"]), "neg", inf_rho)
    cov = coverage(f, inf.clusters)
    fit_s = f.groupby("evaluator", sort=False)["fit_seconds"].mean()   # a row per fit
    names = sorted(f["evaluator"].unique(), key=lambda e: (
        ranks["ce_error"]["mean"].get(e, np.inf), e))
    rows = []
    for e in names:
        def at(m):
            return ranks[m].loc[e] if e in ranks[m].index else None
        rows.append({"evaluator": e, "kind": kind(e),
                     **{label: cell(at(m), s, 2 if m != "ce_error_sq" else 3, inf.min_clusters)
                        for m, label, s in MEASURES},
                     "Spearman": cell(at("spearman"), 1.0, 3, inf_rho.min_clusters, sign=-1.0),
                     "coverage %": cov.get(e, "–"),
                     "fit s (wall)": f"{fit_s.get(e, np.nan):.3f}"})
    clusters = int(max(r["clusters"].max() for r in ranks.values() if len(r)))
    note = (f"{clusters} independent clusters {policy.words(inf.clusters)}; population: "
            f"{inf.population}")
    return pd.DataFrame(rows).set_index("evaluator"), note


def cpu_table(specs: list[str]) -> str:
    rows = []
    for spec in specs:
        name, _, path = spec.partition("=")
        d = json.loads(Path(path).read_text())
        rows.append(f"| {name} | {' '.join(d['args'])} | {d['exit']} | {d['wall_s']:.0f} | "
                    f"{d['controller_cpu_s']:.0f} + {d['jobs_cpu_s']:.0f} = "
                    f"**{d['total_cpu_s']:.0f}** | {d['machine']} |")
    return ("| run | snakemake arguments | exit | wall s | CPU-s: controller + jobs = total | "
            "machine |\n| --- | --- | --- | --- | --- | --- |\n" + "\n".join(rows))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, help="results/<exp> of a league run")
    ap.add_argument("--title", default="")
    ap.add_argument("--truth", help="the truth of the pseudo-real rows (default: the run's first)")
    ap.add_argument("--cpu", nargs="*", default=[], help="NAME=workflow_cpu.json ...")
    ap.add_argument("--studies", nargs="+", default=["pseudo-real", "synthetic"],
                    choices=["pseudo-real", "synthetic"], help="which of the run's studies")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    parts = [f"# The league: {args.title or args.run}", "",
             f"`python benchmarks/truth/league.py {' '.join(sys.argv[1:] if argv is None else argv)}`",
             ""]
    if args.cpu:
        parts += ["## CPU", "", cpu_table(args.cpu), ""]
    for file, source, title in [("scores.parquet", "scores", "pseudo-real study"),
                                ("synthetic_scores.parquet", "synthetic", "synthetic study")]:
        path = args.run / file
        if not path.exists() or title.split()[0] not in args.studies:
            continue
        f = pd.read_parquet(path)
        truths = list(dict.fromkeys(f["truth"]))
        truth = args.truth if source == "scores" and args.truth else truths[0]
        table, note = league_table(f[f["truth"] == truth], source)
        parts += [f"## {title} (truth: {truth})", "",
                  f"Cells ×1000 but Spearman: mean [95 % interval] over {note}; rK or rK–L: "
                  "rank, or simultaneous rank bounds; * not significantly worse than any "
                  "other (Holm, α = 5 %); #K: rank by mean, untested (fewer than "
                  f"{policy.inference_for(source, frame=f).min_clusters} clusters); – none "
                  "(no map, no L2 form or no interval).", "",
                  table.to_markdown(), ""]
    text = "\n".join(parts)
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
