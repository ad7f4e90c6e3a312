"""The evaluator chooser against exact truth (docs/methods.md §14, issue 35 item 3).

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

Printed per source and criterion: the mean error (and its SE over subsets) of
the chooser, of each fixed evaluator (kde included, though the chooser's
default candidates leave it out), of the best fixed evaluator in hindsight and
of the per-subset oracle; the chooser minus the best fixed evaluator and minus
ece_es_cv (paired means, SE); the number of subsets where the chooser loses to
the best fixed evaluator. The chooser's CE error is that of its *recommended
estimate* (criterion "ce": the mean of the three best candidates' estimates,
bias-corrected where the worlds show a clear bias); "pick's raw estimate" is
evaluate's estimate of its top pick alone. Under "map" the pick is criterion
"map" with its default candidates (platt, beta), read from the same run: a
candidate's world losses do not depend on the other candidates.

    python benchmarks/choose_truth.py --jobs 2            # default: 60 subsets, ~15 min on 2 shared cores
    python benchmarks/choose_truth.py --seeds 10 --n 1000,3000 --worlds 60 --jobs 2 \\
        --timing 1000,10000,100000 --out benchmarks/measured/choose_truth.md  # bigger run
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from fitontest import families
from fitontest.choose import DEFAULT_CANDIDATES, MAP_CANDIDATES, choose_evaluator
from fitontest.data import synthetic
from fitontest.families.base import estimates, used_estimates
from fitontest.study import tasks as task_lib
from fitontest.study.truth import estimate as truth_estimate

HOLDOUT = 200_000


def synthetic_subsets(ns, seeds):
    for shape in ("square", "sqrt", "beta1", "beta2", "stairs"):
        for ce in (0.02, 0.05):
            for n in ns:
                for seed in seeds:
                    p, y, c = synthetic.sample(shape, ce, n, seed)
                    yield f"{shape} ce={ce} n={n} seed={seed}", p, y, c


def _posterior_subsets(name, task_sets, ns, seeds):
    for task, (s, q) in task_sets.items():
        rng = np.random.default_rng([7, len(task)])
        y = (rng.random(s.size) < q).astype(int)
        c = truth_estimate("posterior", s, y, q)
        for n in ns:
            for seed in seeds:
                pos = np.random.default_rng([11, n, seed]).choice(s.size, n, replace=False)
                # labels of the subset drawn from the exact posterior
                yield f"{name} {task} n={n} seed={seed}", s[pos], y[pos], c[pos]


def tabular_subsets(ns, seeds):
    from sklearn.linear_model import LogisticRegression

    from fitontest.data.tabular import TabularGenerator

    gen = TabularGenerator()
    X, y = gen.sample(20_000, np.random.default_rng(1))
    clf = LogisticRegression(max_iter=500).fit(X, y)
    Xh, _ = gen.sample(HOLDOUT, np.random.default_rng(2))
    probs, post = clf.predict_proba(Xh), gen.posterior(Xh)
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


def fixed_errors(names, s, y, c):
    """(CE error, CMEE over the subset) of every fixed evaluator."""
    ce, cm = {}, {}
    true = float(np.mean(np.abs(s - c)))
    for name in names:
        fam = families.get(name).fit(s, y)
        ce[name] = abs(used_estimates(estimates(fam, s))[0] - true)
        cm[name] = float(np.mean(np.abs(fam.predict(s) - c))) if fam.provides_map else np.nan
    return ce, cm


def summary(source, rows, names, key):
    """Lines of the table for one source and one criterion (key: "ce" or "cmee")."""
    fixed = np.array([[r[key][n] for n in names] for r in rows])           # (S, E)
    chooser = np.array([r[f"pick_{key}_err"] for r in rows])
    oracle = np.nanmin(fixed, axis=1)
    means = np.nanmean(fixed, axis=0)
    best = int(np.nanargmin(means))
    se = lambda v: float(np.std(v, ddof=1) / np.sqrt(len(v))) if len(v) > 1 else np.nan  # noqa
    d = chooser - fixed[:, names.index("ece_es_cv")]
    db = chooser - fixed[:, best]
    raw = (f"{1e3 * np.mean([r['pick_raw_err'] for r in rows]):.3f}" if key == "ce" else "-")
    lines = [f"| {source} | {key} | {len(rows)} | {1e3 * chooser.mean():.3f} ± {1e3 * se(chooser):.3f} "
             f"| {raw} | {names[best]} {1e3 * means[best]:.3f} ± {1e3 * se(fixed[:, best]):.3f} "
             f"| {1e3 * db.mean():+.3f} ± {1e3 * se(db):.3f} "
             f"| {1e3 * means[names.index('ece_es_cv')]:.3f} | {1e3 * d.mean():+.3f} ± {1e3 * se(d):.3f} "
             f"| {1e3 * oracle.mean():.3f} | {int(np.sum(chooser > fixed[:, best] + 1e-12))} |"]
    per = ", ".join(f"{n} {1e3 * m:.3f}" for n, m in sorted(zip(names, means), key=lambda t: t[1])
                    if np.isfinite(m))
    return lines, f"- {source}, {key} (x1e-3): {per}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", default="1000", help="subset sizes, comma-separated")
    ap.add_argument("--seeds", default="synthetic=4,tabular=8,procedural=10",
                    help="subsets per (source setting, n): one integer, or source=k,...")
    ap.add_argument("--worlds", type=int, default=30)
    ap.add_argument("--sources", default="synthetic,tabular,procedural")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--out", help="also write the markdown table here")
    ap.add_argument("--timing", default="1000,10000",
                    help="n at which to time one default chooser call (empty: none)")
    a = ap.parse_args(argv)
    timing = []
    for n in [int(v) for v in a.timing.split(",") if v]:
        p, y, _ = synthetic.sample("beta1", 0.05, n, 0)
        w0, c0 = time.perf_counter(), time.process_time()
        ch = choose_evaluator(p, y, mode="ovr", n_jobs=a.jobs, progress=False)
        timing.append(f"- n = {n}: default choose_evaluator ({len(DEFAULT_CANDIDATES)} "
                      f"candidates, 40 worlds, "
                      f"interval 0.9, n_jobs={a.jobs}): wall {time.perf_counter() - w0:.1f} s, "
                      f"CPU {time.process_time() - c0:.1f} s (main process), pick {ch.evaluator}")
        print(timing[-1], flush=True)
    ns = [int(v) for v in a.n.split(",")]
    seeds = {k: int(v) for k, v in (kv.split("=") for kv in a.seeds.split(",") if "=" in kv)}.get
    # every fixed evaluator, kde included (a candidate of the chooser only when asked for)
    names = list(DEFAULT_CANDIDATES) + ["kde"]
    makers = {"synthetic": synthetic_subsets, "tabular": tabular_subsets,
              "procedural": procedural_subsets}
    t0, c0 = time.perf_counter(), time.process_time()
    table = ["| source | criterion | subsets | chooser | pick's raw estimate "
             "| best fixed (hindsight) | chooser - best fixed | ece_es_cv "
             "| chooser - ece_es_cv | oracle | subsets chooser > best fixed |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    details, picks = [], []
    for source in a.sources.split(","):
        rows = []
        k = seeds(source, 4) if "=" in a.seeds else int(a.seeds)
        for label, s, y, c in makers[source](ns, range(k)):
            ch = choose_evaluator(s, y, mode="ovr", n_worlds=a.worlds,
                                  seed=0, interval=None, n_jobs=a.jobs, progress=False)
            ce, cm = fixed_errors(names, s, y, c)
            true = float(np.mean(np.abs(s - c)))
            # criterion "map" with its default candidates, in the same worlds (a
            # candidate's world losses do not depend on the others): the same pick
            pick_map = min((r for r in ch.scores if r.evaluator in MAP_CANDIDATES),
                           key=lambda r: r.cmee).evaluator
            rows.append({"ce": ce, "cmee": cm, "pick_cmee_err": cm[pick_map],
                         "pick_ce_err": abs(ch.recommended_estimate - true),
                         "pick_raw_err": ce[ch.evaluator]})
            picks.append(f"{label}: ce -> {'+'.join(ch.ensemble)}, map -> {pick_map}")
            print(f"{label}: ce -> {ch.evaluator} ({1e3 * rows[-1]['pick_ce_err']:.2f}e-3 "
                  f"recommended, {1e3 * ce[ch.evaluator]:.2f}e-3 pick raw), "
                  f"map -> {pick_map} ({1e3 * cm[pick_map]:.2f}e-3)  "
                  f"[{time.perf_counter() - t0:.0f}s]", flush=True)
        for key in ("ce", "cmee"):
            lines, detail = summary(source, rows, names, key)
            table += lines
            details.append(detail)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    text = "\n".join(table + ["", "Mean error per fixed evaluator, best first:", *details, "",
                              "Cost of one chooser call (synthetic beta1, CE 0.05):", *timing, "",
                              f"wall {wall:.0f} s, CPU {cpu:.0f} s (main process; shared "
                              "machine, indicative)"])
    print(text)
    if a.out:
        Path(a.out).write_text(f"# benchmarks/choose_truth.py\n\n`python benchmarks/"
                               f"choose_truth.py --n {a.n} --seeds {a.seeds} --worlds "
                               f"{a.worlds} --jobs {a.jobs} --timing {a.timing}`\n\nErrors x 1e-3, mean ± SE over subsets.\n\n"
                               + text + "\n\nPicks:\n\n" + "\n".join(f"- {p}" for p in picks)
                               + "\n")


if __name__ == "__main__":
    main()
