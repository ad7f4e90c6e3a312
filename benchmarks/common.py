"""What the benchmark scripts share: the repository's root, the CPU seconds of a
process with its children, and a CUDA synchronisation before a clock is read.

The scripts live in folders by question (benchmarks/README.md) and are run as
``python benchmarks/FOLDER/NAME.py``; one that needs these puts this folder on
``sys.path`` first (two lines at its top), as tests/conftest.py's
``load_benchmark`` does. Hence a folder here must not be named like an
importable package: benchmarks/coverage/ made numba's ``import coverage`` find
it (tests/test_benchmarks_index.py checks).
"""
from __future__ import annotations

import resource
import subprocess
from pathlib import Path

#: the repository's root
REPO = Path(__file__).resolve().parents[1]


def process_cpu_seconds() -> float:
    """User + system CPU seconds of this process and its finished children
    (DataLoader workers, subprocesses)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def cuda_sync(device) -> None:
    """Wait for a CUDA device's queued work (a no-op elsewhere), so that a clock
    read after it times the work, not its launch."""
    if getattr(device, "type", None) == "cuda":
        import torch

        torch.cuda.synchronize(device)


def commit() -> str:
    """This checkout's short commit, for a measured file's header ("unknown"
    outside git)."""
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, text=True,
                              capture_output=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
