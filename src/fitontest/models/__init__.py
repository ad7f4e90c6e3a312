"""CIFAR-size image classifiers (32×32 inputs) in one registry.

Every module of this package is imported on first use, so a new architecture
is one module with ``@register("name")`` on a factory taking ``num_classes``.

>>> from fitontest import models
>>> net = models.get("resnet110", num_classes=10)      # doctest: +SKIP
>>> models.names()                                     # doctest: +SKIP

Paper-scale members (docs/methods.md §8): ``resnet110``, ``densenet40``, ``wrn32``.
The others are depth/width-reduced members of the same families for the
laptop-size default configuration.

Every model's final linear layer runs in float32 even under autocast, so the
exported logits keep full precision when the body runs in bfloat16.
"""
from __future__ import annotations

import torch
from torch import nn

from fitontest.core.registry import Registry

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


class Float32Head(nn.Linear):
    """A linear classifier that always computes in float32 (outside autocast)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast(device_type=x.device.type, enabled=False):
            return super().forward(x.float())


def init_weights(module: nn.Module) -> None:
    """He (fan-out) init for convolutions, unit/zero BN, zero linear bias."""
    for m in module.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Linear):
            if m.bias is not None:
                nn.init.zeros_(m.bias)


__all__ = ["MODELS", "register", "get", "names", "entry", "count_parameters",
           "Float32Head", "init_weights"]
