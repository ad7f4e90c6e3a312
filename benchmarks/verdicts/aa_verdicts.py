"""Measured error rates of the tables' verdicts, old procedure vs new
(fitontest.report.verdicts; docs/methods/11-verdicts.md §11.7).

Worlds: synthetic score frames with the study's nesting (3 networks x 4 tasks
x 6 calibrators x 3 sizes, random effects per seed, (seed, network),
(seed, network, task), (seed, network, task, calibrator), size and evaluator;
fitontest.report.simulate.ScoreWorld): "default" (components chosen so that the
old procedure's A/A rate matches the 32-43 % the default run showed), "strong"
(more shared within a seed) and "none" (independent units: only the selection
of the best misleads). For each world and procedure:

- A/A: one evaluator's independent test seeds relabelled as 2 (or 6)
  evaluators, k seeds each; the share of table rows (by size) that mark some
  column "significantly worse" (nominal 5 %);
- coverage of the 95 % cell intervals (rows by size x evaluators) of the
  population mean (these networks, tasks and calibrators; new test subsets);
- replication: a fresh run's cell means inside the first run's intervals
  (capture; what the t model predicts) and prediction intervals (target 95 %).

--design paper|independent (default: both): what the units of a seed share
(docs/methods/06-truth-and-scores.md §6.2); under "independent" the seed-level effects are drawn per
(network, task, seed) and the policy clusters by those.

With --scores PATH (a scores.parquet, e.g. results/default/scores.parquet), the
A/A rate over every half/half split of each listed evaluator's seeds too, with
the clusters of the design recorded in that run.

    python benchmarks/verdicts/aa_verdicts.py [--reps 300] [--design independent]
                                     [--scores results/default/scores.parquet]
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

from fitontest.report import simulate as S
from fitontest.report import verdicts as V

WORLDS = {"default": S.DEFAULT_RANDOM, "strong": S.STRONG_SHARING, "none": S.NO_SHARING}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--scores", default="", help="a run's scores.parquet (none: skip that part)")
    ap.add_argument("--evaluators", nargs="*", default=["ece_es15", "pl3_ce", "isotonic"])
    ap.add_argument("--design", nargs="*", default=["paper", "independent"],
                    choices=["paper", "independent"])
    a = ap.parse_args()
    pd.set_option("display.width", 200)
    t0 = time.perf_counter()
    print(f"replicates per cell: {a.reps}; rates ± Monte-Carlo SE; nominal α = 5 %, level 95 %")
    print("\nA/A false-positive rate (share of table rows by size with a 'significantly worse')")
    print(f"{'design':<12} {'world':<8} {'evaluators':>10} {'seeds each':>10}  {'old':>14}  "
          f"{'new':>14}")
    for design, (wname, rs) in ((d, w) for d in a.design for w in WORLDS.items()):
        for e, k in ((2, 3), (2, 5), (6, 3)):
            if wname != "default" and (e, k) != (2, 3):
                continue
            w = S.ScoreWorld(random_sd=rs, design=design)
            r = V.aa_rate(w, n_rep=a.reps, n_evaluators=e, seeds_per_evaluator=k).set_index(
                "procedure")
            cells = [f"{100 * r.loc[p.name, 'rate']:5.1f} ± {100 * r.loc[p.name, 'mc_se']:4.1f} %"
                     for p in (V.OLD, V.NEW)]
            print(f"{design:<12} {wname:<8} {e:>10} {k:>10}  {cells[0]:>14}  {cells[1]:>14}",
                  flush=True)
    print("\nCoverage of the 95 % intervals (cells: rows by size x 1 evaluator)  and replication")
    print(f"{'design':<12} {'world':<8} {'seeds':>5}  {'old cover':>14}  {'new cover':>14}  "
          f"{'new capture':>11} {'(t model)':>9} {'new predict':>11} {'old capture':>11}")
    for design, (wname, rs) in ((d, w) for d in a.design for w in WORLDS.items()):
        for k in ((3, 5) if wname == "default" else (3,)):
            w = S.ScoreWorld(random_sd=rs, design=design)
            c = V.coverage(w, n_rep=a.reps, seeds=k).set_index("procedure")
            r = V.replication(w, n_rep=a.reps, seeds=k).set_index("procedure")
            cov = [f"{100 * c.loc[p.name, 'coverage']:5.1f} ± {100 * c.loc[p.name, 'mc_se']:4.1f} %"
                   for p in (V.OLD, V.NEW)]
            n, o = r.loc[V.NEW.name], r.loc[V.OLD.name]
            print(f"{design:<12} {wname:<8} {k:>5}  {cov[0]:>14}  {cov[1]:>14}  {100 * n['capture']:10.1f}% "
                  f"{100 * n['expected_capture']:8.1f}% {100 * n['predict']:10.1f}% "
                  f"{100 * o['capture']:10.1f}%", flush=True)
    path = Path(a.scores) if a.scores else None
    if path is not None and path.exists():
        f = pd.read_parquet(path)
        print(f"\nA/A on {path} (every half/half split of an evaluator's seeds)")
        for ev in a.evaluators:
            if ev in set(f["evaluator"]):
                print(ev, V.aa_rate_frame(f, ev).to_string(index=False))
    elif path is not None:
        print(f"\n({path} not found: no A/A on a real run)")
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
