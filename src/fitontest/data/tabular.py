"""Tabular pseudo-real data with an exact posterior (docs/methods/13-tabular.md §13).

A second pseudo-real generator beside the procedural images, for classifiers
that are not neural networks (the paper's future work: non-neural classifiers,
other generators). Rows are feature vectors x in R^d; the class posterior
P(y | x) is known in closed form, so the ``posterior`` truth needs no label
estimate and a hold-out of 10^6 rows costs seconds.

Generative model (config block ``tabular``; keys and defaults in :data:`DEFAULTS`)
-------------------------------------------------------------------------------
- class prior pi_k ∝ exp(-imbalance · k / (K - 1)), k = 0..K-1 (0: balanced);
- class k is a mixture of ``n_components`` Gaussians with weights w_k ~
  Dirichlet(2, ..., 2), means mu_km ~ N(0, separation² I_d) and one covariance
  per class, Sigma_k = a_k · T(rho) with T(rho)_ij = rho^|i-j| (features
  correlated by ``correlation`` = rho) and a_k ~ U(0.5, 1.5) (so the Bayes
  boundaries are quadratic: a logistic regression is misspecified);
- draw class c ~ pi, component m ~ w_c, x = mu_cm + chol(Sigma_c) z, z ~ N(0, I);
- observed label: y = c with probability 1 - ``label_noise``, else uniform
  over the K classes (symmetric noise).

Exact posterior of the observed label: P(y = k | x) = (1 - eta) q_k(x) + eta / K
with q_k(x) = pi_k p(x | k) / sum_j pi_j p(x | j), p(x | k) = sum_m w_km
N(x; mu_km, Sigma_k) (computed in log space). Every split's labels are drawn
from it, so it is the posterior the calibration of a classifier refers to;
the truth computed from it carries no label-sampling noise (the isotonic
truth, fitted to hold-out labels, does).

Determinism: row i is in block b = i // ``block_size``, whose rows come from
``numpy.random.default_rng([seed, 0, b])``; the mixture parameters come from
``default_rng([seed, 1])``. Rows are i.i.d. over the index, so any index set
is a random sample.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Iterator

import numpy as np
from scipy.linalg import solve_triangular
from scipy.special import logsumexp

from fitontest.core.validation import check_indices

from .sources import register_source, split_size

#: ``config["tabular"]`` keys, their defaults and meaning.
DEFAULTS: dict = {
    "seed": 0,             # master seed (mixture parameters and rows)
    "block_size": 10_000,  # rows per independently seeded block
    "n_classes": 10,       # K
    "n_features": 10,      # d
    "n_components": 3,     # Gaussians per class
    "separation": 1.6,     # standard deviation of the component means
    "correlation": 0.5,    # rho of the Toeplitz feature correlation rho^|i-j|
    "imbalance": 1.0,      # pi_k ∝ exp(-imbalance k / (K-1)); 0 = balanced
    "label_noise": 0.05,   # probability that the label is redrawn uniformly
}
_INT = ("seed", "block_size", "n_classes", "n_features", "n_components")


def check_params(params: dict) -> dict:
    """``DEFAULTS`` updated by ``params``, checked (ValueError names the key)."""
    if not isinstance(params, dict):
        raise ValueError(f"tabular must be a mapping of generator settings, got {params!r}")
    unknown = set(params) - set(DEFAULTS)
    if unknown:
        raise ValueError(f"unknown tabular setting(s) {sorted(unknown)}; known: {sorted(DEFAULTS)}")
    p = {**DEFAULTS, **params}
    for k in _INT:
        v = p[k]
        if isinstance(v, bool) or not float(v).is_integer():
            raise ValueError(f"tabular.{k} must be an integer, got {v!r}")
        p[k] = int(v)
    for k, lo in (("block_size", 1), ("n_classes", 2), ("n_features", 1), ("n_components", 1)):
        if p[k] < lo:
            raise ValueError(f"tabular.{k} must be at least {lo}, got {p[k]}")
    for k in ("separation", "correlation", "imbalance", "label_noise"):
        p[k] = float(p[k])
        if not np.isfinite(p[k]) or p[k] < 0:
            raise ValueError(f"tabular.{k} must be a finite non-negative number, got {p[k]!r}")
    if p["correlation"] >= 1:
        raise ValueError(f"tabular.correlation must be below 1, got {p['correlation']}")
    if p["label_noise"] > 1:
        raise ValueError(f"tabular.label_noise must lie in [0, 1], got {p['label_noise']}")
    return p


class TabularGenerator:
    """The mixture of the module doc: parameters, sampling and the exact posterior."""

    def __init__(self, **params):
        self.params = p = check_params(params)
        K, d, M = p["n_classes"], p["n_features"], p["n_components"]
        rng = np.random.default_rng([p["seed"], 1])
        # the order of the draws is part of the format: never reorder
        self.weights = rng.dirichlet(np.full(M, 2.0), size=K)                 # (K, M)
        self.means = rng.normal(0.0, p["separation"], size=(K, M, d))
        scale = rng.uniform(0.5, 1.5, size=K)
        lag = np.abs(np.subtract.outer(np.arange(d), np.arange(d)))
        toeplitz = p["correlation"] ** lag
        self.chol = np.linalg.cholesky(scale[:, None, None] * toeplitz)      # (K, d, d)
        logit_prior = -p["imbalance"] * np.arange(K) / max(K - 1, 1)
        self.prior = np.exp(logit_prior - logsumexp(logit_prior))
        self.num_classes, self.n_features = K, d

    def sample(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """``n`` rows (X (n, d) float64, observed labels (n,) int64) from ``rng``."""
        p, K = self.params, self.num_classes
        c = rng.choice(K, size=n, p=self.prior)
        # component by inverse CDF of each row's class weights (vectorised)
        m = (rng.random(n)[:, None] > np.cumsum(self.weights[c], axis=1)[:, :-1]).sum(axis=1)
        z = rng.standard_normal((n, self.n_features))
        x = self.means[c, m] + np.einsum("nij,nj->ni", self.chol[c], z)
        flip = rng.random(n) < p["label_noise"]
        y = np.where(flip, rng.integers(0, K, size=n), c)
        return x, y.astype(np.int64)

    def clean_posterior(self, X) -> np.ndarray:
        """(n, K) P(class | x) of the mixture, before label noise."""
        X = np.asarray(X, dtype=np.float64)
        d = self.n_features
        log_joint = np.empty((X.shape[0], self.num_classes))
        for k in range(self.num_classes):
            # whiten once per class: r = L^-1 (x - mu) = L^-1 x - L^-1 mu
            Linv = solve_triangular(self.chol[k], np.eye(d), lower=True)
            XW, muW = X @ Linv.T, self.means[k] @ Linv.T
            comp = np.empty((X.shape[0], muW.shape[0]))
            for m, mw in enumerate(muW):
                r = XW - mw
                comp[:, m] = np.log(self.weights[k, m]) - 0.5 * np.einsum("ij,ij->i", r, r)
            logdet = 2.0 * np.log(np.diag(self.chol[k])).sum()
            log_joint[:, k] = (np.log(self.prior[k]) + logsumexp(comp, axis=1)
                               - 0.5 * (logdet + d * np.log(2 * np.pi)))
        return np.exp(log_joint - logsumexp(log_joint, axis=1, keepdims=True))

    def posterior(self, X) -> np.ndarray:
        """(n, K) exact P(observed label | x): clean posterior mixed with the noise."""
        eta = self.params["label_noise"]
        return (1.0 - eta) * self.clean_posterior(X) + eta / self.num_classes


@register_source("tabular")
class TabularSource:
    """Index-addressable rows of :class:`TabularGenerator` (an ImageSource of features)."""

    kind, has_posterior = "features", True

    def __init__(self, n_images: int, **params):
        self.n_images = int(n_images)
        if self.n_images < 1:
            raise ValueError(f"n_images must be positive, got {n_images}")
        self.generator = TabularGenerator(**params)
        self.params = self.generator.params
        self.num_classes = self.generator.num_classes
        self.block_size = self.params["block_size"]
        self._cache: OrderedDict[int, tuple[np.ndarray, np.ndarray]] = OrderedDict()

    def __repr__(self) -> str:
        return f"TabularSource(n_images={self.n_images}, {self.params})"

    # registry interface (fitontest.data.sources)
    @classmethod
    def check_config(cls, config: dict) -> None:
        split_size(config)
        check_params(config.get("tabular") or {})

    @classmethod
    def from_config(cls, config: dict) -> "TabularSource":
        return cls(split_size(config), **(config.get("tabular") or {}))

    @classmethod
    def num_classes_of(cls, config: dict) -> int:
        return check_params(config.get("tabular") or {})["n_classes"]

    # rows
    def block(self, b: int) -> tuple[np.ndarray, np.ndarray]:
        b = int(b)
        hit = self._cache.get(b)
        if hit is None:
            hit = self.generator.sample(self.block_size,
                                        np.random.default_rng([self.params["seed"], 0, b]))
            self._cache[b] = hit
            while len(self._cache) > 8:
                self._cache.popitem(last=False)
        return hit

    def iter_chunks(self, indices, chunk_size: int = 50_000
                    ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """(X, y, positions into ``indices``), block by block (at most ``chunk_size`` rows)."""
        idx = check_indices(indices, self.n_images)
        blocks = idx // self.block_size
        order = np.argsort(blocks, kind="stable")
        bounds = np.flatnonzero(np.diff(blocks[order])) + 1
        for pos in np.split(order, bounds):
            if pos.size == 0:
                continue
            X, y = self.block(blocks[pos[0]])
            for start in range(0, pos.size, chunk_size):
                p = pos[start:start + chunk_size]
                within = idx[p] % self.block_size
                yield X[within], y[within], p

    def load(self, indices) -> tuple[np.ndarray, np.ndarray]:
        idx = check_indices(indices, self.n_images)
        X = np.empty((idx.size, self.generator.n_features))
        y = np.empty(idx.size, dtype=np.int64)
        for Xc, yc, pos in self.iter_chunks(idx):
            X[pos], y[pos] = Xc, yc
        return X, y

    def posterior(self, indices) -> np.ndarray:
        return self.generator.posterior(self.load(indices)[0])
