"""Size, power and cost of the tests of calibration (fitontest.inference.calibration_tests).

Size: perfectly calibrated worlds, scores s ~ U(0, 1) or Beta(5, 1) (a
confident classifier), labels y ~ Bernoulli(s); the rejection rate at
alpha = 0.05 for n = 1k, 10k, 100k with its Monte-Carlo standard error
sqrt(a (1 - a) / reps). Target: within 4-6 %.

Power: the synthetic study's worlds (docs/methods/07-synthetic.md §7): c ~ U(0, 1),
y ~ Bernoulli(c), scores s = f_a(c) with true CE in {0.005, 0.01, 0.02,
0.05}; shapes square / sqrt (powers: under- / over-prediction), beta1 /
beta2 (logistic distortions: under- / over-confidence) and stairs.

Cost: CPU seconds of one test at n = 1k / 10k / 100k.

    python benchmarks/coverage_checks/calibration_test_size.py [--reps 400] [--reps-100k 100]
        [--power-reps 100] [--n-resamples 200] [--workers 2] [--parts size,power,cost]
        [--bonferroni]

The Monte Carlo tests (consistency, tcal) are exact for any number of
redraws (docs/methods/11-tests-and-bands.md §11.8), so --n-resamples only moves their power
and cost, not their size; at n = 100k they run --reps-100k samples (cost).

    python benchmarks/coverage_checks/calibration_test_size.py --write-domain
        src/fitontest/inference/measured/calibration_tests.json
        [--from benchmarks/measured/calibration_tests.md]

writes the measured domain the library's ``valid`` flag reads
(fitontest.inference.domains) from the size table of the measured file: per
method the level (alpha 0.05), the range of n and the worst cell's
rejection rate with its samples.
"""
from __future__ import annotations

import argparse
import os
import time
from multiprocessing import Pool

import numpy as np

from fitontest.inference.calibration_tests import calibration_test
from fitontest.data import synthetic

ALPHA = 0.05
METHODS = {"kuiper": ("kuiper", {}), "ks": ("ks", {}), "tcal": ("tcal", {}),
           "cons_es15": ("consistency", {"evaluator": "ece_es15"})}
RESAMPLING = {"tcal", "cons_es15"}
# T-Cal's Bonferroni rule (combine="bonferroni") is left out: its p-value cannot go
# below M / (B + 1) (M = 17 bin counts at n = 1k, 29 at 100k), so at B = 200 it
# never rejects at 5 %; --bonferroni adds it (then use --n-resamples >= 600)
WORLDS = {"U(0,1)": lambda rng, n: rng.random(n), "Beta(5,1)": lambda rng, n: rng.beta(5, 1, n)}
POWER_SHAPES = ("square", "sqrt", "beta1", "beta2", "stairs")
POWER_CE = (0.005, 0.01, 0.02, 0.05)


def _pvalues(sample, n_resamples, seed):
    s, y = sample
    return {name: calibration_test(s, y, method, n_resamples=n_resamples, seed=seed,
                                           **kw).pvalue
            for name, (method, kw) in METHODS.items()}


def size_job(args):
    world, n, rep, n_resamples, resampling = args
    rng = np.random.default_rng([11, n, rep, list(WORLDS).index(world)])
    s = WORLDS[world](rng, n)
    y = (rng.random(n) < s).astype(float)
    out = {}
    for name, (method, kw) in METHODS.items():
        if (name in RESAMPLING) == resampling:
            out[name] = calibration_test(s, y, method, n_resamples=n_resamples,
                                                 seed=[rep, 1], **kw).pvalue
    return (world, n), out


def power_job(args):
    shape, ce, n, rep, n_resamples = args
    s, y, _ = synthetic.sample(shape, ce, n, seed=1000 + rep)
    return (shape, ce, n), _pvalues((s, y.astype(float)), n_resamples, [rep, 2])


def collect(results):
    table: dict = {}
    for key, pv in results:
        for name, p in pv.items():
            table.setdefault(key, {}).setdefault(name, []).append(p <= ALPHA)
    return table


def cost(n_resamples):
    rng = np.random.default_rng(0)
    print(f"\nCost: CPU seconds per test (n_resamples = {n_resamples}), median of 3\n")
    print(f"{'method':12s}" + "".join(f"{'n=' + str(n):>11s}" for n in (1000, 10000, 100000)))
    samples = {}
    for n in (1000, 10000, 100000):
        s = rng.random(n)
        samples[n] = (s, (rng.random(n) < s).astype(float))
    for name, (method, kw) in METHODS.items():
        row = []
        for n, (s, y) in samples.items():
            times = []
            for _ in range(3):
                t = time.process_time()
                calibration_test(s, y, method, n_resamples=n_resamples, **kw)
                times.append(time.process_time() - t)
            row.append(np.median(times))
        print(f"{name:12s}" + "".join(f"{t:11.4f}" for t in row), flush=True)


