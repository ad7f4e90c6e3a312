"""Coverage and width of the CE intervals (fitontest.inference.intervals) against the exact
population CE, per family, method, p, CE level and n (docs/methods/11-intervals.md §11.3).

Worlds: scores s = f(c), labels y ~ Bernoulli(c), c ~ U(0, 1) or Beta(2, 5);
f = identity (CE 0), powers c^g (g > 1 and g < 1), logistic distortions
sigmoid(b logit c) (b > 1 over-, b < 1 under-confident) and the stairs shape
mixed with the identity, (1 - a) c + a stairs(c). For each CE level the
distortion parameter is solved (brentq) so that E|f(c) - c| equals it; the
true CE (p = 1) and squared CE (p = 2) are integrals over c, computed on
100 000 quantiles of c's distribution. A cell (CE level, n) cycles its
samples over the worlds (CE 0: the identity under both c laws).

Per sample and family the methods share nothing but the data; "sun" only for
binning families. Prints, and writes to --out, coverage (%) with its Monte
Carlo SE and mean width per (family, p, method, CE, n).

    python benchmarks/coverage_checks/interval_coverage.py [--samples 400] [--n 1000,3000,10000]
        [--families ece_es15,...] [--methods inverted,sun,basic,percentile]
        [--ce 0,0.005,0.01,0.02,0.05,0.1] [--n-boot 200] [--level 0.9] [--workers 2]
        [--alpha-scales 0.6,0.8]     # also "inverted" read at other levels, same worlds
        [--first-sample 400]         # samples 400.. : a top-up, disjoint from a run's 0..399
        [--p 2]                      # only this CE exponent (default: 1,2)
"""
from __future__ import annotations

import argparse
import os
import time
import warnings
from functools import lru_cache
from multiprocessing import Pool

import numpy as np
from scipy.optimize import brentq
from scipy.special import expit, logit
from scipy.stats import beta as beta_dist

from fitontest import families
from fitontest.data.synthetic import BASE_SHAPES
from fitontest.families.base import estimates, used_estimates
from fitontest.inference.intervals import (INVERTED_ALPHA_SCALE, IntervalCoverageWarning,
                                 bootstrap_interval, invert,
                                 inverted_level, largest_ce, world_replicates, world_reps)

BINNING = ("ece_es15", "ece_ew15", "ece_es_sweep", "ece_es_cv", "ece_ew_cv")
LAWS = {"U": (1.0, 1.0), "Beta(2,5)": (2.0, 5.0)}
_Q = (np.arange(100_000) + 0.5) / 100_000


@lru_cache(maxsize=None)
def _quantiles(law: str) -> np.ndarray:
    a, b = LAWS[law]
    return _Q if (a, b) == (1.0, 1.0) else beta_dist.ppf(_Q, a, b)


def _distortion(kind: str, param: float):
    if kind == "identity":
        return lambda c: c
    if kind in ("power_up", "power_down"):
        return lambda c: c ** param
    if kind in ("over", "under"):
        return lambda c: expit(param * logit(np.clip(c, 1e-12, 1 - 1e-12)))
    stairs = BASE_SHAPES["stairs"]
    return lambda c: (1.0 - param) * c + param * stairs(c)


# parameter range of each kind, from no distortion to the strongest
RANGES = {"power_up": (1.0, 30.0), "power_down": (1.0, 0.03), "over": (1.0, 60.0),
          "under": (1.0, 0.02), "stairs": (0.0, 1.0)}


def true_ce(kind: str, param: float, law: str, p: int) -> float:
    c = _quantiles(law)
    return float(np.mean(np.abs(_distortion(kind, param)(c) - c) ** p))


@lru_cache(maxsize=None)
def world(kind: str, law: str, ce: float):
    """(param, true CE p=1, true CE p=2) of the world with L1 CE ``ce``, or None."""
    if ce == 0.0 or kind == "identity":
        return (0.0, 0.0, 0.0) if ce == 0.0 else None
    a, b = RANGES[kind]
    if true_ce(kind, b, law, 1) < ce:
        return None
    par = brentq(lambda t: true_ce(kind, t, law, 1) - ce, a, b, xtol=1e-12)
    return par, true_ce(kind, par, law, 1), true_ce(kind, par, law, 2)


