"""The image-source interface the workflow codes against, and its factory.

Two sources implement :class:`ImageSource`:

- ``"procedural"`` (:class:`fitontest.data.procedural.ProceduralSource`):
  the embedded pseudo-real images of the default config, with a known
  posterior; ``n_images = split.n_train + split.n_val + split.n_holdout``.
- ``"cifar5m"`` (:class:`fitontest.data.cifar5m.Cifar5mSource`): the real
  data set read from ``cifar5m_dir``; ``n_images`` is the total over the six
  part files.

Config keys read here (the workflow config; see ``config/README.md``):
``data_source`` ("procedural" | "cifar5m"), ``cifar5m_dir`` (path or None),
``procedural`` (dict, keys and defaults in
:data:`fitontest.data.procedural.DEFAULTS`), ``split`` (``n_train``,
``n_val``, ``n_holdout``, ``seed``).
"""
from __future__ import annotations

from typing import Iterator, Protocol, runtime_checkable

import numpy as np

DATA_SOURCES = ("procedural", "cifar5m")


@runtime_checkable
class ImageSource(Protocol):
    """A finite, index-addressable set of labelled 32×32×3 images."""

    num_classes: int          # 10
    n_images: int             # total addressable images (indices 0..n_images-1)
    has_posterior: bool       # whether posterior() is available

    def load(self, indices) -> tuple[np.ndarray, np.ndarray]:
        """X uint8 (n, 32, 32, 3) NHWC and y int64 (n,), in the order of ``indices``
        (any order, repeats allowed)."""
        ...

    def iter_chunks(self, indices, chunk_size: int = 50_000
                    ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """(X, y, positions into ``indices``) chunk by chunk, at most ``chunk_size``
        images each, with memory bounded by a chunk; every position occurs once."""
        ...

    def posterior(self, indices) -> np.ndarray:
        """(n, K) float64 known class posterior P(y | image); raises
        NotImplementedError when ``has_posterior`` is False."""
        ...


def _name(config: dict) -> str:
    name = config.get("data_source", "procedural")
    if name not in DATA_SOURCES:
        raise ValueError(f"data_source must be one of {list(DATA_SOURCES)}, got {name!r}")
    return name


def _procedural_args(config: dict) -> tuple[int, dict]:
    from .procedural import check_params

    split = config.get("split") or {}
    missing = [k for k in ("n_train", "n_val", "n_holdout") if k not in split]
    if missing:
        raise ValueError(f"config split lacks {['split.' + k for k in missing]}; the "
                         "procedural source has n_train + n_val + n_holdout images")
    for k in ("n_train", "n_val", "n_holdout"):
        v = split[k]
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"split.{k} must be a non-negative integer, got {v!r}")
    n = int(split["n_train"]) + int(split["n_val"]) + int(split["n_holdout"])
    if n < 1:
        raise ValueError("split.n_train + split.n_val + split.n_holdout must be positive")
    params = config.get("procedural") or {}
    if not isinstance(params, dict):
        raise ValueError(f"procedural must be a mapping of generator settings, got {params!r}")
    check_params(params)
    return n, dict(params)


def check_source(config: dict) -> None:
    """Fast checks before any job runs; raises ValueError saying what to fix.

    procedural: the generator settings and split sizes. cifar5m: the directory
    exists and every part file has keys X (uint8, N×32×32×3) and Y (integer,
    length N) — from the .npz headers, without loading arrays.
    """
    if _name(config) == "procedural":
        _procedural_args(config)
    else:
        from .cifar5m import check_cifar5m_dir

        check_cifar5m_dir(config.get("cifar5m_dir"))


def open_source(config: dict) -> ImageSource:
    """The image source named by ``config["data_source"]``."""
    if _name(config) == "procedural":
        from .procedural import ProceduralSource

        n, params = _procedural_args(config)
        return ProceduralSource(n, **params)
    from .cifar5m import Cifar5mSource

    return Cifar5mSource(config.get("cifar5m_dir"))
