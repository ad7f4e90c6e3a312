"""Training of the image classifiers and export of their logits.

>>> from fitontest.vision.train import train_model, export_logits
>>> path = train_model("resnet8", X, y, recipe="small", out_dir="results/x/models/resnet8")  # doctest: +SKIP
>>> export_logits(path, (X_val, y_val), None, "results/x/logits/resnet8/val.npz")           # doctest: +SKIP

Design (see docs/methods.md §8 and ``recipes.py`` for the recipe fields):

- The training images live on the device as one uint8 NCHW tensor; each batch
  is gathered, converted to float, standardised with the per-channel mean/std
  of the training set, and augmented there in one batched gather (random
  shifts of up to ``shift`` pixels = pad + random crop, and horizontal flips).
- All randomness of training (model initialisation, shuffling, augmentation)
  comes from ``seed`` through explicit generators, so a CPU run is
  reproducible bit for bit, and a run interrupted after any epoch and resumed
  from its checkpoint ends with the same weights as an uninterrupted run.
- On CUDA: bfloat16 autocast, channels_last, cuDNN autotuning (not bitwise
  deterministic there). The classifier layer always runs in float32.
- ``out_dir/checkpoint.pt`` is written atomically after every epoch (model,
  optimiser, schedule position, RNG states, history); ``out_dir/model.pt``
  (weights + model name + num_classes + normalisation) and
  ``out_dir/train_log.csv`` (per epoch: loss, accuracy, lr, wall ``seconds``
  and ``cpu_seconds``, the process's CPU time) at the end.
"""
from __future__ import annotations

import csv
import hashlib
import io
import math
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

import numpy as np
import torch
import torch.nn.functional as F

from fitontest import models
from fitontest.core.io import atomic_path, save_npz, write_text
from .recipes import RECIPES, get_recipe, lr_at, recipe_names, validate_recipe
from fitontest.core.runtime import resolve_device, set_torch_threads

__all__ = [
    "RECIPES", "get_recipe", "validate_recipe", "lr_at", "recipe_names",
    "resolve_device", "train_model", "export_logits", "load_model",
    "predict_logits", "augment_batch", "channel_stats",
]

MODEL_FORMAT = "fitontest-model-v1"
CHECKPOINT_FORMAT = "fitontest-checkpoint-v1"
# cpu_seconds: CPU time of the process in the epoch, the measure of the work
# on a shared machine (wall seconds grow with the load)
LOG_FIELDS = ("epoch", "loss", "accuracy", "lr", "seconds", "cpu_seconds")


# --------------------------------------------------------------------------- helpers

def _check_images(X: Any, y: Any | None, num_classes: int | None) -> tuple[np.ndarray, np.ndarray | None]:
    if not isinstance(X, np.ndarray) or X.dtype != np.uint8 or X.ndim != 4 or X.shape[-1] != 3:
        desc = (f"{type(X).__name__} {getattr(X, 'dtype', '')} {getattr(X, 'shape', '')}").strip()
        raise ValueError(f"images must be a uint8 numpy array of shape (n, H, W, 3) (NHWC), got {desc}")
    if len(X) == 0:
        raise ValueError("no images given")
    if y is None:
        return X, None
    y = np.asarray(y)
    if y.ndim != 1 or len(y) != len(X):
        raise ValueError(f"labels must have shape ({len(X)},), got {y.shape}")
    if not np.issubdtype(y.dtype, np.integer):
        if np.issubdtype(y.dtype, np.floating) and np.all(np.isfinite(y)) and np.all(y == np.round(y)):
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


def _fingerprint(X: np.ndarray, y: np.ndarray) -> str:
    h = hashlib.blake2b(digest_size=16)
    h.update(str(X.shape).encode())
    h.update(np.ascontiguousarray(X).data)
    h.update(np.ascontiguousarray(y, dtype=np.int64).data)
    return h.hexdigest()


def _seeds(seed: int) -> tuple[int, int]:
    """Independent seeds for model initialisation and for the data stream."""
    s = np.random.SeedSequence(int(seed)).generate_state(2, dtype=np.uint32)
    return int(s[0]), int(s[1])


def _torch_save_atomic(obj: Any, path: Path) -> None:
    with atomic_path(path) as tmp:
        torch.save(obj, tmp)


