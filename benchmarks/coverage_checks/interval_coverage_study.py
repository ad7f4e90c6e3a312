"""Coverage of the CE intervals on a finished run's own score laws and maps
(docs/methods/11-intervals.md §11.3, "Coverage on the study's own worlds").

benchmarks/coverage_checks/interval_coverage.py draws scores from U(0, 1) and Beta(2, 5); the
study's calibrated models pile their scores near 0 (one-vs-rest tasks) or near
1 (confidence). Here every (network, task, calibrator) of a finished
procedural run is one world with an exact truth:

- scores s drawn with replacement from the calibrated model's hold-out scores;
- labels y ~ Bernoulli(c(s)), with one of two maps c (``--maps``):
  ``posterior``, the run's own truth map at those scores (the isotonic
  regression of the known event posterior on the scores, §9.4: a step
  function, whose steps are partly the posterior's noise), or ``smooth``,
  beta calibration (Kull et al. 2017: logistic in log s and -log(1 - s))
  fitted to the same posterior, a smooth map of the same trend;
- true CE = mean |s - c(s)|^p over the hold-out, exactly (the world's law is
  the hold-out's empirical one).

So the shared test images, the truth's own estimation error and the small
number of rows behind the run's ``coverage_*`` tables are all out of the
measurement: what remains is whether the intervals cover on these laws.
Prints each map's mean true CE, and coverage (%) with its Monte Carlo SE per
(map, family, p, n) by task kind and by band of true CE.

    python benchmarks/coverage_checks/interval_coverage_study.py --results results/default
        [--samples-per-world 8] [--n 1000,3000] [--families ece_es15,...]
        [--calibrators beta,vecs,...] [--maps posterior,smooth] [--n-boot 100] [--level 0.9]
        [--alpha-scales 0.5,0.6] [--p 2] [--workers 2]
        [--out benchmarks/measured/interval_coverage_study.md]
"""
from __future__ import annotations

import argparse
import os
import time
import warnings
import zlib
from functools import lru_cache
from multiprocessing import Pool
from pathlib import Path

import numpy as np

from interval_coverage import inverted_rows
from fitontest import families
from fitontest.inference.intervals import INVERTED_ALPHA_SCALE, IntervalCoverageWarning

FAMILIES = ("ece_ew15", "ece_es15", "ece_ew_sweep", "ece_es_sweep", "ece_ew_cv", "ece_es_cv",
            "isotonic", "smece")
BANDS = (0.0, 0.005, 0.02, np.inf)


def world_keys(results: str, calibrators: list[str] | None) -> list[tuple[str, str, str]]:
    keys = sorted(tuple(p.with_suffix("").parts[-3:])
                  for p in Path(results, "truth").glob("*/*/*.npz"))
    return [k for k in keys if calibrators is None or k[2] in calibrators]


