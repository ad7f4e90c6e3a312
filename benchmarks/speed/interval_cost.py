"""Cost of a CE interval (fitontest.inference.intervals) per family and method, n = 1k, 3k, 10k.

Binning families compute every replicate in one pass ("batched"), isotonic and
smece from counts without refitting ("counted"); all others refit per
replicate, so their cost is measured on --refit-boot replicates and scaled
to --n-boot (printed as "refit x"). ``inverted`` draws n_boot / 2 replicates in
each of 9 worlds (4.5x the family estimates of ``basic``); ``sun`` none.
Times are CPU seconds of this process (the
machine may be shared; wall time is printed too), after one warm-up call
per family (numba compilation, imports).

    python benchmarks/speed/interval_cost.py [--n-boot 200] [--refit-boot 5] [--families a,b]
        [--methods basic,inverted,sun] [--sizes 1000,3000,10000]

Targets (issue #14): ece_es15 with 200 replicates on n = 10k <= 0.5 s,
ece_es_cv <= 5 s.
"""
from __future__ import annotations

import argparse
import os
import time

from fitontest import families
from fitontest.data import synthetic
from fitontest.families.base import CalibrationFamily
from fitontest.inference.intervals import batched, ce_interval
from fitontest.inference.worlds import WORLD_T

SIZES = (1000, 3000, 10000)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-boot", type=int, default=200)
    ap.add_argument("--refit-boot", type=int, default=5)
    ap.add_argument("--families", default=None, help="comma-separated (default: all)")
    ap.add_argument("--methods", default="basic,inverted,sun")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    args = ap.parse_args()
    sizes = [int(v) for v in args.sizes.split(",")]
    names = args.families.split(",") if args.families else families.names()
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; beta1 CE=0.05; "
          f"{args.n_boot} replicates (refit families: measured on {args.refit_boot}, scaled)\n")
    print(f"{'family':18s}{'method':>10s}{'path':>8s}" + "".join(f"{'CPU-s n=' + str(n):>14s}"
                                                  f"{'wall-s':>9s}" for n in sizes))
    for name in names:
        # batched: binning; counted: a family whose own bootstrap_replicates needs no
        # refit (isotonic, smece) -- both are timed at the full n_boot, not scaled
        counted = (type(families.get(name)).bootstrap_replicates
                   is not CalibrationFamily.bootstrap_replicates)
        fast = batched(name) or counted
        for method in args.methods.split(","):
            if method == "sun" and not batched(name):
                continue
            reps = args.n_boot if fast else args.refit_boot
            cells = []
            for n in sizes:
                p, y, _ = synthetic.sample("beta1", 0.05, n, seed=0)
                ce_interval(name, p[:400], y[:400], n_boot=2, method=method)   # warm-up
                c0, w0 = time.process_time(), time.perf_counter()
                ci = ce_interval(name, p, y, n_boot=reps, seed=1, method=method)
                # replicates of the requested n_boot over those drawn here
                want = (len(WORLD_T) * max(args.n_boot // 2, 20) if method == "inverted"
                        else args.n_boot)
                scale = want / ci.n_boot if ci.n_boot else 1.0
                cells.append(f"{(time.process_time() - c0) * scale:14.3f}"
                             f"{(time.perf_counter() - w0) * scale:9.3f}")
            path = "batched" if batched(name) else "counted" if counted else "refit x"
            print(f"{name:18s}{method:>10s}{path:>8s}"
                  + "".join(cells), flush=True)

if __name__ == "__main__":
    main()
