import os
import shutil
import subprocess
import sys
from pathlib import Path

# One core per xdist worker (the README's command starts one per core): a
# worker's BLAS and OpenMP pools at one thread, so that the workers do not
# oversubscribe the cores (set before numpy loads; the workflow's jobs set
# their own, core/runtime.py).
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

import fitontest  # noqa: F401  first: its import pins the CPU code before numpy loads (core/pins.py)

import numpy as np
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]


def snakemake_cmd() -> list[str]:
    exe = Path(sys.executable).with_name("snakemake")
    return [str(exe)] if exe.exists() else [shutil.which("snakemake") or "snakemake"]


def run_snakemake(workdir: Path, *args: str, config: dict | None = None,
                  timeout: int = 600) -> subprocess.CompletedProcess:
    """Run the repository's Snakefile with results under ``workdir``."""
    cmd = snakemake_cmd() + ["-s", str(REPO / "Snakefile"), "-d", str(workdir)]
    if config is not None:
        path = workdir / "test-config.yaml"
        path.write_text(yaml.safe_dump(config))
        cmd += ["--configfile", str(path)]
    return subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=timeout,
                          cwd=REPO)


def load_benchmark(name: str):
    """A script of benchmarks/FOLDER/ (not a package) imported as a module, for its
    functions; its folder and benchmarks/ (common.py) are importable, as when it runs."""
    import importlib.util

    (path,) = (REPO / "benchmarks").glob(f"*/{name}.py")
    for folder in (REPO / "benchmarks", path.parent):
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def load_config(name: str = "config.yaml") -> dict:
    return yaml.safe_load((REPO / "config" / name).read_text())


def write_mini_cifar5m(directory: Path, n_per_part: int = 300, naming: str = "part{i}.npz",
                       compressed: bool = False) -> Path:
    """Six part files with the keys, dtypes and shapes of CIFAR-5m."""
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    save = np.savez_compressed if compressed else np.savez
    for i in range(6):
        X = rng.integers(0, 256, size=(n_per_part, 32, 32, 3), dtype=np.uint8)
        Y = rng.integers(0, 10, size=n_per_part).astype(np.int64)
        save(directory / naming.format(i=i), X=X, Y=Y)
    return directory


@pytest.fixture
def mini_cifar5m(tmp_path):
    return write_mini_cifar5m(tmp_path / "cifar5m")


@pytest.fixture(scope="module")
def one_torch_thread():
    """Run torch on one thread: keeps CPU use moderate and fast under contention."""
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)
