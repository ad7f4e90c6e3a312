"""Measured error rate and power of the fourth outcome, *equivalent*
(fitontest.report.equivalence; docs/methods/11-verdicts.md §11.5.1, §11.7).

Worlds: fitontest.report.simulate.ScoreWorld frames with the study's nesting
(3 networks x 4 tasks x 6 calibrators x 3 sizes, the default random effects,
the independent design: 12 (network, task, seed) clusters per seed), two
evaluators whose population means differ by a factor exp(gap) in every cell
(no evaluator x unit interaction, so the ratio of the overall means is exactly
exp(gap)) and an evaluator's luck with each draw of test images (``--luck``,
the seed_evaluator component: without it the paired differences are nearly
constant and every verdict is trivial). The claims machinery (fitontest.report.findings, margin ±5 %) runs
on each frame:

- at the margin (|a - b| = 0.05 (a + b) / 2): the share of frames called
  *equivalent* — a false verdict; nominal at most 5 %;
- at no difference: the share called equivalent (power) and the share called
  supported or contradicted (a false difference; nominal at most 5 %);
- at twice the margin: the share called supported or contradicted (power).

Each rate with its Monte-Carlo SE (binomial over frames).

    python benchmarks/verdicts/equivalence_rates.py [--reps 200] [--seeds 2 5]
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np
import pandas as pd

from fitontest.report import findings as F
from fitontest.report.simulate import DEFAULT_FIXED, DEFAULT_RANDOM, ScoreWorld

MARGIN = 0.05
CLAIM = F.Claim.from_dict({"id": "eq", "paper": "", "source": "benchmark", "frame": "scores",
                           "measure": "cmee", "check": "ahead_of",
                           "params": {"ahead": ["a"], "behind": ["b"]},
                           "margin": {"relative": MARGIN}})
GAPS = {"no difference": 0.0,
        "at the margin": math.log((1 + MARGIN / 2) / (1 - MARGIN / 2)),
        "twice the margin": math.log((1 + MARGIN) / (1 - MARGIN))}


def rates(gap: float, seeds: int, reps: int, luck: float) -> dict:
    world = ScoreWorld(effects={"a": 0.0, "b": gap}, design="independent",
                       fixed_sd={**DEFAULT_FIXED, "interaction": 0.0},
                       random_sd={**DEFAULT_RANDOM, "seed_evaluator": luck})
    calls = [F.evaluate_claims([CLAIM], scores=world.draw(seeds, rng_seed=[5, r]))
             .iloc[0]["status"] for r in range(reps)]
    out = {}
    for name, hit in (("equivalent", [c == F.EQUIVALENT for c in calls]),
                      ("ordered", [c in (F.SUPPORTED, F.CONTRADICTED) for c in calls])):
        p = float(np.mean(hit))
        out[name], out[f"{name}_se"] = p, math.sqrt(max(p * (1 - p), 1e-12) / reps)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--seeds", type=int, nargs="+", default=[2, 5, 20])
    ap.add_argument("--luck", type=float, default=0.1,
                    help="sd (log scale) of an evaluator's luck with one draw of test images "
                         "(ScoreWorld seed_evaluator): what makes two evaluators' cluster "
                         "means differ")
    args = ap.parse_args()
    rows = []
    t0, c0 = time.perf_counter(), time.process_time()
    for seeds in args.seeds:
        for label, gap in GAPS.items():
            rows.append({"seeds": seeds, "clusters": 12 * seeds, "truth": label,
                         **rates(gap, seeds, args.reps, args.luck)})
    table = pd.DataFrame(rows)
    print(f"claim: a ahead of b, margin ±{MARGIN:.0%}; {args.reps} frames per line; "
          f"ScoreWorld default components, seed_evaluator {args.luck}, independent design")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print(f"\nwall {time.perf_counter() - t0:.0f} s, CPU {time.process_time() - c0:.0f} s")


if __name__ == "__main__":
    main()