def worlds_for(ce: float) -> list[tuple[str, str]]:
    if ce == 0.0:
        return [("identity", law) for law in LAWS]
    return [(k, law) for law in LAWS for k in RANGES if world(k, law, ce) is not None]


def draw(kind: str, law: str, ce: float, n: int, seed: int):
    par = world(kind, law, ce)[0]
    rng = np.random.default_rng([seed, n, int(round(ce * 1e4))])
    a, b = LAWS[law]
    c = rng.beta(a, b, n)
    y = (rng.random(n) < c).astype(np.int8)
    return np.clip(_distortion(kind, par)(c), 0.0, 1.0), y


def inverted_rows(fam, s, y, p, n_boot, seed, level, scales):
    """(label, lo, hi, seconds) of "inverted" at each alpha scale (None: the
    default's, intervals.INVERTED_ALPHA_SCALE): one set of worlds, inverted at
    every scale, so the scales are compared on the same replicates."""
    t0 = time.process_time()
    theta, reps = world_replicates(fam, s, y, world_reps(n_boot), seed, p)
    estimate = float(used_estimates(estimates(fam, s))[p - 1])
    sec = time.process_time() - t0
    out = []
    for k in scales:
        lo, hi = np.minimum(invert(estimate, theta, reps, inverted_level(level, k)),
                            largest_ce(s, p))          # as ce_interval clips them
        out.append(("inverted" if k is None else f"inverted k={k:g}", lo, hi, sec))
    return out


def run_cell(task):
    """Rows (family, p, method, ce, n, covered, width, seconds) of one chunk of samples."""
    fams, methods, ce, n, seeds, n_boot, level, scales, ps = task
    out = []
    warnings.simplefilter("ignore", IntervalCoverageWarning)
    wl = worlds_for(ce)
    for seed in seeds:
        kind, law = wl[seed % len(wl)]
        s, y = draw(kind, law, ce, n, seed)
        truth = world(kind, law, ce)[1:]
        for name in fams:
            fam = families.get(name).fit(s, y)
            for p in ps:
                for m in methods:
                    if m == "sun" and not name.startswith("ece_"):
                        continue
                    if m == "inverted":
                        for label, lo, hi, sec in inverted_rows(fam, s, y, p, n_boot, [seed, 7],
                                                                level, scales):
                            out.append((name, p, label, ce, n, lo <= truth[p - 1] <= hi,
                                        hi - lo, sec))
                        continue
                    t0 = time.process_time()
                    ci = bootstrap_interval(fam, s, y, p=p, level=level, n_boot=n_boot,
                                            seed=[seed, 7], method=m, family=name)
                    out.append((name, p, m, ce, n, ci.lo <= truth[p - 1] <= ci.hi,
                                ci.hi - ci.lo, time.process_time() - t0))
    return out


