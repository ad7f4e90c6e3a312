"""Run a benchmark script and keep what it printed as its measured file.

    python benchmarks/record.py speed/pl_speed.py [--out FILE] [-- ARGS...]

runs ``python benchmarks/speed/pl_speed.py ARGS`` and writes
``benchmarks/measured/pl_speed.md`` (``--out`` to name another): the command,
the date, the machine (cores, load average before the run), the run's wall and
CPU seconds (the script and its children), then its output verbatim. A script
that writes its own measured file (benchmarks/README.md says which) needs no
recording. The file is written only when the script exits 0, atomically.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import REPO  # noqa: E402


def machine() -> str:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"{platform.machine()} {os.cpu_count()} cores, load average {load} before the run"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("script", help="path under benchmarks/, e.g. speed/pl_speed.py")
    ap.add_argument("--out", type=Path, default=None, help="measured file to write")
    argv = sys.argv[1:] if argv is None else list(argv)
    # everything after the first "--" is the script's, options included
    cut = argv.index("--") if "--" in argv else len(argv)
    args = ap.parse_args(argv[:cut])
    extra = argv[cut + 1:]
    script = REPO / "benchmarks" / args.script
    if not script.is_file():
        ap.error(f"no script benchmarks/{args.script}")
    out = args.out or REPO / "benchmarks" / "measured" / f"{script.stem}.md"
    command = shlex.join(["python", f"benchmarks/{args.script}", *extra])
    where = machine()
    before = os.times()
    t0 = time.perf_counter()
    # the script runs with the CPU pins set from its start (fitontest/core/pins.py),
    # whatever it imports first: its numbers are those of the pinned code
    from fitontest.core import pins

    env = {**os.environ, **(pins.environment() if pins.enabled() else {})}
    run = subprocess.run([sys.executable, str(script), *extra], cwd=REPO, text=True, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    wall = time.perf_counter() - t0
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    sys.stdout.write(run.stdout)
    if run.returncode != 0:
        print(f"record: {command} exited {run.returncode}; {out} not written", file=sys.stderr)
        return run.returncode
    text = (f"# {script.stem}\n\n"
            f"`{command}` (recorded by `python benchmarks/record.py {args.script}"
            f"{' -- ' + shlex.join(extra) if extra else ''}`)\n\n"
            f"- date: {datetime.date.today().isoformat()}\n"
            f"- machine: {where}\n"
            f"- cost: {wall:.1f} s wall, {cpu:.1f} CPU-s\n\n"
            f"```\n{run.stdout.rstrip()}\n```\n")
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.write_text(text)
    tmp.replace(out)
    print(f"record: wrote {out.relative_to(REPO) if out.is_relative_to(REPO) else out}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
