"""The numba backend of the PL / PL3 trainer: one compiled call per epoch (CPU).

The torch program spends its time on a CPU in a dozen full passes over the
(models x batch) point arrays per step and in dispatch overhead; here one
compiled call runs a whole epoch: for every working row (one model) and every
mini-batch, the geometry of its map, one pass over the batch points, the
chain rule and the Adam step (the last three from :mod:`.algorithm`); the
epoch's shuffled batches are gathered in the same pass as the shuffle. The
pass over the points is per segment of the map (its end in the sorted batch
by binary search): a branch-free elementwise loop that LLVM vectorises (loss
term and derivative; PL3's exp is an inlined polynomial, since libm's exp is
an opaque call that stops vectorisation and costs more than the rest of the
point's work) and a reduction in four interleaved partial sums.

Two numerical details differ from the torch kernels, both towards accuracy:
S1 = sum g (x - X_j) is accumulated directly (not as sum g x - X_j sum g),
and PL3's cross-entropy takes 1 / (1 + e^t) for the probability of the
observed label (no 1 - sigmoid cancellation).

Rows are independent, so the parallel epoch (rows over threads) equals the
serial one bit for bit.
"""
from __future__ import annotations

import contextlib
import math

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.extending import intrinsic

from fitontest.core.runtime import numba_threads
from .algorithm import CE, CLIP, LOSS_CAP, PROB, adam_step, backward, geometry, shuffle_labels

# exp(x) = 2^n e^r, r = x - n ln 2 in [-ln 2 / 2, ln 2 / 2]: a degree-13 Taylor
# polynomial (truncation < 5e-18) and 2^n assembled from its bits; within
# 2 ulp of exp for -708 <= x <= 709 (checked against mpmath in the tests).
LN2_HI = 0.693147180369123816490                 # ln 2 to 32 bits: n * LN2_HI is exact
LN2_LO = 1.90821492927058770002e-10              # ln 2 - LN2_HI
INV_LN2 = 1.44269504088896338700
EXP_MIN, EXP_MAX = -708.0, 709.0
_TAYLOR = tuple(1.0 / math.factorial(i) for i in range(14))


