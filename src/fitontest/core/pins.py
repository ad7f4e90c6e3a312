"""The same bytes on any x86-64 CPU: the libraries' CPU-dependent choices, pinned.

numpy, OpenBLAS, torch (ATen, oneDNN, MKL) and numba each pick their code for
the CPU they run on. Measured on one AVX-512 machine with the others' choices
emulated (benchmarks/measured/cpu_pins.md): numpy's float64 ``exp``/``log``/
``power`` and its ``argsort`` of ties differ between its AVX-512 and AVX2
code, OpenBLAS's dot and matrix products between its SkylakeX and Haswell
kernels, a small network's weights after two epochs between oneDNN / ATen's
AVX-512 and AVX2 kernels, and PL3's estimates between numba's code for this
CPU and for an AVX2 one. Last-bit differences grow into other networks and
flip discrete choices (PL's pieces, early stops), so the study's verdicts
changed with the CPU.

:func:`apply` pins every one of them to the **x86-64-v3** level (AVX2 + FMA:
every Intel CPU since Haswell, 2013, every AMD since Excavator, 2015) through
the environment variables the libraries read when they load. It runs first in
``import fitontest`` (before numpy is imported by it) and in the workflow's
controller, whose jobs inherit the variables (:data:`PINS`). Thread counts
change bytes too (OpenBLAS reductions; the convolutions of DenseNet / WRN
training): the workflow keeps BLAS on one thread
(:func:`fitontest.core.runtime.limit_threads`) and trains on the CPU on one
thread.

What cannot be pinned, said by :func:`record` (and by a warning where it
matters):

- a CPU below x86-64-v3 (no AVX2 / FMA) cannot run the v3 code: the caps are
  maxima, so the libraries fall back to older code, and numba is left to the
  host (its v3 code would not run): last bits can differ from v3 CPUs;
- a library loaded before ``fitontest`` keeps its choice (numpy and OpenBLAS
  read theirs when they load, numba when it compiles, torch at its first
  kernel): import ``fitontest`` first, or export the variables that
  ``fitontest pins --env`` prints before Python starts;
- other CPU architectures (arm64) and other library versions give other
  bytes; :func:`record` names the versions.

``FITONTEST_PINS=0`` turns the pins off (the libraries choose by the host).
"""
from __future__ import annotations

import os
import platform
import sys
import warnings
from functools import lru_cache
from importlib import metadata

__all__ = ["PINS", "apply", "record", "statement", "summary", "environment", "env_lines",
           "effective",
           "REFERENCE_LEVEL"]

REFERENCE_LEVEL = "x86-64-v3 (AVX2 + FMA)"
#: the CPU flags (Linux /proc/cpuinfo names) the v3 code needs
V3_FLAGS = frozenset({"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "lzcnt", "movbe",
                      "popcnt", "sse4_1", "sse4_2", "ssse3"})
_ABM = "abm"    # lzcnt's flag name on AMD CPUs
#: LLVM's feature string of numba's x86-64-v3 code (CPU name "haswell" alone
#: would add the host's own features, AVX-512 included)
NUMBA_V3_FEATURES = ("+64bit,+avx,+avx2,+bmi,+bmi2,+cmov,+cx16,+cx8,+f16c,+fma,+fxsr,"
                     "+lzcnt,+mmx,+movbe,+popcnt,+sahf,+sse,+sse2,+sse3,+sse4.1,+sse4.2,"
                     "+ssse3,+xsave")


def _numpy_avx512_groups() -> str:
    """numpy's names of its AVX-512 dispatch targets (grouped by x86-64 level
    from numpy 2.4), read from its version without importing it."""
    try:
        major, minor = (int(x) for x in metadata.version("numpy").split(".")[:2])
    except (metadata.PackageNotFoundError, ValueError):
        return "X86_V4 AVX512_ICL AVX512_SPR"
    if (major, minor) >= (2, 4):
        return "X86_V4 AVX512_ICL AVX512_SPR"
    return ("AVX512F AVX512CD AVX512_KNL AVX512_KNM AVX512_SKX AVX512_CLX AVX512_CNL "
            "AVX512_ICL AVX512_SPR")


