"""``fitontest jobs RESULTS``: a run's jobs, CPU, wall and memory;
``fitontest pins``: the CPU pins this machine gets."""
from __future__ import annotations

from fitontest.core import pins
from fitontest.study import jobstats

def cmd_jobs(args) -> int:
    return jobstats.run(args)


def cmd_pins(args) -> int:
    return pins.main(env=args.env)


__all__ = ["cmd_jobs", "cmd_pins"]
