"""PL_DE: continuous piecewise linear / quadratic fits by pwlf
(docs/methods/03-binary-families.md §3).

``pl_de`` (degree 1, 1..7 segments) and ``pl_de2`` (degree 2, 1..5 segments)
fit ``pwlf.PiecewiseLinFit(s, y, degree)`` to (score, label) pairs; the number
of segments is chosen by 10-fold CV on the held-out squared error of the
clipped map, with the 0.1 % rule; the final map is refitted on all points and
clipped to [0, 1].

Speed (what was chosen): pwlf's own ``fit`` runs ``differential_evolution`` on
an objective that solves an n-row least-squares problem per evaluation
(~1 ms at n = 9000, far more for degree 2), which makes a 10-fold CV take
minutes. Here the breakpoints are searched with the *same* optimiser on an
exact, vectorised SSR (:class:`_FastSSR`): the normal equations of the same
function space (continuous piecewise polynomials on the breaks) in a local,
well-conditioned basis (hat functions, plus one bubble per segment for degree
2), assembled from per-segment moments read off a sparse table over the sorted
data (O(log n) per segment, whole DE generations at once, ``vectorized=True``)
and solved by a batched, pivot-dropping Cholesky (the least-squares SSR even
for coincident breaks). It agrees with an SVD solve of pwlf's own regression
matrix to ~1e-10 relative (pwlf's ``gelsd`` itself is off by ~1e-6 when
breaks coincide with the data ends). The L-BFGS-B polish uses the same
2-point finite-difference gradient as scipy's default, one batched SSR call
per iterate. The breakpoints found are handed to
``pwlf.PiecewiseLinFit.fit_with_breaks`` for the coefficients, so the fitted
model *is* a pwlf model (``pwlf_``) and predictions are pwlf's.

DE settings: the final fit on all points uses pwlf's defaults
(:data:`DE_SETTINGS`: ``best1bin``, ``popsize=50``, ``maxiter=1000``,
``tol=1e-3``, ``atol=1e-4``, ``mutation=(0.5, 1)``, ``recombination=0.7``,
Latin-hypercube init, polish); the 10 x 7 (or 10 x 5) fits inside the CV use
:data:`CV_DE_SETTINGS` (``popsize=15``, ``maxiter=30``, same otherwise)
**(choice)**: with small n the default population does not meet the
tolerance for hundreds of generations (seconds per fit), while the CV only
needs a good fit per segment count. Seeds: the final fit uses ``seed``, fold f
of candidate index c uses ``seed + 1000 f + c``.

``variant="paper"`` (the authors' Experiments_*/pwlf_cv.py and run_method.py;
docs/differences.md): the map is *not* clipped to [0, 1], neither in the CV
score nor in the final estimate (their ``model.predict`` is used raw), and
the folds are scikit-learn's ``KFold(shuffle=True, random_state=seed)``
(theirs: ``seed`` 0). The breakpoint search stays ours (pwlf's own ``fit``
draws its DE seeds from the global NumPy state).
"""
from __future__ import annotations

from functools import partial
from math import comb

import numpy as np

from ..core.selection import complexity_rule, kfold_indices
from . import CalibrationFamily, register
from fitontest.core.runtime import blas_threads
from .binning import paper_kfold_indices

#: pwlf's own ``differential_evolution`` settings: used for the final fit
DE_SETTINGS = dict(strategy="best1bin", maxiter=1000, popsize=50, tol=1e-3,
                   mutation=(0.5, 1), recombination=0.7, polish=True,
                   init="latinhypercube", atol=1e-4)
#: the cheaper search used inside the cross-validation (scipy's default population)
CV_DE_SETTINGS = {**DE_SETTINGS, "popsize": 15, "maxiter": 30}