#: environment variable -> value, for the library that reads it
PINS: dict[str, str] = {
    # numpy: no AVX-512 dispatch (its float64 exp/log/power and argsort differ)
    "NPY_DISABLE_CPU_FEATURES": _numpy_avx512_groups(),
    # OpenBLAS (numpy's, scipy's): the Haswell kernels on every CPU
    "OPENBLAS_CORETYPE": "Haswell",
    # torch: ATen's vectorised kernels, oneDNN's convolutions, MKL's products
    "ATEN_CPU_CAPABILITY": "avx2",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "DNNL_MAX_CPU_ISA": "AVX2",
    "MKL_ENABLE_INSTRUCTIONS": "AVX2",
    # MKL: its compatible code on every CPU (its AVX2 branch is for Intel CPUs: on
    # AMD it runs other code, measured under qemu: benchmarks/measured/cpu_pins.md)
    "MKL_CBWR": "COMPATIBLE,STRICT",
    # numba: code for a v3 CPU, whatever this one is; no Intel SVML (it
    # dispatches on the CPU at run time)
    "NUMBA_CPU_NAME": "haswell",
    "NUMBA_CPU_FEATURES": NUMBA_V3_FEATURES,
    "NUMBA_DISABLE_INTEL_SVML": "1",
}
#: the pins that would make a CPU below v3 fail (illegal instructions)
_NEEDS_V3 = ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES")
_STATE: dict = {}


def enabled() -> bool:
    return os.environ.get("FITONTEST_PINS", "1").strip().lower() not in ("0", "false", "no", "off")


@lru_cache(maxsize=1)
def host() -> dict:
    """This CPU: architecture, model name and whether it runs v3 code
    (None where the flags cannot be read)."""
    machine = platform.machine().lower()
    x86 = machine in ("x86_64", "amd64")
    model, flags = "", None
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and not model:
                    model = value.strip()
                elif key == "flags" and flags is None:
                    flags = set(value.split())
                if model and flags is not None:
                    break
    except OSError:
        pass
    if flags is not None and _ABM in flags:
        flags.add("lzcnt")
    v3 = (V3_FLAGS <= flags) if (x86 and flags is not None) else (False if not x86 else None)
    return {"machine": machine, "model": model or platform.processor(), "x86_64_v3": v3,
            "avx512": bool(flags and "avx512f" in flags)}


def apply() -> dict:
    """Set :data:`PINS` in the environment (once per process; a no-op with
    ``FITONTEST_PINS=0`` or on a CPU that is not x86-64). Returns what was set."""
    if _STATE:
        return _STATE
    h = host()
    _STATE["loaded_before"] = sorted(m for m in ("numpy", "torch", "numba") if m in sys.modules)
    if not enabled() or h["machine"] not in ("x86_64", "amd64"):
        _STATE["set"] = {}
        return _STATE
    pins = environment()
    _STATE["overridden"] = {k: os.environ[k] for k in pins
                            if k in os.environ and os.environ[k] != pins[k]}
    os.environ.update(pins)
    _STATE["set"] = pins
    _pin_loaded(pins)
    return _STATE


def _pin_loaded(pins: dict) -> None:
    """Pin what a library loaded before fitontest still lets change; warn,
    once, where a pin came too late (a library loaded before the variables
    were set chose its code by the host)."""
    numba = sys.modules.get("numba")
    if numba is not None and "NUMBA_CPU_NAME" in pins:
        # read when numba first compiles: still in time unless it has
        numba.config.CPU_NAME = pins["NUMBA_CPU_NAME"]
        numba.config.CPU_FEATURES = pins["NUMBA_CPU_FEATURES"]
        numba.config.DISABLE_INTEL_SVML = 1
    late = [f"{lib} ({what})" for lib, (ok, what) in effective().items() if not ok]
    _STATE["late"] = late
    if late and host()["x86_64_v3"]:
        warnings.warn(
            f"{'; '.join(late)} loaded before fitontest: its CPU-dependent code is not "
            f"pinned to {REFERENCE_LEVEL}, so results can differ from other CPUs in the "
            f"last bits. Import fitontest first, or export the variables printed by "
            f"`fitontest pins --env` before starting Python (docs/reproducibility.md)",
            RuntimeWarning, stacklevel=3)


