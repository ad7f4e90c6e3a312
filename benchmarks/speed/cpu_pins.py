"""What changes with the CPU, and what pinning it costs (fitontest/core/pins.py).

Runs one probe per part of the pipeline in a fresh process — a small network's
two training epochs (DenseNet-10, 400 procedural images, one thread), one
export, a PL3 and a PL fit, numpy's float64 exp / log / power, argsort of
ties, an OpenBLAS product — on this CPU, on an AVX2 laptop emulated by the
libraries' own variables (the instruction sets it offers oneDNN, ATen, MKL,
numpy and OpenBLAS, and numba's code for a Haswell) and, with ``--qemu``, on
qemu's Intel Haswell (``qemu-x86_64 -cpu Haswell-v4``: its CPUID, caches and
vendor; numba compiles there, in a cache of its own), each with the pins off
(``FITONTEST_PINS=0``: the libraries choose by the host) and on. It prints
each probe's hash per condition, whether the two CPUs agree, and the CPU
seconds of every probe pinned and unpinned on this CPU (best of ``--repeat``),
the pins' cost. Thread counts are the second half: DenseNet-10's weights with
1 and 2 torch threads, an OpenBLAS dot product with 1 and 2 threads.

    python benchmarks/record.py speed/cpu_pins.py
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

from fitontest.core import pins

LAPTOP = {"ONEDNN_MAX_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "avx2",
          "MKL_ENABLE_INSTRUCTIONS": "AVX2", "OPENBLAS_CORETYPE": "Haswell",
          "NPY_DISABLE_CPU_FEATURES": pins.PINS["NPY_DISABLE_CPU_FEATURES"],
          "NUMBA_CPU_NAME": "haswell", "NUMBA_CPU_FEATURES": ""}

PROBE = r"""
import hashlib, json, sys, tempfile, time
import fitontest
import numpy as np
import torch
from fitontest.data.procedural import ProceduralSource
from fitontest.families import get
from fitontest.vision.export import export_logits
from fitontest.vision.train import train_model

threads = int(sys.argv[1])
def h(a):
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:12]
out, cpu = {}, {}
def timed(name, f):
    t = time.process_time(); v = f(); cpu[name] = time.process_time() - t; out[name] = h(v)
src = ProceduralSource(3000, seed=2026, beta=20.0, mix_prob=0.25)
X, y = src.load(np.arange(400))
with tempfile.TemporaryDirectory() as d:
    def train():
        p = train_model("densenet10", X, y, recipe="small_overfit", out_dir=d, device="cpu",
                        seed=0, max_epochs=2, num_threads=threads, log=lambda *a: None,
                        progress=False)
        sd = torch.load(p, weights_only=False)["state_dict"]
        return np.concatenate([sd[k].numpy().ravel().astype(np.float64) for k in sorted(sd)])
    timed("train 2 epochs", train)
    def export():
        export_logits(f"{d}/model.pt", src, np.arange(400, 2400), f"{d}/x.npz", device="cpu",
                      batch_size=64, log=lambda *a: None, progress=False, num_threads=1)
        return np.load(f"{d}/x.npz")["logits"]
    timed("export 2000", export)
