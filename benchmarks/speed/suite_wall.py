"""Wall of the README's test command (``pytest -n auto --dist loadfile``, with
pyproject's ``-m 'not slow'``) in a given tree, so that a before/after on one
machine compares like with like (issue 58: at most 5 minutes on 2 cores).

Runs pytest in ``--dir`` (a checkout; its ``src/`` is put first on
``PYTHONPATH``, for the test process, the xdist workers and every Snakemake
job they start) with ``--durations=0`` and prints

* the wall seconds of the whole command;
* its CPU-seconds: user + system of every child process (pytest, its workers
  and their subprocesses: Snakemake controllers and jobs), from this process's
  children rusage, so idle waits and the workers' contention do not count;
* the passed / skipped / failed / error counts of pytest's summary line;
* the 10 files of the largest summed durations (setup + call + teardown of
  their tests): with ``--dist loadfile`` a file runs on one worker, so the
  largest file bounds the wall from below whatever the number of workers.

``--json`` writes the same figures; arguments after ``--`` replace the
README's (``-- -m slow`` times the slow set).

    git clone -q /path/to/repo /tmp/before && git -C /tmp/before checkout -q OLD
    python benchmarks/speed/suite_wall.py --dir /tmp/before
    python benchmarks/speed/suite_wall.py --dir . --json /tmp/after.json

Run it on an otherwise idle machine: the wall grows with any load.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

#: the README's test command, after ``python -m pytest``
README_ARGS = ["-n", "auto", "--dist", "loadfile"]
#: a --durations line: "12.34s call     tests/test_x.py::test_y[param]"
DURATION = re.compile(r"^(\d+(?:\.\d+)?)s (setup|call|teardown)\s+(\S+?\.py)::", re.MULTILINE)
#: pytest's summary: "== 1023 passed, 12 skipped, 40 deselected in 301.2s =="
COUNT = re.compile(r"(\d+) (passed|skipped|failed|errors?|deselected|xfailed|xpassed)")


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def file_totals(text: str) -> dict[str, float]:
    """Summed --durations seconds per test file (setup + call + teardown)."""
    totals: dict[str, float] = defaultdict(float)
    for seconds, _phase, path in DURATION.findall(text):
        totals[path] += float(seconds)
    return dict(totals)


def counts(text: str) -> dict[str, int]:
    """pytest's summary counts from its last line of them, "== ... in 301.2s ==" (or
    without the '=' under -q); 'error' and 'errors' as one."""
    summary = [line for line in text.splitlines()
               if COUNT.search(line) and re.search(r" in \d+(\.\d+)?s", line)]
    if not summary:
        return {}
    return {kind.rstrip("s") if kind.startswith("error") else kind: int(n)
            for n, kind in COUNT.findall(summary[-1])}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", type=Path, required=True, help="checkout to run in (its src/ is used)")
    ap.add_argument("--python", default=sys.executable,
                    help="interpreter with the test dependencies (default: this one)")
    ap.add_argument("--log", type=Path, help="also write pytest's whole output here")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("extra", nargs="*", help="pytest arguments replacing the README's (after --)")
    args = ap.parse_args(argv)
    workdir = args.dir.resolve()
    if not (workdir / "tests").is_dir():
        ap.error(f"--dir {workdir} has no tests/ folder: give a checkout of the repository")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(workdir / "src"),
                                         *filter(None, [env.get("PYTHONPATH")])])
    cmd = [args.python, "-m", "pytest", *(args.extra or README_ARGS), "-p", "no:cacheprovider",
           "--durations=0", "--durations-min=0"]
    cpu0, t0 = children_cpu(), time.perf_counter()
    proc = subprocess.run(cmd, check=False, cwd=workdir, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    wall, cpu = time.perf_counter() - t0, children_cpu() - cpu0
    if args.log:
        args.log.write_text(proc.stdout)
    files = sorted(file_totals(proc.stdout).items(), key=lambda kv: -kv[1])
    got = counts(proc.stdout)
    machine = f"{platform.node()} {os.cpu_count()} cores"
    print(f"{' '.join(cmd[1:])}  in {workdir}")
    print(f"exit {proc.returncode}  wall {wall:.1f} s  CPU {cpu:.1f} s (children)  "
          f"({machine})")
    print("  ".join(f"{k} {v}" for k, v in got.items()) or "no pytest summary line")
    print(f"slowest files (summed durations; the slowest bounds the wall), of {len(files)}:")
    for path, seconds in files[:10]:
        print(f"  {seconds:8.1f} s  {path}")
    if proc.returncode not in (0, 5) and not got:
        print(proc.stdout[-3000:])
    if args.json:
        args.json.write_text(json.dumps(
            {"dir": str(workdir), "command": cmd[1:], "exit": proc.returncode,
             "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "counts": got,
             "files_s": {p: round(s, 1) for p, s in files}, "machine": machine}, indent=1) + "\n")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
