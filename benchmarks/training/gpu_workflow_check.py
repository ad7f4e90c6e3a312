"""The workflow's own GPU path, checked in one device call: train and export through snakemake.

    # here, once, in the repository root (the device machine reaches no registry):
    echo /.whl/ >> .git/info/exclude; python benchmarks/training/gpu_workflow_check.py --fetch-wheels .whl
    # on the device machine (benchmarks/README.md gives the one `run` call):
    python3 benchmarks/training/gpu_workflow_check.py --out "$OUT"
    # here, on the CPU: the same end to end on tiny networks and sizes / the DAG only
    python benchmarks/training/gpu_workflow_check.py --dry-run --out /tmp/check
    python benchmarks/training/gpu_workflow_check.py --snakemake-dry-run --out /tmp/check

Writes a config (``check.yaml`` beside the results): ``config/rehearsal.yaml``'s
procedural images and 45,000 / 5,000 split with a 100,000-image hold-out, the
paper's three networks with their paper recipes, each stopped after
``archs.<arch>.max_epochs`` = 2 epochs (the recipe, and so what ``auto``
chooses, unchanged), ``training.fast: auto``. Runs the workflow's ``split``,
``train`` and ``export_logits`` rules on it with ``snakemake --cores N``, one
GPU job at a time (``--resources gpu=1``, as the SLURM profile gives each its
own GPU). Then, in this process, one eager epoch of each network on the same
images, recipe and seed (``train_model(fast="eager", max_epochs=1)``), skipped
when the budget would be overrun. Writes under ``--out``:
``gpu_workflow_check.md`` (the table: the path auto chose and why, each
epoch's wall and loss, the loss after each tenth of epoch 1 beside the eager
epoch's, the export's images/s, every job's wall) and
``gpu_workflow_check.jsonl`` (the same rows), ``workflow_logs.txt`` (the jobs'
logs). About 6 minutes on one H200 (compile+graph's setup of the three
networks, about 165 s by benchmarks/measured/gpu_fast_path_h200.md, is most
of it); ``--budget-s`` bounds the eager epochs.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # benchmarks/common.py
from common import REPO  # noqa: E402

#: arch -> (model, recipe): the paper's networks, and the tiny stand-ins of --dry-run
PAPER = {"resnet110": ("resnet110", "resnet110"), "densenet40": ("densenet40", "densenet40"),
         "wrn32": ("wrn32", "wrn32")}
TINY = {"resnet8": ("resnet8", "small"), "densenet10": ("densenet10", "small"),
        "wrn10_1": ("wrn10_1", "small")}
EXP = "gpu_check"

#: what the device machine lacks (KINDS.md's package list), at the versions this
#: check was tested with here: snakemake and its dependencies, the fitontest
#: dependencies its image does not hold, and typing_extensions for pydantic
WHEELS = """ConfigArgParse==1.9.0 GitPython==3.2.1 PuLP==3.3.2 SQLAlchemy==2.0.58
annotated-types==0.8.0 argparse-dataclass==2.0.0 betacal==1.1.0 conda-inject==1.3.2
connection_pool==0.0.3 docutils==0.22.4 dpath==2.2.0 fastjsonschema==2.22.3 gitdb==4.0.12
greenlet==3.5.6 humanfriendly==10.0 immutables==0.21 jsonschema==4.26.0
jsonschema-specifications==2025.9.1 jupyter_core==5.9.1 nbformat==5.11.1 platformdirs==4.14.8
pwlf==2.7.0 pydantic==2.14.4 pydantic_core==2.50.5 referencing==0.37.0 rpds-py==2026.9.1
scikit-posthocs==0.17.1 smart_open==7.7.1 smmap==5.0.3 snakemake==9.27.1
snakemake-interface-common==1.23.0 snakemake-interface-executor-plugins==9.4.0
snakemake-interface-logger-plugins==2.1.0 snakemake-interface-report-plugins==1.3.0
snakemake-interface-scheduler-plugins==2.0.2 snakemake-interface-storage-plugins==4.4.1
sqlmodel==0.0.37 tenacity==9.2.1 throttler==1.2.3 traitlets==5.16.1 typing-inspection==0.4.5
typing_extensions==4.15.0 tzdata==2026.6 yte==1.9.4""".split()
PLATFORM = ["--python-version", "3.12", "--implementation", "cp"] + [
    a for p in ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
                "manylinux1_x86_64") for a in ("--platform", p)]


def fetch_wheels(folder: Path) -> None:
    """Every wheel of WHEELS for the device's Python 3.12 (x86-64) into ``folder``;
    a package published only as source is pure Python here, built into a wheel."""
    folder.mkdir(parents=True, exist_ok=True)
    pip = [sys.executable, "-m", "pip"]
    for spec in WHEELS:
        got = subprocess.run(pip + ["download", "-q", "--no-deps", "--only-binary=:all:", *PLATFORM,
                                    "-d", str(folder), spec], capture_output=True, text=True)
        if got.returncode:
            subprocess.run(pip + ["wheel", "-q", "--no-deps", "-w", str(folder), spec], check=True)
    size = sum(p.stat().st_size for p in folder.glob("*.whl")) / 2**20
    print(f"{len(list(folder.glob('*.whl')))} wheels, {size:.1f} MiB in {folder}")


def check_config(archs: dict, tiny: bool) -> dict:
    config = yaml.safe_load((REPO / "config/rehearsal.yaml").read_text())
    config["exp"] = EXP
    config["archs"] = {a: {"model": m, "recipe": r, "max_epochs": 2} for a, (m, r) in archs.items()}
    config["training"].update(fast="auto", device="auto")
    config["split"]["n_holdout"] = 100_000
    if tiny:
        config["split"].update(n_train=512, n_val=256, n_holdout=3000)
        config["evaluation"]["sizes"] = [100, 300]
        for spec in config["archs"].values():
            spec["overrides"] = {"batch_size": 64}
    return config


def snakemake(workdir: Path, config_path: Path, archs, cores: int, extra=()) -> tuple[int, float]:
    targets = [f"results/{EXP}/logits/{a}/holdout.npz" for a in archs]
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(workdir),
           "--configfile", str(config_path), "--cores", str(cores),
           *targets, "--set-resources", "train:gpu=1", "export_logits:gpu=1",
           "--resources", "gpu=1", *extra]
    print("$", " ".join(cmd), flush=True)
    t0 = time.perf_counter()
    rc = subprocess.call(cmd, cwd=REPO)
    return rc, time.perf_counter() - t0


def _tsv_wall(path: Path) -> float | None:
    if not path.is_file():
        return None
    return float(next(csv.DictReader(path.open(), delimiter="\t"))["s"])


def eager_epoch(config: dict, arch: str, out_dir: Path) -> dict:
    """One eager epoch of ``arch`` on the workflow's training images, recipe and seed."""
    from fitontest.data import sources, split
    from fitontest.vision import train

    spec = config["archs"][arch]
    source = sources.open_source(config)
    idx = split.read_split(out_dir.parents[1] / "data/split.json")["train"]
    X, y = source.load(idx)
    recipe = {**train.RECIPES[spec["recipe"]], **spec.get("overrides", {})}
    t0 = time.perf_counter()
    path = train.train_model(spec["model"], X, y, recipe=recipe, out_dir=out_dir, device="auto",
                             seed=config["training"]["seed"], num_classes=source.num_classes,
                             max_epochs=1, fast="eager", progress=False, log=lambda m: None,
                             num_threads=1)      # the train job's one thread (its bytes on a CPU)
    import torch

    h = torch.load(path, map_location="cpu", weights_only=True)["history"][0]
    return {"loss": h["loss"], "seconds": h["seconds"], "call_s": time.perf_counter() - t0,
            "tenths": h["loss_tenths"]}


