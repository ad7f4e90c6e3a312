"""Worlds with a known calibration map, shaped like the user's data
(docs/methods/14-chooser.md §14).

A *world* is a law of (score, label) whose true calibration map is known, so
that an evaluator's error can be measured in it exactly. Every world here is
built from the user's own sample (s_i, y_i), i = 1..n:

- **scores**: the user's scores, resampled with replacement (the world's score
  law is the empirical law of s; its population CE is mean |c(s_i) - s_i|^p);
- **a true map** c on those scores;
- **labels redrawn** at the user's n as Bernoulli(c(s*)).

Two consumers, two sets of maps:

- the ``inverted`` CE interval (:mod:`fitontest.inference.intervals`): the *reference
  map* c_ref (:func:`reference_gap`) with its gap scaled, c_t(s) = clip(s +
  t g(s), 0, 1) for t in :data:`WORLD_T` (:func:`scaled_maps`); all worlds
  share one resample and one uniform per point and replicate (common random
  numbers, :func:`world_replicates`);
- the evaluator chooser (:mod:`fitontest.inference.choose`): *plausible maps*
  (:func:`plausible_maps`), the set the data cannot rule out: the fits of
  several generator families (:data:`GENERATORS`) on the data, each kept only
  where a test of calibration of its fitted probabilities c_g(s_i) against y
  does not reject it, and each perturbed by refitting it on bootstrap
  resamples of the data (perturbations of the size of its sampling
  uncertainty); where the scores themselves are not shown miscalibrated, the
  identity map (a calibrated model) and maps between it and the reference
  map (near-calibrated) too; :func:`world_sample` draws one world's sample.

Assumptions (docs/methods/14-chooser.md §14): the score law is the empirical one (no
score outside the data's); the true map is monotone-ish and near one of the
generator fits (within their bootstrap spread); the labels are independent
given the scores.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..families.binning import BinningFamily, assign_bins, bin_stats
from .sizes import CHUNK_CELLS, reference_bin_count

# Scales t of the gap in the worlds of "inverted" (t = 1: the reference map).
WORLD_T = np.array([0.0, 0.15, 0.3, 0.45, 0.6, 0.8, 1.0, 1.4, 2.0])

#: generator families of the chooser's plausible maps: the reference map (flexible,
#: monotone, smooth), beta calibration (smooth, three parameters; Kull et al. 2017),
#: Platt scaling (two) and isotonic regression (a step map: what a binned or
#: isotonic calibrator leaves, the usual map of a calibrated model); every registered
#: family with a map also works (a spline costs about 0.25 s a fit at n = 10,000, 40
#: times more than these)
GENERATORS = ("reference", "beta", "platt", "isotonic", "identity", "near")
#: generators fitted to nothing: ``"identity"``, c(s) = s (a calibrated model, whose
#: true CE is 0: a world no fit reaches, since a refit's noise is miscalibration), and
#: ``"near"``, c(s) = s + u (c_ref*(s) - s) with u ~ U(0, 1) and c_ref* the reference
#: map refitted on a bootstrap resample (near-calibrated: between the identity and a
#: fit). Both are kept where the Kuiper test of the scores themselves does not reject
#: calibration at ``RULE_OUT_ALPHA`` (nothing is fitted, so nothing to cross-fit)
UNFITTED = ("identity", "near")

#: significance level below which a generator's fit counts as ruled out by the data
RULE_OUT_ALPHA = 0.01


def reference_gap(s: np.ndarray, y: np.ndarray, p: int = 1) -> np.ndarray:
    """g(s_i) = c_ref(s_i) - s_i of the worlds' reference map: bins of about
    n^(2/3) points each (b = n^(1/3) ES bins), their label means made
    non-decreasing (weighted PAV) and the gap interpolated linearly between the
    bins' mean scores (flat beyond them). Monotone and smooth, as calibration
    maps are: a noisy step map would give the worlds a larger estimator bias
    than the data have.

    p = 2: every ES bin wider than 1 / b in score is also cut into equal-width
    pieces no wider than that. The squared CE lives in the sparse tail (one-vs-rest
    scores pile near 0, so the top ES bin spans most of [0, 1]); a reference that
    flattens the tail's gaps gives worlds whose coarse-bin estimators lose less
    to averaging than on the data, and the interval sits low (docs/methods/11-intervals.md
    §11.1: smallest cells on the study's one-vs-rest laws 61-81 % before, 91.7-95.1 % after).
    """
    from sklearn.isotonic import IsotonicRegression

    n_bins = reference_bin_count(s.size)
    ref = BinningFamily(scheme="es", n_bins=n_bins, selection="fixed").fit(s, y)
    nb, sb, yb = ref.bin_counts_, ref.bin_mean_scores_, ref.bin_mean_labels_
    if p == 2:
        es = ref.edges_
        pieces = np.maximum(np.ceil(np.diff(es) * n_bins), 1).astype(int)
        edges = np.unique(np.concatenate(
            [np.linspace(a, b, k + 1)[:-1] for a, b, k in zip(es[:-1], es[1:], pieces)]
            + [es[-1:]]))
        nb, sb, yb = bin_stats(assign_bins(s, edges, "es"), s, y, edges.size - 1)
    full = nb > 0
    sb, yb, nb = sb[full], yb[full], nb[full]
    if sb.size < 2:
        return np.full(s.size, float(yb[0] - sb[0]))
    mono = IsotonicRegression(y_min=0.0, y_max=1.0).fit(sb, yb, sample_weight=nb).predict(sb)
    return np.interp(s, sb, mono - sb)


def scaled_maps(s: np.ndarray, g: np.ndarray, t_grid=WORLD_T) -> np.ndarray:
    """(K, n) true maps c_t(s_i) = clip(s_i + t g_i, 0, 1), one row per scale t."""
    t_grid = np.asarray(t_grid, dtype=np.float64)
    return np.clip(s[None, :] + t_grid[:, None] * g[None, :], 0.0, 1.0)


def population_ce(maps: np.ndarray, s: np.ndarray, p: int) -> np.ndarray:
    """mean_i |c(s_i) - s_i|^p of each map (row): the world's population CE."""
    return np.mean(np.abs(np.atleast_2d(maps) - s[None, :]) ** p, axis=1)


def world_replicates(fam, s: np.ndarray, y: np.ndarray, n_rep: int, seed, p: int,
                     t_grid=WORLD_T, max_cells: int = CHUNK_CELLS, gap=None):
    """(theta (K,), estimates (K, n_rep)): the scaled-gap worlds' true CE and the
    family's used estimate on ``n_rep`` samples of each world.

    ``gap``: g of the reference map (:func:`reference_gap` of (s, y, p) when
    None). Common random numbers: one resample index and one uniform per point
    and replicate serve every world; rows go in chunks of ``max_cells / n``.
    """
    n = s.size
    g = reference_gap(s, y, p) if gap is None else gap
    t_grid = np.asarray(t_grid, dtype=np.float64)
    maps = scaled_maps(s, g, t_grid)
    theta = population_ce(maps, s, p)
    s_aug = np.concatenate((s, s))            # index i: label 0, index n + i: label 1
    y_aug = np.concatenate((np.zeros(n), np.ones(n)))
    rng = np.random.default_rng(seed)
    step = max(1, int(max_cells) // n)
    starts = range(0, int(n_rep), step)

    def blocks():             # chunk by chunk, every world in turn: common random numbers
        for r0 in starts:
            rows = min(step, int(n_rep) - r0)
            idx = rng.integers(0, n, size=(rows, n))
            u = rng.random((rows, n))
            for k in range(t_grid.size):
                yield idx + n * (u < maps[k][idx])

    # one call: the sample is validated and coded once, and a binning family
    # reuses the label-free work of a chunk in every world
    flat = fam.bootstrap_replicates(s_aug, y_aug, blocks(), p=p)
    out = np.empty((t_grid.size, int(n_rep)))
    i = 0
    for r0 in starts:
        rows = min(step, int(n_rep) - r0)
        for k in range(t_grid.size):
            out[k, r0:r0 + rows] = flat[i:i + rows]
            i += rows
    return theta, out


def world_reps(n_boot: int) -> int:
    """Replicates per world of "inverted" for ``n_boot`` (half, at least 20)."""
    return max(int(n_boot) // 2, 20)


def largest_ce(s: np.ndarray, p: int) -> float:
    """mean max(s, 1 - s)^p, the CE of the farthest map: it caps every end."""
    return float(np.mean(np.maximum(s, 1.0 - s) ** p))


# ------------------------------------------------------------ plausible maps
def generator_map(name: str, s_fit: np.ndarray, y_fit: np.ndarray,
                  s: np.ndarray) -> np.ndarray:
    """Map of generator ``name`` fitted on (s_fit, y_fit), evaluated at ``s``,
    clipped to [0, 1]: ``"reference"`` (:func:`reference_gap`, p = 1) or any
    registered family with a map."""
    if name == "reference":
        order = np.argsort(s_fit, kind="stable")
        sf = s_fit[order]
        gf = reference_gap(sf, y_fit[order], 1)
        return np.clip(s + np.interp(s, sf, gf), 0.0, 1.0)
    from .. import families

    return np.clip(families.get(name).fit(s_fit, y_fit).predict(s), 0.0, 1.0)


def plausible_maps(s: np.ndarray, y: np.ndarray, n_maps: int, seed,
                   generators: Sequence[str] = GENERATORS,
                   alpha: float = RULE_OUT_ALPHA):
    """(maps (n_maps, n), names (n_maps,), kept {generator: p-value}): true maps
    at the user's scores that the data cannot rule out.

    A generator is ruled out when its cross-fitted probabilities are shown
    miscalibrated: fitted on one random half of (s, y), the Kuiper test of
    calibration (:func:`fitontest.inference.calibration_tests.calibration_test`) of its
    probabilities on the other half against that half's labels, both ways,
    Bonferroni (p = min(1, 2 min(p_1, p_2))) below ``alpha``; an in-sample fit
    would pass almost any test. ``"reference"``, the most flexible, is always
    kept. The maps are the kept generators refitted on bootstrap resamples of
    (s, y), round robin: their spread is the fits' own sampling uncertainty. A
    generator that fails to fit (too few points of a class) is left out. The
    :data:`UNFITTED` generators are kept where the Kuiper test of (s, y)
    itself does not reject calibration at ``alpha``.
    """
    from .calibration_tests import calibration_test

    rng = np.random.default_rng(seed)
    half = rng.permutation(s.size)
    a, b = half[: s.size // 2], half[s.size // 2:]
    kept: dict[str, float] = {}
    calibrated = None
    for name in generators:
        try:
            if name in UNFITTED:
                if calibrated is None:
                    calibrated = float(calibration_test(s, y, "kuiper").pvalue)
                pv = calibrated
            else:
                pv = min(1.0, 2.0 * min(
                    float(calibration_test(generator_map(name, s[i], y[i], s[j]), y[j],
                                           "kuiper").pvalue) for i, j in ((a, b), (b, a))))
        except (ValueError, FloatingPointError, np.linalg.LinAlgError):
            continue
        if name == "reference" or pv >= alpha:
            kept[name] = pv
    if not kept:
        kept["reference"] = float("nan")
    names = [list(kept)[i % len(kept)] for i in range(int(n_maps))]
    maps = np.empty((int(n_maps), s.size))
    for i, name in enumerate(names):
        if name == "identity":
            maps[i] = s
            continue
        fit = "reference" if name == "near" else name
        for _ in range(20):     # a resample a family cannot fit (one class) is redrawn
            idx = rng.integers(0, s.size, size=s.size)
            try:
                maps[i] = generator_map(fit, s[idx], y[idx], s)
                break
            except (ValueError, FloatingPointError, np.linalg.LinAlgError):
                continue
        else:
            maps[i] = generator_map(fit, s, y, s)
        if name == "near":       # between the identity and the refit: near-calibrated
            maps[i] = s + rng.random() * (maps[i] - s)
    return maps, np.array(names), kept


def world_sample(rng: np.random.Generator, s: np.ndarray, c: np.ndarray):
    """(scores, labels, true map at the scores) of one world of map ``c`` (c(s_i)
    per user score): the scores resampled, labels redrawn as Bernoulli(c)."""
    idx = rng.integers(0, s.size, size=s.size)
    ci = c[idx]
    return s[idx], (rng.random(s.size) < ci).astype(np.int64), ci


__all__ = ["WORLD_T", "GENERATORS", "UNFITTED", "RULE_OUT_ALPHA", "reference_gap", "scaled_maps",
           "population_ce", "world_replicates", "world_reps", "largest_ce", "generator_map",
           "plausible_maps", "world_sample"]