def size_part(a) -> None:
    jobs = []
    for world in WORLDS:
        for n in (1000, 10000, 100000):
            jobs += [(world, n, r, a.n_resamples, False) for r in range(a.reps)]
            reps = a.reps if n < 100000 else a.reps_100k
            jobs += [(world, n, r, a.n_resamples, True) for r in range(reps)]
    with Pool(a.workers) as pool:
        size = collect(pool.imap_unordered(size_job, jobs, chunksize=8))
    print("\nSize under perfect calibration: rejection rate % at alpha = 5 % (MC SE; reps)\n")
    print(f"{'world':10s}{'n':>7s}" + "".join(f"{m:>18s}" for m in METHODS))
    for (world, n), cols in sorted(size.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        cells = []
        for m in METHODS:
            r = np.asarray(cols[m])
            rate = r.mean()
            se = np.sqrt(max(rate * (1 - rate), ALPHA * (1 - ALPHA)) / r.size)
            cells.append(f"{100 * rate:5.1f} ({100 * se:3.1f}; {r.size})")
        print(f"{world:10s}{n:7d}" + "".join(f"{c:>18s}" for c in cells), flush=True)


def power_part(a) -> None:
    pjobs = [(sh, ce, n, r, a.n_resamples) for sh in POWER_SHAPES for ce in POWER_CE
             for n in (1000, 10000) for r in range(a.power_reps)]
    with Pool(a.workers) as pool:
        power = collect(pool.imap_unordered(power_job, pjobs, chunksize=4))
    print(f"\nPower: rejection rate % at alpha = 5 % ({a.power_reps} samples per cell, "
          f"SE <= {50 / np.sqrt(a.power_reps):.0f} points)\n")
    print(f"{'shape':8s}{'n':>7s}{'CE':>7s}" + "".join(f"{m:>11s}" for m in METHODS))
    for (shape, ce, n), cols in sorted(power.items(), key=lambda kv: (kv[0][2], kv[0][0],
                                                                      kv[0][1])):
        print(f"{shape:8s}{n:7d}{ce:7.3f}" + "".join(f"{100 * np.mean(cols[m]):11.0f}"
                                                     for m in METHODS), flush=True)


#: the benchmark's method names -> the library's keys (the consistency test is measured
#: around one evaluator)
KEYS = {"kuiper": "kuiper", "ks": "ks", "tcal": "tcal", "cons_es15": "consistency/ece_es15"}


def write_domain(path: str, measured_file: str) -> None:
    """The size domain of every method, from the size table of ``measured_file``."""
    import re

    from fitontest.inference import domains

    text = open(measured_file, encoding="utf-8").read()
    table = text[text.index("Size under perfect calibration"):]
    table = table[:table.index("wall time")]
    cell = re.compile(r"([\d.]+) \(([\d.]+); (\d+)\)")
    worst, ns = {}, []
    for line in table.splitlines()[3:]:
        parts = line.split()
        if len(parts) < 3 or not parts[1].isdigit():
            continue
        ns.append(int(parts[1]))
        for name, got in zip(METHODS, cell.findall(line)):
            rate, k = float(got[0]) / 100, int(got[2])
            if name not in worst or rate > worst[name][0]:
                worst[name] = (rate, k)
    domains.write(path, {
        "measured_file": measured_file,
        "written_by": f"python benchmarks/coverage_checks/calibration_test_size.py --write-domain {path} "
                      f"--from {measured_file}",
        "quantity": "size",
        "laws": "perfectly calibrated scores U(0, 1) and Beta(5, 1), labels Bernoulli(s)",
        "exact": "the Monte Carlo tests (tcal, consistency) are exact for any n and any "
                 "number of redraws (docs/methods/11-tests-and-bands.md §11.8): their domain's n starts at 2",
        "methods": {KEYS[m]: {"domain": {"level": [ALPHA],
                                         "n": {"min": 2 if m in RESAMPLING else min(ns),
                                               "max": None if m in RESAMPLING else max(ns)},
                                         "alternative": ["two-sided"], "combine": ["max"]},
                              "cells": {f"{ALPHA:g}": list(worst[m])}} for m in worst}})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=400)
    ap.add_argument("--reps-100k", type=int, default=60)
    ap.add_argument("--power-reps", type=int, default=100)
    ap.add_argument("--n-resamples", type=int, default=200)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--parts", default="size,power,cost", help="comma-separated")
    ap.add_argument("--bonferroni", action="store_true")
    ap.add_argument("--write-domain", default="", metavar="JSON")
    ap.add_argument("--from", dest="source", default="benchmarks/measured/calibration_tests.md")
    a = ap.parse_args()
    if a.write_domain:
        write_domain(a.write_domain, a.source)
        return
    if a.bonferroni:
        METHODS["tcal_bonf"] = ("tcal", {"combine": "bonferroni"})
        RESAMPLING.add("tcal_bonf")
    parts = set(a.parts.split(","))
    t0 = time.time()
    print(f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}; alpha = {ALPHA}; "
          f"{a.n_resamples} label redraws per Monte Carlo test", flush=True)
    if "size" in parts:
        size_part(a)
    if "power" in parts:
        power_part(a)
    if "cost" in parts:
        cost(a.n_resamples)
    print(f"\nwall time {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
