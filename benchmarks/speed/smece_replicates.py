"""Cost of one inverted smECE interval: the refit loop against the batched replicates.

``ce_interval("smece", s, y, method="inverted", n_boot=N, p=P)`` draws
9 x max(N // 2, 20) replicates (450 at N = 100). The refit path is the base
class's ``CalibrationFamily.bootstrap_replicates`` (a clone refitted per
resample), swapped in for ``SmoothECE``'s batched override; both give the
same interval (the largest difference of the ends is printed). Times are
CPU seconds of this process (``time.process_time``; the best of --repeats),
after one warm-up call per path.

    python benchmarks/speed/smece_replicates.py [--sizes 1000,3000,10000] [--n-boot 100]
        [--p 1] [--repeats 3]
"""
from __future__ import annotations

import argparse
import os
import time
from unittest import mock

from fitontest.data import synthetic
from fitontest.families.base import CalibrationFamily
from fitontest.families.smece import SmoothECE
from fitontest.inference.intervals import ce_interval


def timed(s, y, args):
    """(best CPU seconds, interval) of ``args.repeats`` inverted intervals."""
    best, ci = float("inf"), None
    for _ in range(args.repeats):
        c0 = time.process_time()
        ci = ce_interval("smece", s, y, method="inverted", n_boot=args.n_boot, p=args.p)
        best = min(best, time.process_time() - c0)
    return best, ci


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,3000,10000", help="comma-separated sample sizes")
    ap.add_argument("--n-boot", type=int, default=100)
    ap.add_argument("--p", type=int, default=1, choices=(1, 2))
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; beta1 CE=0.05; "
          f"inverted, n_boot={args.n_boot}, p={args.p}; CPU s, best of {args.repeats}\n")
    print(f"{'n':>7s}{'refit s':>10s}{'batched s':>11s}{'ratio':>8s}{'max |end diff|':>16s}")
    refit = mock.patch.object(SmoothECE, "bootstrap_replicates",
                              CalibrationFamily.bootstrap_replicates)
    for n in (int(v) for v in args.sizes.split(",")):
        s, y, _ = synthetic.sample("beta1", 0.05, n, seed=0)
        ce_interval("smece", s[:200], y[:200], method="inverted", n_boot=2)     # warm-up
        with refit:
            ce_interval("smece", s[:200], y[:200], method="inverted", n_boot=2)
            slow, ci_slow = timed(s, y, args)
        fast, ci_fast = timed(s, y, args)
        diff = max(abs(ci_fast.lo - ci_slow.lo), abs(ci_fast.hi - ci_slow.hi))
        print(f"{n:7d}{slow:10.3f}{fast:11.3f}{slow / fast:8.1f}{diff:16.1e}", flush=True)


if __name__ == "__main__":
    main()
