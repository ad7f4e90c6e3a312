"""Train / validation / hold-out split of an image source, and test subsets.

``make_split`` fixes which image indices form the three parts; the workflow
writes it once to ``results/{exp}/data/split.json`` (``write_split``) and
every later rule reads it back (``read_split``).

Two layouts (**choice**, documented in ``config/README.md``):

- ``contiguous=False`` (CIFAR-5m): one seeded permutation of all indices,
  ``numpy.random.default_rng([seed, 0]).permutation(n_images)``; train, val and
  hold-out are its first n_train, next n_val and next n_holdout entries, each
  part then **sorted** (the parts are random sets; sorted indices make loading
  from the part files sequential).
- ``contiguous=True`` (procedural source): consecutive ranges
  [0, n_train), [n_train, n_train + n_val), then the hold-out. Procedural
  images are i.i.d. over their index, so ranges are as random as a
  permutation, and loading them touches the fewest generator blocks. The seed
  is then unused.

Test subsets (docs/methods/06-truth-and-scores.md §6, ``subset_indices``): for seed
r, one permutation of the hold-out *positions*; the sizes, sorted ascending, take consecutive
disjoint slices (1000 -> [0, 1000), 3000 -> [1000, 4000), 10000 -> [4000, 14000)).
The returned arrays are positions into the hold-out index array (and so into
every hold-out logits/score file), not image indices. Two designs
(:data:`SUBSET_DESIGNS`, config ``evaluation.subsets``; docs/methods/06-truth-and-scores.md §6.2):

- ``independent`` (default): one permutation per (network, task, seed),
  ``default_rng([r, 1234, crc32(network), crc32(task)])``, shared by the
  calibrators of that (network, task) — every (network, task, seed) is an
  independent draw of test images, so the tables have that many independent
  clusters at the cost of the same fits;
- ``paper``: ``default_rng([r, 1234]).permutation(n_holdout)``, one
  permutation per seed shared by every network, task and calibrator (the
  authors' code): the seed is the only independent cluster.

The seed of a (network, task) is derived from their names (CRC-32, the same in
every process), so adding a network or task leaves the others' subsets as they are.
"""
from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Iterable

import numpy as np

from fitontest.core.io import write_text

SPLIT_KEYS = ("train", "val", "holdout")
SUBSET_SALT = 1234
#: the test-subset designs (config ``evaluation.subsets``), the default first
SUBSET_DESIGNS = ("independent", "paper")


