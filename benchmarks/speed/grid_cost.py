"""CPU cost of the paper's evaluator grids, extrapolated from measured fits.

Fits every family once per test size (1000, 3000, 10000) on synthetic data,
predicting a hold-out of --holdout points as the workflow does, and multiplies
by the number of fits of the paper's grids (one-time costs such as numba's
compilation are paid before the timing, by a fit on 400 points):

- pseudo-real (config/paper.yaml): 3 networks x 4 tasks x 6 calibrators x
  5 seeds fits per (evaluator, size);
- synthetic (config/synthetic-paper.yaml): 5 shapes x 21 CE levels x 5 seeds
  fits per (evaluator, size), each predicting a 1M-point test sample.

    python benchmarks/speed/grid_cost.py [--holdout 1000000] [--families pl_ce,isotonic]
"""
from __future__ import annotations

import argparse
import os
import time

from fitontest import families
from fitontest.data import synthetic

SIZES = (1000, 3000, 10000)
PSEUDO_REAL_FITS = 3 * 4 * 6 * 5
SYNTHETIC_FITS = 5 * 21 * 5


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--holdout", type=int, default=1_000_000)
    ap.add_argument("--families", default=None, help="comma-separated (default: all)")
    args = ap.parse_args()
    names = args.families.split(",") if args.families else families.names()
    p_hold, _ = synthetic.test_sample("beta1", 0.05, args.holdout, seed=1)
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; hold-out "
          f"{args.holdout:,}; one fit per size on beta1 CE=0.05\n")
    print(f"{'family':18s}" + "".join(f"{'fit+pred ' + str(n):>16s}" for n in SIZES)
          + f"{'paper CPU-h':>13s}{'synth CPU-h':>13s}")
    total_real = total_syn = 0.0
    for name in names:
        # one-time costs (imports, numba compilation or cache load) outside the timing
        p, y, _ = synthetic.sample("beta1", 0.05, 400, seed=0)
        families.get(name).fit(p, y)
        secs = []
        for n in SIZES:
            p, y, _ = synthetic.sample("beta1", 0.05, n, seed=0)
            t0 = time.perf_counter()
            fam = families.get(name).fit(p, y)
            if fam.provides_map:
                fam.predict(p_hold)
            secs.append(time.perf_counter() - t0)
        real = sum(secs) * PSEUDO_REAL_FITS / 3600
        syn = sum(secs) * SYNTHETIC_FITS / 3600
        total_real += real
        total_syn += syn
        print(f"{name:18s}" + "".join(f"{s:16.2f}" for s in secs) + f"{real:13.2f}{syn:13.2f}")
    print(f"{'total':18s}{'':48s}{total_real:13.1f}{total_syn:13.1f}")


if __name__ == "__main__":
    main()
