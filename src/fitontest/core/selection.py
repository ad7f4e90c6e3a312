"""Cross-validation helpers shared by every family that selects a complexity."""
from __future__ import annotations

from typing import Sequence

import numpy as np


def complexity_rule(candidates: Sequence | np.ndarray, cv_scores: Sequence[float] | np.ndarray,
                    tol: float = 1e-3):
    """Smallest candidate whose CV score is within ``tol`` (relative) of the minimum.

    The paper's 0.1 % rule is ``tol=1e-3``: choose the smallest complexity with
    ``score <= min * (1 + tol)``; ``tol=0`` picks the arg-min (first on ties).
    ``candidates`` must be ordered from simplest to most complex.
    """
    scores = np.asarray(cv_scores, dtype=np.float64)
    if len(candidates) != scores.shape[0] or scores.shape[0] == 0:
        raise ValueError(f"need one CV score per candidate, got {len(candidates)} "
                         f"candidates and {scores.shape[0]} scores")
    if tol < 0:
        raise ValueError(f"tol must be >= 0, got {tol}")
    finite = np.isfinite(scores)
    if not finite.any():
        raise ValueError("every candidate has a non-finite CV score")
    best = scores[finite].min()
    threshold = best + tol * abs(best)
    ok = finite & (scores <= threshold)
    return candidates[int(np.flatnonzero(ok)[0])]


def kfold_indices(n: int, n_folds: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Shuffled K-fold split of ``range(n)``: list of (train, held-out) index arrays.

    Fold sizes follow ``numpy.array_split`` of one seeded permutation, so the
    same (n, n_folds, seed) always gives the same folds.
    """
    if n_folds < 2:
        raise ValueError(f"n_folds must be >= 2, got {n_folds}")
    if n < n_folds:
        raise ValueError(f"fewer points ({n}) than cross-validation folds ({n_folds})")
    perm = np.random.default_rng(seed).permutation(n)
    folds = np.array_split(perm, n_folds)
    out = []
    for k in range(n_folds):
        train = np.concatenate([folds[j] for j in range(n_folds) if j != k])
        out.append((np.sort(train), np.sort(folds[k])))
    return out
