"""The user guide's `fitontest choose` example (docs/guide/chooser.md), with its truth.

Writes the example's ``preds.npz`` (a small MLP on the tabular source, the
guide's recipe), runs the chooser on it as ``fitontest choose preds.npz``
does, and prints the true CE of the MLP's confidence from the source's exact
posterior on ``--holdout`` further predictions (the study's ``posterior``
truth), beside the recommended estimate and a few fixed evaluators'.

    python benchmarks/truth/choose_example.py [--out preds.npz] [--holdout 500000]
"""
from __future__ import annotations

import argparse
import os
import warnings

import numpy as np


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="preds.npz")
    ap.add_argument("--holdout", type=int, default=500_000)
    a = ap.parse_args(argv)
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier

    import fitontest
    from fitontest.data.tabular import TabularGenerator
    from fitontest.study.truth import estimate

    gen = TabularGenerator()                      # the guide's recipe, line for line
    X, y = gen.sample(20_000, np.random.default_rng(0))
    X_test, y_test = gen.sample(10_000, np.random.default_rng(1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        mlp = MLPClassifier(hidden_layer_sizes=(64,), random_state=0).fit(X, y)
    probs = mlp.predict_proba(X_test)
    np.savez(a.out, probs=probs, labels=y_test)
    # the file's name alone: a measured file holds no developer's absolute path
    print(f"{os.path.basename(a.out)}: accuracy {np.mean(probs.argmax(1) == y_test):.4f}")

    choice = fitontest.choose_evaluator(probs, y_test, progress=False)
    print(choice)
    Xh, yh = gen.sample(a.holdout, np.random.default_rng(5))
    P, Q = mlp.predict_proba(Xh), gen.posterior(Xh)
    top = P.argmax(axis=1)
    s = P.max(axis=1)
    c = estimate("posterior", s, (yh == top).astype(int), Q[np.arange(len(s)), top])
    true = float(np.mean(np.abs(c - s)))
    print(f"\ntrue CE of the confidence (exact posterior, {a.holdout:,} predictions): {true:.4f}")
    print(f"recommended estimate {choice.recommended_estimate:.4f}: error "
          f"{abs(choice.recommended_estimate - true):.4f} (the worlds expected "
          f"{choice.ensemble_error:.5f})")
    for name in ("ece_es_cv", choice.evaluator, "beta", "platt"):
        est = fitontest.evaluate(probs, y_test, evaluator=name).estimate
        print(f"{name:12s} {est:.4f}: error {abs(est - true):.4f}")


if __name__ == "__main__":
    main()
