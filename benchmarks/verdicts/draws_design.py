"""Table 2's clusters under the draws design: an A/A and a coverage check
(fitontest.study.draws; docs/methods/06-truth-and-scores.md §6.4, §6.5).

Table 2 treats every (network, validation draw) as an independent cluster.
This checks it on the real layout -- the code path of the workflow, on a source
whose truth is exactly known (the tabular generator, fitontest.data.tabular):

- networks: three scikit-learn classifiers (``--networks``, default logreg,
  gnb, mlp) trained once on ``--n-train`` rows; tasks class0 (one-vs-rest)
  and confidence; calibrators none, platt, isotonic; truths isotonic (the
  default's main truth, fitted to the labels) and posterior;
- every replicate draws a fresh validation split (``n_val`` rows) and a fresh
  hold-out (``n_holdout`` rows) -- the default config's proportions: 30000,
  2000, 4 draws -- and runs ``draws.calibrator_draws`` on it, as rule
  calibrator_draws does, then Table 2's own cells, intervals and markers;
- **A/A**: in every draw, ``platt`` is also fitted on the two halves of the
  draw's fitting points (``platt_a``, ``platt_b``) and measured where the draw
  measures: equal population performance by construction. A table row (a
  task; a (network, task) in the by-model tables) that marks one of the pair
  "significantly worse" -- Table 2's paired t-test over the (network, draw)
  clusters, two-sided 5 %, Holm -- is a false positive. ``--aa-layouts``
  also runs it on the layout before this check and on the shipped one plus
  the validation split as a draw (:func:`aa_layout`);
- **coverage**: the printed 95 % interval of every cell (and the t-interval
  of the cluster differences of a pair of calibrators) against the
  population value: the calibrator's CEAC / CMEE against the exact true map
  (the posterior truth on ``--n-pop`` fresh rows), averaged over ``--fits``
  fresh validation sets of ``n_val`` rows ("these networks; new validation
  sets"). Also against the design's own expectation (the mean of the cell
  over the replicates: what the clusters estimate, the truth estimator's
  bias included);
- ``deff``: the variance over replicates of a network's mean over its draws,
  over the mean within-replicate variance of its draws / draws: 1 when the
  draws are independent, above 1 when they share an error.

Every rate comes with its Monte-Carlo SE (over replicates).

    nice -n 10 python benchmarks/verdicts/draws_design.py [--reps 120] [--fits 100]
"""
from __future__ import annotations

import argparse
import os
import time
from typing import NamedTuple

import numpy as np
import pandas as pd

from fitontest import multiclass
from fitontest.data.tabular import TabularGenerator
from fitontest.models import tabular as models
from fitontest.report import policy
from fitontest.report.aggregate import aggregate_units
from fitontest.inference.stats import mean_interval, significance_markers
from fitontest.study import draws as D
from fitontest import tasks as task_lib
from fitontest.study.tasks import event_posterior
from fitontest.study import truth as truth_lib
from fitontest.study.experiment import fit_family
from fitontest.study.schema import CALIBRATOR_DRAW

TASKS = {"class0": 0, "confidence": None}
BINARY = ("platt", "isotonic")
PLACEBO = "platt"
TRUTHS = ("isotonic", "posterior")
#: pairs whose cluster differences get an interval, per measure
PAIRS = {"ceac": (("platt", "isotonic"), ("none", "platt")), "cmee": (("platt", "isotonic"),)}
COLUMNS = {"ceac": ("none",) + BINARY, "cmee": BINARY}


class Layout(NamedTuple):
    n_holdout: int = 30_000
    n_val: int = 2000
    draws: int = 4


def cells(frame: pd.DataFrame, measure: str, rows: list[str]):
    """Table 2's cells (the policy's units and clusters for the frame)."""
    inf = policy.inference_for("calibrators", measure, frame)
    return aggregate_units(frame, measure, rows, inf.units, columns="calibrator",
                           clusters=inf.clusters), inf


def train(gen: TabularGenerator, names, n_train: int, seed: int = 0) -> dict:
    X, y = gen.sample(n_train, np.random.default_rng([seed, 7]))
    return {n: models.get(n, seed=seed, generator=gen).fit(X, y) for n in names}


