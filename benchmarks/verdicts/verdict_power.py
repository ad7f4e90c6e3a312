"""Power of the tables' verdicts under the two test-subset designs, at equal compute
(fitontest.report.verdicts.power; docs/methods/11-verdicts.md §11.7).

Worlds: synthetic score frames (fitontest.report.simulate.ScoreWorld) with the
default config's shape — 3 networks x 3 tasks x 6 calibrators x 2 sizes x 3
seeds, 17 evaluators — the variance components of the verdicts benchmark
(DEFAULT_RANDOM, chosen to match the default run) plus a per-(evaluator, draw)
component, and the evaluators' true log-scale effects taken from a run's own
Table 3 "all" row when --scores is given (else a fixed spread). Every frame has
the same rows under both designs: only what the units of a seed share differs
("paper": one draw of test images per seed for every network and task;
"independent": one per (network, task, seed)). Printed per design:

- A/A: one evaluator's independent seeds relabelled as 2 evaluators: share of
  rows with a "significantly worse" (nominal 5 %);
- power: share of truly different pairs (different effects) ordered correctly
  by the pairwise tests (Holm over the row's pairs), by true gap; reversed;
- coverage of the 95 % cell intervals of the population means.

With --compare RUN_A RUN_B (two results/<exp> folders, e.g. two default runs
with different seeds): Table 3's "all" row in both — pairs ordered
significantly in opposite directions (contradictions, must be 0), and the
share of pairs with the same verdict (A better, B better, or neither). With
--redraw RUN SEED...: RUN's calibrated models and truths re-scored by every
evaluator of the config on fresh test subsets of those seeds (the run's own
design; no CE intervals, which Table 3 does not use), written to
RUN/scores_redraw.parquet and compared with RUN's own scores as above — a
second run with new test subsets of the same networks and calibrators.

    python benchmarks/verdicts/verdict_power.py [--reps 100] [--scores results/default/scores.parquet]
                                       [--compare results/default results/default_s1]
                                       [--redraw results/default 3 4 5]
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from fitontest.report import policy
from fitontest.report import simulate as S
from fitontest.report import verdicts as V
from fitontest.report.specs import build, spec_named
from fitontest.inference.stats import pairwise_better

SHAPE = dict(archs=("resnet", "densenet", "wrn"), tasks=("car", "cat", "confidence"),
             calibrators=("beta", "vecs", "platt", "pl3_ce", "scaling_binning", "isotonic"),
             sizes=(1000, 3000))


def run_effects(path: Path) -> dict[str, float]:
    """Log-scale effects of the evaluators: log of Table 3's "all" cell means,
    centred (a run's point estimates, taken as the truth of the simulation)."""
    f = pd.read_parquet(path)
    t = build(spec_named("table3_cmee_overall"), {"scores": f}, policy.MAIN_TRUTH)
    m = np.log(t.values.loc["all"].dropna())
    return (m - m.mean()).round(4).to_dict()


def run_seed_evaluator_sd(path: Path) -> float:
    """Moment estimate of the sd of an evaluator's shared luck with one draw of
    test images: the spread over draws of the evaluator's log CMEE around its
    mean (cell effects removed), less what the rows' own noise explains."""
    f = pd.read_parquet(path)
    f = f[(f["truth"] == policy.MAIN_TRUTH) & np.isfinite(f["cmee"]) & (f["cmee"] > 0)]
    f = f.assign(lx=np.log(f["cmee"]))
    cell = ["arch", "task", "calibrator", "evaluator", "size"]
    f = f.assign(r=f["lx"] - f.groupby(cell)["lx"].transform("mean"))
    design = policy.design_of("scores", f)
    draw = ["seed"] if design == "paper" else ["arch", "task", "seed"]
    # evaluator x draw means, less the draw's mean over evaluators (shared effects)
    ed = f.groupby(draw + ["evaluator"])["r"].agg(["mean", "var", "size"])
    dm = f.groupby(draw)["r"].mean()
    dev = ed["mean"] - dm.reindex(ed.index.droplevel("evaluator")).to_numpy()
    k = f["seed"].nunique()
    noise = float((ed["var"] / ed["size"]).mean())
    return float(np.sqrt(max(dev.var() * k / (k - 1) - noise, 0.0)))


def redraw(run: Path, seeds: list[int], config: str = "config/config.yaml") -> Path:
    """Re-score ``run`` on fresh test subsets of ``seeds`` (module docstring)."""
    import yaml

    from fitontest.core.io import load_npz
    from fitontest.data.split import design_subsets
    from fitontest.study.experiment import family_params, score_evaluator, tidy
    from fitontest.study.schema import SCORE_COLUMNS, SCORE_DESIGN

    cfg = yaml.safe_load(open(config))
    ev = cfg["evaluation"]
    design = ev.get("subsets", "independent")
    archs, tasks = list(cfg["archs"]), list(cfg["tasks"])
    frames = []
    for arch in archs:
        for task in tasks:
            for cal in ev["calibrators"]:
                d = load_npz(run / "calibrated" / arch / task / f"{cal}.npz")
                subs = design_subsets(design, d["holdout_scores"].size, ev["sizes"], seeds,
                                      [(arch, task)])[(arch, task)]
                truths = load_npz(run / "truth" / arch / task / f"{cal}.npz")
                for name in ev["evaluators"]:
                    params = family_params(name, cfg.get("family_params"), cfg["seed"])
                    rows = score_evaluator(name, params, d["holdout_scores"],
                                           d["holdout_labels"], truths, subs)
                    frames.append(tidy(rows, SCORE_COLUMNS, arch=arch, task=task,
                                       calibrator=cal).assign(**{SCORE_DESIGN: design}))
            print(f"redraw: {arch} / {task} done", flush=True)
    out = run / "scores_redraw.parquet"
    pd.concat(frames, ignore_index=True).to_parquet(out, index=False)
    return out


def compare_runs(a: Path, b: Path) -> None:
    mats = []
    for run in (a, b):
        f = pd.read_parquet(run if run.suffix == ".parquet" else run / "scores.parquet")
        f = f[f["truth"] == policy.MAIN_TRUTH]
        inf = policy.inference_for("scores", "cmee", f)
        from fitontest.report.aggregate import aggregate_units
        cells = aggregate_units(f, "cmee", [], inf.units, clusters=inf.clusters)
        wide = cells.units["all"].dropna(axis=1, how="all")
        mats.append(pairwise_better(wide, min_clusters=inf.min_clusters))
        print(f"{run}: design {policy.design_of('scores', f)}, {len(wide)} clusters "
              f"{policy.words(inf.clusters)}, {int(mats[-1].to_numpy().sum())} significant "
              f"ordered pairs of {len(wide.columns) * (len(wide.columns) - 1) // 2}")
    cols = [c for c in mats[0].columns if c in mats[1].columns]
    x, y = (m.loc[cols, cols].to_numpy() for m in mats)
    i, j = np.triu_indices(len(cols), 1)

    def verdict(m):
        return np.where(m[i, j], 1, np.where(m[j, i], -1, 0))
    va, vb = verdict(x), verdict(y)
    contra = int(((va * vb) == -1).sum())
    print(f"pairs: {i.size}; contradictory verdicts (significant in opposite directions): "
          f"{contra}; same verdict: {np.mean(va == vb):.1%} (both significant the same way: "
          f"{int(((va == vb) & (va != 0)).sum())}, both undecided: "
          f"{int(((va == 0) & (vb == 0)).sum())}); significant in one run only: "
          f"{int(((va == 0) != (vb == 0)).sum())}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--scores", default="results/default/scores.parquet")
    ap.add_argument("--compare", nargs=2, default=None)
    ap.add_argument("--redraw", nargs="+", default=None, metavar="RUN_OR_SEED")
    ap.add_argument("--skip-simulation", action="store_true")
    a = ap.parse_args()
    pd.set_option("display.width", 200)
    t0 = time.perf_counter()
    if a.redraw:
        run, seeds = Path(a.redraw[0]), [int(v) for v in a.redraw[1:]]
        out = redraw(run, seeds)
        print(f"re-scored {run} on fresh subsets of seeds {seeds}: {out} "
              f"({time.perf_counter() - t0:.0f} s)")
        compare_runs(run, out)
    if a.skip_simulation:
        return
    path = Path(a.scores)
    if path.exists():
        effects, se = run_effects(path), run_seed_evaluator_sd(path)
        print(f"effects and seed_evaluator sd from {path}: sd {se:.3f}; effects (log) "
              + ", ".join(f"{k} {v:+.2f}" for k, v in effects.items()))
    else:
        effects = {f"e{i}": v for i, v in enumerate(np.linspace(-0.6, 0.9, 17).round(3))}
        se = 0.08
        print(f"({path} not found: a fixed spread of 17 effects, seed_evaluator sd {se})")
    rs = {**S.DEFAULT_RANDOM, "seed_evaluator": se}
    print(f"replicates: {a.reps}; 3 seeds; nominal α = 5 %, level 95 %\n")
    rows = []
    for design in ("paper", "independent"):
        w = S.ScoreWorld(**SHAPE, effects=effects, random_sd=rs, design=design)
        aa_w = S.ScoreWorld(**SHAPE, effects={"e0": 0.0}, random_sd=rs, design=design)
        aa = V.aa_rate(aa_w, (V.NEW,), n_rep=a.reps, rows=()).iloc[0]
        pw = V.power(w, n_rep=a.reps, rows=())
        cov = V.coverage(w, (V.NEW,), n_rep=max(a.reps // 4, 10), rows=()).iloc[0]
        diff = pw[pw["gap"] > 0]
        k = int(V.NEW.cells(w.draw(3), w.measure, ()).n_units.to_numpy().max())
        for lo, hi in ((0, 0.1), (0.1, 0.25), (0.25, 0.5), (0.5, np.inf)):
            d = diff[(diff["gap"] > lo) & (diff["gap"] <= hi)]
            if len(d):
                rows.append({"design": design, "clusters": k, "gap (log)": f"({lo}, {hi}]",
                             "pairs": int(d["pairs"].sum() / a.reps),
                             "detected": np.average(d["detected"], weights=d["pairs"]),
                             "reversed": np.average(d["reversed"], weights=d["pairs"])})
        rows.append({"design": design, "clusters": k, "gap (log)": "all",
                     "pairs": int(diff["pairs"].sum() / a.reps),
                     "detected": np.average(diff["detected"], weights=diff["pairs"]),
                     "reversed": np.average(diff["reversed"], weights=diff["pairs"]),
                     "A/A rate": f"{aa['rate']:.1%} ± {aa['mc_se']:.1%}",
                     "coverage": f"{cov['coverage']:.1%} ± {cov['mc_se']:.1%}"})
        print(f"{design}: {time.perf_counter() - t0:.0f} s", flush=True)
    out = pd.DataFrame(rows)
    for c in ("detected", "reversed"):
        out[c] = out[c].map(lambda v: f"{v:.1%}")
    print(out.fillna("").to_string(index=False))
    if a.compare:
        print()
        compare_runs(Path(a.compare[0]), Path(a.compare[1]))
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