def collect(workdir: Path, arch: str) -> dict:
    import torch

    res = workdir / "results" / EXP
    ck = torch.load(res / f"models/{arch}/model.pt", map_location="cpu", weights_only=True)
    export_log = (workdir / f"logs/{EXP}/logits/{arch}/export.log").read_text()
    rates = [line.split("img/s")[0].rsplit(",", 1)[1].strip() for line in export_log.splitlines()
             if "logits of" in line]
    return {"arch": arch, "model": ck["model_name"], "path": ck["fast"]["path"],
            "options": ck["fast"]["options"], "reason": ck["fast"]["reason"],
            "fell_back": ck["fast"]["fell_back"], "complete": ck["complete"],
            "epochs": [{"epoch": h["epoch"], "seconds": h["seconds"], "cpu_seconds": h["cpu_seconds"],
                        "loss": h["loss"], "accuracy": h["accuracy"], "path": h["path"]}
                       for h in ck["history"]],
            "tenths": ck["history"][0]["loss_tenths"],
            "train_job_s": _tsv_wall(res / f"benchmarks/train/{arch}.tsv"),
            "export_job_s": _tsv_wall(res / f"benchmarks/export_logits/{arch}.tsv"),
            "export_img_s": [float(r) for r in rates]}


def report(rows: list[dict], env: dict) -> str:
    lines = [f"# The workflow's own GPU path, checked ({env['date']})", "",
             f"`python3 benchmarks/training/gpu_workflow_check.py` of commit {env['commit']}; "
             f"{env['device']}, {env['cpus']} CPU cores, torch {env['torch']}. snakemake ran the "
             "`split`, `train` and `export_logits` rules of the workflow on `config/rehearsal.yaml`'s "
             f"procedural images ({env['split']}), {env['networks']} with their recipes "
             "stopped after 2 epochs (`archs.<arch>.max_epochs`), `training.fast: auto`, one GPU "
             f"job at a time: exit {env['rc']}, {env['snakemake_s']:.1f} s wall. The eager epoch: "
             "`train_model(fast=\"eager\", max_epochs=1)` on the same images, recipe and seed.", "",
             "| network | path (auto) | epoch 1 s | epoch 2 s | train job s | epoch-1 loss | "
             "eager epoch-1 loss | Δ loss | eager epoch s | export job s | export img/s |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        ep = (r["epochs"] + [{}, {}])[:2]
        e = r.get("eager") or {}
        cells = [r["arch"], r["path"], ep[0].get("seconds", ""), ep[1].get("seconds", ""),
                 r["train_job_s"] or "", f"{ep[0]['loss']:.6f}" if ep[0] else "",
                 f"{e['loss']:.6f}" if e else r.get("eager_skipped", ""),
                 f"{ep[0]['loss'] - e['loss']:+.2e}" if e and ep[0] else "", e.get("seconds", ""),
                 r["export_job_s"] or "", " / ".join(f"{x:,.0f}" for x in r["export_img_s"])]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    lines += ["", "Why each path (the model's `fast` metadata), and the loss after each tenth of "
              "epoch 1 (auto, then eager):", ""]
    for r in rows:
        lines.append(f"- {r['arch']}: {r['options']}; {r['reason']}"
                     + (f"; fell back: {r['fell_back']}" if r["fell_back"] else ""))
        lines.append("  - auto:  " + " ".join(f"{x:.4f}" for x in r["tenths"]))
        if r.get("eager"):
            lines.append("  - eager: " + " ".join(f"{x:.4f}" for x in r["eager"]["tenths"]))
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT") or "gpu_workflow_check_out")
    ap.add_argument("--workdir", default=None, help="the workflow's directory (default: a temporary one)")
    ap.add_argument("--cores", type=int, default=os.cpu_count())
    ap.add_argument("--budget-s", type=float, default=420.0,
                    help="no eager epoch starts that would end after this many seconds of the run")
    ap.add_argument("--commit", default=None, help="the commit checked (default: git's, if any)")
    ap.add_argument("--dry-run", action="store_true", help="the whole check on tiny networks and sizes")
    ap.add_argument("--snakemake-dry-run", action="store_true", help="the DAG only (snakemake -n)")
    ap.add_argument("--fetch-wheels", metavar="DIR", help="download the wheels the device lacks, then stop")
    args = ap.parse_args()
    if args.fetch_wheels:
        fetch_wheels(Path(args.fetch_wheels))
        return 0
    start = time.perf_counter()
    archs = TINY if args.dry_run else PAPER
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="gpu_check_"))
    workdir.mkdir(parents=True, exist_ok=True)
    config = check_config(archs, tiny=args.dry_run)
    config_path = workdir / "check.yaml"
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    if args.snakemake_dry_run:
        return snakemake(workdir, config_path, archs, args.cores, ["-n", "--quiet", "rules"])[0]
    rc, wall = snakemake(workdir, config_path, archs, args.cores)

    import torch

    commit = args.commit or subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                                           capture_output=True, text=True).stdout.strip() or "unknown"
    env = {"date": time.strftime("%Y-%m-%d"), "commit": commit, "torch": torch.__version__,
           "cpus": os.cpu_count(), "rc": rc, "snakemake_s": wall,
           "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU (CPU)",
           "networks": ", ".join(f"{a} ({m}, recipe {r})" for a, (m, r) in archs.items()),
           "split": "{n_train:,} / {n_val:,} / {n_holdout:,} images".format(**config["split"])}
    logs = sorted((workdir / "logs" / EXP).rglob("*.log"))
    (out / "workflow_logs.txt").write_text("".join(f"== {p.relative_to(workdir)}\n{p.read_text()}\n"
                                                   for p in logs))
    rows = []
    with open(out / "gpu_workflow_check.jsonl", "w") as jl:
        jl.write(json.dumps({"kind": "env", **env}) + "\n")
        for arch in archs:
            try:
                row = collect(workdir, arch)
            except (OSError, KeyError, RuntimeError) as exc:
                jl.write(json.dumps({"kind": "network", "arch": arch, "error": repr(exc)}) + "\n")
                continue
            # one eager epoch at about the train job's pace (eager steps are slower): skip
            # it when the budget would not hold a guessed three times the auto epoch
            guess = 3 * max(e["seconds"] for e in row["epochs"]) + 15
            if time.perf_counter() - start + guess > args.budget_s:
                row["eager_skipped"] = f"budget (guessed {guess:.0f} s)"
            else:
                row["eager"] = eager_epoch(config, arch,
                                           workdir / "results" / EXP / "eager" / arch)
            rows.append(row)
            jl.write(json.dumps({"kind": "network", **row}) + "\n")
    text = report(rows, env)
    (out / "gpu_workflow_check.md").write_text(text)
    print(text)
    print(f"check: {time.perf_counter() - start:.0f} s in all", flush=True)
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
