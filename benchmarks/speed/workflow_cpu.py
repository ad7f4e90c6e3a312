"""CPU of a whole ``snakemake --cores N`` run: the controller's own CPU and the
jobs', measured from the run itself, so a before/after on one machine compares
like with like.

Runs Snakemake in this process (``snakemake.cli.main``) in ``--dir`` (a fresh
clone of the checkout to measure, whose ``src/`` is put first on the path of
the controller and of every job), then prints wall seconds, the controller's
CPU-seconds (user + system of this process: DAG, input functions, metadata,
scheduling), the jobs' CPU-seconds (user + system of every child process) and
their sum, plus the machine reference line (``benchmarks/speed/pl_speed.py``'s timed
fits are not rerun here; run it on the same box). ``--json`` writes the same
figures.

    git clone -q /path/to/repo /tmp/before && git -C /tmp/before checkout -q OLD
    python benchmarks/speed/workflow_cpu.py --dir /tmp/before --cores 2
    python benchmarks/speed/workflow_cpu.py --dir /tmp/after --cores 2 -- --configfile config/tabular.yaml

Run it on an otherwise idle machine: CPU-seconds grow under oversubscription
(numba and BLAS threads spin), wall grows with any load.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time
from pathlib import Path


def cpu(who: int) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", type=Path, required=True, help="checkout to run in (its src/ is used)")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("extra", nargs="*", help="further snakemake arguments (after --)")
    args = ap.parse_args(argv)
    workdir = args.dir.resolve()
    json_path = args.json.resolve() if args.json else None
    src = str(workdir / "src")
    # the jobs are python subprocesses: they see the checkout through PYTHONPATH
    os.environ["PYTHONPATH"] = os.pathsep.join([src, *filter(None, [os.environ.get("PYTHONPATH")])])
    sys.path.insert(0, src)
    os.chdir(workdir)
    from snakemake.cli import main as snakemake_main

    before_self, before_children = cpu(resource.RUSAGE_SELF), cpu(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    try:
        snakemake_main(["--cores", str(args.cores), *args.extra])
        rc = 0
    except SystemExit as e:
        rc = int(e.code or 0)
    wall = time.perf_counter() - t0
    controller = cpu(resource.RUSAGE_SELF) - before_self
    jobs = cpu(resource.RUSAGE_CHILDREN) - before_children
    out = {"dir": str(workdir), "args": args.extra, "cores": args.cores, "exit": rc,
           "wall_s": round(wall, 1), "controller_cpu_s": round(controller, 1),
           "jobs_cpu_s": round(jobs, 1), "total_cpu_s": round(controller + jobs, 1),
           "machine": f"{platform.node()} {os.cpu_count()} cores"}
    print(f"exit {rc}  wall {wall:.1f} s  CPU: controller {controller:.1f} s + jobs {jobs:.1f} s"
          f" = {controller + jobs:.1f} s  ({out['machine']})")
    if json_path:
        json_path.write_text(json.dumps(out, indent=1) + "\n")
    return rc


if __name__ == "__main__":
    sys.exit(main())
