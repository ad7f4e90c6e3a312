"""Layers shared by the image networks of :mod:`fitontest.models` (torch)."""
from __future__ import annotations

import torch
from torch import nn


class Float32Head(nn.Linear):
    """A linear classifier that always computes in float32 (outside autocast).

    On a CPU its product is an explicit multiply and sum, ATen's own kernels,
    not BLAS's matrix product: MKL runs other code on AMD than on Intel CPUs,
    and its vendor-independent branch changes the last bits with the batch
    size (benchmarks/measured/cpu_pins.md), so a network's weights and logits
    would depend on the machine or on the export's batch size.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast(device_type=x.device.type, enabled=False):
            x = x.float()
            if x.device.type == "cpu":
                out = (x.unsqueeze(-2) * self.weight).sum(-1)
                return out if self.bias is None else out + self.bias
            return super().forward(x)


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


__all__ = ["Float32Head", "init_weights"]
