"""Fitting cluster requests to the largest SLURM node (workflow/rules/cluster.smk)."""
import pytest

from fitontest.study.slurm import fit_request, gpus_of, parse_sinfo


@pytest.mark.parametrize("gres,n", [("(null)", 0), ("gpu:4", 4), ("gpu:a100:2(S:0-1)", 2),
                                    ("gpu:a100:2,gpu:v100:1", 3), ("shard:8,gpu:1", 1),
                                    ("mps:100", 0)])
def test_gpus_of_gres(gres, n):
    assert gpus_of(gres) == n


def test_parse_sinfo_takes_the_largest_of_each():
    text = "2|23000|(null)\n64|512000|(null)\n32|256000+|gpu:a100:4(S:0-1)\n"
    assert parse_sinfo(text) == {"cpus": 64, "mem_mb": 512000, "gpus": 4}
    with pytest.raises(ValueError, match="no node"):
        parse_sinfo("")


NODE = {"cpus": 2, "mem_mb": 20000, "gpus": 0}


def test_requests_larger_than_the_node_are_capped_with_a_message():
    value, msg = fit_request("train", "cpus_per_task", 8, NODE)
    assert value == 2 and "cpus_per_task=8" in msg
    value, msg = fit_request("train", "mem_mb", 32000, NODE)
    assert value == 20000 and "train" in msg and "mem_mb=32000" in msg
    assert fit_request("train", "gpu", 1, NODE)[0] == 0
    assert fit_request("evaluate", "_cores", 4, NODE)[0] == 2


def test_requests_that_fit_and_other_resources_pass_unchanged():
    assert fit_request("truth", "mem_mb", 16000, NODE) == (16000, None)
    assert fit_request("train", "runtime", 1440, NODE) == (1440, None)
    assert fit_request("train", "slurm_partition", "gpu", NODE) == ("gpu", None)
    # no sinfo: nothing is known, nothing changes
    assert fit_request("train", "cpus_per_task", 8, None) == (8, None)


def test_gpu_follows_training_device():
    assert fit_request("train", "gpu", 1, None, device="cpu")[0] == 0
    big = {"cpus": 64, "mem_mb": 10**6, "gpus": 4}
    assert fit_request("train", "gpu", 1, big, device="cuda") == (1, None)
    with pytest.raises(ValueError, match="training.device"):
        fit_request("train", "gpu", 1, NODE, device="cuda")


def test_cap_rules_fits_fixed_and_per_job_values_of_snakemake_rules():
    from types import SimpleNamespace

    from snakemake.resources import Resources

    from fitontest.study.slurm import cap_rules

    rule = SimpleNamespace(name="train", resources=Resources.from_mapping(
        {"mem_mb": 32000, "runtime": 600, "cpus_per_task": lambda wildcards: 8}))
    small = SimpleNamespace(name="truth", resources=Resources.from_mapping({"mem_mb": 4000}))
    said = []
    cap_rules([rule, small], NODE, warn=said.append)
    assert rule.resources["mem_mb"].value == 20000
    assert rule.resources["runtime"].value == 600 and small.resources["mem_mb"].value == 4000
    assert rule.resources["cpus_per_task"].evaluate(None).value == 2
    rule.resources["cpus_per_task"].evaluate(None)
    assert len(said) == 2 and all("train" in m for m in said)   # once per resource