def table(rows, level: float) -> str:
    import pandas as pd

    df = pd.DataFrame(rows, columns=["family", "p", "method", "ce", "n", "covered", "width",
                                     "sec"])
    g = df.groupby(["family", "p", "method", "n", "ce"])
    agg = g.agg(cov=("covered", "mean"), k=("covered", "size"), width=("width", "mean"),
                sec=("sec", "mean")).reset_index()
    agg["se"] = np.sqrt(agg["cov"] * (1 - agg["cov"]) / agg["k"])
    lines = [f"Coverage % (MC SE) / mean width of {level:.0%} intervals; truth = exact population "
             "CE (p=1) or squared CE (p=2)\n"]
    for (fam, p), sub in agg.groupby(["family", "p"]):
        ces = sorted(sub["ce"].unique())
        lines.append(f"\n### {fam}, p = {p}\n")
        lines.append("| method | n | " + " | ".join(f"CE {c:g}" for c in ces)
                     + " | min cov | s/interval |")
        lines.append("|---" * (len(ces) + 4) + "|")
        for (m, n), r in sub.groupby(["method", "n"]):
            r = r.set_index("ce")
            cells = [f"{100 * r.at[c, 'cov']:.1f} ({100 * r.at[c, 'se']:.1f}) / "
                     f"{r.at[c, 'width']:.4f}" if c in r.index else "" for c in ces]
            lines.append(f"| {m} | {n} | " + " | ".join(cells)
                         + f" | {100 * r['cov'].min():.1f} | {r['sec'].mean():.3f} |")
        summary = sub.groupby("method").agg(min_cov=("cov", "min"), width=("width", "mean"))
        lines.append("\nmin coverage over cells / mean width: " + "; ".join(
            f"{m} {100 * v.min_cov:.1f} / {v.width:.4f}" for m, v in summary.iterrows()))
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=400)
    ap.add_argument("--n", default="1000,3000,10000")
    ap.add_argument("--families", default=",".join(BINNING + ("smece", "isotonic")))
    ap.add_argument("--methods", default="inverted,sun,basic,percentile")
    ap.add_argument("--ce", default="0,0.005,0.01,0.02,0.05,0.1")
    ap.add_argument("--n-boot", type=int, default=200)
    ap.add_argument("--level", type=float, default=0.9)
    ap.add_argument("--alpha-scales", default="",
                    help="also score 'inverted' read at level 1 - k (1 - level) for these k "
                         "(comma-separated), on the same worlds")
    ap.add_argument("--workers", type=int, default=1, choices=(1, 2))
    ap.add_argument("--chunk", type=int, default=20)
    ap.add_argument("--first-sample", type=int, default=0,
                    help="seed of the first sample: a top-up run with seeds disjoint from an "
                         "earlier run's, merged into it by benchmarks/coverage_checks/interval_auto.py")
    ap.add_argument("--p", default="1,2", help="CE exponents to score (comma-separated)")
    ap.add_argument("--out", default=None, help="write the table here (markdown)")
    args = ap.parse_args()
    ps = [int(v) for v in args.p.split(",")]
    fams = args.families.split(",")
    methods = args.methods.split(",")
    sizes = [int(v) for v in args.n.split(",")]
    ces = [float(v) for v in args.ce.split(",")]
    for ce in ces:
        print(f"CE {ce:g}: " + ", ".join(
            f"{k}/{law} (CE^2 {world(k, law, ce)[2]:.2e})" for k, law in worlds_for(ce)))
    scales = [None] + [float(k) for k in args.alpha_scales.split(",") if k]
    first, end = args.first_sample, args.first_sample + args.samples
    tasks = [(fams, methods, ce, n, range(i, min(i + args.chunk, end)), args.n_boot,
              args.level, scales, ps)
             # chunks outermost within n: a run stopped early has every cell, with fewer samples
             for n in sizes for i in range(first, end, args.chunk) for ce in ces]
    t0 = time.time()
    rows = []

    def header():
        return (f"command: python benchmarks/coverage_checks/interval_coverage.py --samples {args.samples} "
                f"--n {args.n} --families {args.families} --methods {args.methods} "
                f"--ce {args.ce} --n-boot {args.n_boot} --level {args.level} "
                f"--alpha-scales {args.alpha_scales or '(none)'} "
                f"--first-sample {args.first_sample} --p {args.p} --workers {args.workers}\n"
                f"default alpha scale {INVERTED_ALPHA_SCALE:g}; wall {time.time() - t0:.0f} s, {os.cpu_count()} CPUs, "
                f"load {os.getloadavg()[0]:.1f}; {len(rows)} intervals\n\n")

    def save(done: bool):
        text = header() + ("" if done else "(partial: still running)\n") + table(rows, args.level)
        if args.out:
            from fitontest.core.io import write_text

            write_text(args.out, text)
        return text

    if args.workers == 1:
        results = map(run_cell, tasks)
        for r in results:
            rows += r
            save(False)
    else:
        with Pool(args.workers) as pool:
            for r in pool.imap_unordered(run_cell, tasks):
                rows += r
                save(False)
    print(save(True))


if __name__ == "__main__":
    main()