class _FastSSR:
    """Exact SSR of pwlf's continuous piecewise polynomial regression (degree 1
    or 2), for many breakpoint sets at once.

    The SSR does not depend on the basis of the fitted function space
    (continuous piecewise polynomials on the breaks), so instead of pwlf's
    ill-conditioned truncated-power columns it uses a local, well-conditioned
    one: hat functions at the breaks (+ one "bubble" xi (1 - xi) per segment
    for degree 2, xi the position inside the segment). Its Gram matrix and
    right-hand side need, per segment [b_i, b_{i+1}), the sums of
    (x - b_i)^m and (x - b_i)^m y. These come from a sparse table over the
    sorted data: aligned blocks of 2^j points store the moments about their
    own first point, a segment is a union of O(log n) blocks, and each block's
    moments are shifted to b_i with the binomial formula -- every term is
    non-negative (x >= x_block >= b_i), so there is no cancellation even for
    very narrow segments or tightly clustered scores.
    """

    def __init__(self, x: np.ndarray, y: np.ndarray, degree: int):
        o = np.argsort(x, kind="stable")
        self.x, self.y = x[o], y[o]
        self.n = n = self.x.size
        self.degree = d = int(degree)
        self.b0, self.bn = float(self.x[0]), float(self.x[-1])
        self.yy = float(np.dot(self.y, self.y))
        self.n_x, self.n_y = 2 * d + 1, d + 1
        m_idx = np.arange(self.n_x)
        self._epow = np.clip(m_idx[:, None] - m_idx[None, :], 0, None)
        self._binom = np.array([[comb(m, u) if u <= m else 0 for u in m_idx] for m in m_idx],
                               dtype=np.float64)
        # level 0: moments of each point about itself
        mom = np.zeros((self.n_x + self.n_y, n))
        mom[0] = 1.0
        mom[self.n_x] = self.y
        self.tables = [mom]
        self.anchors = [self.x]
        j = 0
        while (2 << j) <= n:
            prev, anc = self.tables[-1], self.anchors[-1]
            nb = prev.shape[1] // 2
            left, right = prev[:, 0:2 * nb:2], prev[:, 1:2 * nb:2]
            a1, a2 = anc[0:2 * nb:2], anc[1:2 * nb:2]
            self.tables.append(left + self._shift(right, a2 - a1))
            self.anchors.append(a1)
            j += 1
        if d == 1:
            self.local = np.array([[1.0, -1.0], [0.0, 1.0]])             # 1 - xi, xi
        else:
            self.local = np.array([[1.0, -1.0, 0.0], [0.0, 1.0, 0.0], [0.0, 1.0, -1.0]])
        # products of local functions as polynomials: (nf, nf, 2d + 1)
        nf = self.local.shape[0]
        self._local_prod = np.zeros((nf, nf, self.n_x))
        for u in range(d + 1):
            for v in range(d + 1):
                self._local_prod[:, :, u + v] += np.outer(self.local[:, u], self.local[:, v])

    def _shift(self, mom: np.ndarray, delta: np.ndarray) -> np.ndarray:
        """Moments about a point ``delta`` below the block anchor (delta >= 0):
        sum (x - a + delta)^m = sum_u C(m, u) delta^(m - u) sum (x - a)^u."""
        nx, ny = self.n_x, self.n_y
        dp = delta[None, :] ** np.arange(nx)[:, None]                     # (nx, N)
        t = self._binom[:, :, None] * dp[self._epow]                       # (nx, nx, N)
        return np.concatenate((np.einsum("mun,un->mn", t, mom[:nx]),
                               np.einsum("mun,un->mn", t[:ny, :ny], mom[nx:])))

    def _range_moments(self, lo: np.ndarray, hi: np.ndarray, base: np.ndarray) -> np.ndarray:
        """Moments of (x - base) over sorted positions [lo, hi), base <= x there.

        Canonical dyadic cut of [lo, hi): with t the highest bit where lo and hi
        differ and mid = hi with its bits below t cleared, [lo, mid) is one
        aligned block per set bit of mid - lo (smallest first) and [mid, hi) one
        per set bit of hi - mid (largest first). All blocks of all ranges are
        gathered, shifted and summed at once (no loop over levels).
        """
        if not hasattr(self, "_big"):
            self._big = np.concatenate(self.tables, axis=1)
            self._big_anchor = np.concatenate(self.anchors)
            self._offsets = np.cumsum([0] + [tb.shape[1] for tb in self.tables])[:-1]
        shape = lo.shape
        lo, hi, base = lo.ravel(), hi.ravel(), base.ravel()
        diff = lo ^ hi
        top = np.where(diff > 0, np.frexp(diff.astype(np.float64))[1] - 1, 0)
        mid = (hi >> top) << top
        head, tail = (mid - lo)[:, None], (hi - mid)[:, None]
        lev = np.arange(len(self.tables))[None, :]
        h_on = ((head >> lev) & 1).astype(bool)
        h_start = lo[:, None] + (head & ((1 << lev) - 1))
        t_on = ((tail >> lev) & 1).astype(bool)
        t_start = mid[:, None] + ((tail >> (lev + 1)) << (lev + 1))
        rr, ll = np.nonzero(h_on)
        rt, lt = np.nonzero(t_on)
        rid = np.concatenate((rr, rt))
        lvl = np.concatenate((ll, lt))
        start = np.concatenate((h_start[rr, ll], t_start[rt, lt]))
        bid = self._offsets[lvl] + (start >> lvl)
        n_mom = self.n_x + self.n_y
        mom = self._shift(self._big[:, bid], self._big_anchor[bid] - base[rid])
        out = np.stack([np.bincount(rid, weights=mom[m], minlength=lo.size)
                        for m in range(n_mom)])
        return out.reshape((n_mom,) + shape)

    def ssr(self, interior: np.ndarray) -> np.ndarray:
        interior = np.atleast_2d(interior)
        P, k1 = interior.shape
        k = k1 + 1                                                       # segments
        d = self.degree
        b = np.concatenate((np.full((P, 1), self.b0), np.sort(interior, axis=1),
                            np.full((P, 1), self.bn)), axis=1)          # (P, k + 1)
        pos = np.searchsorted(self.x, b, side="left")
        pos[:, -1] = self.n
        lo, hi = pos[:, :-1], pos[:, 1:]                                 # (P, k)
        w = b[:, 1:] - b[:, :-1]
        w = np.where(w > 0, w, 1.0)
        mom = self._range_moments(lo, hi, b[:, :-1])
        inv_w = 1.0 / w
        mx = np.stack([mom[m] * inv_w ** m for m in range(self.n_x)])
        my = np.stack([mom[self.n_x + m] * inv_w ** m for m in range(self.n_y)])
        lg = np.einsum("fgs,spk->pkfg", self._local_prod, mx)              # (P, k, nf, nf)
        lr = np.einsum("fu,upk->pkf", self.local, my)                      # (P, k, nf)
        # global indices: hat functions at the breaks, merged across zero-width
        # segments (coincident breaks keep the function continuous, as in pwlf's
        # basis); bubble of segment i at k + 1 + i
        pos_w = (b[:, 1:] > b[:, :-1]).astype(np.int64)                 # (P, k)
        hat = np.concatenate((np.zeros((P, 1), np.int64), np.cumsum(pos_w, axis=1)), axis=1)
        parts = [hat[:, :-1], hat[:, 1:]]
        if d == 2:
            parts.append(np.broadcast_to(k + 1 + np.arange(k), (P, k)))
        glob = np.stack(parts, axis=2)                                   # (P, k, nf)
        m_all = k + 1 + (k if d == 2 else 0)
        flat = (glob[:, :, :, None] * m_all + glob[:, :, None, :]).reshape(P, -1)
        prow = np.arange(P)[:, None]
        gram = np.bincount((prow * m_all * m_all + flat).ravel(), weights=lg.ravel(),
                           minlength=P * m_all * m_all).reshape(P, m_all, m_all)
        rhs = np.bincount((prow * m_all + glob.reshape(P, -1)).ravel(), weights=lr.ravel(),
                          minlength=P * m_all).reshape(P, m_all)
        return np.maximum(self.yy - _explained(gram, rhs), 0.0)


def _explained(gram: np.ndarray, rhs: np.ndarray, rtol: float = 1e-12) -> np.ndarray:
    """rhs' G^+ rhs for a batch of PSD matrices: Cholesky of the unit-diagonal
    scaled G, vectorised over the batch (loop over the few columns); a pivot
    below ``rtol`` marks a dependent column, which is dropped -- the least
    squares fit on the remaining columns, i.e. the minimum-norm solution's SSR."""
    P, m, _ = gram.shape
    diag = np.einsum("pii->pi", gram)
    scale = 1.0 / np.sqrt(np.where(diag > 0, diag, 1.0))
    a = gram * scale[:, :, None] * scale[:, None, :]
    b = rhs * scale
    low = np.zeros_like(a)
    z = np.zeros_like(b)
    for j in range(m):
        lj = low[:, j, :j]
        piv = a[:, j, j] - np.einsum("pi,pi->p", lj, lj)
        ok = piv > rtol
        root = np.sqrt(np.where(ok, piv, 1.0))
        inv = np.where(ok, 1.0 / root, 0.0)
        low[:, j, j] = np.where(ok, root, 0.0)
        if j + 1 < m:
            below = np.einsum("pki,pi->pk", low[:, j + 1:, :j], lj)
            low[:, j + 1:, j] = (a[:, j + 1:, j] - below) * inv[:, None]
        z[:, j] = (b[:, j] - np.einsum("pi,pi->p", lj, z[:, :j])) * inv
    return np.einsum("pj,pj->p", z, z)


def _fit_pwlf(x, y, degree: int, n_segments: int, seed: int, settings=None):
    """A pwlf model with breakpoints from seeded DE on the fast SSR."""
    import pwlf
    from scipy.optimize import differential_evolution

    b0, bn = float(x.min()), float(x.max())
    if bn <= b0:
        # every score equal: no line can be fitted; the map is the constant
        # mean label **(choice)** (a float in place of the pwlf model)
        return float(np.mean(y))
    model = pwlf.PiecewiseLinFit(x, y, degree=degree)
    if n_segments == 1:
        model.fit_with_breaks([b0, bn])
        return model
    fast = _FastSSR(x, y, degree)

    def objective(v):
        v = np.asarray(v, dtype=np.float64)
        if v.ndim == 1:
            return float(fast.ssr(v[None, :])[0])
        return fast.ssr(v.T)

    bounds = [(b0, bn)] * (n_segments - 1)
    res = differential_evolution(objective, bounds, vectorized=True, updating="deferred",
                                 seed=np.random.default_rng(seed),
                                 **{**(settings or DE_SETTINGS), "polish": partial(_polish, fast)})
    model.fit_with_breaks(np.concatenate(([b0], np.sort(res.x), [bn])))
    return model


def _polish(fast: _FastSSR, func, x0, bounds=None, **kwargs):
    """The L-BFGS-B polish of ``differential_evolution(polish=True)``, with its
    2-point finite-difference gradient (step 1.49e-8 max(1, |x|), backwards at
    the upper bound) evaluated as one batched SSR call per iterate."""
    from scipy.optimize import minimize

    lb, ub = np.asarray(bounds.lb, dtype=np.float64), np.asarray(bounds.ub, dtype=np.float64)

    def fun_and_grad(x):
        h = np.sqrt(np.finfo(np.float64).eps) * np.maximum(1.0, np.abs(x))
        h = np.where(x + h > ub, -h, h)
        f = fast.ssr(np.vstack((x, x + np.diag(h))))
        return float(f[0]), (f[1:] - f[0]) / h

    return minimize(fun_and_grad, x0, jac=True, method="L-BFGS-B", bounds=list(zip(lb, ub)))


def _predict_pwlf(model, s: np.ndarray, clip: bool = True) -> np.ndarray:
    if isinstance(model, float):                       # all fitting scores equal
        return np.full(s.shape, model)
    c = model.predict(s)
    return np.clip(c, 0.0, 1.0) if clip else c


@register("pl_de", degree=1, max_segments=7)
@register("pl_de2", degree=2, max_segments=5)
class PiecewiseDEFamily(CalibrationFamily):
    """Continuous piecewise linear (or quadratic) map fitted by pwlf, segments chosen by CV.

    ``variant``: ``"ours"`` clips the map to [0, 1]; ``"paper"`` does not.

    Fitted: ``n_pieces_`` (segments), ``candidates_``, ``cv_scores_``,
    ``breaks_``, ``pwlf_`` (the pwlf model; the mean label, a float, when all
    fitting scores are equal).
    """

    hyper_attr = "n_pieces_"
    pointwise_predict = False      # pwlf's predict is one BLAS product over the call

    def __init__(self, degree: int = 1, max_segments: int = 7, n_folds: int = 10,
                 tol: float = 1e-3, seed: int = 0, variant: str = "ours"):
        self.degree = degree
        self.max_segments = max_segments
        self.n_folds = n_folds
        self.tol = tol
        self.seed = seed
        self.variant = variant

    def _fit(self, s, y):
        with blas_threads(1):
            self._fit_cv(s, y)

    def _fit_cv(self, s, y):
        if int(self.degree) not in (1, 2):
            raise ValueError(f"degree must be 1 or 2, got {self.degree!r}")
        if self.variant not in ("ours", "paper"):
            raise ValueError(f"variant must be 'ours' or 'paper', got {self.variant!r}")
        if int(self.max_segments) < 1:
            raise ValueError(f"max_segments must be >= 1, got {self.max_segments!r}")
        deg, seed = int(self.degree), int(self.seed)
        clip = self.variant == "ours"
        cands = np.arange(1, int(self.max_segments) + 1)
        split = paper_kfold_indices if self.variant == "paper" else kfold_indices
        folds = split(s.size, int(self.n_folds), seed)
        scores = np.zeros((len(folds), cands.size))
        for f, (train, test) in enumerate(folds):
            for c, k in enumerate(cands):
                model = _fit_pwlf(s[train], y[train], deg, int(k), seed + 1000 * f + c,
                                  CV_DE_SETTINGS)
                scores[f, c] = np.mean((_predict_pwlf(model, s[test], clip)
                                         - y[test]) ** 2)
        self.candidates_ = cands
        self.cv_scores_ = scores.mean(axis=0)
        self.n_pieces_ = int(complexity_rule(cands, self.cv_scores_, tol=float(self.tol)))
        self.pwlf_ = _fit_pwlf(s, y, deg, self.n_pieces_, seed)
        self.breaks_ = (np.array([s[0], s[0]]) if isinstance(self.pwlf_, float)
                        else np.asarray(self.pwlf_.fit_breaks, dtype=np.float64))

    def _predict(self, s):
        return _predict_pwlf(self.pwlf_, s, clip=self.variant == "ours")
