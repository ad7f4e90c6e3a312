"""Time to build every table (intervals, Wilcoxon markers, Friedman) on a
paper-sized tidy score frame.

The paper grid (config/paper.yaml) has 3 networks x 4 tasks (3 one-vs-rest +
confidence) x 6 calibrators x 5 seeds x 3 sizes x 3 truths score rows per
evaluator; --evaluators 25 gives ~81 000 rows, --scale k multiplies the seeds
(k = 10: ~810 000 rows). Prints the rows, the wall and CPU time of
fitontest.report.write.write_all (without CD diagrams, which are a handful of
matplotlib figures) and the time per written table; with several --scale
values, the CPU time per 1000 rows (constant when the build is linear in rows).
CPU time is the figure to compare on a shared machine.

    python benchmarks/speed/report_speed.py [--evaluators 25] [--scale 1 [2 4]]
"""
from __future__ import annotations

import argparse
import itertools
import tempfile
import time

import numpy as np
import pandas as pd

from fitontest.report import write
from fitontest.study.schema import SCORE_COLUMNS, SCORE_VALUES


def frame(n_eval: int, scale: int) -> pd.DataFrame:
    keys = list(itertools.product(["r110", "d40", "w32"], ["car", "ship", "frog", "confidence"],
                                  ["none", "platt", "beta", "isotonic", "temps", "vecs"],
                                  [f"ev{i}" for i in range(n_eval)], [1000, 3000, 10000],
                                  range(5 * scale), ["isotonic", "es100_flat", "es100_slope1"]))
    f = pd.DataFrame(keys, columns=["arch", "task", "calibrator", "evaluator", "size", "seed",
                                    "truth"])
    rng = np.random.default_rng(0)
    for c in SCORE_VALUES:
        f[c] = rng.gamma(2.0, 0.01, len(f))
    return f[SCORE_COLUMNS]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--evaluators", type=int, default=25)
    ap.add_argument("--scale", type=int, nargs="+", default=[1])
    a = ap.parse_args()
    for scale in a.scale:
        f = frame(a.evaluators, scale)
        with tempfile.TemporaryDirectory() as out:
            t0, c0 = time.perf_counter(), time.process_time()
            paths = write.write_all(f, None, out, cd_diagrams=False)
            dt, cpu = time.perf_counter() - t0, time.process_time() - c0
        n_tables = sum(p.name.endswith(".md") and p.name != "index.md" for p in paths)
        print(f"rows {len(f)}  tables {n_tables}  write_all {dt:.1f} s wall, {cpu:.1f} s CPU  "
              f"({cpu / n_tables * 1000:.0f} ms CPU per table, "
              f"{cpu / len(f) * 1000:.3f} s CPU per 1000 rows)", flush=True)


if __name__ == "__main__":
    main()