def _count(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < 0:
        raise ValueError(f"{name} must be non-negative, got {value}")
    return int(value)


def make_split(n_images: int, n_train: int, n_val: int, n_holdout: int, seed: int,
               *, contiguous: bool = False) -> dict[str, np.ndarray]:
    """Disjoint int64 index arrays ``{"train", "val", "holdout"}`` (see module doc)."""
    n_images = _count("n_images", n_images)
    sizes = {"train": _count("n_train", n_train), "val": _count("n_val", n_val),
             "holdout": _count("n_holdout", n_holdout)}
    total = sum(sizes.values())
    if total > n_images:
        used = 0
        for key in SPLIT_KEYS:  # name the first part that does not fit
            used += sizes[key]
            if used > n_images:
                break
        raise ValueError(
            f"split.n_{key} does not fit: n_train + n_val + n_holdout = "
            f"{sizes['train']} + {sizes['val']} + {sizes['holdout']} = {total} "
            f"exceeds the {n_images} images of the data source; reduce split.n_{key}")
    if contiguous:
        order = np.arange(total, dtype=np.int64)
    else:
        order = np.random.default_rng([int(seed), 0]).permutation(n_images)[:total]
    out, start = {}, 0
    for key in SPLIT_KEYS:
        part = order[start:start + sizes[key]].astype(np.int64)
        out[key] = part if contiguous else np.sort(part)
        start += sizes[key]
    return out


def split_for_source(config: dict, source) -> dict[str, np.ndarray]:
    """The split of ``config["split"]`` for an opened source (contiguous for procedural)."""
    sp = config["split"]
    contiguous = config.get("data_source", "procedural") == "procedural"
    return make_split(source.n_images, sp["n_train"], sp["n_val"], sp["n_holdout"],
                      sp.get("seed", 0), contiguous=contiguous)


def _encode(a: np.ndarray):
    a = np.asarray(a, dtype=np.int64)
    if a.size >= 2 and np.all(np.diff(a) == 1):
        return {"start": int(a[0]), "stop": int(a[-1]) + 1}
    return [int(v) for v in a]


def _decode(key: str, v) -> np.ndarray:
    if isinstance(v, dict):
        if set(v) != {"start", "stop"}:
            raise ValueError(f"split entry {key!r} must be a list or {{start, stop}}, got keys "
                             f"{sorted(v)}")
        return np.arange(int(v["start"]), int(v["stop"]), dtype=np.int64)
    if not isinstance(v, list):
        raise ValueError(f"split entry {key!r} must be a list of indices, got {type(v).__name__}")
    return np.asarray(v, dtype=np.int64).reshape(-1)


def write_split(path, split: dict, meta: dict | None = None) -> None:
    """Write the split as JSON, atomically (:func:`fitontest.core.io.write_text`).

    Layout: ``{"meta": {...}, "sizes": {...}, "train": ..., "val": ..., "holdout": ...}``;
    an index array that is a consecutive range is stored as ``{"start", "stop"}``.
    """
    missing = [k for k in SPLIT_KEYS if k not in split]
    if missing:
        raise ValueError(f"split lacks part(s) {missing}; expected keys {list(SPLIT_KEYS)}")
    doc = {"meta": dict(meta or {}),
           "sizes": {k: int(np.asarray(split[k]).size) for k in SPLIT_KEYS}}
    doc.update({k: _encode(split[k]) for k in SPLIT_KEYS})
    write_text(path, json.dumps(doc, separators=(",", ":")) + "\n")


def read_split(path) -> dict[str, np.ndarray]:
    """The split written by :func:`write_split`: int64 arrays plus ``"meta"`` (a dict)."""
    path = Path(path)
    with open(path) as fh:
        doc = json.load(fh)
    missing = [k for k in SPLIT_KEYS if k not in doc]
    if missing:
        raise ValueError(f"{path}: split file lacks part(s) {missing}")
    out = {k: _decode(k, doc[k]) for k in SPLIT_KEYS}
    for k, n in doc.get("sizes", {}).items():
        if k in out and out[k].size != n:
            raise ValueError(f"{path}: part {k!r} has {out[k].size} indices, header says {n}")
    out["meta"] = doc.get("meta", {})
    return out


def name_seed(name: str) -> int:
    """A stable integer for a network or task name (CRC-32 of its UTF-8 bytes):
    the same in every process and Python version, unlike ``hash``."""
    return zlib.crc32(str(name).encode("utf-8"))


def subset_indices(n_holdout: int, sizes: Iterable[int], seeds: Iterable[int],
                   unit: tuple[str, str] | None = None) -> dict[tuple[int, int], np.ndarray]:
    """``{(size, seed): positions into the hold-out}`` (see module doc).

    ``unit``: None for the ``paper`` design (the permutation of seed r is
    ``default_rng([r, 1234]).permutation(n_holdout)``, the same for every
    network and task); ``(network, task)`` for the ``independent`` design
    (``default_rng([r, 1234, crc32(network), crc32(task)])``). Sizes sorted
    ascending take consecutive disjoint slices of the permutation.
    """
    n_holdout = _count("n_holdout", n_holdout)
    sizes = [_count("size", s) for s in sizes]
    seeds = [int(r) for r in seeds]
    if len(set(sizes)) != len(sizes):
        raise ValueError(f"test subset sizes must be distinct, got {sizes}")
    if any(s == 0 for s in sizes):
        raise ValueError(f"test subset sizes must be positive, got {sizes}")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"test subset seeds must be distinct, got {seeds}")
    order = sorted(sizes)
    if sum(order) > n_holdout:
        raise ValueError(f"test subset sizes {order} sum to {sum(order)}, more than the "
                         f"{n_holdout} hold-out points; reduce the sizes or increase "
                         f"split.n_holdout")
    salt = [] if unit is None else [name_seed(unit[0]), name_seed(unit[1])]
    out: dict[tuple[int, int], np.ndarray] = {}
    for r in seeds:
        perm = np.random.default_rng([r, SUBSET_SALT, *salt]).permutation(n_holdout)
        start = 0
        for s in order:
            out[(s, r)] = perm[start:start + s].astype(np.int64)
            start += s
    return out


def design_subsets(design: str, n_holdout: int, sizes: Iterable[int], seeds: Iterable[int],
                   units: Iterable[tuple[str, str]]
                   ) -> dict[tuple[str, str], dict[tuple[int, int], np.ndarray]]:
    """The test subsets of every (network, task) in ``units`` under ``design``
    (:data:`SUBSET_DESIGNS`): ``{(network, task): {(size, seed): positions}}``."""
    if design not in SUBSET_DESIGNS:
        raise ValueError(f"unknown test-subset design {design!r}; use one of "
                         f"{list(SUBSET_DESIGNS)}")
    sizes, seeds = list(sizes), list(seeds)
    if design == "paper":
        shared = subset_indices(n_holdout, sizes, seeds)
        return {u: shared for u in units}
    return {u: subset_indices(n_holdout, sizes, seeds, unit=u) for u in units}
