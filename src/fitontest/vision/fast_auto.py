"""Which training path ``training.fast: auto`` takes, from measured rates
(docs/methods/08-networks.md §8.5). No torch import here: the configuration
checks and the cost projection (``fitontest jobs --scale``) use it cheaply.

>>> from fitontest.vision.recipes import get_recipe
>>> choose("auto", "resnet110", get_recipe("resnet110"), 45_000, "cuda").path
'compile+graph'
>>> choose("auto", "resnet110", get_recipe("resnet110"), 45_000, "cpu").path
'eager'

On a CPU ``auto`` is the eager path: the levers were measured on a GPU, and
a CPU run keeps its results bit for bit. On CUDA it takes, per network, the
path of :data:`~.fast_options.PATHS` whose whole recipe costs least on the
measured rates: its setup (compilation, capture, cuDNN autotuning) plus the
recipe's epochs at its measured seconds per step. So ``torch.compile``'s
minute of setup is paid where its faster steps earn it back within the
recipe, and the CUDA graph is taken otherwise. A network (or batch size)
that was not measured gets the graph, which was faster than eager on every
network measured. The other paths, cheapest first and eager last, are the
fallbacks tried when a lever fails on this torch or device (:func:`.fast.start_step`).

The rates are package data, ``measured/gpu_rates.json``, derived by
``benchmarks/training/gpu_rates.py`` (:func:`derive`) from the rows of one
run of ``benchmarks/training/gpu_fast_path.py``; the data file names the
measured file that says where and when it ran.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Mapping

from .fast_options import AUTO, PATHS, FastOptions, check_setting

__all__ = ["Choice", "Rates", "choose", "derive", "load_rates"]

#: the images per epoch the measured rows quote (the paper's 45k training images)
N_PAPER = 45_000


@dataclass(frozen=True)
class Rates:
    """The measured rates: per network, the batch it was measured at and per
    path of PATHS its ``s_per_step`` and ``setup_s``; the export's images/s;
    where it was measured (``device``, ``torch``, ``measured_file``)."""

    data: Mapping[str, Any]

    @property
    def where(self) -> str:
        d = self.data
        return f"one {d['device']}, torch {d['torch']} ({d['measured_file']})"

    @property
    def export_img_s(self) -> float:
        return float(self.data["export_img_s"])

    def costs(self, model: str, batch: int, epochs: int, n_train: int) -> dict[str, dict]:
        """Per measured path of ``model`` at ``batch``: ``s_per_epoch`` on
        ``n_train`` images, ``setup_s`` and ``total_s`` (setup + epochs); {}
        where that network at that batch was not measured."""
        net = self.data["networks"].get(model)
        if net is None or int(net["batch"]) != int(batch):
            return {}
        steps = max(1, int(n_train) // int(batch))      # as training takes them
        out = {}
        for path, r in net["paths"].items():
            per_epoch = float(r["s_per_step"]) * steps
            out[path] = {"s_per_epoch": per_epoch, "setup_s": float(r["setup_s"]),
                         "total_s": float(r["setup_s"]) + int(epochs) * per_epoch}
        return out


def load_rates(path: str | Path | None = None) -> Rates:
    """The rates in ``path`` (a file :func:`derive` wrote), by default the package's."""
    if path is None:
        return _packaged()
    return Rates(json.loads(Path(path).read_text()))


@lru_cache(maxsize=1)
def _packaged() -> Rates:
    ref = resources.files("fitontest.vision").joinpath("measured", "gpu_rates.json")
    return Rates(json.loads(ref.read_text()))


