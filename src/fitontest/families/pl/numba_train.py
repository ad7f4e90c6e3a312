"""The numba backend's training loop: a whole fit in one compiled call (CPU).

Per epoch: every group with a model still training draws its mini-batches
(:func:`shuffle_gather`: the shuffle of :mod:`.algorithm` and the gather of
the batches' point arrays in one pass), every working row (model) runs its
mini-batches (geometry, :func:`.numba_kernels.point_pass`, chain rule, Adam
step of :mod:`.algorithm`), and the early stopping rule of
:class:`.algorithm.TrainingRows` is applied in place: a stopped row keeps its
parameters, leaves the working list and costs nothing more. Rows are
independent, so the parallel run (rows over threads) equals the serial one
bit for bit, and a row trained among others equals the row trained alone.
"""
from __future__ import annotations

import numpy as np
from numba import prange

from .jit import njit

from .algorithm import adam_coefficients, adam_update, backward, geometry, shuffle_labels_into
from .numba_kernels import point_pass, scratch


@njit(cache=True, error_model="numpy")
def shuffle_gather(keys, epoch, g, label, bounds, gdata, first_virtual, out, rscale, nvirt,
                   lab, js):
    """The batches of :func:`.algorithm.batch_orders`, gathered in the same
    pass, for group g: ``out`` = the point arrays of its members (``gdata[g]``,
    in increasing input order), batch after batch (``bounds``), each batch in
    increasing input order; per batch b ``rscale[b]`` = 1 / its real points
    (1 if none) and ``nvirt[b]`` its virtual points (members from
    ``first_virtual[g]`` on). ``lab``, ``js``: work arrays (n, n - 1)."""
    n = label.shape[0]
    nb = bounds.shape[0] - 1
    fill = np.empty(nb, dtype=np.int64)
    # up to four batches of < 2^16 points: their fill counters packed in one integer
    packed = nb <= 4 and n < 65536
    shuffle_labels_into(keys[g], epoch, label, lab, js)
    for bi in range(nb):
        nvirt[bi] = 0.0
    for i in range(first_virtual[g], n):
        nvirt[lab[i]] += 1.0
    for bi in range(nb):
        rscale[bi] = 1.0 / max(bounds[bi + 1] - bounds[bi] - nvirt[bi], 1.0)
    if packed:
        cnt = np.int64(0)                        # field b: the next position of batch b
        for bi in range(nb):
            cnt += bounds[bi] << (16 * bi)
        if gdata.shape[1] == 2:
            _scatter2(lab, cnt, gdata[g, 0], gdata[g, 1], out[0], out[1])
        else:
            _scatter3(lab, cnt, gdata[g, 0], gdata[g, 1], gdata[g, 2], out[0], out[1], out[2])
    else:
        for bi in range(nb):                     # element-wise: no shape check to compile
            fill[bi] = bounds[bi]
        src = gdata[g]
        for i in range(n):
            d = fill[lab[i]]
            fill[lab[i]] = d + 1
            for a in range(src.shape[0]):
                out[a, d] = src[a, i]


# The counting sort of a group's members into their batches: member i goes to
# the next free position of batch lab[i], kept in 16-bit field lab[i] of cnt.
@njit(cache=True, error_model="numpy")
def _scatter2(lab, cnt, x0, x1, d0, d1):
    for i in range(lab.shape[0]):
        sh = np.int64(lab[i]) << 4
        d = (cnt >> sh) & 0xFFFF
        cnt += np.int64(1) << sh
        d0[d] = x0[i]
        d1[d] = x1[i]


@njit(cache=True, error_model="numpy")
def _scatter3(lab, cnt, x0, x1, x2, d0, d1, d2):
    for i in range(lab.shape[0]):
        sh = np.int64(lab[i]) << 4
        d = (cnt >> sh) & 0xFFFF
        cnt += np.int64(1) << sh
        d0[d] = x0[i]
        d1[d] = x1[i]
        d2[d] = x2[i]


