"""The training step, eager or fast (docs/methods/08-networks.md §8.5).

>>> from fitontest.vision.fast import fast_options
>>> fast_options({"device_data": True, "cuda_graph": True}).fused_optimizer
True

On a GPU the paper networks' step is bound by the host: ResNet-110 at batch
128 launches about 1,500 small kernels a step, and the measured epoch took as
many CPU-seconds as wall seconds (benchmarks/measured/paper_path.md). The
levers here each take host work off the step, and each is a switch of
:class:`FastOptions`, so that a device run can measure them one by one:

``device_data``      the epoch's permutation and augmentation draws are made at
                     the epoch's start and uploaded in one copy; a step is then
                     device work only (no host-to-device copy, no host sync).
``fused_optimizer``  ``torch.optim.SGD(fused=True)``: one kernel for the update
                     (falls back, with the reason logged, where unsupported).
``compile``          ``torch.compile`` mode (``default``, ``reduce-overhead``,
                     ``max-autotune``, ``max-autotune-no-cudagraphs``) of the
                     model (``compile_scope: model``) or of the whole step
                     (``step``: augmentation, forward, backward, update).
``cuda_graph``       the whole step captured once in a CUDA graph over static
                     input buffers and replayed (implies ``device_data`` and
                     ``fused_optimizer``; on a CPU the same static-buffer step
                     runs without capture).
``channels_last``    memory format of model and batches (None: on CUDA only).
``precision``        ``auto`` (bfloat16 autocast on CUDA, float32 on a CPU),
                     ``bf16`` or ``fp32``.

The recipe does not change: the draws come from the same generator in the
same order as on the eager path (same batches, same shifts and flips), the
schedule and optimiser are the same. All switches off is the eager path
itself, so results of the eager path are unchanged bit for bit; ``auto`` (the
default, :mod:`.fast_auto`) is the eager path on a CPU and the measured best
path on CUDA, and :func:`start_step` falls back along its list when a lever
fails on this torch or device.
"""
from __future__ import annotations

import contextlib
import dataclasses
from typing import Any, Callable

import torch
import torch.nn.functional as F

from .fast_options import COMPILE_MODES, CUDAGRAPH_MODES, FastOptions, fast_options

__all__ = ["FastOptions", "fast_options", "TrainStep", "COMPILE_MODES", "fused_sgd_problem",
           "usable", "start_step"]


