"""The evaluator chooser against exact truth (docs/methods/14-chooser.md §14; issues 35 and 56).

Sources with a known true calibration map (benchmarks/truth/choose_sources.py:
synthetic, tabular, procedural; held out from every choice of the rule: steps,
binned, calibrated, platt_recal); each test subset is given to the chooser
alone (it never sees the truth), and the CE error |used estimate - true CE|
(true CE = mean |s_i - c(s_i)| over the subset, as the study's ``ce_error``)
and the CMEE over the subset's points of the chosen evaluator are recorded
beside every fixed evaluator's.

**Independent units.** Every subset has its own label draw: a synthetic
setting (shape, CE) gets its own seed (``synthetic.sample`` draws (c, y) from
the seed alone, so settings sharing a seed would share their labels and count
as one unit), and a tabular task its own rows. The seeds start at
``--first-seed`` (default 200): seeds 0-9 chose the chooser's constants
(docs/methods/14-chooser.md §14.2), 100-123 served a side study, 200-499
earlier runs; a fresh range is an out-of-sample test.

Printed per source and criterion: the mean error (SE over the independent
subsets) of the chooser, of each fixed evaluator (kde included, though the
chooser's default candidates leave it out), of the best fixed evaluator in
hindsight (optimistic: the least of 16 noisy means), of the best fixed
evaluator chosen on the other half of the subsets (two-fold, each half scored
with the other half's pick: what a user could fix in advance) and of the
per-subset oracle; then the chooser against every fixed evaluator: paired
differences, two-sided paired t-tests, Holm over the fixed evaluators, and
the verdict (chooser significantly better / worse / not distinguishable),
with the smallest difference from the best fixed evaluator that the test
would find with 80 % power (two-sided 5 %, unadjusted); and against
``ece_es_cv`` alone, whether the chooser is worse beyond noise (its mean
paired difference more than 2 SEs above 0). The chooser's CE error is that of
its *recommended estimate*; "pick's raw estimate" is evaluate's estimate of
its top pick alone. Under "map" the pick is criterion "map" with its default
candidates (platt, beta), read from the same run.

A long run is cut into parts, each writing its subsets' rows (``--rows``),
then one report from all of them (``--combine``):

    python benchmarks/truth/choose_truth.py --jobs 2           # default: ~3 min on 2 cores
    python benchmarks/truth/choose_truth.py --sources synthetic --n 1000,3000 --jobs 2 \
        --timing '' --rows part1.json                         # one part
    python benchmarks/truth/choose_truth.py --combine part1.json,part2.json \
        --out benchmarks/measured/choose_truth.md --write-domain \
        src/fitontest/inference/measured/chooser.json
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import fitontest
from fitontest import families
from fitontest import choose_evaluator
from fitontest.inference.choose import DEFAULT_CANDIDATES, MAP_CANDIDATES
from fitontest.data import synthetic
from fitontest.families.base import estimates, used_estimates

from choose_sources import CES, HELD_OUT, MAKERS, SHAPES, synthetic_subsets  # noqa: F401

def fixed_errors(names, s, y, c):
    """(CE error, CMEE over the subset) of every fixed evaluator."""
    ce, cm = {}, {}
    true = float(np.mean(np.abs(s - c)))
    for name in names:
        fam = families.get(name).fit(s, y)
        ce[name] = abs(used_estimates(estimates(fam, s))[0] - true)
        cm[name] = float(np.mean(np.abs(fam.predict(s) - c))) if fam.provides_map else np.nan
    return ce, cm


def one_subset(unit, label, s, y, c, names, worlds, level=0.9):
    """The chooser's and every fixed evaluator's errors on one subset. The
    chooser runs at the users' defaults (``fitontest evaluate --evaluator
    auto``: 40 worlds, its interval at 0.9 with the default replicates), except
    that ``unit`` seeds it, so that no two subsets share their worlds' draws."""
    t0 = time.process_time()
    ch = choose_evaluator(s, y, mode="ovr", n_worlds=worlds, seed=unit, interval=level,
                          progress=False)
    ce, cm = fixed_errors(names, s, y, c)
    true = float(np.mean(np.abs(s - c)))
    iv = ch.interval
    # criterion "map" with its default candidates, in the same worlds (a
    # candidate's world losses do not depend on the others): the same pick
    pick_map = min((r for r in ch.scores if r.evaluator in MAP_CANDIDATES),
                   key=lambda r: r.cmee).evaluator
    return {"label": label, "ce": ce, "cmee": cm, "pick_cmee_err": cm[pick_map],
            "pick_ce_err": abs(ch.recommended_estimate - true),
            "ensemble_err": abs(ch.ensemble_estimate - true), "fallback": ch.fallback,
            "covered": bool(iv.lo <= true <= iv.hi), "width": iv.hi - iv.lo,
            "hull": iv.method.startswith("hull"),
            "pick_raw_err": ce[ch.evaluator], "ensemble": ch.ensemble, "pick_map": pick_map,
            "generators": list(ch.generators), "cpu": time.process_time() - t0}


