"""The paper's study on one GPU node, projected: training hours at the H200 rates, the whole wall.

    python benchmarks/training/paper_projection.py [--cores 16] [--rates FILE]

Reads the measured GPU rates (the package's ``gpu_rates.json``, derived from
``benchmarks/measured/gpu_fast_path_h200.jsonl``) and the rehearsal's measured
jobs (``benchmarks/measured/rehearsal``), and prints for ``config/paper.yaml``:
per network the path ``training.fast: auto`` takes on CUDA and its recipe's
hours against eager's (each path's measured seconds per step and setup, times
the recipe's steps: projected), the three trainings and exports one after
another on one GPU, the CPU grid after them (scaled from the rehearsal), and
the whole study's wall on one node with one GPU and ``--cores`` cores
(``fitontest.study.jobstats.node_wall``); then the same node on the eager
path and on the graph alone. Nothing here runs a network: it costs seconds.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # benchmarks/common.py
from common import REPO  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cores", type=int, default=16, help="the node's cores (default 16)")
    ap.add_argument("--rates", default=None, help="a rates file (default: the package's)")
    ap.add_argument("--target", default="config/paper.yaml")
    args = ap.parse_args()

    from fitontest.study.jobstats import extrapolate, gpu_projection, node_wall
    from fitontest.vision.fast_auto import load_rates

    rates = load_rates(args.rates)
    target = REPO / args.target
    cpu = extrapolate(REPO / "benchmarks/measured/rehearsal", REPO / "config/rehearsal.yaml", target)
    scaled = cpu.dropna(subset=["target_cpu_s"])
    once = cpu.loc[cpu.target_cpu_s.isna() & ~cpu.index.isin(["train", "export_logits"]), "wall_s"].sum()
    gpu = gpu_projection(target, rates)
    import yaml

    n_train = int(yaml.safe_load(target.read_text())["split"]["n_train"])
    print(f"{args.target} on one node, 1 GPU + {args.cores} cores")
    print(f"GPU rates measured on {rates.where}; CPU grid scaled from the rehearsal's measured "
          "jobs (benchmarks/measured/rehearsal)\n")
    print(f"{'network':11s} {'path (auto)':14s} {'epochs':>6s} {'s/epoch':>8s} {'setup s':>8s} "
          f"{'train h':>8s} {'eager h':>8s} {'eager/auto':>10s}")
    for arch, r in gpu.iterrows():
        print(f"{arch:11s} {r.path:14s} {r.epochs:6d} {r.s_per_epoch:8.2f} {r.setup_s:8.1f} "
              f"{r.train_s / 3600:8.3f} {r.eager_s / 3600:8.3f} {r.eager_s / r.train_s:9.2f}x")
    train, eager, export = gpu.train_s.sum(), gpu.eager_s.sum(), gpu.export_s.sum()
    print(f"\ntraining, the {len(gpu)} networks one after another on one GPU: {train / 3600:.2f} h "
          f"(eager {eager / 3600:.2f} h, {eager / train:.2f}x as long)")
    print(f"exports, {len(gpu)} x the validation and hold-out images at {rates.export_img_s:,.0f} "
          f"images/s: {export / 3600:.3f} h")
    print(f"CPU grid after the networks: {scaled.target_cpu_s.sum() / 3600:.2f} CPU-h, its longest "
          f"job {scaled.target_longest_cpu_s.max():.0f} CPU-s")
    longest = scaled.target_longest_cpu_s.max()
    walls = {}
    for name, col in (("auto", "train_s"), ("graph alone", None), ("eager", "eager_s")):
        if col is None:      # every network on the graph: its measured cost, setup included
            g = gpu.assign(train_s=[rates.costs(r.model, r.batch, r.epochs, n_train)["graph"]["total_s"]
                                    for _, r in gpu.iterrows()])
        else:
            g = gpu.assign(train_s=gpu[col])
        walls[name] = node_wall(g, scaled.target_cpu_s.sum(), longest, once, args.cores)
    w = walls["auto"]
    print(f"\nthe whole study, auto: {w['wall_s'] / 3600:.2f} h wall (GPU jobs {w['gpu_s'] / 3600:.2f} h, "
          f"then {w['tail_s'] / 60:.1f} min of CPU jobs after the last export, {w['other_s']:.0f} s "
          "run once)")
    for name in ("graph alone", "eager"):
        print(f"the whole study, {name}: {walls[name]['wall_s'] / 3600:.2f} h wall "
              f"({walls[name]['wall_s'] / w['wall_s']:.2f}x auto's)")
    print("\nmeasured: s/epoch, setup s, the export's images/s (one H200), the rehearsal's CPU per job;"
          "\nprojected: every hour above (measured rates x the paper's epochs, steps and images; "
          "the rehearsal's CPU x the paper's grid)")


if __name__ == "__main__":
    main()
