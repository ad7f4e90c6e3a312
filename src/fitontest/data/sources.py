"""The data-source interface the workflow codes against, its registry and factory.

A data source is one module with one decorator line,
``@register_source("name")``, on a class with

- ``kind``: ``"images"`` (32×32×3 images; networks from :mod:`fitontest.models`
  trained by the ``train`` / ``export_logits`` rules), ``"features"`` (tabular
  rows; scikit-learn classifiers fitted by the ``tabular_fit`` rule) or
  ``"logits"`` (a model's logits and labels read from files by the
  ``import_logits`` rule; no training, no hold-out truth);
- ``has_posterior``: whether the known class posterior is available;
- ``check_config(config)`` (classmethod): fast checks before any job runs,
  raising ValueError that says what to fix;
- ``from_config(config)`` (classmethod): the opened source (images / features
  kinds: an :class:`ImageSource`-like object addressed by index);
- ``num_classes_of(config)`` (classmethod): K, for checking the config's tasks.

Registered here: ``"procedural"`` (:mod:`fitontest.data.procedural`, the
embedded pseudo-real images with a known posterior; ``n_images = split.n_train
+ split.n_val + split.n_holdout``) and ``"cifar5m"`` (:mod:`fitontest.data.cifar5m`,
read from ``cifar5m_dir``). Registered by their own modules: ``"tabular"``
(:mod:`fitontest.data.tabular`) and ``"logits"`` (:mod:`fitontest.data.logits`).

Config keys read here (see ``config/README.md``): ``data_source``,
``cifar5m_dir``, ``procedural``, ``split``; each source reads its own block.
"""
from __future__ import annotations

from typing import Iterator, Protocol, runtime_checkable

import numpy as np

from fitontest.core.registry import Registry
from fitontest.core.validation import check_option

SOURCES = Registry("data source", package="fitontest.data",
                   path=__import__("fitontest.data", fromlist=["__path__"]).__path__)
register_source = SOURCES.register
KINDS = ("images", "features", "logits")


@runtime_checkable
class ImageSource(Protocol):
    """A finite, index-addressable set of labelled examples (images: 32×32×3 uint8)."""

    num_classes: int          # 10
    n_images: int             # total addressable examples (indices 0..n_images-1)
    has_posterior: bool       # whether posterior() is available

    def load(self, indices) -> tuple[np.ndarray, np.ndarray]:
        """X (images: uint8 (n, 32, 32, 3) NHWC) and y int64 (n,), in the order of
        ``indices`` (any order, repeats allowed)."""
        ...

    def iter_chunks(self, indices, chunk_size: int = 50_000
                    ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """(X, y, positions into ``indices``) chunk by chunk, at most ``chunk_size``
        examples each, with memory bounded by a chunk; every position occurs once."""
        ...

    def posterior(self, indices) -> np.ndarray:
        """(n, K) float64 known class posterior P(y | x); raises
        NotImplementedError when ``has_posterior`` is False."""
        ...


def split_size(config: dict) -> int:
    """n_train + n_val + n_holdout of ``config["split"]``, checked."""
    split = config.get("split") or {}
    missing = [k for k in ("n_train", "n_val", "n_holdout") if k not in split]
    if missing:
        raise ValueError(f"config split lacks {['split.' + k for k in missing]}; the "
                         f"{config.get('data_source')} source has n_train + n_val + n_holdout "
                         "examples")
    for k in ("n_train", "n_val", "n_holdout"):
        v = split[k]
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"split.{k} must be a non-negative integer, got {v!r}")
    n = int(split["n_train"]) + int(split["n_val"]) + int(split["n_holdout"])
    if n < 1:
        raise ValueError("split.n_train + split.n_val + split.n_holdout must be positive")
    return n


@register_source("procedural")
class _Procedural:
    kind, has_posterior = "images", True

    @staticmethod
    def _args(config: dict) -> tuple[int, dict]:
        from .procedural import check_params

        n = split_size(config)
        params = config.get("procedural") or {}
        if not isinstance(params, dict):
            raise ValueError(f"procedural must be a mapping of generator settings, got {params!r}")
        check_params(params)
        return n, dict(params)

    @classmethod
    def check_config(cls, config: dict) -> None:
        cls._args(config)

    @classmethod
    def from_config(cls, config: dict):
        from .procedural import ProceduralSource

        n, params = cls._args(config)
        return ProceduralSource(n, **params)

    @classmethod
    def num_classes_of(cls, config: dict) -> int:
        return 10


@register_source("cifar5m")
class _Cifar5m:
    kind, has_posterior = "images", False

    @classmethod
    def check_config(cls, config: dict) -> None:
        """The directory exists and every part file has keys X (uint8, N×32×32×3)
        and Y (integer, length N) — from the .npz headers, without loading arrays."""
        from .cifar5m import check_cifar5m_dir

        check_cifar5m_dir(config.get("cifar5m_dir"))

    @classmethod
    def from_config(cls, config: dict):
        from .cifar5m import Cifar5mSource

        return Cifar5mSource(config.get("cifar5m_dir"))

    @classmethod
    def num_classes_of(cls, config: dict) -> int:
        return 10


def names() -> list[str]:
    """Every registered data source."""
    return SOURCES.names()


def entry(config_or_name) -> type:
    """The registered source class of ``config["data_source"]`` (or of a name)."""
    name = (config_or_name if isinstance(config_or_name, str)
            else config_or_name.get("data_source", "procedural"))
    check_option("data_source", name, names())
    return SOURCES.entry(name)


def kind(config: dict) -> str:
    """``"images"``, ``"features"`` or ``"logits"`` (see the module doc)."""
    return entry(config).kind


def has_posterior(config: dict) -> bool:
    return bool(entry(config).has_posterior)


def num_classes(config: dict) -> int:
    return int(entry(config).num_classes_of(config))


def check_source(config: dict) -> None:
    """Fast checks before any job runs; raises ValueError saying what to fix."""
    entry(config).check_config(config)


def open_source(config: dict):
    """The source named by ``config["data_source"]`` (images / features kinds)."""
    return entry(config).from_config(config)


def model_names(config: dict) -> list[str]:
    """The networks of a config: ``archs`` keys, or one model per logit file."""
    src = entry(config)
    if src.kind == "logits":
        return list(src.models(config))
    return list(config["archs"])
