"""The same bytes on any x86-64 CPU (fitontest/core/pins.py): a second CPU
emulated on this one — qemu's Intel Haswell (AVX2, no AVX-512), and the
choices such a laptop's libraries make as their variables — gives
byte-identical weights of a small network after a training epoch, identical
PL3 estimates and identical numpy / BLAS results. Without the pins (the
libraries choosing by the host, as before them) the emulated laptop differs
in every part: the test can fail."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from fitontest.core import pins

# the choices a CPU with AVX2 and no AVX-512 makes on its own (a Haswell-class laptop),
# as the libraries' variables (MKL's vendor test cannot be emulated so: qemu below)
AVX2_LAPTOP = {"ONEDNN_MAX_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "avx2",
               "MKL_ENABLE_INSTRUCTIONS": "AVX2", "OPENBLAS_CORETYPE": "Haswell",
               "NPY_DISABLE_CPU_FEATURES": pins.PINS["NPY_DISABLE_CPU_FEATURES"],
               "NUMBA_CPU_NAME": "haswell", "NUMBA_CPU_FEATURES": ""}

# fitontest first: its import sets the pins before numpy, torch and numba load
HASHES = r"""
import hashlib, json
import fitontest
import numpy as np
import tempfile
import torch
from fitontest.data.procedural import ProceduralSource
from fitontest.families import get
from fitontest.vision.train import train_model

def h(a):
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:16]

out = {}
X, y = ProceduralSource(1000, seed=2026, beta=20.0, mix_prob=0.25).load(np.arange(128))
with tempfile.TemporaryDirectory() as d:
    path = train_model("densenet10", X, y, recipe="small_overfit", out_dir=d, device="cpu",
                       seed=0, max_epochs=1, num_threads=1, log=lambda *a: None,
                       progress=False)
    sd = torch.load(path, weights_only=False)["state_dict"]
    out["weights"] = h(np.concatenate([sd[k].numpy().ravel().astype(np.float64)
                                       for k in sorted(sd)]))
rng = np.random.default_rng(0)
s = rng.beta(2, 1, 1000); lab = (rng.random(1000) < s ** 1.3).astype(float)
out["pl3"] = h(get("pl3_ce").fit(s, lab).predict(np.linspace(0, 1, 101)))
x = rng.normal(0, 10, 10_000)
out["numpy_exp_log"] = h(np.exp(x) + np.log(np.abs(x) + 1))
A = rng.normal(size=(200, 100))
out["blas"] = h(A.T @ A)
print(json.dumps(out))
"""
QEMU = shutil.which("qemu-x86_64")


def _hashes(extra_env: dict, pinned: bool = True, cpu: str | None = None) -> dict:
    """The probe's hashes in a fresh process: on this CPU, or on ``cpu``
    emulated by qemu (its CPUID, caches and vendor are what the libraries see)."""
    env = {k: v for k, v in os.environ.items() if k not in pins.PINS}
    env.update(extra_env, FITONTEST_PINS="1" if pinned else "0", OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    cmd = [sys.executable, "-c", HASHES]
    if cpu is not None:
        cmd = [QEMU, "-cpu", cpu, *cmd]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


needs_v3 = pytest.mark.skipif(not pins.host()["x86_64_v3"],
                              reason="the pins need an x86-64-v3 CPU (AVX2 + FMA)")
needs_avx512 = pytest.mark.skipif(not pins.host()["avx512"],
                                  reason="emulating a second CPU needs one with AVX-512")


@pytest.mark.slow
@needs_v3
@pytest.mark.skipif(QEMU is None, reason="needs qemu-x86_64 (Debian: qemu-user; CI installs it)")
def test_an_emulated_intel_haswell_gives_the_same_bytes():
    """qemu's Haswell: an Intel CPU with AVX2 and no AVX-512 (a laptop of
    2013-2020), whose CPUID, cache sizes and vendor every library reads. Its
    compiled numba code comes from the run on this CPU (the same target: the
    cache key names it); benchmarks/measured/cpu_pins.md compiles it there too."""
    here = _hashes({})
    haswell = _hashes({}, cpu="Haswell-v4")
    assert here == haswell


@needs_v3
@needs_avx512
def test_an_emulated_avx2_laptop_gives_the_same_bytes():
    """The laptop's choices as the libraries' caps (no qemu): the pins override them."""
    assert _hashes({}) == _hashes(AVX2_LAPTOP)


# slow (two probes of 15 CPU-s, the default run's costliest test outside the workflow):
# a check of the test above's power on this host, not of the pins, which that test
# checks in the default run
@pytest.mark.slow
@needs_v3
@needs_avx512
def test_without_the_pins_the_emulated_laptop_differs():
    """The libraries' own choices differ between the two CPUs in every part
    the pins cover: what the test above would catch if a pin went missing."""
    here = _hashes({}, pinned=False)
    laptop = _hashes(AVX2_LAPTOP, pinned=False)
    differ = {k for k in here if here[k] != laptop[k]}
    assert {"weights", "pl3", "numpy_exp_log", "blas"} <= differ, (here, laptop)


@needs_v3
def test_the_pins_take_before_the_libraries_load():
    code = ("import fitontest, numpy, torch, numba, json; from fitontest.core import pins; "
            "import threadpoolctl; print(json.dumps(pins.record()))")
    env = {k: v for k, v in os.environ.items() if k not in pins.PINS}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    rec = json.loads(out.stdout)
    assert rec["reference_bytes"] and not rec["not_pinned"], rec
    assert rec["pinned"]["NUMBA_CPU_NAME"] == "haswell"
    assert rec["loaded"]["torch"] == "ATen AVX2" and rec["loaded"]["numba"] == "code for haswell"


@needs_v3
@needs_avx512
def test_numpy_loaded_first_is_said():
    """numpy imported before fitontest keeps its AVX-512 code: a warning says
    so, and the record names it (the findings then say NOT pinned)."""
    env = {k: v for k, v in os.environ.items() if k not in pins.PINS}
    code = ("import warnings, json; import numpy\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always'); import fitontest\n"
            "from fitontest.core import pins\n"
            "print(json.dumps([str(x.message) for x in w])); print(pins.statement())")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    warned, statement = out.stdout.strip().splitlines()
    assert "numpy" in warned and "fitontest pins --env" in warned
    assert statement.startswith("CPU code NOT pinned (numpy")


def test_pins_off_sets_nothing():
    env = {k: v for k, v in os.environ.items() if k not in pins.PINS}
    code = ("import os, fitontest, json; from fitontest.core import pins; "
            "print(json.dumps([pins.record()['pinned'], os.environ.get('NUMBA_CPU_NAME')]))")
    out = subprocess.run([sys.executable, "-c", code], env={**env, "FITONTEST_PINS": "0"},
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [{}, None]


def test_env_lines_are_the_pins():
    lines = pins.env_lines()
    names = {line.split("=", 1)[0].removeprefix("export ") for line in lines}
    expected = set(pins.PINS) if pins.host()["x86_64_v3"] else set(pins.PINS) - {
        "NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES"}
    assert names == expected
