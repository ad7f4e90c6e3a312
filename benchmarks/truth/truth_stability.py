"""How much of the `posterior` truth's CE is its own estimation noise
(docs/methods/11-intervals.md §11.3): the truth (isotonic regression of the known event
posterior on the scores, §9.4) refitted on random subsets of the hold-out,
its CE E|s - c(s)| compared with the one on the whole hold-out. An isotonic
fit's CE shrinks towards the map's as the points grow; a small change between
the subset and the whole says the truth's steps are the map's, not noise.

    python benchmarks/truth/truth_stability.py results/default --subset 7500
    python benchmarks/truth/truth_stability.py results/rehearsal --subset 30000
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from fitontest.study import truth


def iso_ce(s: np.ndarray, y: np.ndarray, q: np.ndarray) -> float:
    """CE of the scores under the `posterior` truth fitted on these points."""
    return float(np.mean(np.abs(s - truth.estimate("posterior", s, y, posterior=q))))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--subset", type=int, default=7500)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    rows = []
    for path in sorted(Path(args.results, "calibrated").glob("*/*/*.npz")):
        d = np.load(path)
        if "holdout_posterior" not in d.files:
            raise SystemExit(f"{path} has no hold-out posterior: this benchmark needs a run "
                             "whose source knows the event posterior (procedural or tabular)")
        s, y, q = d["holdout_scores"], d["holdout_labels"], d["holdout_posterior"]
        rng = np.random.default_rng(0)
        sub = [iso_ce(s[i], y[i], q[i]) for i in (rng.choice(len(s), args.subset, replace=False)
                                                  for _ in range(args.repeats))]
        rows.append((path.parent.name, iso_ce(s, y, q), float(np.mean(sub))))
        print(f"{path.parent.parent.name:10s} {path.parent.name:11s} {path.stem:16s} "
              f"CE whole ({len(s)}) {rows[-1][1]:.4f}  subset ({args.subset}) {rows[-1][2]:.4f}")
    print()
    for kind in ("one-vs-rest", "confidence"):
        r = np.array([(a, b) for t, a, b in rows if (t == "confidence") == (kind == "confidence")])
        if len(r):
            print(f"{kind}: mean CE whole {r[:, 0].mean():.4f}, subset {r[:, 1].mean():.4f}; "
                  f"subset / whole: mean {np.mean(r[:, 1] / r[:, 0]):.3f}, "
                  f"median {np.median(r[:, 1] / r[:, 0]):.3f} over {len(r)} models")


if __name__ == "__main__":
    main()
