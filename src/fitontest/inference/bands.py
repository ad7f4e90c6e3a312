"""Confidence bands for the calibration map c(s) = P(Y = 1 | S = s)
(docs/methods/11-tests-and-bands.md §11.9).

:func:`reliability_band` returns a :class:`ReliabilityBand`: lower and upper
ends ``lo``, ``hi`` on a grid ``s`` at nominal ``level``, the method that built
it and why (``reason``), whether it claims to hold the map at every grid point
at once (``simultaneous``) or at each point on its own, and whether its
coverage was measured to hold there (``valid``, with the reason ``validity_note``).

Methods (``method=``; alpha = 1 - level):

- ``"monotone"`` (simultaneous, finite sample; :mod:`fitontest.inference.monotone_band`):
  holds every non-decreasing map -- smooth, with kinks or a step function --
  with probability >= level at every n. ``"monotone_dyadic"``: the same over
  the dyadic runs only (same guarantee, a few per cent narrower).
- ``"clopper_pearson"`` / ``"clopper_pearson_bonferroni"`` / ``"bootstrap"``
  (the peers' bin recipes: pointwise, or simultaneous over the bins' means
  only) and ``"family_bootstrap"`` (sup-t band from resamples of a fit-on-test
  family): measured to miss the map, flagged ``valid=False``.
- ``"world"`` (simultaneous, calibrated in the project's worlds,
  :mod:`fitontest.inference.worlds`): between the reference map's first and last bin
  mean scores, a sup-t band around that map (labels redrawn ``n_boot`` times
  from it at the user's scores, the map refitted per world, inflated by
  :data:`WORLD_BAND_SCALE`); beyond them, where the reference map only
  extrapolates, the ``monotone`` band. Narrower than ``monotone`` on smooth
  maps; measured to miss step maps (a binned or isotonic calibrator's) and
  one-vs-rest score laws, which no rule on the data told apart.
- ``"auto"`` (default): :data:`AUTO`, ``monotone`` (its ``reason`` says why).

``valid`` comes from the measured domain that benchmarks/coverage_checks/band_coverage.py
wrote (:func:`fitontest.inference.domains.measured` ``("bands")``; the levels, n
and settings measured on the figures' default grid): None outside it ("coverage
not measured here"), False where the method's worst measured cell at that level
is short (a :class:`BandCoverageWarning` is issued), True otherwise.

**The shape assumed.** ``monotone``, ``monotone_dyadic`` and ``world`` hold a
non-decreasing map only; on a map that turns down they miss it (at n = 3000 a
map that rises to 0.7 and falls to 0.6 was missed in most samples). So their
``valid`` is gated by :func:`~fitontest.inference.monotone_band.monotonicity_test`
at alpha = 1 - level: where it rejects a non-decreasing map, ``valid`` is None
(not False: the band's coverage of such a map is not its claim) and
``validity_note`` names the test and its p-value; the legend says "monotone
shape rejected". A map that turns down by less than the test detects is not
flagged; how far that reaches, per n, is measured
(benchmarks/measured/band_coverage.md, "Maps that turn down").
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np
from scipy import stats
from sklearn.base import clone

from .. import families
from . import domains
from ..core.validation import check_binary, check_option
from .intervals import IntervalCoverageWarning
from .monotone_band import monotone_band, monotone_band_test, monotonicity_test
from .world_band import (WORLD_BAND_SCALE, WORLD_BAND_WORLDS, WorldParts, world_ends,
                         world_parts)

_BUILDERS: dict[str, Callable] = {}
SIMULTANEOUS: dict[str, bool] = {}


def band_method(name: str, simultaneous: bool):
    """Register a band builder ``f(s, y, grid, level, **options) -> (lo, hi, fit, grid)``."""
    def register(fn):
        _BUILDERS[name] = fn
        SIMULTANEOUS[name] = simultaneous
        return fn
    return register


#: what ``method="auto"`` builds, at every level and n: the one band measured to
#: hold step maps as well as smooth ones (benchmarks/measured/band_coverage.md)
AUTO = "monotone"
AUTO_REASON = ("auto: the finite-sample monotone band, which holds any non-decreasing map, "
               "step maps included; the narrower world band was measured to miss step maps "
               "(a binned or isotonic calibrator's) and one-vs-rest score laws, which these "
               "data cannot rule out (docs/methods/11-tests-and-bands.md §11.9)")
DEFAULT_GRID = 201
#: options whose value is part of a method's measured domain (the seed is not)
DOMAIN_OPTIONS = ("n_groups", "n_bins", "n_boot", "family", "params")
_GUARANTEED = ("monotone", "monotone_dyadic")
#: the methods whose band holds a non-decreasing map only: ``valid`` gated by the
#: test of monotonicity at alpha = 1 - level (module docstring)
ASSUMES_MONOTONE = ("monotone", "monotone_dyadic", "world")


class BandCoverageWarning(IntervalCoverageWarning):
    """The band's method was measured to hold the true map less often than it claims."""


