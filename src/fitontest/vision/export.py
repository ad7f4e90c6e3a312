"""Logits of a trained classifier on a set of images (the export stage).

>>> from fitontest.vision.export import export_logits
>>> export_logits(path, (X_val, y_val), None, "results/x/logits/resnet8/val.npz")   # doctest: +SKIP

The images are processed in *blocks*: the requested indices in increasing
image index (locality for generated and file-backed sources), ``chunk_size``
images per block, each block loaded from the source and run through the
network in batches of ``batch_size``. The plan of blocks depends only on the
indices and ``chunk_size``, so every block is computed the same way whoever
computes it: with ``n_jobs > 1`` worker processes (each on its share of the
threads) take blocks in turn, loading and running them in parallel, and the
parent merges their rows into one array written once, atomically. The result
equals the one-process export byte for byte (tested).
"""
from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from fitontest import models
from fitontest.core.io import save_npz
from fitontest.core.runtime import resolve_device, set_torch_threads
from .images import check_images, normalise, progress_bar

__all__ = ["MODEL_FORMAT", "load_model", "predict_logits", "export_logits", "block_plan"]

MODEL_FORMAT = "fitontest-model-v1"


def _read(model_path) -> dict:
    ck = torch.load(Path(model_path), map_location="cpu", weights_only=True)
    if ck.get("format") != MODEL_FORMAT:
        raise ValueError(f"{model_path} is not a fitontest model file "
                         f"(format {ck.get('format')!r})")
    return ck


def load_model(model_path: str | os.PathLike, device: str | torch.device = "auto"):
    """``(model in eval mode on the device, metadata dict)`` from a ``model.pt``."""
    dev = resolve_device(device)
    ck = _read(model_path)
    model = models.get(ck["model_name"], num_classes=ck["num_classes"])
    model.load_state_dict(ck["state_dict"])
    model = model.to(dev).eval()
    if dev.type == "cuda":
        model = model.to(memory_format=torch.channels_last)
    meta = {k: v for k, v in ck.items() if k != "state_dict"}
    return model, meta


@torch.inference_mode()
def predict_logits(model: torch.nn.Module, X: np.ndarray, mean, std, *,
                   batch_size: int = 1024, device: torch.device | None = None,
                   bar=None) -> np.ndarray:
    """Float32 logits (n, K) of uint8 NHWC images ``X`` (no augmentation)."""
    dev = device or next(model.parameters()).device
    cuda = dev.type == "cuda"
    mean_t = torch.as_tensor(mean, dtype=torch.float32, device=dev).view(1, -1, 1, 1)
    std_t = torch.as_tensor(std, dtype=torch.float32, device=dev).view(1, -1, 1, 1)
    outs = []
    for a in range(0, len(X), batch_size):
        xb = torch.from_numpy(np.ascontiguousarray(X[a:a + batch_size]))
        if cuda:
            xb = xb.pin_memory()
        xb = xb.to(dev, non_blocking=True).permute(0, 3, 1, 2)
        xb = normalise(xb, mean_t, std_t)
        xb = xb.contiguous(memory_format=torch.channels_last if cuda else torch.contiguous_format)
        with torch.autocast(device_type=dev.type, dtype=torch.bfloat16, enabled=cuda):
            outs.append(model(xb).float().cpu())
        if bar is not None:
            bar.update(len(xb))
    return torch.cat(outs).numpy()


def block_plan(indices: np.ndarray, chunk_size: int) -> list[np.ndarray]:
    """Positions into ``indices``, block by block: increasing image index
    (stable for repeats), at most ``chunk_size`` per block."""
    chunk_size = int(chunk_size)
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be positive, got {chunk_size}")
    order = np.argsort(indices, kind="stable")
    return [order[a:a + chunk_size] for a in range(0, order.size, chunk_size)]


class _Arrays:
    """In-memory images as a minimal source."""

    def __init__(self, X: np.ndarray, y: np.ndarray):
        self.X, self.y, self.n_images = X, y, len(X)

    def load(self, indices):
        return self.X[indices], self.y[indices]


def _block(model, meta, images, idx, pos, batch_size, dev, bar=None):
    """(logits, labels) of the images ``idx[pos]``."""
    Xc, yc = images.load(idx[pos])
    Xc, yc = check_images(Xc, yc, None)
    if len(Xc) != len(pos):
        raise ValueError("image source returned a block whose length does not match its indices")
    return predict_logits(model, Xc, meta["mean"], meta["std"], batch_size=batch_size,
                          device=dev, bar=bar), np.asarray(yc, dtype=np.int64)


# A worker process's model, images and settings (set once by _init_worker).
_WORKER: dict[str, Any] = {}


def _init_worker(model_path, device, images, idx, batch_size):
    set_torch_threads(1)        # one thread a process: the count changes the logits' last bits
    model, meta = load_model(model_path, device)
    _WORKER.update(model=model, meta=meta, images=images, idx=idx, batch_size=batch_size,
                   dev=next(model.parameters()).device)


