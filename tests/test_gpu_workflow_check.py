"""The prepared device check of the workflow's GPU path
(benchmarks/training/gpu_workflow_check.py), on its CPU side: the config it
writes and the jobs snakemake would run for it; ``archs.<arch>.max_epochs``
stops a network's training without changing its recipe."""
from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from conftest import REPO, load_benchmark
from fitontest.vision.train import train_model
from test_train import learnable_data


def test_the_check_config_is_the_papers_networks_stopped_after_two_epochs():
    script = load_benchmark("gpu_workflow_check")
    config = script.check_config(script.PAPER, tiny=False)
    assert config["training"]["fast"] == "auto"
    assert config["split"] == {**config["split"], "n_train": 45_000, "n_val": 5_000,
                               "n_holdout": 100_000}
    assert config["data_source"] == "procedural"
    assert {a: (s["model"], s["recipe"], s["max_epochs"]) for a, s in config["archs"].items()} == {
        "resnet110": ("resnet110", "resnet110", 2), "densenet40": ("densenet40", "densenet40", 2),
        "wrn32": ("wrn32", "wrn32", 2)}
    assert all("overrides" not in s for s in config["archs"].values())   # the paper recipes


def test_the_check_runs_split_train_and_export_only(tmp_path):
    """snakemake -n of the check's own config: 1 split, 3 trainings, 3 exports."""
    out = subprocess.run([sys.executable, str(REPO / "benchmarks/training/gpu_workflow_check.py"),
                          "--snakemake-dry-run", "--workdir", str(tmp_path), "--out",
                          str(tmp_path / "out"), "--cores", "2"],
                         capture_output=True, text=True, timeout=300, cwd=REPO)
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    text = out.stdout + out.stderr
    stats = text.split("Job stats:", 1)[1].split("total", 1)[0]
    counts = {line.split()[0]: int(line.split()[1]) for line in stats.splitlines()
              if len(line.split()) == 2 and line.split()[1].isdigit()}
    assert counts == {"split": 1, "train": 3, "export_logits": 3}, text[-2000:]


@pytest.mark.usefixtures("one_torch_thread")
def test_max_epochs_stops_training_with_the_recipe_unchanged(tmp_path):
    """What archs.<arch>.max_epochs passes to train_model: the first epochs
    of the full recipe (the same weights as the uninterrupted run's after
    them), the model marked incomplete."""
    X, y = learnable_data(96)
    recipe = {"epochs": 3, "batch_size": 32, "lr": 0.05, "schedule": "cosine",
              "weight_decay": 5e-4, "pad_mode": "zeros"}
    quiet = dict(device="cpu", seed=1, log=lambda m: None, progress=False)
    short = torch.load(train_model("cnn_tiny", X, y, recipe=recipe, out_dir=tmp_path / "s",
                                   max_epochs=2, **quiet), weights_only=True)
    full = torch.load(train_model("cnn_tiny", X, y, recipe=recipe, out_dir=tmp_path / "f",
                                  **quiet), weights_only=True)
    assert not short["complete"] and short["epochs_done"] == 2 and short["recipe"]["epochs"] == 3
    assert [h["lr"] for h in short["history"]] == [h["lr"] for h in full["history"][:2]]
    assert full["complete"]
