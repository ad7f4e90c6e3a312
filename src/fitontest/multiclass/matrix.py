"""Full-matrix calibrators: MS-ODIR, Dir-ODIR and Dir-L2 (Kull et al. 2019).

All three are ``softmax(W x + b)`` with a K x K matrix ``W`` and intercepts
``b``, fitted by penalised mean NLL (float64, full batch, identity start
``W = I, b = 0``). The objective is smooth and strictly convex for a
positive penalty with only K(K + 1) parameters, so it is minimised by
damped Newton steps with the analytic Hessian (a few steps per warm-started
grid point; L-BFGS needed ~50x more time here). Not converging warns with
``ConvergenceWarning``.

- **MS-ODIR** (``msodir``): ``x = z`` (the logits); penalty
  ``lambda * sum_{i != j} W_ij^2 / (K (K - 1)) + mu * sum_j b_j^2 / K``.
- **Dir-ODIR** (``dirodir``): the same on ``x = log softmax(z)`` (exact, no
  clipping: log-probabilities computed from logits are always finite).
- **Dir-L2** (``dirl2``): ``x = log softmax(z)``; plain L2 towards zero on
  every parameter, ``lambda * (sum W_ij^2 + sum b_j^2) / (K (K + 1))`` — the
  convention of the Dirichlet-calibration reference code (``reg_mu=None``,
  ``reg_norm=True``), one hyper-parameter. (The reference code uses a
  reference-row parametrisation; here all K rows are free, so the penalty is
  symmetric in the classes.)

Hyper-parameters are chosen by shuffled ``n_folds``-fold cross-validation of
the held-out mean NLL over a log grid (the full grid for MS/Dir-ODIR is the
product ``lambdas x mus``); ties go to the strongest penalty. The default
grid is the decades ``10^i, i = -5..6`` — a coarser version of the paper's
``{1, 0.25, 0.5} x 10^i`` (``PAPER_GRID``, 36 values), chosen so that the
144-point ODIR grid fits in the time budget; pass ``lambdas=PAPER_GRID`` for
the paper's grid. Fits along the grid are warm-started from the neighbouring
grid point; the final fit on all points starts from the mean of the fold
solutions at the chosen point. A grid of one value skips cross-validation.

Fitted: ``W_``, ``b_``, ``lambda_`` (and ``mu_`` for ODIR), ``cv_scores_``
(held-out NLL over the grid, NaN when not cross-validated), ``n_iter_``,
``nll_`` (training mean NLL without the penalty).
"""
from __future__ import annotations

import numpy as np

from ..core.validation import check_option
from ..core.selection import complexity_rule, kfold_indices
from . import register
from .base import (MultiClassCalibrator, log_softmax, mean_nll, minimize_newton,
                   warn_not_converged)

#: decades 1e-5 .. 1e6 (default grid; coarser than the paper's)
DEFAULT_GRID: tuple[float, ...] = tuple(float(10.0 ** i) for i in range(-5, 7))
#: the Dirichlet-calibration paper's grid {1, 0.25, 0.5} x 10^i, i = -5..6
PAPER_GRID: tuple[float, ...] = tuple(sorted(m * 10.0 ** i for i in range(-5, 7)
                                             for m in (0.25, 0.5, 1.0)))

INPUTS = ("logits", "logprobs")


def _check_grid(values, name: str) -> np.ndarray:
    g = np.asarray(values, dtype=np.float64).ravel()
    if g.size == 0:
        raise ValueError(f"{name} must contain at least one value")
    if not np.all(np.isfinite(g)) or np.any(g < 0):
        raise ValueError(f"{name} must be finite and >= 0, got {list(values)!r}")
    return g