@njit(cache=True, error_model="numpy")
def _train_row(P, m, v, ks, g, bdata, bounds, rscale, nvirt, space, loss, c1, c2,
               ep_loss, grad, r, work):
    """One epoch of row r: every mini-batch ``bounds`` of its group's batches
    ``bdata[g]`` (``c1``, ``c2``: the Adam coefficients of the epoch's steps);
    ep_loss[r] = the mean of its mini-batch losses."""
    K1 = (P.shape[1] - 1) // 2
    nb = bounds.shape[0] - 1
    k = ks[r]
    p, t, u, X, h, bb, aa, inv, S0, S1, dh, dX, dp, ends = work
    xs, ws, ts = bdata[g, 0], bdata[g, 1], bdata[g, bdata.shape[1] - 1]
    lsum = 0.0
    for bi in range(nb):
        geometry(P, r, k, K1, space, False, p, t, u, X, h, bb, aa, inv)
        lsum += point_pass(xs, ws, ts, bounds[bi], bounds[bi + 1], rscale[g, bi], nvirt[g, bi],
                           k, space, loss, X, aa, bb, S0, S1, ends)
        backward(k, K1, space, p, t, u, h, bb, inv, S0, S1, dh, dX, dp, grad, r)
        adam_update(P, m, v, grad, r, k, K1, c1[bi], c2[bi])
    ep_loss[r] = lsum / nb


