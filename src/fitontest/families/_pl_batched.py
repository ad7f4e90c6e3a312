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

Speed (no autograd; everything per data point is a handful of fused passes):

- every group's training data is sorted once; each mini-batch is drawn as a
  sorted subset (a seeded random balanced batch label per point, then the
  members of a batch in sorted order), so the segment of every point follows
  from the positions of the knots among the sorted batch (``searchsorted`` of
  the few knots into the batch, a histogram and a cumulative sum) instead of
  a binary search per point;
- the gradient is analytic: per segment only the sums ``S0 = sum g`` and
  ``S1 = sum g (x - X_j)`` of the per-point loss derivatives ``g`` are needed,
  read off cumulative sums of the sorted batch at the knot positions; the
  chain rule to (knots, heights) and then to (beta, eta) runs on the small
  (models x knots) tensors;
- Adam is implemented by hand on the batched parameter tensor (identical to
  ``torch.optim.Adam`` with default betas/eps, no weight decay);
- per-model early stopping: a model whose training loss has not decreased for
  ``patience`` epochs stops; its row is removed from the working tensors
  (masking realised as compaction), so it neither updates nor costs anything,
  and the other rows' updates are unaffected (every operation is row-wise).

Training loss monitored for early stopping: the mean of the epoch's
mini-batch losses (each the mean loss over the batch before the step), as
Keras' ``EarlyStopping(monitor="loss")`` of the paper's implementation does.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

CLIP_LOGIT = 1e-16       # logit(s) clips s and 1 - s at this (validation.logit)
CLIP_HEIGHT = 1e-3       # PL identity init: eta = logit(clip(t, 1e-3, 1 - 1e-3))
GAP_FLOOR = 1e-16        # initial knot gaps are floored before log (ties in scores)
CE_CLIP = 1e-16          # PL cross-entropy: f clipped to [1e-16, 1 - 1e-16]
ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8


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
    """Constant per-group data: inputs sorted once, loss-specific point arrays.

    ``data`` has shape (n_arrays, G, nmax): row 0 is the map input x (s or
    logit(s)) in increasing order, the others are label-derived arrays of the
    loss (see :meth:`BatchedTrainer._point_arrays`); row ``scaled`` is multiplied
    by the per-batch weight 1 / (real points in the batch). Groups shorter than
    ``nmax`` are padded with copies of their largest input (rows stay sorted)
    whose arrays make them contribute nothing.
    """

    def __init__(self, torch, trainer, s_groups, y_groups, device, dtype):
        from ..validation import logit

        self.G = len(s_groups)
        sizes = np.array([len(s) for s in s_groups])
        self.sizes = sizes
        self.nmax = int(sizes.max())
        self.uniform = bool((sizes == self.nmax).all())
        xs = np.empty((self.G, self.nmax))
        ys = np.zeros((self.G, self.nmax))
        real = np.zeros((self.G, self.nmax))
        self.sorted_s = []
        for g, (s, y) in enumerate(zip(s_groups, y_groups)):
            order = np.argsort(s, kind="stable")
            s_sorted = np.asarray(s, dtype=np.float64)[order]
            self.sorted_s.append(s_sorted)
            x = s_sorted if trainer.space == "prob" else logit(s_sorted)
            n = s_sorted.shape[0]
            xs[g, :n], ys[g, :n], real[g, :n] = x, np.asarray(y, dtype=np.float64)[order], 1.0
            xs[g, n:] = x[-1]
        arrays, self.scaled = trainer._point_arrays(xs, ys, real)
        self.data = torch.as_tensor(np.stack(arrays), dtype=dtype, device=device)
        self.real = torch.as_tensor(real, dtype=dtype, device=device)


