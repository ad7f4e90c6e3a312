"""Logits as a data source: a model's validation and test logits read from files.

The paper's real-data study (docs/methods/12-real-data.md §12) uses networks trained by
others, shared as logit files. Two layouts are read:

- ``.npz`` with four arrays, the names configurable (``logits.keys``):
  ``logits_val`` (n_val, K), ``labels_val`` (n_val,), ``logits_test``
  (n_test, K), ``labels_test`` (n_test,); or one pair ``logits`` / ``labels``
  that the config splits (``logits.split: {n_val, seed}``: the first n_val
  entries of ``default_rng([seed, 0]).permutation(n)`` validate, the rest test);
- a pickle (``.p``, ``.pkl``, ``.pickle``) holding
  ``((logits_val, labels_val), (logits_test, labels_test))``, the layout of the
  CIFAR/ImageNet logit files shared by the calibration literature (Kull et al.
  2019's Dirichlet-calibration repository, Guo et al. 2017's temperature
  scaling); labels may have shape (n, 1). A pickle of one pair ``(logits,
  labels)`` is split like the one-pair npz;
- a table (``.csv``, ``.parquet``) read as ``fitontest evaluate`` reads one: one
  column per class and a label column (``logits.keys.labels`` or a common
  label name), id columns dropped; split like the one-pair npz.

Every model is one file; ``logits.dir`` is searched for ``*.npz``, ``*.p``,
``*.pkl``, ``*.pickle``, ``*.csv`` and ``*.parquet`` unless ``logits.files``
maps model names to files.
A model's name is its file stem with every character outside ``[A-Za-z0-9_]``
replaced by ``_``.

Files as people share them (docs/methods/12-real-data.md §12.1):

- array names: a one-pair npz whose arrays are not named ``logits`` /
  ``labels`` (nor in ``logits.keys``) is read from the one array named as
  predictions (probs, probabilities, predictions, logits, scores) and the one
  named as labels (labels, label, y, y_true, target, targets, ground_truth),
  any case; two candidates are an error listing both
  (fitontest.core.prediction_files);
- probabilities or logits: decided for the whole file by the rule every
  entry point shares (:func:`fitontest.core.predictions.read`,
  docs/methods/01-binary-tasks.md §1.1): ``logits.kind`` ``auto`` (default) reads a file with
  a negative entry as logits, a file whose every row lies in [0, 1] and sums
  to 1 within what its storage can lose (rounding to d decimals, float16,
  bfloat16) as probabilities, and stops on any other file, naming
  ``logits.kind``. Probabilities become their logs (zeros clipped to
  float32's smallest normal number), so that the softmax of the logits gives
  the renormalised probabilities back; ``logits`` declared on a file of
  probabilities is an error (the softmax of probabilities is a squashed,
  near-uniform model: every CE would be wrong);
- ``logits.split.n_val`` may be a fraction of the rows (0.5: half).

Checks (all before any job, :func:`check_config`; each error names the file
and the problem): the file reads, the keys exist, logits are 2-D, real,
finite, with at least 2 classes, the same K for validation and test, labels
are integers of one value per logit row within 0..K-1, the kind of the rows.

Pickles run code when loaded: read only files you trust (as with ``torch.load``).
"""
from __future__ import annotations

import pickle
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fitontest.core import predictions
from fitontest.core.prediction_files import (
    LABEL_KEYS, PRED_KEYS, TABLES, guess_name, read_table)

from .sources import register_source

SUFFIXES = (".npz", ".p", ".pkl", ".pickle") + TABLES
#: default array names of the npz layout (``logits.keys`` overrides any of them)
DEFAULT_KEYS = {"logits_val": "logits_val", "labels_val": "labels_val",
                "logits_test": "logits_test", "labels_test": "labels_test",
                "logits": "logits", "labels": "labels"}
PARTS = ("val", "test")
#: what the rows of a file hold (``logits.kind``); ``auto`` lets the rows decide
KINDS = predictions.KINDS
_CHECKED: dict[tuple, dict] = {}


@dataclass
class LogitFile:
    """One file read: ``data`` ``{"val": (logits, labels), "test": ...}``, what its
    rows held (``kind``: logits or probabilities) and the lines worth a log."""

    data: dict
    kind: str = "logits"
    notes: list = field(default_factory=list)


