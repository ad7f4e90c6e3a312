"""A tiny plain CNN for tests and smoke runs (not a paper architecture)."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from . import register
from .layers import Float32Head, init_weights


class TinyCNN(nn.Module):
    """conv(3→w)-BN-ReLU-pool, conv(w→2w)-BN-ReLU-pool, global pool, linear."""

    def __init__(self, num_classes: int = 10, width: int = 8):
        super().__init__()
        self.num_classes = num_classes
        self.conv1 = nn.Conv2d(3, width, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, 2 * width, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(2 * width)
        self.fc = Float32Head(2 * width, num_classes)
        init_weights(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


@register("cnn_tiny")
def cnn_tiny(num_classes: int = 10) -> TinyCNN:
    """Two-layer CNN, 1.6k parameters: for tests and smoke runs only."""
    return TinyCNN(num_classes=num_classes)
