"""Batched trainer for the PL / PL3 families (METHODS.md §4).

One torch program trains many piecewise-linear maps at once: every
(training group, number of interior knots k) pair is one *model*, a row of
batched parameter tensors padded to the largest k. Cross-validation uses one
group per fold, so the 10 folds x 16 candidates of a fit are 160 rows of the
same tensors, stepped together.

Parameters of a model with k interior knots (rows padded to ``kmax``):

- ``beta`` (k + 1 used entries): knot gaps in probability space,
  ``t = [0, cumsum(softmax(beta))]``, so ``t_0 = 0``, ``t_{k+1} = 1`` and the
  knots are ordered by construction;
- ``eta`` (k + 2 used entries): heights; PL uses ``h = sigmoid(eta)`` at the
  knots ``t``; PL3 uses ``h = eta`` (logit space) at the knots
  ``z = logit(t)``, computed as ``log t - log(1 - t)`` with ``1 - t`` taken
  from the reverse cumulative sum (no cancellation near 1) and each of
  ``t`` and ``1 - t`` clipped at 1e-16 like :func:`fitontest.validation.logit`.

The model output is the linear interpolation ``f(x) = h_j + b_j (x - X_j)``
on the segment ``[X_j, X_{j+1})`` containing the input ``x`` (``x = s`` for
PL, ``x = logit(s)`` for PL3); PL predicts ``f``, PL3 ``sigmoid(f)``.

Two backends run this algorithm (``BatchedTrainer(backend=...)``): ``numba``
(:mod:`._pl_numba`, the CPU default: one compiled call per epoch, the
per-point work fused into one pass per segment) and ``torch`` (below; CPU or
CUDA). They share the set-up, the shuffling streams and the early stopping,
and agree to rounding (tested).

Speed of the torch backend (no autograd; everything per data point is a
handful of passes):

- the data are sorted once; a group (e.g. a fold's training set) is a subset
  of the sorted points. Each epoch every group is shuffled (its own seeded
  stream) and cut into ``n_batches`` consecutive nearly equal batches; a
  stable counting sort by batch label then lists every batch in increasing
  input order (both in :func:`._pl_numba.batch_orders`, shared by the
  backends), so the segment of each point follows from the
  positions of the few knots among the batch (``searchsorted`` of the knots
  into the batch, a histogram and a cumulative sum) instead of a binary
  search per point;
- the gradient is analytic: per segment only the sums ``S0 = sum g`` and
  ``S1 = sum g (x - X_j)`` of the per-point loss derivatives ``g`` are needed,
  read off prefix sums of the sorted batch at the knot positions; the chain
  rule to (knots, heights) and then to (beta, eta) runs on the small
  (models x knots) arrays; it is checked against autograd in the tests;
- the small per-model arrays (geometry, chain rule, Adam, early stopping)
  live in numpy: ~60 small operations per step cost far less there than as
  torch dispatches; one small table goes to the device and the segment sums
  come back per step;
- Adam is implemented by hand on the batched parameter rows (the
  ``torch.optim.Adam`` formula with default betas/eps, no weight decay), with
  one step count shared by all rows (they all start together and a row only
  steps while active);
- per-model early stopping: a model whose training loss has not decreased for
  ``patience`` epochs stops; its row is removed from the working arrays
  (masking realised as compaction), so it neither updates (no momentum drift)
  nor costs anything, and the other rows' updates are unaffected (every
  operation is row-wise; tested bit for bit against a model trained alone);
- losses: PL3's cross-entropy takes ``1 - sigmoid(t)`` for the probability of
  the observed label, so for points with a margin below about -20 (loss
  above 20 nats) the loss *value* carries a relative error up to 1e-3 (the
  gradient is exact); the value only feeds early stopping.

Training loss monitored for early stopping: the mean of the epoch's
mini-batch losses (each the mean loss over the batch before the step), as
Keras' ``EarlyStopping(monitor="loss")`` of the paper's implementation does.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..io import torch_threads

CLIP_LOGIT = 1e-16       # logit(s) clips s and 1 - s at this (validation.logit)
CLIP_HEIGHT = 1e-3       # PL identity init: eta = logit(clip(t, 1e-3, 1 - 1e-3))
GAP_FLOOR = 1e-16        # initial knot gaps are floored before log (ties in scores)
CE_CLIP = 1e-16          # PL cross-entropy: f clipped to [1e-16, 1 - 1e-16]
ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8


BACKENDS = ("auto", "numba", "torch")


def resolve_backend(backend: str, device) -> str:
    """``"auto"``: numba on the CPU, torch on CUDA."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if device.type != "cpu":
        if backend == "numba":
            raise ValueError("backend='numba' runs on the CPU only; use backend='torch' "
                             f"(or 'auto') with device {device.type!r}")
        return "torch"
    return "numba" if backend == "auto" else backend


