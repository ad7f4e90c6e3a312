"""Throughput of the procedural image source (issue 6 target: 10^6 images < 60 s).

Streams the images block by block (one block of ``block_size`` images in
memory at a time, nothing kept), so the run also shows that generation does
not need to hold the data set. Prints wall and CPU time: on a shared machine
the CPU time of this process is the better measure of the generator itself.

    python benchmarks/speed/procedural_speed.py [--n 1000000] [--seed 2026]
"""
from __future__ import annotations

import argparse
import resource
import sys
import time

import numpy as np

from fitontest.data.procedural import DEFAULTS, ProceduralSource

TARGET_S = 60.0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="images to generate")
    ap.add_argument("--seed", type=int, default=DEFAULTS["seed"])
    args = ap.parse_args(argv)

    src = ProceduralSource(args.n, seed=args.seed)
    src.load(np.arange(1))                       # noise bank, imports: not timed
    checksum = 0
    count = 0
    t0, c0 = time.perf_counter(), time.process_time()
    for _, X, y in src.iter_blocks():
        count += len(y)
        checksum = (checksum + int(X[:, 0, 0, 0].sum()) + int(y.sum())) % (1 << 61)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    full = args.n * 32 * 32 * 3 / 2**20

    print(f"procedural source: {count:,} images (block_size {src.block_size:,}, "
          f"seed {args.seed})")
    print(f"wall  {wall:7.1f} s   {count / wall:10,.0f} images/s")
    print(f"cpu   {cpu:7.1f} s   {count / cpu:10,.0f} images/s (this process)")
    print(f"peak RSS {peak_mb:,.0f} MiB (the {count:,} images are {full:,.0f} MiB)")
    print(f"checksum {checksum}")
    per_million = wall * 1e6 / count
    verdict = "OK" if per_million < TARGET_S else "SLOWER THAN TARGET"
    print(f"target: 1,000,000 images in < {TARGET_S:.0f} s; this run: {per_million:.1f} s "
          f"per million (wall) -> {verdict}")
    return 0 if per_million < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
