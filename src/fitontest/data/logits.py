"""Logits as a data source: a model's validation and test logits read from files.

The paper's real-data study (docs/methods.md §12) uses networks trained by
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
  labels)`` is split like the one-pair npz.

Every model is one file; ``logits.dir`` is searched for ``*.npz``, ``*.p``,
``*.pkl`` and ``*.pickle`` unless ``logits.files`` maps model names to files.
A model's name is its file stem with every character outside ``[A-Za-z0-9_]``
replaced by ``_``.

Checks (all before any job, :func:`check_config`; each error names the file
and the problem): the file reads, the keys exist, logits are 2-D, real,
finite, with at least 2 classes, the same K for validation and test, labels
are integers of one value per logit row within 0..K-1.

Pickles run code when loaded: read only files you trust (as with ``torch.load``).
"""
from __future__ import annotations

import pickle
import re
from pathlib import Path

import numpy as np

from .sources import register_source

SUFFIXES = (".npz", ".p", ".pkl", ".pickle")
#: default array names of the npz layout (``logits.keys`` overrides any of them)
DEFAULT_KEYS = {"logits_val": "logits_val", "labels_val": "labels_val",
                "logits_test": "logits_test", "labels_test": "labels_test",
                "logits": "logits", "labels": "labels"}
PARTS = ("val", "test")
_CHECKED: dict[tuple, dict] = {}


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


def _read_raw(path: Path, keys: dict) -> tuple[dict, bool]:
    """The arrays of a file: (``{logits_val, labels_val, logits_test, labels_test}``
    or ``{logits, labels}``, whether it holds one pair)."""
    if path.suffix.lower() == ".npz":
        try:
            with np.load(path, allow_pickle=False) as z:
                have = set(z.files)
                four = [keys[k] for k in ("logits_val", "labels_val", "logits_test", "labels_test")]
                two = [keys["logits"], keys["labels"]]
                if all(k in have for k in four):
                    return {k: z[keys[k]] for k in
                            ("logits_val", "labels_val", "logits_test", "labels_test")}, False
                if all(k in have for k in two):
                    return {"logits": z[two[0]], "labels": z[two[1]]}, True
        except (OSError, ValueError) as e:
            raise ValueError(f"{path}: cannot read as .npz ({e})") from None
        raise ValueError(f"{path}: missing keys {[k for k in four if k not in have]} (or the "
                         f"one-pair keys {two}); the file has {sorted(have)}; name yours in "
                         "logits.keys")
    try:
        with open(path, "rb") as fh:
            obj = pickle.load(fh)
    except Exception as e:  # a pickle can fail in many ways; say which file
        raise ValueError(f"{path}: cannot read as a pickle ({type(e).__name__}: {e})") from None
    try:
        if len(obj) == 2 and all(isinstance(p, (tuple, list)) and len(p) == 2 for p in obj):
            (lv, yv), (lt, yt) = obj
            return {"logits_val": lv, "labels_val": yv, "logits_test": lt, "labels_test": yt}, False
        if len(obj) == 2:
            return {"logits": obj[0], "labels": obj[1]}, True
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
    bad = ~np.isfinite(z).all(axis=1)
    if bad.any():
        raise ValueError(f"{where} logits contain NaN or infinity in {int(bad.sum())} row(s), "
                         f"first at row {int(np.flatnonzero(bad)[0])}")
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


def read_logits(path, keys: dict | None = None, split: dict | None = None
                ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``{"val": (logits, labels), "test": (logits, labels)}`` of one file, checked.

    ``keys`` overrides :data:`DEFAULT_KEYS`; ``split`` (``{n_val, seed}``) splits a
    one-pair file. Logits are float64 (n, K), labels int64 (n,).
    """
    path = Path(path)
    unknown = set(keys or {}) - set(DEFAULT_KEYS)
    if unknown:
        raise ValueError(f"logits.keys: unknown name(s) {sorted(unknown)}; known: "
                         f"{sorted(DEFAULT_KEYS)}")
    raw, one_pair = _read_raw(path, {**DEFAULT_KEYS, **(keys or {})})
    if one_pair:
        z, y = _check_pair(path, "all", raw["logits"], raw["labels"])
        if not split or "n_val" not in split:
            raise ValueError(f"{path}: holds one (logits, labels) pair; set logits.split: "
                             "{n_val: ..., seed: ...} to split it into validation and test")
        n_val = int(split["n_val"])
        if not 0 < n_val < len(y):
            raise ValueError(f"{path}: logits.split.n_val = {n_val} must lie in 1..{len(y) - 1}")
        perm = np.random.default_rng([int(split.get("seed", 0)), 0]).permutation(len(y))
        return {"val": (z[perm[:n_val]], y[perm[:n_val]]),
                "test": (z[perm[n_val:]], y[perm[n_val:]])}
    out = {part: _check_pair(path, part, raw[f"logits_{part}"], raw[f"labels_{part}"])
           for part in PARTS}
    k_val, k_test = out["val"][0].shape[1], out["test"][0].shape[1]
    if k_val != k_test:
        raise ValueError(f"{path}: shape mismatch: validation logits have {k_val} classes, "
                         f"test logits {k_test}")
    return out


def read_model(config: dict, name: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The checked arrays of model ``name`` of a config."""
    block = _block(config)
    return read_logits(model_files(config)[name], block.get("keys"), block.get("split"))


@register_source("logits")
class LogitFiles:
    """The ``logits`` data source: one model per file (see the module doc)."""

    kind, has_posterior = "logits", False

    @classmethod
    def models(cls, config: dict) -> dict[str, Path]:
        return model_files(config)

    @classmethod
    def check_config(cls, config: dict) -> dict[str, dict]:
        """Read and check every file; ``{model: {"num_classes", "n_val", "n_test"}}``.

        Remembered per (file, its size and time, keys, split): the Snakefile is
        parsed once per job, and a file is read once per process."""
        block = _block(config)
        info = {}
        for name, path in model_files(config).items():
            st = path.stat()
            memo = (str(path.resolve()), st.st_size, st.st_mtime_ns,
                    repr(block.get("keys")), repr(block.get("split")))
            if memo not in _CHECKED:
                d = read_logits(path, block.get("keys"), block.get("split"))
                _CHECKED[memo] = {"num_classes": d["val"][0].shape[1],
                                  "n_val": len(d["val"][1]), "n_test": len(d["test"][1])}
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


def real_subsets(n_test: int, sizes, seed: int = 0) -> dict[tuple[int, int], np.ndarray]:
    """``{(size, j): positions into the test set}``: every size cuts one permutation,
    ``default_rng([seed, 1234, size]).permutation(n_test)``, into its
    ``n_test // size`` disjoint slices j = 0, 1, ... (10,000 test points: 1000 × 10,
    3000 × 3, 10000 × 1, the paper's real-data subsets; docs/methods.md §12.1)."""
    out = {}
    for size in sorted(int(s) for s in sizes):
        if not 0 < size <= n_test:
            raise ValueError(f"test subset size {size} must lie in 1..{n_test} (the test set)")
        perm = np.random.default_rng([int(seed), 1234, size]).permutation(n_test)
        for j in range(n_test // size):
            out[(size, j)] = np.sort(perm[j * size:(j + 1) * size]).astype(np.int64)
    return out
