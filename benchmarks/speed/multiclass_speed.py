"""Fit and apply time of every multi-class calibrator (issue 5 targets).

Fits each registered calibrator on 5,000 x 10 validation logits and applies
it to a 1,000,000 x 10 hold-out. Targets: fit < 2 s without cross-validation,
< 60 s with the CV grid (MS-ODIR, Dir-ODIR, Dir-L2); apply < 2 s. Prints wall
time and this process's CPU time (on a shared machine the CPU time is the
better measure of the code itself), the held-out NLL, and the load average.

    python benchmarks/speed/multiclass_speed.py [--n-val 5000] [--n-holdout 1000000] [--k 10]
                                          [--only temps vecs ...]
"""
from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np

from fitontest import multiclass
from fitontest.multiclass.base import mean_nll

FIT_TARGET_S = 2.0
FIT_CV_TARGET_S = 60.0
APPLY_TARGET_S = 2.0


def make_logits(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Overconfident, class-biased, slightly mixed logits; labels ~ true softmax."""
    rng = np.random.default_rng(seed)
    true = rng.normal(size=(n, k)) * 2.0
    true[:, : k // 3] += 0.5
    p = np.exp(true - true.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    y = (p.cumsum(axis=1) > rng.random((n, 1))).argmax(axis=1)
    mix = np.eye(k) * 2.5
    mix[0, 1], mix[k - 2, k - 1] = 0.8, -0.6
    z = true @ mix.T + np.linspace(-1.0, 1.0, k)
    return z.astype(np.float32), y


def timed(fn):
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w0, time.process_time() - c0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-val", type=int, default=5_000)
    ap.add_argument("--n-holdout", type=int, default=1_000_000)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", nargs="*", default=None, help="calibrator names (default: all)")
    args = ap.parse_args(argv)

    names = args.only or multiclass.names()  # also imports every calibrator module
    zv, yv = make_logits(args.n_val, args.k, args.seed)
    zh, yh = make_logits(args.n_holdout, args.k, args.seed + 1)
    multiclass.get("none").fit(zv, yv).predict_proba(zh[:1000])  # warm-up

    print(f"validation {zv.shape}, hold-out {zh.shape} (float32 logits), "
          f"{os.cpu_count()} CPUs, load average before: "
          + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    head = (f"{'calibrator':<10} {'CV':<3} {'fit wall s':>10} {'fit cpu s':>9} {'target':>7} "
            f"{'apply wall s':>12} {'apply cpu s':>11} {'target':>7} {'hold-out NLL':>12}  ok  chosen")
    print(head)
    print("-" * len(head))
    all_ok = True
    for name in names:
        est = multiclass.get(name)
        cv = "lambdas" in est.get_params()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est, fit_w, fit_c = timed(lambda: est.fit(zv, yv))
        probs, app_w, app_c = timed(lambda: est.predict_proba(zh))
        nll = mean_nll(np.log(np.maximum(probs, 1e-300)), yh)
        fit_t = FIT_CV_TARGET_S if cv else FIT_TARGET_S
        ok = fit_w < fit_t and app_w < APPLY_TARGET_S
        all_ok &= ok
        chosen = ", ".join(f"{a}={getattr(est, a):.3g}" for a in
                           ("temperature_", "lambda_", "mu_") if hasattr(est, a))
        if caught:
            chosen += f"  [{len(caught)} warning(s): {str(caught[0].message)[:60]}]"
        print(f"{name:<10} {'yes' if cv else 'no':<3} {fit_w:>10.2f} {fit_c:>9.2f} "
              f"{'<' + format(fit_t, 'g'):>7} {app_w:>12.2f} {app_c:>11.2f} "
              f"{'<' + format(APPLY_TARGET_S, 'g'):>7} {nll:>12.4f}  {'yes' if ok else 'NO':<3} {chosen}")
    print("load average after: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    print("all targets met" if all_ok else "SOME TARGETS MISSED (wall time; see CPU time and load)")
    return 0 if all_ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
