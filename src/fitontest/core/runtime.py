"""Thread limits and the compute device: one place for the whole library.

Thread limits, for the three thread pools the numerical code uses:

- :func:`limit_threads`: the job-wide limit of a workflow script (Snakemake's
  ``threads``), set once at its start and never restored;
- :func:`blas_threads`, :func:`torch_threads`, :func:`numba_threads`: a limit
  scoped to a block and restored afterwards, for fits whose speed depends on
  it. Fits made of many small linear-algebra calls (splines, PL_DE) or of
  small tensors (PL, IOP) gain nothing from threads, and on a loaded machine
  the thread hand-offs make them several times slower (measured on a busy
  2-core box: a spline CV 0.4 s with one BLAS thread vs 2.6 s with two; a
  torch PL fit 15-18x slower with two torch threads);
- :func:`set_torch_threads`: the process's torch setting, checked (training
  and export of the networks).

:func:`resolve_device` turns a device name into a ``torch.device``, with one
ValueError for a bad name and one for CUDA requested where there is none.
torch and numba are imported only when these are called.
"""
from __future__ import annotations

import contextlib
import numbers
import os
import sys
from typing import Iterator

__all__ = ["limit_threads", "blas_threads", "torch_threads", "numba_threads",
           "set_torch_threads", "resolve_device", "DeviceUnavailableError"]


def _check_count(n, name: str = "n_threads") -> int:
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f"{name} must be a positive integer, got {n!r}")
    return int(n)


# ------------------------------------------------------------------ threads
def limit_threads(n: int) -> None:
    """Run this job's numerical code on ``n`` threads (Snakemake's ``threads``),
    BLAS on one whatever ``n``.

    BLAS splits a dot product's or a matrix product's sums over its threads,
    and the split changes their last bits (benchmarks/measured/cpu_pins.md):
    one BLAS thread gives every job the same bytes under any profile's
    ``threads``. The threads go to numba, whose parallel loops here are over
    independent models (PL's), and to torch, which the CPU paths that change
    bytes with it (training, the export) cap at one thread themselves. Environment variables reach
    libraries loaded later (torch reads OMP_NUM_THREADS when first imported);
    threadpoolctl limits the BLAS that numpy has already loaded.
    """
    n = max(1, int(n))
    os.environ["OMP_NUM_THREADS"] = str(n)
    for var in ("MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = "1"
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits={"blas": 1, "openmp": n})
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(n)


@contextlib.contextmanager
def blas_threads(n: int) -> Iterator[None]:
    """BLAS (numpy/scipy linear algebra) on ``n`` threads inside the block."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=_check_count(n), user_api="blas"):
        yield


@contextlib.contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """torch on ``n`` intra-op threads inside the block (None: leave it)."""
    if n is None:
        yield
        return
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(_check_count(n))
    try:
        yield
    finally:
        torch.set_num_threads(old)


@contextlib.contextmanager
def numba_threads(n: int) -> Iterator[None]:
    """numba's parallel loops on ``n`` threads inside the block, capped at
    the threads numba started with (``NUMBA_NUM_THREADS``)."""
    import numba

    n = min(_check_count(n), int(numba.config.NUMBA_NUM_THREADS))  # type: ignore[attr-defined]
    old = numba.get_num_threads()
    numba.set_num_threads(n)
    try:
        yield
    finally:
        numba.set_num_threads(old)


def set_torch_threads(n: int | None) -> None:
    """Set the process's torch intra-op threads to ``n`` (None: leave them)."""
    if n is not None:
        import torch

        torch.set_num_threads(_check_count(n, "num_threads"))


# ------------------------------------------------------------------- device
class DeviceUnavailableError(ValueError, RuntimeError):
    """A device was requested that this machine does not have (a ValueError;
    also a RuntimeError, as torch's own errors for a missing device are)."""


def device_type(device="auto") -> str:
    """The type (``"cpu"``, ``"cuda"``, ...) of :func:`resolve_device`'s device;
    the string ``"cpu"`` without importing torch (2-4 CPU-s per process that
    only fits numba kernels, such as a workflow job's PL fits)."""
    if isinstance(device, str) and device.strip().lower() == "cpu":
        return "cpu"
    return resolve_device(device).type


def resolve_device(device="auto"):
    """``"auto"`` (CUDA when available, else the CPU), ``"cpu"``,
    ``"cuda"``/``"cuda:N"``, ``"mps"`` or a ``torch.device`` -> ``torch.device``.

    An unknown name -> ValueError; a device this machine lacks (CUDA, a CUDA
    index beyond the visible GPUs, MPS) -> :class:`DeviceUnavailableError`
    (a ValueError).
    """
    import torch

    if isinstance(device, torch.device):
        name = str(device)
    elif isinstance(device, str):
        name = device.strip().lower()
    else:
        raise ValueError(f"device must be 'auto', 'cpu' or 'cuda[:N]', got {device!r}")
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(name)
    except RuntimeError:
        raise ValueError(f"unknown device {device!r}; use 'auto', 'cpu' or 'cuda[:N]'") from None
    if dev.type == "cpu":
        return dev
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            built = ("without CUDA support" if torch.version.cuda is None
                     else "but no GPU is visible")
            raise DeviceUnavailableError(
                f"device {device!r} requested but CUDA is not available (torch "
                f"{torch.__version__} is built {built}); use device 'auto' or 'cpu'")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise DeviceUnavailableError(f"device {device!r} requested but only "
                                         f"{torch.cuda.device_count()} CUDA device(s) are visible")
        return dev
    if dev.type == "mps":
        if not torch.backends.mps.is_available():
            raise DeviceUnavailableError(f"device {device!r} requested but MPS is not available")
        return dev
    raise ValueError(f"unsupported device {device!r}; use 'auto', 'cpu' or 'cuda[:N]'")
