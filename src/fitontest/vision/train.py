"""Training of the image classifiers (their logits: :mod:`.export`).

>>> from fitontest.vision.train import train_model
>>> path = train_model("resnet8", X, y, recipe="small",
...                    out_dir="results/x/models/resnet8")  # doctest: +SKIP

Design (see docs/methods/08-networks.md §8 and ``recipes.py`` for the recipe fields):

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
  and ``cpu_seconds``, the process's CPU time, and the training ``path``) at
  the end.
- How a step runs is ``fast`` (:mod:`.fast`): by default ``auto``, the eager
  path on a CPU and the measured best path on CUDA (:mod:`.fast_auto`). The
  path taken and why are logged and kept in ``model.pt`` (``fast``).
"""
from __future__ import annotations

import csv
import hashlib
import io
import math
import os
import time
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np
import torch

from fitontest import models
from fitontest.core.io import atomic_path, write_text
from fitontest.core.runtime import resolve_device, set_torch_threads
from .export import MODEL_FORMAT
from .fast import FastOptions, TrainStep, start_step, usable
from .fast_auto import choose
from .fast_options import check_setting
from .images import augment_batch, channel_stats, check_images, normalise, progress_bar
from .recipes import RECIPES, get_recipe, lr_at, recipe_names, validate_recipe

__all__ = [
    "RECIPES", "get_recipe", "validate_recipe", "lr_at", "recipe_names",
    "resolve_device", "train_model", "augment_batch", "channel_stats",
]

CHECKPOINT_FORMAT = "fitontest-checkpoint-v1"
# cpu_seconds: CPU time of the process in the epoch, the measure of the work
# on a shared machine (wall seconds grow with the load)
# path: the training path the epoch ran on (a resumed run may take another)
LOG_FIELDS = ("epoch", "loss", "accuracy", "lr", "seconds", "cpu_seconds", "path")


# --------------------------------------------------------------------------- helpers

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
          dev: torch.device, *, channels_last: bool | None = None,
          fused: bool = False) -> tuple[torch.nn.Module, torch.optim.Optimizer]:
    """The network (seeded initialisation, on ``dev``; channels-last on CUDA
    unless ``channels_last`` says otherwise) and its SGD optimiser."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(init_seed)
        model = models.get(model_name, num_classes=num_classes)
    model = model.to(dev)
    if dev.type == "cuda" if channels_last is None else channels_last:
        model = model.to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=recipe["lr"], momentum=recipe["momentum"],
                          nesterov=recipe["nesterov"], weight_decay=recipe["weight_decay"],
                          **({"fused": True} if fused else {}))
    return model, opt


# --------------------------------------------------------------------------- training

class _Batches:
    """The training set on the device and the recipe's batching and augmentation."""

    def __init__(self, X: np.ndarray, y: np.ndarray, recipe: Mapping[str, Any],
                 dev: torch.device, channels_last: bool | None = None):
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
        self.channels_last = dev.type == "cuda" if channels_last is None else channels_last

    def draw(self, perm: torch.Tensor, step: int, gen: torch.Generator):
        """Positions, shifts and flips of batch ``step`` of the epoch's ``perm``
        (the augmentation draws come from ``gen``, in a fixed order)."""
        B = self.bs
        shifts = torch.randint(-self.shift, self.shift + 1, (B, 2), generator=gen) \
            if self.shift else None
        flips = (torch.rand(B, generator=gen) < 0.5) if self.flip else None
        return perm[step * B:(step + 1) * B], shifts, flips

    def epoch_draws(self, perm: torch.Tensor, gen: torch.Generator):
        """Every batch's :meth:`draw` of the epoch, made now (the same calls in
        the same order, so the same numbers) and uploaded in one copy each."""
        draws = [self.draw(perm, step, gen) for step in range(self.steps)]
        up = [None if parts[0] is None else torch.stack(parts).to(self.dev, non_blocking=True)
              for parts in zip(*draws)]
        return lambda step: tuple(None if t is None else t[step] for t in up)

    def images(self, idx: torch.Tensor, shifts, flips):
        """Normalised, augmented images and labels of positions ``idx``."""
        idx_d = idx.to(self.dev, non_blocking=True)
        xb = normalise(self.X[idx_d], self.mean, self.std)
        if self.shift or self.flip:
            xb = augment_batch(xb, shifts if shifts is not None
                               else torch.zeros(len(idx_d), 2, dtype=torch.long, device=self.dev),
                               flips, self.shift, self.pad_mode)
        if self.channels_last:
            xb = xb.contiguous(memory_format=torch.channels_last)
        return xb, self.y[idx_d]


