"""CIFAR ResNets (He et al. 2016, §4.2): 6n+2 layers, 16/32/64 channels.

Three stages of ``n`` BasicBlocks; the shortcut is the identity, or, where
the shape changes, the parameter-free option A: subsample by 2 and pad the
new channels with zeros. ``resnet110`` (n = 18) has 1,727,962 parameters for
10 classes — the paper's ResNet-110.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from . import register
from .layers import Float32Head, init_weights


class _ShortcutA(nn.Module):
    """Option A: stride-2 subsampling and zero-padding of the extra channels."""

    def __init__(self, in_planes: int, planes: int, stride: int):
        super().__init__()
        self.stride = stride
        self.extra = planes - in_planes
        if self.extra < 0:
            raise ValueError("option-A shortcut cannot reduce channels")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.stride != 1:
            x = x[:, :, ::self.stride, ::self.stride]
        if self.extra:
            lo = self.extra // 2
            x = F.pad(x, (0, 0, 0, 0, lo, self.extra - lo))
        return x


class BasicBlock(nn.Module):
    def __init__(self, in_planes: int, planes: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = (_ShortcutA(in_planes, planes, stride)
                         if stride != 1 or in_planes != planes else nn.Identity())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class CifarResNet(nn.Module):
    """ResNet-(6n+2) for 32×32 images with option-A shortcuts."""

    def __init__(self, depth: int = 110, num_classes: int = 10, width: int = 16):
        super().__init__()
        if (depth - 2) % 6:
            raise ValueError(f"CIFAR ResNet depth must be 6n+2, got {depth}")
        n = (depth - 2) // 6
        self.depth, self.num_classes = depth, num_classes
        self.conv1 = nn.Conv2d(3, width, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        layers, in_planes = [], width
        for stage, planes in enumerate((width, 2 * width, 4 * width)):
            for i in range(n):
                stride = 2 if stage > 0 and i == 0 else 1
                layers.append(BasicBlock(in_planes, planes, stride))
                in_planes = planes
        self.layers = nn.Sequential(*layers)
        self.fc = Float32Head(in_planes, num_classes)
        init_weights(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layers(x)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


def _make(depth: int):
    def factory(num_classes: int = 10) -> CifarResNet:
        return CifarResNet(depth=depth, num_classes=num_classes)
    factory.__name__ = f"resnet{depth}"
    factory.__doc__ = f"CIFAR ResNet-{depth} (option-A shortcuts)."
    return factory


for _depth in (110, 56, 20, 8):
    register(f"resnet{_depth}")(_make(_depth))
