"""Fused CPU kernels of the batched PL / PL3 trainer (numba).

The torch program of :mod:`._pl_batched` spends its time in two places on a
CPU: a dozen full passes over the (models x batch) point arrays per step
(gathers, a cumulative sum for the segment index, the loss, prefix sums), and
~100 small torch/numpy operations per step on the (models x knots) arrays,
which with 4 steps per epoch and up to 1500 epochs is several seconds of
dispatch overhead alone. Here one compiled call runs a whole epoch: for every
working row (one model) and every mini-batch, the geometry of its map, one
pass over the batch points, the chain rule to (beta, eta) and the Adam update.
The pass over the points is per segment of the map (its end in the sorted
batch by binary search): a branch-free elementwise loop that LLVM vectorises
(loss term and derivative; PL3's exp is an inlined polynomial, since libm's
exp is an opaque call that stops vectorisation and costs more than the rest of
the point's work) and a reduction in four interleaved partial sums. The
mathematics is exactly that of :class:`._pl_batched.BatchedTrainer`
(same parameters, batches, Adam formula, early-stopping input), so the two
backends agree to rounding; they are tested against each other and against
autograd.

Two numerical details differ from the torch path, both in the direction of
accuracy: S1 = sum g (x - X_j) is accumulated directly (not as
sum g x - X_j sum g), and PL3's cross-entropy takes 1 / (1 + e^t) for the
probability of the observed label (no 1 - sigmoid cancellation).

Rows are independent: a row's result never depends on which other rows share
the call, so a model trained in a batch equals the model trained alone, bit
for bit, and the parallel version (rows over threads) equals the serial one.
"""
from __future__ import annotations

import math
from contextlib import contextmanager

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.extending import intrinsic

PROB, LOGIT = 0, 1
CE, MSE = 0, 1
CLIP = 1e-16                    # probability clip of the losses and of logit()
LOSS_CAP = -math.log(CLIP)      # PL3 cross-entropy per point is capped here
BETA1, BETA2, EPS = 0.9, 0.999, 1e-8

# exp(x) = 2^n e^r, r = x - n ln 2 in [-ln 2 / 2, ln 2 / 2]: a degree-13 Taylor
# polynomial (truncation < 5e-18) and 2^n assembled from its bits; within
# 2 ulp of exp for -708 <= x <= 709 (checked against mpmath in the tests).
# Inlined and branch-free, so the per-point loops vectorise (libm's exp is an
# opaque call per point).
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


@njit(cache=True, error_model="numpy")
def _geometry(P, r, k, K1, space, p, t, u, X, h, b, a, inv):
    """Knots X, heights h, slopes b, intercepts a of row r (k interior knots);
    p, t, u: softmax of beta, knots and 1 - knots in probability space."""
    mx = P[r, 0]
    for j in range(1, k + 1):
        if P[r, j] > mx:
            mx = P[r, j]
    tot = 0.0
    for j in range(k + 1):
        p[j] = math.exp(P[r, j] - mx)
        tot += p[j]
    for j in range(k + 1):
        p[j] /= tot
    t[0] = 0.0
    for j in range(k + 1):
        t[j + 1] = t[j] + p[j]
    if space == PROB:
        for j in range(k + 2):
            X[j] = t[j]
            h[j] = 1.0 / (1.0 + math.exp(-P[r, K1 + j]))
    else:
        # 1 - t_j as the sum of the gaps to its right: exact near t = 1
        u[k + 1] = 0.0
        for j in range(k, -1, -1):
            u[j] = u[j + 1] + p[j]
        for j in range(k + 2):
            X[j] = math.log(max(t[j], CLIP)) - math.log(max(u[j], CLIP))
            h[j] = P[r, K1 + j]
    for j in range(k + 1):
        d = X[j + 1] - X[j]
        inv[j] = 1.0 / d if d > 0 else 0.0
        b[j] = (h[j + 1] - h[j]) * inv[j]
        a[j] = h[j] - b[j] * X[j]


