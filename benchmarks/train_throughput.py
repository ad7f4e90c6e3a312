"""Training and inference throughput (images/s) per architecture on this device.

    python benchmarks/train_throughput.py                 # device auto
    python benchmarks/train_throughput.py --device cpu --threads 2 --models resnet8 wrn10_2

One training step = the real step of ``fitontest.vision.train`` (gather from the
uint8 device tensor, standardise, batched shift+flip augmentation, forward,
backward, Nesterov SGD; bf16 autocast + channels_last on CUDA). Inference =
``predict_logits`` on uint8 images. On CUDA the script also prints the epoch
times of the paper recipes (45,000 training images) and the time to export
logits of a 1M hold-out, extrapolated from the measured rates.
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch
import torch.nn.functional as F

from fitontest import models
from fitontest.vision.recipes import get_recipe
from fitontest.core.runtime import resolve_device
from fitontest.vision.export import predict_logits
from fitontest.vision.images import augment_batch, normalise as _normalise

CPU_DEFAULT = ["cnn_tiny", "resnet8", "resnet20", "densenet10", "densenet_small",
               "wrn10_2", "wrn16_2", "resnet110"]
CUDA_DEFAULT = ["resnet8", "densenet_small", "wrn16_2", "resnet110", "densenet40", "wrn32"]
PAPER_RECIPE = {"resnet110": "resnet110", "densenet40": "densenet40", "wrn32": "wrn32"}


def _sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def train_rate(name: str, dev: torch.device, batch: int, seconds: float, pad_mode: str = "zeros") -> float:
    cuda = dev.type == "cuda"
    torch.manual_seed(0)
    model = models.get(name).to(dev).train()
    if cuda:
        model = model.to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, nesterov=True, weight_decay=5e-4)
    n = max(4 * batch, 2048)
    g = torch.Generator().manual_seed(0)
    Xd = torch.randint(0, 256, (n, 3, 32, 32), dtype=torch.uint8, generator=g).to(dev)
    yd = torch.randint(0, 10, (n,), generator=g).to(dev)
    mean = torch.full((1, 3, 1, 1), 120.0, device=dev)
    std = torch.full((1, 3, 1, 1), 60.0, device=dev)

    def step():
        idx = torch.randint(0, n, (batch,), generator=g)
        shifts = torch.randint(-4, 5, (batch, 2), generator=g)
        flips = torch.rand(batch, generator=g) < 0.5
        idx = idx.to(dev)
        xb = augment_batch(_normalise(Xd[idx], mean, std), shifts, flips, 4, pad_mode)
        if cuda:
            xb = xb.contiguous(memory_format=torch.channels_last)
        with torch.autocast(device_type=dev.type, dtype=torch.bfloat16, enabled=cuda):
            out = model(xb)
        loss = F.cross_entropy(out.float(), yd[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    for _ in range(3 if cuda else 1):  # warm-up (cuDNN autotune, allocator)
        step()
    _sync(dev)
    done, t0 = 0, time.perf_counter()
    while True:
        step()
        done += 1
        if done >= 2:
            _sync(dev)
            if time.perf_counter() - t0 >= seconds:
                break
    return done * batch / (time.perf_counter() - t0)


def infer_rate(name: str, dev: torch.device, batch: int, seconds: float) -> float:
    torch.manual_seed(0)
    model = models.get(name).to(dev).eval()
    if dev.type == "cuda":
        model = model.to(memory_format=torch.channels_last)
    X = np.random.default_rng(0).integers(0, 256, (batch, 32, 32, 3), dtype=np.uint8)
    predict_logits(model, X, [120.0] * 3, [60.0] * 3, batch_size=batch, device=dev)
    _sync(dev)
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
    ap.add_argument("--batch", type=int, default=128, help="training batch size")
    ap.add_argument("--infer-batch", type=int, default=None)
    ap.add_argument("--seconds", type=float, default=None, help="measuring time per model and mode")
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    args = ap.parse_args()

    dev = resolve_device(args.device)
    cuda = dev.type == "cuda"
    if args.threads:
        torch.set_num_threads(args.threads)
    names = args.models or (CUDA_DEFAULT if cuda else CPU_DEFAULT)
    secs = args.seconds or (5.0 if cuda else 3.0)
    ib = args.infer_batch or (1024 if cuda else 256)
    where = torch.cuda.get_device_name(dev) if cuda else (
        f"CPU, {torch.get_num_threads()} torch threads, {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.1f}")
    print(f"device: {dev} ({where}); torch {torch.__version__}; "
          f"train batch {args.batch}, inference batch {ib}, ~{secs:g}s per measurement")
    print(f"{'model':16s} {'params':>11s} {'train img/s':>12s} {'infer img/s':>12s} "
          f"{'s/epoch@5k':>11s} {'s/epoch@45k':>12s}")
    rates = {}
    for name in names:
        tr = train_rate(name, dev, args.batch, secs, "reflect" if name == "wrn32" else "zeros")
        inf = infer_rate(name, dev, ib, secs)
        rates[name] = (tr, inf)
        print(f"{name:16s} {models.count_parameters(models.get(name)):11,d} {tr:12.0f} {inf:12.0f} "
              f"{5000 / tr:11.1f} {45000 / tr:12.1f}", flush=True)

    paper = [n for n in names if n in PAPER_RECIPE]
    if cuda and paper:
        print("\npaper recipes on 45,000 training images (extrapolated from train batch "
              f"{args.batch}; DenseNet-40's recipe uses batch 64, so re-run with --batch 64 for it):")
        for name in paper:
            r = get_recipe(PAPER_RECIPE[name])
            tr, inf = rates[name]
            ep = 45000 / tr
            print(f"  {name:11s} {ep:7.1f} s/epoch x {r['epochs']} epochs = {ep * r['epochs'] / 3600:5.2f} h; "
                  f"1M-image logit export ≈ {1e6 / inf / 60:5.1f} min")


if __name__ == "__main__":
    main()
