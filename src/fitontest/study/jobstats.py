"""Per-rule cost of a workflow run, from Snakemake's ``benchmark:`` files.

Every heavy rule writes ``results/<exp>/benchmarks/<rule>/<wildcards>.tsv``
(one row per run of the job: wall seconds ``s``, peak resident memory
``max_rss`` in MB, CPU seconds ``cpu_time``, ...). :func:`summarise` folds them
into one row per rule, the numbers needed to size cluster requests;
:func:`extrapolate` scales a measured run (a rehearsal) to another config's
grid; :func:`gpu_projection` costs its networks' training and export on the
GPU from the measured rates (``fitontest.vision.fast_auto``), and
:func:`node_wall` the whole study on one GPU node::

    fitontest jobs results/rehearsal
    fitontest jobs results/rehearsal --scale config/rehearsal.yaml config/paper.yaml
"""
from __future__ import annotations

import argparse
import os
import resource
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import pandas as pd
import yaml

from .config import calibrator_names

COLUMNS = ["jobs", "cpu_s", "wall_s", "max_wall_s", "max_rss_mb"]
#: the controller's file under ``benchmarks/`` (:func:`record_controller`)
CONTROLLER = "controller"


def record_controller(path: str | Path) -> None:
    """Write the calling process's CPU seconds (user + system), wall seconds
    since it started and peak memory (MB) to ``path`` in the benchmark files'
    layout, with ``jobs_cpu_time``: the CPU of every child process it waited
    for. Called by the Snakemake controller at the end of a run (Snakefile
    ``onsuccess`` / ``onerror``): on a local run the children are the jobs, so
    ``jobs_cpu_time`` counts all of theirs, which the benchmark files (sampled
    by Snakemake every 30 s after a job's first 15 s) undercount."""
    import psutil

    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.time() - psutil.Process(os.getpid()).create_time()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("s\tmax_rss\tcpu_time\tjobs_cpu_time\n"
                    f"{wall:.2f}\t{own.ru_maxrss / 1024:.1f}\t{own.ru_utime + own.ru_stime:.2f}"
                    f"\t{kids.ru_utime + kids.ru_stime:.2f}\n")


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


def costs(results_dir: str | Path) -> dict[str, float]:
    """CPU seconds per rule of a run so far ({} before any benchmark file)."""
    try:
        return summarise(results_dir)["cpu_s"].to_dict()
    except ValueError:          # no benchmarks folder or files yet
        return {}


#: config keys that set the cost of one fit; an extrapolation keeps them equal
SIZE_KEYS = [("split", "n_val"), ("split", "n_holdout"), ("evaluation", "sizes"),
             ("synthetic", "sizes"), ("synthetic", "n_test")]
#: rules whose cost depends on the network and the device, not on the grid
NOT_SCALED = {"split": "one pass over the images", "train": "network and device",
              "export_logits": "network and device"}


@dataclass(frozen=True)
class RuleGrid:
    """The jobs of one rule in a config: the methods named by the job's last
    wildcard (None: every job does the same work), the jobs per method, and
    the units of work (fits, calibrated models) per job."""

    methods: tuple[str, ...] | None
    jobs_per_method: int
    units_per_job: int


def rule_grids(config: Mapping[str, Any]) -> dict[str, RuleGrid]:
    """The scalable rules of a workflow config, keys as in the schema's defaults."""
    from .networks import training_seeds

    # the networks: every architecture once per training seed
    archs = len(config.get("archs") or {}) * len(training_seeds(config))
    tasks = len(config.get("tasks") or {})
    cal = config.get("calibrators") or {}
    multiclass = tuple(dict.fromkeys(["none", *cal.get("multiclass", [])]))
    binary = tuple(cal.get("binary", []))
    ev = config.get("evaluation") or {}
    syn = config.get("synthetic") or {}
    grids = {}
    if config.get("pseudo_real", True) and archs:
        grids["calibrate_multiclass"] = RuleGrid(multiclass, archs, 1)
        grids["calibrate_binary"] = RuleGrid(binary, archs, tasks)
        # one job per (network, task) estimates every truth of every calibrated model
        n_cal = len(calibrator_names({"calibrators": {"multiclass": multiclass, "binary": binary}}))
        grids["truth"] = RuleGrid(None, archs * tasks,
                                  n_cal * len(config.get("truth", ["isotonic"])))
        if cal.get("draws", 0):
            # one job per network refits every calibrator on each validation draw
            grids["calibrator_draws"] = RuleGrid(None, archs, int(cal["draws"]) * n_cal * tasks)
        units = tasks * len(ev.get("calibrators", [])) * len(ev.get("seeds", []))
        grids["evaluate"] = RuleGrid(tuple(ev.get("evaluators", [])), archs, units)
    if syn.get("enabled", False):
        grids["synthetic_evaluate"] = RuleGrid(
            tuple(syn.get("evaluators", ["ece_es15", "isotonic"])),
            len(syn.get("shapes", ["square", "sqrt", "beta1", "beta2", "stairs"])),
            len(syn.get("ce_levels", [0, 0.02, 0.05, 0.1])) * len(syn.get("seeds", [0])))
    return grids