# Per segment: sum g, sum g (x - Xj) and the loss term (a sum, or a sum of
# logs as logs of products), in four interleaved partial sums: independent
# dependency chains, in a fixed order (the same result on every machine). The
# two versions differ only in the loss term; one branch-free loop each.
@njit(cache=True, error_model="numpy")
def _sums_add(xs, gb, lb, i0, i1, Xj):
    a0 = a1 = a2 = a3 = 0.0          # sum g
    b0 = b1 = b2 = b3 = 0.0          # sum g (x - Xj)
    c0 = c1 = c2 = c3 = 0.0          # sum l
    i = i0
    while i + 4 <= i1:
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
    while i < i1:
        a0 += gb[i]
        b0 += gb[i] * (xs[i] - Xj)
        c0 += lb[i]
        i += 1
    return (a0 + a1) + (a2 + a3), (b0 + b1) + (b2 + b3), (c0 + c1) + (c2 + c3)


@njit(cache=True, error_model="numpy")
def _sums_logprod(xs, gb, lb, i0, i1, Xj):
    a0 = a1 = a2 = a3 = 0.0          # sum g
    b0 = b1 = b2 = b3 = 0.0          # sum g (x - Xj)
    c0 = c1 = c2 = c3 = 1.0          # products of l, logged before they can underflow
    logs = 0.0
    i = i0
    while i + 4 <= i1:
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
    while i < i1:
        a0 += gb[i]
        b0 += gb[i] * (xs[i] - Xj)
        c0 *= lb[i]
        i += 1
    logs += (math.log(c0) + math.log(c1)) + (math.log(c2) + math.log(c3))
    return (a0 + a1) + (a2 + a3), (b0 + b1) + (b2 + b3), logs


# Per-point loss terms on a segment where f = aj + bj x: dl/df into gb, the
# loss term into lb. Branch-free loops that LLVM vectorises.
@njit(cache=True, error_model="numpy")
def _pl_ce(xs, ws, i0, i1, aj, bj, gb, lb):
    # ws = 2y - 1: p_y = 1/2 + w (f - 1/2), d(-log p_y)/df = -w / p_y; lb = p_y
    for i in range(i0, i1):
        w = ws[i]
        py = 0.5 + w * (aj + bj * xs[i] - 0.5)
        py = CLIP if py < CLIP else py
        py = 1.0 - CLIP if py > 1.0 - CLIP else py
        gb[i] = -w / py
        lb[i] = py


@njit(cache=True, error_model="numpy")
def _pl3_ce(xs, ws, i0, i1, aj, bj, gb, lb):
    # ws = -(2y - 1): loss softplus(w f) capped at -log(1e-16); lb = p_y
    for i in range(i0, i1):
        w = ws[i]
        tt = w * (aj + bj * xs[i])
        e = fast_exp(LOSS_CAP if tt > LOSS_CAP else tt)
        q = 1.0 / (1.0 + e)
        gb[i] = w * e * q
        lb[i] = q


@njit(cache=True, error_model="numpy")
def _pl_mse(xs, ws, ts, i0, i1, aj, bj, gb, lb):
    # ws = y, ts = 2 (0 for virtual points); lb = the squared error
    for i in range(i0, i1):
        res = aj + bj * xs[i] - ws[i]
        g = res * ts[i]
        gb[i] = g
        lb[i] = 0.5 * res * g


@njit(cache=True, error_model="numpy")
def _pl3_mse(xs, ws, ts, i0, i1, aj, bj, gb, lb):
    for i in range(i0, i1):
        pr = 1.0 / (1.0 + fast_exp(-(aj + bj * xs[i])))
        res = pr - ws[i]
        gw = res * ts[i]
        lb[i] = 0.5 * res * gw
        gb[i] = gw * pr * (1.0 - pr)


