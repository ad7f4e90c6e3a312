"""The numba backend's pass over a batch's points (CPU): loss and segment sums.

For one model (row) and one mini-batch (sorted by input), :func:`point_pass`
returns the batch's mean loss and fills the per-segment sums
``S0_j = sum dl/df`` and ``S1_j = sum dl/df (x - X_j)`` that the chain rule
of :mod:`.algorithm` needs. The end of segment j in the sorted batch is found
by binary search; each segment is then one loop over its points that
computes the per-point loss derivative and loss term and accumulates the
three sums in the same pass (nothing per point is stored).

Speed: the loops are vectorised by LLVM (8 doubles per instruction with
AVX-512). Two things make that possible:

- the sums are compiled with ``fastmath={"reassoc", "contract"}``, so LLVM
  may split them over vector lanes (an order of additions that depends on
  the vector width: the same result on one machine, rounding-level
  differences between CPUs);
- the cross-entropy is a sum of logs, and a log per point would cost more
  than the rest of the point's work. Each probability ``q`` (>= 1e-16, a
  normal number) is split exactly into its binary exponent (an integer sum,
  exact in any order) and its mantissa in [1, 2) (a product, chunks of at
  most 1000 points so it cannot overflow): one log per batch.

The per-point terms (:func:`_ce_prob` ...) are compiled apart, with
``contract`` only (fused multiply-adds), so reassociation never touches the
range reduction of :func:`fast_exp` (PL3), an inlined polynomial exp: libm's
exp is an opaque call that stops vectorisation.
"""
from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from .algorithm import CE, CLIP, LOSS_CAP, PROB
from .jit import njit

# exp(x) = 2^n e^r, r = x - n ln 2 in [-ln 2 / 2, ln 2 / 2]: a degree-13 Taylor
# polynomial (truncation < 5e-18) and 2^n assembled from its bits; within
# 2 ulp of exp for -708 <= x <= 709 (checked against mpmath in the tests).
LN2_HI = 0.693147180369123816490                 # ln 2 to 32 bits: n * LN2_HI is exact
LN2_LO = 1.90821492927058770002e-10              # ln 2 - LN2_HI
INV_LN2 = 1.44269504088896338700
EXP_MIN, EXP_MAX = -708.0, 709.0
_TAYLOR = tuple(1.0 / math.factorial(i) for i in range(14))
LN2 = math.log(2.0)
CHUNK = 1000                         # points per mantissa product: < 2^1000, no overflow
_MANT = np.int64((1 << 52) - 1)      # mantissa bits of a float64
_ONE = np.int64(1023 << 52)          # exponent bits of 1.0