def _read_config(config: Mapping[str, Any] | str | Path) -> Mapping[str, Any]:
    if isinstance(config, Mapping):
        return config
    return yaml.safe_load(Path(config).read_text())


def extrapolate(results_dir: str | Path, measured_config, target_config) -> pd.DataFrame:
    """CPU seconds of ``target_config``'s grid, predicted from a run of ``measured_config``.

    Per rule and method (the evaluator, calibrator, ...: the job's last
    wildcard), the mean CPU seconds of a measured job per unit of work, times
    the target's units::

        cpu_target(rule) = sum over methods m of the target
                           mean_cpu(m) / units_per_job_measured * units_per_job_target
                           * jobs_per_method_target

    (units: fits for ``evaluate`` = tasks x calibrators x seeds, tasks for
    ``calibrate_binary``, calibrated models x truths for ``truth``; see
    :func:`rule_grids`). Exact when one unit costs the same in both runs: the
    data sizes (:data:`SIZE_KEYS`) must agree, else ValueError.
    ``target_longest_cpu_s``: the target's costliest job of the rule. Training
    and export depend on the network and device: listed, not scaled
    (:func:`gpu_projection` costs them on the GPU). Memory is the
    measured peak of one job: a job handles one model at a time, so it does
    not grow with the grid.
    """
    measured, target = _read_config(measured_config), _read_config(target_config)
    batched = {k: v for k, v in (measured.get("batch") or {}).items() if v != 1}
    if batched:
        raise ValueError(f"the measured run shared jobs between methods (batch: {batched}), so "
                         "a job's cost is not one method's: rehearse with batch sizes 1")
    sizes = [[(cfg.get(section) or {}).get(key) for section, key in SIZE_KEYS]
             for cfg in (measured, target)]
    differ = [".".join(k) for k, a, b in zip(SIZE_KEYS, *sizes)
              if a is not None and b is not None and a != b]
    if differ:
        raise ValueError(f"cannot extrapolate across different data sizes: {differ} differ "
                         "(one fit must cost the same in both configs)")
    rows = read_benchmarks(results_dir)
    rows["method"] = rows["job"].map(lambda j: Path(j).name)
    per_job = rows.groupby(["rule", "job", "method"], as_index=False).agg(
        cpu_time=("cpu_time", "mean"), s=("s", "mean"), max_rss=("max_rss", "max"))
    grids_m, grids_t = rule_grids(measured), rule_grids(target)
    out = []
    for rule, jobs in per_job.groupby("rule"):
        row = {"rule": rule, "jobs": len(jobs), "cpu_s": jobs.cpu_time.sum(),
               "wall_s": jobs.s.sum(), "max_rss_mb": jobs.max_rss.max()}
        if rule in grids_t and rule in grids_m:
            gm, gt = grids_m[rule], grids_t[rule]
            per_unit = jobs.groupby("method").cpu_time.mean() / gm.units_per_job
            if gt.methods is None:
                cost, n = per_unit.mean() * gt.units_per_job * gt.jobs_per_method, \
                    gt.jobs_per_method
                longest = per_unit.mean() * gt.units_per_job
            else:
                missing = sorted(set(gt.methods) - set(per_unit.index))
                if missing:
                    raise ValueError(f"{rule}: no measured job for {missing}; "
                                     "rehearse with every method of the target")
                cost = sum(per_unit[m] for m in gt.methods) * gt.units_per_job \
                    * gt.jobs_per_method
                n = len(gt.methods) * gt.jobs_per_method
                longest = max(per_unit[m] for m in gt.methods) * gt.units_per_job
            row.update(target_jobs=n, target_cpu_s=cost, target_longest_cpu_s=longest, note="")
        else:
            row.update(target_jobs=float("nan"), target_cpu_s=float("nan"),
                       target_longest_cpu_s=float("nan"),
                       note=NOT_SCALED.get(rule, "not in the target grid"))
        out.append(row)
    table = pd.DataFrame(out).set_index("rule")
    return table.sort_values("target_cpu_s", ascending=False, na_position="last")


