"""Synthetic score frames with the study's dependence, for measuring verdicts.

:class:`ScoreWorld` draws frames in the format of ``scores.parquet``
(:mod:`fitontest.study.schema`) whose measure (CMEE, say) is, on the log
scale, a sum of

- **fixed effects** drawn once per world: model, task, (model, task),
  calibrator, evaluator and an evaluator x (model, task, calibrator)
  interaction — the networks, tasks and calibrators the study happens to
  have;
- **random effects of the test subsets**, drawn afresh per seed and nested
  as the study nests them: one per seed, per (seed, model), per (seed, model,
  task), per (seed, model, task, calibrator) (the calibrators of one (model,
  task, seed) share images and scores: a small share of their own), per test
  size (shrinking as 1/sqrt(size)), and per evaluator (its own fit on the
  same data), and per evaluator and draw of test images (``seed_evaluator``:
  how well one evaluator happens to do on one draw of images, shared by the
  calibrators and sizes drawn from it). ``design`` says what the units share
  (docs/methods/06-truth-and-scores.md §6.2): ``paper`` — every unit of a seed shares the
  test images, so the seed and (seed, model) effects are common to all its units;
  ``independent`` — the images are drawn per (model, task, seed), so those effects are
  drawn per (model, task, seed) instead, with the same variances: the same noise per unit,
  the same compute, only the dependence differs. The frames carry the design in the
  ``subsets`` column, as the study's do.

**Networks** (``networks`` per architecture, :mod:`fitontest.study.networks`):
each ``draw`` trains new ones — a random effect per network (``network``) and
per (network, evaluator) (``network_evaluator``: how much better one evaluator
happens to do on one network's maps), drawn afresh per draw and shared by
every task, calibrator, size and seed of the network. A claim about the
architectures averages over them; with ``network_evaluator`` > 0 the
evaluators of an A/A world differ on every network but are equal on average.

``population_mean`` gives each row's expectation over the random effects
(lognormal: ``exp(fixed + sum of variances / 2)``), the target of an interval
for "these architectures, tasks and calibrators; new networks and test
subsets" (for "these networks" where the network effects are 0). Everything
is seeded; no file is read.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from fitontest.study.schema import SCORE_COLUMNS, SCORE_DESIGN

#: Standard deviations (log scale) of the random effects of the test subsets and
#: of the fixed effects. Chosen so that the earlier procedure comes close to what
#: the default run showed (issue 23: an A/A false-positive rate of 32-43 % at
#: nominal 5 %, t-intervals over (model, task, calibrator, seed) units covering
#: about 89 %); benchmarks/verdicts/aa_verdicts.py measures 46 % and 91 % here.
DEFAULT_RANDOM = {"seed": 0.02, "seed_arch": 0.04, "seed_task": 0.05, "seed_calibrator": 0.035,
                  "size": 0.15, "evaluator": 0.05, "seed_evaluator": 0.0,
                  "network": 0.0, "network_evaluator": 0.0}
#: A world where the units of a seed move together more strongly.
STRONG_SHARING = {"seed": 0.06, "seed_arch": 0.08, "seed_task": 0.10, "seed_calibrator": 0.03,
                  "size": 0.12, "evaluator": 0.04, "seed_evaluator": 0.0}
#: Independent units: nothing shared within a seed (only the selection of the best
#: can mislead a procedure here).
NO_SHARING = {"seed": 0.0, "seed_arch": 0.0, "seed_task": 0.0, "seed_calibrator": 0.0,
              "size": 0.15, "evaluator": 0.05, "seed_evaluator": 0.0}
DEFAULT_FIXED = {"arch": 0.1, "task": 0.1, "arch_task": 0.08, "calibrator": 0.1,
                 "interaction": 0.05}


@dataclass
class ScoreWorld:
    """A study design and its variance components (see the module docstring).

    ``effects``: evaluator -> additive log-scale shift (0 = as good as the
    reference); evaluators default to ``("e0",)``.
    """

    archs: Sequence[str] = ("r110", "d40", "w32")
    tasks: Sequence[str] = ("car", "ship", "frog", "confidence")
    calibrators: Sequence[str] = ("none", "temps", "vecs", "platt", "beta", "isotonic")
    sizes: Sequence[int] = (1000, 3000, 10000)
    effects: Mapping[str, float] = field(default_factory=lambda: {"e0": 0.0})
    random_sd: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_RANDOM))
    fixed_sd: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_FIXED))
    base: float = 0.01
    measure: str = "cmee"
    seed: int = 0                     # the world's fixed effects
    design: str = "paper"             # what the units of a seed share (module docstring)
    networks: int = 1                 # networks per architecture (training seeds)

    def __post_init__(self):
        if self.design not in ("paper", "independent"):
            raise ValueError(f"design must be 'paper' or 'independent', got {self.design!r}")
        unknown = (set(self.random_sd) - set(DEFAULT_RANDOM)) | (set(self.fixed_sd)
                                                                 - set(DEFAULT_FIXED))
        if unknown:
            raise ValueError(f"unknown variance components {sorted(unknown)}")
        if int(self.networks) < 1:
            raise ValueError(f"networks must be a positive integer, got {self.networks!r}")
        self.random_sd = {**{k: 0.0 for k in DEFAULT_RANDOM}, **self.random_sd}
        self.fixed_sd = {**{k: 0.0 for k in DEFAULT_FIXED}, **self.fixed_sd}
        self._grid = self._design()

    # -- the design ---------------------------------------------------------
    def _design(self) -> pd.DataFrame:
        a, t, c, e, n = (len(self.archs), len(self.tasks), len(self.calibrators),
                         len(self.effects), len(self.sizes))
        idx = np.indices((a, t, c, e, n)).reshape(5, -1)
        rng = np.random.default_rng([self.seed, 17])
        fs = self.fixed_sd
        fa, ft = rng.normal(0, fs["arch"], a), rng.normal(0, fs["task"], t)
        fat, fc = rng.normal(0, fs["arch_task"], (a, t)), rng.normal(0, fs["calibrator"], c)
        inter = rng.normal(0, fs["interaction"], (e, a, t, c))
        eff = np.asarray(list(self.effects.values()), dtype=np.float64)
        fixed = (fa[idx[0]] + ft[idx[1]] + fat[idx[0], idx[1]] + fc[idx[2]] + eff[idx[3]]
                 + inter[idx[3], idx[0], idx[1], idx[2]])
        return pd.DataFrame({"ia": idx[0], "it": idx[1], "ic": idx[2], "ie": idx[3],
                             "iz": idx[4], "fixed": fixed})

    def _size_sd(self, iz: np.ndarray) -> np.ndarray:
        sizes = np.asarray(self.sizes, dtype=np.float64)
        return self.random_sd["size"] * np.sqrt(sizes.min() / sizes[iz])

    def population_mean(self) -> pd.DataFrame:
        """Each (arch, task, calibrator, evaluator, size)'s expectation over new
        test subsets (column ``mean``)."""
        g = self._grid
        rs = self.random_sd
        var = (rs["seed"] ** 2 + rs["seed_arch"] ** 2 + rs["seed_task"] ** 2
               + rs["seed_calibrator"] ** 2 + rs["evaluator"] ** 2 + rs["seed_evaluator"] ** 2
               + rs["network"] ** 2 + rs["network_evaluator"] ** 2
               + self._size_sd(g["iz"].to_numpy()) ** 2)
        out = self._labels(g)
        out["mean"] = self.base * np.exp(g["fixed"].to_numpy() + var / 2)
        return out

    def _labels(self, g: pd.DataFrame) -> pd.DataFrame:
        pick = lambda vals, i: np.asarray(list(vals), dtype=object)[i.to_numpy()]  # noqa: E731
        return pd.DataFrame({"arch": pick(self.archs, g["ia"]), "task": pick(self.tasks, g["it"]),
                             "calibrator": pick(self.calibrators, g["ic"]),
                             "evaluator": pick(self.effects, g["ie"]),
                             "size": np.asarray(self.sizes)[g["iz"].to_numpy()]})

    # -- drawing ------------------------------------------------------------
    def draw(self, seeds: Sequence[int] | int, rng_seed: int | Sequence[int] = 0,
             truth: str = "isotonic") -> pd.DataFrame:
        """A scores frame for the test-subset ``seeds`` (an int: ``range(seeds)``)
        of every network; the random effects of seed r are drawn from
        ``[rng_seed, r]`` (and of network j from ``[rng_seed, j]``), so the
        same seed gives the same subsets. One network per architecture: the
        frame of the architectures' networks; more: each network's rows
        (network ``arch-s<j>``, :func:`fitontest.study.networks.network_name`)
        with its own test subsets and network effects."""
        seeds = list(range(seeds)) if isinstance(seeds, (int, np.integer)) else list(seeds)
        base = np.atleast_1d(rng_seed).astype(int).tolist()
        # the first network keeps the streams of a one-network world; the paper's
        # design shares each seed's test images across the networks
        return pd.concat([self._draw_network(
            seeds, base if j == 0 or self.design == "paper" else [*base, 1000 + j],
            [*base, 1000 + j], j, truth) for j in range(int(self.networks))], ignore_index=True)

    def _draw_network(self, seeds: list, rng_seed: list, net_seed: list, j: int,
                      truth: str) -> pd.DataFrame:
        """Every seed's rows of the ``j``-th network of each architecture: the
        test subsets from ``rng_seed``, the network effects from ``net_seed``."""
        from fitontest.study.networks import network_name

        g = self._grid
        a, t, c = len(self.archs), len(self.tasks), len(self.calibrators)
        rs = self.random_sd
        ia, it, ic, ie, iz = (g[k].to_numpy() for k in ("ia", "it", "ic", "ie", "iz"))
        parts = []
        labels = self._labels(g)
        for s in seeds:
            rng = np.random.default_rng([*map(int, np.atleast_1d(rng_seed)), int(s), 29])
            # paper: one effect per seed and per (seed, model), shared by the tasks;
            # independent: every (model, task) of the seed has its own draw
            shape = (a, t) if self.design == "independent" else (1, 1)
            u = rng.normal(0, rs["seed"], shape)
            v = rng.normal(0, rs["seed_arch"], (a, shape[1]))
            w = rng.normal(0, rs["seed_task"], (a, t))
            z = rng.normal(0, rs["seed_calibrator"], (a, t, c))
            eps = rng.normal(0, 1.0, (a, t, c, len(self.sizes)))[ia, it, ic, iz] * self._size_sd(iz)
            ev = rng.normal(0, rs["evaluator"], len(g))
            ua, ut = (ia, it) if self.design == "independent" else (0 * ia, 0 * it)
            # drawn last, so that the earlier effects keep their random streams
            se = rng.normal(0, rs["seed_evaluator"], (len(self.effects), *shape))
            logx = (g["fixed"].to_numpy() + u[ua, ut] + v[ia, ut] + w[ia, it] + z[ia, it, ic]
                    + eps + ev + se[ie, ua, ut])
            f = labels.copy()
            f["seed"] = int(s)
            f[self.measure] = self.base * np.exp(logx)
            parts.append(f)
        out = pd.concat(parts, ignore_index=True)
        # the network's effects: drawn apart, so the test subsets keep their streams
        net = np.random.default_rng([*net_seed, 37])
        n_main = net.normal(0, rs["network"], a)
        n_eval = net.normal(0, rs["network_evaluator"], (a, len(self.effects)))
        shift = np.tile(n_main[ia] + n_eval[ia, ie], len(seeds))
        out[self.measure] = out[self.measure].to_numpy() * np.exp(shift)
        out["network"] = [network_name(x, j) for x in out["arch"]]
        out["truth"] = truth
        return out.reindex(columns=SCORE_COLUMNS).assign(**{SCORE_DESIGN: self.design})


def relabel_as_evaluators(frame: pd.DataFrame, groups: Sequence[Sequence[int]],
                          names: Sequence[str] | None = None,
                          evaluator: str | None = None) -> pd.DataFrame:
    """An A/A frame: the rows of one evaluator on the seeds of ``groups[i]``
    become evaluator ``names[i]`` on seeds ``0, 1, ...`` — the same family on
    independent test subsets, so no difference exists between the "evaluators".
    Every group must have the same number of seeds."""
    if evaluator is not None:
        frame = frame[frame["evaluator"] == evaluator]
    if frame["evaluator"].nunique() != 1:
        raise ValueError("the A/A frame needs the rows of exactly one evaluator; pass evaluator=")
    if len({len(g) for g in groups}) != 1:
        raise ValueError(f"every group needs the same number of seeds, got {groups}")
    names = list(names or [f"A{i}" for i in range(len(groups))])
    out = []
    for name, group in zip(names, groups):
        missing = [s for s in group if s not in set(frame["seed"])]
        if missing:
            raise ValueError(f"seeds {missing} are not in the frame")
        relabel = {s: i for i, s in enumerate(group)}
        f = frame[frame["seed"].isin(list(group))]
        out.append(f.assign(evaluator=name, seed=f["seed"].map(relabel)))
    return pd.concat(out, ignore_index=True)