def train_one_epoch(model: torch.nn.Module, opt: torch.optim.Optimizer, data: _Batches,
                    recipe: Mapping[str, Any], epoch: int, gen: torch.Generator, *,
                    desc: str = "", progress: bool = False, step: TrainStep | None = None) -> dict:
    """One epoch of SGD with the recipe's per-step learning rate; returns the
    epoch's log row (mean loss and accuracy over its batches, last lr, times,
    and ``loss_tenths``: the running mean loss after each tenth of the epoch).
    ``step``: the (fast) training step; the eager one by default."""
    step = step or TrainStep(model, opt, data)
    model.train()
    t0, c0 = time.perf_counter(), time.process_time()
    perm = torch.randperm(data.n, generator=gen)
    batch = (data.epoch_draws(perm, gen) if step.opts.device_data
             else lambda k: data.draw(perm, k, gen))
    step.reset()
    seen, tenths = 0, []
    ends = {(i + 1) * data.steps // 10 - 1 for i in range(10)}
    lr = lr_at(recipe, epoch, 0, data.steps)
    bar = progress_bar(data.steps, desc, progress)
    for k in range(data.steps):
        lr = lr_at(recipe, epoch, k, data.steps)
        step.set_lr(lr)
        step.step(*batch(k))
        seen += data.bs
        if k in ends:      # the loss curve within the epoch (ten host syncs an epoch)
            tenths.append(step.loss_sum.item() / seen)
        bar.update(1)
        if progress and (k % 20 == 0 or k == data.steps - 1):
            bar.set_postfix(loss=f"{step.loss_sum.item() / seen:.3f}", lr=f"{lr:.3g}",
                            refresh=False)
    bar.close()
    loss_sum, correct = step.totals()
    if not math.isfinite(loss_sum):
        raise FloatingPointError(f"training loss became non-finite in epoch {epoch + 1}")
    return {"epoch": epoch + 1, "loss": loss_sum / seen,
            "accuracy": correct / seen, "lr": lr,
            "seconds": round(time.perf_counter() - t0, 3),
            "cpu_seconds": round(time.process_time() - c0, 3), "images": seen,
            "loss_tenths": tenths}


def _portable(opt_state: dict) -> dict:
    """The optimiser state as the eager path keeps it: a float learning rate
    and no implementation flags (the fast step's tensor lr and fused kernel
    are how a run is executed, not what it is), so either path resumes it."""
    for g in opt_state["param_groups"]:
        if isinstance(g["lr"], torch.Tensor):
            g["lr"] = float(g["lr"])
        g.update(fused=None, foreach=None)
    return opt_state


def save_checkpoint(path: Path, meta: Mapping[str, Any], model, opt, gen: torch.Generator,
                    history: list[dict]) -> None:
    """Everything a resumed run needs to continue bit for bit."""
    _torch_save_atomic({
        "format": CHECKPOINT_FORMAT, "meta": dict(meta),
        "model": {k: v.detach().cpu() for k, v in model.state_dict().items()},
        "optimizer": _portable(opt.state_dict()), "scheduler": {"epoch": len(history)},
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
               complete: bool, fast: Mapping[str, Any] | None = None) -> None:
    """The exported model file (``model.pt``) that :func:`load_model` reads;
    ``fast``: the training path taken and why (not part of the run's identity)."""
    _torch_save_atomic({
        "format": MODEL_FORMAT, **meta,
        "state_dict": {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()},
        "mean": mean, "std": std, "epochs_done": len(history), "complete": complete,
        "history": history, "torch_version": str(torch.__version__), "fast": dict(fast or {}),
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
                keep_checkpoint: bool = False, num_threads: int | None = None,
                fast: str | FastOptions | Mapping[str, Any] | None = "auto") -> Path:
    """Train ``model_name`` on uint8 NHWC images ``X`` with labels ``y``.

    ``recipe`` is a name in :data:`RECIPES` or a mapping of recipe fields.
    Writes ``out_dir/model.pt`` and ``out_dir/train_log.csv`` and returns the
    path of ``model.pt``. With ``resume`` a matching ``checkpoint.pt`` in
    ``out_dir`` is continued (and a matching complete ``model.pt`` is returned
    untouched); a checkpoint of another model/recipe/seed/data is ignored.
    ``max_epochs`` stops after that many epochs in total (the schedule still
    follows ``recipe['epochs']``); the ``model.pt`` then says
    ``complete: False`` and the checkpoint is kept for a later resume.
    ``fast``: ``"auto"`` (the eager path on a CPU, the measured best on
    CUDA: :mod:`.fast_auto`), a path name (``"eager"``, ``"graph"``,
    ``"compile+graph"``) or the fast path's switches (:mod:`.fast`,
    docs/methods/08-networks.md §8.5); None or all off is the eager path. They
    change how a step runs, not the recipe or the draws, so they are not part
    of the run's identity: a checkpoint of either path resumes on the other.
    The path taken, and why, is logged and kept in ``model.pt`` (``fast``)
    and per epoch in the log (``path``). ``num_threads``: torch's threads
    (None: one on a CPU, whose thread count changes the weights' last bits;
    torch's default on a GPU).
    """
    recipe = get_recipe(recipe)
    check_setting(fast)                       # a bad setting fails before any work
    X, y = check_images(X, y, num_classes)
    models.entry(model_name)  # unknown names fail before any work
    dev = resolve_device(device)
    # on a CPU the thread count changes the weights' last bits (core/pins.py): one
    # thread unless asked, so that the same call gives the same bytes on any machine
    set_torch_threads(1 if num_threads is None and dev.type == "cpu" else num_threads)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    model_path = out_dir / "model.pt"
    ckpt_path, log_path = out_dir / "checkpoint.pt", out_dir / "train_log.csv"

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
    say = lambda msg: log(f"[{model_name}] {msg}")      # noqa: E731
    choice = choose(fast, model_name, recipe, len(X), dev.type)
    opts = usable(choice.options, dev, say)
    # a path less a lever this torch or device lacks is no longer that path
    candidates = [(choice.path if opts == choice.options else f"{choice.path}, reduced", opts),
                  *choice.fallbacks]
    how = dict(channels_last=opts.channels_last, fused=opts.fused_optimizer)
    model, opt = build(model_name, num_classes, init_seed, recipe, dev, **how)
    gen = torch.Generator(device="cpu")
    gen.manual_seed(data_seed)
    history = load_checkpoint(ckpt_path, meta, model, opt, gen, log) if resume else None
    if history is None:
        if resume and ckpt_path.exists():      # a failed load may have touched the state
            model, opt = build(model_name, num_classes, init_seed, recipe, dev, **how)
            gen.manual_seed(data_seed)
        history = []
    else:
        log(f"[{model_name}] resuming from {ckpt_path} after epoch {len(history)}/{epochs}")
        if opts.fused_optimizer:       # the checkpoint holds the eager path's flags (_portable)
            for g in opt.param_groups:
                g.update(fused=True, foreach=False)
    start = len(history)

    data = _Batches(X, y, recipe, dev, channels_last=opts.channels_last)
    if start == 0 and stop > 0:
        log(f"[{model_name}] training on {data.n} images, {epochs} epochs x {data.steps} steps "
            f"of {data.bs} on {dev} (seed {seed}, {models.count_parameters(model):,} parameters)")
    step, path, failed = None, candidates[0][0], []
    if start < stop:
        say(f"training path {path}: {opts.describe()} [{choice.reason}]")
        step, path, opts, failed = start_step(model, opt, data, candidates, say)
    fast_meta = {"setting": choice.setting, "path": path, "options": opts.describe(),
                 "reason": choice.reason, "fell_back": failed}
    for epoch in range(start, stop):
        try:
            row = train_one_epoch(model, opt, data, recipe, epoch, gen, step=step,
                                  desc=f"{model_name} {epoch + 1}/{epochs}", progress=progress)
        except FloatingPointError as exc:
            raise FloatingPointError(f"[{model_name}] {exc}") from None
        seen = row.pop("images")
        row["path"] = path
        history.append(row)
        save_checkpoint(ckpt_path, meta, model, opt, gen, history)
        _write_log(log_path, history)
        log(f"[{model_name}] epoch {epoch + 1}/{epochs} loss {row['loss']:.4f} "
            f"acc {row['accuracy']:.4f} lr {row['lr']:.4g} {row['seconds']:.1f}s "
            f"(cpu {row['cpu_seconds']:.1f}s) ({seen / max(row['seconds'], 1e-9):.0f} img/s)")

    complete = len(history) >= epochs
    save_model(model_path, meta, model, *data.stats, history, complete, fast=fast_meta)
    _write_log(log_path, history)
    if complete and not keep_checkpoint and ckpt_path.exists():
        ckpt_path.unlink()
    if not complete:
        log(f"[{model_name}] stopped after epoch {len(history)}/{epochs} (max_epochs); "
            f"resume with the same out_dir to continue")
    return model_path
