"""The Snakemake DAG of the shipped configs: dry runs (the default, the paper's, the
SLURM profile), the lint, and the paper config shrunk and really run. Apart from
test_workflow.py (the tiny real run and what reads it) so that ``--dist loadfile``
runs the two halves on two workers."""
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml

from conftest import REPO, load_config, run_snakemake, snakemake_cmd, write_mini_cifar5m
from test_workflow import job_counts, tiny_config

pytestmark = pytest.mark.workflow

STAGES = ["split", "train", "export_logits", "calibrate_multiclass", "calibrate_binary",
          "truth", "evaluate", "collect_scores", "calibrator_metrics",
          "tables", "figures", "findings", "synthetic_evaluate", "synthetic_collect"]


def test_default_config_dry_run_lists_every_stage(tmp_path):
    out = run_snakemake(tmp_path, "-n", "--cores", "2", config=load_config())
    assert out.returncode == 0, out.stderr[-3000:]
    counts = job_counts(out.stdout + out.stderr)
    missing = [s for s in STAGES if s not in counts]
    assert not missing, f"stages without jobs: {missing}\n{out.stdout[-2000:]}"
    cfg = load_config()
    # every architecture once per training seed: three networks each
    assert len(cfg["training"]["seeds"]) >= 3
    n_arch = len(cfg["archs"]) * len(cfg["training"]["seeds"])
    assert counts["train"] == n_arch
    # batch.evaluators 16: per network one job for the 15 single-thread evaluators,
    # one for PL and PL3; every calibrator of a kind in one job; the synthetic
    # evaluators of every shape in one; both splits' logits and every truth of a network in one
    assert cfg["batch"] == {"evaluators": 16, "calibrators": 8}
    assert len(cfg["evaluation"]["evaluators"]) == 17
    assert counts["evaluate"] == n_arch * 2
    assert counts["calibrate_multiclass"] == counts["calibrate_binary"] == n_arch
    assert len(cfg["synthetic"]["evaluators"]) <= 16 and counts["synthetic_evaluate"] == 1
    assert counts["export_logits"] == counts["truth"] == n_arch


def test_paper_config_dry_run_on_miniature_cifar5m(tmp_path):
    """The README's command, from a directory that also holds the default config:
    --configfile replaces the default, so none of its networks or tasks join."""
    data = write_mini_cifar5m(tmp_path / "cifar5m", n_per_part=50)
    shutil.copytree(REPO / "config", tmp_path / "config")
    cfg = load_config("paper.yaml")
    assert not set(cfg["archs"]) & set(load_config()["archs"])
    out = run_snakemake(tmp_path, "-n", "--cores", "2", "--configfile", "config/paper.yaml",
                        "--config", f"cifar5m_dir={data}")
    assert out.returncode == 0, out.stderr[-3000:]
    counts = job_counts(out.stdout + out.stderr)
    n_arch, n_task = len(cfg["archs"]), len(cfg["tasks"])
    n_mc = len(set(["none"] + cfg["calibrators"]["multiclass"]))
    assert counts["split"] == 1
    assert counts["train"] == n_arch
    assert counts["export_logits"] == n_arch
    assert counts["calibrate_multiclass"] == n_arch * n_mc
    assert counts["calibrate_binary"] == n_arch * len(cfg["calibrators"]["binary"])
    assert counts["truth"] == n_arch * n_task
    assert counts["evaluate"] == n_arch * len(cfg["evaluation"]["evaluators"])
    assert 100 <= sum(counts.values()) <= 5000