@intrinsic
def _float_from_bits(typingctx, bits):
    """The float64 whose IEEE bits are the int64 ``bits``."""
    sig = types.float64(types.int64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return sig, codegen


@intrinsic
def _bits_of(typingctx, x):
    """The IEEE bits of the float64 ``x`` as an int64."""
    sig = types.int64(types.float64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

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


# exp(r) = (S + r) / (S - r) on |r| <= ln 2 / 2, S = 2 + r^2 P(r^2): the
# rational form of FreeBSD's exp (msun e_exp.c, |S - R| < 2^-59); it lets the
# sigmoid share exp's division.
_P1, _P2, _P3 = 1.66666666666666019037e-01, -2.77777777770155933842e-03, 6.61375632143793436117e-05
_P4, _P5 = -1.65339022054652515390e-06, 4.13813679705723846039e-08
_SHIFT = 1.5 * 2.0 ** 52               # x + _SHIFT rounds x to an integer (|x| < 2^51)
_SHIFT_TO_2N = np.int64(1023 - int(np.float64(_SHIFT).view(np.int64)))   # bits(kd) -> n + 1023


@njit(cache=True, inline="always", error_model="numpy")
def sigmoid_parts(t):
    """(e^t / (1 + e^t), 1 / (1 + e^t)) for t <= 709 (below -708 as at -708),
    each within a few ulp: e^t = 2^n (S + r) / (S - r) and one division."""
    t = EXP_MIN if t < EXP_MIN else t
    kd = t * INV_LN2 + _SHIFT              # n = round(t / ln 2) in the low bits of kd
    n = kd - _SHIFT
    r = (t - n * LN2_HI) - n * LN2_LO
    z = r * r
    S = 2.0 + z * (_P1 + z * (_P2 + z * (_P3 + z * (_P4 + z * _P5))))
    hi = (S + r) * _float_from_bits((_bits_of(kd) + _SHIFT_TO_2N) << 52)
    lo = S - r
    inv = 1.0 / (lo + hi)
    return hi * inv, lo * inv


@njit(cache=True, inline="always", error_model="numpy")
def mantissa_split(q):
    """(biased binary exponent, mantissa in [1, 2)) of a positive normal q: exact."""
    b = _bits_of(q)
    return b >> 52, _float_from_bits((b & _MANT) | _ONE)


# Per-point terms on a segment where f = aj + bj x (the losses of
# algorithm.py): (dl/df, loss term). CE's term is the probability of the
# observed label (a virtual point, sign 0, has 1/2 and dl/df = 0); MSE's is
# the squared error times the point's weight.
@njit(cache=True, error_model="numpy", fastmath={"contract"})
def _ce_prob(x, w, aj, bj):
    # w = 2y - 1: p_y = 1/2 + w (f - 1/2) clipped, d(-log p_y)/df = -w / p_y
    py = 0.5 + w * (aj + bj * x - 0.5)
    py = CLIP if py < CLIP else py
    py = 1.0 - CLIP if py > 1.0 - CLIP else py
    return -w / py, py


@njit(cache=True, error_model="numpy", fastmath={"contract"})
def _ce_logit(x, w, aj, bj):
    # w = -(2y - 1): loss softplus(w f) capped at -log(1e-16); p_y = 1 / (1 + e^(w f))
    tt = w * (aj + bj * x)
    eq, q = sigmoid_parts(LOSS_CAP if tt > LOSS_CAP else tt)
    return w * eq, q


@njit(cache=True, error_model="numpy", fastmath={"contract"})
def _mse_prob(x, y, t2, aj, bj):
    # t2 = 2 (0 for virtual points)
    res = aj + bj * x - y
    g = res * t2
    return g, 0.5 * res * g


@njit(cache=True, error_model="numpy", fastmath={"contract"})
def _mse_logit(x, y, t2, aj, bj):
    one_minus, pr = sigmoid_parts(-(aj + bj * x))       # pr = sigmoid(f)
    res = pr - y
    gw = res * t2
    return gw * pr * one_minus, 0.5 * res * gw


# One loop per segment (chunk): sum g, sum g (x - Xj) and the loss (CE: the
# exponent sum and mantissa product of p_y; MSE: the sum). One function per
# loss and space keeps every loop free of branches.
@njit(cache=True, error_model="numpy", fastmath={"reassoc", "contract"})
def _seg_ce_prob(xs, ws, c0, c1, aj, bj, Xj):
    s0 = s1 = 0.0
    mant = 1.0
    expo = 0
    for i in range(c0, c1):
        g, q = _ce_prob(xs[i], ws[i], aj, bj)
        s0 += g
        s1 += g * (xs[i] - Xj)
        e, m = mantissa_split(q)
        expo += e
        mant *= m
    return s0, s1, mant, expo


@njit(cache=True, error_model="numpy", fastmath={"reassoc", "contract"})
def _seg_ce_logit(xs, ws, c0, c1, aj, bj, Xj):
    s0 = s1 = 0.0
    mant = 1.0
    expo = 0
    for i in range(c0, c1):
        g, q = _ce_logit(xs[i], ws[i], aj, bj)
        s0 += g
        s1 += g * (xs[i] - Xj)
        e, m = mantissa_split(q)
        expo += e
        mant *= m
    return s0, s1, mant, expo


@njit(cache=True, error_model="numpy", fastmath={"reassoc", "contract"})
def _seg_mse_prob(xs, ys, ts, c0, c1, aj, bj, Xj):
    s0 = s1 = tot = 0.0
    for i in range(c0, c1):
        g, lt = _mse_prob(xs[i], ys[i], ts[i], aj, bj)
        s0 += g
        s1 += g * (xs[i] - Xj)
        tot += lt
    return s0, s1, tot


@njit(cache=True, error_model="numpy", fastmath={"reassoc", "contract"})
def _seg_mse_logit(xs, ys, ts, c0, c1, aj, bj, Xj):
    s0 = s1 = tot = 0.0
    for i in range(c0, c1):
        g, lt = _mse_logit(xs[i], ys[i], ts[i], aj, bj)
        s0 += g
        s1 += g * (xs[i] - Xj)
        tot += lt
    return s0, s1, tot


@njit(cache=True, error_model="numpy")
def segment_ends(xs, start, stop, X, k, ends):
    """ends[j] = the end of segment j in the sorted batch xs[start:stop]: the
    first position with xs >= X[j + 1] (numpy's searchsorted, side "left"),
    the last one ``stop``. Branch-free binary searches, all knots in one loop
    so the searches' load latencies overlap."""
    ends[k] = stop
    for j in range(k):
        v = X[j + 1]
        base = start
        n = stop - start
        while n > 1:
            half = n >> 1
            base = base + half if xs[base + half - 1] < v else base
            n -= half
        ends[j] = base + 1 if (n == 1 and xs[base] < v) else base


@njit(cache=True, error_model="numpy")
def point_pass(xs, ws, ts, start, stop, rs, nvirt, k, space, loss, X, a, b, S0, S1, ends):
    """The forward/backward pass over one batch (entries ``start:stop`` of a
    group's batch arrays: inputs ``xs`` increasing, label arrays ``ws``,
    ``ts``): returns the mean loss and fills the per-segment sums
    S0 = sum dl/df and S1 = sum dl/df (x - X_j), divided by the number of
    real points (``rs`` is its inverse; the batch holds ``nvirt`` virtual
    points besides, each with p_y = 1/2 under CE).

    Segment j of the sorted batch ends where the knot X_{j+1} is (a binary
    search; ``ends``: work array). Array views cost reference counting, so
    the loops take the whole arrays and a range of unsigned indices.
    """
    segment_ends(xs, start, stop, X, k, ends)
    i0 = start
    total = 0.0              # MSE: the sum of losses
    mant, expo = 1.0, 0      # CE: product of p_y = mant * 2^expo
    count = 0
    chk = 0.0                # a NaN / inf in the sums makes the loss NaN too
    for j in range(k + 1):
        i1 = ends[j]
        aj, bj, Xj = a[j], b[j], X[j]
        s0 = s1 = 0.0
        c0 = i0
        while c0 < i1:
            c1 = min(c0 + CHUNK, i1)
            # unsigned indices: no negative-index wraparound, so the loops vectorise
            u0, u1 = np.uint64(c0), np.uint64(c1)
            if loss == CE:
                if space == PROB:
                    p0, p1, m, e = _seg_ce_prob(xs, ws, u0, u1, aj, bj, Xj)
                else:
                    p0, p1, m, e = _seg_ce_logit(xs, ws, u0, u1, aj, bj, Xj)
                # m < 2^CHUNK: renormalise the running product (exact)
                e2, m2 = mantissa_split(mant * m)
                mant = m2
                expo += e + e2 - 1023
                count += c1 - c0
            else:
                if space == PROB:
                    p0, p1, lt = _seg_mse_prob(xs, ws, ts, u0, u1, aj, bj, Xj)
                else:
                    p0, p1, lt = _seg_mse_logit(xs, ws, ts, u0, u1, aj, bj, Xj)
                total += lt
            s0 += p0
            s1 += p1
            c0 = c1
        S0[j] = s0 * rs
        S1[j] = s1 * rs
        chk += s0 + s1
        i0 = i1
    chk *= 0.0
    if loss == CE:
        logs = math.log(mant) + (expo - 1023 * count) * LN2
        return -(logs + nvirt * LN2) * rs + chk
    return total * rs + chk


@njit(cache=True, error_model="numpy")
def scratch(K1):
    """Work arrays of one row: per knot (K1 + 1 = k_max + 2) and per segment (K1)."""
    return (np.empty(K1 + 1), np.empty(K1 + 1), np.empty(K1 + 1), np.empty(K1 + 1),
            np.empty(K1 + 1), np.empty(K1), np.empty(K1), np.empty(K1), np.empty(K1),
            np.empty(K1), np.empty(K1 + 1), np.empty(K1 + 1), np.empty(K1),
            np.empty(K1, dtype=np.int64))