class BatchedTrainer:
    """Train every (group, k) model of a PL or PL3 fit at once."""

    def __init__(self, *, space: str, loss: str, lr: float = 0.01, max_epochs: int = 1500,
                 patience: int = 20, seed: int = 0, device: str = "cpu",
                 n_threads: int | None = None):
        if space not in ("prob", "logit"):
            raise ValueError(f"space must be 'prob' or 'logit', got {space!r}")
        if loss not in ("ce", "mse"):
            raise ValueError(f"loss must be 'ce' or 'mse', got {loss!r}")
        self.space, self.loss = space, loss
        self.lr, self.max_epochs, self.patience, self.seed = lr, max_epochs, patience, seed
        self.device = device
        self.n_threads = n_threads

    # ------------------------------------------------------------------ API
    def fit(self, s_groups, y_groups, ks, *, n_batches: int, pad_knots: int | None = None,
            trace: bool = False) -> BatchedResult:
        """Train models for every group and every number of interior knots in ``ks``.

        ``n_batches`` mini-batches per epoch: each group's training points are
        shuffled and split into ``n_batches`` nearly equal batches
        (``numpy.array_split`` sizes of the largest group; a shorter group's
        padding point falls into one of them with weight 0). ``pad_knots``
        (>= max(ks)) fixes the padded width, so results can be compared bit
        for bit across batch layouts. ``trace`` records the per-epoch training
        loss of every row in ``self.history_``.
        """
        import torch

        ks = np.asarray(ks, dtype=np.int64)
        if ks.ndim != 1 or ks.size == 0 or (ks < 0).any():
            raise ValueError("ks must be a non-empty list of non-negative integers")
        kmax = int(ks.max()) if pad_knots is None else int(pad_knots)
        if kmax < ks.max():
            raise ValueError("pad_knots must be >= max(ks)")
        if len(s_groups) != len(y_groups) or len(s_groups) == 0:
            raise ValueError("need one label array per score array, and at least one group")
        old_threads = torch.get_num_threads()
        if self.n_threads is not None:
            torch.set_num_threads(int(self.n_threads))
        try:
            with torch.no_grad():
                return self._fit(torch, s_groups, y_groups, ks, kmax, int(n_batches), trace)
        finally:
            if self.n_threads is not None:
                torch.set_num_threads(old_threads)

    # ------------------------------------------------------- per-loss arrays
    def _point_arrays(self, xs, ys, real):
        """Label-derived per-point arrays of the loss; index of the weighted one.

        prob/ce : x, 2y - 1        p_y = 1/2 + (2y - 1)(f - 1/2)
        logit/ce: x, -(2y - 1)     exp(-margin) = exp(-(2y - 1) f)
        */mse   : x, y, 2 w        (row 2 is scaled by the batch weight)
        Padding points have sign 0 (zero gradient; their log-loss log 2 is
        subtracted by count) and weight 0.
        """
        sg = np.where(real > 0, 2.0 * ys - 1.0, 0.0)
        if self.loss == "ce" and self.space == "prob":
            return [xs, sg], None
        if self.loss == "ce":
            return [xs, -sg], None
        return [xs, ys, 2.0 * real], 2

    # ------------------------------------------------------------- internals
    def _fit(self, torch, s_groups, y_groups, ks, kmax, n_batches, trace):
        dev = resolve_device(self.device)
        dt = torch.float64
        prob = _Problem(torch, self, s_groups, y_groups, dev, dt)
        G, C = prob.G, ks.shape[0]
        M = G * C
        K1, K2 = kmax + 1, kmax + 2
        if n_batches < 1 or n_batches > int(prob.sizes.min()):
            raise ValueError(f"n_batches must be in 1..{int(prob.sizes.min())}, got {n_batches}")

        # ---- per-model constants (model m = g * C + c)
        group_np = np.repeat(np.arange(G), C)
        k_np = np.tile(ks, G)
        col1 = np.arange(K1)[None, :]
        col2 = np.arange(K2)[None, :]
        kk = k_np[:, None]

        def constants():
            return {
                "group": torch.as_tensor(group_np, device=dev),
                "pad1": torch.as_tensor(col1 > kk, device=dev),          # unused beta entries
                "end2": torch.as_tensor(col2 >= kk + 1, device=dev),     # t = 1: end knot, pads
                "interior": torch.as_tensor((col2 >= 1) & (col2 <= kk), dtype=dt, device=dev),
                "padint": torch.as_tensor(col1[:, :kmax] >= kk, device=dev),  # unused interior
                "idx": torch.arange(M, device=dev),
            }

        const = constants()

        # ---- initial parameters: knots at equal-size quantiles, identity map
        beta0 = np.stack([initial_beta(prob.sorted_s[g], int(k), K1)
                          for g, k in zip(group_np, k_np)])
        P = torch.zeros((M, K1 + K2), dtype=dt, device=dev)
        P[:, :K1] = torch.as_tensor(beta0, dtype=dt, device=dev)
        geo = self._geometry(torch, P, const, K1)
        if self.space == "prob":
            tc = geo["t"].clamp(CLIP_HEIGHT, 1.0 - CLIP_HEIGHT)
            eta0 = torch.log(tc) - torch.log1p(-tc)
        else:
            eta0 = geo["X"].clone()
        used = torch.as_tensor(col2 <= kk + 1, device=dev)
        P[:, K1:] = torch.where(used, eta0, torch.zeros_like(eta0))

        # ---- optimiser / early-stopping state
        state = {
            "P": P, "m": torch.zeros_like(P), "v": torch.zeros_like(P),
            "best": torch.full((M,), math.inf, dtype=dt, device=dev),
            "since": torch.zeros(M, dtype=torch.long, device=dev),
        }
        out_P = P.clone()
        out_loss = np.full(M, np.nan)
        out_epochs = np.zeros(M, dtype=np.int64)

        # ---- balanced batches: position r of a group's shuffled order belongs
        #      to batch label[r] (array_split sizes of nmax)
        counts = np.array([len(a) for a in np.array_split(np.arange(prob.nmax), n_batches)])
        bounds = np.concatenate([[0], np.cumsum(counts)])
        label = torch.as_tensor(np.repeat(np.arange(n_batches, dtype=np.int8), counts))
        gen = torch.Generator()          # CPU generator: same stream on every device
        gen.manual_seed(int(self.seed))
        b1, b2 = ADAM_BETAS
        step = 0
        active = M
        self.history_ = [] if trace else None
        nD = prob.data.shape[0]

        for epoch in range(self.max_epochs):
            # members of every batch, in increasing input order: a stable sort of
            # the batch labels of the points (a radix sort of small integers)
            lab = torch.stack([label[torch.randperm(prob.nmax, generator=gen)]
                               for _ in range(G)]).numpy()
            order = torch.as_tensor(np.argsort(lab, axis=1, kind="stable"), device=dev)
            ep_loss = torch.zeros(active, dtype=dt, device=dev)
            for b in range(n_batches):
                cols = order[:, bounds[b]:bounds[b + 1]]
                Dg = prob.data.gather(2, cols.unsqueeze(0).expand(nD, G, cols.shape[1]))
                if prob.uniform:
                    rowscale, npad = 1.0 / float(counts[b]), None
                else:
                    nreal = prob.real.gather(1, cols).sum(1, keepdim=True).clamp_min(1.0)
                    rowscale = (1.0 / nreal).index_select(0, const["group"])
                    npad = (float(counts[b]) - nreal).index_select(0, const["group"])
                if prob.scaled is not None:
                    Dg[prob.scaled] *= rowscale if prob.uniform else 1.0 / nreal
                Dm = Dg.index_select(1, const["group"])
                step += 1
                lossb, grad = self._loss_and_grad(torch, state["P"], const, K1, Dm,
                                                  rowscale, npad)
                ep_loss += lossb
                # Adam (torch.optim.Adam formula); every working row is active
                m, v, Pw = state["m"], state["v"], state["P"]
                m.mul_(b1).add_(grad, alpha=1.0 - b1)
                v.mul_(b2).addcmul_(grad, grad, value=1.0 - b2)
                bc1 = 1.0 - b1 ** step
                bc2 = 1.0 - b2 ** step
                denom = (v.sqrt() / math.sqrt(bc2)).add_(ADAM_EPS)
                Pw.addcdiv_(m, denom, value=-self.lr / bc1)
            ep_loss /= n_batches
            improved = ep_loss < state["best"]
            state["best"] = torch.where(improved, ep_loss, state["best"])
            state["since"] = torch.where(improved, torch.zeros_like(state["since"]),
                                         state["since"] + 1)
            stop = state["since"] >= self.patience
            if trace:
                self.history_.append((const["idx"].cpu().numpy().copy(),
                                      ep_loss.cpu().numpy().copy()))
            last = epoch + 1 == self.max_epochs
            if last or bool(stop.any()):
                done = torch.ones_like(stop) if last else stop
                idx = const["idx"][done]
                out_P[idx] = state["P"][done]
                idx_np = idx.cpu().numpy()
                out_loss[idx_np] = ep_loss[done].cpu().numpy()
                out_epochs[idx_np] = epoch + 1
                keep = ~done
                active = int(keep.sum())
                if active == 0:
                    break
                for key in ("P", "m", "v", "best", "since"):
                    state[key] = state[key][keep]
                for key in const:
                    const[key] = const[key][keep]

        # ---- fitted maps in numpy
        geo = self._geometry(torch, out_P, constants(), K1)
        knots = geo["X"].cpu().numpy().reshape(G, C, K2)
        heights = geo["h"].cpu().numpy().reshape(G, C, K2)
        return BatchedResult(space=self.space, ks=ks, knots=knots, heights=heights,
                             n_epochs=out_epochs.reshape(G, C),
                             final_loss=out_loss.reshape(G, C))

    def _geometry(self, torch, P, const, K1):
        """Knots X (input space), heights h and segment slopes b of every row."""
        beta = P[:, :K1].masked_fill(const["pad1"], -math.inf)
        p = torch.softmax(beta, dim=1)
        M = P.shape[0]
        zero = torch.zeros((M, 1), dtype=P.dtype, device=P.device)
        t = torch.cat([zero, torch.cumsum(p, dim=1)], dim=1).masked_fill_(const["end2"], 1.0)
        out = {"p": p, "t": t}
        if self.space == "prob":
            X = t
        else:
            # 1 - t_j as the sum of the gaps to its right: exact near t = 1
            u = torch.cat([torch.flip(torch.cumsum(torch.flip(p, [1]), dim=1), [1]), zero], dim=1)
            u[:, 0] = 1.0
            u.masked_fill_(const["end2"], 0.0)
            X = torch.log(t.clamp_min(CLIP_LOGIT)) - torch.log(u.clamp_min(CLIP_LOGIT))
            out["u"] = u
        eta = P[:, K1:]
        h = torch.sigmoid(eta) if self.space == "prob" else eta
        dX = X[:, 1:] - X[:, :-1]
        pos = dX > 0
        inv = torch.where(pos, 1.0 / torch.where(pos, dX, torch.ones_like(dX)),
                          torch.zeros_like(dX))
        b = (h[:, 1:] - h[:, :-1]) * inv
        out.update(X=X, h=h, inv=inv, b=b)
        return out

    def _loss_and_grad(self, torch, P, const, K1, D, rowscale, npad):
        """Mean batch loss per row and its gradient w.r.t. the parameter rows.

        ``D`` (n_arrays, rows, B): the batch's point arrays for every row, the
        inputs ``D[0]`` increasing along each row.
        """
        geo = self._geometry(torch, P, const, K1)
        X, h, b = geo["X"], geo["h"], geo["b"]
        x = D[0]
        M, B = x.shape
        kmax = K1 - 1
        # positions of the interior knots among the sorted batch points
        xint = X[:, 1:K1].masked_fill(const["padint"], math.inf)
        pos = torch.searchsorted(x, xint)                        # (M, kmax) in [0, B]
        # segment of every point: the number of interior knots at or below it
        # f = a_j + b_j x on segment j (a_j = h_j - b_j X_j: 2 gathers, 1 pass);
        # PL's cross-entropy works with f - 1/2
        a = h[:, :K1] - b * X[:, :K1]
        if self.loss == "ce" and self.space == "prob":
            a = a - 0.5
        if kmax > 0:
            hist = torch.zeros((M, B + 1), dtype=torch.long, device=x.device)
            hist.scatter_add_(1, pos, torch.ones_like(pos))
            j = torch.cumsum(hist[:, :B], dim=1)
            f = torch.addcmul(a.gather(1, j), b.gather(1, j), x)
        else:
            f = torch.addcmul(a, b, x)
        lossb, g, gscale = self._pointwise(torch, f, D, B, rowscale, npad)
        # per-segment sums of g and g * x (x - X_j is folded in on the small tensors)
        S0 = _segment_sums(torch, g, pos, B)
        S1 = _segment_sums(torch, g.mul_(x), pos, B) - X[:, :K1] * S0
        if gscale is not None:
            S0 = S0 * gscale
            S1 = S1 * gscale
        return lossb, self._backward(torch, geo, const, K1, S0, S1)

    def _pointwise(self, torch, f, D, B, rowscale, npad):
        """Mean batch loss of every row, a per-point gradient factor g and the
        row factor ``gscale`` with d loss / d f = g * gscale (None: 1).

        ``rowscale``: 1 / (real points in the batch), per row or one float;
        ``npad``: padding points per row in the batch (None: none).
        """
        if self.loss == "ce":
            if self.space == "prob":
                # f here is f - 1/2; p_y = 1/2 + sg (f - 1/2), d(-log p_y)/df = -sg / p_y
                x, sg = D
                py = torch.addcmul(self._half(torch, f), sg, f).clamp_(CE_CLIP, 1.0 - CE_CLIP)
                g = torch.div(sg, py)
                logs = _sum_log(torch, py, B)
                gscale = -rowscale
            else:
                # margin m = (2y-1) f; loss softplus(-m) = -log sigmoid(m), capped at
                # -log(1e-16) like the probability clip of PL; d loss/df = -sg e q
                x, nsg = D
                t = torch.mul(nsg, f).clamp_(max=-math.log(CE_CLIP))
                e = torch.exp(t)                        # exp(-margin)
                q = torch.add(e, 1.0).reciprocal_()     # sigmoid(margin)
                g = torch.mul(nsg, e).mul_(q)
                logs = _sum_log(torch, q, B)
                gscale = rowscale
            if npad is not None:                        # padding points: p = 1/2
                logs = logs + npad[:, 0] * math.log(2.0)
            return -logs * (rowscale if npad is None else rowscale[:, 0]), g, gscale
        _, y, w2 = D
        if self.space == "prob":
            r = f - y
            wr = r * w2
            return 0.5 * (r * wr).sum(1), wr, None
        pr = torch.sigmoid(f)
        r = pr - y
        wr = r * w2
        lossb = 0.5 * (r * wr).sum(1)
        return lossb, wr.mul_(pr).mul_(1.0 - pr), None

    _half_cache: dict = {}

    @staticmethod
    def _half(torch, like):
        key = (like.dtype, like.device)
        t = BatchedTrainer._half_cache.get(key)
        if t is None:
            t = BatchedTrainer._half_cache[key] = torch.full((1, 1), 0.5, dtype=like.dtype,
                                                             device=like.device)
        return t

    def _backward(self, torch, geo, const, K1, S0, S1):
        """Chain rule from the segment sums to (beta, eta) on the small tensors.

        On segment j, f = h_j + b_j (x - X_j) with b_j = (h_{j+1} - h_j) / dX_j;
        S0_j = sum g and S1_j = sum g (x - X_j) over the segment's points.
        """
        b, inv, h, p, t = geo["b"], geo["inv"], geo["h"], geo["p"], geo["t"]
        M = S0.shape[0]
        K2 = K1 + 1
        q = S1 * inv                   # d loss / d b_j  divided by dX_j
        r = q * b
        dh = torch.zeros((M, K2), dtype=S0.dtype, device=S0.device)
        dh[:, :K1] += S0 - q
        dh[:, 1:] += q
        dX = torch.zeros_like(dh)
        dX[:, :K1] += r - b * S0
        dX[:, 1:] -= r
        dX *= const["interior"]        # only interior knots depend on beta
        if self.space == "prob":
            A = dX
        else:
            u = geo["u"]
            A = torch.where(t > CLIP_LOGIT, dX / t.clamp_min(CLIP_LOGIT), torch.zeros_like(dX))
            Bv = torch.where(u > CLIP_LOGIT, dX / u.clamp_min(CLIP_LOGIT), torch.zeros_like(dX))
        rcA = torch.flip(torch.cumsum(torch.flip(A, [1]), dim=1), [1])
        dp = rcA[:, 1:]                # d loss / d p_i = sum_{j > i} A_j  (- sum_{j <= i} B_j)
        if self.space == "logit":
            dp = dp - torch.cumsum(Bv, dim=1)[:, :K1]
        dbeta = p * (dp - (p * dp).sum(1, keepdim=True))
        deta = dh * h * (1.0 - h) if self.space == "prob" else dh
        return torch.cat([dbeta, deta], dim=1)


def _sum_log(torch, v, B):
    """Row sums of log(v) for v in [1e-16, 1]: logs of products of 16 values
    (>= 1e-256, no underflow), 16 times fewer logarithms."""
    M = v.shape[0]
    B16 = (B // 16) * 16
    total = torch.zeros(M, dtype=v.dtype, device=v.device)
    if B16:
        total += v[:, :B16].reshape(M, B16 // 16, 16).prod(-1).log_().sum(1)
    if B16 < B:
        total += v[:, B16:].log().sum(1)
    return total


def _segment_sums(torch, v, pos, B):
    """Sums of ``v`` over the segments [pos_{j-1}, pos_j) of every sorted row."""
    M = v.shape[0]
    cs = torch.cumsum(v, dim=1)
    zero = torch.zeros((M, 1), dtype=v.dtype, device=v.device)
    total = cs[:, B - 1:B]
    if pos.shape[1] == 0:
        return total.clone()
    before = torch.where(pos > 0, cs.gather(1, (pos - 1).clamp_(min=0)),
                         torch.zeros_like(pos, dtype=v.dtype))
    c = torch.cat([zero, before, total], dim=1)          # (M, kmax + 2)
    return c[:, 1:] - c[:, :-1]                          # (M, kmax + 1)