def _se(v):
    return float(np.std(v, ddof=1) / np.sqrt(len(v))) if len(v) > 1 else float("nan")


def summary(source, rows, names, key):
    """(table line, per-evaluator line, verdict lines) for one source and criterion
    (key "ce" or "cmee")."""
    from scipy import stats as st

    from fitontest.inference.stats import holm

    fixed = np.array([[r[key][n] for n in names] for r in rows])           # (S, E)
    ok = np.isfinite(fixed).all(axis=0)
    chooser = np.array([r[f"pick_{key}_err"] for r in rows])
    S = len(rows)
    means = np.where(ok, np.nanmean(fixed, axis=0), np.inf)
    best = int(np.argmin(means))
    # the best fixed evaluator picked on one half of the subsets, scored on the other
    half = np.arange(S) % 2 == 0
    cross = np.empty(S)
    for a in (half, ~half):
        cross[~a] = fixed[~a, int(np.argmin(np.where(ok, fixed[a].mean(axis=0), np.inf)))]
    oracle = np.nanmin(fixed, axis=1)
    d = chooser[:, None] - fixed[:, ok]                                     # (S, E')
    padj = holm(st.ttest_1samp(d, 0.0, axis=0).pvalue)                  # paired t on d
    okn = [n for n, o in zip(names, ok) if o]
    worse = [n for j, n in enumerate(okn) if padj[j] < 0.05 and d[:, j].mean() < 0]
    better = [n for j, n in enumerate(okn) if padj[j] < 0.05 and d[:, j].mean() > 0]
    db, des = chooser - fixed[:, best], chooser - fixed[:, names.index("ece_es_cv")]
    # smallest |mean difference| from the best fixed evaluator found with 80 % power
    q = st.t.ppf(0.975, S - 1) + st.t.ppf(0.8, S - 1)
    mde = q * np.std(db, ddof=1) / np.sqrt(S)
    raw = (f"{1e3 * np.mean([r['pick_raw_err'] for r in rows]):.2f}" if key == "ce" else "-")
    ens = (f"{1e3 * np.mean([r['ensemble_err'] for r in rows]):.2f}" if key == "ce" else "-")
    fb = f"{sum(r['fallback'] for r in rows)}" if key == "ce" else "-"
    cov = np.array([r["covered"] for r in rows])
    hull = np.array([r["hull"] for r in rows])
    covtxt = (f"{100 * cov.mean():.0f} % ({100 * cov[hull].mean():.0f} % of {hull.sum()} "
              f"hulls)" if key == "ce" and hull.any() else
              f"{100 * cov.mean():.0f} %" if key == "ce" else "-")
    pes = float(padj[okn.index("ece_es_cv")])
    line = (f"| {source} | {key} | {S} | {1e3 * chooser.mean():.2f} ± {1e3 * _se(chooser):.2f} "
            f"| {fb} | {ens} | {covtxt} | {raw} | {names[best]} {1e3 * means[best]:.2f} ± {1e3 * _se(fixed[:, best]):.2f} "
            f"| {1e3 * db.mean():+.2f} ± {1e3 * _se(db):.2f} | {1e3 * mde:.2f} "
            f"| {1e3 * cross.mean():.2f} | {1e3 * (chooser - cross).mean():+.2f} ± "
            f"{1e3 * _se(chooser - cross):.2f} "
            f"| {1e3 * means[names.index('ece_es_cv')]:.2f} | {1e3 * des.mean():+.2f} ± "
            f"{1e3 * _se(des):.2f} (Holm p {pes:.2g}) | {1e3 * oracle.mean():.2f} |")
    per = ", ".join(f"{n} {1e3 * m:.2f}" for n, m in sorted(zip(names, means),
                                                            key=lambda t: t[1]) if np.isfinite(m))
    verdict = (f"- {source}, {key}: chooser significantly better than {len(worse)} of "
               f"{len(okn)} fixed evaluators ({', '.join(worse) or '-'}), significantly worse "
               f"than {len(better)} ({', '.join(better) or '-'}); not distinguishable from the "
               f"rest (paired t, Holm over the fixed evaluators, 5 %)")
    return line, f"- {source}, {key} (x1e-3): {per}", verdict




