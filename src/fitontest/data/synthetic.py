"""The paper's synthetic calibration study (docs/methods/07-synthetic.md §7), with
exact ground truth.

A base shape f maps the calibrated probability c to a prediction p. Derivates
mix it with the identity, f_a(x) = (1 - a) x + a f(x); for c ~ U(0, 1) the
true calibration error is a * E|x - f(x)|, so a = CE / E|x - f(x)|. The true
calibration map of p = f_a(c) is c(p) = f_a^{-1}(p).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Callable

import numpy as np

from fitontest.core.validation import check_option

SAMPLINGS = ("ours", "paper")
SHAPES = ("square", "sqrt", "beta1", "beta2", "stairs")
CE_LEVELS = tuple(round(0.005 * i, 3) for i in range(21))  # 0, 0.005, ..., 0.100


def _beta_shape(m: float, a: float, b: float) -> Callable[[np.ndarray], np.ndarray]:
    gamma = b * np.log(1.0 - m) - a * np.log(m)

    def f(x):
        x = np.asarray(x, dtype=np.float64)
        with np.errstate(divide="ignore"):
            # 1 / (1 + 1/(e^g x^a / (1-x)^b)) = sigmoid(g + a ln x - b ln(1-x))
            z = gamma + a * np.log(x) - b * np.log1p(-x)
        return 1.0 / (1.0 + np.exp(-z))

    return f


def _stairs(x):
    h = w = 2.0 / 3.0

    def step(z):
        return z - np.sin(z)

    def g(u):
        return step(step(2.0 * np.pi * u / w)) * h / (2.0 * np.pi)

    x = np.asarray(x, dtype=np.float64)
    return g(x + w / 2.0) - g(w / 2.0)


BASE_SHAPES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "square": lambda x: np.asarray(x, dtype=np.float64) ** 2,
    "sqrt": lambda x: np.sqrt(np.asarray(x, dtype=np.float64)),
    "beta1": _beta_shape(0.4, 0.4, 0.45),
    "beta2": _beta_shape(0.48, 2.0, 2.2),
    "stairs": _stairs,
}


def _check_shape(shape: str) -> Callable:
    try:
        return BASE_SHAPES[shape]
    except KeyError:
        raise ValueError(f"unknown synthetic shape {shape!r}; known: {', '.join(SHAPES)}") from None


@lru_cache(maxsize=None)
def base_ce(shape: str) -> float:
    """E|x - f(x)| for x ~ U(0, 1): the CE of the base shape itself."""
    f = _check_shape(shape)
    # midpoint rule on a fine grid; the integrands are smooth or piecewise smooth
    n = 2_000_000
    x = (np.arange(n) + 0.5) / n
    return float(np.mean(np.abs(x - f(x))))


def alpha(shape: str, ce: float) -> float:
    """Mixing weight a of the derivate with true calibration error ``ce``."""
    if not np.isfinite(ce) or ce < 0:
        raise ValueError(f"ce must be a finite non-negative number, got {ce!r}")
    a = ce / base_ce(shape)
    if a > 1.0:
        raise ValueError(f"ce={ce} exceeds the CE of the base shape {shape!r} "
                         f"({base_ce(shape):.4f}); the derivate would not be monotone")
    return a


def forward(shape: str, ce: float) -> Callable[[np.ndarray], np.ndarray]:
    """The derivate f_a mapping calibrated probability c to prediction p."""
    f = _check_shape(shape)
    a = alpha(shape, ce)

    def f_a(x):
        x = np.asarray(x, dtype=np.float64)
        return x if a == 0.0 else (1.0 - a) * x + a * f(x)

    return f_a


def true_map(shape: str, ce: float) -> Callable[[np.ndarray], np.ndarray]:
    """The exact calibration map c(p) = f_a^{-1}(p), vectorised.

    f_a is increasing on [0, 1] with f_a(0) = 0 and f_a(1) = 1. A coarse table
    brackets each p, then vectorised bisection narrows the bracket to machine
    precision (no per-point Python loop).
    """
    f_a = forward(shape, ce)
    if alpha(shape, ce) == 0.0:
        return lambda p: np.clip(np.asarray(p, dtype=np.float64), 0.0, 1.0)
    grid = np.linspace(0.0, 1.0, 4097)
    table = np.maximum.accumulate(f_a(grid))
    table[0], table[-1] = 0.0, 1.0

    def c_of_p(p):
        p = np.clip(np.asarray(p, dtype=np.float64), 0.0, 1.0)
        j = np.clip(np.searchsorted(table, p, side="left"), 1, grid.size - 1)
        lo, hi = grid[j - 1].copy(), grid[j].copy()
        for _ in range(48):  # bracket width 2^-12 -> below 1e-18
            mid = 0.5 * (lo + hi)
            below = f_a(mid) < p
            lo = np.where(below, mid, lo)
            hi = np.where(below, hi, mid)
        return 0.5 * (lo + hi)

    return c_of_p


def _paper_draw(n: int, seed: int):
    """The authors' (c, y): legacy RandomState(seed + n), sorted Dirichlet(1, 1) c."""
    rs = np.random.RandomState(int(seed) + int(n))
    c = np.sort(rs.dirichlet([1.0, 1.0], int(n))[:, 0])
    return c, rs.binomial(1, c).astype(np.int8)


def _check_sampling(sampling: str) -> None:
    check_option("sampling", sampling, SAMPLINGS)


def sample(shape: str, ce: float, n: int, seed: int, sampling: str = "ours"):
    """Fitting sample of the study: (predictions p, labels y, true c).

    c ~ U(0, 1) and y ~ Bernoulli(c) depend only on (seed, n), so every shape
    and CE level of a seed shares them (paired rankings across CE levels).
    ``sampling="paper"``: the authors' generator (module docstring).
    """
    if n < 1:
        raise ValueError(f"n must be positive, got {n}")
    _check_sampling(sampling)
    if sampling == "paper":
        c, y = _paper_draw(n, seed)
    else:
        rng = np.random.default_rng([int(seed), int(n), 0])
        c = rng.random(n)
        y = (rng.random(n) < c).astype(np.int8)
    return forward(shape, ce)(c), y, c


def test_sample(shape: str, ce: float, n: int = 1_000_000, seed: int = 0,
                sampling: str = "ours"):
    """Separate sample for CMEE: (predictions p, true c), c ~ U(0, 1).
    ``sampling="paper"``: the authors' generator with ``seed + n`` (their test
    sample: seed 0, n = 1,000,000)."""
    _check_sampling(sampling)
    if sampling == "paper":
        c = _paper_draw(n, seed)[0]
    else:
        c = np.random.default_rng([int(seed), int(n), 1]).random(n)
    return forward(shape, ce)(c), c
