"""Speed of the batched PL / PL3 fit (GitHub issue 4).

A full cross-validated fit (10 folds x 1..16 pieces = 160 models, trained at
once) on n = 10,000 synthetic points, for pl_ce and pl3_ce, per backend
(numba: the CPU default; torch: the CUDA path, also runnable on the CPU) and
thread count, against the same code training one model at a time. The
one-at-a-time total is estimated: a few (fold, k) models are trained alone,
their time per epoch is averaged, and multiplied by the epochs every model of
the batched fit trained (a model alone trains exactly as in the batch: same
data, batches and stops). Kernels are compiled (or loaded from numba's cache)
before timing.

    python benchmarks/speed/pl_speed.py                        # numba, one thread (the default)
    python benchmarks/speed/pl_speed.py --threads 1 2          # one line per thread count
    python benchmarks/speed/pl_speed.py --backend numba torch  # both backends
    python benchmarks/speed/pl_speed.py --device cuda --backend torch
    python benchmarks/speed/pl_speed.py --optimizer adam lbfgs    # also the L-BFGS optimiser (numba)

``--optimizer lbfgs`` (docs/methods/04-pl.md §4.8) has no one-at-a-time estimate:
its models are trained one at a time anyway (rows of one compiled loop).
"""
from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--families", nargs="+", default=["pl_ce", "pl3_ce"])
    ap.add_argument("--threads", type=int, nargs="+", default=[1],
                    help="torch intra-op threads of the fit (default 1, the family's default)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--backend", nargs="+", default=["auto"], choices=["auto", "numba", "torch"])
    ap.add_argument("--optimizer", nargs="+", default=["adam"], choices=["adam", "lbfgs"])
    ap.add_argument("--alone", type=int, default=4,
                    help="models trained alone to estimate the one-at-a-time total")
    ap.add_argument("--shape", default="beta1")
    ap.add_argument("--ce", type=float, default=0.05)
    args = ap.parse_args()

    import torch

    from fitontest import families
    from fitontest.data.synthetic import sample
    from fitontest.families.pl.trainer import resolve_backend
    from fitontest.core.runtime import resolve_device
    from fitontest.core.selection import kfold_indices

    s, y, _ = sample(args.shape, args.ce, args.n, seed=0)
    dev = resolve_device(args.device)
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else platform.processor() or "cpu"
    print(f"device: {dev} ({name}); torch {torch.__version__}; os.cpu_count()={os.cpu_count()}; "
          f"torch threads default={torch.get_num_threads()}; load avg={os.getloadavg()[0]:.1f}")
    print(f"data: synthetic {args.shape} CE={args.ce}, n={args.n}")
    for fam_name, opt, backend, threads in [(f, o, b, t) for f in args.families
                                            for o in args.optimizer
                                            for b in args.backend for t in args.threads]:
        # compile (or load) the kernels outside the timing: a tiny fit
        families.get(fam_name, device=args.device, n_threads=threads, backend=backend,
                     max_epochs=2, max_knots=1, optimizer=opt).fit(s[:400], y[:400])
        fam = families.get(fam_name, device=args.device, n_threads=threads, backend=backend,
                           optimizer=opt)
        t0, c0 = time.perf_counter(), time.process_time()
        fam.fit(s, y)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        n_models = fam.n_epochs_.size
        epochs = int(fam.n_epochs_.sum())
        head = (f"{fam_name:7s} {opt:5s} {resolve_backend(backend, dev):5s} "
                f"threads={threads or torch.get_num_threads()}: batched CV fit "
                f"({n_models} models, {epochs} model-{'epochs' if opt == 'adam' else 'passes'}, "
                f"max {fam.n_epochs_.max()}) wall {wall:6.2f} s (cpu {cpu:6.2f} s), "
                f"chose {fam.n_pieces_} pieces")
        if opt == "lbfgs":
            print(head)
            continue
        # one model at a time with the same code: a few (fold, k) alone
        trainer = fam._trainer()
        folds = kfold_indices(args.n, fam.n_folds, fam.seed)
        rng = np.random.default_rng(0)
        picks = [(int(rng.integers(len(folds))), int(k))
                 for k in np.linspace(0, len(fam.candidates_) - 1, args.alone).round()]
        per_epoch = []
        for g, k in picks:
            t1 = time.perf_counter()
            res = trainer.fit(s, y, [folds[g][0]], [k], n_batches=4, group_ids=[g],
                              pad_knots=len(fam.candidates_) - 1)
            per_epoch.append((time.perf_counter() - t1) / int(res.n_epochs[0, 0]))
            assert res.n_epochs[0, 0] == fam.n_epochs_[g, k]
        alone = float(np.mean(per_epoch)) * epochs
        print(f"{head}; one at a time ~{alone:7.1f} s (est. from {len(picks)} models, "
              f"{1e3 * np.mean(per_epoch):.2f} ms/epoch); ratio {alone / wall:5.1f}x")


if __name__ == "__main__":
    main()