def derive(rows: Iterable[Mapping[str, Any]], measured_file: str, rows_file: str) -> dict:
    """The rates data of gpu_fast_path.py's result rows: the variants named
    like a path of PATHS (their switches checked against the path's), the
    100,000-image export, the machine. ValueError where a row's switches are
    not its path's (the two scripts' names drifted apart)."""
    out: dict[str, Any] = {"measured_file": measured_file, "rows_file": rows_file,
                           "written_by": "python benchmarks/training/gpu_rates.py --write",
                           "images_per_epoch_quoted": N_PAPER, "networks": {}}
    for row in rows:
        kind = row.get("kind")
        if kind == "env":
            out.update(device=row["device"], torch=row["torch"], cpus=row["cpus"])
        elif kind == "export" and "img_s" in row:
            out["export_img_s"] = round(float(row["img_s"]), 1)
        elif kind == "variant" and row["variant"] in PATHS and "s_per_step" in row:
            if row["options"] != PATHS[row["variant"]].describe():
                raise ValueError(f"{row['model']} {row['variant']}: measured with "
                                 f"{row['options']!r}, the path is "
                                 f"{PATHS[row['variant']].describe()!r}")
            net = out["networks"].setdefault(row["model"], {"batch": row["batch"], "paths": {}})
            net["paths"][row["variant"]] = {"s_per_step": round(float(row["s_per_step"]), 7),
                                            "setup_s": round(float(row["setup_s"]), 2)}
    missing = {"device", "export_img_s"} - set(out)
    if missing or not out["networks"]:
        raise ValueError(f"the rows hold no {sorted(missing) or 'networks'}")
    return out


@dataclass(frozen=True)
class Choice:
    """The path a training takes: its name (a key of PATHS, or ``configured``
    for switches given one by one), its switches, why, and the paths to try,
    in order, when a lever of it fails on this torch or device."""

    setting: str
    path: str
    options: FastOptions
    reason: str
    fallbacks: tuple[tuple[str, FastOptions], ...] = field(default=())

    @property
    def candidates(self) -> list[tuple[str, FastOptions]]:
        return [(self.path, self.options), *self.fallbacks]


def _hours(s: float) -> str:
    return f"{s / 3600:.2f} h"


def choose(setting: Any, model: str, recipe: Mapping[str, Any], n_train: int,
           device_type: str, rates: Rates | None = None) -> Choice:
    """The path of a training of ``model`` with ``recipe`` on ``n_train``
    images on a device of ``device_type`` (``"cuda"``, ``"cpu"``, ...), for
    the ``training.fast`` ``setting`` (module notes)."""
    value = check_setting(setting)
    if value != AUTO:
        name = next((n for n, o in PATHS.items() if o == value), "configured")
        said = setting if isinstance(setting, str) else ("eager" if value.eager else "switches")
        return Choice(said, name, value, f"training.fast: {value.describe()}")
    if device_type != "cuda":
        return Choice(AUTO, "eager", PATHS["eager"],
                      f"auto on {device_type}: eager (the fast path's levers are for CUDA; "
                      "a run here keeps its results bit for bit)")
    rates = rates or load_rates()
    batch, epochs = int(recipe["batch_size"]), int(recipe["epochs"])
    costs = rates.costs(model, batch, epochs, n_train)
    if not costs:
        return Choice(AUTO, "graph", PATHS["graph"],
                      f"auto on cuda: graph ({model} at batch {batch} was not measured; the graph "
                      f"was faster than eager on every network measured, {rates.where})",
                      fallbacks=(("eager", PATHS["eager"]),))
    order = sorted(costs, key=lambda p: costs[p]["total_s"])
    if "eager" not in order:
        order.append("eager")
    best = order[0]
    others = ", ".join(f"{p} {_hours(costs[p]['total_s'])}" for p in order[1:] if p in costs)
    reason = (f"auto on cuda: {best}, {_hours(costs[best]['total_s'])} for the recipe's {epochs} "
              f"epochs with its {costs[best]['setup_s']:.0f} s setup (against {others}) at the "
              f"rates measured on {rates.where}")
    return Choice(AUTO, best, PATHS[best], reason,
                  fallbacks=tuple((p, PATHS[p]) for p in order[1:]))
