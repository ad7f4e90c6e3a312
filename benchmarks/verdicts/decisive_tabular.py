"""A run sized to decide the claims, against the projection that sized it
(docs/methods/11-verdicts.md §11.5.2; benchmarks/measured/decisive_tabular.md).

Reads a base run's findings (whose "what it would take" sized the decisive
config), the decisive run's findings and both runs' job statistics, and
prints: the headlines, each claim's verdict in both runs with the base run's
projection (knob value and outcome) beside it, which claims the projection
said the decisive run's knob values would decide and how many it did, and
the decisive run's wall and CPU seconds (the controller's record: its own CPU
and its job processes'). With ``--default RUN --networks N`` also the
projected CPU of the default at N networks per architecture (config/decisive.yaml)
at RUN's measured cost per job.

    python benchmarks/verdicts/decisive_tabular.py results/tabular results/decisive-tabular \\
        [--default results/default --networks N --default-total CPU_S]
"""
from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from fitontest.report import findings as F
from fitontest.report import projection
from fitontest.study import jobstats


def read(run: Path) -> pd.DataFrame:
    return pd.read_csv(run / "findings.csv", keep_default_na=False)


def knob_values(run: Path) -> dict:
    """The decisive run's values of the knobs (networks per architecture, seeds,
    draws), from its frames."""
    s = pd.read_parquet(run / "scores.parquet", columns=["arch", "network", "seed"])
    c = pd.read_parquet(run / "calibrators.parquet", columns=["draw"])
    return {"training.seeds": s["network"].nunique() // s["arch"].nunique(),
            "evaluation.seeds": s["seed"].nunique(), "calibrators.draws": c["draw"].nunique() - 1}


def cost_line(run: Path) -> tuple[float, float, str]:
    row = pd.read_csv(run / "benchmarks" / f"{jobstats.CONTROLLER}.tsv", sep="\t").iloc[-1]
    cpu = float(row.cpu_time) + float(row.jobs_cpu_time)
    return float(row.s), cpu, jobstats.controller_line(run, jobstats.summarise(run)
                                                         .drop(index=jobstats.CONTROLLER,
                                                               errors="ignore").cpu_s.sum())


def compare(base: Path, decisive: Path) -> None:
    a, b = read(base).set_index("id"), read(decisive).set_index("id")
    values = knob_values(decisive)
    print(f"base      {base}: {F.headline(a.reset_index())}")
    print(f"decisive  {decisive}: {F.headline(b.reset_index())}  (knobs: {values})\n")
    rows = []
    for cid in a.index:
        ra, rb = a.loc[cid], b.loc[cid]
        new = pd.to_numeric(ra["knob_new"], errors="coerce")
        promised = (ra["status"] == F.UNDECIDED and ra["takes_knob"] in values
                    and pd.notna(new) and new <= values[ra["takes_knob"]])
        rows.append({"id": cid, "base": ra["status"], "projected": (
            f"{ra['takes_outcome']} at {ra['takes_knob']} {new:.0f}" if ra["takes_knob"] else ""),
            "promised": promised, "decisive": rb["status"],
            "decided": rb["status"] in (F.SUPPORTED, F.CONTRADICTED, F.EQUIVALENT)})
    t = pd.DataFrame(rows)
    print(t.to_string(index=False))
    p = t[t["promised"]]
    print(f"\nprojected to be decided by these knob values: {len(p)}; decided: "
          f"{int(p['decided'].sum())} ({', '.join(p.loc[p['decided'], 'id'])}); "
          f"decided in all: {int(t['decided'].sum())} of {len(t)} "
          f"(base: {int(t['base'].isin([F.SUPPORTED, F.CONTRADICTED, F.EQUIVALENT]).sum())})")
    wall, cpu, line = cost_line(decisive)
    print(f"\ndecisive run: wall {wall:.0f} s, CPU {cpu:.0f} s — {line}")


def ladder(base: Path) -> None:
    """The base run's headline and its ladder ("A run that would decide them",
    with the CPU at its cost: ``findings_cost.md``), which sizes the decisive run."""
    print(f"base      {base}: {F.headline(read(base))}\n")
    text = (base / "findings_cost.md").read_text(encoding="utf-8")
    print(text[text.index("## A run that would decide them"):].strip())
    wall, cpu, line = cost_line(base)
    print(f"\nbase run: wall {wall:.0f} s, CPU {cpu:.0f} s — {line}")


def projected_default(run: Path, networks: int, total: float | None = None) -> None:
    """CPU of the default at ``networks`` per architecture: the measured run's
    total (``total``, else its controller record) plus its per-network rules'
    cost (``fitontest.report.projection.PER_NETWORK``) for the added networks.
    Not scaled: the split, the synthetic study, the tables, figures and
    findings rules (they grow with the clusters)."""
    cost = jobstats.costs(run)
    s = pd.read_parquet(run / "scores.parquet", columns=["arch", "network"])
    n = s["network"].nunique() // s["arch"].nunique()
    total = cost_line(run)[1] if total is None else total
    per_network = sum(cost.get(rule, 0.0) for rule in projection.PER_NETWORK) / n
    extra = per_network * (networks - n)
    print(f"\nprojected decisive default ({run}: {n} networks per architecture, {total:.0f} "
          f"CPU-s measured in all): {networks} networks per architecture +{extra:.0f} CPU-s "
          f"of per-network rules: {total + extra:.0f} CPU-s ({(total + extra) / 3600:.1f} CPU-h)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base", type=Path)
    ap.add_argument("decisive", type=Path, nargs="?",
                    help="the decisive run (without it: the base run's ladder only)")
    ap.add_argument("--default", type=Path)
    ap.add_argument("--networks", type=int, help="networks per architecture to project")
    ap.add_argument("--default-total", type=float,
                    help="the default run's measured CPU-s in all (else its controller record, "
                         "which a later partial run overwrites)")
    args = ap.parse_args()
    ladder(args.base)
    if args.decisive:
        print()
        compare(args.base, args.decisive)
    if args.default:
        projected_default(args.default, args.networks, args.default_total)


if __name__ == "__main__":
    main()