def simulate(n_val: int = 5000, n_test: int = 10000, n_classes: int = 10, *, seed: int = 0,
             concentration: float = 0.3, temperature: float = 2.0
             ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Logits of a seeded Dirichlet/softmax model, for tests and how-tos.

    Each example's true class probabilities are p ~ Dirichlet(concentration·1_K)
    and its label y ~ p; the "network" reports logits ``temperature · log p``
    plus N(0, 0.5²) noise, so it is over-confident for temperature > 1 (as
    the modern networks of the calibration literature are).
    """
    rng = np.random.default_rng([int(seed), 7])
    out = {}
    for part, n in (("val", n_val), ("test", n_test)):
        p = rng.dirichlet(np.full(n_classes, concentration), size=n)
        p = np.maximum(p, 1e-12)
        y = (rng.random(n)[:, None] > np.cumsum(p, axis=1)[:, :-1]).sum(axis=1)
        z = temperature * np.log(p / p.sum(axis=1, keepdims=True))
        z += rng.normal(0.0, 0.5, size=z.shape)
        out[part] = (z.astype(np.float32), y.astype(np.int64))
    return out


def write_pickle(path, data: dict[str, tuple[np.ndarray, np.ndarray]]) -> Path:
    """Write ``{"val": (z, y), "test": (z, y)}`` in the pickle layout of the literature."""
    from fitontest.core.io import write_bytes

    return write_bytes(path, pickle.dumps((tuple(data["val"]), tuple(data["test"]))))


def write_npz(path, data: dict[str, tuple[np.ndarray, np.ndarray]]) -> Path:
    """Write ``{"val": (z, y), "test": (z, y)}`` as an npz with the default key names."""
    from fitontest.core.io import save_npz

    save_npz(path, logits_val=data["val"][0], labels_val=data["val"][1],
             logits_test=data["test"][0], labels_test=data["test"][1])
    return Path(path)


def model_name(path) -> str:
    """A file's model name: its stem with characters outside [A-Za-z0-9_] as ``_``."""
    return re.sub(r"[^A-Za-z0-9_]", "_", Path(path).name.split(".")[0]) or "model"


def _block(config: dict) -> dict:
    block = config.get("logits") or {}
    if not isinstance(block, dict):
        raise ValueError(f"logits must be a mapping (dir, files, keys, split), got {block!r}")
    return block


def model_files(config: dict) -> dict[str, Path]:
    """``{model name: file}`` of the config's ``logits`` block, in a stable order."""
    block = _block(config)
    directory = block.get("dir")
    if not directory:
        raise ValueError("data_source is 'logits' but logits.dir is not set; set it to the "
                         "folder holding the logit files (.npz, .p, .pkl)")
    d = Path(directory).expanduser()
    if not d.is_dir():
        raise ValueError(f"logits.dir {str(d)!r} does not exist or is not a directory")
    files = block.get("files") or {}
    if files:
        out = {}
        for name, f in files.items():
            if not re.fullmatch(r"[A-Za-z0-9_]+", str(name)):
                raise ValueError(f"logits.files: model name {name!r} may hold only "
                                 "letters, digits and _")
            p = d / f
            if not p.is_file():
                raise ValueError(f"logits.files.{name}: {str(p)!r} is not a file")
            out[str(name)] = p
        return out
    paths = sorted(p for p in d.iterdir() if p.is_file() and p.suffix.lower() in SUFFIXES)
    if not paths:
        raise ValueError(f"logits.dir {str(d)!r} holds no logit file ({', '.join(SUFFIXES)})")
    out = {}
    for p in paths:
        name = model_name(p)
        if name in out:
            raise ValueError(f"logits.dir: {out[name].name} and {p.name} both give the model "
                             f"name {name!r}; rename one or list logits.files")
        out[name] = p
    return out


def _guess_pair(path: Path, have: list, keys: dict, given: dict) -> tuple[list, str]:
    """The one-pair names of an npz: ``keys`` where present or named by the
    user, else the file's one prediction and one label array (module doc)."""
    names, guessed = [], []
    for role, recognised, what in (("logits", PRED_KEYS, "predictions"),
                                   ("labels", LABEL_KEYS, "labels")):
        name = keys[role]
        if name not in have and role not in given:
            found = guess_name(have, recognised, what, str(path), f"logits.keys.{role}")
            if found is not None:
                name = found
                guessed.append(f"{found!r} as {'predictions' if role == 'logits' else role}")
        names.append(name)
    return names, (f"arrays guessed by name: {', '.join(guessed)} (logits.keys names others)"
                   if guessed else "")


def _read_raw(path: Path, keys: dict, given: dict | None = None) -> tuple[dict, bool, str]:
    """The arrays of a file: (``{logits_val, labels_val, logits_test, labels_test}``
    or ``{logits, labels}``, whether it holds one pair, a note on guessed names)."""
    if path.suffix.lower() == ".npz":
        try:
            with np.load(path, allow_pickle=False) as z:
                have = list(z.files)
                four = [keys[k] for k in ("logits_val", "labels_val", "logits_test", "labels_test")]
                if all(k in have for k in four):
                    return {k: z[keys[k]] for k in
                            ("logits_val", "labels_val", "logits_test", "labels_test")}, False, ""
                two, note = _guess_pair(path, have, keys, given or {})
                if all(k in have for k in two):
                    return {"logits": z[two[0]], "labels": z[two[1]]}, True, note
        except (OSError, ValueError) as e:
            if "could be the" in str(e):      # two candidate names: the error says which
                raise
            raise ValueError(f"{path}: cannot read as .npz ({e})") from None
        raise ValueError(f"{path}: missing keys {[k for k in four if k not in have]} (or the "
                         f"one-pair keys {two}); the file has {sorted(have)}; name yours in "
                         "logits.keys")
    if path.suffix.lower() in TABLES:
        pred, y, lk = read_table(path, (given or {}).get("labels"), choose="logits.keys.labels")
        return {"logits": pred, "labels": y}, True, f"{lk!r} read as the labels"
    try:
        with open(path, "rb") as fh:
            obj = pickle.load(fh)
    except Exception as e:  # a pickle can fail in many ways; say which file
        raise ValueError(f"{path}: cannot read as a pickle ({type(e).__name__}: {e})") from None
    try:
        if len(obj) == 2 and all(isinstance(p, (tuple, list)) and len(p) == 2 for p in obj):
            (lv, yv), (lt, yt) = obj
            return ({"logits_val": lv, "labels_val": yv, "logits_test": lt, "labels_test": yt},
                    False, "")
        if len(obj) == 2:
            return {"logits": obj[0], "labels": obj[1]}, True, ""
    except TypeError:
        pass
    raise ValueError(f"{path}: the pickle must hold ((logits_val, labels_val), (logits_test, "
                     f"labels_test)) or (logits, labels), got {type(obj).__name__}")


def _check_pair(path: Path, part: str, logits, labels) -> tuple[np.ndarray, np.ndarray]:
    z = np.asarray(logits)
    where = f"{path}: {part}"
    if z.dtype == object or not (np.issubdtype(z.dtype, np.number)) or np.iscomplexobj(z):
        raise ValueError(f"{where} logits must be a real numeric array, got dtype {z.dtype}")
    if z.ndim != 2 or z.shape[1] < 2 or z.shape[0] < 1:
        raise ValueError(f"{where} logits must have shape (n, K) with n >= 1 and K >= 2, "
                         f"got {z.shape}")
    # NaN and infinity: the door's (predictions.read below), which names every part's rows
    y = np.asarray(labels)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"{where} labels must have shape (n,) or (n, 1), got {np.shape(labels)}")
    if y.shape[0] != z.shape[0]:
        raise ValueError(f"{where} shape mismatch: {z.shape[0]} logit rows but {y.shape[0]} labels")
    if y.dtype.kind == "f":
        if not np.isfinite(y).all() or (y != np.round(y)).any():
            raise ValueError(f"{where} labels must be integer class indices, got non-integer "
                             "or NaN values")
    elif y.dtype.kind not in "iu":
        raise ValueError(f"{where} labels must be integer class indices, got dtype {y.dtype}")
    y = y.astype(np.int64)
    out = (y < 0) | (y >= z.shape[1])
    if out.any():
        raise ValueError(f"{where} labels out of range 0..{z.shape[1] - 1} (K = {z.shape[1]} "
                         f"logit columns): {int(out.sum())} label(s), e.g. {int(y[out][0])}")
    return z.astype(np.float64), y