@njit(cache=True, error_model="numpy")
def _point_pass(xs, ws, ts, start, stop, rs, nvirt, k, space, loss, X, a, b, S0, S1, gb, lb):
    """One pass over a batch (entries ``start:stop`` of a group's batch
    arrays: inputs ``xs`` increasing, label arrays ``ws``, ``ts``): returns
    the mean loss and fills the per-segment sums S0 = sum dl/df and
    S1 = sum dl/df (x - X_j), divided by the number of real points (``rs`` is
    its inverse; the batch holds ``nvirt`` virtual points besides).

    Segment j of the sorted batch ends where the knot X_{j+1} is (a binary
    search). Per segment, a branch-free elementwise loop (vectorised by LLVM)
    writes dl/df to ``gb`` and the loss term to ``lb`` (CE: the probability
    of the observed label; a virtual point has 1/2 there and dl/df = 0), then
    :func:`_segment_sums` reduces them.
    """
    i0 = start
    total = 0.0          # sum of losses (MSE) or of log-probabilities (CE)
    for j in range(k + 1):
        i1 = stop if j == k else start + np.searchsorted(xs[start:stop], X[j + 1])
        aj, bj = a[j], b[j]
        if loss == CE and space == PROB:
            _pl_ce(xs, ws, i0, i1, aj, bj, gb, lb)
        elif loss == CE:
            _pl3_ce(xs, ws, i0, i1, aj, bj, gb, lb)
        elif space == PROB:
            _pl_mse(xs, ws, ts, i0, i1, aj, bj, gb, lb)
        else:
            _pl3_mse(xs, ws, ts, i0, i1, aj, bj, gb, lb)
        if loss == CE:
            s0, s1, lsum = _sums_logprod(xs, gb, lb, i0, i1, X[j])
        else:
            s0, s1, lsum = _sums_add(xs, gb, lb, i0, i1, X[j])
        total += lsum
        S0[j] = s0 * rs
        S1[j] = s1 * rs
        i0 = i1
    if loss == CE:
        return -(total + nvirt * math.log(2.0)) * rs
    return total * rs


@njit(cache=True, error_model="numpy")
def _backward(k, K1, space, p, t, u, h, b, inv, S0, S1, dh, dX, dp, grad, r):
    """Chain rule from the segment sums to (beta, eta): fills grad[r]."""
    for j in range(k + 2):
        dh[j] = 0.0
        dX[j] = 0.0
    for j in range(k + 1):
        q = S1[j] * inv[j]
        rr = q * b[j]
        dh[j] += S0[j] - q
        dh[j + 1] += q
        dX[j] += rr - b[j] * S0[j]
        dX[j + 1] -= rr
    dX[0] = 0.0          # only the interior knots depend on beta
    dX[k + 1] = 0.0
    # knots t_j = sum_{i<j} p_i: d/dp_i = sum_{j>i} dX_j (PL); PL3 z_j = log t_j - log u_j
    acc = 0.0
    for i in range(k, -1, -1):
        xj = dX[i + 1]
        if space == LOGIT:
            xj = xj / t[i + 1] if t[i + 1] > CLIP else 0.0
        acc += xj
        dp[i] = acc
    if space == LOGIT:
        acc = 0.0
        for i in range(k + 1):
            acc += dX[i] / u[i] if u[i] > CLIP else 0.0
            dp[i] -= acc
    pd = 0.0
    for i in range(k + 1):
        pd += p[i] * dp[i]
    for i in range(k + 1):
        grad[r, i] = p[i] * (dp[i] - pd)
    for j in range(k + 2):
        grad[r, K1 + j] = dh[j] * h[j] * (1.0 - h[j]) if space == PROB else dh[j]


@njit(cache=True, error_model="numpy")
def _adam(P, m, v, grad, r, j, c1, c2):
    gr = grad[r, j]
    m[r, j] = BETA1 * m[r, j] + (1.0 - BETA1) * gr
    v[r, j] = BETA2 * v[r, j] + (1.0 - BETA2) * gr * gr
    P[r, j] -= c1 * m[r, j] / (math.sqrt(v[r, j]) * c2 + EPS)


