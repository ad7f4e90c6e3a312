"""Networks as the clusters of claims about architectures, measured on many
networks (issue 55; benchmarks/measured/network_variance.md).

``run`` trains the default study's architectures on ``--networks`` training
seeds each (default 8) with three test-subset seeds (the default config plus
``training.seeds: [0..N-1]``, ``evaluation.seeds: [0, 1, 2]`` and
``calibrators.draws: 2``, so that the default's own networks and test subsets
are among them) in ``--dir``. ``analyse`` reads that run and prints

1. **each claim's network-level variance component**: for the claim's focal
   contrasts (its method against the rival it must beat, or its threshold),
   per network the mean contrast over the claim's rows for each test seed
   (Table 2: validation draw); the variance of the network means between
   the networks of one architecture (pooled over architectures) over what
   the test seeds' variation alone predicts (one-way random effects: about 1
   when networks add nothing; the F test's p-value beside it), and the
   network share of the variance of one network's mean;
2. **the coverage of the default design's 95 % intervals for the
   many-network mean**: the cells of Table 3 (CMEE) and Table 4 (CE error,
   Spearman), overall and per architecture, under the **old** design (one
   network per architecture, its (network, task, seed) test subsets the
   clusters: 3 seeds) and the **new** (three networks per architecture,
   one test seed, the networks the clusters), drawn ``--draws`` times from
   the N networks; the target is the mean over all N networks and their
   seeds (it includes the drawn networks: it flatters both designs a little)
   and, beside it, over the networks not drawn (its own noise then
   understates coverage).

    python benchmarks/verdicts/network_variance.py run --dir /tmp/nv --cores 2
    python benchmarks/verdicts/network_variance.py analyse /tmp/nv/results/network_variance
"""
from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from scipy import stats as sps

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from common import REPO  # noqa: E402

from fitontest.report import findings as F  # noqa: E402
from fitontest.report import policy  # noqa: E402
from fitontest.report.aggregate import aggregate_units  # noqa: E402
from fitontest.report.frames import (resolve_ranked_calibrators, select_truth,  # noqa: E402
                                     spearman_by_group, task_subset)
from fitontest.study import jobstats  # noqa: E402

EXP = "network_variance"


def config(n: int) -> dict:
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    cfg = copy.deepcopy(cfg)
    cfg["exp"] = EXP
    cfg["training"]["seeds"] = list(range(n))
    cfg["evaluation"]["seeds"] = [0, 1, 2]
    cfg["calibrators"]["draws"] = 2
    return cfg


def run(args) -> int:
    import subprocess

    workdir = Path(args.dir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "network_variance.yaml"
    path.write_text(yaml.safe_dump(config(args.networks), sort_keys=False))
    t0 = time.perf_counter()
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(workdir),
           "--cores", str(args.cores), "--configfile", str(path), "--rerun-incomplete"]
    rc = subprocess.run(cmd, cwd=REPO).returncode
    print(f"exit {rc}, wall {time.perf_counter() - t0:.0f} s")
    return rc


# ---------------------------------------------------------------- 1. variance components

def focal_pairs(ev: F.Evidence, claim: F.Claim) -> list[tuple[str, str | float]]:
    """The claim's decisive contrasts: (method, rival method) or (method, threshold)."""
    p, means = claim.params, ev.means()
    order = list(means.index)                     # best first

    def rival(m, k=1):
        others = [x for x in order if x != m]
        return others[min(k, len(others)) - 1]
    kind = claim.check
    if kind == "best":
        return [(p["method"], rival(p["method"]))]
    if kind == "in_top_k":
        return [(m, rival(m, p["k"])) for m in p["methods"] if m in order]
    if kind == "ahead_of":
        return [(a, b) for a in p["ahead"] for b in p["behind"] if a in order and b in order]
    if kind == "rank_at_most_in_majority":
        return [(p["method"], rival(p["method"], p["rank"]))]
    if kind == "in_bottom_fraction":
        k = len(order) - int(np.ceil(len(order) * p["fraction"]))
        return [(p["method"], rival(p["method"], k))]
    if kind == "above_threshold":
        return [(p["method"], float(p["threshold"]))]
    return []                                      # rank_trend: along a key, no pair


