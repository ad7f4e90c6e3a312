"""Every lever of the fast training path on one GPU, in one call: the table of issue 50.

    PYTHONPATH=src PYTHONUNBUFFERED=1 python3 benchmarks/training/gpu_fast_path.py --out "$OUT"
    python benchmarks/training/gpu_fast_path.py --dry-run          # CPU, tiny sizes: the script end to end

Phases, in this order, each a child process so that a variant that breaks the
CUDA context costs only its phase; results are appended to ``results.jsonl``
under ``--out`` as they come, so a run stopped at its limit still reports:

A. cheap levers (no compilation) for ResNet-110 (batch 128), DenseNet-40 (64)
   and WideNet32 (128): eager (today's path), device_data, + fused SGD, the
   whole step in a CUDA graph, and the graph in float32 / channels-first;
B. the same-training check: ResNet-110's first epoch on the rehearsal's 45k
   procedural images through ``train_model``, eager and fast, seeds 0 and 1:
   loss after each tenth of the epoch, training and validation accuracy;
   then the logit export (generate + infer) of the eager model: 100,000
   hold-out images, and the full 1M only where it would end by 45 % of the
   budget (else the 1M time is projected from the 100k rate);
D. torch.compile variants by priority, each skipped when its estimated cost
   would overrun ``--budget-s`` less C's 70 s (the first compile's measured
   cost rescales the estimates);
C. several trainings on the GPU at once (one process each; 4 by default),
   eager and graphed.

Each variant runs the real ``train_one_epoch`` twice on a synthetic training
set of ``--steps`` batches: epoch 1 warms up (cuDNN autotuning, compilation),
epoch 2 is timed (wall and CPU seconds, after a device sync). s/epoch is
projected to the paper's 45,000 images, and the recipe's hours from it.
Prints one table and writes ``gpu_fast_path.md`` under ``--out``.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # benchmarks/common.py
from common import cuda_sync  # noqa: E402

PAPER = {"resnet110": 128, "densenet40": 64, "wrn32": 128}      # model: the recipe's batch
TINY = {"resnet8": 32, "densenet10": 16, "wrn10_1": 32}         # --dry-run stand-ins
N_PAPER = 45_000
G = {"device_data": True, "fused_optimizer": True, "cuda_graph": True}
DF = {"device_data": True, "fused_optimizer": True}
CHEAP = {      # in the order phase A runs them, each for every network before the next
    "eager": {},
    "graph": G,
    "device_data": {"device_data": True},
    "device_data+fused": DF,
    "graph fp32": {**G, "precision": "fp32"},
    "graph channels-first": {**G, "channels_last": False},
}
# (model, variant, options, guessed seconds on an H100: compile + two short epochs);
# m0, m1, m2: the first, second and third network
COMPILED = [
    ("m0", "compile+graph", {**G, "compile": "default"}, 100),     # cold: fills inductor's cache
    ("m0", "compile", {**DF, "compile": "default"}, 40),
    ("m0", "compile reduce-overhead", {**DF, "compile": "reduce-overhead"}, 40),
    ("m1", "compile+graph", {**G, "compile": "default"}, 120),
    ("m2", "compile+graph", {**G, "compile": "default"}, 90),
    ("m0", "compile step", {**DF, "compile": "default", "compile_scope": "step"}, 150),
    ("m0", "max-autotune-no-cudagraphs+graph", {**G, "compile": "max-autotune-no-cudagraphs"}, 240),
    ("m1", "compile reduce-overhead", {**DF, "compile": "reduce-overhead"}, 40),
    ("m2", "compile reduce-overhead", {**DF, "compile": "reduce-overhead"}, 40),
]

# every variant by name (train_throughput.py and paper_path.py take one with --fast)
NAMED = {**CHEAP, **{v: o for _, v, o, _ in COMPILED}}


def _emit(out: Path, **row) -> None:
    with open(out / "results.jsonl", "a") as f:
        f.write(json.dumps(row) + "\n")
    print("  " + json.dumps(row), flush=True)


def _recipe(model: str, bs: int):
    from fitontest.vision.recipes import RECIPES, get_recipe
    return get_recipe(RECIPES[model] if model in RECIPES else "small", batch_size=bs)



def time_variant(model: str, bs: int, opts: dict, args, dev, log=lambda m: None) -> dict:
    """Two epochs of ``args.steps`` batches through train_one_epoch: warm-up, timed."""
    import torch
    from fitontest.vision import fast, train

    recipe = _recipe(model, bs)
    rng = np.random.default_rng(0)
    n = args.steps * bs
    X = rng.integers(0, 256, (n, 32, 32, 3), dtype=np.uint8)
    y = rng.integers(0, 10, n)
    o = fast.usable(fast.fast_options(opts), dev, log)
    if dev.type == "cuda":
        torch.backends.cudnn.benchmark = True
        torch.cuda.reset_peak_memory_stats(dev)
    t0 = time.perf_counter()
    net, opt = train.build(model, 10, 0, recipe, dev, channels_last=o.channels_last,
                           fused=o.fused_optimizer)
    data = train._Batches(X, y, recipe, dev, channels_last=o.channels_last)
    step = fast.TrainStep(net, opt, data, o, log=log)
    gen = torch.Generator().manual_seed(0)
    warm = train.train_one_epoch(net, opt, data, recipe, 0, gen, step=step)
    cuda_sync(dev)
    setup = time.perf_counter() - t0
    c0, t1 = time.process_time(), time.perf_counter()
    row = train.train_one_epoch(net, opt, data, recipe, 1, gen, step=step)
    cuda_sync(dev)
    wall, cpu = time.perf_counter() - t1, time.process_time() - c0
    per_step = wall / data.steps
    epoch = per_step * (N_PAPER // bs)
    return {"s_per_step": per_step, "s_per_epoch": epoch, "img_s": bs / per_step,
            "cpu_per_epoch": cpu / data.steps * (N_PAPER // bs), "setup_s": setup,
            "recipe_h": epoch * recipe["epochs"] / 3600, "epochs": recipe["epochs"],
            "loss": row["loss"], "warm_loss": warm["loss"], "options": o.describe(),
            "peak_gib": (torch.cuda.max_memory_allocated(dev) / 2**30
                         if dev.type == "cuda" else None)}


def phase_variants(args, dev, out: Path, jobs: list, deadline: float) -> None:
    """Time each (model, variant, options, estimate) of ``jobs`` that fits before ``deadline``."""
    import torch

    scale = 1.0
    for model, name, opts, guess in jobs:
        bs = args.models[model]
        if time.time() + guess * scale > deadline:
            _emit(out, kind="variant", model=model, batch=bs, variant=name,
                  skipped=f"budget (estimated {guess * scale:.0f} s)")
            continue
        torch._dynamo.reset()
        t0 = time.time()
        try:
            res = time_variant(model, bs, opts, args, dev, log=lambda m: print("   ", m))
            _emit(out, kind="variant", model=model, batch=bs, variant=name, **res)
            if opts.get("compile") and scale == 1.0:     # the first compile: rescale guesses
                scale = max(0.5, min(4.0, (time.time() - t0) / guess))
        except Exception as exc:      # one broken lever must not cost the others
            _emit(out, kind="variant", model=model, batch=bs, variant=name,
                  error=f"{type(exc).__name__}: {str(exc)[:300]}")
        gc.collect()                  # a TrainStep is a reference cycle holding its graph's pool
        if dev.type == "cuda":
            torch.cuda.empty_cache()


def phase_check(args, dev, out: Path) -> None:
    """ResNet-110's first epoch, eager and fast, seeds 0 and 1; then the export."""
    import tempfile

    import torch
    import yaml
    from fitontest.data import sources, split
    from fitontest.vision import train
    from fitontest.vision.export import export_logits, load_model, predict_logits

    config = yaml.safe_load(Path("config/rehearsal.yaml").read_text())
    config["split"].update(n_train=args.check_train, n_val=args.check_val,
                           n_holdout=args.export_images)
    source = sources.open_source(config)
    parts = split.split_for_source(config, source)
    t0 = time.perf_counter()
    X, y = source.load(parts["train"])
    Xv, yv = source.load(parts["val"])
    _emit(out, kind="note", what=f"generated {len(y):,} + {len(yv):,} rehearsal images",
          seconds=time.perf_counter() - t0)
    model = args.check_model
    recipe = _recipe(model, args.models[model])
    with tempfile.TemporaryDirectory() as tmp:
        eager_model = None
        for label, opts in [("eager", None)] + [(v, NAMED[v]) for v in args.check_variants]:
            for seed in args.check_seeds:
                torch._dynamo.reset()
                d = Path(tmp) / f"{label}-{seed}"
                t0 = time.perf_counter()
                path = train.train_model(model, X, y, recipe=recipe, out_dir=d, device=dev,
                                         seed=seed, max_epochs=1, log=lambda m: None,
                                         progress=False, fast=opts)
                wall = time.perf_counter() - t0
                net, meta = load_model(path, dev)
                acc = float((predict_logits(net, Xv, meta["mean"], meta["std"],
                                            batch_size=1024, device=dev).argmax(1) == yv).mean())
                h = meta["history"][0]
                _emit(out, kind="check", path=label, seed=seed, loss=h["loss"],
                      train_acc=h["accuracy"], val_acc=acc, epoch_s=h["seconds"],
                      call_s=wall, tenths=h["loss_tenths"])
                eager_model = eager_model or path
        del X, y
        # the export: a first block to time the rate, the full size if it fits
        for n in sorted({min(args.export_images, 100_000), args.export_images}):
            if n > 100_000 and time.time() + n / rate * 1.2 > args.export_deadline:
                _emit(out, kind="export", images=n, skipped="budget")
                continue
            t0 = time.perf_counter()
            export_logits(eager_model, source, parts["holdout"][:n], Path(tmp) / "holdout.npz", device=dev,
                          batch_size=2048, log=lambda m: None, progress=False)
            secs = time.perf_counter() - t0
            rate = n / secs
            _emit(out, kind="export", images=n, seconds=secs, img_s=rate,
                  projected_1m_s=1e6 / rate)


