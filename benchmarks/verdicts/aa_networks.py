"""A/A at the level of networks: the tables' verdicts when each network shifts
the evaluators its own way but they are equal on average (issue 55).

Synthetic score frames (:class:`fitontest.report.simulate.ScoreWorld`) of
the default's design — 3 architectures x ``--networks`` networks, the
default's tasks and ranked calibrators, two test sizes, one test seed per
network — in which two evaluators are equal on average over networks while
every network moves them apart by a random ``network_evaluator`` effect
(standard deviation on the log scale), drawn afresh in each replicate (new
networks, new test subsets). Per effect size it prints the share of table
rows ("all" and by size) in which some column is marked significantly worse
— the false-positive rate, to be at most 5 % — for the networks as the
clusters (the default, ``report.scope: architectures``) and for the test
subsets of fixed networks as the clusters (``report.scope: networks``, the
design before networks were replicated), each with its Monte-Carlo error.

Each effect size is also given as the ratio it implies — the variance of a
network's mean contrast (log A − log B over its rows) between networks over
what the test subsets alone give (measured here at effect 0) — the measure
benchmarks/measured/network_variance.md reports for the default's networks,
so the rows can be read against the retraining that was measured.

    python benchmarks/record.py verdicts/aa_networks.py
"""
from __future__ import annotations

import argparse
import sys

import numpy as np
import pandas as pd

from fitontest.report import simulate as S
from fitontest.report import verdicts as V


def world(sd: float, networks: int) -> S.ScoreWorld:
    return S.ScoreWorld(archs=("resnet", "densenet", "wrn"), tasks=("car", "confidence"),
                        calibrators=("beta", "vecs", "platt", "pl3_ce", "scaling_binning",
                                     "isotonic"),
                        sizes=(1000, 3000), effects={"A": 0.0, "B": 0.0},
                        random_sd={**S.DEFAULT_RANDOM, "network_evaluator": sd},
                        fixed_sd={**S.DEFAULT_FIXED, "interaction": 0.0},
                        design="independent", networks=networks)


def contrast_variance(sd: float, networks: int, reps: int = 100) -> float:
    """The variance of a network's mean log contrast A − B over its rows."""
    out = []
    for r in range(reps):
        f = world(sd, networks).draw(1, rng_seed=[99, r])
        w = f.assign(x=np.log(f["cmee"])).pivot_table(
            index=["network", "task", "calibrator", "size"], columns="evaluator", values="x")
        out.append((w["A"] - w["B"]).groupby(level="network").mean().to_numpy())
    return float(np.var(np.concatenate(out), ddof=1))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=400, help="replicates per effect size")
    ap.add_argument("--networks", type=int, default=3, help="networks per architecture")
    ap.add_argument("--sd", type=float, nargs="+", default=[0.0, 0.005, 0.01, 0.02, 0.05],
                    help="network x evaluator effect sizes (log-scale sd)")
    args = ap.parse_args(argv)
    v0 = contrast_variance(0.0, args.networks)
    rows = []
    for sd in args.sd:
        ratio = 1 + 2 * sd ** 2 / v0
        for rows_of, label in ((), "all"), (("size",), "by size"):
            r = V.aa_rate_networks(world(sd, args.networks), n_rep=args.reps, seeds=1,
                                   rows=rows_of).set_index("procedure")
            for proc, name in ((V.NEW, "networks as clusters"),
                               (V.FIXED_NETWORKS, "test subsets of fixed networks")):
                rows.append({"network_evaluator sd": sd, "implied ratio": f"{ratio:.2f}",
                             "rows": label, "clusters": name,
                             "false positives": f"{r.loc[proc.name, 'rate']:.3f}",
                             "MC error": f"{r.loc[proc.name, 'mc_se']:.3f}",
                             "replicates": int(r.loc[proc.name, "replicates"])})
    print(f"{args.networks} networks per architecture, 3 architectures, one test seed; "
          f"nominal 5 %\n")
    print(pd.DataFrame(rows).to_markdown(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