def _work(pos):
    w = _WORKER
    logits, labels = _block(w["model"], w["meta"], w["images"], w["idx"], pos,
                            w["batch_size"], w["dev"])
    return pos, logits, labels


def export_logits(model_path: str | os.PathLike, source_or_arrays, indices=None,
                  out_path: str | os.PathLike | None = None, *,
                  device: str | torch.device = "auto", batch_size: int = 1024,
                  chunk_size: int = 50_000, log: Callable[[str], Any] = print,
                  progress: bool = True, num_threads: int | None = None,
                  n_jobs: int = 1) -> Path:
    """Logits of the model in ``model_path`` on the images at ``indices``.

    ``source_or_arrays`` is ``(X, y)`` (uint8 NHWC, int labels) or an image
    source with ``load(indices) -> (X, y)`` and ``n_images``. ``indices``
    defaults to all images. Processing is in blocks of ``chunk_size`` images
    (bounded memory for a 1M hold-out; module notes). ``n_jobs``: worker
    processes computing blocks in parallel on the CPU, one thread each (the
    thread count changes the logits' last bits; 1 on CUDA, where one process
    keeps the device busy); ``num_threads``: torch's threads on a GPU. Writes,
    atomically, an npz with ``logits`` (N, K) float32, ``labels`` (N,) int64
    and ``indices`` (N,) int64, in the order of ``indices``; returns ``out_path``.
    """
    if out_path is None:
        raise ValueError("out_path is required")
    out_path = Path(out_path)
    if out_path.suffix != ".npz":
        raise ValueError(f"out_path must end with .npz, got {out_path}")
    if isinstance(source_or_arrays, (tuple, list)):
        if len(source_or_arrays) != 2:
            raise ValueError("arrays must be given as (X, y)")
        images = _Arrays(*check_images(source_or_arrays[0], source_or_arrays[1], None))
    elif hasattr(source_or_arrays, "load") and hasattr(source_or_arrays, "n_images"):
        images = source_or_arrays
    else:
        raise TypeError("source_or_arrays must be (X, y) arrays or an image source with load()")
    n_total = int(images.n_images)
    idx = (np.arange(n_total, dtype=np.int64) if indices is None
           else np.asarray(indices, dtype=np.int64))
    if idx.ndim != 1 or len(idx) == 0:
        raise ValueError("indices must be a non-empty 1-D integer array")
    if idx.min() < 0 or idx.max() >= n_total:
        raise ValueError(f"indices must lie in 0..{n_total - 1}, "
                         f"got range {idx.min()}..{idx.max()}")
    if not isinstance(n_jobs, (int, np.integer)) or n_jobs < 1:
        raise ValueError(f"n_jobs must be a positive integer, got {n_jobs!r}")
    blocks = block_plan(idx, chunk_size)
    n_jobs = 1 if resolve_device(device).type != "cpu" else min(int(n_jobs), len(blocks))

    meta = {k: v for k, v in _read(model_path).items() if k != "state_dict"}
    N, K = len(idx), int(meta["num_classes"])
    logits = np.empty((N, K), dtype=np.float32)
    labels = np.empty(N, dtype=np.int64)
    t0 = time.perf_counter()
    bar = progress_bar(N, f"logits {meta['model_name']}", progress)
    dev = resolve_device(device)
    # On a CPU one thread a process: the thread count changes the logits' last bits
    # (benchmarks/measured/cpu_pins.md); the blocks, the same for any n_jobs, are
    # what runs in parallel
    if n_jobs == 1:
        set_torch_threads(1 if dev.type == "cpu" else num_threads)
        model, meta = load_model(model_path, dev)
        for pos in blocks:
            logits[pos], labels[pos] = _block(model, meta, images, idx, pos, batch_size, dev, bar)
    else:
        # fork: the workers inherit the images (no pickling of a source's
        # caches) and need no re-import of a Snakemake script's __main__; the
        # parent has run no torch computation (thread pools) before it forks
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(n_jobs, _init_worker,
                      (model_path, device, images, idx, batch_size)) as pool:
            for pos, lg, lb in pool.imap_unordered(_work, blocks):
                logits[pos], labels[pos] = lg, lb
                bar.update(len(pos))
    bar.close()
    secs = time.perf_counter() - t0

    save_npz(out_path, logits=logits, labels=labels, indices=idx)
    acc = float((logits.argmax(1) == labels).mean())
    log(f"[{meta['model_name']}] logits of {N} images -> {out_path} "
        f"(accuracy {acc:.4f}, {secs:.1f}s, {N / max(secs, 1e-9):.0f} img/s on {dev}, "
        f"{n_jobs} process{'es' if n_jobs > 1 else ''})")
    return out_path