def effective() -> dict[str, tuple[bool, str]]:
    """Per loaded library: (its code is the pinned one, what it runs)."""
    out = {}
    if "numpy" in sys.modules:
        try:
            from numpy._core._multiarray_umath import __cpu_features__ as feats
        except ImportError:                      # numpy 1.x
            from numpy.core._multiarray_umath import (  # type: ignore[no-redef]
                __cpu_features__ as feats)
        on = [k for k in PINS["NPY_DISABLE_CPU_FEATURES"].split() if feats.get(k)]
        out["numpy"] = (not on, f"dispatch {' '.join(on)}" if on else "no AVX-512 dispatch")
        from threadpoolctl import threadpool_info

        cores = sorted({str(i.get("architecture")) for i in threadpool_info()
                        if i.get("internal_api") == "openblas"})
        if cores:
            out["OpenBLAS"] = (cores == [PINS["OPENBLAS_CORETYPE"]], "kernels " + " ".join(cores))
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "backends"):
        cap = torch.backends.cpu.get_cpu_capability()
        out["torch"] = (cap in ("AVX2", "DEFAULT"), f"ATen {cap}")
    numba = sys.modules.get("numba")
    if numba is not None and host()["x86_64_v3"]:
        name = numba.config.CPU_NAME
        out["numba"] = (name == PINS["NUMBA_CPU_NAME"], f"code for {name or 'the host'}")
    return out


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def record() -> dict:
    """What this process pinned, what took, the host and the library versions:
    the run's record of where its bytes came from."""
    st = apply()
    out = {"reference": REFERENCE_LEVEL, "enabled": enabled(), "host": host(),
           "pinned": dict(st.get("set", {})), "overridden": dict(st.get("overridden", {})),
           "not_pinned": [f"{lib} ({what})" for lib, (ok, what) in effective().items()
                          if not ok] if host()["x86_64_v3"] else [],
           "python": platform.python_version(),
           "versions": {n: _version(n) for n in ("numpy", "scipy", "scikit-learn", "pandas",
                                                 "torch", "numba", "llvmlite")}}
    out["reference_bytes"] = bool(out["enabled"] and host()["x86_64_v3"]
                                  and not out["not_pinned"])
    out["loaded"] = {lib: what for lib, (_, what) in effective().items()}
    return out


def statement(rec: dict | None = None) -> str:
    """Which CPU code and library versions made a run's numbers, without the
    host (the same on every CPU that can be pinned): the findings' line."""
    rec = record() if rec is None else rec
    if rec["reference_bytes"]:
        state = f"pinned to {rec['reference']} (fitontest/core/pins.py)"
    else:
        why = ("FITONTEST_PINS=0" if not rec["enabled"] else "; ".join(rec["not_pinned"])
               or f"this CPU is not {REFERENCE_LEVEL}")
        state = f"NOT pinned ({why}): other CPUs can give other last bits"
    libs = ", ".join(f"{k} {x}" for k, x in rec["versions"].items() if x)
    return f"CPU code {state}; {libs}."


def summary(rec: dict | None = None) -> str:
    """One line for a job's log: :func:`statement` and the host."""
    rec = record() if rec is None else rec
    return f"{statement(rec)} Host: {rec['host']['model'] or rec['host']['machine']}."


def environment() -> dict[str, str]:
    """The variables of :data:`PINS` this CPU can take (numba's v3 target
    only on a v3 CPU), for a process started with them set."""
    return {k: v for k, v in PINS.items() if host()["x86_64_v3"] or k not in _NEEDS_V3}


def env_lines() -> list[str]:
    """``export NAME=value`` lines of :func:`environment` (for a shell or a job script)."""
    return [f"export {k}='{v}'" for k, v in environment().items()]



def main(env: bool = False) -> int:
    """``fitontest pins [--env]``: the record as JSON, or the export lines."""
    import json

    print("\n".join(env_lines()) if env else json.dumps(record(), indent=1))
    return 0
