"""The chooser on perfectly calibrated models, where the true CE is 0 (issue 56).

The chooser's worlds are built from maps fitted to the data and, where the
scores are not shown miscalibrated, the identity map and maps near it
(docs/methods/14-chooser.md §14.1). Here the labels are drawn from the
predicted probabilities themselves, so every task's true CE is exactly 0 and an
estimate's error is the estimate itself. Two held-out model kinds (no constant
or generator of the chooser was chosen on them):

- ``softmax``: K classes, softmax of random logits with one boosted class, the
  confidence task (what ``fitontest evaluate`` reports by default);
- ``stairs``: a binary model whose scores take six values (1/12, 3/12, ...,
  11/12, equally often), a calibrated six-stair map.

Per (model, K, n): the mean |error| of ``evaluate(..., evaluator="auto")``
(what `fitontest evaluate --evaluator auto` prints) and of the default
``ece_es_cv``, their paired difference ± SE over the samples, whether auto is
worse beyond noise (difference more than 2 SEs above 0), and how often the
chooser fell back to ``ece_es_cv``.

    python benchmarks/record.py truth/choose_calibrated.py [-- --samples 8 --first-seed 100]
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

import fitontest
from fitontest import choose_evaluator

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))
from common import commit  # noqa: E402  (benchmarks/common.py)


def softmax_sample(k: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities of a K-class model and labels drawn from them (calibrated)."""
    rng = np.random.default_rng([seed, k, n])
    logits = rng.normal(size=(n, k)) * 2.0
    logits[np.arange(n), rng.integers(0, k, n)] += 4.0
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    y = np.minimum((rng.random(n)[:, None] > np.cumsum(p, 1)).sum(1), k - 1)
    return p, y


def stairs_sample(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Binary scores on six values, labels drawn from them: a calibrated six-stair map."""
    rng = np.random.default_rng([seed, 6, n])
    s = (2 * rng.integers(0, 6, n) + 1) / 12.0
    return s, (rng.random(n) < s).astype(int)




def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--classes", default="10,100", help="K values of the softmax model")
    ap.add_argument("--n", default="1000,5000", help="sample sizes of the softmax model")
    ap.add_argument("--stairs-n", default="10000", help="sample sizes of the six-stair model "
                    "(empty: none)")
    ap.add_argument("--samples", type=int, default=8, help="samples per cell")
    ap.add_argument("--first-seed", type=int, default=0, help="seed of the first sample "
                    "(0-7: the run before issue 56's worlds)")
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    print(f"commit {commit()}; errors x 1e-3 (the truth is 0); mean ± SE over the samples")
    print(f"{'model':>8} {'K':>4} {'n':>6} {'samples':>7} {'auto':>13} {'ece_es_cv':>13} "
          f"{'auto - ece_es_cv':>18} {'fell back':>9} {'CPU-s/call':>10}  verdict")
    cells = [("softmax", int(k), int(n)) for k in a.classes.split(",") if k
             for n in a.n.split(",") if n]
    cells += [("stairs", 2, int(n)) for n in a.stairs_n.split(",") if n]
    for model, k, n in cells:
        auto, base, fell, cpu = [], [], 0, 0.0
        for seed in range(a.first_seed, a.first_seed + a.samples):
            p, y = softmax_sample(k, n, seed) if model == "softmax" else stairs_sample(n, seed)
            c0 = time.process_time()
            # what evaluate(..., evaluator="auto") prints (tests/test_choose.py
            # checks the two agree), with its fallback flag
            ch = choose_evaluator(p, y, interval=None)
            cpu += time.process_time() - c0
            auto.append(abs(ch.recommended_estimate))
            base.append(abs(fitontest.evaluate(p, y, evaluator="ece_es_cv").estimate))
            fell += bool(ch.fallback)
        au, ba = 1e3 * np.array(auto), 1e3 * np.array(base)
        d = au - ba

        def se(x):
            return x.std(ddof=1) / np.sqrt(x.size)
        verdict = "WORSE beyond noise" if d.mean() > 2 * se(d) else "not worse beyond noise"
        print(f"{model:>8} {k:>4} {n:>6} {a.samples:>7} {au.mean():>6.2f} ± {se(au):<4.2f} "
              f"{ba.mean():>6.2f} ± {se(ba):<4.2f} {d.mean():>+9.2f} ± {se(d):<6.2f} "
              f"{fell:>9} {cpu / a.samples:>10.1f}  {verdict}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
