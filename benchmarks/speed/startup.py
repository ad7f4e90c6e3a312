"""Start-up time of the front door: `fitontest --help`, `fitontest evaluate` on
a small file (1000 x 10 softmax probabilities), `fitontest families`, and what
each spends its import time on.

With ``--python`` of a virtual environment that has fitontest installed, its
console script (``bin/fitontest``) is timed: what a user runs. Otherwise each
command is run as that script runs it (``from fitontest_cli import main;
sys.exit(main())``, or ``fitontest.cli:main`` in a checkout from before the
entry point moved) with ``--src`` (default: this repository's src/) first on
the path. Prints, per command, the median wall and CPU (user + sys) seconds of
``--repeat`` warm runs (a first run, which fills the OS file cache and writes
the bytecode cache, is not counted; PYTHONDONTWRITEBYTECODE is dropped so that
a source tree is as warm as an installed package), then the largest
cumulative ``python -X importtime`` entries of the ``--help`` and ``evaluate``
runs.

    python benchmarks/speed/startup.py                       # median of 5
    python benchmarks/speed/startup.py --src /path/to/other/checkout/src     # before / after
    python benchmarks/speed/startup.py --python /path/to/venv/bin/python     # installed

On a loaded machine the wall times grow with the load; the CPU times vary less.
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


HEAVY = ("numpy", "scipy.stats", "pandas", "pyarrow", "sklearn", "sklearn.base", "matplotlib",
         "torch", "numba")


def timed(cmd: list[str], env: dict) -> tuple[float, float]:
    """(wall, user + sys CPU) seconds of one run of ``cmd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def median_of(cmd: list[str], env: dict, repeat: int) -> tuple[float, float, list[float]]:
    """Median wall, median CPU and every wall time of ``repeat`` warm runs."""
    timed(cmd, env)                                   # warm-up: not counted
    runs = [timed(cmd, env) for _ in range(repeat)]
    walls = [r[0] for r in runs]
    return statistics.median(walls), statistics.median(r[1] for r in runs), walls


def import_shares(cmd: list[str], env: dict, top: int) -> tuple[float, int, list]:
    """(total import seconds, modules imported, the ``top`` largest cumulative
    entries) of one run of ``cmd`` (an interpreter command line) under
    ``-X importtime``: fitontest's own modules and those imported at the top
    level, and the big third-party packages wherever they are first imported."""
    err = subprocess.run([cmd[0], "-X", "importtime", *cmd[1:]], env=env, capture_output=True,
                         text=True).stderr
    rows, total, count = {}, 0, 0
    for line in err.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
        if not m:
            continue
        count += 1
        total += int(m.group(1))
        depth = (len(m.group(3)) - 1) // 2
        if depth == 0 or m.group(4) in HEAVY or m.group(4).startswith("fitontest"):
            rows.setdefault(m.group(4), int(m.group(2)) / 1e6)
    return total / 1e6, count, sorted(((s, n) for n, s in rows.items()), reverse=True)[:top]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", default=sys.executable, help="interpreter to time")
    ap.add_argument("--repeat", type=int, default=5, help="warm runs per command (median)")
    ap.add_argument("--top", type=int, default=8, help="import rows to print per command")
    ap.add_argument("--src", help="put this source tree first on PYTHONPATH (default: this "
                    "repository's src/ when timing this interpreter)")
    args = ap.parse_args(argv)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    src = Path(__file__).resolve().parents[2] / "src"
    installed = Path(args.python).with_name("fitontest")
    if args.src or args.python == sys.executable:
        env["PYTHONPATH"] = str(args.src or src)
    else:                                  # time what is installed there, not a checkout
        env.pop("PYTHONPATH", None)
    has_entry = subprocess.run([args.python, "-c", "import importlib.util as u, sys; "
                                "sys.exit(u.find_spec('fitontest_cli') is None)"],
                               env=env).returncode == 0
    entry = "fitontest_cli" if has_entry else "fitontest.cli"
    if "PYTHONPATH" not in env and installed.is_file():
        script, how = [str(installed)], f"console script {installed}"
    else:
        script = [args.python, "-c", f"import sys; from {entry} import main; sys.exit(main())"]
        how = f"{args.python}, {entry}:main, PYTHONPATH={env['PYTHONPATH']}"
    with tempfile.TemporaryDirectory() as tmp:
        rng = np.random.default_rng(0)
        probs = rng.dirichlet(np.ones(10), size=1000)
        small = str(Path(tmp) / "small.npz")
        np.savez(small, probs=probs, labels=rng.integers(0, 10, 1000))
        cases = {"python -c pass": [args.python, "-c", "pass"],
                 "fitontest --help": [*script, "--help"],
                 "fitontest evaluate small.npz (n=1000, K=10)": [*script, "evaluate", small],
                 "fitontest families": [*script, "families"]}
        print(f"median of {args.repeat} warm runs; {how}")
        for name, cmd in cases.items():
            wall, cpu, walls = median_of(cmd, env, args.repeat)
            print(f"  {name:<45} wall {wall:5.2f} s   cpu {cpu:5.2f} s   "
                  f"(walls {' '.join(f'{w:.2f}' for w in sorted(walls))})")
        probe = [args.python, "-c", f"import sys; from {entry} import main; sys.exit(main())"]
        for name, rest in (("fitontest --help", ["--help"]),
                           ("fitontest evaluate small.npz (n=1000, K=10)", ["evaluate", small])):
            total, count, rows = import_shares([*probe, *rest], env, args.top)
            print(f"python -X importtime, {name}: {count} modules, {total:.3f} s in all; "
                  "largest cumulative (s):")
            for seconds, module in rows:
                print(f"  {seconds:6.3f}  {module}")
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
