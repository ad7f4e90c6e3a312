"""BLAS thread limit for fits made of many small linear-algebra calls.

Spline and PL_DE fits run hundreds of tall-and-skinny solves (n x <= 20):
multi-threaded BLAS gains nothing on them, and on a loaded machine its thread
hand-offs make them several times slower (measured: spline CV 0.4 s with one
BLAS thread vs 2.6 s with two on a busy 2-core box). The limit is scoped to the
fit (``threadpoolctl``, an sklearn dependency) and restored afterwards.
"""
from __future__ import annotations

from contextlib import contextmanager


@contextmanager
def single_blas_thread():
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - sklearn always ships it
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield
