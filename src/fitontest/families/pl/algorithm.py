"""The PL / PL3 training algorithm, stated once (docs/methods/04-pl.md §4.1-§4.4).

Everything the two backends share lives here: the constants, the geometry of
a map (knots = cumulative softmax, heights, PL vs PL3 input space), the
identity initialisation, the definition of the losses (the per-point arrays
they read), the mini-batch rule and its shuffling streams, the chain rule
from the per-segment sums to the parameters, the Adam step and the early
stopping rule. The backends (:mod:`.numba_kernels`, :mod:`.torch_kernels`)
implement only the pass over a batch's points (and, for numba,
:mod:`.numba_train`, the compiled training loop that calls the functions
below and applies the early stopping rule of :class:`TrainingRows`).

Parameters of a model with k interior knots, one row of ``P`` padded to the
largest k (``kmax``; ``K1 = kmax + 1``):

- ``beta = P[r, :k + 1]``: knot gaps in probability space,
  ``t = [0, cumsum(softmax(beta))]``, so ``t_0 = 0``, ``t_{k+1} = 1`` and the
  knots are ordered by construction;
- ``eta = P[r, K1:K1 + k + 2]``: heights; PL uses ``h = sigmoid(eta)`` at the
  knots ``X = t``; PL3 uses ``h = eta`` (logit space) at the knots
  ``X = logit(t)``, computed as ``log t - log(1 - t)`` with ``1 - t`` taken
  from the sum of the gaps to its right (no cancellation near 1) and each of
  ``t`` and ``1 - t`` clipped at 1e-16 like :func:`fitontest.validation.logit`.

The model output is the linear interpolation ``f(x) = a_j + b_j x`` on the
segment ``[X_j, X_{j+1})`` holding the input ``x`` (``x = s`` for PL,
``x = logit(s)`` for PL3); PL predicts ``f``, PL3 ``sigmoid(f)``.

Losses (per point; the backends read the arrays of :func:`point_arrays`):

- PL, CE: ``-log p_y``, ``p_y = 1/2 + (2y - 1)(f - 1/2)`` clipped to
  ``[1e-16, 1 - 1e-16]`` (as the paper's code);
- PL3, CE: ``softplus(-(2y - 1) f)`` capped at ``-log(1e-16)`` (the same clip
  on the probability), its gradient taken exactly from the logit;
- MSE: ``(c_hat - y)^2`` on the probability (PL: ``f``, PL3: ``sigmoid(f)``).

A batch's loss is the mean over its real points. The backward pass needs of
the points only the per-segment sums ``S0_j = sum dl/df`` and
``S1_j = sum dl/df (x - X_j)``; :func:`backward` turns them into the
gradient of (beta, eta).

Rows are independent: every function acts on one row (or row by row), so a
model trained among others equals the model trained alone, bit for bit.
"""
from __future__ import annotations

import math

import numpy as np

from .jit import njit

PROB, LOGIT = 0, 1                 # map input space: PL, PL3
CE, MSE = 0, 1                     # training loss
SPACES = {"prob": PROB, "logit": LOGIT}
LOSSES = {"ce": CE, "mse": MSE}
CLIP = 1e-16                       # probability clip of the losses and of logit()
LOSS_CAP = -math.log(CLIP)         # PL3 cross-entropy per point is capped here
CLIP_HEIGHT = 1e-3                 # PL identity init: eta = logit(clip(t, 1e-3, 1 - 1e-3))
GAP_FLOOR = 1e-16                  # initial knot gaps are floored before log (tied scores)
BETA1, BETA2, EPS = 0.9, 0.999, 1e-8   # Adam: torch.optim.Adam's defaults


# ----------------------------------------------------------------- geometry
@njit(cache=True, inline="always", error_model="numpy")
def geometry(P, r, k, K1, space, exact, p, t, u, X, h, b, a, inv):
    """Knots X, heights h, slopes b, intercepts a (and 1 / segment widths
    ``inv``) of row r with k interior knots; p, t, u: softmax of beta, knots
    and 1 - knots in probability space. ``exact``: the end knots are exactly
    0 and 1 (fitted maps, initialisation); inside the training loop
    ``t_{k+1}`` is the sum of the softmax, 1 up to rounding."""
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
    if exact:
        t[k + 1] = 1.0
    if space == PROB:
        for j in range(k + 2):
            X[j] = t[j]
            h[j] = 1.0 / (1.0 + math.exp(-P[r, K1 + j]))
    else:
        # 1 - t_j as the sum of the gaps to its right: exact near t = 1
        u[k + 1] = 0.0
        for j in range(k, -1, -1):
            u[j] = u[j + 1] + p[j]
        if exact:
            u[0] = 1.0
        for j in range(k + 2):
            X[j] = math.log(max(t[j], CLIP) / max(u[j], CLIP))
            h[j] = P[r, K1 + j]
    for j in range(k + 1):
        d = X[j + 1] - X[j]
        inv[j] = 1.0 / d if d > 0 else 0.0
        b[j] = (h[j + 1] - h[j]) * inv[j]
        a[j] = h[j] - b[j] * X[j]


@njit(cache=True, error_model="numpy")
def geometry_rows(P, ks, space, p, t, u, X, h, b, a, inv):
    """:func:`geometry` of every row into the rows of the (rows, .) arrays;
    entries past a row's k are left as they are."""
    K1 = p.shape[1]
    for r in range(P.shape[0]):
        geometry(P, r, ks[r], K1, space, False, p[r], t[r], u[r], X[r], h[r], b[r], a[r],
                 inv[r])


@njit(cache=True, error_model="numpy")
def maps(P, ks, space):
    """Knots and heights (rows, kmax + 2) of every row's map, exact ends;
    a row's entries past its k repeat its last knot and height."""
    M = P.shape[0]
    K1 = (P.shape[1] - 1) // 2
    knots = np.empty((M, K1 + 1))
    heights = np.empty((M, K1 + 1))
    p, t, u = np.empty(K1), np.empty(K1 + 1), np.empty(K1 + 1)
    b, a, inv = np.empty(K1), np.empty(K1), np.empty(K1)
    for r in range(M):
        k = ks[r]
        geometry(P, r, k, K1, space, True, p, t, u, knots[r], heights[r], b, a, inv)
        knots[r, k + 2:] = knots[r, k + 1]
        heights[r, k + 2:] = heights[r, k + 1]
    return knots, heights


# ------------------------------------------------------------ initialisation
def initial_params(sorted_s, ks, kmax: int, space: int) -> np.ndarray:
    """Parameter rows of the identity maps (docs/methods/04-pl.md §4.2).

    Row r has ``ks[r]`` interior knots at the equal-size quantiles of its
    fitting scores ``sorted_s[r]`` (sorted; ``np.quantile``'s linear method);
    PL heights ``logit(clip(t, 1e-3, 1 - 1e-3))``: the identity between the
    first and the last interior knot, within 1e-3 everywhere; PL3 heights
    equal to the knots (the identity in logit space), so the end heights start
    at +-36.84 and a one-piece PL3 whose slope must change moves slowly at
    lr 0.01 (docs/methods/04-pl.md §4.4: the method as specified, unchanged). Gaps
    are floored at 1e-16 before their log (tied scores).
    """
    K1 = kmax + 1
    P = np.zeros((len(ks), 2 * K1 + 1))
    for r, (s, k) in enumerate(zip(sorted_s, ks)):
        pos = np.linspace(0.0, 1.0, k + 2)[1:-1] * (s.shape[0] - 1)
        lo = np.floor(pos).astype(np.int64)
        hi = np.minimum(lo + 1, s.shape[0] - 1)
        q = s[lo] + (pos - lo) * (s[hi] - s[lo])
        gaps = np.diff(np.concatenate([[0.0], q, [1.0]]))
        P[r, :k + 1] = np.log(np.maximum(gaps, GAP_FLOOR))
    knots, _ = maps(P, np.asarray(ks, dtype=np.int64), space)
    if space == PROB:
        tc = np.clip(knots, CLIP_HEIGHT, 1.0 - CLIP_HEIGHT)
        eta = np.log(tc) - np.log1p(-tc)
    else:
        eta = knots
    used = np.arange(K1 + 1)[None, :] <= np.asarray(ks)[:, None] + 1
    P[:, K1:] = np.where(used, eta, 0.0)
    return P


# -------------------------------------------------------------------- losses
def point_arrays(space: int, loss: int, xs, ys, real):
    """The per-point arrays the losses read: (arrays, index of the one scaled
    by 1 / real points of the batch, or None).

    PL, CE : x, 2y - 1        p_y = 1/2 + (2y - 1)(f - 1/2)
    PL3, CE: x, -(2y - 1)     margin (2y - 1) f
    MSE    : x, y, 2 w        (w: 1 for real points)
    Virtual points (``real == 0``, padding to equal group sizes) have sign 0
    (zero gradient, p_y = 1/2: their log 2 is subtracted by count) and weight 0.
    """
    sg = np.where(real > 0, 2.0 * ys - 1.0, 0.0)
    if loss == CE:
        return ([xs, sg] if space == PROB else [xs, -sg]), None
    return [xs, ys, 2.0 * real], 2


# ----------------------------------------------------------------- backward
@njit(cache=True, inline="always", error_model="numpy")
def backward(k, K1, space, p, t, u, h, b, inv, S0, S1, dh, dX, dp, grad, r):
    """Chain rule from the segment sums to (beta, eta): fills grad[r].

    On segment j, f = h_j + b_j (x - X_j) with b_j = (h_{j+1} - h_j) / dX_j;
    S0_j = sum dl/df and S1_j = sum dl/df (x - X_j) over its points.
    """
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


# --------------------------------------------------------------------- Adam
@njit(cache=True, error_model="numpy")
def _adam(P, m, v, grad, r, j, c1, c2):
    gr = grad[r, j]
    m[r, j] = BETA1 * m[r, j] + (1.0 - BETA1) * gr
    v[r, j] = BETA2 * v[r, j] + (1.0 - BETA2) * gr * gr
    P[r, j] -= c1 * m[r, j] / (math.sqrt(v[r, j]) * c2 + EPS)


@njit(cache=True, error_model="numpy")
def adam_coefficients(step, lr):
    """The bias corrections of Adam step number ``step``: (lr / (1 - beta1^step),
    1 / sqrt(1 - beta2^step)), the same for every row."""
    return lr / (1.0 - BETA1 ** step), 1.0 / math.sqrt(1.0 - BETA2 ** step)


@njit(cache=True, error_model="numpy")
def adam_step(P, m, v, grad, r, k, K1, step, lr):
    """Adam step number ``step`` of row r (the torch.optim.Adam formula, no
    weight decay) on its used entries. One step count serves all rows: they
    start together and a row steps only while it trains."""
    c1, c2 = adam_coefficients(step, lr)
    adam_update(P, m, v, grad, r, k, K1, c1, c2)


@njit(cache=True, inline="always", error_model="numpy")
def adam_update(P, m, v, grad, r, k, K1, c1, c2):
    """:func:`adam_step` with its coefficients (:func:`adam_coefficients`) given."""
    for j in range(k + 1):
        _adam(P, m, v, grad, r, j, c1, c2)
    for j in range(K1, K1 + k + 2):
        _adam(P, m, v, grad, r, j, c1, c2)


@njit(cache=True, error_model="numpy")
def backward_adam_rows(P, m, v, ks, space, p, t, u, h, b, inv, S0, S1, grad, step, lr):
    """:func:`backward` and :func:`adam_step` of every row, from the rows of
    the arrays :func:`geometry_rows` filled and the segment sums."""
    K1 = p.shape[1]
    dh, dX, dp = np.empty(K1 + 1), np.empty(K1 + 1), np.empty(K1)
    for r in range(P.shape[0]):
        backward(ks[r], K1, space, p[r], t[r], u[r], h[r], b[r], inv[r], S0[r], S1[r],
                 dh, dX, dp, grad, r)
        adam_step(P, m, v, grad, r, ks[r], K1, step, lr)


# -------------------------------------------------------------- mini-batches
def batch_layout(n: int, n_batches: int):
    """A group's n points per epoch, shuffled: ``n_batches`` nearly equal
    batches (``numpy.array_split`` sizes n // n_batches or one more: every
    point once per epoch, no tiny remainder batch). Returns (sizes, bounds, label), position i
    of a group's shuffled order going to batch ``label[i]``."""
    counts = np.array([len(c) for c in np.array_split(np.arange(n), n_batches)])
    bounds = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return counts, bounds, np.repeat(np.arange(n_batches), counts).astype(np.int64)


def shuffle_keys(seed: int, group_ids) -> np.ndarray:
    """One shuffling key per group, from (seed, group id): the same batches
    on every device and backend, and for a group trained alone."""
    return np.array([np.random.SeedSequence([int(seed), int(g)])
                     .generate_state(1, dtype=np.uint64)[0] for g in group_ids], dtype=np.uint64)


# Every (group, epoch) has its own random stream, SplitMix64 started from the
# group's key and the epoch, so a group's batches depend on nothing else.
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
def _shuffle_sequential(state, out):
    """Fisher-Yates on ``out`` from the SplitMix64 ``state`` (the index drawn
    by Lemire's multiply-shift with rejection: exactly uniform)."""
    n = out.shape[0]
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
def shuffle_labels(key, epoch, label, out):
    """``out`` = ``label`` in a uniformly random order: :func:`_shuffle_sequential`.

    SplitMix64's t-th output depends only on ``state + t * golden``, so while
    no draw is rejected the swap indices are computed first, in a loop the
    compiler vectorises, and applied after; a rejection is possible only
    where ``low < bound`` (chance about n^2 / 2^33 per shuffle: ~1 % at
    n = 9000), and then the whole shuffle is redone sequentially. Both paths
    give the same permutation."""
    shuffle_labels_into(key, epoch, label, out, np.empty(max(label.shape[0] - 1, 0),
                                                         dtype=np.int64))


@njit(cache=True, error_model="numpy")
def shuffle_labels_into(key, epoch, label, out, js):
    """:func:`shuffle_labels` with the work array ``js`` (>= n - 1 int64) given."""
    state = key ^ (np.uint64(epoch + 1) * _MIX2)
    n = label.shape[0]
    for i in range(n):              # element-wise: no shape check to compile
        out[i] = label[i]
    if n < 2:
        return
    maybe = 0
    for t in range(n - 1):
        bound = np.uint64(n - t)
        z = state + np.uint64(t + 1) * _GOLDEN
        z = (z ^ (z >> _S30)) * _MIX1
        z = (z ^ (z >> _S27)) * _MIX2
        z = z ^ (z >> _S31)
        m = (z >> _S32) * bound
        maybe += (m & _LOW32) < bound
        js[t] = np.int64(m >> _S32)
    if maybe:
        _shuffle_sequential(state, out)
        return
    for t in range(n - 1):
        i = n - 1 - t
        j = js[t]
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


# ------------------------------------------------------------ early stopping
class TrainingRows:
    """The models still training, and the early stopping rule.

    A model whose epoch loss (the mean of its mini-batch losses, each before
    its step: Keras' ``EarlyStopping(monitor="loss")``) has not fallen below
    its best for ``patience`` epochs stops, keeping its current parameters.
    A stopped row is stored and removed from the working arrays (masking
    realised as compaction): it neither updates nor costs anything, and no
    other row is affected. (The torch path uses this class; the numba loop,
    :func:`.numba_train.train`, applies the same rule to its working list.)
    """

    def __init__(self, P, ks, group, patience: int, max_epochs: int, trace: bool = False):
        self.P, self.m, self.v = P, np.zeros_like(P), np.zeros_like(P)
        self.k = np.asarray(ks, dtype=np.int64)
        self.group = np.asarray(group, dtype=np.int64)
        self.idx = np.arange(P.shape[0])
        self.best = np.full(P.shape[0], np.inf)
        self.since = np.zeros(P.shape[0], dtype=np.int64)
        self.patience, self.max_epochs = patience, max_epochs
        self.out_P, self.out_loss = P.copy(), np.full(P.shape[0], np.nan)
        self.out_epochs = np.zeros(P.shape[0], dtype=np.int64)
        self.history: list | None = [] if trace else None

    def end_epoch(self, epoch: int, ep_loss: np.ndarray) -> bool:
        """Apply the rule after ``epoch`` (0-based); True when none is left."""
        improved = ep_loss < self.best
        self.best = np.where(improved, ep_loss, self.best)
        self.since = np.where(improved, 0, self.since + 1)
        stop = self.since >= self.patience
        if self.history is not None:
            self.history.append((self.idx.copy(), ep_loss.copy()))
        last = epoch + 1 == self.max_epochs
        if not (last or stop.any()):
            return False
        done = np.ones_like(stop) if last else stop
        idx = self.idx[done]
        self.out_P[idx] = self.P[done]
        self.out_loss[idx] = ep_loss[done]
        self.out_epochs[idx] = epoch + 1
        keep = ~done
        for key in ("P", "m", "v", "k", "group", "idx", "best", "since"):
            setattr(self, key, getattr(self, key)[keep])
        return not keep.any()
