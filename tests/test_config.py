"""Config validation: bad values fail before any job, naming the key."""
import copy

import pytest

from conftest import load_config, run_snakemake, write_mini_cifar5m
from fitontest.study.config import ConfigError, check_config


@pytest.fixture
def cfg():
    from snakemake.utils import validate

    c = load_config()
    validate(c, str(__import__("conftest").REPO / "workflow/schemas/config.schema.yaml"))
    return c


def test_default_config_passes(cfg):
    check_config(cfg)


@pytest.mark.parametrize("mutate,key", [
    (lambda c: c["archs"]["resnet"].update(model="resnet9000"), "archs.resnet.model"),
    (lambda c: c["archs"]["resnet"].update(recipe="nope"), "archs.resnet.recipe"),
    (lambda c: c["calibrators"]["multiclass"].append("tempz"), "calibrators.multiclass"),
    (lambda c: c["calibrators"]["binary"].append("platypus"), "calibrators.binary"),
    (lambda c: c["evaluation"]["evaluators"].append("ece_magic"), "evaluation.evaluators"),
    (lambda c: c["evaluation"]["calibrators"].append("unknown_cal"), "evaluation.calibrators"),
    (lambda c: c["evaluation"].update(sizes=[1000, c["split"]["n_holdout"]]),
     "evaluation.sizes"),
    (lambda c: c["truth"].append("oracle"), "truth"),
    (lambda c: c["tasks"].update(horse=12), "tasks.horse"),
    (lambda c: c.update(family_params={"isotonic": {"bogus": 1}}), "family_params.isotonic"),
    (lambda c: c["synthetic"].update(shapes=["circle"]), "synthetic.shapes"),
    (lambda c: c["training"].update(fast={"compile": "reduce-overhead", "cuda_graph": True}),
     "training.fast"),
    (lambda c: c["training"].update(fast="fastest"), "training.fast"),
])
def test_bad_values_name_the_key(cfg, mutate, key):
    c = copy.deepcopy(cfg)
    mutate(c)
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        check_config(c)


def test_cifar5m_checks_name_the_problem(cfg, tmp_path):
    c = copy.deepcopy(cfg)
    c["data_source"] = "cifar5m"
    with pytest.raises(ConfigError, match="truth.*known class posterior"):
        check_config(c)   # the posterior truth exists only for procedural images
    c["truth"] = ["isotonic"]
    c["cifar5m_dir"] = str(tmp_path / "nowhere")
    with pytest.raises(ConfigError, match="cifar5m_dir"):
        check_config(c)
    data = write_mini_cifar5m(tmp_path / "c5m", n_per_part=20)
    c["cifar5m_dir"] = str(data)
    check_config(c)
    (data / "part3.npz").unlink()
    with pytest.raises(ConfigError, match="part3"):
        check_config(c)


@pytest.mark.workflow
def test_snakemake_refuses_bad_config_before_any_job(tmp_path):
    c = load_config()
    c["evaluation"]["evaluators"].append("ece_magic")
    out = run_snakemake(tmp_path, "-n", "--cores", "1", config=c)
    assert out.returncode != 0
    said = out.stdout + out.stderr   # Snakemake may print the error on either
    assert "evaluation.evaluators" in said and "ece_magic" in said
    assert not (tmp_path / "results").exists()


def test_cli_strings_get_their_types():
    from fitontest.study.config import coerce_cli_types

    cfg = {"split": {"n_train": "600", "seed": "0"}, "cifar5m_dir": "/data/c5m",
           "training": {"progress": "false", "lr": "0.05"}, "x": ["1", "none", "null"],
           "exp": "mini"}
    coerce_cli_types(cfg)
    assert cfg["split"] == {"n_train": 600, "seed": 0}
    assert cfg["training"] == {"progress": False, "lr": 0.05}
    assert cfg["x"] == [1, "none", None] and cfg["exp"] == "mini"
    assert cfg["cifar5m_dir"] == "/data/c5m"