rng = np.random.default_rng(0)
s = rng.beta(2, 1, 3000); lab = (rng.random(3000) < s ** 1.3).astype(float)
grid = np.linspace(0, 1, 1001)
timed("pl3_ce fit", lambda: get("pl3_ce").fit(s, lab).predict(grid))
timed("pl_ce fit", lambda: get("pl_ce").fit(s, lab).predict(grid))
x = rng.normal(0, 10, 1_000_000)
timed("numpy exp/log/power", lambda: np.exp(x / 10) + np.log(np.abs(x) + 1) + np.power(np.abs(x), 1.7))
timed("argsort of ties", lambda: np.argsort(np.round(rng.random(100_000), 2)))
A = rng.normal(size=(2000, 300))
timed("BLAS A.T @ A", lambda: A.T @ A)
timed("BLAS dot", lambda: np.array([x @ x]))
print(json.dumps({"hash": out, "cpu": cpu}))
"""


def probe(extra: dict, pinned: bool, threads: int = 1, blas_threads: int = 1,
          qemu: str | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in pins.PINS}
    env.update(extra, FITONTEST_PINS="1" if pinned else "0", OMP_NUM_THREADS=str(threads),
               OPENBLAS_NUM_THREADS=str(blas_threads), MKL_NUM_THREADS=str(blas_threads))
    cmd = [sys.executable, "-c", PROBE, str(threads)]
    if qemu:
        cmd = [qemu, "-cpu", "Haswell-v4", *cmd]
        env["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="numba-qemu-")
    run = subprocess.run(cmd, env=env, text=True, capture_output=True, check=False)
    if run.returncode != 0:
        raise SystemExit(run.stderr[-3000:])
    return json.loads(run.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per timed condition (best)")
    ap.add_argument("--qemu", action="store_true", help="also on qemu's Intel Haswell "
                    "(qemu-user; about 10 minutes a run)")
    args = ap.parse_args(argv)
    qemu = shutil.which("qemu-x86_64") if args.qemu else None
    if args.qemu and qemu is None:
        ap.error("--qemu needs qemu-x86_64 (Debian: qemu-user)")
    print(f"host: {pins.host()['model']} (x86-64-v3: {pins.host()['x86_64_v3']}, "
          f"AVX-512: {pins.host()['avx512']}); {pins.statement().split(';', 1)[1].strip()}\n")
    runs = {(cpu, pinned): [probe(env, pinned) for _ in range(args.repeat if cpu == "here" else 1)]
            for cpu, env in (("here", {}), ("laptop", LAPTOP)) for pinned in (False, True)}
    others = ["laptop"]
    if qemu:
        others.append("qemu Haswell")
        for pinned in (False, True):
            runs[("qemu Haswell", pinned)] = [probe({}, pinned, qemu=qemu)]
    names = list(runs[("here", True)][0]["hash"])
    for pinned in (False, True):
        print(f"Pins {'on' if pinned else 'off'}: each probe's hash (sha256, 12 hex digits)\n")
        print("| probe | here | " + " | ".join(f"{o} | same" for o in others) + " |")
        print("| --- | --- |" + " --- | --- |" * len(others))
        for n in names:
            a = runs[("here", pinned)][0]["hash"][n]
            cells = [f"{b} | {'yes' if a == b else 'NO'}"
                     for b in (runs[(o, pinned)][0]["hash"][n] for o in others)]
            print(f"| {n} | {a} | " + " | ".join(cells) + " |")
        print()
    print("\nCPU seconds on this CPU (best of {}), pins off → on:\n".format(args.repeat))
    print("| probe | pins off | pins on | on / off |")
    print("| --- | ---: | ---: | ---: |")
    tot = [0.0, 0.0]
    for n in names:
        off = min(r["cpu"][n] for r in runs[("here", False)])
        on = min(r["cpu"][n] for r in runs[("here", True)])
        tot[0] += off
        tot[1] += on
        print(f"| {n} | {off:.3f} | {on:.3f} | {on / off:.2f} |")
    print(f"| all probes | {tot[0]:.3f} | {tot[1]:.3f} | {tot[1] / tot[0]:.2f} |")
    one, two = probe({}, True, threads=1), probe({}, True, threads=2)
    b1, b2 = probe({}, True, blas_threads=1), probe({}, True, blas_threads=2)
    print("\nThread counts, pins on (torch threads for training; OpenBLAS threads for BLAS):\n")
    print("| probe | 1 thread | 2 threads | same |")
    print("| --- | --- | --- | --- |")
    for n, x, y in (("train 2 epochs", one, two), ("export 2000", one, two),
                    ("BLAS A.T @ A", b1, b2), ("BLAS dot", b1, b2)):
        p, q = x["hash"][n], y["hash"][n]
        print(f"| {n} | {p} | {q} | {'yes' if p == q else 'NO'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
