"""Logit export throughput (images/s) at 1, 2, ... worker processes (issue 27).

The export stage as the workflow runs it (``fitontest.vision.export.export_logits``
on procedural images: generation + inference, in blocks), for one network,
once per process count; each run writes its npz and the outputs are checked
equal byte for byte. The rehearsal's 1M hold-out time is extrapolated from
the rate.

    python benchmarks/training/export_speed.py                          # resnet8, 20,000 images, 1 and 2
    python benchmarks/training/export_speed.py --n 4000 --jobs 1 2 --chunk-size 1000
"""
from __future__ import annotations

import sys
import argparse
import os
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # benchmarks/common.py
from common import process_cpu_seconds  # noqa: E402



def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resnet8")
    ap.add_argument("--n", type=int, default=20_000, help="images exported")
    ap.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--chunk-size", type=int, default=5_000)
    ap.add_argument("--batch-size", type=int, default=2048)
    args = ap.parse_args()

    import numpy as np
    import torch

    from fitontest import models
    from fitontest.data.procedural import ProceduralSource
    from fitontest.vision.export import export_logits
    from fitontest.vision.train import save_model

    print(f"os.cpu_count()={os.cpu_count()}; load avg={os.getloadavg()[0]:.1f}; torch "
          f"{torch.__version__}; {args.model}, {args.n} procedural images, blocks of "
          f"{args.chunk_size}, batches of {args.batch_size}")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        torch.manual_seed(0)
        net = models.get(args.model, num_classes=10)
        meta = {"model_name": args.model, "num_classes": 10}
        save_model(tmp / "model.pt", meta, net, [120.0] * 3, [60.0] * 3, [], True)
        src = ProceduralSource(args.n)
        idx = np.arange(args.n)
        outs, rates = [], {}
        for jobs in args.jobs:
            out = tmp / f"logits{jobs}.npz"
            t0, c0 = time.perf_counter(), process_cpu_seconds()
            export_logits(tmp / "model.pt", src, idx, out, device="cpu",
                          batch_size=args.batch_size, chunk_size=args.chunk_size,
                          log=lambda s: None, progress=False, num_threads=jobs, n_jobs=jobs)
            wall, cpu = time.perf_counter() - t0, process_cpu_seconds() - c0
            rates[jobs] = args.n / wall
            outs.append(out.read_bytes())
            print(f"processes={jobs}: {wall:6.1f} s wall, {cpu:6.1f} s CPU (workers included), "
                  f"{rates[jobs]:7.0f} images/s; "
                  f"1M hold-out ~{1e6 / rates[jobs] / 60:5.1f} min")
        same = all(o == outs[0] for o in outs)
        base = rates[args.jobs[0]]
        print("speed-up vs", args.jobs[0], "process(es):",
              ", ".join(f"{j}: {r / base:.2f}x" for j, r in rates.items()),
              f"; outputs equal byte for byte: {same}")


if __name__ == "__main__":
    main()