def components(values: pd.DataFrame) -> dict:
    """One-way random effects of network within architecture: ``values`` has
    columns arch, network, rep, x (one row per network and replicate)."""
    g = values.groupby(["arch", "network"])["x"]
    reps = int(g.size().min())
    if reps < 2:
        return {"ratio": np.nan, "p": np.nan, "share": np.nan, "df": (0, 0), "reps": reps}
    means, within = g.mean(), g.var(ddof=1)
    between = means.groupby(level="arch").var(ddof=1)
    df_b = int((means.groupby(level="arch").size() - 1).sum())
    df_w = int((g.size() - 1).sum())
    ms_b = float((between * (means.groupby(level="arch").size() - 1)).sum() / df_b)
    ms_w_over_r = float(within.mean() / reps)     # a network mean's test-subset variance
    ratio = ms_b / ms_w_over_r if ms_w_over_r > 0 else np.inf
    p = float(sps.f.sf(ratio, df_b, df_w)) if np.isfinite(ratio) else 0.0
    net_var = max(ms_b - ms_w_over_r, 0.0)
    share = net_var / (net_var + ms_w_over_r) if ms_w_over_r > 0 else 1.0
    return {"ratio": ratio, "p": p, "share": share, "df": (df_b, df_w), "reps": reps}


def claim_components(scores, calibrators) -> pd.DataFrame:
    frames = {"scores": policy.with_scope(scores), "calibrators": policy.with_scope(calibrators)}
    rows = []
    for claim in F.load_claims():
        if claim.frame not in frames:
            continue
        try:
            ev, _ = F.evidence_for(claim, frames)
        except F.NotTestable as e:
            rows.append({"claim": claim.id, "contrast": f"not testable: {e}"})
            continue
        rep = "seed" if claim.frame == "scores" else "draw"
        f = ev.rows
        per = f.groupby(["arch", "network", rep, ev.entity])[ev.measure].mean().unstack(ev.entity)
        pairs = focal_pairs(ev, claim)
        if not pairs:
            rows.append({"claim": claim.id, "contrast": "none (a trend along sizes)"})
            continue
        for a, b in pairs:
            x = per[a] - (per[b] if isinstance(b, str) else b)
            v = x.rename("x").reset_index().rename(columns={rep: "rep"}).dropna()
            c = components(v)
            rows.append({"claim": claim.id, "contrast": f"{a} − {b}", "ratio": c["ratio"],
                         "p": c["p"], "share": c["share"], "df": f"{c['df'][0]}, {c['df'][1]}",
                         "replicates": f"{c['reps']} {rep}s"})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------- 2. coverage

def cell_frames(scores: pd.DataFrame, ranked) -> dict[str, tuple[pd.DataFrame, str, tuple]]:
    """(rows, measure, unit keys) of the cells checked: Table 3 CMEE, Table 4 CE
    error (one-vs-rest) and Spearman (one-vs-rest)."""
    f = policy.with_scope(select_truth(scores, policy.MAIN_TRUTH))
    ovr = task_subset(f, "ovr")
    chosen, _ = resolve_ranked_calibrators(ovr["calibrator"], ranked)
    sp = spearman_by_group(ovr, item="calibrator", items=chosen)
    units = ("arch", "network", "task", "calibrator", "seed")
    return {"Table 3 CMEE": (f, "cmee", units),
            "Table 4 CE error (ovr)": (ovr, "ce_error", units),
            "Table 4 Spearman (ovr)": (sp, "spearman", ("arch", "network", "task", "seed"))}


def cells(frame, measure, units, clusters, rows):
    c = aggregate_units(frame, measure, rows, units, clusters=clusters, level=policy.LEVEL)
    return c.mean, c.lo, c.hi