@dataclass(frozen=True)
class ReliabilityBand:
    """Band [lo, hi] for the calibration map on the grid ``s`` at nominal ``level``.

    ``fit``: the method's estimate of the map on ``s`` (isotonic regression for
    ``monotone``, the bins' fractions of positives for the bin methods, the
    family's map for ``family_bootstrap`` and ``world``). ``simultaneous``: the
    level is claimed for all of ``s`` at once (else for each point); ``valid``:
    coverage measured to hold here (None: not measured here, or the shape the
    method assumes rejected by the data), ``validity_note`` says which;
    ``reason``: why this method (``auto``); ``shape_pvalue``: the p-value of the
    test of monotonicity for the methods that assume it (None for the others).
    """

    s: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    level: float
    method: str
    simultaneous: bool
    n: int
    fit: np.ndarray | None = None
    valid: bool | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    validity_note: str = ""
    reason: str = ""
    shape_pvalue: float | None = None

    @property
    def width(self) -> float:
        """Mean width over the grid."""
        return float(np.mean(self.hi - self.lo))

    @property
    def shape_rejected(self) -> bool:
        """Whether the test of monotonicity rejected the shape the band assumes,
        at alpha = 1 - level."""
        return self.shape_pvalue is not None and self.shape_pvalue <= 1.0 - self.level

    @property
    def note(self) -> str:
        """The validity in a few words, for a legend or caption ("" when valid)."""
        if self.shape_rejected:
            return f"monotone shape rejected, p = {self.shape_pvalue:.2g}"
        return {None: "coverage not measured here", False: "measured short"}.get(self.valid, "")

    def holds(self, c) -> np.ndarray:
        """Per grid point: whether the map ``c`` (a callable, or values on ``s``) is inside."""
        v = np.asarray(c(self.s) if callable(c) else c, dtype=np.float64)
        return (self.lo <= v) & (v <= self.hi)

    def holds_diagonal(self) -> bool:
        """Whether the diagonal c(s) = s lies inside the band on the whole grid."""
        return bool(self.holds(self.s).all())

    def plot(self, ax=None, color: str = "C0", alpha: float = 0.22, label: str | None = None,
             fit: bool = False):
        """Shade the band on ``ax`` (a new figure when None); returns ``ax``.

        The legend entry names the level, pointwise or simultaneous, the method
        and, unless its coverage was measured to hold here, :attr:`note`.
        """
        if ax is None:
            import matplotlib.pyplot as plt

            _, ax = plt.subplots(figsize=(4.2, 4.2), constrained_layout=True)
        kind = "simultaneous" if self.simultaneous else "pointwise"
        note = f", {self.note}" if self.note else ""
        ax.fill_between(self.s, self.lo, self.hi, step=None, color=color, alpha=alpha, lw=0,
                        label=label or f"{self.level:.0%} {kind} band ({self.method}{note})")
        if fit and self.fit is not None:
            ax.plot(self.s, self.fit, color=color, lw=1.5, label=f"{self.method} estimate")
        return ax