def gpu_projection(config, rates=None) -> pd.DataFrame:
    """Per network of an image config, its training and export on the GPU the
    rates were measured on: the path ``training.fast`` takes there, the
    recipe's epochs (``max_epochs`` where set), the measured seconds per epoch
    on ``split.n_train`` images and setup, and the projected ``train_s`` (setup
    + epochs x s/epoch), ``eager_s`` (the same for the eager path) and
    ``export_s`` (validation + hold-out images at the measured export rate).
    NaN where the network at its batch size was not measured. Empty for a
    config without image networks. ``rates``: a rates file or
    :class:`~fitontest.vision.fast_auto.Rates` (default: the package's)."""
    from fitontest.vision.fast_auto import Rates, choose, load_rates
    from fitontest.vision.recipes import get_recipe

    config = _read_config(config)
    rates = rates if isinstance(rates, Rates) else load_rates(rates)
    split = config.get("split") or {}
    setting = (config.get("training") or {}).get("fast", "auto")
    from .networks import network_name, training_seeds

    rows = []
    for (arch, spec), seed in ((a, s) for a in (config.get("archs") or {}).items()
                               for s in training_seeds(config)):
        if "recipe" not in spec:            # not an image network (tabular)
            continue
        recipe = get_recipe(spec["recipe"], **spec.get("overrides", {}))
        epochs = min(recipe["epochs"], spec.get("max_epochs") or recipe["epochs"])
        n_train = int(split["n_train"])
        path = choose(setting, spec["model"], recipe, n_train, "cuda", rates).path
        costs = rates.costs(spec["model"], recipe["batch_size"], epochs, n_train)
        got, eager = costs.get(path, {}), costs.get("eager", {})
        nan = float("nan")
        rows.append({"arch": network_name(arch, seed), "model": spec["model"], "epochs": epochs,
                     "batch": recipe["batch_size"], "path": path,
                     "s_per_epoch": got.get("s_per_epoch", nan), "setup_s": got.get("setup_s", nan),
                     "train_s": got.get("total_s", nan), "eager_s": eager.get("total_s", nan),
                     "export_s": (int(split["n_val"]) + int(split["n_holdout"]))
                     / rates.export_img_s})
    return pd.DataFrame(rows).set_index("arch") if rows else pd.DataFrame()


def node_wall(gpu: pd.DataFrame, cpu_s: float, longest_cpu_s: float, other_s: float = 0.0,
              cores: int = 16) -> dict[str, float]:
    """Wall seconds of a study on one node with one GPU and ``cores`` cores.

    The GPU jobs run one after another, each network's training then its
    export (one GPU per job: sharing gave nothing); each job's host keeps one
    core. A network's CPU jobs (``cpu_s`` in all, split evenly over the
    networks) start when its export ends and run on the other cores during
    the next GPU jobs, then on all of them; the CPU work is spread evenly over
    the cores, but no network's share ends before its longest job
    (``longest_cpu_s``, one thread). ``other_s``: jobs run once (split, the
    report rules), added as they are.
    """
    if gpu.empty:
        raise ValueError("no GPU jobs to schedule")
    share, queue, t = cpu_s / len(gpu), 0.0, 0.0
    for _, row in gpu.iterrows():
        for g in (row.train_s, row.export_s):
            queue -= min(queue, (cores - 1) * g)
            t += g
        queue += share
    tail = max(queue / cores, longest_cpu_s)
    return {"gpu_s": t, "tail_s": tail, "other_s": other_s, "wall_s": t + tail + other_s}