def coverage(scores: pd.DataFrame, n_draws: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    nets = scores.groupby("arch")["network"].unique().map(sorted).to_dict()
    out = []
    for name, (f, measure, units) in cell_frames(scores, None).items():
        for rows in ((), ("arch",)):
            target = cells(f, measure, units, ("arch", "network"), rows)[0]
            for design in ("old", "new"):
                hit, hit_out, width = [], [], []
                for _ in range(n_draws):
                    if design == "old":     # one network per architecture, 3 test seeds
                        pick = {a: list(rng.choice(v, 1, replace=False)) for a, v in nets.items()}
                        sub = f[f["network"].isin([x for v in pick.values() for x in v])]
                        clusters = ("arch", "network", "task", "seed")
                    else:                   # three networks per architecture, test seed 0
                        pick = {a: list(rng.choice(v, 3, replace=False)) for a, v in nets.items()}
                        sub = f[f["network"].isin([x for v in pick.values() for x in v])
                                & (f["seed"] == 0)]
                        clusters = ("arch", "network")
                    m, lo, hi = cells(sub, measure, units, clusters, rows)
                    rest = f[~f["network"].isin([x for v in pick.values() for x in v])]
                    t_out = cells(rest, measure, units, ("arch", "network"), rows)[0]
                    t, lo, hi, t_out = (x.reindex_like(target) for x in (target, lo, hi, t_out))
                    ok = np.isfinite(lo.to_numpy()) & np.isfinite(t.to_numpy())
                    hit.append(((lo <= t) & (t <= hi)).to_numpy()[ok])
                    hit_out.append(((lo <= t_out) & (t_out <= hi)).to_numpy()[ok])
                    width.append((hi - lo).to_numpy()[ok])
                h, ho = np.concatenate(hit), np.concatenate(hit_out)
                out.append({"cells": name, "rows": "by architecture" if rows else "overall",
                            "design": design, "coverage": h.mean(),
                            "se": np.sqrt(h.mean() * (1 - h.mean()) / max(len(hit), 1)),
                            "coverage, networks not drawn": ho.mean(),
                            "mean width": np.concatenate(width).mean() * policy.scale_for(measure),
                            "intervals": h.size})
    return pd.DataFrame(out)


def analyse(args) -> int:
    res = Path(args.results)
    scores = pd.read_parquet(res / "scores.parquet")
    calibrators = pd.read_parquet(res / "calibrators.parquet")
    per_arch = scores.groupby("arch")["network"].nunique()
    print(f"run: {res.name}; networks per architecture {dict(per_arch)}; test seeds "
          f"{sorted(scores['seed'].unique())}; validation draws "
          f"{sorted(calibrators['draw'].unique())}")
    try:
        ctl = pd.read_csv(res / "benchmarks" / f"{jobstats.CONTROLLER}.tsv", sep="\t").iloc[-1]
        print(f"its cost: wall {float(ctl.s):.0f} s, CPU {float(ctl.cpu_time) + float(ctl.jobs_cpu_time):.0f} s "
              f"(controller + jobs)")
    except (FileNotFoundError, AttributeError):
        pass
    print("\n## 1. Network-level variance of each claim's focal contrasts\n")
    print("ratio: variance of a network's mean contrast between the networks of an "
          "architecture over what its test-subset replicates alone predict (1: networks add "
          "nothing); p: the F test of ratio = 1; share: the network part of one network "
          "mean's variance.\n")
    comp = claim_components(scores, calibrators)
    print(comp.to_markdown(index=False, floatfmt=".3g"))
    ok = comp.dropna(subset=["ratio"]) if "ratio" in comp else comp
    if len(ok):
        print(f"\n{len(ok)} contrasts: median ratio {ok['ratio'].median():.2f}; above 1: "
              f"{(ok['ratio'] > 1).mean():.0%}; F test p < 0.05: {(ok['p'] < 0.05).mean():.0%}")
    print(f"\n## 2. Coverage of the 95 % intervals for the {int(per_arch.min())}-network mean "
          f"({args.draws} draws per design)\n")
    cov = coverage(scores, args.draws)
    print(cov.to_markdown(index=False, floatfmt=".3f"))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run the many-network study")
    r.add_argument("--dir", required=True)
    r.add_argument("--networks", type=int, default=8, help="training seeds per architecture")
    r.add_argument("--cores", type=int, default=2)
    a = sub.add_parser("analyse", help="variance components and coverage of a finished run")
    a.add_argument("results", help="results/network_variance of the run")
    a.add_argument("--draws", type=int, default=200, help="design draws per design")
    args = ap.parse_args(argv)
    return run(args) if args.cmd == "run" else analyse(args)


if __name__ == "__main__":
    sys.exit(main())