@pytest.mark.parametrize("where", ["command line", "global profile"])
def test_slurm_profile_dry_run_without_conda(tmp_path, where):
    """The README's SLURM command, dry, on a machine without conda or SLURM:
    the profile must not need either, and partition / account given as the
    README says must reach every job alongside the profile's own resources."""
    import os
    import shutil

    pytest.importorskip("snakemake_executor_plugin_slurm")
    # PATH: the venv and a shell, no conda, no sinfo/sbatch/sacct
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("bash", "sh", "which", "env", "cat", "uname", "git"):
        if shutil.which(tool):
            (bindir / tool).symlink_to(shutil.which(tool))
    env = dict(os.environ, PATH=f"{Path(snakemake_cmd()[0]).parent}:{bindir}")
    cfg = tiny_config()
    cfg["batch"] = {"evaluators": 1, "calibrators": 1}   # the profile names unbatched rules
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(cfg))
    cmd = snakemake_cmd() + [
        "-s", str(REPO / "Snakefile"), "-d", str(tmp_path), "-n",
        "--workflow-profile", str(REPO / "workflow/profiles/slurm"),
        "--configfile", str(path), "--config", "training={device: cpu}"]
    if where == "command line":
        cmd += ["--default-resources", "slurm_partition=short", "slurm_account=lab42"]
    else:
        profile = tmp_path / "global-profile"
        profile.mkdir()
        (profile / "config.yaml").write_text(
            "default-resources:\n  slurm_partition: short\n  slurm_account: lab42\n")
        env["SNAKEMAKE_PROFILE"] = str(profile)
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=REPO, env=env)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-4000:]
    assert "conda" not in text.lower().replace("conda environments: ignored", "")
    jobs = {m.group(1): m.group(2) for m in re.finditer(
        r"rule (\w+):\n(?:.*\n)*?\s+resources: (.*)", text)}
    assert {"train", "evaluate", "truth", "tables"} <= set(jobs), sorted(jobs)
    for rule, res in jobs.items():
        if rule == "all":
            continue
        assert "slurm_partition=short" in res and "slurm_account=lab42" in res, (rule, res)
    # the profile's per-rule table is kept next to the command-line defaults
    assert "runtime=1440" in jobs["train"] and "mem_mb=32000" in jobs["train"]
    # training.device: cpu asks for no GPU
    assert "gpu=0" in jobs["train"] and "no GPU requested (training.device: cpu)" in text


@pytest.mark.parametrize("scope", ["one network",
                                   pytest.param("whole study", marks=pytest.mark.slow)])
def test_paper_config_scaled_down_runs_on_miniature_cifar5m(tmp_path, scope):
    """The paper config, shrunk through --config overrides, really runs on CPU: one
    of its networks from the split of the CIFAR-5m files to its scores under the
    paper's truths and evaluator variants (7 jobs), or the whole study to its
    tables (24 jobs, the slow set: its later stages are the tiny run's rules)."""
    data = write_mini_cifar5m(tmp_path / "cifar5m", n_per_part=400)
    evaluators = ["ece_es15", "isotonic"]
    targets = ([] if scope == "whole study"
               else [f"results/mini/scores/resnet110/{e}.parquet" for e in evaluators])
    out = run_snakemake(
        tmp_path, "--cores", "2", *targets, "--configfile", str(REPO / "config/paper.yaml"),
        "--config", f"cifar5m_dir={data}", "exp=mini",
        "split={n_train: 600, n_val: 400, n_holdout: 1200, seed: 0}",
        # --config merges into paper.yaml's mappings: shrink its three networks
        "archs={" + ", ".join(f"{a}: {{model: cnn_tiny, recipe: small, overrides: {{epochs: 1}}}}"
                              for a in ("resnet110", "densenet40", "wrn32")) + "}",
        "calibrators={multiclass: [none, temps], binary: [isotonic]}",
        "evaluation={calibrators: [temps, isotonic], sizes: [300, 600], seeds: [0], "
        f"evaluators: [{', '.join(evaluators)}]}}",
        "report={figures: none}",
        # the methods of a network in one job (paper.yaml has a job per method, its DAG
        # is test_paper_config_dry_run_on_miniature_cifar5m's; that batching changes
        # no result is test_batch_sizes_change_the_jobs_not_the_results'): 24 jobs, not 39
        "batch={evaluators: 16, calibrators: 8}", timeout=900)
    assert out.returncode == 0, (out.stdout[-3000:], out.stderr[-5000:])
    res = tmp_path / "results" / "mini"
    split = __import__("json").loads((res / "data/split.json").read_text())
    assert split["meta"]["data_source"] == "cifar5m" and split["meta"]["n_images"] == 2400
    paper = load_config("paper.yaml")
    if scope == "one network":
        assert sorted(p.name for p in (res / "logits").iterdir()) == ["resnet110"]
        scores = pd.concat([pd.read_parquet(res / "scores" / "resnet110" / f"{e}.parquet")
                            for e in evaluators])
        assert set(scores.arch) == {"resnet110"}
        assert set(scores.task) == set(paper["tasks"])
    else:
        scores = pd.read_parquet(res / "scores.parquet")
        assert set(scores.arch) == {"resnet110", "densenet40", "wrn32"}
        assert (res / "tables" / "table3_cmee.md").exists()
    assert set(scores.evaluator) == set(evaluators)
    assert set(scores.truth) == set(paper["truth"])


def test_workflow_is_lint_clean(tmp_path):
    """`snakemake --lint` finds nothing (the snakemake-workflow-template rules:
    a log per rule, helpers in common.smk, no mixed rules and functions)."""
    out = run_snakemake(tmp_path, "--lint", config=load_config())
    text = out.stdout + out.stderr
    assert "Congratulations, your workflow is in a good condition!" in text, text[-3000:]
