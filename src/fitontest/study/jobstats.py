"""Per-rule cost of a workflow run, from Snakemake's ``benchmark:`` files.

Every heavy rule writes ``results/<exp>/benchmarks/<rule>/<wildcards>.tsv``
(one row per run of the job: wall seconds ``s``, peak resident memory
``max_rss`` in MB, CPU seconds ``cpu_time``, ...). :func:`summarise` folds them
into one row per rule, the numbers needed to size cluster requests::

    python -m fitontest.jobstats results/default
"""
from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

COLUMNS = ["jobs", "cpu_s", "wall_s", "max_wall_s", "max_rss_mb"]


def read_benchmarks(results_dir: str | Path) -> pd.DataFrame:
    """Every benchmark row under ``results_dir/benchmarks``, with its rule and job.

    The rule is the first folder under ``benchmarks/`` (or the file's stem for
    a rule without wildcards); the job is the path below it.
    """
    root = Path(results_dir) / "benchmarks"
    if not root.is_dir():
        raise ValueError(f"no benchmarks folder: {root} (run the workflow first)")
    frames = []
    for path in sorted(root.rglob("*.tsv")):
        rel = path.relative_to(root)
        rule = rel.parts[0] if len(rel.parts) > 1 else rel.stem
        df = pd.read_csv(path, sep="\t")
        missing = {"s", "max_rss", "cpu_time"} - set(df.columns)
        if missing:
            raise ValueError(f"{path}: not a Snakemake benchmark file (no {sorted(missing)})")
        frames.append(df.assign(rule=rule, job=str(rel.with_suffix(""))))
    if not frames:
        raise ValueError(f"no benchmark files under {root}")
    out = pd.concat(frames, ignore_index=True)
    # Snakemake writes "-" (NA) when a value could not be measured
    for col in ("s", "max_rss", "cpu_time"):
        out[col] = pd.to_numeric(out[col], errors="coerce")
    return out


def summarise(results_dir: str | Path) -> pd.DataFrame:
    """One row per rule: jobs, total CPU seconds, total and longest wall
    seconds, and the largest peak memory (MB) of any of its jobs.

    A job benchmarked over several repeats counts once, with its mean wall
    and CPU time and its largest peak memory.
    """
    rows = read_benchmarks(results_dir)
    per_job = rows.groupby(["rule", "job"]).agg(
        s=("s", "mean"), cpu_time=("cpu_time", "mean"), max_rss=("max_rss", "max"))
    out = per_job.groupby("rule").agg(
        jobs=("s", "size"), cpu_s=("cpu_time", "sum"), wall_s=("s", "sum"),
        max_wall_s=("s", "max"), max_rss_mb=("max_rss", "max"))
    return out[COLUMNS].sort_values("wall_s", ascending=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m fitontest.jobstats",
        description="Per-rule jobs, CPU time, wall time and peak memory of a run.")
    parser.add_argument("results_dir", help="results/<exp> of a finished (or partial) run")
    args = parser.parse_args(argv)
    table = summarise(args.results_dir)
    total = table[["jobs", "cpu_s", "wall_s"]].sum()
    print(table.round(1).to_string())
    print(f"\n{int(total.jobs)} jobs, {total.cpu_s / 3600:.2f} CPU-h, "
          f"{total.wall_s / 3600:.2f} h of job wall time")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
