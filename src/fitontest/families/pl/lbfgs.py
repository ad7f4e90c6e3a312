"""Our PL / PL3 optimiser (``variant="ours"``, docs/methods/04-pl.md §4.8): full-batch L-BFGS.

The same model, initialisation and training loss as the paper's Adam path
(:mod:`.algorithm`), minimised per model by limited-memory BFGS (Nocedal &
Wright 2006, Alg. 7.4/7.5) over all its parameters (knot logits beta and
heights eta, at most 2 * 16 + 1) on the whole training fold at once, with a
backtracking (Armijo) line search. A map has so few parameters that a
quasi-Newton step over the full fold is cheap, and it reaches the optimum of
the training loss in tens of passes where Adam at lr 0.01 needs hundreds to
1500 (and stops early by patience, away from it).

An evaluation of the loss and its gradient is one pass over the fold's
points with the kernels of the Adam path (:func:`.numba_kernels.point_pass`
on the sorted fold, :func:`.algorithm.backward`); ``n_epochs_`` counts these
passes. Rows (models) are independent and spread over threads, bit for bit
the serial result.
"""
from __future__ import annotations

import math

import numpy as np
from numba import prange

from .jit import njit

from .algorithm import backward, geometry
from .numba_kernels import point_pass, scratch

MEMORY = 10          # (s, y) pairs kept
ARMIJO = 1e-4        # sufficient decrease constant of the line search
FTOL = 1e-10         # stop when an iteration lowers the loss by < FTOL * max(|f|, 1) ...
GTOL = 1e-8          # ... or the largest gradient entry is below GTOL
MAX_MOVE = 0.5       # no parameter moves more than this in one iteration


@njit(cache=True, error_model="numpy")
def _loss_grad(Q, k, K1, space, loss, xs, ws, ts, n, rs, nvirt, work, grad):
    """Mean training loss of the parameter row Q[0] and its gradient in grad[0]."""
    p, t, u, X, h, bb, aa, inv, S0, S1, dh, dX, dp, ends = work
    geometry(Q, 0, k, K1, space, False, p, t, u, X, h, bb, aa, inv)
    f = point_pass(xs, ws, ts, 0, n, rs, nvirt, k, space, loss, X, aa, bb, S0, S1, ends)
    backward(k, K1, space, p, t, u, h, bb, inv, S0, S1, dh, dX, dp, grad, 0)
    return f


@njit(cache=True, error_model="numpy")
def _dot(a, b):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * b[i]
    return s


