"""families/pl/jit.py: compiling a PL kernel waits for any other process that
compiles (numba's cache is not safe under concurrent compilation: numba issues
#4807, #10128, a SIGSEGV in the 2026-11-24 rehearsal); a compiled kernel is
called without waiting; a caller's compilation of its callees does not
deadlock on the lock it already holds."""
import subprocess
import sys
import time

import pytest

pytest.importorskip("numba")

HOLDER = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
open(sys.argv[2], "w").close()          # holding
time.sleep(float(sys.argv[4]))
open(sys.argv[3], "w").close()          # about to release
fcntl.flock(fd, fcntl.LOCK_UN)
"""


def _hold(lock, tmp_path, tag, seconds=1.5):
    held, released = tmp_path / f"held{tag}", tmp_path / f"released{tag}"
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock), str(held), str(released),
                             str(seconds)])
    deadline = time.monotonic() + 60
    while not held.exists():
        assert proc.poll() is None and time.monotonic() < deadline, "lock holder did not start"
        time.sleep(0.02)
    return proc, released


@pytest.mark.skipif(sys.platform == "win32", reason="no fcntl: no lock on Windows")
def test_compilation_waits_for_another_process_and_calls_do_not(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    from fitontest.families.pl import jit

    lock = jit.lock_path()
    assert lock.parent == tmp_path / "cache"

    @jit.njit
    def inner(x):
        return x + 1.0

    @jit.njit(error_model="numpy")
    def outer(x):
        return inner(x) * 2.0

    proc, released = _hold(lock, tmp_path, 1)
    assert outer(1.0) == 4.0                # compiles outer and inner: must wait
    assert released.exists(), "compiled while another process held the compile lock"
    proc.wait(timeout=60)

    proc, released = _hold(lock, tmp_path, 2)
    assert outer(2.0) == 6.0                # compiled already: no wait
    assert not released.exists(), "a compiled kernel waited for the compile lock"
    proc.wait(timeout=60)
