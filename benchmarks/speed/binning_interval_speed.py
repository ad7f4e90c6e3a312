"""Fit and bootstrap CE interval time of the binning families, as the study
runs them (issue 37): each family fitted on a fixed set of a finished run's
test subsets, then :func:`fitontest.study.experiment.subset_interval` with the
default ``interval`` block (level 0.9, method auto, 100 replicates) and seed
[0, size, seed], exactly as ``score_evaluator`` calls it.

Cases: every (network, task, calibrator) of ``--results`` for the networks
``--archs``, one test subset each, rotating through the six (size, seed)
subsets so that both sizes and every seed appear. Without a run directory the
cases are generated over-confident scores (continuous, and ten distinct values
spread over decades like scaling-binning's; n = 1000 and 3000), so the script
runs anywhere.

Each source tree (``--src``, default this repository's src/, and optionally
``--before`` another checkout's src) is timed in its own interpreter; per
family it prints the fit and interval seconds (wall and CPU of that process,
time.process_time; with ``--repeat`` the fastest of that many runs of each
case) summed over the cases, the after / before ratio, and
whether both trees gave the same chosen bin counts, estimates and interval
ends to the last bit.

    python benchmarks/speed/binning_interval_speed.py --results results/default    # this src only
    python benchmarks/speed/binning_interval_speed.py --before /path/to/other/checkout/src
    python benchmarks/speed/binning_interval_speed.py --archs resnet,densenet,wrn --subsets all \\
        --before /path/to/other/checkout/src          # the whole default grid (324 fits each)

On a shared machine wall times grow with the load; the CPU times vary less.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

FAMILIES = ("ece_ew_sweep", "ece_es_sweep", "ece_ew_cv", "ece_es_cv", "ece_ew15", "ece_es15")
CALIBRATORS = ("beta", "vecs", "platt", "pl3_ce", "scaling_binning", "isotonic")
TASKS = ("car", "cat", "confidence")
SUBSETS = tuple(f"size{n}_seed{r}" for n in (1000, 3000) for r in (0, 1, 2))
INTERVAL = {"level": 0.9, "method": "auto", "n_boot": 100, "refit_n_boot": 0,
            "per_family_n_boot": {"isotonic": 100}}
DEFAULT_RESULTS = str(Path(__file__).resolve().parents[2] / "results" / "default")


def cases(results: str | None, archs: list[str], all_subsets: bool):
    """[(label, scores, labels, size, seed)] of the run, or generated ones."""
    import numpy as np

    out = []
    if results and Path(results, "calibrated").is_dir():
        i = 0
        for arch in archs:
            for task in TASKS:
                sub = np.load(Path(results, "data", "subsets", arch, f"{task}.npz"))
                for cal in CALIBRATORS:
                    d = np.load(Path(results, "calibrated", arch, task, f"{cal}.npz"))
                    s, y = np.asarray(d["holdout_scores"], dtype=np.float64), d["holdout_labels"]
                    keys = SUBSETS if all_subsets else (SUBSETS[i % len(SUBSETS)],)
                    i += 1
                    for key in keys:
                        pos = sub[key]
                        size, seed = int(key[4:key.index("_")]), int(key.split("seed")[1])
                        out.append((f"{arch}/{task}/{cal}/{key}", s[pos], y[pos], size, seed))
        return out
    rng = np.random.default_rng(37)
    levels = 1.0 - np.logspace(-7.5, -0.1, 10)            # ten values over decades
    for n in (1000, 3000):
        for r in range(3):
            cont = 1.0 - rng.beta(0.4, 6.0, n)             # piled up near 1
            tied = rng.choice(levels, n, p=np.linspace(0.02, 0.18, 10))
            for kind, s in (("continuous", cont), ("ten-values", tied)):
                y = (rng.random(n) < s ** 3).astype(np.int8)       # over-confident
                out.append((f"generated/{kind}/n{n}_r{r}", s, y, n, r))
    return out


def child(args) -> int:
    """Time every family on every case in this interpreter; print JSON."""
    import time

    import numpy as np

    from fitontest.families.base import estimates
    from fitontest.study.experiment import family_params, fit_family, subset_interval

    work = cases(args.results, args.archs.split(","), args.subsets == "all")
    fams = args.families.split(",")
    for name in fams:                                     # warm-up: imports, caches
        s, y = work[0][1][:200], work[0][2][:200]
        fam, _ = fit_family(name, s, y, family_params(name, None, 0))
        subset_interval(name, fam, s, y, estimates(fam, s), INTERVAL, [0, 200, 0])
    out = {"cases": len(work), "families": {}}
    for name in fams:
        params = family_params(name, None, 0)
        t = dict.fromkeys(("fit_wall", "fit_cpu", "ci_wall", "ci_cpu"), 0.0)
        results = []
        for _, s, y, size, seed in work:
            best = dict.fromkeys(t, float("inf"))
            for _ in range(args.repeat):          # the fastest of the repeats: less noise
                w0, c0 = time.perf_counter(), time.process_time()
                fam, _ = fit_family(name, s, y, params)
                est = estimates(fam, s)
                w1, c1 = time.perf_counter(), time.process_time()
                ci = subset_interval(name, fam, s, y, est, INTERVAL, [0, size, seed])
                w2, c2 = time.perf_counter(), time.process_time()
                for key, v in (("fit_wall", w1 - w0), ("fit_cpu", c1 - c0),
                               ("ci_wall", w2 - w1), ("ci_cpu", c2 - c1)):
                    best[key] = min(best[key], v)
            for key in t:
                t[key] += best[key]
            # repr: every float to the last bit
            results.append(repr((fam.chosen_hyperparameter(), sorted(est.items()),
                                 float(ci.estimate), float(ci.lo), float(ci.hi))))
        out["families"][name] = {**t, "results": results}
    print(json.dumps(out))
    return 0


def run_tree(src: str, args) -> dict:
    env = dict(os.environ, PYTHONPATH=src)
    cmd = [sys.executable, __file__, "--child", "--results", args.results or "",
           "--archs", args.archs, "--subsets", args.subsets, "--families", args.families,
           "--repeat", str(args.repeat)]
    res = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", default=str(Path(__file__).resolve().parents[2] / "src"),
                    help="source tree to time (default: this repository's src/)")
    ap.add_argument("--before", help="another checkout's src/ to compare against")
    ap.add_argument("--results", default=DEFAULT_RESULTS,
                    help="a finished default run (generated scores when absent)")
    ap.add_argument("--archs", default="resnet", help="networks of the run, comma-separated")
    ap.add_argument("--subsets", choices=("one", "all"), default="one",
                    help="one rotating test subset per (network, task, calibrator), or all six")
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs per case; the fastest fit and interval of each are summed")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args)
    after = run_tree(args.src, args)
    before = run_tree(args.before, args) if args.before else None
    where = (f"{args.results}; networks {args.archs}, subsets {args.subsets}"
             if args.results and Path(args.results, "calibrated").is_dir()
             else "generated over-confident scores")
    print(f"{after['cases']} cases ({where}); seconds summed over the cases (each the "
          f"fastest of {args.repeat}), CPU = time.process_time of the timing process")
    print(f"after: {args.src}" + (f"\nbefore: {args.before}" if before else ""))
    head = f"{'family':<14} {'':>6} {'fit wall':>9} {'fit cpu':>8} {'CI wall':>8} {'CI cpu':>8}"
    print(head + ("  CI cpu after/before  CI wall after/before  identical" if before else ""))
    for name, a in after["families"].items():
        rows = [("before", before["families"][name])] if before else []
        for tag, r in rows + [("after", a)]:
            line = (f"{name:<14} {tag:>6} {r['fit_wall']:9.2f} {r['fit_cpu']:8.2f} "
                    f"{r['ci_wall']:8.2f} {r['ci_cpu']:8.2f}")
            if before and tag == "after":
                b = before["families"][name]
                same = "yes" if b["results"] == a["results"] else "NO"
                line += (f"  {a['ci_cpu'] / b['ci_cpu']:20.3f}  "
                         f"{a['ci_wall'] / b['ci_wall']:20.3f}  {same:>9}")
            print(line)
    if before:
        tot = {k: sum(r["families"][n]["ci_cpu"] for n in r["families"])
               for k, r in (("after", after), ("before", before))}
        print(f"all families, CI cpu: before {tot['before']:.2f} s, after {tot['after']:.2f} s, "
              f"ratio {tot['after'] / tot['before']:.3f}")
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
