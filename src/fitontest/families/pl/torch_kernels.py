"""The torch backend of the PL / PL3 trainer: the pass over a batch's points
on a torch device (CPU or CUDA).

Per step, everything per data point runs in torch on the device; the small
per-model arrays (geometry, chain rule, Adam) run in the compiled row
functions of :mod:`.algorithm` on the host: one small table goes to the
device and the segment sums come back.

Speed (no autograd; a handful of passes per point):

- a batch lists its points in increasing input order (the mini-batch rule of
  :mod:`.algorithm`), so the segment of each point follows from the positions
  of the few knots among the batch (``searchsorted`` of the knots into the
  batch, a histogram and a cumulative sum) instead of a binary search per
  point;
- the gradient is analytic: per segment only ``S0 = sum g`` and
  ``S1 = sum g (x - X_j)`` of the per-point loss derivatives ``g`` are
  needed, read off prefix sums of the sorted batch at the knot positions.

PL3's cross-entropy takes ``1 - sigmoid(t)`` for the probability of the
observed label, so for points with a margin below about -20 (loss above 20
nats) the loss *value* carries a relative error up to 1e-3 (the gradient is
exact); the value only feeds early stopping.
"""
from __future__ import annotations

import contextlib
import math
from typing import Any

import numpy as np
import torch

from fitontest.core.runtime import torch_threads
from .algorithm import CE, CLIP, PROB, backward_adam_rows, batch_orders, geometry_rows


class TorchEpochs:
    """The epochs of a fit with the point passes on ``device``."""

    def __init__(self, problem, bounds, space: int, loss: int, lr: float, device,
                 n_threads: int | None):
        self.problem, self.bounds = problem, bounds
        self.space, self.loss, self.lr = space, loss, lr
        self.device, self.n_threads = device, n_threads
        self.data = torch.as_tensor(problem.data, dtype=torch.float64, device=device)
        self.real = torch.as_tensor(problem.real, dtype=torch.float64, device=device)
        self._group: Any = None          # a torch tensor once built
        self._order: np.ndarray | None = None

    @contextlib.contextmanager
    def threads(self):
        with torch_threads(self.n_threads), torch.no_grad():
            yield

    def epoch(self, rows, keys, epoch: int, label, active, step0: int) -> np.ndarray:
        """Epoch ``epoch`` of every working row (in place; the batches of
        :func:`.algorithm.batch_orders`); their epoch losses."""
        prob, bounds = self.problem, self.bounds
        n_batches = bounds.shape[0] - 1
        if self._order is None:
            self._order = np.zeros((prob.G, prob.nmax), dtype=np.int64)
        order_np = self._order
        batch_orders(keys, epoch, active, label, bounds, prob.members, order_np)
        if self._group is None or self._group.shape[0] != rows.group.shape[0]:
            self._group = torch.as_tensor(rows.group, device=self.device)
        order = torch.as_tensor(order_np, device=self.device)
        M, K1 = rows.P.shape[0], (rows.P.shape[1] - 1) // 2
        p, b, a, inv = (np.zeros((M, K1)) for _ in range(4))
        t, u, X, h = (np.zeros((M, K1 + 1)) for _ in range(4))
        padint = np.arange(K1 - 1)[None, :] >= rows.k[:, None]
        grad = np.zeros_like(rows.P)
        ep_loss = np.zeros(M)
        for bi in range(n_batches):
            cols = order[:, bounds[bi]:bounds[bi + 1]]
            D = self.data[:, cols]                       # (n_arrays, G, batch)
            size = int(bounds[bi + 1] - bounds[bi])
            if prob.uniform:
                rowscale, npad = 1.0 / size, None
                if prob.scaled is not None:
                    D[prob.scaled] *= rowscale
            else:
                nreal_t = self.real[cols].sum(1).clamp_min(1.0)
                if prob.scaled is not None:
                    D[prob.scaled] /= nreal_t[:, None]
                nreal = nreal_t.cpu().numpy()[rows.group][:, None]
                rowscale, npad = 1.0 / nreal, size - nreal
            D = D.index_select(1, self._group)
            geometry_rows(rows.P, rows.k, self.space, p, t, u, X, h, b, a, inv)
            lossb, S0, S1 = point_sums(self.space, self.loss, X, a, b, padint, D, rowscale,
                                       npad)
            backward_adam_rows(rows.P, rows.m, rows.v, rows.k, self.space, p, t, u, h, b, inv,
                               S0, S1, grad, step0 + bi + 1, self.lr)
            ep_loss += lossb
        return ep_loss / n_batches