def load(path, keys: dict | None = None, split: dict | None = None, kind: str = "auto"
         ) -> LogitFile:
    """One file, read and checked: :class:`LogitFile` (module doc).

    ``keys`` overrides :data:`DEFAULT_KEYS`; ``split`` (``{n_val, seed}``, n_val a
    count or a fraction of the rows) splits a one-pair file; ``kind`` is
    ``logits.kind``. Logits are float64 (n, K), labels int64 (n,)."""
    path = Path(path)
    unknown = set(keys or {}) - set(DEFAULT_KEYS)
    if unknown:
        raise ValueError(f"logits.keys: unknown name(s) {sorted(unknown)}; known: "
                         f"{sorted(DEFAULT_KEYS)}")
    raw, one_pair, note = _read_raw(path, {**DEFAULT_KEYS, **(keys or {})}, keys)
    notes = [note] if note else []
    parts = ("all",) if one_pair else PARTS
    stored = {p: raw["logits" if one_pair else f"logits_{p}"] for p in parts}
    out = {p: _check_pair(path, p, stored[p], raw["labels" if one_pair else f"labels_{p}"])
           for p in parts}
    if not one_pair:
        k_val, k_test = out["val"][0].shape[1], out["test"][0].shape[1]
        if k_val != k_test:
            raise ValueError(f"{path}: shape mismatch: validation logits have {k_val} classes, "
                             f"test logits {k_test}")
    if kind not in KINDS:
        raise ValueError(f"logits.kind {kind!r} is not one of {', '.join(KINDS)}")
    # one decision for the whole file (every part), by the rule every entry point shares
    ends = np.cumsum([len(out[p][1]) for p in parts])

    def row_label(i):
        k = int(np.searchsorted(ends, i, side="right"))
        return f"{parts[k]} row {i - (ends[k - 1] if k else 0)}" if len(parts) > 1 else f"row {i}"

    reading = predictions.read(np.concatenate([np.asarray(stored[p]) for p in parts]), kind,
                               where=str(path), switch=predictions.WORKFLOW, row_label=row_label)
    if reading.kind == "probabilities":
        zeros = int((reading.probs <= 0).sum())
        z_all = np.split(reading.logits(), ends[:-1])
        out = {p: (z, out[p][1]) for p, z in zip(parts, z_all)}
        how = ("logits.kind: probabilities" if reading.by == "declared" else
               "every row non-negative and summing to 1, logits.kind: auto")
        notes.append(f"read as probabilities ({how}): their logs are the logits"
                     + (f", {zeros} zeros clipped to {predictions.PROB_FLOOR:.3g}"
                        if zeros else ""))
        if reading.note():
            notes.append(reading.note())
    if one_pair:
        z, y = out["all"]
        if not split or "n_val" not in split:
            raise ValueError(f"{path}: holds one (logits, labels) pair; set logits.split: "
                             "{n_val: ..., seed: ...} to split it into validation and test")
        n_val = split_size(split["n_val"], len(y), path)
        perm = np.random.default_rng([int(split.get("seed", 0)), 0]).permutation(len(y))
        out = {"val": (z[perm[:n_val]], y[perm[:n_val]]),
               "test": (z[perm[n_val:]], y[perm[n_val:]])}
        notes.append(f"one (predictions, labels) pair of {len(y)} rows split {n_val} validation "
                     f"/ {len(y) - n_val} test (logits.split)")
    return LogitFile(out, reading.kind, notes)


