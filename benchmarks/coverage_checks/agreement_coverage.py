"""Coverage of the real-data rank agreement's intervals (fitontest.report.real;
docs/methods/12-real-data.md §12.3) in simulated real / pseudo-real runs with known agreement.

A run: 10 evaluators, 2 networks × 3 calibrated models (units), m test subsets
per network (real) and m_p (pseudo-real). Cell of evaluator e, unit u, subset j
of network a: expected value (real: 0, 0.5, ..., 4.5; pseudo-real: the same
values in another order, Spearman 0.782 / Kendall 0.600 between the two) + a
unit effect (N(0, 2²), the same for every evaluator: it cancels in the ranks)
+ a subset effect N(0, noise²) shared by the network's units (the same test
points) + N(0, (noise / 2)²) per cell. Two truths:

- repeat: the mean rho (tau) over 4000 repeats of both runs on other subsets
  (same models, as many subsets): what the subset bootstrap claims to cover;
- noise-free: rho (tau) of the expected cells, which cell noise attenuates.

Prints per (m, m_p, noise): each truth, then the coverage (%) of the subset
bootstrap (percentile, n_boot replicates) and of the Fisher-z interval for
each truth, with the Monte Carlo SE, and the mean widths; wall and CPU seconds.

    python benchmarks/coverage_checks/agreement_coverage.py [--runs 400] [--n-boot 1000] [--level 0.9]
        [--grid 10:5:0.5,10:5:1,10:5:2,3:5:1,3:3:2,5:5:4]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from fitontest.report import real

B = np.arange(10) * 0.5
C = B[[2, 0, 4, 1, 3, 7, 5, 9, 6, 8]]


def runs(rng, n, m, mp, noise, archs=2, units=3):
    r = (B + rng.normal(0, 2, (n, archs, 1, units, 1)) + rng.normal(0, noise, (n, archs, m, 1, 10))
         + rng.normal(0, noise / 2, (n, archs, m, units, 10)))
    p = (C + rng.normal(0, noise, (n, archs, mp, 1, 10))
         + rng.normal(0, noise / 2, (n, archs, mp, units, 10)))
    return r, p


def fisher(r, se, level):
    return real._fisher(r, se, level)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=400)
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--level", type=float, default=0.9)
    ap.add_argument("--grid", default="10:5:0.5,10:5:1,10:5:2,3:5:1,3:3:2,5:5:4")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    se = {"spearman": np.sqrt(1.06 / 7), "kendall": np.sqrt(0.437 / 6)}
    fns = {"spearman": real.spearman_rows, "kendall": real.kendall_rows}
    print(f"{a.runs} runs per row, level {a.level}, {a.n_boot} bootstrap replicates; "
          "coverage % (Monte Carlo SE) of [repeat truth | noise-free truth]")
    print(f"{'m':>3} {'m_p':>3} {'noise':>5} {'stat':>8} {'repeat':>7} {'free':>6} "
          f"{'boot':>17} {'fisher':>17} {'w_boot':>7} {'w_fish':>7} {'wall s':>7} {'cpu s':>6}")
    for cell in a.grid.split(","):
        m, mp, noise = int(cell.split(":")[0]), int(cell.split(":")[1]), float(cell.split(":")[2])
        t0, c0 = time.perf_counter(), time.process_time()
        rng = np.random.default_rng([a.seed, m, mp, int(noise * 100)])
        r, p = runs(rng, 4000, m, mp, noise)
        rc, pc = r.mean(axis=(1, 2, 3)), p.mean(axis=(1, 2, 3))
        truth = {k: (f(rc, pc).mean(), f(B[None], C[None])[0]) for k, f in fns.items()}
        r, p = runs(rng, a.runs, m, mp, noise)
        hit = {k: np.zeros(4) for k in fns}
        width = {k: np.zeros(2) for k in fns}
        for i in range(a.runs):
            ci = real.bootstrap_intervals(list(r[i]), list(p[i]), a.level, a.n_boot, [a.seed, i])
            cells = (r[i].mean(axis=(0, 1, 2))[None], p[i].mean(axis=(0, 1, 2))[None])
            for k, f in fns.items():
                lo, hi = ci[f"{k}_boot_lo"], ci[f"{k}_boot_hi"]
                flo, fhi = fisher(f(*cells)[0], se[k], a.level)
                for j, t in enumerate(truth[k]):
                    hit[k][j] += lo <= t <= hi
                    hit[k][2 + j] += flo <= t <= fhi
                width[k] += (hi - lo, fhi - flo)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        for k in fns:
            cov = 100 * hit[k] / a.runs
            mc = np.sqrt(cov * (100 - cov) / a.runs)
            print(f"{m:>3} {mp:>3} {noise:>5g} {k:>8} {truth[k][0]:>7.3f} {truth[k][1]:>6.3f} "
                  f"{cov[0]:>5.1f}({mc[0]:3.1f})|{cov[1]:>5.1f}({mc[1]:3.1f}) "
                  f"{cov[2]:>5.1f}({mc[2]:3.1f})|{cov[3]:>5.1f}({mc[3]:3.1f}) "
                  f"{width[k][0] / a.runs:>7.3f} {width[k][1] / a.runs:>7.3f} "
                  f"{wall:>7.1f} {cpu:>6.1f}")


if __name__ == "__main__":
    main()