def _share_worker(model, bs, opts, args, dev_name, barrier, queue):
    import torch
    from fitontest.vision import fast, train

    dev = torch.device(dev_name)
    recipe = _recipe(model, bs)
    rng = np.random.default_rng(os.getpid())
    n = args.steps * bs
    X = rng.integers(0, 256, (n, 32, 32, 3), dtype=np.uint8)
    o = fast.usable(fast.fast_options(opts), dev, print)
    torch.backends.cudnn.benchmark = dev.type == "cuda"
    net, opt = train.build(model, 10, 0, recipe, dev, channels_last=o.channels_last,
                           fused=o.fused_optimizer)
    data = train._Batches(X, rng.integers(0, 10, n), recipe, dev, channels_last=o.channels_last)
    step = fast.TrainStep(net, opt, data, o, log=print)
    gen = torch.Generator().manual_seed(0)
    train.train_one_epoch(net, opt, data, recipe, 0, gen, step=step)
    cuda_sync(dev)
    barrier.wait()
    t0 = time.time()
    train.train_one_epoch(net, opt, data, recipe, 1, gen, step=step)
    cuda_sync(dev)
    queue.put((t0, time.time(), data.steps * bs))


def phase_share(args, dev, out: Path) -> None:
    """k processes, each training one network at once: images/s of all together."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    model = args.check_model
    bs = args.models[model]
    for name in args.share_variants:
        for k in args.share:
            barrier, queue = ctx.Barrier(k), ctx.Queue()
            procs = [ctx.Process(target=_share_worker,
                                 args=(model, bs, NAMED[name], args, str(dev), barrier, queue))
                     for _ in range(k)]
            for p in procs:
                p.start()
            try:
                got = [queue.get(timeout=args.share_timeout) for _ in procs]
            except Exception as exc:
                _emit(out, kind="share", model=model, variant=name, procs=k,
                      error=f"{type(exc).__name__}: {exc}")
                for p in procs:
                    p.kill()
                continue
            for p in procs:
                p.join()
            wall = max(e for _, e, _ in got) - min(s for s, _, _ in got)
            img_s = sum(i for _, _, i in got) / wall
            _emit(out, kind="share", model=model, batch=bs, variant=name, procs=k,
                  img_s=img_s, s_per_epoch_each=N_PAPER / (img_s / k))


def child(args) -> None:
    """One phase in this process (--phase)."""
    import torch
    from fitontest.core.runtime import resolve_device

    dev = resolve_device(args.device)
    out = Path(args.out)
    if args.phase == "A":
        _emit(out, kind="env", torch=torch.__version__, cpus=os.cpu_count(),
              device=torch.cuda.get_device_name(dev) if dev.type == "cuda" else "CPU")
        jobs = [(m, v, o, 20) for v, o in CHEAP.items() for m in args.models]
        phase_variants(args, dev, out, jobs, deadline=args.deadline)
    elif args.phase == "B":
        phase_check(args, dev, out)
    elif args.phase == "C":
        phase_share(args, dev, out)
    elif args.phase == "D":
        names = list(args.models)
        jobs = [(names[int(m[1])], v, {**o, "compile_backend": args.compile_backend}, g)
                for m, v, o, g in COMPILED if int(m[1]) < len(names)]
        phase_variants(args, dev, out, jobs, deadline=args.deadline)
    cuda_sync(dev)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="auto")
    ap.add_argument("--out", default=os.environ.get("OUT") or "gpu_fast_path_out")
    ap.add_argument("--dry-run", action="store_true",
                    help="CPU, tiny networks and sizes: the whole script in a few minutes")
    ap.add_argument("--budget-s", type=float, default=420.0,
                    help="wall seconds for all phases (compile variants are skipped to fit)")
    ap.add_argument("--steps", type=int, default=40, help="batches per timed epoch")
    ap.add_argument("--check-train", type=int, default=N_PAPER)
    ap.add_argument("--check-val", type=int, default=5000)
    ap.add_argument("--check-seeds", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--check-variants", nargs="+", default=["graph"], choices=sorted(NAMED))
    ap.add_argument("--export-images", type=int, default=1_000_000)
    ap.add_argument("--share", type=int, nargs="*", default=[4], help="processes at once")
    ap.add_argument("--share-variants", nargs="*", default=["eager", "graph"],
                    choices=sorted(NAMED))
    ap.add_argument("--share-timeout", type=float, default=120.0)
    ap.add_argument("--compile-backend", default="inductor")
    ap.add_argument("--phases", default="ABDC", help="phases to run, in this order")
    ap.add_argument("--phase", help=argparse.SUPPRESS)
    ap.add_argument("--deadline", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--export-deadline", type=float, help=argparse.SUPPRESS)
    args, small = ap.parse_args(), []
    if args.dry_run:         # tiny sizes first, so that flags given still win
        small = ["--device", "cpu", "--steps", "3", "--check-train", "512", "--check-val", "256",
                 "--export-images", "3000", "--share", "2", "--share-variants", "graph"]
        args = ap.parse_args(small + sys.argv[1:])
    args.models = dict(TINY if args.dry_run else PAPER)
    args.check_model = next(iter(args.models))
    if args.phase:
        return child(args)

    import subprocess

    extra = (small if args.dry_run else []) + sys.argv[1:]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.jsonl").unlink(missing_ok=True)
    start = time.time()
    end = start + args.budget_s
    # deadlines: A's cheap variants by 25 % of the budget, B's full export only
    # if done by 45 %, D's compile variants leave C (several processes) 70 s
    deadlines = {"A": start + 0.25 * args.budget_s, "B": end, "C": end, "D": end - 70}
    for phase in args.phases:
        deadline = deadlines[phase]
        cmd = [sys.executable, __file__, *extra, "--out", str(out), "--phase", phase,
               "--deadline", str(deadline), "--export-deadline", str(start + 0.45 * args.budget_s)]
        print(f"== phase {phase} ({time.time() - start:.0f} s into the run)", flush=True)
        rc = subprocess.call(cmd)
        if rc:
            _emit(out, kind="note", what=f"phase {phase} exited with {rc}")
    from gpu_fast_path_report import report     # beside this script
    text = report(out / "results.jsonl", args, time.time() - start)
    (out / "gpu_fast_path.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