def split_size(n_val, n: int, path) -> int:
    """The validation rows of a one-pair file of ``n`` rows: ``n_val`` itself,
    or ``round(n_val * n)`` for a fraction 0 < n_val < 1."""
    v = float(n_val)
    count = int(round(v * n)) if 0 < v < 1 else int(v)
    if not (v == int(v) or 0 < v < 1) or not 0 < count < n:
        raise ValueError(f"{path}: logits.split.n_val = {n_val} must be a count in 1..{n - 1} "
                         f"or a fraction in (0, 1) of the {n} rows")
    return count


def read_logits(path, keys: dict | None = None, split: dict | None = None, kind: str = "auto"
                ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``{"val": (logits, labels), "test": (logits, labels)}`` of one file, checked
    (:func:`load` without its notes)."""
    return load(path, keys, split, kind).data


def read_model(config: dict, name: str) -> LogitFile:
    """Model ``name`` of a config, read and checked (its arrays in ``.data``)."""
    block = _block(config)
    return load(model_files(config)[name], block.get("keys"), block.get("split"),
                block.get("kind") or "auto")


@register_source("logits")
class LogitFiles:
    """The ``logits`` data source: one model per file (see the module doc)."""

    kind, has_posterior = "logits", False

    @classmethod
    def models(cls, config: dict) -> dict[str, Path]:
        return model_files(config)

    @classmethod
    def check_config(cls, config: dict) -> dict[str, dict]:
        """Read and check every file; ``{model: {"num_classes", "n_val", "n_test",
        "kind", "notes"}}``.

        Remembered per (file, its size and time, keys, split, kind): the
        Snakefile is parsed once per job, and a file is read once per process."""
        block = _block(config)
        info = {}
        for name, path in model_files(config).items():
            st = path.stat()
            memo = (str(path.resolve()), st.st_size, st.st_mtime_ns,
                    repr(block.get("keys")), repr(block.get("split")), block.get("kind"))
            if memo not in _CHECKED:
                f = load(path, block.get("keys"), block.get("split"), block.get("kind") or "auto")
                _CHECKED[memo] = {"num_classes": f.data["val"][0].shape[1],
                                  "n_val": len(f.data["val"][1]),
                                  "n_test": len(f.data["test"][1]),
                                  "kind": f.kind, "notes": list(f.notes)}
            info[name] = _CHECKED[memo]
        return info

    @classmethod
    def num_classes_of(cls, config: dict) -> int:
        """The fewest classes over the models (the tasks must exist in each)."""
        return min(v["num_classes"] for v in cls.check_config(config).values())

    @classmethod
    def from_config(cls, config: dict):
        raise NotImplementedError("the logits source has no examples to load; its rule "
                                  "import_logits reads the files (read_model)")


def real_sizes(sizes, n_test: int) -> list[int]:
    """The test-subset sizes of a real-data run: each of ``sizes`` capped at the
    ``n_test`` test points, repeats dropped, ascending. The paper's largest size
    is the whole test set (10000 × 1); capping keeps that meaning for a smaller
    test set, so one config runs on 5,000- and 10,000-point test sets alike
    (docs/methods/12-real-data.md §12.1).

    >>> real_sizes([1000, 3000, 10000], 5000)
    [1000, 3000, 5000]
    """
    return sorted({min(int(s), int(n_test)) for s in sizes})


def study_facts(config: dict) -> dict:
    """What the real-data run does with its files: ``{"sizes", "n_test", "notes"}``;
    notes are one line per fact worth a caption (probability files, guessed
    names, split files, capped sizes)."""
    info = LogitFiles.check_config(config)
    files = model_files(config)
    n_test = min(v["n_test"] for v in info.values())
    asked = [int(s) for s in config["evaluation"]["sizes"]]
    sizes = real_sizes(asked, n_test)
    notes = [f"{files[m].name}: {line}" for m, v in info.items() for line in v["notes"]]
    if sizes != sorted(set(asked)):
        notes.append(f"test-subset sizes {', '.join(map(str, sorted(asked)))} capped at the "
                     f"{n_test} test points (of the smallest file): "
                     f"{', '.join(map(str, sizes))}")
    return {"sizes": sizes, "n_test": n_test, "notes": notes}


def real_subsets(n_test: int, sizes, seed: int = 0) -> dict[tuple[int, int], np.ndarray]:
    """``{(size, j): positions into the test set}``: every size cuts one permutation,
    ``default_rng([seed, 1234, size]).permutation(n_test)``, into its
    ``n_test // size`` disjoint slices j = 0, 1, ... (10,000 test points: 1000 × 10,
    3000 × 3, 10000 × 1, the paper's real-data subsets; docs/methods/12-real-data.md §12.1)."""
    out = {}
    for size in sorted(int(s) for s in sizes):
        if not 0 < size <= n_test:
            raise ValueError(f"test subset size {size} must lie in 1..{n_test} (the test set)")
        perm = np.random.default_rng([int(seed), 1234, size]).permutation(n_test)
        for j in range(n_test // size):
            out[(size, j)] = np.sort(perm[j * size:(j + 1) * size]).astype(np.int64)
    return out