def resolve_device(device: str):
    import torch

    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device='cuda' requested but CUDA is not available "
                         "(use device='auto' to fall back to the CPU)")
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu', 'cuda' or 'auto', got {device!r}")
    return torch.device(device)


def sorted_quantiles(sorted_x: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """``np.quantile(x, levels)`` (linear method) of an already sorted array."""
    n = sorted_x.shape[0]
    pos = levels * (n - 1)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, n - 1)
    frac = pos - lo
    return sorted_x[lo] + frac * (sorted_x[hi] - sorted_x[lo])


def initial_beta(sorted_s: np.ndarray, k: int, width: int) -> np.ndarray:
    """Knot-gap parameters putting the k interior knots at equal-size quantiles.

    Returns a row of length ``width`` (only the first k + 1 entries are used).
    """
    q = sorted_quantiles(sorted_s, np.linspace(0.0, 1.0, k + 2)[1:-1])
    t = np.concatenate([[0.0], q, [1.0]])
    gaps = np.maximum(np.diff(t), GAP_FLOOR)
    row = np.zeros(width)
    row[: k + 1] = np.log(gaps)
    return row


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


def evaluate_map(space: str, knots: np.ndarray, heights: np.ndarray, s: np.ndarray,
                 x: np.ndarray | None = None) -> np.ndarray:
    """Vectorised evaluation of one PL / PL3 map at scores ``s``.

    ``x`` may pass a precomputed ``logit(s)`` for PL3.
    """
    if space == "prob":
        return np.interp(s, knots, heights)
    if x is None:
        from ..validation import logit

        x = logit(s)
    from scipy.special import expit

    return expit(np.interp(x, knots, heights))


class _Problem:
    """Constant data of a fit: points sorted once, group membership, point arrays.

    ``data`` (n_arrays, N) holds, in increasing input order, the map input x
    (s or logit(s)) in row 0 and the label-derived arrays of the loss (see
    :meth:`BatchedTrainer._point_arrays`) in the others. When the groups
    differ in size, ``nmax - min(size)`` virtual points (a copy of the largest
    input, with zero sign/weight so they contribute nothing) are appended and
    a shorter group includes as many as it lacks, so every group has ``nmax``
    members and every batch has the same size in every group.
    """

    def __init__(self, torch, trainer, s, y, groups, device, dtype):
        from ..validation import logit

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
        self.sizes = sizes
        self.nmax = int(sizes.max())
        self.uniform = bool((sizes == self.nmax).all())
        nv = self.nmax - int(sizes.min())
        self.N = n + nv
        mem = np.zeros((self.G, self.N), dtype=bool)
        for g, idx in enumerate(groups):
            idx = np.asarray(idx, dtype=np.int64)
            if np.unique(idx).shape[0] != idx.shape[0]:
                raise ValueError("group indices must be distinct")
            mem[g, rank[idx]] = True
            mem[g, n:n + self.nmax - idx.shape[0]] = True
        self.sorted_s = [s_sorted[mem[g, :n]] for g in range(self.G)]
        x = s_sorted if trainer.space == "prob" else logit(s_sorted)
        real = np.zeros(self.N)
        real[:n] = 1.0
        xs = np.concatenate([x, np.full(nv, x[-1])])
        ys = np.concatenate([y[order], np.zeros(nv)])
        arrays, self.scaled = trainer._point_arrays(xs, ys, real)
        self.data_np = np.ascontiguousarray(np.stack(arrays))
        self.n_real = n                 # points >= n are virtual
        self.members_np = np.ascontiguousarray(np.nonzero(mem)[1].reshape(self.G, self.nmax))
        if torch is not None:
            self.members = torch.as_tensor(self.members_np, device=device)
            self.data = torch.as_tensor(self.data_np, dtype=dtype, device=device)
            self.real = torch.as_tensor(real, dtype=dtype, device=device)


