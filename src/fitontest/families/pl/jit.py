"""``njit`` for the PL kernels: numba's, with compilation serialised across processes.

numba's on-disk cache (``cache=True``) is not safe when several processes
compile the same functions at once: each process numbers the callees it
compiles in its own order, the cache files they write can disagree, and a
process that later loads the mixed files crashes with a segmentation fault
(numba issues #4807 and #10128). A fresh clone's ``snakemake --cores 2``
starts two PL jobs at once on an empty cache, and the 2026-11-24 rehearsal
lost two ``calibrate_binary`` jobs to SIGSEGV that way.

So every compilation of a kernel -- which is also where numba loads it from
the cache -- holds an exclusive lock on a file beside the cache
(``NUMBA_CACHE_DIR`` or this package's ``__pycache__``; the temporary
directory where neither is writable). The first process compiles and writes
a consistent set; the others wait, then load it. A kernel already compiled in
a process is called without the lock, so the lock costs nothing after the
first call of each signature. No lock on systems without ``fcntl`` (Windows).
"""
from __future__ import annotations

import os
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path

import numba

try:
    import fcntl
except ImportError:         # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

_LOCAL = threading.RLock()  # one thread of this process at a time
_DEPTH = 0                  # nested compilations (callees) reuse the held lock


def lock_path() -> Path:
    """The lock file every process compiling these kernels agrees on."""
    for base in (os.environ.get("NUMBA_CACHE_DIR"), Path(__file__).parent / "__pycache__"):
        if base:
            try:
                Path(base).mkdir(parents=True, exist_ok=True)
                path = Path(base, "fitontest-pl-compile.lock")
                path.touch(exist_ok=True)
                return path
            except OSError:
                continue
    return Path(tempfile.gettempdir(), "fitontest-pl-compile.lock")


@contextmanager
def compile_lock():
    """Hold the inter-process compile lock (re-entrant within a process)."""
    global _DEPTH
    with _LOCAL:
        fd = None
        if _DEPTH == 0 and fcntl is not None:
            fd = os.open(lock_path(), os.O_RDWR | os.O_CREAT, 0o666)
            fcntl.flock(fd, fcntl.LOCK_EX)
        _DEPTH += 1
        try:
            yield
        finally:
            _DEPTH -= 1
            if fd is not None:
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)


def njit(*args, **options):
    """``numba.njit`` (same options) whose compilations hold :func:`compile_lock`."""
    def wrap(func):
        dispatcher = numba.njit(**options)(func)
        compile_ = dispatcher.compile

        # numba calls ``self.compile`` for a new signature, from a direct call
        # and when compiling a caller, so the instance attribute covers both
        def compile(sig):
            with compile_lock():
                return compile_(sig)

        dispatcher.compile = compile
        return dispatcher

    if args and callable(args[0]) and not options:
        return wrap(args[0])
    return wrap