@njit(cache=True, error_model="numpy")
def _scratch(K1, B):
    """Work arrays of one row: per knot (K1 + 1 = k_max + 2), per segment
    (K1), per batch point (B)."""
    return (np.empty(K1 + 1), np.empty(K1 + 1), np.empty(K1 + 1), np.empty(K1 + 1),
            np.empty(K1 + 1), np.empty(K1), np.empty(K1), np.empty(K1), np.empty(K1),
            np.empty(K1), np.empty(K1 + 1), np.empty(K1 + 1), np.empty(K1), np.empty(B),
            np.empty(B))


@njit(cache=True, error_model="numpy")
def _train_row(P, m, v, ks, rgroup, bdata, bounds, rscale, nvirt, space, loss, step0, lr,
               ep_loss, grad, r):
    """One epoch of row r: every mini-batch ``bounds`` of its group's order."""
    K1 = (P.shape[1] - 1) // 2
    nb = bounds.shape[0] - 1
    k = ks[r]
    g = rgroup[r]
    p, t, u, X, h, bb, aa, inv, S0, S1, dh, dX, dp, gb, lb = _scratch(K1, bdata.shape[2])
    lsum = 0.0
    for bi in range(nb):
        step = step0 + bi + 1
        _geometry(P, r, k, K1, space, p, t, u, X, h, bb, aa, inv)
        lsum += _point_pass(bdata[g, 0], bdata[g, 1], bdata[g, -1], bounds[bi], bounds[bi + 1],
                            rscale[g, bi], nvirt[g, bi], k, space, loss, X, aa, bb, S0, S1, gb, lb)
        _backward(k, K1, space, p, t, u, h, bb, inv, S0, S1, dh, dX, dp, grad, r)
        # Adam, the torch.optim.Adam formula (default betas and eps)
        c1 = lr / (1.0 - BETA1 ** step)
        c2 = 1.0 / math.sqrt(1.0 - BETA2 ** step)
        for j in range(k + 1):
            _adam(P, m, v, grad, r, j, c1, c2)
        for j in range(K1, K1 + k + 2):
            _adam(P, m, v, grad, r, j, c1, c2)
    ep_loss[r] = lsum / nb


@njit(cache=True, error_model="numpy")
def epoch_serial(P, m, v, ks, rgroup, bdata, bounds, rscale, nvirt, space, loss, step0, lr,
                 ep_loss, grad):
    """Train every row of P for one epoch in place (``step0`` Adam steps done
    before); ep_loss[r] = mean of its mini-batch losses. ``bdata[g]``:
    the point arrays (input, labels) of group g's points, batch after batch
    (``bounds``), each batch in increasing input order; ``rscale[g, b]``:
    1 / real points of group g's batch b, ``nvirt[g, b]`` its virtual points."""
    for r in range(P.shape[0]):
        _train_row(P, m, v, ks, rgroup, bdata, bounds, rscale, nvirt, space, loss, step0, lr,
                   ep_loss, grad, r)


@njit(cache=True, parallel=True, error_model="numpy")
def epoch_parallel(P, m, v, ks, rgroup, bdata, bounds, rscale, nvirt, space, loss, step0,
                   lr, ep_loss, grad):
    """:func:`epoch_serial` with the rows spread over threads (same results)."""
    for r in prange(P.shape[0]):
        _train_row(P, m, v, ks, rgroup, bdata, bounds, rscale, nvirt, space, loss, step0, lr,
                   ep_loss, grad, r)


# Mini-batch shuffling: every (group, epoch) has its own random stream,
# SplitMix64 started from the group's key and the epoch, so a group's batches
# depend on nothing else (a group trained alone sees the same batches).
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_LOW32 = np.uint64(0xFFFFFFFF)
_TWO32 = np.uint64(1 << 32)
_S30, _S27, _S31, _S32 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(32)


@njit(cache=True, error_model="numpy")
def _splitmix(state):
    """(new state, 64 random bits): one SplitMix64 step."""
    state = state + _GOLDEN
    z = state
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    return state, z ^ (z >> _S31)