# ------------------------------------------------------------------ checks
def _check_level(level) -> float:
    if isinstance(level, bool) or not isinstance(level, (int, float, np.floating)) \
            or not 0.0 < float(level) < 1.0:
        raise ValueError(f"level must be a number in (0, 1), got {level!r}")
    return float(level)


def _check_grid(grid, s: np.ndarray) -> np.ndarray:
    if grid is None:
        return np.linspace(s.min(), s.max(), DEFAULT_GRID)
    g = np.asarray(grid, dtype=np.float64)
    if g.ndim == 0:
        if int(g) < 2:
            raise ValueError(f"grid must be >= 2 points or an array of scores, got {grid!r}")
        return np.linspace(s.min(), s.max(), int(g))
    if g.ndim != 1 or g.size < 1 or not np.all(np.isfinite(g)):
        raise ValueError("grid must be a 1-D array of finite scores")
    if np.any(np.diff(g) < 0):
        raise ValueError("grid must be sorted in increasing order")
    return g


def _min_points(method: str, n: int, need: int) -> None:
    if n < need:
        raise ValueError(f"method {method!r} needs at least {need} points, got {n}")


# ------------------------------------------------------------------ monotone
@band_method("monotone", simultaneous=True)
def _monotone(s, y, grid, level, *, n_groups=None, default_grid=False, **_):
    return monotone_band(s, y, grid, level, n_groups, default_grid, dyadic=False)


@band_method("monotone_dyadic", simultaneous=True)
def _monotone_dyadic(s, y, grid, level, *, n_groups=None, default_grid=False, **_):
    return monotone_band(s, y, grid, level, n_groups, default_grid, dyadic=True)


# ------------------------------------------------------------------ bins
def _bins(s, n_bins):
    """Equal-count bins from the scores: (bin of every point, edges)."""
    if isinstance(n_bins, bool) or int(n_bins) < 1:
        raise ValueError(f"n_bins must be an integer >= 1, got {n_bins!r}")
    edges = np.unique(np.quantile(s, np.linspace(0.0, 1.0, int(n_bins) + 1)))
    if edges.size < 2:
        edges = np.array([s[0], s[0]])
    idx = np.clip(np.searchsorted(edges[1:-1], s, side="right"), 0, edges.size - 2)
    return idx, edges


def _on_grid(values, edges, grid):
    b = np.clip(np.searchsorted(edges[1:-1], grid, side="right"), 0, edges.size - 2)
    return values[b]


