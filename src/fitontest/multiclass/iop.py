"""Intra order-preserving calibration (Rahimi et al., NeurIPS 2020).

Rahimi et al. show that a map f: R^K -> R^K keeps the order of the entries
of every logit vector (intra order-preserving) iff it can be written as
``f(z) = S(z)^-1 U w(z)``: sort ``z`` decreasingly (permutation ``S(z)``),
build the sorted outputs as reverse cumulative sums (``U`` upper-triangular
ones) of increments ``w`` that are positive exactly where the sorted logits
strictly decrease, and undo the sort. Their parametrisation is
``w_i = sigma(m(z))_i * (s_i - s_{i+1})`` with ``s`` the sorted logits,
``sigma`` a positive function and ``m`` a small network. Here:

    f_sorted_1 = 0,  f_sorted_i = -sum_{j < i} softplus(m_j(u)) * (s_j - s_{j+1})

(the value of the last increment, which shifts every logit equally, does not
change softmax and is fixed). The argmax, and the whole ranking, is therefore
kept; ties stay ties.

- ``iop_oi`` (order-invariant, ``variant="oi"``): ``m`` sees only the sorted
  logits, as the gaps to the top logit ``u = s_1 - s_{2..K}`` (K - 1 values),
  so permuting the classes permutes the outputs (f(Pz) = P f(z)).
- ``iop_op`` (order-preserving, ``variant="op"``): ``m`` sees ``u = max(z) -
  z`` in the original class order (K values), so it may treat classes
  differently; the ranking is still preserved.

Choices (the paper tunes the architecture per data set; here it is fixed):
``m`` is one hidden layer of ``hidden`` tanh units (16) with K - 1 outputs;
inputs standardised by the training mean/std of each feature; output layer
initialised to zero weights and bias ``log(e - 1)`` so every
``softplus = 1`` and the start is exactly the identity map (the uncalibrated
model; temperature scaling is the constant-``m`` special case); hidden layer
initialised from a seeded normal (std ``1/sqrt(d_in)``). Training: mean NLL
plus ``alpha * (||W1||^2 + ||W2||^2)`` (``alpha = 1e-2``, biases free; 1e-3 overfitted
5,000 validation points in our checks), float64,
full batch, scipy L-BFGS on the flattened parameters with torch autograd
gradients, at most ``max_iter`` iterations; hitting the cap warns with
``ConvergenceWarning``.

Fitted: ``coefs_`` ([W1, W2]), ``intercepts_`` ([b1, b2]), ``feature_mean_``,
``feature_scale_``, ``n_iter_``, ``loss_``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from fitontest.core.validation import check_option
from fitontest.core.extras import require
from fitontest.core.runtime import torch_threads
from . import register
from .base import MultiClassCalibrator, minimize_lbfgs, warn_not_converged

if TYPE_CHECKING:           # annotations only: torch is imported on first use (_torch)
    import torch

VARIANTS = ("oi", "op")
_SOFTPLUS_ONE = float(np.log(np.e - 1.0))  # softplus(_SOFTPLUS_ONE) == 1


def _torch():
    """torch, imported on first use (an optional dependency: the ``torch`` extra)."""
    require("torch", "the intra order-preserving calibrator (iop_oi, iop_op)")
    import torch

    return torch


def _sorted(z: torch.Tensor):
    """Decreasing sort. Stability is not needed: tied logits get a zero gap,
    hence identical outputs, whichever order the sort leaves them in."""
    torch = _torch()
    s, idx = torch.sort(z, dim=1, descending=True)
    return s, idx


@register("iop_oi", variant="oi")
@register("iop_op", variant="op")
class IntraOrderPreserving(MultiClassCalibrator):
    """Intra order-preserving calibration (Rahimi et al. 2020): a small network on sorted logits.

    ``variant="oi"`` (order-invariant) or ``"op"`` (sees the classes' own order);
    the module docstring has the details.
    """

    def __init__(self, variant: str = "oi", hidden: int = 16, alpha: float = 1e-2,
                 max_iter: int = 1000, tol: float = 1e-5, seed: int = 0):
        self.variant = variant
        self.hidden = hidden
        self.alpha = alpha
        self.max_iter = max_iter
        self.tol = tol
        self.seed = seed

    # ------------------------------------------------------------------ helpers
    def _raw_features(self, z: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        if self.variant == "oi":
            return s[:, :1] - s[:, 1:]
        return s[:, :1] - z

    @staticmethod
    def _forward(u, s, w1, b1, w2, b2):
        """Calibrated logits in sorted order (top one at 0)."""
        torch = _torch()
        m = torch.addmm(b2, torch.tanh(torch.addmm(b1, u, w1.T)), w2.T)
        inc = torch.nn.functional.softplus(m) * (s[:, :-1] - s[:, 1:])
        return torch.cat([torch.zeros_like(s[:, :1]), -torch.cumsum(inc, dim=1)], dim=1)

    def _check_params(self, k: int) -> None:
        check_option("variant", self.variant, VARIANTS)
        if not isinstance(self.hidden, (int, np.integer)) or self.hidden < 1:
            raise ValueError(f"hidden must be a positive integer, got {self.hidden!r}")
        if not np.isfinite(self.alpha) or self.alpha < 0:
            raise ValueError(f"alpha must be finite and >= 0, got {self.alpha!r}")

    # ------------------------------------------------------------------ fit
    def _fit(self, z, y):
        n, k = z.shape
        self._check_params(k)
        torch = _torch()
        zt = torch.from_numpy(z)
        s, idx = _sorted(zt)
        # position of the true class in the sorted order
        rank = torch.argmax((idx == torch.from_numpy(y)[:, None]).to(torch.int8), dim=1)
        u_raw = self._raw_features(zt, s)
        mean = u_raw.mean(dim=0)
        scale = u_raw.std(dim=0)
        scale = torch.where(scale > 1e-12, scale, torch.ones_like(scale))
        u = (u_raw - mean) / scale
        d_in, h, d_out = u.shape[1], int(self.hidden), k - 1

        rng = np.random.default_rng(self.seed)
        shapes = [(h, d_in), (h,), (d_out, h), (d_out,)]
        sizes = [int(np.prod(sh)) for sh in shapes]
        p0 = np.concatenate([rng.normal(0.0, 1.0 / np.sqrt(d_in), size=sizes[0]),
                             np.zeros(sizes[1]), np.zeros(sizes[2]),
                             np.full(sizes[3], _SOFTPLUS_ONE)])
        splits = np.cumsum(sizes)[:-1]
        rows = torch.arange(n)
        alpha = float(self.alpha)

        def unpack(theta):
            parts = torch.tensor_split(theta, splits.tolist())
            return [p.reshape(sh) for p, sh in zip(parts, shapes)]

        def fun(theta_np):
            theta = torch.from_numpy(theta_np).requires_grad_(True)
            w1, b1, w2, b2 = unpack(theta)
            f = self._forward(u, s, w1, b1, w2, b2)
            nll = (torch.logsumexp(f, dim=1) - f[rows, rank]).mean()
            loss = nll + alpha * ((w1 * w1).sum() + (w2 * w2).sum())
            (g,) = torch.autograd.grad(loss, theta)
            return float(loss.detach()), g.numpy().astype(np.float64, copy=False)

        with torch_threads(1):
            res = minimize_lbfgs(fun, p0, max_iter=self.max_iter, gtol=self.tol, ftol=1e-11)
        if not res.converged:
            warn_not_converged(f"intra order-preserving calibration ({self.variant})", res)
        w1, b1, w2, b2 = [p.detach().numpy().copy() for p in unpack(torch.from_numpy(res.x))]
        self.coefs_ = [w1, w2]
        self.intercepts_ = [b1, b2]
        self.feature_mean_ = mean.numpy().copy()
        self.feature_scale_ = scale.numpy().copy()
        self.n_iter_ = res.n_iter
        self.loss_ = res.fun

    # ------------------------------------------------------------------ predict
    def _transform(self, z):
        torch = _torch()
        with torch_threads(1), torch.no_grad():
            zt = torch.from_numpy(z)
            s, idx = _sorted(zt)
            u = (self._raw_features(zt, s) - torch.from_numpy(self.feature_mean_)) \
                / torch.from_numpy(self.feature_scale_)
            w1, w2 = (torch.from_numpy(w) for w in self.coefs_)
            b1, b2 = (torch.from_numpy(b) for b in self.intercepts_)
            f = self._forward(u, s, w1, b1, w2, b2)
            out = torch.empty_like(f).scatter_(1, idx, f)
        return out.numpy()