@intrinsic
def _float_from_bits(typingctx, bits):
    """The float64 whose IEEE bits are the int64 ``bits``."""
    sig = types.float64(types.int64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return sig, codegen


@njit(cache=True, inline="always", error_model="numpy")
def fast_exp(x):
    """exp(x) with x clipped to [-708, 709] (every use here meets 1 + e^x or
    e^x / (1 + e^x), where e^-708 < 1e-307 is nothing). The polynomial is
    evaluated by Estrin's scheme: short dependency chains."""
    x = EXP_MIN if x < EXP_MIN else x
    x = EXP_MAX if x > EXP_MAX else x
    n = np.floor(x * INV_LN2 + 0.5)
    r = (x - n * LN2_HI) - n * LN2_LO
    c = _TAYLOR
    r2 = r * r
    r4 = r2 * r2
    q0 = (r + c[2] * r2) + r2 * r * (c[3] + c[4] * r)        # e^r - 1 up to r^4
    q1 = (c[5] + c[6] * r) + r2 * (c[7] + c[8] * r)
    q2 = (c[9] + c[10] * r) + r2 * (c[11] + c[12] * r) + r4 * c[13]
    q = q0 + (r4 * r) * (q1 + r4 * q2)
    return (1.0 + q) * _float_from_bits((np.int64(n) + 1023) << 52)


# Per segment: sum g, sum g (x - Xj) and the loss term (a sum, or a sum of
# logs as logs of products), in four interleaved partial sums: independent
# dependency chains, in a fixed order (the same result on every machine). The
# two versions differ only in the loss term; one branch-free loop each.
@njit(cache=True, error_model="numpy")
def _sums_add(xs, gb, lb, Xj):
    a0 = a1 = a2 = a3 = 0.0          # sum g
    b0 = b1 = b2 = b3 = 0.0          # sum g (x - Xj)
    c0 = c1 = c2 = c3 = 0.0          # sum l
    n = xs.shape[0]
    i = 0
    while i + 4 <= n:
        a0 += gb[i]
        a1 += gb[i + 1]
        a2 += gb[i + 2]
        a3 += gb[i + 3]
        b0 += gb[i] * (xs[i] - Xj)
        b1 += gb[i + 1] * (xs[i + 1] - Xj)
        b2 += gb[i + 2] * (xs[i + 2] - Xj)
        b3 += gb[i + 3] * (xs[i + 3] - Xj)
        c0 += lb[i]
        c1 += lb[i + 1]
        c2 += lb[i + 2]
        c3 += lb[i + 3]
        i += 4
    while i < n:
        a0 += gb[i]
        b0 += gb[i] * (xs[i] - Xj)
        c0 += lb[i]
        i += 1
    return (a0 + a1) + (a2 + a3), (b0 + b1) + (b2 + b3), (c0 + c1) + (c2 + c3)


@njit(cache=True, error_model="numpy")
def _sums_logprod(xs, gb, lb, Xj):
    a0 = a1 = a2 = a3 = 0.0          # sum g
    b0 = b1 = b2 = b3 = 0.0          # sum g (x - Xj)
    c0 = c1 = c2 = c3 = 1.0          # products of l, logged before they can underflow
    logs = 0.0
    n = xs.shape[0]
    i = 0
    while i + 4 <= n:
        a0 += gb[i]
        a1 += gb[i + 1]
        a2 += gb[i + 2]
        a3 += gb[i + 3]
        b0 += gb[i] * (xs[i] - Xj)
        b1 += gb[i + 1] * (xs[i + 1] - Xj)
        b2 += gb[i + 2] * (xs[i + 2] - Xj)
        b3 += gb[i + 3] * (xs[i + 3] - Xj)
        c0 *= lb[i]
        c1 *= lb[i + 1]
        c2 *= lb[i + 2]
        c3 *= lb[i + 3]
        # every factor is >= 1e-16: above 1e-200 no product can underflow next
        if min(min(c0, c1), min(c2, c3)) < 1e-200:
            logs += (math.log(c0) + math.log(c1)) + (math.log(c2) + math.log(c3))
            c0 = c1 = c2 = c3 = 1.0
        i += 4
    while i < n:
        a0 += gb[i]
        b0 += gb[i] * (xs[i] - Xj)
        c0 *= lb[i]
        i += 1
    logs += (math.log(c0) + math.log(c1)) + (math.log(c2) + math.log(c3))
    return (a0 + a1) + (a2 + a3), (b0 + b1) + (b2 + b3), logs


# Per-point loss terms on a segment where f = aj + bj x (the losses of
# algorithm.py): dl/df into gb, the loss term into lb. Branch-free loops that
# LLVM vectorises.
@njit(cache=True, error_model="numpy")
def _pl_ce(xs, ws, aj, bj, gb, lb):
    # ws = 2y - 1: p_y = 1/2 + w (f - 1/2), d(-log p_y)/df = -w / p_y; lb = p_y
    for i in range(xs.shape[0]):
        w = ws[i]
        py = 0.5 + w * (aj + bj * xs[i] - 0.5)
        py = CLIP if py < CLIP else py
        py = 1.0 - CLIP if py > 1.0 - CLIP else py
        gb[i] = -w / py
        lb[i] = py


@njit(cache=True, error_model="numpy")
def _pl3_ce(xs, ws, aj, bj, gb, lb):
    # ws = -(2y - 1): loss softplus(w f) capped at -log(1e-16); lb = p_y
    for i in range(xs.shape[0]):
        w = ws[i]
        tt = w * (aj + bj * xs[i])
        e = fast_exp(LOSS_CAP if tt > LOSS_CAP else tt)
        q = 1.0 / (1.0 + e)
        gb[i] = w * e * q
        lb[i] = q


@njit(cache=True, error_model="numpy")
def _pl_mse(xs, ws, ts, aj, bj, gb, lb):
    # ws = y, ts = 2 (0 for virtual points); lb = the squared error
    for i in range(xs.shape[0]):
        res = aj + bj * xs[i] - ws[i]
        g = res * ts[i]
        gb[i] = g
        lb[i] = 0.5 * res * g


@njit(cache=True, error_model="numpy")
def _pl3_mse(xs, ws, ts, aj, bj, gb, lb):
    for i in range(xs.shape[0]):
        pr = 1.0 / (1.0 + fast_exp(-(aj + bj * xs[i])))
        res = pr - ws[i]
        gw = res * ts[i]
        lb[i] = 0.5 * res * gw
        gb[i] = gw * pr * (1.0 - pr)


@njit(cache=True, error_model="numpy")
def point_pass(xs, ws, ts, start, stop, rs, nvirt, k, space, loss, X, a, b, S0, S1, gb, lb):
    """The forward/backward pass over one batch (entries ``start:stop`` of a
    group's batch arrays: inputs ``xs`` increasing, label arrays ``ws``,
    ``ts``): returns the mean loss and fills the per-segment sums
    S0 = sum dl/df and S1 = sum dl/df (x - X_j), divided by the number of
    real points (``rs`` is its inverse; the batch holds ``nvirt`` virtual
    points besides).

    Segment j of the sorted batch ends where the knot X_{j+1} is (a binary
    search). Per segment, a branch-free elementwise loop writes dl/df to
    ``gb`` and the loss term to ``lb`` (CE: the probability of the observed
    label; a virtual point has 1/2 there and dl/df = 0), then a reduction.
    """
    i0 = start
    total = 0.0          # sum of losses (MSE) or of log-probabilities (CE)
    for j in range(k + 1):
        i1 = stop if j == k else start + np.searchsorted(xs[start:stop], X[j + 1])
        aj, bj = a[j], b[j]
        # the kernels loop over views from index 0: indices the compiler knows
        # to be non-negative need no negative-index wraparound, so the loops
        # vectorise (a per-lane wraparound select made LLVM gather, scalarised
        # without AVX2: the PL3 pass ran 2.8x slower; same operations either way)
        xv, wv, gv, lv = xs[i0:i1], ws[i0:i1], gb[i0:i1], lb[i0:i1]
        if loss == CE and space == PROB:
            _pl_ce(xv, wv, aj, bj, gv, lv)
        elif loss == CE:
            _pl3_ce(xv, wv, aj, bj, gv, lv)
        elif space == PROB:
            _pl_mse(xv, wv, ts[i0:i1], aj, bj, gv, lv)
        else:
            _pl3_mse(xv, wv, ts[i0:i1], aj, bj, gv, lv)
        if loss == CE:
            s0, s1, lsum = _sums_logprod(xv, gv, lv, X[j])
        else:
            s0, s1, lsum = _sums_add(xv, gv, lv, X[j])
        total += lsum
        S0[j] = s0 * rs
        S1[j] = s1 * rs
        i0 = i1
    if loss == CE:
        return -(total + nvirt * math.log(2.0)) * rs
    return total * rs


@njit(cache=True, error_model="numpy")
def scratch(K1, B):
    """Work arrays of one row: per knot (K1 + 1 = k_max + 2), per segment
    (K1), per batch point (B)."""
    return (np.empty(K1 + 1), np.empty(K1 + 1), np.empty(K1 + 1), np.empty(K1 + 1),
            np.empty(K1 + 1), np.empty(K1), np.empty(K1), np.empty(K1), np.empty(K1),
            np.empty(K1), np.empty(K1 + 1), np.empty(K1 + 1), np.empty(K1), np.empty(B),
            np.empty(B))


@njit(cache=True, error_model="numpy")
def _train_row(P, m, v, ks, rgroup, bdata, bounds, rscale, nvirt, space, loss, step0, lr,
               ep_loss, grad, r, work):
    """One epoch of row r: every mini-batch ``bounds`` of its group's order
    (``work``: the arrays of :func:`scratch`)."""
    K1 = (P.shape[1] - 1) // 2
    nb = bounds.shape[0] - 1
    k = ks[r]
    g = rgroup[r]
    p, t, u, X, h, bb, aa, inv, S0, S1, dh, dX, dp, gb, lb = work
    lsum = 0.0
    for bi in range(nb):
        geometry(P, r, k, K1, space, False, p, t, u, X, h, bb, aa, inv)
        lsum += point_pass(bdata[g, 0], bdata[g, 1], bdata[g, -1], bounds[bi], bounds[bi + 1],
                           rscale[g, bi], nvirt[g, bi], k, space, loss, X, aa, bb, S0, S1, gb, lb)
        backward(k, K1, space, p, t, u, h, bb, inv, S0, S1, dh, dX, dp, grad, r)
        adam_step(P, m, v, grad, r, k, K1, step0 + bi + 1, lr)
    ep_loss[r] = lsum / nb


@njit(cache=True, error_model="numpy")
def epoch_serial(P, m, v, ks, rgroup, bdata, bounds, rscale, nvirt, space, loss, step0, lr,
                 ep_loss, grad):
    """Train every row of P for one epoch in place (``step0`` Adam steps done
    before); ep_loss[r] = mean of its mini-batch losses. ``bdata[g]``:
    the point arrays (input, labels) of group g's points, batch after batch
    (``bounds``), each batch in increasing input order; ``rscale[g, b]``:
    1 / real points of group g's batch b, ``nvirt[g, b]`` its virtual points."""
    work = scratch((P.shape[1] - 1) // 2, bdata.shape[2])     # every entry is written before read
    for r in range(P.shape[0]):
        _train_row(P, m, v, ks, rgroup, bdata, bounds, rscale, nvirt, space, loss, step0, lr,
                   ep_loss, grad, r, work)


@njit(cache=True, parallel=True, error_model="numpy")
def epoch_parallel(P, m, v, ks, rgroup, bdata, bounds, rscale, nvirt, space, loss, step0,
                   lr, ep_loss, grad):
    """:func:`epoch_serial` with the rows spread over threads (same results)."""
    for r in prange(P.shape[0]):
        _train_row(P, m, v, ks, rgroup, bdata, bounds, rscale, nvirt, space, loss, step0, lr,
                   ep_loss, grad, r, scratch((P.shape[1] - 1) // 2, bdata.shape[2]))


@njit(cache=True, error_model="numpy")
def shuffle_gather(keys, epoch, active, label, bounds, members, data, n_real, out, rscale,
                   nvirt):
    """The batches of :func:`.algorithm.batch_orders`, gathered in the same
    pass: ``out[g]`` = the point arrays of group g's members (``data[g]``,
    in increasing input order), batch after batch (each in increasing input
    order), for the active groups; per batch
    b ``rscale[g, b]`` = 1 / its real points (1 if none) and ``nvirt[g, b]``
    its virtual points (indices >= n_real). Every member is written straight
    to its place (no order array written and read back)."""
    n = label.shape[0]
    nb = bounds.shape[0] - 1
    lab = np.empty(n, dtype=label.dtype)
    fill = np.empty(nb, dtype=np.int64)
    dest = np.empty(n, dtype=np.int64)
    for g in active:
        shuffle_labels(keys[g], epoch, label, lab)
        fill[:] = bounds[:-1]
        nvirt[g, :] = 0.0
        mem = members[g]
        for i in range(n):               # member i goes to position dest[i]
            bi = lab[i]
            dest[i] = fill[bi]
            fill[bi] += 1
            if mem[i] >= n_real:
                nvirt[g, bi] += 1.0
        for a in range(data.shape[1]):   # one array at a time: contiguous 1-D loops
            src, dst = data[g, a], out[g, a]
            for i in range(n):
                dst[dest[i]] = src[i]
        for bi in range(nb):
            rscale[g, bi] = 1.0 / max(bounds[bi + 1] - bounds[bi] - nvirt[g, bi], 1.0)


class NumbaEpochs:
    """The epochs of a fit on the fused kernels, rows over ``n_threads``."""

    def __init__(self, problem, bounds, space: int, loss: int, lr: float, n_threads: int):
        import numba

        self.problem, self.bounds = problem, bounds
        self.space, self.loss, self.lr = space, loss, lr
        self.n_threads = max(1, min(int(n_threads), int(numba.config.NUMBA_NUM_THREADS)))
        G, nmax = problem.G, problem.nmax
        n_batches = bounds.shape[0] - 1
        self.bdata = np.zeros((G, problem.data.shape[0], nmax))
        self.rscale = np.ones((G, n_batches))
        self.nvirt = np.zeros((G, n_batches))
        self.grad = np.zeros((0, 0))
        # every group's member arrays once, in order: the gather reads them sequentially
        self.gdata = np.ascontiguousarray(problem.data[:, problem.members].transpose(1, 0, 2))

    def threads(self):
        # numba's thread pool is started only when a parallel fit asks for it
        return numba_threads(self.n_threads) if self.n_threads > 1 else contextlib.nullcontext()

    def epoch(self, rows, keys, epoch: int, label, active, step0: int) -> np.ndarray:
        """Epoch ``epoch`` of every working row (in place; the batches of
        :func:`.algorithm.batch_orders`); their epoch losses."""
        prob = self.problem
        shuffle_gather(keys, epoch, active, label, self.bounds, prob.members, self.gdata,
                       prob.n_real, self.bdata, self.rscale, self.nvirt)
        ep_loss = np.empty(rows.P.shape[0])
        if self.grad.shape != rows.P.shape:
            self.grad = np.zeros_like(rows.P)     # a row's entries are written before read
        grad = self.grad
        run = epoch_parallel if self.n_threads > 1 else epoch_serial
        run(rows.P, rows.m, rows.v, rows.k, rows.group, self.bdata, self.bounds, self.rscale,
            self.nvirt, self.space, self.loss, step0, self.lr, ep_loss, grad)
        return ep_loss
