"""Training and inference throughput (images/s) per architecture on this device, eager and fast.

    python benchmarks/training/train_throughput.py                 # device auto
    python benchmarks/training/train_throughput.py --device cpu --threads 2 --models resnet8 wrn10_2
    python benchmarks/training/train_throughput.py --device cuda --fast compile+graph

Training = two epochs of ``--steps`` batches of synthetic images through the
real ``fitontest.vision.train.train_one_epoch`` (gather from the uint8 device
tensor, standardise, batched shift+flip augmentation, forward, backward,
Nesterov SGD; bf16 autocast + channels_last on CUDA), the second timed: once
on the eager path and once on the fast path ``--fast`` (a variant of
``gpu_fast_path.py``, default ``graph``: device-side draws, fused SGD, the
step in a CUDA graph; docs/methods/08-networks.md §8.5), side by side. Inference =
``predict_logits`` on uint8 images. On CUDA the script also prints the epoch
times of the paper recipes (45,000 training images, both paths) and the time
to export logits of a 1M hold-out, extrapolated from the measured rates.
"""
from __future__ import annotations

import sys
from pathlib import Path
import argparse
import os
import time

import numpy as np
import torch

from fitontest import models
from fitontest.core.runtime import resolve_device
from fitontest.vision.export import predict_logits
from gpu_fast_path import NAMED, PAPER, time_variant      # beside this script

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # benchmarks/common.py
from common import cuda_sync  # noqa: E402

CPU_DEFAULT = ["cnn_tiny", "resnet8", "resnet20", "densenet10", "densenet_small",
               "wrn10_2", "wrn16_2", "resnet110"]
CUDA_DEFAULT = ["resnet8", "densenet_small", "wrn16_2", "resnet110", "densenet40", "wrn32"]



def infer_rate(name: str, dev: torch.device, batch: int, seconds: float) -> float:
    torch.manual_seed(0)
    model = models.get(name).to(dev).eval()
    if dev.type == "cuda":
        model = model.to(memory_format=torch.channels_last)
    X = np.random.default_rng(0).integers(0, 256, (batch, 32, 32, 3), dtype=np.uint8)
    predict_logits(model, X, [120.0] * 3, [60.0] * 3, batch_size=batch, device=dev)
    cuda_sync(dev)
    done, t0 = 0, time.perf_counter()
    while True:
        predict_logits(model, X, [120.0] * 3, [60.0] * 3, batch_size=batch, device=dev)
        done += 1
        if done >= 2 and time.perf_counter() - t0 >= seconds:
            break
    return done * batch / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="auto")
    ap.add_argument("--models", nargs="*", default=None)
    ap.add_argument("--batch", type=int, default=None,
                    help="training batch size (default: the paper recipe's, else 128)")
    ap.add_argument("--steps", type=int, default=None, help="batches per timed epoch (CUDA 40, CPU 3)")
    ap.add_argument("--fast", default="graph", choices=sorted(NAMED), help="the fast variant")
    ap.add_argument("--infer-batch", type=int, default=None)
    ap.add_argument("--seconds", type=float, default=None, help="inference measuring time per model")
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    args = ap.parse_args()

    dev = resolve_device(args.device)
    cuda = dev.type == "cuda"
    if args.threads:
        torch.set_num_threads(args.threads)
    names = args.models or (CUDA_DEFAULT if cuda else CPU_DEFAULT)
    secs = args.seconds or (5.0 if cuda else 3.0)
    ib = args.infer_batch or (1024 if cuda else 256)
    args.steps = args.steps or (40 if cuda else 3)
    where = torch.cuda.get_device_name(dev) if cuda else (
        f"CPU, {torch.get_num_threads()} torch threads, {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.1f}")
    print(f"device: {dev} ({where}); torch {torch.__version__}; {args.steps} timed training "
          f"batches per path, fast = {args.fast}; inference batch {ib}, ~{secs:g}s")
    print(f"{'model':16s} {'params':>11s} {'batch':>5s} {'eager img/s':>12s} {'fast img/s':>11s} "
          f"{'speedup':>8s} {'infer img/s':>12s} {'s/ep@45k eager':>15s} {'fast':>6s} "
          f"{'CPU-s/ep eager':>15s} {'fast':>6s}")
    rates = {}
    for name in names:
        bs = args.batch or PAPER.get(name, 128)
        eager = time_variant(name, bs, {}, args, dev)
        fast = time_variant(name, bs, NAMED[args.fast], args, dev, log=print)
        inf = infer_rate(name, dev, ib, secs)
        rates[name] = (eager, fast, inf)
        print(f"{name:16s} {models.count_parameters(models.get(name)):11,d} {bs:5d} "
              f"{eager['img_s']:12.0f} {fast['img_s']:11.0f} {eager['s_per_step'] / fast['s_per_step']:8.2f} "
              f"{inf:12.0f} {eager['s_per_epoch']:15.1f} {fast['s_per_epoch']:6.1f} "
              f"{eager['cpu_per_epoch']:15.1f} {fast['cpu_per_epoch']:6.1f}", flush=True)

    paper = [n for n in names if n in PAPER]
    if cuda and paper:
        print("\npaper recipes on 45,000 training images (each at its recipe's batch unless --batch):")
        tot = [0.0, 0.0]
        for name in paper:
            eager, fast, inf = rates[name]
            tot = [tot[0] + eager["recipe_h"], tot[1] + fast["recipe_h"]]
            print(f"  {name:11s} {eager['epochs']} epochs: eager {eager['s_per_epoch']:6.1f} s/epoch "
                  f"= {eager['recipe_h']:5.2f} h, {args.fast} {fast['s_per_epoch']:6.1f} s/epoch = "
                  f"{fast['recipe_h']:5.2f} h; 1M-image logit export ≈ {1e6 / inf / 60:5.1f} min")
        print(f"  together: eager {tot[0]:.2f} h, {args.fast} {tot[1]:.2f} h")


if __name__ == "__main__":
    main()
