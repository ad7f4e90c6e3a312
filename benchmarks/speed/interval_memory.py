"""Time and peak memory of ``fitontest evaluate --interval 0.9`` for the binning
families at n = 1k / 10k / 100k / 1M (K = 10 classes, confidence task), issue #23.5.

Each case runs the CLI in a fresh process on an .npz of softmax probabilities
(over-confident: labels drawn from a tempered softmax of the same logits), and
prints the wall time and the process's peak resident memory (``ru_maxrss``,
everything included: interpreter, imports, the n x K input).

    python benchmarks/speed/interval_memory.py [--sizes 1000,10000,100000,1000000]
        [--families ece_es15,ece_es_sweep,ece_es_cv] [--timeout 600]

Target (#23.5): n = 1M within 2 GB and 30 s per binning family.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

CHILD = "import sys; from fitontest_cli import main; sys.exit(main(sys.argv[1:]))"


def write_case(path: Path, n: int, k: int = 10, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 2.0
    z[np.arange(n), rng.integers(0, k, n)] += 2.0
    probs = np.exp(z - z.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    true = np.exp(0.7 * (z - z.max(axis=1, keepdims=True)))       # tempered: over-confident
    true /= true.sum(axis=1, keepdims=True)
    labels = (true.cumsum(axis=1) < rng.random((n, 1))).sum(axis=1)
    np.savez(path, probs=probs, labels=np.minimum(labels, k - 1))


def measure(cmd: list[str], timeout: int) -> tuple[float, float, float, int]:
    """(wall seconds, CPU seconds, peak RSS in MiB, exit status) of one child
    process (the parent stays small: a forked child's peak counts its image)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    _, status, usage = os.wait4(proc.pid, 0)        # reaps the child with its rusage
    timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return (time.perf_counter() - t0, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024,
            proc.returncode)


def run(npz: Path, name: str, timeout: int) -> tuple[float, float, float, int]:
    return measure([sys.executable, "-c", CHILD, "evaluate", str(npz), "--labels-key",
                    "labels", "--evaluator", name, "--interval", "0.9"], timeout)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000,100000,1000000")
    ap.add_argument("--families", default="ece_es15,ece_es_sweep,ece_es_cv")
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--write", nargs=2, metavar=("NPZ", "N"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.write:
        write_case(Path(args.write[0]), int(args.write[1]))
        return
    sizes = [int(v) for v in args.sizes.split(",")]
    names = args.families.split(",")
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; K = 10, "
          "200 replicates (the default), level 0.9; wall and CPU seconds, peak RSS MiB\n")
    print(f"{'family':14s}" + "".join(f"{'n=' + format(n, ','):>24s}" for n in sizes))
    print(f"{'':14s}" + "".join(f"{'wall':>8s}{'CPU':>8s}{'MiB':>8s}" for _ in sizes))
    wall, cpu, peak, _ = measure([sys.executable, "-c", "import fitontest_cli.commands.evaluate, fitontest.api, "
                                  "fitontest.families.binning, fitontest.inference.intervals"],
                                 args.timeout)
    print(f"{'(imports only)':14s}{wall:8.1f}{cpu:8.1f}{peak:8.0f}")
    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        for n in sizes:                  # written by a child: the parent stays small
            files[n] = Path(tmp) / f"pred_{n}.npz"
            measure([sys.executable, __file__, "--write", str(files[n]), str(n)], args.timeout)
        for name in names:
            cells = []
            for n in sizes:
                wall, cpu, peak, code = run(files[n], name, args.timeout)
                cells.append(f"{wall:8.1f}{cpu:8.1f}{peak:8.0f}" if code == 0
                             else f"{'failed':>24s}")
            print(f"{name:14s}" + "".join(cells), flush=True)


if __name__ == "__main__":
    main()