def _write_log(path: Path, history: list[dict]) -> None:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=LOG_FIELDS, lineterminator="\n")
    w.writeheader()
    for row in history:
        w.writerow({k: row.get(k, "") for k in LOG_FIELDS})
    write_text(path, buf.getvalue())


def _normalise(xb: torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
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


def _rng_states() -> dict[str, Any]:
    st = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        st["cuda"] = torch.cuda.get_rng_state_all()
    return st


def _set_rng_states(st: Mapping[str, Any]) -> None:
    torch.set_rng_state(st["torch"])
    if "cuda" in st and torch.cuda.is_available() and len(st["cuda"]) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(st["cuda"])


def build(model_name: str, num_classes: int, init_seed: int, recipe: Mapping[str, Any],
          dev: torch.device) -> tuple[torch.nn.Module, torch.optim.Optimizer]:
    """The network (seeded initialisation, on ``dev``) and its SGD optimiser."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(init_seed)
        model = models.get(model_name, num_classes=num_classes)
    model = model.to(dev)
    if dev.type == "cuda":
        model = model.to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=recipe["lr"], momentum=recipe["momentum"],
                          nesterov=recipe["nesterov"], weight_decay=recipe["weight_decay"])
    return model, opt


def _progress(total: int, desc: str, enabled: bool):
    from tqdm.auto import tqdm
    return tqdm(total=total, desc=desc, file=sys.stderr, disable=not enabled,
                leave=False, dynamic_ncols=True, mininterval=1.0)


# --------------------------------------------------------------------------- training

class _Batches:
    """The training set on the device and the recipe's batching and augmentation."""

    def __init__(self, X: np.ndarray, y: np.ndarray, recipe: Mapping[str, Any],
                 dev: torch.device):
        self.stats = mean, std = channel_stats(X)
        self.n, self.dev, self.pad_mode = len(X), dev, recipe["pad_mode"]
        self.bs = min(recipe["batch_size"], self.n)
        self.steps = max(1, self.n // self.bs)
        self.X = torch.from_numpy(X).to(dev).permute(0, 3, 1, 2).contiguous()  # uint8 NCHW
        self.y = torch.from_numpy(y).to(dev)
        self.mean = torch.tensor(mean, dtype=torch.float32, device=dev).view(1, -1, 1, 1)
        self.std = torch.tensor(std, dtype=torch.float32, device=dev).view(1, -1, 1, 1)
        self.shift = recipe["shift"] if recipe["augment"] else 0
        self.flip = recipe["augment"] and recipe["flip"]

    def batch(self, idx: torch.Tensor, gen: torch.Generator):
        """Normalised, augmented images and labels of positions ``idx`` (the
        augmentation draws come from ``gen``, in a fixed order)."""
        B = len(idx)
        shifts = torch.randint(-self.shift, self.shift + 1, (B, 2), generator=gen) \
            if self.shift else None
        flips = (torch.rand(B, generator=gen) < 0.5) if self.flip else None
        idx_d = idx.to(self.dev, non_blocking=True)
        xb = _normalise(self.X[idx_d], self.mean, self.std)
        if self.shift or self.flip:
            xb = augment_batch(xb, shifts if shifts is not None
                               else torch.zeros(B, 2, dtype=torch.long),
                               flips, self.shift, self.pad_mode)
        if self.dev.type == "cuda":
            xb = xb.contiguous(memory_format=torch.channels_last)
        return xb, self.y[idx_d]


def train_one_epoch(model: torch.nn.Module, opt: torch.optim.Optimizer, data: _Batches,
                    recipe: Mapping[str, Any], epoch: int, gen: torch.Generator, *,
                    desc: str = "", progress: bool = False) -> dict:
    """One epoch of SGD with the recipe's per-step learning rate; returns the
    epoch's log row (mean loss and accuracy over its batches, last lr, times)."""
    model.train()
    dev, cuda = data.dev, data.dev.type == "cuda"
    t0, c0 = time.perf_counter(), time.process_time()
    perm = torch.randperm(data.n, generator=gen)
    loss_sum = torch.zeros((), device=dev, dtype=torch.float64)
    correct = torch.zeros((), device=dev, dtype=torch.int64)
    seen = 0
    lr = lr_at(recipe, epoch, 0, data.steps)
    bar = _progress(data.steps, desc, progress)
    for step in range(data.steps):
        lr = lr_at(recipe, epoch, step, data.steps)
        for g in opt.param_groups:
            g["lr"] = lr
        xb, yb = data.batch(perm[step * data.bs:(step + 1) * data.bs], gen)
        with torch.autocast(device_type=dev.type, dtype=torch.bfloat16, enabled=cuda):
            out = model(xb)
        loss = F.cross_entropy(out.float(), yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        loss_sum += loss.detach().double() * len(yb)
        correct += (out.detach().argmax(1) == yb).sum()
        seen += len(yb)
        bar.update(1)
        if progress and (step % 20 == 0 or step == data.steps - 1):
            bar.set_postfix(loss=f"{loss_sum.item() / seen:.3f}", lr=f"{lr:.3g}", refresh=False)
    bar.close()
    if not math.isfinite(loss_sum.item()):
        raise FloatingPointError(f"training loss became non-finite in epoch {epoch + 1}")
    return {"epoch": epoch + 1, "loss": loss_sum.item() / seen,
            "accuracy": correct.item() / seen, "lr": lr,
            "seconds": round(time.perf_counter() - t0, 3),
            "cpu_seconds": round(time.process_time() - c0, 3), "images": seen}


def save_checkpoint(path: Path, meta: Mapping[str, Any], model, opt, gen: torch.Generator,
                    history: list[dict]) -> None:
    """Everything a resumed run needs to continue bit for bit."""
    _torch_save_atomic({
        "format": CHECKPOINT_FORMAT, "meta": dict(meta),
        "model": {k: v.detach().cpu() for k, v in model.state_dict().items()},
        "optimizer": opt.state_dict(), "scheduler": {"epoch": len(history)},
        "generator": gen.get_state(), "rng": _rng_states(), "history": history,
    }, path)


def load_checkpoint(path: Path, meta: Mapping[str, Any], model, opt, gen: torch.Generator,
                    log: Callable[[str], Any]) -> list[dict] | None:
    """The history of a matching checkpoint at ``path``, its state loaded into
    ``model``, ``opt``, ``gen`` and the global RNGs; None when there is none,
    it is for another run, or it cannot be read (the caller starts afresh)."""
    if not path.exists():
        return None
    name = meta["model_name"]
    try:
        ck = torch.load(path, map_location="cpu", weights_only=True)
        if ck.get("format") != CHECKPOINT_FORMAT or any(ck["meta"].get(k) != v
                                                         for k, v in meta.items()):
            log(f"[{name}] checkpoint {path} is for another run; starting afresh")
            return None
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        gen.set_state(ck["generator"])
        _set_rng_states(ck["rng"])
        return list(ck["history"])
    except Exception as exc:
        log(f"[{name}] cannot read checkpoint {path} ({exc}); starting afresh")
        return None


def save_model(path: Path, meta: Mapping[str, Any], model, mean, std, history: list[dict],
               complete: bool) -> None:
    """The exported model file (``model.pt``) that :func:`load_model` reads."""
    _torch_save_atomic({
        "format": MODEL_FORMAT, **meta,
        "state_dict": {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()},
        "mean": mean, "std": std, "epochs_done": len(history), "complete": complete,
        "history": history, "torch_version": str(torch.__version__),
    }, path)


def _finished(model_path: Path, meta: Mapping[str, Any], log) -> bool:
    """Whether ``model_path`` is a complete model of this very run."""
    if not model_path.exists():
        return False
    try:
        done = torch.load(model_path, map_location="cpu", weights_only=True)
        return bool(done.get("complete")) and all(done.get(k) == v for k, v in meta.items())
    except Exception as exc:  # unreadable: retrain
        log(f"[{meta['model_name']}] ignoring unreadable {model_path}: {exc}")
        return False


def train_model(model_name: str, X: np.ndarray, y: np.ndarray, *,
                recipe: str | Mapping[str, Any], out_dir: str | os.PathLike,
                device: str | torch.device = "auto", seed: int = 0, num_classes: int = 10,
                log: Callable[[str], Any] = print, resume: bool = True,
                max_epochs: int | None = None, progress: bool = True,
                keep_checkpoint: bool = False, num_threads: int | None = None) -> Path:
    """Train ``model_name`` on uint8 NHWC images ``X`` with labels ``y``.

    ``recipe`` is a name in :data:`RECIPES` or a mapping of recipe fields.
    Writes ``out_dir/model.pt`` and ``out_dir/train_log.csv`` and returns the
    path of ``model.pt``. With ``resume`` a matching ``checkpoint.pt`` in
    ``out_dir`` is continued (and a matching complete ``model.pt`` is returned
    untouched); a checkpoint of another model/recipe/seed/data is ignored.
    ``max_epochs`` stops after that many epochs in total (the schedule still
    follows ``recipe['epochs']``); the ``model.pt`` then says
    ``complete: False`` and the checkpoint is kept for a later resume.
    """
    recipe = get_recipe(recipe)
    X, y = _check_images(X, y, num_classes)
    models.entry(model_name)  # unknown names fail before any work
    dev = resolve_device(device)
    set_torch_threads(num_threads)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    model_path, ckpt_path, log_path = out_dir / "model.pt", out_dir / "checkpoint.pt", out_dir / "train_log.csv"

    epochs = recipe["epochs"]
    stop = epochs if max_epochs is None else min(epochs, int(max_epochs))
    init_seed, data_seed = _seeds(seed)
    meta = {"model_name": model_name, "num_classes": int(num_classes), "seed": int(seed),
            "recipe": recipe, "n_train": len(X), "fingerprint": _fingerprint(X, y)}
    if resume and _finished(model_path, meta, log):
        log(f"[{model_name}] {model_path} is already trained for this data/recipe/seed; skipping")
        return model_path

    if dev.type == "cuda":
        torch.backends.cudnn.benchmark = True
    model, opt = build(model_name, num_classes, init_seed, recipe, dev)
    gen = torch.Generator(device="cpu")
    gen.manual_seed(data_seed)
    history = load_checkpoint(ckpt_path, meta, model, opt, gen, log) if resume else None
    if history is None:
        if resume and ckpt_path.exists():      # a failed load may have touched the state
            model, opt = build(model_name, num_classes, init_seed, recipe, dev)
            gen.manual_seed(data_seed)
        history = []
    else:
        log(f"[{model_name}] resuming from {ckpt_path} after epoch {len(history)}/{epochs}")
    start = len(history)

    data = _Batches(X, y, recipe, dev)
    if start == 0 and stop > 0:
        log(f"[{model_name}] training on {data.n} images, {epochs} epochs x {data.steps} steps "
            f"of {data.bs} on {dev} (seed {seed}, {models.count_parameters(model):,} parameters)")
    for epoch in range(start, stop):
        try:
            row = train_one_epoch(model, opt, data, recipe, epoch, gen,
                                  desc=f"{model_name} {epoch + 1}/{epochs}", progress=progress)
        except FloatingPointError as exc:
            raise FloatingPointError(f"[{model_name}] {exc}") from None
        seen = row.pop("images")
        history.append(row)
        save_checkpoint(ckpt_path, meta, model, opt, gen, history)
        _write_log(log_path, history)
        log(f"[{model_name}] epoch {epoch + 1}/{epochs} loss {row['loss']:.4f} "
            f"acc {row['accuracy']:.4f} lr {row['lr']:.4g} {row['seconds']:.1f}s "
            f"(cpu {row['cpu_seconds']:.1f}s) ({seen / max(row['seconds'], 1e-9):.0f} img/s)")

    complete = len(history) >= epochs
    save_model(model_path, meta, model, *data.stats, history, complete)
    _write_log(log_path, history)
    if complete and not keep_checkpoint and ckpt_path.exists():
        ckpt_path.unlink()
    if not complete:
        log(f"[{model_name}] stopped after epoch {len(history)}/{epochs} (max_epochs); "
            f"resume with the same out_dir to continue")
    return model_path


# --------------------------------------------------------------------------- inference

def load_model(model_path: str | os.PathLike, device: str | torch.device = "auto"):
    """``(model in eval mode on the device, metadata dict)`` from a ``model.pt``."""
    dev = resolve_device(device)
    ck = torch.load(Path(model_path), map_location="cpu", weights_only=True)
    if ck.get("format") != MODEL_FORMAT:
        raise ValueError(f"{model_path} is not a fitontest model file (format {ck.get('format')!r})")
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
        xb = _normalise(xb, mean_t, std_t)
        xb = xb.contiguous(memory_format=torch.channels_last if cuda else torch.contiguous_format)
        with torch.autocast(device_type=dev.type, dtype=torch.bfloat16, enabled=cuda):
            outs.append(model(xb).float().cpu())
        if bar is not None:
            bar.update(len(xb))
    return torch.cat(outs).numpy()


def _iter_arrays(X: np.ndarray, y: np.ndarray, indices: np.ndarray, chunk_size: int
                 ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    for a in range(0, len(indices), chunk_size):
        idx = indices[a:a + chunk_size]
        yield X[idx], y[idx], np.arange(a, a + len(idx))


def export_logits(model_path: str | os.PathLike, source_or_arrays, indices=None,
                  out_path: str | os.PathLike | None = None, *,
                  device: str | torch.device = "auto", batch_size: int = 1024,
                  chunk_size: int = 50_000, log: Callable[[str], Any] = print,
                  progress: bool = True, num_threads: int | None = None) -> Path:
    """Logits of the model in ``model_path`` on the images at ``indices``.

    ``source_or_arrays`` is ``(X, y)`` (uint8 NHWC, int labels) or an image
    source with ``iter_chunks(indices, chunk_size)`` yielding
    ``(X, y, positions)``, positions being where the chunk's rows go in
    ``indices``. ``indices`` defaults to all images. Processing is chunked
    (bounded memory for a 1M hold-out). Writes, atomically, an npz with
    ``logits`` (N, K) float32, ``labels`` (N,) int64 and ``indices`` (N,) int64,
    in the order of ``indices``; returns ``out_path``.
    """
    set_torch_threads(num_threads)
    if out_path is None:
        raise ValueError("out_path is required")
    out_path = Path(out_path)
    if out_path.suffix != ".npz":
        raise ValueError(f"out_path must end with .npz, got {out_path}")
    if isinstance(source_or_arrays, (tuple, list)):
        if len(source_or_arrays) != 2:
            raise ValueError("arrays must be given as (X, y)")
        X, y = _check_images(source_or_arrays[0], source_or_arrays[1], None)
        n_total = len(X)
        idx = np.arange(n_total, dtype=np.int64) if indices is None else np.asarray(indices, dtype=np.int64)
        chunks = _iter_arrays(X, y, idx, chunk_size)
    elif hasattr(source_or_arrays, "iter_chunks"):
        src = source_or_arrays
        n_total = int(src.n_images)
        idx = np.arange(n_total, dtype=np.int64) if indices is None else np.asarray(indices, dtype=np.int64)
        chunks = src.iter_chunks(idx, chunk_size=chunk_size)
    else:
        raise TypeError("source_or_arrays must be (X, y) arrays or an image source with iter_chunks()")
    if idx.ndim != 1 or len(idx) == 0:
        raise ValueError("indices must be a non-empty 1-D integer array")
    if idx.min() < 0 or idx.max() >= n_total:
        raise ValueError(f"indices must lie in 0..{n_total - 1}, got range {idx.min()}..{idx.max()}")

    model, meta = load_model(model_path, device)
    dev = next(model.parameters()).device
    N, K = len(idx), int(meta["num_classes"])
    logits = np.empty((N, K), dtype=np.float32)
    labels = np.empty(N, dtype=np.int64)
    filled = np.zeros(N, dtype=bool)
    t0 = time.perf_counter()
    bar = _progress(N, f"logits {meta['model_name']}", progress)
    for Xc, yc, pos in chunks:
        Xc, yc = _check_images(Xc, yc, None)
        pos = np.asarray(pos, dtype=np.int64)
        if len(pos) != len(Xc):
            raise ValueError("image source returned a chunk whose positions do not match its images")
        logits[pos] = predict_logits(model, Xc, meta["mean"], meta["std"],
                                     batch_size=batch_size, device=dev, bar=bar)
        labels[pos] = yc
        filled[pos] = True
    bar.close()
    if not filled.all():
        raise RuntimeError(f"image source left {int((~filled).sum())} of {N} requested images out")
    secs = time.perf_counter() - t0

    save_npz(out_path, logits=logits, labels=labels, indices=idx)
    acc = float((logits.argmax(1) == labels).mean())
    log(f"[{meta['model_name']}] logits of {N} images -> {out_path} "
        f"(accuracy {acc:.4f}, {secs:.1f}s, {N / max(secs, 1e-9):.0f} img/s on {dev})")
    return out_path