def point_sums(space: int, loss: int, X, a, b, padint, D, rowscale, npad):
    """The forward/backward pass over a batch: mean batch loss per row and
    the per-segment sums S0 = sum dl/df, S1 = sum dl/df (x - X_j) (numpy).

    ``X``, ``a``, ``b``: knots, intercepts and slopes of every row (numpy;
    ``padint`` masks the interior knots a row does not have); ``D``
    (n_arrays, rows, B) torch: the batch's point arrays of every row, the
    inputs ``D[0]`` increasing along each row (:func:`.algorithm.point_arrays`).
    """
    K1 = a.shape[1]
    kmax = K1 - 1
    x = D[0]
    M, B = x.shape
    dev = x.device
    if loss == CE and space == PROB:
        a = a - 0.5                                 # PL's cross-entropy uses f - 1/2
    # small tables to the device in one transfer: [a | b | interior knots]
    xint = np.where(padint, np.inf, X[:, 1:K1])
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
    lossb, gscale = _pointwise(space, loss, f, D, B, rowscale, npad, g)
    torch.mul(g, x, out=gbuf[1, :, :B])
    # per-segment sums of g and g x: prefix sums at the segment boundaries
    # [0, pos_1, ..., pos_kmax, B]
    bnd = torch.nn.functional.pad(pos, (1, 1), value=B)
    bnd[:, 0] = 0
    c = _prefix_sums_at(gbuf, bnd).cpu().numpy()
    S = c[:, :, 1:] - c[:, :, :-1]
    S0 = S[0]
    S1 = S[1] - X[:, :K1] * S0                     # sum g (x - X_j)
    if gscale is not None:
        S0 = S0 * gscale
        S1 = S1 * gscale
    return lossb, np.ascontiguousarray(S0), np.ascontiguousarray(S1)


def _pointwise(space, loss, f, D, B, rowscale, npad, g):
    """Mean batch loss of every row (numpy); writes a per-point gradient
    factor into ``g`` and returns the row factor ``gscale`` with
    d loss / d f = g * gscale (None: 1).

    ``rowscale``: 1 / (real points in the batch), (rows, 1) or one float;
    ``npad``: virtual points per row in the batch, (rows, 1) or None.
    """
    if loss == CE:
        if space == PROB:
            # f here is f - 1/2; p_y = 1/2 + sg (f - 1/2), d(-log p_y)/df = -sg / p_y
            sg = D[1]
            py = torch.addcmul(_half(f), sg, f).clamp_(CLIP, 1.0 - CLIP)
            torch.div(sg, py, out=g)
            logs = _sum_log(py, B)
            gscale = -rowscale
        else:
            # margin m = (2y-1) f; loss softplus(-m) = -log sigmoid(m), capped at
            # -log(1e-16) like the probability clip of PL (t = -m <= 36.84);
            # d loss / d f = -(2y-1) sigmoid(-m)
            nsg = D[1]
            t = torch.mul(nsg, f).clamp_(max=-math.log(CLIP))
            torch.sigmoid(t, out=g)                 # sigmoid(-m) = d loss / d t
            logs = _sum_log(torch.rsub(g, 1.0), B)   # log sigmoid(m) >= log 1e-16
            g.mul_(nsg)
            gscale = rowscale
        logs = logs.cpu().numpy()
        if npad is not None:                        # virtual points: p = 1/2
            logs = logs + npad[:, 0] * math.log(2.0)
            return -logs * rowscale[:, 0], gscale
        return -logs * rowscale, gscale
    y, w2 = D[1], D[2]
    if space == PROB:
        r = f - y
        torch.mul(r, w2, out=g)
        return 0.5 * (r * g).sum(1).cpu().numpy(), None
    pr = torch.sigmoid(f)
    r = pr - y
    torch.mul(r, w2, out=g)
    lossb = 0.5 * (r * g).sum(1).cpu().numpy()
    g.mul_(pr).mul_(1.0 - pr)
    return lossb, None


_HALF: dict = {}


def _half(like):
    key = (like.dtype, like.device)
    t = _HALF.get(key)
    if t is None:
        t = _HALF[key] = torch.full((1, 1), 0.5, dtype=like.dtype, device=like.device)
    return t


def _sum_log(v, B):
    """Row sums of log(v) for v in [1e-16, 1]: logs of products of 16 values
    (>= 1e-256, no underflow), 16 times fewer logarithms."""
    M = v.shape[0]
    B16 = (B // 16) * 16
    total = v[:, :B16].reshape(M, B16 // 16, 16).prod(-1).log_().sum(1)
    if B16 < B:
        total += v[:, B16:].log().sum(1)
    return total


_ARANGE16: dict = {}


def _prefix_sums_at(buf, bnd):
    """``C[..., q] = sum(buf[..., :bnd[:, q]])`` without a full cumulative sum.

    ``buf`` (2, M, Bp), Bp a multiple of 16 (zeros past the data); ``bnd``
    (M, Q) positions in [0, Bp]. Sums of blocks of 16 (one read of ``buf``),
    their cumulative sum, plus the partial block before each position.
    """
    two, M, Bp = buf.shape
    Q = bnd.shape[1]
    nblk = Bp // 16
    ar = _ARANGE16.get(buf.device)
    if ar is None:
        ar = _ARANGE16[buf.device] = torch.arange(16, device=buf.device)
    blocks = torch.nn.functional.pad(torch.cumsum(buf.view(two, M, nblk, 16).sum(-1), dim=-1),
                                     (1, 0))                     # sums before each block
    bi = torch.div(bnd, 16, rounding_mode="floor")                # block of each position
    within = bnd - bi * 16
    base = blocks.gather(2, bi.unsqueeze(0).expand(two, M, Q))
    idx = (bi.clamp(max=nblk - 1) * 16).unsqueeze(-1) + ar        # (M, Q, 16)
    vals = buf.gather(2, idx.view(1, M, Q * 16).expand(two, M, Q * 16)).view(two, M, Q, 16)
    part = (vals * (ar < within.unsqueeze(-1))).sum(-1)
    return base + part
