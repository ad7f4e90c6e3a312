"""Wall, CPU seconds and peak memory of ``fitontest.evaluate`` on n = 1M x K = 10
probabilities (issue 58: the front door reads its input once).

Each measurement is a fresh process that loads the same seeded (n, K) float64
probabilities (written once by a child of its own, so that making them does not
count), calls ``fitontest.evaluate`` on 2,000 of the rows (its lazy imports
done) and then measures ``fitontest.evaluate(probs, labels, evaluator=E,
mode=M)`` (its default test, Kuiper). Two kinds of run per case:

- ``time``: wall and CPU seconds of the call, the process's peak resident
  memory (``ru_maxrss``: interpreter, imports, the inputs and the call) and
  that peak less the resident memory before the call (what the call added);
- ``trace``: the call's peak of traced allocations above its start
  (``tracemalloc``: numpy's buffers included), in a run of its own since
  tracing slows the call.

``--src PATH`` (repeatable) runs the same cases against other source trees
(each PATH put first on ``PYTHONPATH``: a clone's ``src``), so a change can be
compared with its base on one machine, in one sitting:

    python benchmarks/speed/evaluate_memory.py [--src /tmp/before58/src --src src]
        [--n 1000000] [--k 10] [--evaluators ece_es15,ece_es_cv] [--mode confidence]
        [--repeats 3]

Timings are the fastest of ``--repeats`` runs (memory is the same each run);
run it on an idle machine (it prints the load average).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from common import REPO  # noqa: E402

#: the measuring child: argv = npz, evaluator, mode, how ("time" or "trace"); prints JSON
CHILD = r"""
import gc, json, resource, sys, time
import numpy as np
import fitontest

npz, evaluator, mode, how = sys.argv[1:5]
with np.load(npz) as d:
    probs, labels = d["probs"], d["labels"]
# a first call on 2,000 rows does the lazy imports (scipy, scikit-learn, the
# family's module), so that the measured call is the call alone
fitontest.evaluate(probs[:2000], labels[:2000], evaluator=evaluator, mode=mode)
gc.collect()

def rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2 ** 20

out = {"src": fitontest.__file__}
if how == "trace":
    import tracemalloc
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    res = fitontest.evaluate(probs, labels, evaluator=evaluator, mode=mode)
    out["traced_peak_mib"] = (tracemalloc.get_traced_memory()[1] - base) / 2 ** 20
    tracemalloc.stop()
else:
    before = rss_mib()
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    res = fitontest.evaluate(probs, labels, evaluator=evaluator, mode=mode)
    wall, r1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF)
    peak = r1.ru_maxrss / 1024
    out.update(wall=wall, cpu=r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime,
               peak_rss_mib=peak, added_mib=peak - before)
out["estimate"] = res.estimate
print(json.dumps(out))
"""


def write_case(path: Path, n: int, k: int, seed: int = 0) -> None:
    """Seeded softmax probabilities (n, K) and labels drawn from a tempered softmax
    of the same logits (an over-confident model), as benchmarks/speed/interval_memory.py."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 2.0
    z[np.arange(n), rng.integers(0, k, n)] += 2.0
    probs = np.exp(z - z.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    true = np.exp(0.7 * (z - z.max(axis=1, keepdims=True)))
    true /= true.sum(axis=1, keepdims=True)
    labels = (true.cumsum(axis=1) < rng.random((n, 1))).sum(axis=1)
    np.savez(path, probs=probs, labels=np.minimum(labels, k - 1))


def child(src: Path, npz: Path, evaluator: str, mode: str, how: str) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(src)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    # run from the npz's folder: the current directory must not shadow the tree measured
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", CHILD, str(npz), evaluator,
                           mode, how], env=env, cwd=npz.parent, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{src}: {evaluator} failed:\n{done.stderr[-2000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    if not Path(out["src"]).resolve().is_relative_to(src):
        raise SystemExit(f"{src}: the child imported fitontest from {out['src']}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", action="append", type=Path,
                    help="a source tree to measure (repeatable; default: this checkout's src)")
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--evaluators", default="ece_es15,ece_es_cv")
    ap.add_argument("--mode", default="confidence")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--write", nargs=3, metavar=("NPZ", "N", "K"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.write:
        write_case(Path(args.write[0]), int(args.write[1]), int(args.write[2]))
        return
    trees = [p.resolve() for p in (args.src or [REPO / "src"])]
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; n = {args.n:,}, "
          f"K = {args.k}, mode {args.mode}, test kuiper (evaluate's default); "
          f"fastest of {args.repeats} runs\n")
    print("wall / CPU: seconds of the call; RSS: the process's peak resident MiB; +RSS: "
          "that peak less the\nresident MiB before the call; traced: the call's peak of "
          "traced allocations, MiB\n")
    head = (f"{'tree':34s}{'evaluator':12s}{'wall':>8s}{'CPU':>8s}{'RSS':>8s}{'+RSS':>8s}"
            f"{'traced':>8s}  estimate")
    print(head + "\n" + "-" * len(head))
    with tempfile.TemporaryDirectory() as tmp:
        npz = Path(tmp) / "probs.npz"
        # written by a child: making the data must not count in any measured process
        subprocess.run([sys.executable, __file__, "--write", str(npz), str(args.n),
                        str(args.k)], check=True)
        for src in trees:
            for name in args.evaluators.split(","):
                runs = [child(src, npz, name, args.mode, "time") for _ in range(args.repeats)]
                traced = child(src, npz, name, args.mode, "trace")["traced_peak_mib"]
                best = min(runs, key=lambda r: r["wall"])
                label = str(src) if len(str(src)) <= 33 else "..." + str(src)[-30:]
                print(f"{label:34s}{name:12s}{best['wall']:8.2f}{best['cpu']:8.2f}"
                      f"{max(r['peak_rss_mib'] for r in runs):8.0f}"
                      f"{max(r['added_mib'] for r in runs):8.0f}{traced:8.0f}  "
                      f"{best['estimate']:.6g}", flush=True)


if __name__ == "__main__":
    main()