def relative(path: str) -> str:
    """``path`` as the measured files name it: from the repository root, or its
    file name alone where it lies outside (no developer's absolute path)."""
    p = Path(path).resolve()
    return str(p.relative_to(REPO)) if p.is_relative_to(REPO) else p.name


REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))
from common import commit  # noqa: E402  (benchmarks/common.py)


def timing_lines(ns, jobs) -> list[str]:
    """One default ``evaluate(..., evaluator="auto")`` call per n, timed, on a
    miscalibrated sample (synthetic beta1, CE 0.05) and on a calibrated one (the
    same scores, labels drawn from them: the identity and near worlds kept)."""
    from fitontest.inference.worlds import plausible_maps

    out = []
    for n in ns:
        p, y, _ = synthetic.sample("beta1", 0.05, n, 0)
        y_cal = (np.random.default_rng(n).random(n) < p).astype(int)
        for what, labels in (("beta1 CE 0.05", y), ("calibrated", y_cal)):
            c0 = time.process_time()            # one process: its CPU time is the whole cost
            w0 = time.perf_counter()
            fitontest.evaluate(p, labels, evaluator="auto", mode="ovr", interval=0.9,
                               test=None)
            cpu1, wall1 = time.process_time() - c0, time.perf_counter() - w0
            kept = plausible_maps(p, labels, 4, [0, 1, 0])[2]
            out.append(f"- n = {n}, {what}: fitontest.evaluate(..., evaluator='auto', "
                       f"interval=0.9) (the users' defaults: {len(DEFAULT_CANDIDATES)} "
                       f"candidates, 40 worlds; generators kept: {', '.join(kept)}): "
                       f"{cpu1:.1f} CPU-s, {wall1:.1f} s wall (one process)")
            print(out[-1], flush=True)
    return out


def run_cells(a, names) -> list[dict]:
    """Every (source, n) cell of the run: its subsets' rows."""
    from joblib import Parallel, delayed

    ns = [int(v) for v in a.n.split(",")]
    counts = {k: int(v) for k, v in (kv.split("=") for kv in a.seeds.split(",") if "=" in kv)}
    n_for = {k: [int(v) for v in ns_.split("+")]
             for k, ns_ in (kv.split("=") for kv in a.n_for.split(",") if "=" in kv)}
    t0, cells = time.perf_counter(), []
    for source, n in ((s, n) for s in filter(None, a.sources.split(","))
                      for n in n_for.get(s, ns)):
        k = counts.get(source, 4) if counts else int(a.seeds)
        subsets = MAKERS[source]([n], range(a.first_seed, a.first_seed + k))
        rows = []
        for r in Parallel(n_jobs=a.jobs, return_as="generator")(
                delayed(one_subset)(u, *sub, names, a.worlds)
                for u, sub in enumerate(subsets)):
            rows.append(r)
            print(f"{r['label']}: ce -> {'+'.join(r['ensemble'])}, map -> {r['pick_map']} "
                  f"({1e3 * r['pick_ce_err']:.2f}e-3, ece_es_cv {1e3 * r['ce']['ece_es_cv']:.2f}"
                  f"e-3; fallback {r['fallback']})  [{time.perf_counter() - t0:.0f}s]",
                  flush=True)
        cells.append({"source": source, "n": n, "rows": rows})
    return cells