def smooth_map(s: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Beta calibration of the posterior q on the scores s (q as soft labels)."""
    from sklearn.linear_model import LogisticRegression

    e = np.clip(s, 1e-6, 1 - 1e-6)
    x = np.c_[np.log(e), -np.log1p(-e)]
    fit = LogisticRegression(C=1e6, max_iter=1000).fit(
        np.r_[x, x], np.r_[np.ones(len(s)), np.zeros(len(s))], sample_weight=np.r_[q, 1 - q])
    return fit.predict_proba(x)[:, 1]


@lru_cache(maxsize=None)
def load_world(results: str, key: tuple[str, str, str], kind: str):
    """(hold-out scores, true map at them, true CE p=1, true CE p=2)."""
    d = np.load(Path(results, "calibrated", *key).with_suffix(".npz"))
    s = d["holdout_scores"]
    if kind == "posterior":
        c = np.load(Path(results, "truth", *key).with_suffix(".npz"))["posterior"]
    else:
        c = smooth_map(s, d["holdout_posterior"])
    c = np.clip(c, 0.0, 1.0)
    gap = np.abs(s - c)
    return s, c, float(gap.mean()), float(np.mean(gap ** 2))


def run_chunk(task):
    """Rows (map, world, kind, family, p, method, n, true CE, covered, width) of some samples."""
    results, key, mapping, n, seeds, fams, n_boot, level, scales, ps = task
    warnings.simplefilter("ignore", IntervalCoverageWarning)
    s_all, c_all, ce1, ce2 = load_world(results, key, mapping)
    kind = "confidence" if key[1] == "confidence" else "ovr"
    out = []
    for seed in seeds:
        rng = np.random.default_rng([seed, n, zlib.crc32('/'.join(key).encode())])
        i = rng.integers(0, len(s_all), n)
        s, y = s_all[i], (rng.random(n) < c_all[i]).astype(np.int8)
        for name in fams:
            fam = families.get(name).fit(s, y)
            for p in ps:
                truth = (ce1, ce2)[p - 1]
                for label, lo, hi, _ in inverted_rows(fam, s, y, p, n_boot, [seed, 7], level,
                                                      scales):
                    out.append((mapping, "/".join(key), kind, name, p, label, n, ce1,
                                lo <= truth <= hi, hi - lo))
    return out


def table(rows, level: float) -> str:
    import pandas as pd

    df = pd.DataFrame(rows, columns=["map", "world", "kind", "family", "p", "method", "n", "ce",
                                     "covered", "width"])
    df["band"] = pd.cut(df["ce"], BANDS, right=False,
                        labels=[f"CE < {BANDS[1]:g}", f"CE {BANDS[1]:g}-{BANDS[2]:g}",
                                f"CE >= {BANDS[2]:g}"])

    def cell(g) -> str:
        cov, k = g["covered"].mean(), len(g)
        return f"{100 * cov:.1f} ({100 * np.sqrt(cov * (1 - cov) / k):.1f}, {k})"

    lines = [f"Coverage % (MC SE, samples) of {level:.0%} intervals (default method) on the "
             f"run's own worlds; {df['world'].nunique()} worlds per map\n"]
    worlds = df.drop_duplicates(["map", "world"])
    lines.append("mean true L1 CE of the worlds: " + "; ".join(
        f"{m} {g['ce'].mean():.4f} (ovr {g[g['kind'] == 'ovr']['ce'].mean():.4f}, confidence "
        f"{g[g['kind'] == 'confidence']['ce'].mean():.4f})" for m, g in worlds.groupby("map")))
    for mapping, dm in df.groupby("map"):
        for by, title in (("kind", "task kind"), ("band", "band of true L1 CE")):
            groups = [v for v in dm[by].unique().sort_values()] if by == "band" else sorted(
                dm[by].unique())
            lines += [f"\n### map {mapping}, by {title}\n",
                      "| family | p | method | n | all | " + " | ".join(map(str, groups))
                      + " | mean width |", "|---" * (len(groups) + 6) + "|"]
            for (fam, p, m, n), g in dm.groupby(["family", "p", "method", "n"]):
                parts = [cell(g)] + [cell(g[g[by] == v]) if (g[by] == v).any() else ""
                                     for v in groups]
                lines.append(f"| {fam} | {p} | {m} | {n} | " + " | ".join(parts)
                             + f" | {g['width'].mean():.4f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", default="results/default")
    ap.add_argument("--samples-per-world", type=int, default=8)
    ap.add_argument("--n", default="1000,3000")
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--calibrators", default="beta,vecs,platt,pl3_ce,scaling_binning,isotonic",
                    help="the calibrators whose worlds are used ('all': every one)")
    ap.add_argument("--maps", default="posterior,smooth")
    ap.add_argument("--n-boot", type=int, default=100)
    ap.add_argument("--level", type=float, default=0.9)
    ap.add_argument("--alpha-scales", default="",
                    help="also 'inverted' read at level 1 - k (1 - level) for these k, same worlds")
    ap.add_argument("--workers", type=int, default=1, choices=(1, 2))
    ap.add_argument("--p", default="1,2", help="CE exponents to score (comma-separated)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    ps = [int(v) for v in args.p.split(",")]
    cals = None if args.calibrators == "all" else args.calibrators.split(",")
    keys = world_keys(args.results, cals)
    if not keys:
        raise SystemExit(f"no truth files under {args.results}/truth (a finished procedural run "
                         "with the 'posterior' truth is needed)")
    first = Path(args.results, "truth", *keys[0]).with_suffix(".npz")
    if "posterior" not in np.load(first).files:
        raise SystemExit(f"{first} has no 'posterior' truth: the worlds need a run whose "
                         "source knows the event posterior (the procedural or tabular "
                         "sources, not CIFAR-5m or others' logits)")
    fams = args.families.split(",")
    scales = [None] + [float(k) for k in args.alpha_scales.split(",") if k]
    tasks = [(args.results, key, m, int(n), range(i, i + 1), fams, args.n_boot, args.level,
              scales, ps)
             for i in range(args.samples_per_world) for n in args.n.split(",")
             for m in args.maps.split(",") for key in keys]
    t0, rows = time.time(), []
    with Pool(args.workers) as pool:
        for r in pool.imap_unordered(run_chunk, tasks):
            rows += r
    text = (f"command: python benchmarks/coverage_checks/interval_coverage_study.py --results {args.results} "
            f"--samples-per-world {args.samples_per_world} --n {args.n} --families "
            f"{args.families} --calibrators {args.calibrators} --maps {args.maps} --n-boot {args.n_boot} "
            f"--level {args.level} --alpha-scales {args.alpha_scales or '(none)'} --p {args.p} "
            f"--workers {args.workers}\ndefault alpha scale {INVERTED_ALPHA_SCALE:g}; "
            f"wall {time.time() - t0:.0f} s, "
            f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; {len(rows)} intervals\n\n"
            + table(rows, args.level))
    if args.out:
        from fitontest.core.io import write_text

        write_text(args.out, text)
    print(text)


if __name__ == "__main__":
    main()