def _print_gpu(target_config, table: pd.DataFrame, rates, cores: int) -> None:
    from fitontest.vision.fast_auto import load_rates

    gpu = gpu_projection(target_config, rates)
    if gpu.empty:
        return
    rates = load_rates(rates)
    n_train = int(_read_config(target_config)["split"]["n_train"])
    print(f"\nOn the GPU, at the rates measured on {rates.where}:")
    shown = gpu.assign(train_h=gpu.train_s / 3600, eager_h=gpu.eager_s / 3600)
    print(shown[["model", "epochs", "batch", "path", "s_per_epoch", "setup_s", "train_h", "eager_h",
                 "export_s"]].round({"s_per_epoch": 2, "setup_s": 1, "train_h": 2, "eager_h": 2,
                                     "export_s": 1}).to_string())
    print(f"measured: s_per_epoch (one timed epoch's seconds per step x the steps of {n_train:,} "
          f"images), setup_s, the export's {rates.export_img_s:,.0f} images/s; projected: "
          "train_h = setup + epochs x s_per_epoch, export_s = (n_val + n_holdout) / images/s")
    train, eager, export = gpu.train_s.sum(), gpu.eager_s.sum(), gpu.export_s.sum()
    print(f"{len(gpu)} trainings {train / 3600:.2f} h (eager {eager / 3600:.2f} h), {len(gpu)} "
          f"exports {export / 3600:.2f} h, one after another on one GPU (projected)")
    scaled = table.dropna(subset=["target_cpu_s"])
    other = table.loc[table.target_cpu_s.isna() & ~table.index.isin(["train", "export_logits"]),
                      "wall_s"].sum() if "wall_s" in table else 0.0
    wall = node_wall(gpu, scaled.target_cpu_s.sum(), scaled.target_longest_cpu_s.max(),
                     other, cores)
    print(f"one node, 1 GPU + {cores} cores: {wall['wall_s'] / 3600:.2f} h wall (projected): the "
          f"GPU jobs {wall['gpu_s'] / 3600:.2f} h, each network's CPU jobs on the cores they "
          f"leave, then {wall['tail_s'] / 60:.1f} min after the last export, and "
          f"{wall['other_s']:.0f} s of jobs run once (split, report; measured in the run, "
          "not scaled)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="fitontest jobs",
        description="Per-rule jobs, CPU time, wall time and peak memory of a run.")
    parser.add_argument("results_dir", help="results/<exp> of a finished (or partial) run")
    parser.add_argument("--scale", nargs=2, metavar=("RUN_CONFIG", "TARGET_CONFIG"),
                        help="predict the CPU time of TARGET_CONFIG's grid from this run of "
                             "RUN_CONFIG (same data sizes; see extrapolate), its networks' GPU "
                             "time from the measured rates, and the wall on one GPU node")
    parser.add_argument("--rates", help="measured GPU rates (default: the package's)")
    parser.add_argument("--cores", type=int, default=16, help="the GPU node's cores (default 16)")
    return run(parser.parse_args(argv))


def run(args: argparse.Namespace) -> int:
    """``fitontest jobs`` with its parsed arguments (``results_dir``, ``scale``,
    ``rates``, ``cores``)."""
    if args.scale:
        table = extrapolate(args.results_dir, *args.scale)
        _print_extrapolation(table, *args.scale)
        _print_gpu(args.scale[1], table, args.rates, args.cores)
        return 0
    table = summarise(args.results_dir)
    controller = table.loc[[CONTROLLER]] if CONTROLLER in table.index else None
    table = table.drop(index=CONTROLLER, errors="ignore")
    total = table[["jobs", "cpu_s", "wall_s"]].sum()
    print(table.round(1).to_string())
    print(f"\n{int(total.jobs)} jobs, {total.cpu_s / 3600:.2f} CPU-h, "
          f"{total.wall_s / 3600:.2f} h of job wall time")
    if controller is not None:
        print(controller_line(args.results_dir, total.cpu_s))
    return 0


def controller_line(results_dir: str | Path, jobs_cpu_s: float) -> str:
    """The last run's controller CPU and its jobs' measured CPU, in words."""
    row = pd.read_csv(Path(results_dir) / "benchmarks" / f"{CONTROLLER}.tsv", sep="\t").iloc[-1]
    own, kids = float(row.cpu_time), float(row.jobs_cpu_time)
    return (f"last run: controller {own:.1f} CPU-s over {float(row.s):.0f} s wall; its job "
            f"processes {kids:.1f} CPU-s (the benchmark files above hold {jobs_cpu_s:.1f} of "
            f"them, sampled); in all {own + kids:.1f} CPU-s")


def _print_extrapolation(table: pd.DataFrame, run_config: str, target_config: str) -> int:
    print(f"measured with {run_config}, scaled to {target_config} (CPU seconds):")
    print(table.drop(columns="wall_s").rename(columns={"target_longest_cpu_s": "longest_job"})
          .round(1).to_string())
    total = table.target_cpu_s.sum()
    print(f"\n{total / 3600:.2f} CPU-h in the scaled rules "
          f"(measured: {table.loc[table.target_cpu_s.notna(), 'cpu_s'].sum() / 3600:.2f}); "
          "not scaled: " + ", ".join(f"{r} ({n})" for r, n in table.note.items() if n))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
