"""Fit / predict speed of every binary calibration-map family and truth estimator.

Fits each family on n = 10,000 points (scores ~ Beta(2, 3), labels from a
miscalibrated true map) and predicts 1,000,000 scores; runs every truth
estimator on a 1,000,000-point hold-out. Prints wall and CPU seconds (on a
shared machine the CPU time of this process is the better measure) against
the targets of issue 3:

    non-CV fit < 1 s, CV fit < 5 s, KDE fit < 2 s, predict 1M < 0.5 s,
    truth on 1M < 5 s.

    python benchmarks/speed/families_speed.py [--n 10000] [--m 1000000] [--families a,b]

``--families`` restricts the run (default: every registered family).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from fitontest import families
from fitontest.study import truth


def _timed(fn):
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t0, time.process_time() - c0


def _fit_target(name: str, fam) -> tuple[str, float]:
    if name == "kde":
        return "KDE", 2.0
    if fam._n_folds_needed() is not None:
        return "CV", 5.0
    return "no-CV", 1.0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000, help="fitting points")
    ap.add_argument("--m", type=int, default=1_000_000, help="prediction / hold-out points")
    ap.add_argument("--families", default="", help="comma-separated subset")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    s = rng.beta(2, 3, args.n)
    y = (rng.random(args.n) < s ** 1.5).astype(np.int8)
    s_big = rng.beta(2, 3, args.m)
    y_big = (rng.random(args.m) < s_big ** 1.5).astype(np.int8)
    names = [x for x in args.families.split(",") if x] or families.names()
    # imports and first-call set-up are not timed
    families.get("isotonic").fit(s[:100], y[:100]).predict(s_big[:10])
    truth.estimate("es100_flat", s[:1000], y[:1000])

    print(f"n = {args.n:,} fitting points, predict on {args.m:,}; "
          f"load average at start {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    head = f"{'family':<18}{'kind':<7}{'hyper':>6}{'fit s':>9}{'cpu s':>8}{'target':>8}" \
           f"{'pred 1M s':>11}{'cpu s':>8}{'target':>8}  ok"
    print(head)
    print("-" * len(head))
    failures = 0
    for name in names:
        fam = families.get(name)
        kind, target = _fit_target(name, fam)
        _, fit_wall, fit_cpu = _timed(lambda: fam.fit(s, y))
        hyper = fam.chosen_hyperparameter()
        if fam.provides_map:
            _, pr_wall, pr_cpu = _timed(lambda: fam.predict(s_big))
            pred = f"{pr_wall:>11.3f}{pr_cpu:>8.2f}{0.5:>8.1f}"
            ok = fit_wall < target and pr_wall < 0.5
        else:
            pred = f"{'(no map)':>11}{'':>8}{'':>8}"
            ok = fit_wall < target
        failures += not ok
        hy = "" if np.isnan(hyper) else f"{hyper:g}"
        print(f"{name:<18}{kind:<7}{hy:>6}{fit_wall:>9.3f}{fit_cpu:>8.2f}{target:>8.1f}"
              f"{pred}  {'yes' if ok else 'NO'}")
    print()
    print(f"{'truth estimator':<18}{'on 1M s':>9}{'cpu s':>8}{'target':>8}  ok")
    for name in truth.names():
        # the known P(y = 1 | x) of these points is the true map s ** 1.5 (`posterior`)
        _, wall, cpu = _timed(lambda: truth.estimate(name, s_big, y_big, s_big ** 1.5))
        ok = wall < 5.0
        failures += not ok
        print(f"{name:<18}{wall:>9.3f}{cpu:>8.2f}{5.0:>8.1f}  {'yes' if ok else 'NO'}")
    print(f"\nload average at end {os.getloadavg()[0]:.2f}; {failures} target(s) missed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