def _logits(clf, X, k):
    return models.log_proba(clf, X, k).astype(np.float64)


def aa_layout(kind: str, n_val: int, n_holdout: int, draws: int,
              network: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """(fitting, measuring) positions of every draw of ``network`` in rows that
    hold the validation split first, then the hold-out:

    - ``shipped``: :func:`draws.draw_layout` (the network's own permutation,
      each draw measured on its own slice);
    - ``previous`` (before this check): the validation split (the study's own
      fits, the same images for every network) measured on the whole
      hold-out, and ``draws - 1`` draws fitted on slices of one permutation
      shared by every network, each measured on the rest of the hold-out;
    - ``with-draw-0``: the validation split and ``draws - 1`` draws of the
      network's own permutation, each measured on a slice of its own.

    Every layout has ``draws`` draws per network."""
    if kind == "shipped":
        return [(n_val + f, n_val + m)
                for f, m in D.draw_layout(n_holdout, n_val, draws, network=network)]
    val, draws = np.arange(n_val), draws - 1
    if kind == "previous":
        rest = [np.setdiff1d(np.arange(n_holdout), f)
                for f in D.draw_positions(n_holdout, n_val, draws)]
        return [(val, n_val + np.arange(n_holdout))] + [
            (n_val + f, n_val + m) for f, m in zip(D.draw_positions(n_holdout, n_val, draws),
                                                   rest)]
    if kind == "with-draw-0":
        fits = D.draw_positions(n_holdout, n_val, draws, network=network)
        used = np.concatenate(fits)
        free = np.random.default_rng([D.name_seed(network), 5]).permutation(
            np.setdiff1d(np.arange(n_holdout), used))
        slices = np.array_split(free, draws + 1)
        return [(val, n_val + np.sort(slices[0]))] + [
            (n_val + f, n_val + np.sort(m)) for f, m in zip(fits, slices[1:])]
    raise ValueError(f"unknown layout {kind!r}")


def placebo_rows(data: dict, layout, task_specs: dict, truths, arch: str,
                 name: str = PLACEBO) -> pd.DataFrame:
    """The A/A pair of every draw of ``layout`` (draws numbered from 1):
    binary family ``name`` fitted on the two halves of the draw's fitting
    points (``NAME_a``, ``NAME_b``: equal population performance), as rule
    calibrate_binary fits, and measured on the draw's measuring points with
    the truths re-estimated there (:func:`draws.measured_rows`)."""
    lg, y = np.asarray(data["logits"], dtype=np.float64), np.asarray(data["labels"])
    p = multiclass.get("none").fit(lg[:2], y[:2]).predict_proba(lg)
    none = {}
    for task, spec in task_specs.items():
        s, yy = task_lib.reduce(spec, p, y)
        none[task] = {"holdout_scores": s, "holdout_labels": yy}
        if "posterior" in data:
            none[task]["holdout_posterior"] = event_posterior(spec, p, data["posterior"])
    parts = []
    for d, (fit, meas) in enumerate(layout, start=1):
        files = {}
        for task, f in none.items():
            files[(task, "none")] = f
            s, yy = f["holdout_scores"], f["holdout_labels"]
            for half, tag in ((fit[0::2], "a"), (fit[1::2], "b")):
                fam, _ = fit_family(name, s[half], yy[half])
                files[(task, f"{name}_{tag}")] = {**f, "holdout_scores": np.clip(
                    fam.predict(s), 0.0, 1.0)}
        r = D.measured_rows(files, [], list(truths), measure=meas)
        parts.append(r[r["calibrator"] != "none"].assign(arch=arch, **{CALIBRATOR_DRAW: d}))
    return pd.concat(parts, ignore_index=True)


def aa_verdicts(frame: pd.DataFrame, measures=tuple(COLUMNS), name: str = PLACEBO) -> list[dict]:
    """Per truth, measure and table row (a task; a (network, task) by model):
    whether Table 2's markers call one of the A/A pair significantly worse."""
    pair = [f"{name}_a", f"{name}_b"]
    f = frame[frame["calibrator"].isin(pair)]
    out = []
    for truth in pd.unique(f["truth"]):
        for measure in measures:
            for layout, rows in (("per task", ["task"]), ("by model", ["arch", "task"])):
                c, inf = cells(f[f["truth"] == truth], measure, rows)
                for label, u in c.units.items():
                    ok = significance_markers(u[pair], min_clusters=inf.min_clusters)
                    out.append({"truth": truth, "measure": measure, "layout": layout,
                                "row": label, "false_positive": bool((~ok).any()),
                                "clusters": int(u.shape[0])})
    return out


def replicate(gen: TabularGenerator, nets: dict, layout: Layout, rng,
              aa_layouts=("shipped",)) -> tuple[pd.DataFrame, dict]:
    """Table 2's rows of one study (a fresh validation split and hold-out:
    columns of ``calibrators.parquet``), and per A/A layout the A/A pair's rows."""
    n_val, n_h = layout.n_val, layout.n_holdout
    X, y = gen.sample(n_val + n_h, rng)          # validation rows first, then the hold-out
    post = gen.posterior(X)
    k = gen.num_classes
    parts, aa = [], {kind: [] for kind in aa_layouts}
    for arch, clf in nets.items():
        data = {"logits": _logits(clf, X, k), "labels": y, "posterior": post}
        holdout = {key: v[n_val:] for key, v in data.items()}
        # what rule calibrator_draws computes
        parts.append(D.calibrator_draws(holdout, n_val, layout.draws, TASKS, ["none"],
                                        list(BINARY), list(TRUTHS), arch=arch))
        for kind in aa_layouts:
            aa[kind].append(placebo_rows(data, aa_layout(kind, n_val, n_h, layout.draws, arch),
                                         TASKS, TRUTHS, arch))
    return (pd.concat(parts, ignore_index=True),
            {kind: pd.concat(v, ignore_index=True) for kind, v in aa.items()})


def _step_means(c: np.ndarray, v: np.ndarray) -> np.ndarray:
    """E[c | v] on the points: mean of ``c`` over the points sharing a value of
    ``v`` (a step calibrator's steps; every point alone for an injective one)."""
    _, inv = np.unique(v, return_inverse=True)
    return (np.bincount(inv, weights=c) / np.bincount(inv))[inv]


def population(gen: TabularGenerator, nets: dict, layout: Layout, n_pop: int, fits: int,
               seed: int = 0) -> pd.DataFrame:
    """Population CEAC / CMEE of every (network, task, calibrator): against
    the exact map (the posterior truth on ``n_pop`` fresh rows), mean over
    ``fits`` fits on fresh validation sets of ``n_val`` rows."""
    k = gen.num_classes
    X, y = gen.sample(n_pop, np.random.default_rng([seed, 9]))
    post = gen.posterior(X)
    none = multiclass.get("none")
    rows = []
    for arch, clf in nets.items():
        p = none.fit(_logits(clf, X[:10], k), y[:10]).predict_proba(_logits(clf, X, k))
        exact = {}
        for task, spec in TASKS.items():
            s, yy = task_lib.reduce(spec, p, y)
            c = truth_lib.estimate("posterior", s, yy,
                                   posterior=event_posterior(spec, p, post))
            exact[task] = (s, c)
            rows.append({"arch": arch, "task": task, "calibrator": "none",
                         "ceac": np.mean(np.abs(s - c)), "cmee": np.mean(np.abs(s - c))})
        rng = np.random.default_rng([seed, 10, len(rows)])
        acc: dict = {}
        for _ in range(fits):
            Xf, yf = gen.sample(layout.n_val, rng)
            pf = none.fit(_logits(clf, Xf, k), yf).predict_proba(_logits(clf, Xf, k))
            for task, spec in TASKS.items():
                s_fit, y_fit = task_lib.reduce(spec, pf, yf)
                s, c = exact[task]
                for name in BINARY:
                    fam, _ = fit_family(name, s_fit, y_fit)
                    ch = np.clip(fam.predict(s), 0.0, 1.0)
                    a = acc.setdefault((task, name), [0.0, 0.0])
                    a[0] += np.mean(np.abs(ch - _step_means(c, ch))) / fits
                    a[1] += np.mean(np.abs(ch - c)) / fits
        rows += [{"arch": arch, "task": t, "calibrator": n, "ceac": v[0], "cmee": v[1]}
                 for (t, n), v in acc.items()]
    return pd.DataFrame(rows)


def measure_rep(frame: pd.DataFrame) -> list[dict]:
    """One replicate's cells and pair differences: mean, lo, hi per truth,
    measure, table layout, row and column."""
    out = []
    for truth in TRUTHS:
        f = frame[frame["truth"] == truth]
        for measure, cols in COLUMNS.items():
            for layout, rows in (("per task", ["task"]), ("by model", ["arch", "task"])):
                c, inf = cells(f[f["calibrator"].isin(cols)], measure, rows)
                key = dict(truth=truth, measure=measure, layout=layout)
                for label in c.mean.index:
                    for col in cols:
                        out.append({**key, "row": label, "column": col,
                                    "mean": c.mean.loc[label, col], "lo": c.lo.loc[label, col],
                                    "hi": c.hi.loc[label, col]})
                    u = c.units[label]
                    for a, b in PAIRS[measure]:
                        m, lo, hi = mean_interval(u[a] - u[b])
                        out.append({**key, "row": label, "column": f"{a} - {b}",
                                    "mean": m, "lo": lo, "hi": hi})
    return out


def targets(pop: pd.DataFrame) -> dict:
    """Population value of every (measure, layout, row, column)."""
    t = {}
    for measure in COLUMNS:
        v = pop.set_index(["arch", "task", "calibrator"])[measure]
        per_task = v.groupby(level=["task", "calibrator"]).mean()
        for (arch, task, cal), x in v.items():
            t[(measure, "by model", (arch, task), cal)] = x
        for (task, cal), x in per_task.items():
            t[(measure, "per task", task, cal)] = x
        for a, b in PAIRS[measure]:
            for (arch, task, cal), x in v.items():
                if cal == a:
                    t[(measure, "by model", (arch, task), f"{a} - {b}")] = x - v[(arch, task, b)]
            for (task, cal), x in per_task.items():
                if cal == a:
                    t[(measure, "per task", task, f"{a} - {b}")] = x - per_task[(task, b)]
    return t


def deff(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Design effect of the draws of a network (module doc), per truth and measure."""
    f = pd.concat([x.assign(rep=i) for i, x in enumerate(frames)], ignore_index=True)
    f = f[f["calibrator"].isin(COLUMNS["ceac"])]
    rows = []
    for measure in COLUMNS:
        keys = ["truth", "arch", "task", "calibrator"]
        g = f.groupby(keys + ["rep"])[measure]
        per = pd.DataFrame({"mean": g.mean(), "var": g.var(ddof=1), "n": g.size()})
        s = per.groupby(level=keys).agg(between=("mean", "var"), within=("var", "mean"),
                                        n=("n", "mean"))
        s = s[s.index.get_level_values("calibrator").isin(COLUMNS[measure])]
        r = (s["between"] / (s["within"] / s["n"])).groupby(level="truth")
        rows += [{"truth": t, "measure": measure, "deff median": x.median(), "deff min": x.min(),
                  "deff max": x.max()} for t, x in r]
    return pd.DataFrame(rows)


def summarise(recs: list[dict], tgt: dict, reps: int) -> pd.DataFrame:
    """Coverage of the cells and differences, per truth, measure, table layout and kind."""
    c = pd.DataFrame(recs)
    c["kind"] = np.where(c["column"].str.contains(" - "), "difference", "cell")
    c["pop"] = [tgt[(m, lay, r, col)] for m, lay, r, col in
                zip(c["measure"], c["layout"], c["row"], c["column"])]
    keys = ["truth", "measure", "layout", "row", "column"]
    c["design mean"] = c.groupby(keys)["mean"].transform("mean")
    c["hit pop"] = (c["lo"] <= c["pop"]) & (c["pop"] <= c["hi"])
    c["hit design"] = (c["lo"] <= c["design mean"]) & (c["design mean"] <= c["hi"])
    c["rep"] = c.groupby(keys).cumcount()
    g = ["truth", "measure", "layout", "kind"]
    per_rep = c.groupby(g + ["rep"])[["hit pop", "hit design"]].mean()
    cov = per_rep.groupby(level=g).agg(["mean", "std"])
    worst = c.groupby(keys + ["kind"])[["hit pop", "hit design"]].mean()\
        .groupby(level=g).min()
    bias = c.assign(b=(c["design mean"] - c["pop"]) / ((c["hi"] - c["lo"]) / 2))\
        .groupby(g)["b"].agg(lambda x: np.nanmedian(np.abs(x)))
    out = pd.DataFrame({
        "cover pop": cov[("hit pop", "mean")], "se": cov[("hit pop", "std")] / np.sqrt(reps),
        "worst cell pop": worst["hit pop"],
        "cover design": cov[("hit design", "mean")],
        "se ": cov[("hit design", "std")] / np.sqrt(reps),
        "worst cell design": worst["hit design"], "|bias|/half-width": bias})
    return out


def aa_summary(aa: list[dict], reps: int) -> pd.DataFrame:
    """A/A rate per layout, truth, measure and table layout, Monte-Carlo SE over replicates."""
    keys = ["design", "truth", "measure", "layout"]
    a = pd.DataFrame(aa)
    a["rep"] = a.groupby(keys + ["row"]).cumcount()
    fp = a.groupby(keys + ["rep"])["false_positive"].mean().groupby(level=keys).agg(
        ["mean", "std"])
    return pd.DataFrame({"A/A rate": fp["mean"], "se": fp["std"] / np.sqrt(reps),
                         "clusters": a.groupby(keys)["clusters"].min()})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=120)
    ap.add_argument("--fits", type=int, default=100)
    ap.add_argument("--n-pop", type=int, default=400_000)
    ap.add_argument("--n-train", type=int, default=5000)
    ap.add_argument("--networks", nargs="*", default=["logreg", "gnb", "mlp"])
    ap.add_argument("--n-holdout", type=int, default=Layout().n_holdout)
    ap.add_argument("--n-val", type=int, default=Layout().n_val)
    ap.add_argument("--draws", type=int, default=Layout().draws)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--aa-layouts", nargs="*", default=["shipped", "previous", "with-draw-0"],
                    choices=["shipped", "previous", "with-draw-0"])
    a = ap.parse_args()
    pd.set_option("display.width", 200)
    pd.set_option("display.max_columns", 20)
    t0, c0 = time.perf_counter(), time.process_time()
    layout = Layout(a.n_holdout, a.n_val, a.draws)
    gen = TabularGenerator()
    nets = train(gen, a.networks, a.n_train, a.seed)
    pop = population(gen, nets, layout, a.n_pop, a.fits, a.seed)
    t_pop = time.process_time() - c0
    print(f"layout {layout}, networks {a.networks}, n_train {a.n_train}, tasks {list(TASKS)}, "
          f"{a.reps} replicates; population: {a.fits} fits x the posterior truth on "
          f"{a.n_pop} rows ({t_pop:.0f} CPU-s)")
    print("\npopulation values (x1e-3)")
    print((pop.set_index(["arch", "task", "calibrator"]) * 1000).round(2).unstack("calibrator")
          .to_string())
    recs, aa, frames = [], [], []
    for r in range(a.reps):
        f, placebo = replicate(gen, nets, layout, np.random.default_rng([a.seed, 11, r]),
                               a.aa_layouts)
        frames.append(f[f["calibrator"].isin(COLUMNS["ceac"])])
        recs += measure_rep(f)
        aa += [{"design": kind, **v} for kind, x in placebo.items() for v in aa_verdicts(x)]
        if (r + 1) % 25 == 0:
            print(f"  {r + 1} replicates, {time.process_time() - c0:.0f} CPU-s", flush=True)
    print("\nA/A: the placebo pair (platt on the two halves of each draw's points) marked "
          "'significantly worse' (share of table rows; nominal 5 %)")
    print(aa_summary(aa, a.reps).to_string(float_format=lambda x: f"{x:.3f}"))
    print("\ncoverage of the printed 95 % intervals (share of cells; cell = calibrator, "
          "difference = t-interval of a pair's cluster differences)")
    print(summarise(recs, targets(pop), a.reps).to_string(float_format=lambda x: f"{x:.3f}"))
    print("\ndesign effect of a network's draws (1 = independent draws)")
    print(deff(frames).to_string(float_format=lambda x: f"{x:.2f}"))
    print(f"\nwall {time.perf_counter() - t0:.0f} s, CPU {time.process_time() - c0:.0f} s "
          f"(OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')})")


if __name__ == "__main__":
    main()
