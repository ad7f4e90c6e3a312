"""Start-up time of the front door: `fitontest --help`, `fitontest evaluate` on
a small file, and what `import fitontest` spends its time on.

Prints, for each command, the wall and CPU (user + sys) seconds of the best
of ``--repeat`` warm runs (the first run, which fills the OS file cache, is
not counted), then the largest cumulative import times of
``python -X importtime -c "import fitontest.cli"``.

    python benchmarks/startup.py --repeat 7
    python benchmarks/startup.py --python /path/to/core-venv/bin/python
    python benchmarks/startup.py --src /path/to/other/checkout/src     # before / after

On a loaded machine the wall times vary with the load; the CPU times and the
import shares vary less.
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


HEAVY = ("numpy", "scipy.stats", "pandas", "pyarrow", "sklearn.base", "matplotlib", "torch",
         "numba")


def timed(cmd: list[str], env: dict) -> tuple[float, float]:
    """(wall, user + sys CPU) seconds of one run of ``cmd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def best(cmd: list[str], env: dict, repeat: int) -> tuple[float, float]:
    timed(cmd, env)                                   # warm-up: not counted
    runs = [timed(cmd, env) for _ in range(repeat)]
    return min(r[0] for r in runs), min(r[1] for r in runs)


def import_shares(python: str, env: dict, top: int) -> list[tuple[float, str]]:
    err = subprocess.run([python, "-X", "importtime", "-c", "import fitontest.cli"], env=env,
                         capture_output=True, text=True, check=True).stderr
    rows = {}
    for line in err.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+(\d+) \|(\s*)(\S+)", line)
        # fitontest's own modules near the top, and the big third-party packages
        # wherever they are first imported
        if m and (len(m.group(2)) <= 5 or m.group(3) in HEAVY):
            rows.setdefault(m.group(3), int(m.group(1)) / 1e6)
    return sorted(((s, name) for name, s in rows.items()), reverse=True)[:top]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", default=sys.executable, help="interpreter to time")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--top", type=int, default=10, help="import rows to print")
    ap.add_argument("--src", help="put this source tree first on PYTHONPATH (default: this "
                    "repository's src/ when timing this interpreter)")
    args = ap.parse_args(argv)
    env = {**os.environ}
    src = Path(__file__).resolve().parents[1] / "src"
    if args.src or args.python == sys.executable:
        env["PYTHONPATH"] = str(args.src or src)
    with tempfile.TemporaryDirectory() as tmp:
        rng = np.random.default_rng(0)
        probs = rng.dirichlet(np.ones(10), size=1000)
        np.savez(Path(tmp) / "small.npz", probs=probs, labels=rng.integers(0, 10, 1000))
        cli = [args.python, "-m", "fitontest.cli"]
        cases = {"python -c pass": [args.python, "-c", "pass"],
                 "fitontest --help": [*cli, "--help"],
                 "fitontest evaluate small.npz (n=1000, K=10)":
                     [*cli, "evaluate", str(Path(tmp) / "small.npz")]}
        print(f"best of {args.repeat} warm runs, {args.python}")
        for name, cmd in cases.items():
            wall, cpu = best(cmd, env, args.repeat)
            print(f"  {name:<45} wall {wall:5.2f} s   cpu {cpu:5.2f} s")
    print("largest cumulative import times of `import fitontest.cli` (s):")
    for seconds, module in import_shares(args.python, env, args.top):
        print(f"  {seconds:6.3f}  {module}")
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
