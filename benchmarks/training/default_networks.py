"""How the default's networks are calibrated, from a workflow run's exported logits.

For every network of each results directory given (e.g. one run of the old
default and one of the new) prints its training time (CPU and wall seconds
from ``models/<arch>/train_log.csv``), final training loss, hold-out accuracy
and mean confidence, and for the confidence task and one one-vs-rest task:
the true calibration error CE = mean |s - c(s)| with c the ``isotonic`` truth
on the whole hold-out (docs/methods/06-truth-and-scores.md §6), and the mean s - c(s) over the
scores above 0.8 (> 0: over-confident at high confidence). Draws the
confidence task's reliability diagrams (one row per run, one column per
network) to ``--figure``.

    nice -n 5 snakemake results/default/logits/{resnet,densenet,wrn}/holdout.npz \\
        --cores 2 -d /tmp/netrun --configfile config/config.yaml
    python benchmarks/training/default_networks.py before=/tmp/netrun_before/results/before \\
        after=/tmp/netrun/results/default --figure docs/img/default_reliability.png
"""
from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import numpy as np
from scipy.special import softmax

from fitontest import tasks
from fitontest.core.io import load_npz
from fitontest.metrics import true_ce
from fitontest.study.truth import TRUTHS

HIGH = 0.8


def task_stats(s: np.ndarray, y: np.ndarray) -> dict[str, float]:
    c = TRUTHS.entry("isotonic")(s, y)
    high = s > HIGH
    return {"ce": true_ce(s, c), "high_share": float(high.mean()),
            "high_gap": float(np.mean(s[high] - c[high])) if high.any() else float("nan")}


def network_stats(run_dir: Path, arch: str, ovr_class: int) -> dict:
    d = load_npz(run_dir / "logits" / arch / "holdout.npz")
    probs = softmax(d["logits"].astype(np.float64), axis=1)
    s, y = tasks.confidence(probs, d["labels"])
    out = {"acc": float(y.mean()), "conf": float(s.mean()), "scores": s, "labels": y,
           "confidence": task_stats(s, y),
           "ovr": task_stats(*tasks.one_vs_rest(probs, d["labels"], ovr_class))}
    with open(run_dir / "models" / arch / "train_log.csv") as fh:
        rows = list(csv.DictReader(fh))
    out["epochs"] = len(rows)
    out["loss"] = float(rows[-1]["loss"])
    out["wall_s"] = sum(float(r["seconds"]) for r in rows)
    cpu = [r.get("cpu_seconds") for r in rows]
    out["cpu_s"] = sum(float(v) for v in cpu) if all(cpu) else float("nan")
    return out


def reliability(ax, s, y, title):
    try:    # the figures module is moving into a report package
        from fitontest.report.figures import reliability_diagram
    except ImportError:
        from fitontest.figures import reliability_diagram
    reliability_diagram(s, y, n_bins=15, scheme="ew", style="bars_centres", ax=ax, title=title)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", help="LABEL=RESULTS_DIR (results/<exp> of a workflow run)")
    ap.add_argument("--archs", nargs="+", default=["resnet", "densenet", "wrn"])
    ap.add_argument("--ovr-class", type=int, default=3, help="one-vs-rest task's class (3: cat)")
    ap.add_argument("--figure", type=Path, default=None)
    args = ap.parse_args(argv)
    runs = [tuple(r.split("=", 1)) for r in args.runs]
    if any(len(r) != 2 for r in runs):
        ap.error("runs are given as LABEL=RESULTS_DIR")

    stats = {(label, a): network_stats(Path(d), a, args.ovr_class) for label, d in runs
             for a in args.archs}
    print(f"{'run':8} {'arch':9} {'epochs':>6} {'cpu_s':>6} {'wall_s':>6} {'loss':>6} "
          f"{'acc':>6} {'conf':>6} | {'conf CE':>7} {'s>0.8':>5} {'s-c|s>0.8':>9} | "
          f"{'ovr CE':>7} {'s-c|s>0.8':>9}")
    for (label, a), st in stats.items():
        c, o = st["confidence"], st["ovr"]
        print(f"{label:8} {a:9} {st['epochs']:6d} {st['cpu_s']:6.1f} {st['wall_s']:6.1f} "
              f"{st['loss']:6.3f} {st['acc']:6.3f} {st['conf']:6.3f} | {c['ce']:7.4f} "
              f"{c['high_share']:5.2f} {c['high_gap']:+9.4f} | {o['ce']:7.4f} {o['high_gap']:+9.4f}")

    if args.figure is not None:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(len(runs), len(args.archs), squeeze=False,
                                 figsize=(3.6 * len(args.archs), 3.6 * len(runs)))
        for i, (label, _) in enumerate(runs):
            for j, a in enumerate(args.archs):
                st = stats[(label, a)]
                reliability(axes[i, j], st["scores"], st["labels"],
                            f"{label}: {a}, acc {st['acc']:.3f}, CE {st['confidence']['ce']:.3f}")
                if axes[i, j].get_legend() is not None:
                    axes[i, j].get_legend().remove()
        fig.tight_layout()
        args.figure.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(args.figure, dpi=80)
        print(f"wrote {args.figure}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