@njit(cache=True, error_model="numpy")
def shuffle_labels(key, epoch, label, out):
    """``out`` = ``label`` in a uniformly random order (Fisher-Yates; the
    index drawn by Lemire's multiply-shift with rejection: exactly uniform)."""
    state = key ^ (np.uint64(epoch + 1) * _MIX2)
    n = label.shape[0]
    out[:] = label
    for i in range(n - 1, 0, -1):
        bound = np.uint64(i + 1)
        state, z = _splitmix(state)
        m = (z >> _S32) * bound
        low = m & _LOW32
        if low < bound:
            threshold = (_TWO32 - bound) % bound
            while low < threshold:
                state, z = _splitmix(state)
                m = (z >> _S32) * bound
                low = m & _LOW32
        j = np.int64(m >> _S32)
        tmp = out[i]
        out[i] = out[j]
        out[j] = tmp


@njit(cache=True, error_model="numpy")
def batch_orders(keys, epoch, active, label, bounds, members, order):
    """For every active group g: its members (increasing input order) get the
    batch labels ``label`` in a random order, and ``order[g]`` lists the
    members batch after batch, each batch in increasing input order (a
    counting sort: stable by construction)."""
    n = label.shape[0]
    lab = np.empty(n, dtype=label.dtype)
    fill = np.empty(bounds.shape[0] - 1, dtype=np.int64)
    for g in active:
        shuffle_labels(keys[g], epoch, label, lab)
        fill[:] = bounds[:-1]
        row = order[g]
        mem = members[g]
        for i in range(n):
            pos = fill[lab[i]]
            row[pos] = mem[i]
            fill[lab[i]] = pos + 1


@njit(cache=True, error_model="numpy")
def gather_batches(order, active, bounds, data, n_real, out, rscale, nvirt):
    """``out[g]`` = ``data[:, order[g]]`` for the active groups; per batch b
    ``rscale[g, b]`` = 1 / its real points (1 if none) and ``nvirt[g, b]``
    its virtual points (indices >= n_real)."""
    nb = bounds.shape[0] - 1
    for g in active:
        row = order[g]
        for a in range(data.shape[0]):
            src = data[a]
            dst = out[g, a]
            for i in range(row.shape[0]):
                dst[i] = src[row[i]]
        for bi in range(nb):
            nv = 0.0
            for i in range(bounds[bi], bounds[bi + 1]):
                if row[i] >= n_real:
                    nv += 1.0
            nvirt[g, bi] = nv
            rscale[g, bi] = 1.0 / max(bounds[bi + 1] - bounds[bi] - nv, 1.0)


@njit(cache=True, error_model="numpy")
def loss_and_grad(P, ks, bdata, space, loss, lossb, grad):
    """Batch loss and gradient of every row r on its own sorted batch
    ``bdata[r]`` (all points real); for checking the kernels."""
    R = P.shape[0]
    K1 = (P.shape[1] - 1) // 2
    B = bdata.shape[2]
    for r in range(R):
        k = ks[r]
        p, t, u, X, h, bb, aa, inv, S0, S1, dh, dX, dp, gb, lb = _scratch(K1, B)
        _geometry(P, r, k, K1, space, p, t, u, X, h, bb, aa, inv)
        lossb[r] = _point_pass(bdata[r, 0], bdata[r, 1], bdata[r, -1], 0, B, 1.0 / B, 0.0, k,
                               space, loss, X, aa, bb, S0, S1, gb, lb)
        _backward(k, K1, space, p, t, u, h, bb, inv, S0, S1, dh, dX, dp, grad, r)


def max_threads() -> int:
    """Threads numba may use (NUMBA_NUM_THREADS, default: the CPU count)."""
    import numba

    return int(numba.config.NUMBA_NUM_THREADS)


@contextmanager
def threads(n: int):
    """Run the parallel kernels on ``n`` threads, restoring the setting after."""
    import numba

    if n <= 1:
        yield
        return
    old = numba.get_num_threads()
    numba.set_num_threads(n)
    try:
        yield
    finally:
        numba.set_num_threads(old)