def _cp(s, y, grid, level, n_bins, bonferroni):
    idx, edges = _bins(s, n_bins)
    nb = edges.size - 1
    _min_points("clopper_pearson", s.size, 2 * nb)
    cnt = np.bincount(idx, minlength=nb).astype(np.float64)
    pos = np.bincount(idx, weights=y, minlength=nb)
    a = (1.0 - level) / 2.0 / (nb if bonferroni else 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        lo = np.where(pos > 0, stats.beta.ppf(a, pos, cnt - pos + 1.0), 0.0)
        hi = np.where(pos < cnt, stats.beta.ppf(1.0 - a, pos + 1.0, cnt - pos), 1.0)
        frac = pos / cnt
    lo, hi = np.where(cnt > 0, lo, 0.0), np.where(cnt > 0, hi, 1.0)
    return _on_grid(lo, edges, grid), _on_grid(hi, edges, grid), _on_grid(frac, edges, grid), grid


@band_method("clopper_pearson", simultaneous=False)
def _clopper_pearson(s, y, grid, level, *, n_bins=15, **_):
    return _cp(s, y, grid, level, n_bins, False)


@band_method("clopper_pearson_bonferroni", simultaneous=True)
def _clopper_pearson_bonferroni(s, y, grid, level, *, n_bins=15, **_):
    return _cp(s, y, grid, level, n_bins, True)


def _resamples(n: int, n_boot, seed):
    if isinstance(n_boot, bool) or int(n_boot) < 2:
        raise ValueError(f"n_boot must be an integer >= 2, got {n_boot!r}")
    return np.random.default_rng(seed).integers(0, n, size=(int(n_boot), n))


@band_method("bootstrap", simultaneous=False)
def _bootstrap(s, y, grid, level, *, n_bins=15, n_boot=200, seed=0, **_):
    idx, edges = _bins(s, n_bins)
    nb = edges.size - 1
    _min_points("bootstrap", s.size, 2 * nb)
    rs = _resamples(s.size, n_boot, seed)
    flat = (idx[rs] + nb * np.arange(rs.shape[0])[:, None]).ravel()
    cnt = np.bincount(flat, minlength=rs.shape[0] * nb).reshape(-1, nb)
    pos = np.bincount(flat, weights=y[rs].ravel(), minlength=rs.shape[0] * nb).reshape(-1, nb)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = pos / cnt                       # NaN: bin empty in that resample
        frac = np.bincount(idx, weights=y, minlength=nb) / np.bincount(idx, minlength=nb)
    a = (1.0 - level) / 2.0
    with warnings.catch_warnings():     # a bin no point falls in (tied scores): all NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        lo, hi = np.nanquantile(means, [a, 1.0 - a], axis=0)
    lo, hi = np.nan_to_num(lo, nan=0.0), np.nan_to_num(hi, nan=1.0)   # it says nothing there
    return _on_grid(lo, edges, grid), _on_grid(hi, edges, grid), _on_grid(frac, edges, grid), grid


@band_method("family_bootstrap", simultaneous=True)
def _family_bootstrap(s, y, grid, level, *, family="isotonic", params=None, n_boot=200,
                      seed=0, **_):
    fam = families.resolve(family, params)[1]
    _min_points("family_bootstrap", s.size, max(int(fam.min_points), 10))
    fitted = clone(fam).fit(s, y)
    if not fitted.provides_map:
        raise ValueError(f"family {family!r} has no calibration map to draw a band around")
    centre = np.clip(fitted.predict(grid), 0.0, 1.0)
    reps = np.empty((int(n_boot), grid.size))
    for r, ix in enumerate(_resamples(s.size, n_boot, seed)):
        reps[r] = np.clip(clone(fam).fit(s[ix], y[ix]).predict(grid), 0.0, 1.0)
    # a floor of 1 / n on the spread: flat stretches (isotonic at 0 or 1) would
    # otherwise dominate the largest standardised deviation with 0 / 0
    sd = np.maximum(reps.std(axis=0, ddof=1), 1.0 / s.size)
    q = np.quantile(np.max(np.abs(reps - centre) / sd, axis=1), level)
    return np.clip(centre - q * sd, 0.0, 1.0), np.clip(centre + q * sd, 0.0, 1.0), centre, grid


@band_method("world", simultaneous=True)
def _world(s, y, grid, level, *, family="reference", params=None, n_boot=None, seed=0, **_):
    parts = world_parts(s, y, grid, family, params, n_boot, seed)
    lo, hi = world_ends(s, y, grid, level, parts)
    return lo, hi, parts.centre, grid


# ------------------------------------------------------------------ front
METHODS = ("auto",) + tuple(_BUILDERS)
OPTIONS = ("n_groups", "n_bins", "n_boot", "seed", "family", "params")


def band_validity(method: str, level: float, n: int, grid=None,
                  options: Mapping[str, Any] | None = None) -> domains.Validity:
    """Validity of ``method`` used at ``level`` on ``n`` points, on the default grid
    (``grid`` None) or another, with ``options``: read from the measured domain
    (:func:`fitontest.inference.domains.measured` ``("bands")``)."""
    settings = {k: v for k, v in (options or {}).items() if k in DOMAIN_OPTIONS}
    got = domains.measured("bands").validity(
        method, level=level, n=n, grid="default" if grid is None else "custom", **settings)
    if got.valid is None and method in _GUARANTEED:
        return domains.Validity(None, got.why + "; its finite-sample guarantee for a "
                                "non-decreasing map holds at every n "
                                "(docs/methods/11-tests-and-bands.md §11.9)")
    return got


def shape_validity(v: domains.Validity, shape, level: float) -> domains.Validity:
    """``v`` gated by the test of monotonicity ``shape`` (a result of
    :func:`~fitontest.inference.monotone_band.monotonicity_test`) at alpha = 1 - level:
    None where it rejects (False stays False), the test named either way."""
    test = (f"the test of monotonicity ({shape.method}, {shape.n_bins} score groups, "
            f"p = {shape.pvalue:.3g})")
    if shape.rejects(1.0 - level):
        why = (f"the band assumes a non-decreasing map and {test} rejects it at "
               f"{1.0 - level:g}: coverage not claimed (docs/methods/11-tests-and-bands.md §11.9)")
        return domains.Validity(False if v.valid is False else None,
                                f"{v.why}; {why}" if v.valid is False else why)
    return domains.Validity(v.valid, f"{v.why}; a non-decreasing map assumed, not rejected by "
                            f"{test}: a map that turns down by less than it detects is not "
                            "covered (benchmarks/measured/band_coverage.md)")


def reliability_band(scores, labels, level: float = 0.9, method: str = "auto", *,
                     grid=None, from_logits: bool | None = False, **options) -> ReliabilityBand:
    """Confidence band for the calibration map of (scores, labels).

    ``scores``: P(y = 1) of a binary task, read by the rule every entry point
    shares (:func:`fitontest.core.predictions.read`; docs/methods/01-binary-tasks.md §1.1):
    ``from_logits=True`` takes logits (a sigmoid first), None lets the values
    decide (a negative one: logits).

    ``grid``: where the band is given (an array of scores, or a number of
    points between the smallest and largest score; default 201 such points,
    plus every jump of the ends for ``monotone``: the grid whose coverage was
    measured). ``options``: ``n_groups`` (monotone), ``n_bins`` (bin methods,
    default 15), ``n_boot`` and ``seed`` (bootstrap methods and world),
    ``family`` and ``params`` (family_bootstrap, world). See the module
    docstring for the methods and what each guarantees.
    """
    level = _check_level(level)
    check_option("method", method, METHODS)
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ValueError(f"unknown option(s) {unknown}; reliability_band takes {OPTIONS}")
    from ..core import predictions

    raw = predictions.to_numpy(scores, "scores")
    if raw.ndim != 1:
        raise ValueError(f"scores must be 1-D (P(y = 1) of a binary task), got shape {raw.shape}")
    s = predictions.read(raw, predictions.kind_from_logits(from_logits), where="scores").probs[:, 1]
    s, y = check_binary(s, labels, need_both_classes=False)
    reason = AUTO_REASON if method == "auto" else f"{method}: as requested"
    method = AUTO if method == "auto" else method
    lo, hi, fit, g = _BUILDERS[method](s, y, _check_grid(grid, s), level,
                                       default_grid=grid is None, **options)
    v = band_validity(method, level, int(s.size), grid, options)
    shape = None
    if method in ASSUMES_MONOTONE:
        shape = monotonicity_test(s, y, seed=options.get("seed", 0))
        v = shape_validity(v, shape, level)
    if v.valid is False:
        warnings.warn(f"{method!r} reliability band: {v.why} "
                      "(docs/methods/11-tests-and-bands.md §11.9)", BandCoverageWarning,
                      stacklevel=2)
    return ReliabilityBand(s=g, lo=np.asarray(lo, dtype=np.float64),
                           hi=np.asarray(hi, dtype=np.float64), level=level, method=method,
                           simultaneous=SIMULTANEOUS[method], n=int(s.size),
                           fit=np.asarray(fit, dtype=np.float64), valid=v.valid,
                           options=dict(options), validity_note=v.why, reason=reason,
                           shape_pvalue=None if shape is None else shape.pvalue)


__all__ = ["ReliabilityBand", "reliability_band", "monotone_band_test", "monotonicity_test",
           "shape_validity", "ASSUMES_MONOTONE", "BandCoverageWarning",
           "METHODS", "SIMULTANEOUS", "AUTO", "AUTO_REASON", "band_method", "band_validity",
           "WorldParts", "world_parts", "world_ends", "WORLD_BAND_SCALE", "WORLD_BAND_WORLDS"]
