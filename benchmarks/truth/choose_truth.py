"""The evaluator chooser against exact truth (docs/methods/14-chooser.md §14, issue 35 item 3).

Sources with a known true calibration map; each test subset is given to the
chooser alone (it never sees the truth), and the CE error |used estimate -
true CE| (true CE = mean |s_i - c(s_i)| over the subset, as the study's
``ce_error``) and the CMEE over the subset's points of the chosen evaluator are
recorded beside every fixed evaluator's:

- ``synthetic``: the synthetic shapes (src/fitontest/data/synthetic.py), exact c;
- ``tabular``: a logistic regression (misspecified: the Bayes boundaries are
  quadratic) trained on the tabular source (src/fitontest/data/tabular.py);
  confidence and class-0-vs-rest tasks; c = the ``posterior`` truth (isotonic
  regression of the exact event posterior on the scores of a 200k hold-out);
- ``procedural``: the procedural source's exact posterior q
  (src/fitontest/data/procedural.py) turned into an over-confident network's
  outputs, logits = 1.5 log q + N(0, 0.3^2) noise (a small setting instead of
  training a network); confidence task; c as for tabular.

**Independent units.** Every subset has its own label draw: a synthetic
setting (shape, CE) gets its own seed (``synthetic.sample`` draws (c, y) from
the seed alone, so settings sharing a seed would share their labels and count
as one unit), and a tabular task its own rows. The seeds start at
``--first-seed`` (default 200): seeds 0-9 chose the chooser's constants
(docs/methods/14-chooser.md §14.2) and 100-123 served a side study; a fresh range is an
out-of-sample test.

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
would find with 80 % power (two-sided 5 %, unadjusted). The chooser's CE
error is that of its *recommended estimate* (criterion "ce": the mean of the
three best candidates' estimates, bias-corrected where the worlds show a
clear bias); "pick's raw estimate" is evaluate's estimate of its top pick
alone. Under "map" the pick is criterion "map" with its default candidates
(platt, beta), read from the same run: a candidate's world losses do not
depend on the other candidates.

    python benchmarks/truth/choose_truth.py --jobs 2           # default: 94 subsets, ~3 min on 2 cores
    python benchmarks/truth/choose_truth.py --n 1000,3000 --jobs 2 --timing 1000,10000,100000 \\
        --out benchmarks/measured/choose_truth.md        # the measured file, ~15 min
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import fitontest
from fitontest import families
from fitontest.choose import DEFAULT_CANDIDATES, MAP_CANDIDATES, choose_evaluator
from fitontest.data import synthetic
from fitontest.families.base import estimates, used_estimates
from fitontest.study.truth import estimate as truth_estimate

HOLDOUT = 200_000


SHAPES = ("square", "sqrt", "beta1", "beta2", "stairs")
CES = (0.02, 0.05)


def synthetic_subsets(ns, seeds):
    """One unit per (shape, CE, n, seed), each with its own label draw."""
    settings = [(shape, ce) for shape in SHAPES for ce in CES]
    for n in ns:
        for seed in seeds:
            for i, (shape, ce) in enumerate(settings):
                unit = seed * len(settings) + i
                p, y, c = synthetic.sample(shape, ce, n, unit)
                yield f"synthetic {shape} ce={ce} n={n} seed={unit}", p, y, c


def _posterior_subsets(name, task_sets, ns, seeds):
    for t, (task, (s, q)) in enumerate(task_sets.items()):
        rng = np.random.default_rng([7, len(task)])
        y = (rng.random(s.size) < q).astype(int)
        c = truth_estimate("posterior", s, y, q)
        for n in ns:
            for seed in seeds:
                # each task its own rows; labels of the subset drawn from the exact posterior
                pos = np.random.default_rng([11, n, seed, t]).choice(s.size, n, replace=False)
                yield f"{name} {task} n={n} seed={seed}", s[pos], y[pos], c[pos]


def _tabular_probs():
    """(hold-out probabilities, exact event posterior) of a logistic regression
    on the tabular source: the tabular sources' model."""
    from sklearn.linear_model import LogisticRegression

    from fitontest.data.tabular import TabularGenerator

    gen = TabularGenerator()
    X, y = gen.sample(20_000, np.random.default_rng(1))
    clf = LogisticRegression(max_iter=500).fit(X, y)
    Xh, _ = gen.sample(HOLDOUT, np.random.default_rng(2))
    return clf.predict_proba(Xh), gen.posterior(Xh)