class _MatrixCalibrator(MultiClassCalibrator):
    """Shared fitting code: subclasses define the penalty and the grid."""

    input: str = "logits"

    # --- hooks ------------------------------------------------------------------
    def _grid(self) -> list[tuple[float, float]]:  # (lambda, mu), simplest model first
        raise NotImplementedError

    def _penalty_weights(self, lam, mu, k) -> np.ndarray:
        """c with penalty sum(c * [W | b]**2); shape (K, K + 1)."""
        raise NotImplementedError

    def _set_hyper(self, lam, mu) -> None:
        raise NotImplementedError

    # --- machinery --------------------------------------------------------------
    def _features(self, z: np.ndarray) -> np.ndarray:
        check_option("input", self.input, INPUTS)
        return z if self.input == "logits" else log_softmax(z)

    def _check_common(self) -> None:
        if not isinstance(self.n_folds, (int, np.integer)) or self.n_folds < 2:
            raise ValueError(f"n_folds must be an integer >= 2, got {self.n_folds!r}")
        check_option("input", self.input, INPUTS)

    def _n_folds_needed(self):
        self._check_common()
        return self.n_folds if len(self._grid()) > 1 else None

    def _solve(self, xt, y, lam, mu, theta0):
        """Penalised NLL fit of ``[W | b]`` on ``xt = [x, 1]`` by Newton's method."""
        n, k1 = xt.shape
        k = k1 - 1
        c = self._penalty_weights(lam, mu, k).ravel()
        rows = np.arange(n)
        # the line search's last point is where the next Newton step starts:
        # its log-softmax is kept for fgh, and the (n, K (K + 1)) products
        # reuse one buffer (the same values; fewer passes over memory)
        last = {}
        r = np.empty((n, k, k1))

        def fun(theta):
            lsm = log_softmax(xt @ theta.reshape(k, k1).T)
            last["theta"], last["lsm"] = theta.copy(), lsm
            return float(-np.mean(lsm[rows, y])) + float(c @ (theta * theta))

        def fgh(theta):
            if "theta" in last and np.array_equal(last["theta"], theta):
                lsm = last["lsm"]
            else:
                lsm = log_softmax(xt @ theta.reshape(k, k1).T)
            nll = -float(np.mean(lsm[rows, y]))
            p = np.exp(lsm)
            g = p.copy()
            g[rows, y] -= 1.0
            grad = (g.T @ xt).ravel() / n + 2.0 * c * theta
            rr = np.multiply(p[:, :, None], xt[:, None, :], out=r).reshape(n, k * k1)
            hess = -(rr.T @ rr)
            blocks = (rr.T @ xt).reshape(k, k1, k1)
            for j in range(k):
                sl = slice(j * k1, (j + 1) * k1)
                hess[sl, sl] += blocks[j]
            hess /= n
            hess[np.diag_indices_from(hess)] += 2.0 * c
            return nll + float(c @ (theta * theta)), grad, hess

        return minimize_newton(fun, fgh, theta0, max_iter=self.max_iter, gtol=self.tol)

    def _fit(self, z, y):
        self._check_common()
        x = self._features(z)
        n, k = x.shape
        x = np.hstack([x, np.ones((n, 1))])
        grid = self._grid()
        x_id = np.hstack([np.eye(k), np.zeros((k, 1))]).ravel()
        cv = np.full(len(grid), np.nan)
        if len(grid) == 1:
            best, start = 0, x_id
        else:
            folds = kfold_indices(x.shape[0], self.n_folds, self.seed)
            order = self._path(grid)
            losses = np.zeros(len(grid))
            sols = np.zeros((len(grid), x_id.size))
            bad = 0
            for tr, te in folds:
                prev = x_id
                for g in order:
                    lam, mu = grid[g]
                    res = self._solve(x[tr], y[tr], lam, mu, prev)
                    bad += not res.converged
                    prev = res.x
                    sols[g] += res.x / len(folds)
                    losses[g] += mean_nll(x[te] @ res.x.reshape(k, k + 1).T, y[te]) * te.size
            cv = losses / x.shape[0]
            if bad:
                warn_not_converged(f"{type(self).__name__} cross-validation",
                                   extra=f" in {bad} of {len(grid) * len(folds)} fits")
            best = complexity_rule(list(range(len(grid))), cv, tol=0.0)
            start = sols[best]
        lam, mu = grid[best]
        res = self._solve(x, y, lam, mu, start)
        if not res.converged:
            warn_not_converged(f"{type(self).__name__} final fit", res)
        wb = res.x.reshape(k, k + 1)
        self.W_ = wb[:, :k].copy()
        self.b_ = wb[:, k].copy()
        self._set_hyper(lam, mu)
        self.cv_scores_ = cv
        self.n_iter_ = res.n_iter
        self.nll_ = mean_nll(x @ wb.T, y)

    @staticmethod
    def _path(grid) -> list[int]:
        """Visit order for warm starts: the grid is row-major (lambda, mu),
        strongest penalties first; rows alternate direction (snake)."""
        lams = []
        for lam, _ in grid:
            if lam not in lams:
                lams.append(lam)
        order = []
        for r, lam in enumerate(lams):
            row = [i for i, (l_, _) in enumerate(grid) if l_ == lam]
            order.extend(row if r % 2 == 0 else row[::-1])
        return order

    def _transform(self, z):
        return self._features(z) @ self.W_.T + self.b_


@register("msodir", input="logits")
@register("dirodir", input="logprobs")
class ODIRCalibrator(_MatrixCalibrator):
    """Matrix scaling with off-diagonal and intercept regularisation (ODIR, Kull et al. 2019).

    ``input="logits"`` is MS-ODIR, ``input="logprobs"`` Dir-ODIR. ``lambdas``
    and ``mus`` are the CV grids (their product is searched).
    """

    def __init__(self, input: str = "logits", lambdas=DEFAULT_GRID, mus=DEFAULT_GRID,
                 n_folds: int = 5, seed: int = 0, max_iter: int = 100, tol: float = 1e-8):
        self.input = input
        self.lambdas = lambdas
        self.mus = mus
        self.n_folds = n_folds
        self.seed = seed
        self.max_iter = max_iter
        self.tol = tol

    def _grid(self):
        lams = np.sort(_check_grid(self.lambdas, "lambdas"))[::-1]
        mus = np.sort(_check_grid(self.mus, "mus"))[::-1]
        return [(float(lam), float(mu)) for lam in lams for mu in mus]

    def _penalty_weights(self, lam, mu, k):
        c = np.full((k, k + 1), lam / (k * (k - 1)))
        c[np.arange(k), np.arange(k)] = 0.0
        c[:, k] = mu / k
        return c

    def _set_hyper(self, lam, mu):
        self.lambda_ = lam
        self.mu_ = mu


@register("dirl2")
class DirichletL2(_MatrixCalibrator):
    """Dirichlet calibration (Kull et al. 2019) with plain L2 regularisation on W and b."""

    input = "logprobs"

    def __init__(self, lambdas=DEFAULT_GRID, n_folds: int = 5, seed: int = 0,
                 max_iter: int = 100, tol: float = 1e-8):
        self.lambdas = lambdas
        self.n_folds = n_folds
        self.seed = seed
        self.max_iter = max_iter
        self.tol = tol

    def _grid(self):
        lams = np.sort(_check_grid(self.lambdas, "lambdas"))[::-1]
        return [(float(lam), float(lam)) for lam in lams]

    def _penalty_weights(self, lam, mu, k):
        return np.full((k, k + 1), lam / (k * (k + 1)))

    def _set_hyper(self, lam, mu):
        self.lambda_ = lam