class BatchedTrainer:
    """Train every (group, k) model of a PL or PL3 fit at once.

    Two backends run the same algorithm (same parameters, mini-batches, Adam
    formula and early stopping; they agree to rounding, see the tests):

    - ``"numba"`` (CPU): one compiled call per epoch runs every model's
      mini-batch steps, fused (:mod:`._pl_numba`);
    - ``"torch"`` (CPU or CUDA): everything per data point runs in torch on
      ``device``; the small per-model arrays (models x knots: knots, slopes,
      the chain rule, Adam, early stopping) run in numpy, where an operation
      costs a fraction of a torch dispatch.

    ``backend="auto"`` takes numba on the CPU and torch on CUDA.
    """

    def __init__(self, *, space: str, loss: str, lr: float = 0.01, max_epochs: int = 1500,
                 patience: int = 20, seed: int = 0, device: str = "cpu",
                 n_threads: int | None = None, backend: str = "auto"):
        if space not in ("prob", "logit"):
            raise ValueError(f"space must be 'prob' or 'logit', got {space!r}")
        if loss not in ("ce", "mse"):
            raise ValueError(f"loss must be 'ce' or 'mse', got {loss!r}")
        self.space, self.loss = space, loss
        self.lr, self.max_epochs, self.patience, self.seed = lr, max_epochs, patience, seed
        self.device = device
        self.n_threads = n_threads
        self.backend = backend

    # ------------------------------------------------------------------ API
    def fit(self, s, y, groups, ks, *, n_batches: int, pad_knots: int | None = None,
            group_ids=None, trace: bool = False) -> BatchedResult:
        """Train a model for every group and every number of interior knots in ``ks``.

        ``s``, ``y``: all points; ``groups``: index arrays into them (one model
        family per group, e.g. the training folds). ``n_batches`` mini-batches
        per epoch: a group's points in a random order, cut into ``n_batches``
        nearly equal consecutive batches (``numpy.array_split`` sizes).
        ``pad_knots`` (>= max(ks)) fixes the padded width of the parameter rows.
        ``group_ids`` (default 0, 1, ...) key each group's own shuffling
        (a stream per (seed, group id, epoch), :func:`._pl_numba.batch_orders`),
        so a subset of the groups, trained alone, gives exactly the same models.
        ``trace`` records (row ids, training loss) per epoch in ``history_``.
        """
        import torch

        ks = np.asarray(ks, dtype=np.int64)
        if ks.ndim != 1 or ks.size == 0 or (ks < 0).any():
            raise ValueError("ks must be a non-empty list of non-negative integers")
        kmax = int(ks.max()) if pad_knots is None else int(pad_knots)
        if kmax < ks.max():
            raise ValueError("pad_knots must be >= max(ks)")
        if len(groups) == 0:
            raise ValueError("need at least one group")
        gids = range(len(groups)) if group_ids is None else group_ids
        gids = [int(g) for g in gids]
        if len(gids) != len(groups):
            raise ValueError("need one group id per group")
        dev = resolve_device(self.device)
        backend = resolve_backend(self.backend, dev)
        with torch_threads(self.n_threads), torch.no_grad(), \
                np.errstate(divide="ignore", over="ignore"):
            return self._fit(torch, s, y, groups, ks, kmax, int(n_batches), gids, trace,
                             dev, backend)

    # ------------------------------------------------------- per-loss arrays
    def _point_arrays(self, xs, ys, real):
        """Label-derived per-point arrays of the loss; index of the weighted one.

        prob/ce : x, 2y - 1        p_y = 1/2 + (2y - 1)(f - 1/2)
        logit/ce: x, -(2y - 1)     exp(-margin) = exp(-(2y - 1) f)
        */mse   : x, y, 2 w        (row 2 is scaled by the batch weight)
        Virtual points have sign 0 (zero gradient; their log-loss log 2 is
        subtracted by count) and weight 0.
        """
        sg = np.where(real > 0, 2.0 * ys - 1.0, 0.0)
        if self.loss == "ce" and self.space == "prob":
            return [xs, sg], None
        if self.loss == "ce":
            return [xs, -sg], None
        return [xs, ys, 2.0 * real], 2

    @staticmethod
    def _constants(ks_rows: np.ndarray, kmax: int) -> dict:
        """Masks of the padded parameter rows (numpy), one row per model."""
        K1, K2 = kmax + 1, kmax + 2
        kk = ks_rows[:, None]
        col1 = np.arange(K1)[None, :]
        col2 = np.arange(K2)[None, :]
        return {
            "negpad1": np.where(col1 > kk, -np.inf, 0.0),             # unused beta entries
            "end2": np.broadcast_to(col2 >= kk + 1, (kk.shape[0], K2)).copy(),
            "interior": ((col2 >= 1) & (col2 <= kk)).astype(np.float64),
            "padint": np.broadcast_to(col1[:, :kmax] >= kk, (kk.shape[0], kmax)).copy(),
            "used2": np.broadcast_to(col2 <= kk + 1, (kk.shape[0], K2)).copy(),
        }

    # ------------------------------------------------------------- internals
    def _fit(self, torch, s, y, groups, ks, kmax, n_batches, gids, trace, dev, backend):
        prob = _Problem(torch if backend == "torch" else None, self, s, y, groups, dev,
                        torch.float64)
        G, C = prob.G, ks.shape[0]
        M = G * C
        K1, K2 = kmax + 1, kmax + 2
        if n_batches < 1 or n_batches > prob.nmax:
            raise ValueError(f"n_batches must be in 1..{prob.nmax}, got {n_batches}")

        # ---- per-model constants (model m = g * C + c)
        group_np = np.repeat(np.arange(G), C)
        k_np = np.tile(ks, G)
        const = self._constants(k_np, kmax)
        const["idx"] = np.arange(M)
        const["group"] = group_np
        const["k"] = k_np

        # ---- initial parameters: knots at equal-size quantiles, identity map
        P = np.zeros((M, K1 + K2))
        P[:, :K1] = np.stack([initial_beta(prob.sorted_s[g], int(k), K1)
                              for g, k in zip(group_np, k_np)])
        geo = self._geometry(P, const, exact_ends=True)
        if self.space == "prob":
            tc = np.clip(geo["t"], CLIP_HEIGHT, 1.0 - CLIP_HEIGHT)
            eta0 = np.log(tc) - np.log1p(-tc)
        else:
            eta0 = geo["X"]
        P[:, K1:] = np.where(const["used2"], eta0, 0.0)

        # ---- batches: position r of a group's shuffled order -> batch label[r]
        counts = np.array([len(a) for a in np.array_split(np.arange(prob.nmax), n_batches)])
        bounds = np.concatenate([[0], np.cumsum(counts)])
        label = np.repeat(np.arange(n_batches), counts)
        # one shuffling key per group (the same batches on every device and backend)
        keys = np.array([np.random.SeedSequence([int(self.seed), gid])
                         .generate_state(1, dtype=np.uint64)[0] for gid in gids], dtype=np.uint64)
        self.history_ = [] if trace else None
        loop = self._loop_numba if backend == "numba" else self._loop_torch
        out_P, out_loss, out_epochs = loop(torch, prob, P, const, keys, counts, bounds, label,
                                           dev, trace)

        # ---- fitted maps
        geo = self._geometry(out_P, self._constants(k_np, kmax), exact_ends=True)
        return BatchedResult(space=self.space, ks=ks,
                             knots=geo["X"].reshape(G, C, K2),
                             heights=geo["h"].reshape(G, C, K2),
                             n_epochs=out_epochs.reshape(G, C),
                             final_loss=out_loss.reshape(G, C))

    def _loop_numba(self, torch, prob, P, const, keys, counts, bounds, label, dev, trace):
        """The epochs on the fused CPU kernels; early stopping and compaction
        of the finished rows as in :meth:`_loop_torch`."""
        from . import _pl_numba as nb

        G, nmax = prob.G, prob.nmax
        n_batches = counts.shape[0]
        space = nb.PROB if self.space == "prob" else nb.LOGIT
        loss = nb.CE if self.loss == "ce" else nb.MSE
        threads = torch.get_num_threads() if self.n_threads is None else int(self.n_threads)
        threads = max(1, min(threads, nb.max_threads()))
        epoch_fn = nb.epoch_parallel if threads > 1 else nb.epoch_serial
        order = np.zeros((G, nmax), dtype=np.int64)
        bdata = np.zeros((G, prob.data_np.shape[0], nmax))
        rscale = np.ones((G, n_batches))
        nvirt = np.zeros((G, n_batches))
        bounds = bounds.astype(np.int64)
        label = label.astype(np.int64)
        rows = {"P": P, "m": np.zeros_like(P), "v": np.zeros_like(P),
                "best": np.full(P.shape[0], np.inf),
                "since": np.zeros(P.shape[0], dtype=np.int64),
                "k": const["k"].astype(np.int64), "group": const["group"].astype(np.int64),
                "idx": const["idx"]}
        out_P = P.copy()
        out_loss = np.full(P.shape[0], np.nan)
        out_epochs = np.zeros(P.shape[0], dtype=np.int64)
        step = 0
        with nb.threads(threads):
            for epoch in range(self.max_epochs):
                active = np.unique(rows["group"])    # finished groups need no batches
                nb.batch_orders(keys, epoch, active, label, bounds, prob.members_np, order)
                nb.gather_batches(order, active, bounds, prob.data_np, prob.n_real, bdata,
                                  rscale, nvirt)
                ep_loss = np.empty(rows["P"].shape[0])
                grad = np.zeros_like(rows["P"])
                epoch_fn(rows["P"], rows["m"], rows["v"], rows["k"], rows["group"],
                         bdata, bounds, rscale, nvirt, space, loss, step,
                         float(self.lr), ep_loss, grad)
                step += n_batches
                if self._stop_rows(rows, ep_loss, epoch, out_P, out_loss, out_epochs, trace):
                    break
        return out_P, out_loss, out_epochs

    def _stop_rows(self, rows, ep_loss, epoch, out_P, out_loss, out_epochs, trace) -> bool:
        """Early stopping after an epoch: finished rows are stored in ``out_*``
        and removed from the working arrays ``rows``; True when none is left."""
        improved = ep_loss < rows["best"]
        rows["best"] = np.where(improved, ep_loss, rows["best"])
        rows["since"] = np.where(improved, 0, rows["since"] + 1)
        stop = rows["since"] >= self.patience
        if trace:
            self.history_.append((rows["idx"].copy(), ep_loss.copy()))
        last = epoch + 1 == self.max_epochs
        if not (last or stop.any()):
            return False
        done = np.ones_like(stop) if last else stop
        idx = rows["idx"][done]
        out_P[idx] = rows["P"][done]
        out_loss[idx] = ep_loss[done]
        out_epochs[idx] = epoch + 1
        keep = ~done
        for key in rows:
            rows[key] = rows[key][keep]
        return not keep.any()

    def _loop_torch(self, torch, prob, P, const, keys, counts, bounds, label, dev, trace):
        """The epochs in torch (per-point work on ``dev``) and numpy (per-model)."""
        from . import _pl_numba as nb

        n_batches = counts.shape[0]
        order_np = np.zeros((prob.G, prob.nmax), dtype=np.int64)
        rows = {"P": P, "m": np.zeros_like(P), "v": np.zeros_like(P),
                "best": np.full(P.shape[0], np.inf),
                "since": np.zeros(P.shape[0], dtype=np.int64)}
        rows.update(const)
        out_P = P.copy()
        out_loss = np.full(P.shape[0], np.nan)
        out_epochs = np.zeros(P.shape[0], dtype=np.int64)
        group_t = torch.as_tensor(rows["group"], device=dev)
        b1, b2 = ADAM_BETAS
        step = 0
        for epoch in range(self.max_epochs):
            # finished groups need no batches (their stale rows are never read)
            nb.batch_orders(keys, epoch, np.unique(rows["group"]), label, bounds,
                            prob.members_np, order_np)
            order = torch.as_tensor(order_np, device=dev)
            ep_loss = np.zeros(rows["P"].shape[0])
            for b in range(n_batches):
                cols = order[:, bounds[b]:bounds[b + 1]]
                Dg = prob.data[:, cols]                       # (n_arrays, G, batch)
                if prob.uniform:
                    rowscale, npad = 1.0 / float(counts[b]), None
                    if prob.scaled is not None:
                        Dg[prob.scaled] *= rowscale
                else:
                    nreal_t = prob.real[cols].sum(1).clamp_min(1.0)
                    if prob.scaled is not None:
                        Dg[prob.scaled] /= nreal_t[:, None]
                    nreal = nreal_t.cpu().numpy()[rows["group"]][:, None]
                    rowscale, npad = 1.0 / nreal, float(counts[b]) - nreal
                Dm = Dg.index_select(1, group_t)
                step += 1
                lossb, grad = self._loss_and_grad(torch, rows["P"], rows, Dm, rowscale, npad)
                ep_loss += lossb
                # Adam (torch.optim.Adam formula); every working row is active
                m, v = rows["m"], rows["v"]
                m *= b1
                m += (1.0 - b1) * grad
                v *= b2
                v += (1.0 - b2) * grad * grad
                denom = np.sqrt(v) / math.sqrt(1.0 - b2 ** step) + ADAM_EPS
                rows["P"] -= (self.lr / (1.0 - b1 ** step)) * m / denom
            ep_loss /= n_batches
            n_before = rows["P"].shape[0]
            if self._stop_rows(rows, ep_loss, epoch, out_P, out_loss, out_epochs, trace):
                break
            if rows["P"].shape[0] != n_before:
                group_t = torch.as_tensor(rows["group"], device=dev)
        return out_P, out_loss, out_epochs

    def _geometry(self, P, const, exact_ends=False):
        """Knots X (input space), heights h, slopes b and intercepts a of every row.

        Without ``exact_ends`` the end knot t_{k+1} = sum(softmax) is 1 up to
        rounding (the padded beta entries are exactly 0 after softmax), which
        changes nothing inside the training loop; fitted maps get exact ends.
        """
        K1 = const["negpad1"].shape[1]
        beta = P[:, :K1] + const["negpad1"]
        e = np.exp(beta - beta.max(axis=1, keepdims=True))
        p = e / e.sum(axis=1, keepdims=True)
        M = P.shape[0]
        t = np.zeros((M, K1 + 1))
        np.cumsum(p, axis=1, out=t[:, 1:])
        if exact_ends:
            t[const["end2"]] = 1.0
        out = {"p": p, "t": t}
        eta = P[:, K1:]
        if self.space == "prob":
            X = t
            h = 1.0 / (1.0 + np.exp(-eta))
        else:
            # 1 - t_j as the sum of the gaps to its right: exact near t = 1
            u = np.zeros_like(t)
            u[:, :K1] = np.cumsum(p[:, ::-1], axis=1)[:, ::-1]
            if exact_ends:
                u[:, 0] = 1.0
            X = np.log(np.maximum(t, CLIP_LOGIT)) - np.log(np.maximum(u, CLIP_LOGIT))
            out["u"] = u
            h = eta
        dX = X[:, 1:] - X[:, :-1]
        inv = np.divide(1.0, dX, out=np.zeros_like(dX), where=dX > 0)
        b = (h[:, 1:] - h[:, :-1]) * inv
        a = h[:, :K1] - b * X[:, :K1]
        out.update(X=X, h=h, inv=inv, b=b, a=a)
        return out

    def _loss_and_grad(self, torch, P, const, D, rowscale, npad):
        """Mean batch loss per row and its gradient w.r.t. the parameter rows
        (numpy). ``D`` (n_arrays, rows, B) torch: the batch's point arrays of
        every row, the inputs ``D[0]`` increasing along each row."""
        geo = self._geometry(P, const)
        lossb, S0, S1 = self._point_sums(torch, geo, const, D, rowscale, npad)
        return lossb, self._backward(geo, const, S0, S1)

    def _point_sums(self, torch, geo, const, D, rowscale, npad):
        """The per-point pass (torch): batch losses and per-segment sums
        S0 = sum g, S1 = sum g (x - X_j) of d loss / d f."""
        X, a, b = geo["X"], geo["a"], geo["b"]
        K1 = a.shape[1]
        kmax = K1 - 1
        x = D[0]
        M, B = x.shape
        dev = x.device
        if self.loss == "ce" and self.space == "prob":
            a = a - 0.5                                 # PL's cross-entropy uses f - 1/2
        # small tables to the device in one transfer: [a | b | interior knots]
        xint = np.where(const["padint"], np.inf, X[:, 1:K1])
        tab = torch.as_tensor(np.concatenate([a, b, xint], axis=1), device=dev)
        a_t, b_t, xint_t = tab[:, :K1], tab[:, K1:2 * K1], tab[:, 2 * K1:]
        # positions of the interior knots among the sorted batch points
        pos = torch.searchsorted(x, xint_t.contiguous())         # (M, kmax) in [0, B]
        # f = a_j + b_j x on segment j = number of interior knots at or below x
        if kmax > 0:
            hist = torch.zeros((M, B + 1), dtype=torch.long, device=dev)
            hist.scatter_add_(1, pos, torch.ones_like(pos))
            j = torch.cumsum(hist[:, :B], dim=1)
            f = torch.addcmul(a_t.gather(1, j), b_t.gather(1, j), x)
        else:
            f = torch.addcmul(a_t, b_t, x)
        # g and g x side by side, rows padded with zeros to a multiple of 16
        Bp = -(-B // 16) * 16
        gbuf = torch.empty((2, M, Bp), dtype=x.dtype, device=dev)
        if Bp > B:
            gbuf[:, :, B:] = 0.0
        g = gbuf[0, :, :B]
        lossb, gscale = self._pointwise(torch, f, D, B, rowscale, npad, g)
        torch.mul(g, x, out=gbuf[1, :, :B])
        # per-segment sums of g and g x: prefix sums at the segment boundaries
        # [0, pos_1, ..., pos_kmax, B]
        bnd = torch.nn.functional.pad(pos, (1, 1), value=B)
        bnd[:, 0] = 0
        c = _prefix_sums_at(torch, gbuf, bnd).cpu().numpy()
        S = c[:, :, 1:] - c[:, :, :-1]
        S0 = S[0]
        S1 = S[1] - X[:, :K1] * S0                     # sum g (x - X_j)
        if gscale is not None:
            S0 = S0 * gscale
            S1 = S1 * gscale
        return lossb, S0, S1

    def _pointwise(self, torch, f, D, B, rowscale, npad, g):
        """Mean batch loss of every row (numpy); writes a per-point gradient
        factor into ``g`` and returns the row factor ``gscale`` with
        d loss / d f = g * gscale (None: 1).

        ``rowscale``: 1 / (real points in the batch), (rows, 1) or one float;
        ``npad``: virtual points per row in the batch, (rows, 1) or None.
        """
        if self.loss == "ce":
            if self.space == "prob":
                # f here is f - 1/2; p_y = 1/2 + sg (f - 1/2), d(-log p_y)/df = -sg / p_y
                sg = D[1]
                py = torch.addcmul(self._half(torch, f), sg, f).clamp_(CE_CLIP, 1.0 - CE_CLIP)
                torch.div(sg, py, out=g)
                logs = _sum_log(torch, py, B)
                gscale = -rowscale
            else:
                # margin m = (2y-1) f; loss softplus(-m) = -log sigmoid(m), capped at
                # -log(1e-16) like the probability clip of PL (t = -m <= 36.84);
                # d loss / d f = -(2y-1) sigmoid(-m)
                nsg = D[1]
                t = torch.mul(nsg, f).clamp_(max=-math.log(CE_CLIP))
                torch.sigmoid(t, out=g)                 # sigmoid(-m) = d loss / d t
                logs = _sum_log(torch, torch.rsub(g, 1.0), B)   # log sigmoid(m) >= log 1e-16
                g.mul_(nsg)
                gscale = rowscale
            logs = logs.cpu().numpy()
            if npad is not None:                        # virtual points: p = 1/2
                logs = logs + npad[:, 0] * math.log(2.0)
                return -logs * rowscale[:, 0], gscale
            return -logs * rowscale, gscale
        y, w2 = D[1], D[2]
        if self.space == "prob":
            r = f - y
            torch.mul(r, w2, out=g)
            return 0.5 * (r * g).sum(1).cpu().numpy(), None
        pr = torch.sigmoid(f)
        r = pr - y
        torch.mul(r, w2, out=g)
        lossb = 0.5 * (r * g).sum(1).cpu().numpy()
        g.mul_(pr).mul_(1.0 - pr)
        return lossb, None

    _half_cache: dict = {}

    @staticmethod
    def _half(torch, like):
        key = (like.dtype, like.device)
        t = BatchedTrainer._half_cache.get(key)
        if t is None:
            t = BatchedTrainer._half_cache[key] = torch.full((1, 1), 0.5, dtype=like.dtype,
                                                             device=like.device)
        return t

    def _backward(self, geo, const, S0, S1):
        """Chain rule from the segment sums to (beta, eta) on the small arrays.

        On segment j, f = h_j + b_j (x - X_j) with b_j = (h_{j+1} - h_j) / dX_j;
        S0_j = sum g and S1_j = sum g (x - X_j) over the segment's points.
        """
        b, inv, h, p, t = geo["b"], geo["inv"], geo["h"], geo["p"], geo["t"]
        M, K1 = S0.shape
        q = S1 * inv                   # d loss / d b_j  divided by dX_j
        r = q * b
        dh = np.zeros((M, K1 + 1))
        dh[:, :K1] = S0 - q
        dh[:, 1:] += q
        dX = np.zeros_like(dh)
        dX[:, :K1] = r - b * S0
        dX[:, 1:] -= r
        dX *= const["interior"]        # only interior knots depend on beta
        # t_j = sum_{i<j} p_i: d/dp_i = sum_{j>i} dX_j (PL); PL3: z_j = log t_j - log u_j
        if self.space == "prob":
            A = dX
        else:
            u = geo["u"]
            A = dX * np.divide(1.0, t, out=np.zeros_like(t), where=t > CLIP_LOGIT)
            Bv = dX * np.divide(1.0, u, out=np.zeros_like(u), where=u > CLIP_LOGIT)
        dp = np.cumsum(A[:, ::-1], axis=1)[:, ::-1][:, 1:]
        if self.space == "logit":
            dp = dp - np.cumsum(Bv, axis=1)[:, :K1]
        dbeta = p * (dp - (p * dp).sum(axis=1, keepdims=True))
        deta = dh * h * (1.0 - h) if self.space == "prob" else dh
        return np.concatenate([dbeta, deta], axis=1)


def _sum_log(torch, v, B):
    """Row sums of log(v) for v in [1e-16, 1]: logs of products of 16 values
    (>= 1e-256, no underflow), 16 times fewer logarithms."""
    M = v.shape[0]
    B16 = (B // 16) * 16
    total = v[:, :B16].reshape(M, B16 // 16, 16).prod(-1).log_().sum(1)
    if B16 < B:
        total += v[:, B16:].log().sum(1)
    return total


_ARANGE16: dict = {}


def _prefix_sums_at(torch, buf, bnd):
    """``C[..., q] = sum(buf[..., :bnd[:, q]])`` without a full cumulative sum.

    ``buf`` (2, M, Bp), Bp a multiple of 16 (zeros past the data); ``bnd``
    (M, Q) positions in [0, Bp]. Sums of blocks of 16 (one read of ``buf``),
    their cumulative sum, plus the partial block before each position.
    """
    two, M, Bp = buf.shape
    Q = bnd.shape[1]
    nblk = Bp // 16
    key = buf.device
    ar = _ARANGE16.get(key)
    if ar is None:
        ar = _ARANGE16[key] = torch.arange(16, device=buf.device)
    blocks = torch.nn.functional.pad(torch.cumsum(buf.view(two, M, nblk, 16).sum(-1), dim=-1),
                                     (1, 0))                     # sums before each block
    bi = torch.div(bnd, 16, rounding_mode="floor")                # block of each position
    within = bnd - bi * 16
    base = blocks.gather(2, bi.unsqueeze(0).expand(two, M, Q))
    idx = (bi.clamp(max=nblk - 1) * 16).unsqueeze(-1) + ar        # (M, Q, 16)
    vals = buf.gather(2, idx.view(1, M, Q * 16).expand(two, M, Q * 16)).view(two, M, Q, 16)
    part = (vals * (ar < within.unsqueeze(-1))).sum(-1)
    return base + part
