"""The jobs of each shipped config's grid, per rule, from ``snakemake -n``
(config/README.md "Cost of the paper's grids"; benchmarks/measured/job_counts.md).

A dry run in a scratch folder: nothing is computed, only the DAG is built. A
CIFAR-5m config is counted with ``data_source=procedural`` (its grid does not
depend on where the images come from, and the parts are not here).

    python benchmarks/speed/job_counts.py [config/paper.yaml config/synthetic-paper.yaml ...]
"""
from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from common import REPO  # noqa: E402

#: configs to count; ``a+b`` is ``b`` as an overlay on ``a``
DEFAULT = ["config/config.yaml", "config/paper.yaml", "config/synthetic-paper.yaml",
           "config/tabular.yaml", "config/config.yaml+config/decisive.yaml",
           "config/tabular.yaml+config/decisive-tabular.yaml"]
ROW = re.compile(r"^(\w+)\s+(\d+)$")


def counts(config: str) -> dict[str, int]:
    """Jobs per rule of ``config``'s grid (``total`` among them)."""
    files = config.split("+")
    swap = any(yaml.safe_load((REPO / f).read_text()).get("data_source") == "cifar5m"
               for f in files)
    extra = ["--config", "data_source=procedural"] if swap else []
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run([sys.executable, "-m", "snakemake", "-n", "-s", str(REPO / "Snakefile"),
                              "-d", tmp, "--configfile", *(str(REPO / f) for f in files), *extra,
                              "--quiet", "rules"],
                             cwd=REPO, capture_output=True, text=True, check=True).stdout
    return {m[1]: int(m[2]) for line in out.splitlines() if (m := ROW.match(line.strip()))}


def main(argv: list[str]) -> int:
    for config in argv or DEFAULT:
        c = counts(config)
        total = c.pop("total")
        print(f"{config}: {total} jobs ({', '.join(f'{k} {v}' for k, v in c.items())})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
