"""The chooser on a perfectly calibrated model, where the true CE is 0.

The chooser's worlds are built from maps fitted to the data (docs/methods/14-chooser.md
§14.2); none of its generators is the identity, so a calibrated model is a
world it never holds, and its truth benchmark (choose_truth.py) has no
calibrated source. Here the labels are drawn from the predicted probabilities
themselves (softmax of random logits with one boosted class, K classes, n
rows), so every task's true CE is exactly 0 and an estimate's error is the
estimate itself. Per (K, n): the mean |error| of ``evaluate(...,
evaluator="auto")`` (what `fitontest evaluate --evaluator auto` prints) and of
the default ``ece_es_cv`` on the confidence task, their paired difference ±
SE over the samples, and how often the chooser fell back to ``ece_es_cv``.

    python benchmarks/record.py truth/choose_calibrated.py [-- --samples 8]
"""
from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import fitontest
from fitontest.choose import choose_evaluator


def sample(k: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities of a K-class model and labels drawn from them (calibrated)."""
    rng = np.random.default_rng([seed, k, n])
    logits = rng.normal(size=(n, k)) * 2.0
    logits[np.arange(n), rng.integers(0, k, n)] += 4.0
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    y = np.minimum((rng.random(n)[:, None] > np.cumsum(p, 1)).sum(1), k - 1)
    return p, y


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--classes", default="10,100", help="K values")
    ap.add_argument("--n", default="1000,5000", help="sample sizes")
    ap.add_argument("--samples", type=int, default=8, help="samples per (K, n)")
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    print("errors x 1e-3 (the truth is 0); mean ± SE over the samples")
    print(f"{'K':>4} {'n':>6} {'samples':>7} {'auto':>13} {'ece_es_cv':>13} "
          f"{'auto - ece_es_cv':>18} {'fell back':>9} {'CPU-s/call':>10}")
    for k in (int(v) for v in a.classes.split(",")):
        for n in (int(v) for v in a.n.split(",")):
            auto, base, fell, cpu = [], [], 0, 0.0
            for seed in range(a.samples):
                p, y = sample(k, n, seed)
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
            se = lambda x: x.std(ddof=1) / np.sqrt(x.size)
            print(f"{k:>4} {n:>6} {a.samples:>7} {au.mean():>6.2f} ± {se(au):<4.2f} "
                  f"{ba.mean():>6.2f} ± {se(ba):<4.2f} {d.mean():>+9.2f} ± {se(d):<6.2f} "
                  f"{fell:>9} {cpu / a.samples:>10.1f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
