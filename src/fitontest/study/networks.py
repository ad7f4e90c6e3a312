"""The study's networks: every architecture trained once per training seed.

A claim about architectures ("PL beats binned ECE on ResNets") is about the
networks a recipe makes, not about the weights one training happened to
give: a retrained network moves the tables by about their own interval
(benchmarks/measured/network_variance.md). So config key ``training.seeds``
trains every architecture once per seed, and every per-network stage (train,
export, calibrators, truth, evaluators) runs per network. The tables and
findings take the networks as their independent clusters
(:mod:`fitontest.report.policy`).

A network is named by its architecture's key, with ``-s<seed>`` for a
training seed other than 0: ``resnet`` (seed 0), ``resnet-s1``, ... so that
a run with more seeds keeps the files of the networks it already has. The
result frames carry both: ``arch`` (the architecture) and ``network``.

The real-data study (``data_source: logits``) trains nothing: one network per
logit file, named by the file, its own architecture.
"""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from typing import Any, Mapping

__all__ = ["Network", "network_name", "training_seeds", "networks", "NETWORK"]

#: the column of the result frames that names the network (``arch``: its architecture)
NETWORK = "network"
_SUFFIX = re.compile(r"-s\d+$")


@dataclass(frozen=True)
class Network:
    arch: str        # the architecture: a key of config ``archs`` (or a logit file's model)
    seed: int        # the training seed

    def columns(self, name: str) -> dict[str, str]:
        """The key columns of this network's result rows."""
        return {"arch": self.arch, NETWORK: name}


def network_name(arch: str, seed: int) -> str:
    """``arch`` for training seed 0, ``arch-s<seed>`` otherwise."""
    return arch if int(seed) == 0 else f"{arch}-s{int(seed)}"


def training_seeds(config: Mapping[str, Any]) -> list[int]:
    """The training seeds of a config (``training.seeds``; the older
    ``training.seed: N`` means ``seeds: [N]``, with a warning)."""
    training = config.get("training") or {}
    if "seed" in training:
        seeds = training.get("seeds", [0])
        if list(seeds) not in ([0], [int(training["seed"])]):
            raise ValueError(f"config key 'training.seed' ({training['seed']}) contradicts "
                             f"'training.seeds' ({list(seeds)}); use training.seeds alone")
        warnings.warn("config key 'training.seed' is deprecated: use 'training.seeds: "
                      f"[{int(training['seed'])}]' (one network per architecture per seed)",
                      FutureWarning, stacklevel=2)
        return [int(training["seed"])]
    seeds = [int(s) for s in training.get("seeds", [0])]
    if not seeds or len(set(seeds)) != len(seeds) or min(seeds) < 0:
        raise ValueError(f"config key 'training.seeds' must list distinct non-negative seeds, "
                         f"got {seeds}")
    return seeds


def networks(config: Mapping[str, Any]) -> dict[str, Network]:
    """``{network name: Network}`` of a config, architecture by architecture,
    each in the order of ``training.seeds``."""
    from fitontest.data import sources

    if sources.kind(config) == "logits":
        return {m: Network(m, 0) for m in sources.model_names(config)}
    archs, seeds = list(config["archs"]), training_seeds(config)
    out = {network_name(a, s): Network(a, s) for a in archs for s in seeds}
    if len(out) < len(archs) * len(seeds):
        clash = [a for a in archs if _SUFFIX.search(a)]
        raise ValueError(f"config key 'archs': {clash} clash with another architecture's "
                         f"network names (<arch>-s<seed>); rename them")
    return out
