"""CIFAR-size image classifiers (32×32 inputs) in one registry.

Every module of this package is imported on first use, so a new architecture
is one module with ``@register("name")`` on a factory taking ``num_classes``.

>>> from fitontest import models
>>> net = models.get("resnet110", num_classes=10)      # doctest: +SKIP
>>> models.names()                                     # doctest: +SKIP

Paper-scale members (docs/methods/08-networks.md §8): ``resnet110``, ``densenet40``, ``wrn32``.
The others are depth/width-reduced members of the same families for the
laptop-size default configuration.

Every model's final linear layer runs in float32 even under autocast, so the
exported logits keep full precision when the body runs in bfloat16
(:mod:`.layers`). This package itself imports no torch: the scikit-learn
classifiers of the tabular study (:mod:`.tabular`) load without it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from fitontest.core.registry import Registry

if TYPE_CHECKING:
    from torch import nn

MODELS = Registry("model", package=__name__, path=__path__)
register = MODELS.register
names = MODELS.names    # every registered model name
entry = MODELS.entry    # the registered factory


def get(name: str, num_classes: int = 10, **params) -> nn.Module:
    """A freshly initialised network registered as ``name``."""
    return MODELS.get(name, num_classes=num_classes, **params)


def count_parameters(model: nn.Module) -> int:
    """Number of trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


__all__ = ["MODELS", "register", "get", "names", "entry", "count_parameters"]
