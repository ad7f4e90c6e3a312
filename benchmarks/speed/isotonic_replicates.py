"""Cost of one inverted CE interval of ``isotonic``: refit loop vs per-score counts.

``ce_interval(isotonic, method="inverted", n_boot=N)`` estimates the family on
9 worlds x N/2 resamples (450 at N = 100). The *refit* path is the base
class's ``CalibrationFamily.bootstrap_replicates`` (a scikit-learn
IsotonicRegression per resample); the *fast* path is
``IsotonicFamily.bootstrap_replicates`` (per-score label counts, scipy's
weighted PAV; docs/methods/03-binary-families.md §3.4). Both intervals are printed and must
agree to 1e-12. Times: CPU seconds of this process (``time.process_time``;
the machine may be shared), the least of ``--repeats`` calls after one
warm-up call per path.

    python benchmarks/speed/isotonic_replicates.py [--sizes 1000,3000,10000] [--n-boot 100]
        [--repeats 3] [--p 1]
"""
from __future__ import annotations

import argparse
import os
import time

from fitontest.data import synthetic
from fitontest.families.base import CalibrationFamily
from fitontest.families.isotonic import IsotonicFamily
from fitontest.inference.intervals import ce_interval


class RefitIsotonic(IsotonicFamily):
    """Isotonic with the base class's replicates: one sklearn refit per resample."""

    bootstrap_replicates = CalibrationFamily.bootstrap_replicates


def cpu_seconds(fam, p, y, args) -> tuple[float, object]:
    """Least CPU time of ``args.repeats`` inverted intervals, and the interval."""
    ce_interval(fam, p[:300], y[:300], method="inverted", n_boot=20, p=args.p)   # warm-up
    best, ci = float("inf"), None
    for _ in range(args.repeats):
        t0 = time.process_time()
        ci = ce_interval(fam, p, y, method="inverted", n_boot=args.n_boot, seed=1, p=args.p)
        best = min(best, time.process_time() - t0)
    return best, ci


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,3000,10000")
    ap.add_argument("--n-boot", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--p", type=int, default=1, choices=(1, 2))
    args = ap.parse_args()
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; beta1 CE=0.05; "
          f"inverted, n_boot={args.n_boot}, p={args.p}; CPU s, least of {args.repeats}\n")
    print(f"{'n':>7s}{'refits':>8s}{'refit s':>10s}{'fast s':>10s}{'ratio':>8s}"
          f"{'max |d lo|,|d hi|':>20s}   interval")
    for n in (int(v) for v in args.sizes.split(",")):
        p, y, _ = synthetic.sample("beta1", 0.05, n, seed=0)
        t_refit, slow = cpu_seconds(RefitIsotonic(), p, y, args)
        t_fast, ci = cpu_seconds(IsotonicFamily(), p, y, args)
        diff = max(abs(ci.lo - slow.lo), abs(ci.hi - slow.hi))
        print(f"{n:7d}{ci.n_boot:8d}{t_refit:10.3f}{t_fast:10.3f}{t_refit / t_fast:8.1f}"
              f"{diff:20.1e}   [{ci.lo:.5f}, {ci.hi:.5f}]", flush=True)
        if diff > 1e-12:
            raise SystemExit(f"n={n}: the fast interval differs from the refit one by {diff:.3g}")


if __name__ == "__main__":
    main()