def report(cells, names, timing) -> str:
    table = ["| source | criterion | subsets | auto (printed) | fallbacks | ensemble "
             "| interval covers | pick's raw estimate "
             "| best fixed (hindsight) | auto - best fixed | 80 % power at "
             "| best fixed (other half) | auto - it | ece_es_cv | auto - ece_es_cv "
             "| oracle |", "|---" * 16 + "|"]
    details, verdicts, picks, cov, against = [], [], [], [], []
    for cell in cells:
        rows, src, n = cell["rows"], cell["source"], cell["n"]
        for key in ("ce", "cmee"):
            line, detail, verdict = summary(f"{src} n={n}", rows, names, key)
            table.append(line)
            details.append(detail)
            verdicts.append(verdict)
        d = 1e3 * np.array([r["pick_ce_err"] - r["ce"]["ece_es_cv"] for r in rows])
        worse = d.mean() > 2 * _se(d)
        against.append(f"- {src} n={n}: auto - ece_es_cv {d.mean():+.2f} ± {_se(d):.2f} "
                       f"(x1e-3, {len(rows)} subsets): "
                       + ("WORSE beyond noise" if worse else "not worse beyond noise"))
        hull = [r["covered"] for r in rows if r["hull"]]
        allc = float(np.mean([r["covered"] for r in rows]))
        cov.append(f"- {src} n={n}: printed interval covers {100 * allc:.1f} % of {len(rows)} "
                   "subsets; " + (f"the hull (no fallback) {100 * np.mean(hull):.1f} % of "
                                  f"{len(hull)}" if hull else "no hull: every subset fell back"))
        picks += [f"- {r['label']}: ce -> {'+'.join(r['ensemble'])}, map -> {r['pick_map']}"
                  + (" (fell back)" if r["fallback"] else "")
                  + f"; worlds from {'+'.join(r['generators'])}" for r in rows]
    rows = [r for cell in cells for r in cell["rows"]]
    hulls = [r["covered"] for r in rows if r["hull"]]
    cov.append(f"- all cells: the hull covered {sum(hulls)} of {len(hulls)}; the printed "
               f"interval {sum(r['covered'] for r in rows)} of {len(rows)} subsets, of which "
               f"{sum(r['fallback'] for r in rows)} fell back")
    return "\n".join(table + ["", "Against ece_es_cv (worse beyond noise: the mean paired "
                                  "difference more than 2 SEs above 0):", *against, "",
                              "Coverage of the printed 90 % interval:", *cov, "",
                              "Verdicts:", *verdicts, "",
                              "Mean error per fixed evaluator, best first:", *details, "",
                              "Cost of one chooser call:",
                              *(timing or ["- not timed in this run"]),
                              "", "Picks:", "", *picks])


def main(argv=None):
    import json

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", default="1000", help="subset sizes, comma-separated")
    ap.add_argument("--seeds", default="synthetic=4,tabular=12,procedural=30,steps=12,"
                    "binned=12,calibrated=12,platt_recal=12",
                    help="seeds per (source setting, n): one integer, or source=k,...; "
                         "synthetic: 10 settings a seed, tabular: 2 tasks a seed")
    ap.add_argument("--first-seed", type=int, default=200)
    ap.add_argument("--worlds", type=int, default=40, help="the chooser's worlds (default: "
                    "the users' default, 40)")
    ap.add_argument("--sources", default=",".join(MAKERS))
    ap.add_argument("--n-for", default="", help="source=n1+n2,...: sizes for a source other "
                    "than --n (e.g. steps=10000)")
    ap.add_argument("--jobs", type=int, default=1, help="processes over the subsets")
    ap.add_argument("--timing", default="1000,10000",
                    help="n at which to time one default chooser call (empty: none)")
    ap.add_argument("--rows", default="", help="write this part's rows (JSON) here")
    ap.add_argument("--combine", default="", help="parts' rows files, comma-separated: "
                    "report them (no subsets are run)")
    ap.add_argument("--out", help="also write the markdown report here")
    ap.add_argument("--write-domain", default="", metavar="JSON",
                    help="write the chooser's measured domain (fitontest/inference/measured/"
                         "chooser.json) from the cells reported")
    a = ap.parse_args(argv)
    names = list(DEFAULT_CANDIDATES) + ["kde"]     # every fixed evaluator, kde included
    if a.combine:
        parts = [json.loads(Path(f).read_text()) for f in a.combine.split(",")]
        cells = [c for part in parts for c in part["cells"]]
        timing = [t for part in parts for t in part["timing"]]
        commands = [part["command"] for part in parts]
        wall, cpu = sum(p["wall"] for p in parts), sum(p["cpu"] for p in parts)
        commits = sorted({p["commit"] for p in parts})
        worlds = {p["worlds"] for p in parts}
        if len(worlds) != 1:
            raise SystemExit(f"the parts ran with different numbers of worlds: {worlds}")
        a.worlds = worlds.pop()
    else:
        w0, c0 = time.perf_counter(), time.process_time()
        timing = timing_lines([int(v) for v in a.timing.split(",") if v], a.jobs)
        cells = run_cells(a, names)
        wall = time.perf_counter() - w0
        cpu = (time.process_time() - c0 + sum(r["cpu"] for c in cells for r in c["rows"])
               if a.jobs > 1 else time.process_time() - c0)
        commands, commits = [command(a)], [commit()]
        if a.rows:
            Path(a.rows).write_text(json.dumps({"command": commands[0], "commit": commits[0],
                                                "cells": cells, "timing": timing,
                                                "worlds": a.worlds,
                                                "wall": wall, "cpu": cpu}))
    text = report(cells, names, timing) if cells else "\n".join(
        ["Cost of one chooser call:", *timing])
    print(text)
    head = (f"# benchmarks/truth/choose_truth.py\n\nCommit {', '.join(commits)}; "
            f"{len(commands)} part(s), wall {wall:.0f} s, CPU {cpu:.0f} s in all, run as\n\n"
            + "".join(f"    {c}\n" for c in commands)
            + (f"\nreported by `{command(a)}`.\n" if a.combine else "")
            + "\nErrors x 1e-3, mean ± SE over the independent subsets.\n\n")
    if a.out:
        Path(a.out).write_text(head + text + "\n")
    if a.write_domain:
        write_domain(a.write_domain, cells, a, commands)


