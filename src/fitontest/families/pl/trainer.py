"""The batched PL / PL3 trainer: every (group, k) model of a fit at once.

Every (training group, number of interior knots k) pair is one *model*, a
row of padded parameter arrays; cross-validation uses one group per fold, so
the 10 folds x 16 candidates of a fit are 160 rows trained together. This
module sets a fit up (the data sorted once, the groups, the identity
initialisation), runs the epochs (the mini-batch rule and early stopping of
:mod:`.algorithm`, the passes of a backend) and returns the fitted maps.

Backends (``BatchedTrainer(backend=...)``) run the same algorithm and agree
to rounding (tested): ``numba`` (:mod:`.numba_train` and
:mod:`.numba_kernels`, the CPU default: one compiled call per fit) and
``torch`` (:mod:`.torch_kernels`, CPU or CUDA).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fitontest.core.runtime import device_type, resolve_device
from fitontest.core.validation import check_option, logit
from . import algorithm as alg
from .maps import evaluate_map

BACKENDS = ("auto", "numba", "torch")
OPTIMIZERS = ("adam", "lbfgs")


def resolve_backend(backend: str, device) -> str:
    """``"auto"``: numba on the CPU, torch on CUDA (``device``: a torch.device
    or its type)."""
    check_option("backend", backend, BACKENDS)
    kind = device if isinstance(device, str) else device.type
    if kind != "cpu":
        if backend == "numba":
            raise ValueError("backend='numba' runs on the CPU only; use backend='torch' "
                             f"(or 'auto') with device {kind!r}")
        return "torch"
    return "numba" if backend == "auto" else backend


@dataclass
class BatchedResult:
    """Fitted models, arrays indexed [group, candidate, ...].

    ``knots`` are in the input space of the map (s for PL, logit(s) for PL3),
    ``heights`` in its output space (probabilities for PL, logits for PL3);
    entries beyond ``ks[c] + 2`` are padding.
    """

    space: str
    ks: np.ndarray
    knots: np.ndarray
    heights: np.ndarray
    n_epochs: np.ndarray
    final_loss: np.ndarray

    def model(self, g: int, c: int) -> tuple[np.ndarray, np.ndarray]:
        k = int(self.ks[c])
        return self.knots[g, c, : k + 2], self.heights[g, c, : k + 2]

    def predict(self, g: int, c: int, s: np.ndarray) -> np.ndarray:
        """Calibrated probability of model (g, c) at scores ``s``."""
        return evaluate_map(self.space, *self.model(g, c), s)


class FitData:
    """Constant data of a fit: points sorted once, group membership, point arrays.

    ``data`` (n_arrays, N) holds, in increasing input order, the map input x
    (s or logit(s)) in row 0 and the arrays of the loss
    (:func:`.algorithm.point_arrays`) in the others. When the groups differ
    in size, ``nmax - min(size)`` virtual points (a copy of the largest input,
    with zero sign/weight so they contribute nothing) are appended and a
    shorter group includes as many as it lacks, so every group has ``nmax``
    members and every batch has the same size in every group.
    """

    def __init__(self, s, y, groups, space: int, loss: int):
        s = np.asarray(s, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        n = s.shape[0]
        order = np.argsort(s, kind="stable")
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n)
        s_sorted = s[order]
        self.G = len(groups)
        sizes = np.array([len(g) for g in groups])
        if (sizes == 0).any():
            raise ValueError("every group needs at least one point")
        self.nmax = int(sizes.max())
        self.uniform = bool((sizes == self.nmax).all())
        nv = self.nmax - int(sizes.min())
        mem = np.zeros((self.G, n + nv), dtype=bool)
        for g, idx in enumerate(groups):
            idx = np.asarray(idx, dtype=np.int64)
            if np.unique(idx).shape[0] != idx.shape[0]:
                raise ValueError("group indices must be distinct")
            mem[g, rank[idx]] = True
            mem[g, n:n + self.nmax - idx.shape[0]] = True
        self.sorted_s = [s_sorted[mem[g, :n]] for g in range(self.G)]
        x = s_sorted if space == alg.PROB else logit(s_sorted)
        self.real = np.zeros(n + nv)
        self.real[:n] = 1.0
        xs = np.concatenate([x, np.full(nv, x[-1])])
        ys = np.concatenate([y[order], np.zeros(nv)])
        arrays, self.scaled = alg.point_arrays(space, loss, xs, ys, self.real)
        self.data = np.ascontiguousarray(np.stack(arrays))
        self.n_real = n                 # points >= n are virtual
        self.members = np.ascontiguousarray(np.nonzero(mem)[1].reshape(self.G, self.nmax))


class BatchedTrainer:
    """Train every (group, k) model of a PL or PL3 fit at once.

    ``backend``: ``"numba"`` (CPU), ``"torch"`` (CPU or CUDA, ``device``) or
    ``"auto"`` (numba on the CPU, torch on CUDA). ``n_threads``: numba's rows
    over threads (None: torch's setting), torch's intra-op threads (None:
    leave them), restored after the fit.
    ``optimizer``: ``"adam"`` (the paper's mini-batch Adam with early
    stopping, either backend) or ``"lbfgs"`` (full-batch L-BFGS per model,
    :mod:`.lbfgs`, numba only; ``n_threads=None`` means one thread there).
    """

    def __init__(self, *, space: str, loss: str, lr: float = 0.01, max_epochs: int = 1500,
                 patience: int = 20, seed: int = 0, device: str = "cpu",
                 n_threads: int | None = None, backend: str = "auto",
                 optimizer: str = "adam"):
        check_option("optimizer", optimizer, OPTIMIZERS)
        if space not in alg.SPACES:
            raise ValueError(f"space must be 'prob' or 'logit', got {space!r}")
        if loss not in alg.LOSSES:
            raise ValueError(f"loss must be 'ce' or 'mse', got {loss!r}")
        self.space, self.loss = space, loss
        self.lr, self.max_epochs, self.patience, self.seed = lr, max_epochs, patience, seed
        self.device = device
        self.n_threads = n_threads
        self.backend = backend
        self.optimizer = optimizer

    def fit(self, s, y, groups, ks, *, n_batches: int, pad_knots: int | None = None,
            group_ids=None, trace: bool = False) -> BatchedResult:
        """Train a model for every group and every number of interior knots in ``ks``.

        ``s``, ``y``: all points; ``groups``: index arrays into them (one model
        family per group, e.g. the training folds). ``n_batches`` mini-batches
        per epoch (:func:`.algorithm.batch_layout`). ``pad_knots``
        (>= max(ks)) fixes the padded width of the parameter rows.
        ``group_ids`` (default 0, 1, ...) key each group's own shuffling
        stream, so a subset of the groups, trained alone, gives exactly the
        same models. ``trace`` records (row ids, training loss) per epoch in
        ``history_``.
        """
        ks = np.asarray(ks, dtype=np.int64)
        if ks.ndim != 1 or ks.size == 0 or (ks < 0).any():
            raise ValueError("ks must be a non-empty list of non-negative integers")
        kmax = int(ks.max()) if pad_knots is None else int(pad_knots)
        if kmax < ks.max():
            raise ValueError("pad_knots must be >= max(ks)")
        if len(groups) == 0:
            raise ValueError("need at least one group")
        gids = [int(g) for g in (range(len(groups)) if group_ids is None else group_ids)]
        if len(gids) != len(groups):
            raise ValueError("need one group id per group")
        backend = resolve_backend(self.backend, device_type(self.device))
        if self.optimizer == "lbfgs" and backend != "numba":
            raise ValueError("optimizer 'lbfgs' runs on the numba backend (CPU) only; use "
                             "optimizer='adam' for the torch / CUDA path")
        space, loss = alg.SPACES[self.space], alg.LOSSES[self.loss]
        data = FitData(s, y, groups, space, loss)
        n_batches = int(n_batches)
        if n_batches < 1 or n_batches > data.nmax:
            raise ValueError(f"n_batches must be in 1..{data.nmax}, got {n_batches}")

        # model m = g * C + c: group g, candidate c
        G, C = data.G, ks.shape[0]
        group_of = np.repeat(np.arange(G), C)
        k_of = np.tile(ks, G)
        P = alg.initial_params([data.sorted_s[g] for g in group_of], k_of, kmax, space)
        if self.optimizer == "lbfgs":
            return self._fit_lbfgs(data, P, group_of, k_of, ks, kmax, space, loss)
        _, bounds, label = alg.batch_layout(data.nmax, n_batches)
        keys = alg.shuffle_keys(self.seed, gids)
        if backend == "numba":
            from .numba_train import run

            threads = self.n_threads
            if threads is None:
                import torch

                threads = torch.get_num_threads()
            out_P, out_loss, out_epochs, self.history_ = run(
                data, P, k_of, group_of, keys, label, bounds, space, loss, self.lr,
                self.max_epochs, self.patience, threads, trace)
        else:
            out_P, out_loss, out_epochs = self._fit_torch(data, P, k_of, group_of, keys, label,
                                                          bounds, space, loss,
                                                          resolve_device(self.device), n_batches,
                                                          trace)
        knots, heights = alg.maps(out_P, k_of, space)
        K2 = kmax + 2
        return BatchedResult(space=self.space, ks=ks,
                             knots=knots.reshape(G, C, K2), heights=heights.reshape(G, C, K2),
                             n_epochs=out_epochs.reshape(G, C), final_loss=out_loss.reshape(G, C))

    def _fit_torch(self, data, P, k_of, group_of, keys, label, bounds, space, loss, dev,
                   n_batches, trace):
        """The epochs on the torch kernels (CPU or CUDA), early stopping by
        :class:`.algorithm.TrainingRows`."""
        from .torch_kernels import TorchEpochs

        epochs = TorchEpochs(data, bounds, space, loss, float(self.lr), dev, self.n_threads)
        rows = alg.TrainingRows(P, k_of, group_of, self.patience, self.max_epochs, trace)
        with epochs.threads(), np.errstate(divide="ignore", over="ignore"):
            n_rows = -1
            for epoch in range(self.max_epochs):
                if rows.group.shape[0] != n_rows:     # finished groups need no batches
                    n_rows, active = rows.group.shape[0], np.unique(rows.group)
                ep_loss = epochs.epoch(rows, keys, epoch, label, active, epoch * n_batches)
                if rows.end_epoch(epoch, ep_loss):
                    break
        self.history_ = rows.history
        return rows.out_P, rows.out_loss, rows.out_epochs

    def _fit_lbfgs(self, data, P, group_of, k_of, ks, kmax, space, loss) -> BatchedResult:
        """Every row by full-batch L-BFGS (:mod:`.lbfgs`); ``max_epochs`` caps
        its passes over the data (0: the identity initialisation)."""
        from fitontest.core.runtime import numba_threads
        from .lbfgs import lbfgs_parallel, lbfgs_serial

        gdata = np.ascontiguousarray(data.data[:, data.members].transpose(1, 0, 2))
        nvirt = (data.members >= data.n_real).sum(axis=1).astype(np.float64)
        rscale = 1.0 / np.maximum(data.nmax - nvirt, 1.0)
        out_loss = np.full(P.shape[0], np.nan)
        out_evals = np.zeros(P.shape[0], dtype=np.int64)
        self.history_ = None
        if self.max_epochs > 0:
            threads = 1 if self.n_threads is None else int(self.n_threads)
            with np.errstate(divide="ignore", over="ignore"):
                if threads > 1:
                    with numba_threads(threads):
                        lbfgs_parallel(P, k_of, group_of, gdata, rscale, nvirt, space, loss,
                                       int(self.max_epochs), out_loss, out_evals)
                else:
                    lbfgs_serial(P, k_of, group_of, gdata, rscale, nvirt, space, loss,
                                 int(self.max_epochs), out_loss, out_evals)
        knots, heights = alg.maps(P, k_of, space)
        G, C, K2 = data.G, ks.shape[0], kmax + 2
        return BatchedResult(space=self.space, ks=ks,
                             knots=knots.reshape(G, C, K2), heights=heights.reshape(G, C, K2),
                             n_epochs=out_evals.reshape(G, C),
                             final_loss=out_loss.reshape(G, C))
