"""Image arrays shared by training and export: the input check, the
channel statistics, normalisation and the batched augmentation (torch), and
the progress bar of both loops."""
from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F


def check_images(X: Any, y: Any | None,
                 num_classes: int | None) -> tuple[np.ndarray, np.ndarray | None]:
    if not isinstance(X, np.ndarray) or X.dtype != np.uint8 or X.ndim != 4 or X.shape[-1] != 3:
        desc = (f"{type(X).__name__} {getattr(X, 'dtype', '')} {getattr(X, 'shape', '')}").strip()
        raise ValueError("images must be a uint8 numpy array of shape (n, H, W, 3) (NHWC), "
                         f"got {desc}")
    if len(X) == 0:
        raise ValueError("no images given")
    if y is None:
        return X, None
    y = np.asarray(y)
    if y.ndim != 1 or len(y) != len(X):
        raise ValueError(f"labels must have shape ({len(X)},), got {y.shape}")
    if not np.issubdtype(y.dtype, np.integer):
        whole = np.issubdtype(y.dtype, np.floating) and np.all(np.isfinite(y)) \
            and np.all(y == np.round(y))
        if whole:
            y = y.astype(np.int64)
        else:
            raise ValueError(f"labels must be integers, got dtype {y.dtype}")
    y = y.astype(np.int64, copy=False)
    if num_classes is not None and (y.min() < 0 or y.max() >= num_classes):
        raise ValueError(f"labels must lie in 0..{num_classes - 1}, got range {y.min()}..{y.max()}")
    return X, y


def channel_stats(X: np.ndarray) -> tuple[list[float], list[float]]:
    """Exact per-channel mean and std (population) of uint8 NHWC images, in pixel units."""
    mean, std = [], []
    levels = np.arange(256, dtype=np.float64)
    for c in range(X.shape[-1]):
        counts = np.bincount(X[..., c].reshape(-1), minlength=256).astype(np.float64)
        total = counts.sum()
        m = float(counts @ levels / total)
        var = float(counts @ (levels - m) ** 2 / total)
        mean.append(m)
        std.append(max(math.sqrt(var), 1e-3))
    return mean, std


def normalise(xb: torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    return (xb.float() - mean) / std


def augment_batch(x: torch.Tensor, shifts: torch.Tensor, flips: torch.Tensor | None,
                  pad: int, pad_mode: str = "zeros") -> torch.Tensor:
    """Shift each image of ``x`` (B, C, H, W) by ``shifts[b] = (dy, dx)`` ∈ [-pad, pad]²
    (pad, then crop at offset pad + shift) and mirror it where ``flips[b]``; one
    batched gather, no per-image loop."""
    B, C, H, W = x.shape
    dev = x.device
    if pad > 0:
        xp = F.pad(x, (pad, pad, pad, pad), mode="constant" if pad_mode == "zeros" else "reflect")
    else:
        xp = x
    Wp = W + 2 * pad
    rows = (shifts[:, 0].to(dev) + pad)[:, None] + torch.arange(H, device=dev)
    cols = (shifts[:, 1].to(dev) + pad)[:, None] + torch.arange(W, device=dev)
    if flips is not None:
        cols = torch.where(flips.to(dev)[:, None], cols.flip(1), cols)
    # one gather over the flattened padded image (several times faster than 4-D indexing)
    flat = (rows[:, :, None] * Wp + cols[:, None, :]).view(B, 1, H * W).expand(B, C, H * W)
    return xp.reshape(B, C, -1).gather(2, flat).view(B, C, H, W)


def progress_bar(total: int, desc: str, enabled: bool):
    from tqdm.auto import tqdm
    return tqdm(total=total, desc=desc, file=sys.stderr, disable=not enabled,
                leave=False, dynamic_ncols=True, mininterval=1.0)