@njit(cache=True, error_model="numpy")
def lbfgs_row(P, r, k, gdata, rs, nvirt, space, loss, max_evals):
    """Minimise the training loss of row r of P in place; returns (loss, passes)."""
    L = P.shape[1]
    K1 = (L - 1) // 2
    n = gdata.shape[1]
    xs, ws, ts = gdata[0], gdata[1], gdata[gdata.shape[0] - 1]
    work = scratch(K1)
    x = np.zeros((1, L))
    xt = np.zeros((1, L))
    g = np.zeros((1, L))
    gt = np.zeros((1, L))
    x[0, :] = P[r]
    S = np.zeros((MEMORY, L))
    Y = np.zeros((MEMORY, L))
    rho = np.zeros(MEMORY)
    alpha = np.zeros(MEMORY)
    d = np.empty(L)
    f = _loss_grad(x, k, K1, space, loss, xs, ws, ts, n, rs, nvirt, work, g)
    evals = 1
    used = 0
    head = 0                                   # next slot of the ring of pairs
    while evals < max_evals:
        gmax = 0.0
        for i in range(L):
            gmax = max(gmax, abs(g[0, i]))
        if gmax < GTOL:
            break
        # two-loop recursion: d = -H g
        for i in range(L):
            d[i] = -g[0, i]
        for j in range(used):
            m = (head - 1 - j) % MEMORY
            alpha[m] = rho[m] * _dot(S[m], d)
            for i in range(L):
                d[i] -= alpha[m] * Y[m, i]
        if used > 0:
            m = (head - 1) % MEMORY
            gamma = _dot(S[m], Y[m]) / _dot(Y[m], Y[m])
        else:
            gamma = 1.0 / math.sqrt(_dot(g[0], g[0]))     # first step of length 1
        for i in range(L):
            d[i] *= gamma
        for j in range(used - 1, -1, -1):
            m = (head - 1 - j) % MEMORY
            beta = rho[m] * _dot(Y[m], d)
            for i in range(L):
                d[i] += (alpha[m] - beta) * S[m, i]
        gd = _dot(g[0], d)
        if not gd < 0.0:                        # not a descent direction: restart
            used = 0
            for i in range(L):
                d[i] = -g[0, i] / math.sqrt(_dot(g[0], g[0]))
            gd = _dot(g[0], d)
        # backtracking line search (Armijo), halving with a quadratic guess,
        # from a step that moves no parameter by more than MAX_MOVE: a long
        # quasi-Newton step can push a knot onto an end knot (softmax
        # saturated), where its gradient vanishes and the piece is lost
        dmax = 0.0
        for i in range(L):
            dmax = max(dmax, abs(d[i]))
        step = min(1.0, MAX_MOVE / dmax) if dmax > 0 else 1.0
        ft = np.inf
        while evals < max_evals:
            for i in range(L):
                xt[0, i] = x[0, i] + step * d[i]
            gt[0, :] = 0.0
            ft = _loss_grad(xt, k, K1, space, loss, xs, ws, ts, n, rs, nvirt, work, gt)
            evals += 1
            if ft <= f + ARMIJO * step * gd:
                break
            q = -gd * step * step / (2.0 * (ft - f - gd * step)) if math.isfinite(ft) else 0.0
            step = min(max(q, 0.1 * step), 0.5 * step)
        if not ft <= f + ARMIJO * step * gd:
            break                               # no acceptable step within the budget
        sy = 0.0
        yy = 0.0
        for i in range(L):
            S[head, i] = xt[0, i] - x[0, i]
            Y[head, i] = gt[0, i] - g[0, i]
            sy += S[head, i] * Y[head, i]
            yy += Y[head, i] * Y[head, i]
        if sy > 1e-12 * yy:                     # keep H positive definite
            rho[head] = 1.0 / sy
            head = (head + 1) % MEMORY
            used = min(used + 1, MEMORY)
        done = f - ft <= FTOL * max(abs(f), 1.0)
        x[0, :] = xt[0]
        g[0, :] = gt[0]
        f = ft
        if done:
            break
    P[r] = x[0]
    return f, evals


@njit(cache=True, error_model="numpy")
def lbfgs_serial(P, ks, rgroup, gdata, rscale, nvirt, space, loss, max_evals, out_loss,
                 out_evals):
    """:func:`lbfgs_row` of every row of P; ``gdata[g]``: group g's point
    arrays in increasing input order, ``rscale[g]`` 1 / its real points,
    ``nvirt[g]`` its virtual points."""
    for r in range(P.shape[0]):
        g = rgroup[r]
        f, e = lbfgs_row(P, r, ks[r], gdata[g], rscale[g], nvirt[g], space, loss, max_evals)
        out_loss[r] = f
        out_evals[r] = e


@njit(cache=True, parallel=True, error_model="numpy")
def lbfgs_parallel(P, ks, rgroup, gdata, rscale, nvirt, space, loss, max_evals, out_loss,
                   out_evals):
    """:func:`lbfgs_serial` with the rows spread over threads (same results)."""
    for r in prange(P.shape[0]):
        g = rgroup[r]
        f, e = lbfgs_row(P, r, ks[r], gdata[g], rscale[g], nvirt[g], space, loss, max_evals)
        out_loss[r] = f
        out_evals[r] = e