def tabular_subsets(ns, seeds):
    probs, post = _tabular_probs()
    top = probs.argmax(axis=1)
    sets = {"confidence": (probs.max(axis=1), post[np.arange(HOLDOUT), top]),
            "class0": (probs[:, 0], post[:, 0])}
    yield from _posterior_subsets("tabular", sets, ns, seeds)


def procedural_subsets(ns, seeds):
    from fitontest.data.procedural import ProceduralSource

    q = ProceduralSource(HOLDOUT).posterior(np.arange(HOLDOUT))
    rng = np.random.default_rng(3)
    z = 1.5 * np.log(np.clip(q, 1e-12, 1.0)) + rng.normal(0.0, 0.3, size=q.shape)
    probs = np.exp(z - z.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    top = probs.argmax(axis=1)
    sets = {"confidence": (probs.max(axis=1), q[np.arange(HOLDOUT), top])}
    yield from _posterior_subsets("procedural", sets, ns, seeds)


def _tabular_model():
    """(hold-out confidence scores, their exact event posterior) of the logistic
    regression on the tabular source (as ``tabular_subsets``)."""
    probs, post = _tabular_probs()
    top = probs.argmax(axis=1)
    return probs.max(axis=1), post[np.arange(HOLDOUT), top]


def _labelled_subsets(name, s, rate, c, ns, seeds, salt):
    """Subsets of n hold-out points per seed: scores ``s``, labels ~ Bernoulli(``rate``),
    true map ``c`` (each source its own ``salt``)."""
    for n in ns:
        for seed in seeds:
            rng = np.random.default_rng([salt, n, seed])
            pos = rng.choice(s.size, n, replace=False)
            y = (rng.random(n) < rate[pos]).astype(int)
            yield f"{name} n={n} seed={seed}", s[pos], y, c[pos]


def steps_subsets(ns, seeds):
    """Held out from every choice of the rule: a step true map, what an isotonic
    calibrator leaves. The tabular model's confidence s (continuous), its true
    map c = the isotonic regression of the exact event posterior on s fitted on
    1,000 points (a step function of about 30 steps), labels ~ Bernoulli(c(s))."""
    from sklearn.isotonic import IsotonicRegression

    s, q = _tabular_model()
    fit = np.random.default_rng(13).choice(s.size, 1000, replace=False)
    c = IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip").fit(s[fit], q[fit]).predict(s)
    yield from _labelled_subsets("steps", s, c, c, ns, seeds, salt=17)


def binned_subsets(ns, seeds):
    """Held out from every choice of the rule: a calibrated model's usual scores,
    what a binning calibrator leaves. The tabular model's confidence binned by
    15 equal-size bins fitted on 1,000 labelled points (s' = the bin's label
    mean: 15 distinct scores); the exact true map c(s') = the mean exact
    posterior over the hold-out points of that bin; labels ~ Bernoulli(q)."""
    s, q = _tabular_model()
    rng0 = np.random.default_rng(19)
    fit = rng0.choice(s.size, 1000, replace=False)
    yfit = (rng0.random(fit.size) < q[fit]).astype(int)
    # histogram binning (Zadrozny & Elkan 2001): 15 equal-count bins of the fitting
    # scores, each score mapped to its bin's label mean
    edges = np.quantile(s[fit], np.linspace(0, 1, 16)[1:-1])
    fit_bin, bin_of = np.searchsorted(edges, s[fit]), np.searchsorted(edges, s)
    means = np.bincount(fit_bin, weights=yfit, minlength=15) / np.bincount(fit_bin,
                                                                          minlength=15)
    sb = means[bin_of]
    c = (np.bincount(bin_of, weights=q, minlength=15) / np.bincount(bin_of, minlength=15))[bin_of]
    yield from _labelled_subsets("binned", sb, q, c, ns, seeds, salt=23)


MAKERS = {"synthetic": synthetic_subsets, "tabular": tabular_subsets,
          "procedural": procedural_subsets, "steps": steps_subsets, "binned": binned_subsets}
#: sources no constant of the rule was chosen on (docs/methods/14-chooser.md §14.3)
HELD_OUT = ("steps", "binned")


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
            "cpu": time.process_time() - t0}


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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", default="1000", help="subset sizes, comma-separated")
    ap.add_argument("--seeds", default="synthetic=4,tabular=12,procedural=30,steps=12,"
                    "binned=12", help="seeds per (source setting, n): one integer, or "
                    "source=k,...; synthetic: 10 settings a seed, tabular: 2 tasks a seed")
    ap.add_argument("--first-seed", type=int, default=200)
    ap.add_argument("--worlds", type=int, default=40, help="the chooser's worlds (default: "
                    "the users' default, 40)")
    ap.add_argument("--sources", default="synthetic,tabular,procedural,steps,binned")
    ap.add_argument("--n-for", default="", help="source=n1+n2,...: sizes for a source other "
                    "than --n (e.g. steps=10000)")
    ap.add_argument("--write-domain", default="", metavar="JSON",
                    help="write the chooser's measured domain (coverage of the printed "
                         "interval; fitontest/inference/measured/chooser.json)")
    ap.add_argument("--jobs", type=int, default=1, help="processes over the subsets")
    ap.add_argument("--out", help="also write the markdown table here")
    ap.add_argument("--timing", default="1000,10000",
                    help="n at which to time one default chooser call (empty: none)")
    a = ap.parse_args(argv)
    from joblib import Parallel, delayed

    timing = []
    for n in [int(v) for v in a.timing.split(",") if v]:
        p, y, _ = synthetic.sample("beta1", 0.05, n, 0)
        c0 = time.process_time()            # one process: its CPU time is the whole cost
        fitontest.evaluate(p, y, evaluator="auto", mode="ovr", interval=0.9, test=None)
        cpu1 = time.process_time() - c0
        w0 = time.perf_counter()
        ch = choose_evaluator(p, y, mode="ovr", n_jobs=a.jobs, progress=False)
        timing.append(f"- n = {n}: fitontest.evaluate(..., evaluator='auto', interval=0.9) "
                      f"(the users' defaults: {len(DEFAULT_CANDIDATES)} candidates, 40 worlds): "
                      f"{cpu1:.1f} CPU-s (n_jobs=1); "
                      f"wall {time.perf_counter() - w0:.1f} s with n_jobs={a.jobs}; "
                      f"pick {ch.evaluator}")
        print(timing[-1], flush=True)
    ns = [int(v) for v in a.n.split(",")]
    counts = {k: int(v) for k, v in (kv.split("=") for kv in a.seeds.split(",") if "=" in kv)}
    # every fixed evaluator, kde included (a candidate of the chooser only when asked for)
    names = list(DEFAULT_CANDIDATES) + ["kde"]
    t0 = time.perf_counter()
    table = ["| source | criterion | subsets | auto (printed) | fallbacks | ensemble "
             "| interval covers | pick's raw estimate "
             "| best fixed (hindsight) | auto - best fixed | 80 % power at "
             "| best fixed (other half) | auto - it | ece_es_cv | auto - ece_es_cv "
             "| oracle |", "|---" * 16 + "|"]
    details, verdicts, picks, cpu, cells = [], [], [], 0.0, []
    n_for = {k: [int(v) for v in ns_.split("+")]
             for k, ns_ in (kv.split("=") for kv in a.n_for.split(",") if "=" in kv)}
    for source, n in ((s, n) for s in filter(None, a.sources.split(","))
                      for n in n_for.get(s, ns)):
        k = counts.get(source, 4) if counts else int(a.seeds)
        subsets = MAKERS[source]([n], range(a.first_seed, a.first_seed + k))
        rows = []
        for r in Parallel(n_jobs=a.jobs, return_as="generator")(
                delayed(one_subset)(u, *sub, names, a.worlds)
                for u, sub in enumerate(subsets)):
            rows.append(r)
            cpu += r["cpu"]
            picks.append(f"{r['label']}: ce -> {'+'.join(r['ensemble'])}, map -> {r['pick_map']}")
            print(f"{picks[-1]} ({1e3 * r['pick_ce_err']:.2f}e-3, pick raw "
                  f"{1e3 * r['pick_raw_err']:.2f}e-3; map {1e3 * r['pick_cmee_err']:.2f}e-3)  "
                  f"[{time.perf_counter() - t0:.0f}s]", flush=True)
        hull = [r["covered"] for r in rows if r["hull"]]
        cells.append((source, n, float(np.mean(hull)) if hull else np.nan, len(hull),
                      float(np.mean([r["covered"] for r in rows])), len(rows)))
        for key in ("ce", "cmee"):
            line, detail, verdict = summary(f"{source} n={n}", rows, names, key)
            table.append(line)
            details.append(detail)
            verdicts.append(verdict)
    wall = time.perf_counter() - t0
    coverage = [f"- {src} n={n}: printed interval covers {100 * allc:.1f} % of {k} subsets; "
                f"the hull (no fallback) {100 * cov:.1f} % of {h}" if h else
                f"- {src} n={n}: printed interval covers {100 * allc:.1f} % of {k} subsets (no "
                "hull: every subset fell back)" for src, n, cov, h, allc, k in cells]
    if a.write_domain:
        write_domain(a.write_domain, cells, a)
    text = "\n".join(table + ["", "Coverage of the printed 90 % interval:", *coverage, "",
                              "Verdicts:", *verdicts, "",
                              "Mean error per fixed evaluator, best first:", *details, "",
                              "Cost of one chooser call (synthetic beta1, CE 0.05):", *timing, "",
                              f"wall {wall:.0f} s, CPU {cpu:.0f} s (the subsets' processes)"])
    print(text)
    if a.out:
        Path(a.out).write_text(f"# benchmarks/truth/choose_truth.py\n\n`{command(a)}`\n\n"
                               "Errors x 1e-3, mean ± SE over the independent subsets.\n\n"
                               + text + "\n\nPicks:\n\n"
                               + "\n".join(f"- {p}" for p in picks) + "\n")


