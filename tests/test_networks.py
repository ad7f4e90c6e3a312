"""The study's networks (fitontest.study.networks): every architecture once per
training seed, their names, and the checks of training.seeds."""
import warnings

import pytest

from fitontest.study.config import ConfigError, check_config
from fitontest.study.networks import Network, network_name, networks, training_seeds
from conftest import load_config


def test_names_keep_seed_zero_as_the_architecture():
    assert network_name("resnet", 0) == "resnet"
    assert network_name("resnet", 2) == "resnet-s2"
    cfg = {"data_source": "procedural", "archs": {"a": {}, "b": {}},
           "training": {"seeds": [0, 3]}}
    assert networks(cfg) == {"a": Network("a", 0), "a-s3": Network("a", 3),
                             "b": Network("b", 0), "b-s3": Network("b", 3)}
    assert Network("a", 3).columns("a-s3") == {"arch": "a", "network": "a-s3"}


def test_the_older_key_reads_as_one_seed_and_warns():
    with pytest.warns(FutureWarning, match="training.seeds"):
        assert training_seeds({"training": {"seed": 4, "seeds": [0]}}) == [4]
    with pytest.raises(ValueError, match="contradicts"):
        training_seeds({"training": {"seed": 4, "seeds": [0, 1]}})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert training_seeds({"training": {"seeds": [2, 0]}}) == [2, 0]
    for bad in ([], [1, 1], [-1]):
        with pytest.raises(ValueError, match="training.seeds"):
            training_seeds({"training": {"seeds": bad}})


def test_colliding_names_are_a_config_error():
    cfg = load_config()
    cfg["archs"] = {**cfg["archs"], "resnet-s1": dict(cfg["archs"]["resnet"])}
    with pytest.raises(ConfigError, match="resnet-s1"):
        check_config(cfg, models=False)


def test_the_default_trains_three_networks_per_architecture():
    cfg = load_config()
    nets = networks(cfg)
    assert len(nets) == 3 * len(cfg["archs"])
    per = {}
    for net in nets.values():
        per.setdefault(net.arch, set()).add(net.seed)
    assert all(len(s) >= 3 for s in per.values())


def test_table_captions_state_the_population_of_the_scope():
    """Two networks per architecture: Table 3's clusters are the networks and
    its caption says so; asked for the networks scope, the (network, task,
    seed) test subsets of these networks."""
    from fitontest.report import policy, simulate
    from fitontest.report.specs import build, spec_named

    f = simulate.ScoreWorld(archs=("a", "b"), tasks=("car", "confidence"),
                            calibrators=("platt", "beta"), sizes=(1000,),
                            effects={"e0": 0.0, "e1": 0.1}, design="independent",
                            networks=2).draw(1)
    for scope, clusters, words in (("architectures", 4, "networks of these architectures"),
                                   ("networks", 8, "these networks, tasks")):
        t = build(spec_named("table3_cmee_overall"), {"scores": policy.with_scope(f, scope)},
                  "isotonic")
        assert t.n_units.loc["all"].max() == clusters
        assert words in t.full_caption()