def command(a) -> str:
    if a.combine:
        return (f"python benchmarks/truth/choose_truth.py --combine "
                + ",".join(relative(f) for f in a.combine.split(","))
                + (f" --out {relative(a.out)}" if a.out else "")
                + (f" --write-domain {relative(a.write_domain)}" if a.write_domain else ""))
    return (f"python benchmarks/truth/choose_truth.py --n {a.n} --seeds {a.seeds} --first-seed "
            f"{a.first_seed} --worlds {a.worlds} --jobs {a.jobs} --timing {a.timing!r}"
            + (f" --sources {a.sources}" if a.sources else "")
            + (f" --n-for {a.n_for}" if a.n_for else "")
            + (f" --rows {relative(a.rows)}" if a.rows else "")
            + (f" --out {relative(a.out)}" if a.out else ""))


def write_domain(path: str, cells, a, commands) -> None:
    """The chooser's measured domain: coverage of the hull interval printed with
    the ensemble's estimate (fallbacks print ece_es_cv's own interval, whose
    domain is the intervals'), worst over the (source, n) cells; its sizes are
    the measured points at which every source of the run was measured (issue
    56: the points, not a range drawn between them)."""
    from fitontest.inference import domains

    hulls = [(float(np.mean([r["covered"] for r in c["rows"] if r["hull"]])),
              sum(r["hull"] for r in c["rows"])) for c in cells
             if any(r["hull"] for r in c["rows"])]
    worst = min(hulls) if hulls else (float("nan"), 0)
    sources = sorted({c["source"] for c in cells})
    at = {src: {c["n"] for c in cells if c["source"] == src} for src in sources}
    points = sorted(set.intersection(*at.values()))
    where = "; ".join(f"n = {n}: {', '.join(s for s in sources if n in at[s])}"
                      for n in sorted({c["n"] for c in cells}))
    domains.write(path, {
        "measured_file": relative(a.out) if a.out else "benchmarks/measured/choose_truth.md",
        "written_by": command(a), "quantity": "coverage",
        "laws": f"the measured points: {where} (docs/methods/14-chooser.md §14.3); n in the "
                "domain: the sizes every source was measured at; the interval printed with "
                "the chooser's ensemble estimate; parts: " + " && ".join(commands),
        "methods": {"ensemble/1": {"domain": {"level": [0.9], "n": points,
                                              "n_worlds": [a.worlds]},
                                   "cells": {"0.9": [worst[0], worst[1]]}}}})


if __name__ == "__main__":
    main()
