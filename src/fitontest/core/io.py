"""Atomic output writing and logging for the workflow's scripts.

Every writer goes to a temporary file in the target directory and is moved
into place with ``os.replace``, so a crashed job never leaves a half-written
output behind (Snakemake also deletes the outputs of failed jobs).
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator

import numpy as np


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, suffix: str | None = None) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; move it into place on success."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.",
                               suffix=suffix if suffix is not None else "".join(path.suffixes))
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_text(path, text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically; returns the path."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding=encoding)
    return Path(path)


def write_bytes(path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically; returns the path."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def save_npz(path, **arrays: np.ndarray) -> None:
    with atomic_path(path, suffix=".npz") as tmp:
        # numpy's stub reads **arrays as its allow_pickle argument
        np.savez(tmp, **arrays)  # type: ignore[arg-type]


def load_npz(path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as f:
        return {k: f[k] for k in f.files}


def save_parquet(frame, path) -> None:
    with atomic_path(path, suffix=".parquet") as tmp:
        frame.to_parquet(tmp, index=False)


def save_json(obj: Any, path) -> None:
    write_text(path, json.dumps(obj, indent=1, sort_keys=True))


def script_logger(log_path: str | os.PathLike | None, name: str = "fitontest") -> logging.Logger:
    """A logger writing to the rule's log file (and stderr)."""
    logger = logging.getLogger(name)
    logger.handlers.clear()
    logger.setLevel(logging.INFO)
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(message)s", "%H:%M:%S")
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_path:
        Path(log_path).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(log_path, mode="w"))
    for h in handlers:
        h.setFormatter(fmt)
        logger.addHandler(h)
    logging.captureWarnings(True)
    # which CPU code made this job's numbers (fitontest/core/pins.py)
    from . import pins

    logger.info("%s", pins.summary())

    def log_uncaught(kind, value, tb):
        # the rule's log file is where Snakemake's error message points users
        logger.error("job failed", exc_info=(kind, value, tb))

    sys.excepthook = log_uncaught
    return logger


def save_subsets(path, subsets: dict[tuple[int, int], np.ndarray]) -> None:
    """Test subsets as npz keys ``size{n}_seed{r}`` -> hold-out positions."""
    save_npz(path, **{f"size{n}_seed{r}": np.asarray(idx, dtype=np.int64)
                      for (n, r), idx in subsets.items()})


def load_subsets(path) -> dict[tuple[int, int], np.ndarray]:
    out = {}
    for key, idx in load_npz(path).items():
        size, seed = key.removeprefix("size").split("_seed")
        out[(int(size), int(seed))] = idx
    return out


def optional_input(value) -> str | None:
    """A Snakemake named input that is one path or empty: the path or None."""
    if not value:
        return None
    return value if isinstance(value, str) else value[0]
