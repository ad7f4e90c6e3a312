"""DenseNets for CIFAR (Huang et al. 2017), the basic variant (no bottleneck,
no compression): an initial 3×3 convolution to 16 channels, three dense
blocks of (depth − 4)/3 BN-ReLU-Conv3×3 layers each adding ``growth``
channels, BN-ReLU-Conv1×1-AvgPool transitions that keep the channel count,
then BN-ReLU, global average pooling and a linear layer.

``densenet40`` (growth 12, 12 layers per block) has 1,019,722 parameters for
10 classes, the "1.0M" of the DenseNet paper.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from . import register
from .layers import Float32Head, init_weights


class _DenseLayer(nn.Module):
    def __init__(self, in_ch: int, growth: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(in_ch)
        self.conv = nn.Conv2d(in_ch, growth, 3, 1, 1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([x, self.conv(F.relu(self.bn(x)))], 1)


class _Transition(nn.Module):
    def __init__(self, in_ch: int, out_ch: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(in_ch)
        self.conv = nn.Conv2d(in_ch, out_ch, 1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.avg_pool2d(self.conv(F.relu(self.bn(x))), 2)


class DenseNet(nn.Module):
    """Basic DenseNet-depth (no bottleneck, compression ``compression``)."""

    def __init__(self, depth: int = 40, growth: int = 12, num_classes: int = 10,
                 init_channels: int = 16, compression: float = 1.0):
        super().__init__()
        if (depth - 4) % 3:
            raise ValueError(f"basic DenseNet depth must be 3n+4, got {depth}")
        n = (depth - 4) // 3
        self.depth, self.growth, self.num_classes = depth, growth, num_classes
        ch = init_channels
        blocks: list[nn.Module] = [nn.Conv2d(3, ch, 3, 1, 1, bias=False)]
        for b in range(3):
            for _ in range(n):
                blocks.append(_DenseLayer(ch, growth))
                ch += growth
            if b < 2:
                out = int(ch * compression)
                blocks.append(_Transition(ch, out))
                ch = out
        blocks += [nn.BatchNorm2d(ch), nn.ReLU(inplace=True)]
        self.features = nn.Sequential(*blocks)
        self.fc = Float32Head(ch, num_classes)
        init_weights(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(x)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


@register("densenet40")
def densenet40(num_classes: int = 10) -> DenseNet:
    """DenseNet-40, growth 12 (paper scale, 1.02M parameters)."""
    return DenseNet(depth=40, growth=12, num_classes=num_classes)


@register("densenet_small")
def densenet_small(num_classes: int = 10) -> DenseNet:
    """DenseNet-16, growth 8 (laptop scale)."""
    return DenseNet(depth=16, growth=8, num_classes=num_classes)


@register("densenet10")
def densenet10(num_classes: int = 10) -> DenseNet:
    """DenseNet-10, growth 8 (tiny; 2 layers per block)."""
    return DenseNet(depth=10, growth=8, num_classes=num_classes)