def fused_sgd_problem(dev: torch.device) -> str | None:
    """None where ``SGD(fused=True)`` steps on ``dev`` with this torch; else the reason."""
    try:
        p = torch.zeros(2, device=dev, requires_grad=True)
        p.grad = torch.ones_like(p)
        torch.optim.SGD([p], lr=torch.tensor(0.1, device=dev), momentum=0.9, nesterov=True,
                        weight_decay=1e-4, fused=True).step()
        return None
    except (RuntimeError, TypeError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"


def usable(opts: FastOptions, dev: torch.device, log: Callable[[str], Any]) -> FastOptions:
    """``opts`` less what this torch and device cannot do, each drop logged with its reason."""
    if opts.fused_optimizer:
        problem = fused_sgd_problem(dev)
        if problem:
            log(f"fused SGD unavailable on {dev} ({problem}); using the foreach SGD"
                + ("; no cuda_graph without it" if opts.cuda_graph else ""))
            opts = dataclasses.replace(opts, fused_optimizer=False, cuda_graph=False)
    return opts


def _snapshot(model: torch.nn.Module, opt: torch.optim.Optimizer) -> dict:
    bufs = {id(p): st["momentum_buffer"].detach().clone()
            for p, st in opt.state.items() if st.get("momentum_buffer") is not None}
    return {"model": [t.detach().clone() for t in model.state_dict().values()], "bufs": bufs}


@torch.no_grad()
def _restore(model: torch.nn.Module, opt: torch.optim.Optimizer, snap: dict) -> None:
    """Put the state back in place (the same tensors, which a graph holds).
    A momentum buffer created by the warm-up is zeroed: with dampening 0 a
    zero buffer makes the next update the first step's (buf = grad)."""
    for t, saved in zip(model.state_dict().values(), snap["model"]):
        t.copy_(saved)
    for p, st in opt.state.items():
        buf = st.get("momentum_buffer")
        if buf is not None:
            buf.copy_(snap["bufs"][id(p)]) if id(p) in snap["bufs"] else buf.zero_()


class TrainStep:
    """The SGD step on device-resident data, as the options say.

    ``data`` is the training set on the device (``train._Batches``: ``images``,
    ``y``, ``bs``, ``dev``); ``model`` and ``opt`` are trained in place. Per
    epoch: :meth:`reset`, then per step :meth:`set_lr` and ``step(idx, shifts,
    flips)``; :meth:`totals` gives the epoch's loss sum and correct count.
    """

    def __init__(self, model: torch.nn.Module, opt: torch.optim.Optimizer, data,
                 options: FastOptions | None = None, log: Callable[[str], Any] = print):
        self.opts = opts = options or FastOptions()
        self.model, self.opt, self.data, self.dev = model, opt, data, data.dev
        cuda = self.dev.type == "cuda"
        self.bf16 = opts.precision == "bf16" or (opts.precision == "auto" and cuda)
        self.loss_sum = torch.zeros((), device=self.dev, dtype=torch.float64)
        self.correct = torch.zeros((), device=self.dev, dtype=torch.int64)
        # a tensor learning rate: changing it neither recompiles nor re-captures
        self.lr_t = None
        if opts.cuda_graph or (opts.compile and opts.compile_scope == "step"):
            self.lr_t = torch.zeros((), device=self.dev, dtype=torch.float32)
            for g in opt.param_groups:
                g["lr"] = self.lr_t
        self._lr = None
        self.forward = model
        self.run = self._body
        self.marks_steps = opts.compile in CUDAGRAPH_MODES
        if opts.compile and opts.compile_scope == "model":
            self.forward = torch.compile(model, mode=opts.compile, backend=opts.compile_backend)
        elif opts.compile:
            self.run = torch.compile(self._body, mode=opts.compile, backend=opts.compile_backend)
        self.graph = None
        if opts.cuda_graph:
            self._prepare_graph(log)

    # one step's device work, the same for every variant
    def _body(self, idx: torch.Tensor, shifts, flips) -> None:
        xb, yb = self.data.images(idx, shifts, flips)
        # a captured graph must not keep autocast's cast weights (torch's CUDA graph notes)
        with torch.autocast(device_type=self.dev.type, dtype=torch.bfloat16, enabled=self.bf16,
                            cache_enabled=not self.opts.cuda_graph):
            out = self.forward(xb)
        loss = F.cross_entropy(out.float(), yb)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        self.loss_sum += loss.detach().double() * len(yb)
        self.correct += (out.detach().argmax(1) == yb).sum()

    def _prepare_graph(self, log) -> None:
        """Static inputs, warm-up off the books, and (on CUDA) the capture."""
        d, bs = self.data, self.data.bs
        self.s_idx = torch.arange(bs, device=self.dev)
        self.s_shifts = torch.zeros(bs, 2, dtype=torch.long, device=self.dev) if d.shift else None
        self.s_flips = torch.zeros(bs, dtype=torch.bool, device=self.dev) if d.flip else None
        static = (self.s_idx, self.s_shifts, self.s_flips)
        self.set_lr(0.0)
        snap = _snapshot(self.model, self.opt)
        cuda = self.dev.type == "cuda"
        stream = torch.cuda.Stream(self.dev) if cuda else None
        if cuda:      # warm-up on a side stream (cuDNN autotuning, lazy state), as capture needs
            stream.wait_stream(torch.cuda.current_stream(self.dev))
        with torch.cuda.stream(stream) if cuda else contextlib.nullcontext():
            for _ in range(3):
                self.run(*static)
        if cuda:
            torch.cuda.current_stream(self.dev).wait_stream(stream)
        _restore(self.model, self.opt, snap)
        self.reset()
        if not cuda:
            log("[fast] cuda_graph: no CUDA graphs on the CPU; the static-buffer step runs "
                "uncaptured")
            return
        self.graph = torch.cuda.CUDAGraph()
        self.opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(self.graph):
            self.run(*static)

    def reset(self) -> None:
        self.loss_sum.zero_()
        self.correct.zero_()

    def set_lr(self, lr: float) -> None:
        if lr == self._lr:
            return
        self._lr = lr
        if self.lr_t is not None:
            self.lr_t.fill_(lr)
        else:
            for g in self.opt.param_groups:
                g["lr"] = lr

    def step(self, idx: torch.Tensor, shifts, flips) -> None:
        if self.opts.cuda_graph:
            self.s_idx.copy_(idx, non_blocking=True)
            if self.s_shifts is not None:
                self.s_shifts.copy_(shifts, non_blocking=True)
            if self.s_flips is not None:
                self.s_flips.copy_(flips, non_blocking=True)
            if self.graph is not None:
                self.graph.replay()
            else:
                self.run(self.s_idx, self.s_shifts, self.s_flips)
            return
        if self.marks_steps:    # cudagraph trees: a new iteration begins here
            torch.compiler.cudagraph_mark_step_begin()
        self.run(idx, shifts, flips)

    def totals(self) -> tuple[float, int]:
        return self.loss_sum.item(), int(self.correct.item())


def start_step(model: torch.nn.Module, opt: torch.optim.Optimizer, data,
               candidates: list[tuple[str, FastOptions]], log: Callable[[str], Any] = print):
    """``(step, name, options, failures)``: the first candidate path that
    starts here, and why each before it did not (also logged).

    A step starts when it is built, warmed up and (with ``cuda_graph``)
    captured, which is where a lever this torch or device lacks fails
    (``torch.compile`` without a working compiler, a capture error); then the
    model and optimiser are put back as they were and the next candidate is
    tried, the reason logged. The last one's failure is raised. ``step`` is
    None for the eager path (``train_one_epoch`` builds its own). The
    optimiser was built for the first candidate; a later one without
    ``fused_optimizer`` turns the fused kernel off in it.
    """
    failures: list[str] = []
    for i, (name, opts) in enumerate(candidates):
        if not opts.fused_optimizer:
            for g in opt.param_groups:
                if g.get("fused"):      # as the eager path's optimiser is built
                    g.update(fused=None, foreach=None)
        if opts.eager:
            return None, name, opts, failures
        last = i == len(candidates) - 1
        snap = None if last else _snapshot(model, opt)
        try:
            return TrainStep(model, opt, data, opts, log=log), name, opts, failures
        except Exception as exc:        # any failure of the lever: the next path, or raise
            if last:
                raise
            _restore(model, opt, snap)
            for g in opt.param_groups:  # the failed step's tensor learning rate
                if isinstance(g["lr"], torch.Tensor):
                    g["lr"] = float(g["lr"])
            failures.append(f"{name} did not start on {data.dev} ({type(exc).__name__}: "
                            f"{str(exc).strip()[:300]}); trying {candidates[i + 1][0]}")
            log(failures[-1])
    raise ValueError("no candidate path")