@njit(cache=True, error_model="numpy")
def _rows_serial(live, P, m, v, ks, bdata, bounds, rscale, nvirt, space, loss, c1, c2,
                 ep_loss, grad):
    """The rows ``live``, all of the group whose batches are ``bdata[0]``."""
    work = scratch((P.shape[1] - 1) // 2)          # every entry is written before read
    for i in range(live.shape[0]):
        _train_row(P, m, v, ks, 0, bdata, bounds, rscale, nvirt, space, loss, c1, c2,
                   ep_loss, grad, live[i], work)


@njit(cache=True, parallel=True, error_model="numpy")
def _rows_parallel(live, P, m, v, ks, rgroup, bdata, bounds, rscale, nvirt, space, loss, c1,
                   c2, ep_loss, grad):
    for i in prange(live.shape[0]):
        _train_row(P, m, v, ks, rgroup[live[i]], bdata, bounds, rscale, nvirt, space, loss, c1,
                   c2, ep_loss, grad, live[i], scratch((P.shape[1] - 1) // 2))


@njit(cache=True, error_model="numpy")
def train(P, ks, rgroup, gdata, first_virtual, keys, label, bounds, space, loss, lr,
          max_epochs, patience, groups, out_P, out_loss, out_epochs, hist):
    """Train every row of P (in place) by the paper's Adam with early
    stopping (:mod:`.algorithm`); a row's final parameters, epoch loss and
    epochs go to ``out_P``, ``out_loss``, ``out_epochs``. ``gdata[g]``: group
    g's point arrays in increasing input order; ``label``: the batch label of
    every position of a group's shuffled order (uint8); ``hist`` (epochs, rows)
    receives every working row's epoch loss when it has rows (a trace).

    ``groups``: None to train serially, or an int64 work array of one entry
    per group to train the rows over threads. A None argument is a type of
    its own, so numba prunes the threaded path from a serial compilation: a
    process that trains serially never compiles it (about 10 s)."""
    M = P.shape[0]
    G, A, n = gdata.shape
    nb = bounds.shape[0] - 1
    m = np.zeros_like(P)
    v = np.zeros_like(P)
    grad = np.zeros_like(P)                 # a row's entries are written before read
    best = np.full(M, np.inf)
    since = np.zeros(M, dtype=np.int64)
    live = np.arange(M)
    n_live = M
    slots = 1 if groups is None else G      # batch buffers: one reused, or one per group
    bdata = np.zeros((slots, A, n))
    rscale = np.ones((slots, nb))
    nvirt = np.zeros((slots, nb))
    ep_loss = np.empty(M)
    c1, c2 = np.empty(nb), np.empty(nb)
    lab = np.empty(n, dtype=label.dtype)
    js = np.empty(max(n - 1, 1), dtype=np.int32)
    has = np.zeros(G, dtype=np.bool_)
    trace = hist.shape[0] > 0
    for epoch in range(max_epochs):
        for bi in range(nb):                # one step count serves every row
            c1[bi], c2[bi] = adam_coefficients(epoch * nb + bi + 1, lr)
        if groups is not None:
            has[:] = False                  # finished groups need no batches
            for i in range(n_live):
                has[rgroup[live[i]]] = True
            n_groups = 0
            for g in range(G):
                if has[g]:
                    groups[n_groups] = g
                    n_groups += 1
            for g in groups[:n_groups]:
                shuffle_gather(keys, epoch, g, label, bounds, gdata, first_virtual, bdata[g],
                               rscale[g], nvirt[g], lab, js)
            _rows_parallel(live[:n_live], P, m, v, ks, rgroup, bdata, bounds, rscale, nvirt,
                           space, loss, c1, c2, ep_loss, grad)
        else:
            # group after group, its batches in one buffer (slot 0) still in the
            # cache when its rows read them (the working rows are in group order)
            i = 0
            while i < n_live:
                g = rgroup[live[i]]
                j = i
                while j < n_live and rgroup[live[j]] == g:
                    j += 1
                shuffle_gather(keys, epoch, g, label, bounds, gdata, first_virtual, bdata[0],
                               rscale[0], nvirt[0], lab, js)
                _rows_serial(live[i:j], P, m, v, ks, bdata, bounds, rscale, nvirt, space, loss,
                             c1, c2, ep_loss, grad)
                i = j
        # early stopping: no decrease below the best for `patience` epochs
        last = epoch + 1 == max_epochs
        keep = 0
        for i in range(n_live):
            r = live[i]
            el = ep_loss[r]
            if trace:
                hist[epoch, r] = el
            if el < best[r]:
                best[r] = el
                since[r] = 0
            else:
                since[r] += 1
            if last or since[r] >= patience:
                for a in range(P.shape[1]):
                    out_P[r, a] = P[r, a]
                out_loss[r] = el
                out_epochs[r] = epoch + 1
            else:
                live[keep] = r
                keep += 1
        n_live = keep
        if n_live == 0:
            break


def run(data, P, k_of, group_of, keys, label, bounds, space, loss, lr, max_epochs, patience,
        n_threads, trace):
    """Train on :class:`.trainer.FitData` ``data``: (out_P, out_loss, out_epochs, history)."""
    from fitontest.core.runtime import numba_threads
    import numba

    gdata = np.ascontiguousarray(data.data[:, data.members].transpose(1, 0, 2))
    first_virtual = (data.members < data.n_real).sum(axis=1).astype(np.int64)
    M = P.shape[0]
    out_P, out_loss = P.copy(), np.full(M, np.nan)
    out_epochs = np.zeros(M, dtype=np.int64)
    hist = np.full((max_epochs if trace else 0, M), np.nan)
    threads = max(1, min(int(n_threads), int(numba.config.NUMBA_NUM_THREADS)))
    nb = len(bounds) - 1
    args = (P, np.asarray(k_of, dtype=np.int64), np.asarray(group_of, dtype=np.int64), gdata,
            first_virtual, keys, np.asarray(label, dtype=np.uint8 if nb <= 256 else np.int64),
            np.asarray(bounds, np.int64),
            space, loss, float(lr), int(max_epochs), int(patience),
            np.empty(gdata.shape[0], dtype=np.int64) if threads > 1 else None, out_P, out_loss,
            out_epochs, hist)
    with np.errstate(divide="ignore", over="ignore"):
        if threads > 1:
            with numba_threads(threads):
                train(*args)
        else:
            train(*args)
    history = None
    if trace:
        history = []
        for e in range(int(out_epochs.max(initial=0))):
            idx = np.flatnonzero(out_epochs > e)      # the rows that trained in epoch e
            history.append((idx, hist[e, idx]))
    return out_P, out_loss, out_epochs, history
