"""Wall time of the tabular study (config/tabular.yaml) and of the real-data study
(config/real.yaml) on generated logits, each from an empty directory.

The real-data config runs on two seeded Dirichlet/softmax "networks"
(``fitontest.data.logits.simulate``: 5,000 validation and 10,000 test points,
10 classes) written in both file layouts. Prints, per config: jobs run, wall
seconds, the summed CPU seconds of the jobs' benchmark files (the rules that
have one), and the first lines of its main table.

    nice -n 10 python benchmarks/speed/sources_wall.py --cores 2 --workdir /tmp/sources_wall
    python benchmarks/speed/sources_wall.py --only real        # one of them
"""
from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def snakemake(workdir: Path, config: dict, cores: int) -> tuple[float, str]:
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    exe = Path(sys.executable).with_name("snakemake")
    cmd = [str(exe), "-s", str(REPO / "Snakefile"), "-d", str(workdir), "--configfile",
           str(path), "--cores", str(cores), "-q"]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"snakemake failed:\n{out.stderr[-3000:]}")
    return wall, out.stdout + out.stderr


def cpu_seconds(results: Path) -> tuple[int, float]:
    n, total = 0, 0.0
    for f in (results / "benchmarks").rglob("*.tsv"):
        with open(f) as fh:
            rows = list(csv.DictReader(fh, delimiter="\t"))
        if rows and rows[-1].get("cpu_time"):
            n += 1
            total += float(rows[-1]["cpu_time"])
    return n, total


def report(name: str, wall: float, results: Path, table: Path) -> None:
    n, cpu = cpu_seconds(results)
    print(f"\n== {name}: wall {wall:.0f} s ({wall / 60:.1f} min); "
          f"{n} benchmarked jobs, {cpu:.0f} CPU s in them")
    if table.exists():
        print("\n".join(table.read_text().splitlines()[:40]))


def run_tabular(workdir: Path, cores: int) -> None:
    cfg = yaml.safe_load((REPO / "config" / "tabular.yaml").read_text())
    wall, _ = snakemake(workdir / "tabular", cfg, cores)
    res = workdir / "tabular" / "results" / cfg["exp"]
    report("config/tabular.yaml", wall, res, res / "findings.md")


def run_real(workdir: Path, cores: int) -> None:
    from fitontest.data import logits

    d = workdir / "real" / "logits"
    d.mkdir(parents=True, exist_ok=True)
    logits.write_pickle(d / "probs_sim_t2_logits.p", logits.simulate(seed=0, temperature=2.0))
    logits.write_npz(d / "sim_t1_5.npz", logits.simulate(seed=1, temperature=1.5))
    cfg = yaml.safe_load((REPO / "config" / "real.yaml").read_text())
    cfg["logits"]["dir"] = str(d)
    wall, _ = snakemake(workdir / "real", cfg, cores)
    res = workdir / "real" / "results" / cfg["exp"]
    report("config/real.yaml (two simulated networks)", wall, res, res / "real" / "bias.md")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/sources_wall"))
    ap.add_argument("--only", choices=["tabular", "real"], default=None)
    args = ap.parse_args(argv)
    if args.only in (None, "real"):
        run_real(args.workdir, args.cores)
    if args.only in (None, "tabular"):
        run_tabular(args.workdir, args.cores)


if __name__ == "__main__":
    main()
