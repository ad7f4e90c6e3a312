"""Wide residual networks (Zagoruyko & Komodakis 2016), no dropout.

Pre-activation BasicBlocks (BN-ReLU-Conv3×3 twice), N = (depth − 4)/6 blocks
per stage, 16k/32k/64k channels, a 1×1 convolution on the shortcut where the
shape changes.

"WideNet32" of the calibration literature (Guo et al. 2017; Kull et al. 2019;
the training scripts of github.com/markus93/NN_calibration) is this network
with depth 34 = 6N + 4 and widen factor k = 10, i.e. N = 5 blocks per stage
(WRN-34-10). The reference script sets ``depth = 34`` with the comment "32, if
ignoring conv layers carrying residuals" — hence the name. For 10 classes it
has 46,160,474 parameters, the ≈46M of docs/methods/08-networks.md §8 (WRN-28-10, N = 4, would
have 36.5M; 32 is not a valid 6N + 4 depth). Registered as ``wrn32``.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from . import register
from .layers import Float32Head, init_weights


class _WideBlock(nn.Module):
    def __init__(self, in_planes: int, planes: int, stride: int):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(in_planes)
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.shortcut = (nn.Conv2d(in_planes, planes, 1, stride, bias=False)
                         if stride != 1 or in_planes != planes else None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        o = F.relu(self.bn1(x))
        # the projection shortcut takes the pre-activated input (as in the reference code)
        skip = x if self.shortcut is None else self.shortcut(o)
        o = self.conv1(o)
        o = self.conv2(F.relu(self.bn2(o)))
        return o + skip


class WideResNet(nn.Module):
    """WRN-depth-k for 32×32 images."""

    def __init__(self, depth: int = 34, widen_factor: int = 10, num_classes: int = 10):
        super().__init__()
        if (depth - 4) % 6:
            raise ValueError(f"WRN depth must be 6N+4, got {depth}")
        n = (depth - 4) // 6
        self.depth, self.widen_factor, self.num_classes = depth, widen_factor, num_classes
        widths = [16, 16 * widen_factor, 32 * widen_factor, 64 * widen_factor]
        self.conv1 = nn.Conv2d(3, widths[0], 3, 1, 1, bias=False)
        blocks, in_planes = [], widths[0]
        for stage in range(3):
            for i in range(n):
                stride = 2 if stage > 0 and i == 0 else 1
                blocks.append(_WideBlock(in_planes, widths[stage + 1], stride))
                in_planes = widths[stage + 1]
        self.blocks = nn.Sequential(*blocks)
        self.bn = nn.BatchNorm2d(in_planes)
        self.fc = Float32Head(in_planes, num_classes)
        init_weights(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.blocks(self.conv1(x))
        x = F.relu(self.bn(x))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


@register("wrn32")
def wrn32(num_classes: int = 10) -> WideResNet:
    """WideNet32 = WRN-34-10 (paper scale, 46.16M parameters)."""
    return WideResNet(depth=34, widen_factor=10, num_classes=num_classes)


@register("wrn16_2")
def wrn16_2(num_classes: int = 10) -> WideResNet:
    """WRN-16-2 (laptop scale)."""
    return WideResNet(depth=16, widen_factor=2, num_classes=num_classes)


@register("wrn10_2")
def wrn10_2(num_classes: int = 10) -> WideResNet:
    """WRN-10-2 (tiny; one block per stage)."""
    return WideResNet(depth=10, widen_factor=2, num_classes=num_classes)


@register("wrn10_1")
def wrn10_1(num_classes: int = 10) -> WideResNet:
    """WRN-10-1 (the default laptop config's wide-ResNet member: 16/32/64 channels)."""
    return WideResNet(depth=10, widen_factor=1, num_classes=num_classes)