def command(a) -> str:
    return (f"python benchmarks/truth/choose_truth.py --n {a.n} --seeds {a.seeds} --first-seed "
            f"{a.first_seed} --worlds {a.worlds} --jobs {a.jobs} --timing {a.timing!r}"
            + (f" --sources {a.sources}" if a.sources else "")
            + (f" --n-for {a.n_for}" if a.n_for else "")
            + (f" --out {a.out}" if a.out else "")
            + (f" --write-domain {a.write_domain}" if a.write_domain else ""))


def write_domain(path: str, cells, a) -> None:
    """The chooser's measured domain: coverage of the hull interval printed with
    the ensemble's estimate (fallbacks print ece_es_cv's own interval, whose
    domain is the intervals'), worst over the (source, n) cells."""
    from fitontest.inference import domains

    hulls = [(cov, h) for _, _, cov, h, _, _ in cells if h]
    worst = min(hulls) if hulls else (float("nan"), 0)
    ns = [n for _, n, *_ in cells]
    domains.write(path, {
        "measured_file": a.out or "benchmarks/measured/choose_truth.md",
        "written_by": command(a), "quantity": "coverage",
        "laws": "sources " + ", ".join(sorted({c[0] for c in cells})) + " (docs/methods/README.md "
                "§14.3); the interval printed with the chooser's ensemble estimate",
        "methods": {"ensemble/1": {"domain": {"level": [0.9],
                                              "n": {"min": min(ns), "max": max(ns)},
                                              "n_worlds": [a.worlds]},
                                   "cells": {"0.9": [worst[0], worst[1]]}}}})


if __name__ == "__main__":
    main()
