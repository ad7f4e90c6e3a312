"""Smooth reliability diagram with a bootstrap band (Błasiok & Nakkiran 2023;
docs/methods/03-binary-families.md §3.10).

The curve is the smECE family's map c_hat (reflected Gaussian kernel at the
fixed-point bandwidth sigma*); the band holds the central ``level`` of the
maps of ``n_boot`` bootstrap resamples, smoothed at the same sigma* (the
bandwidth is not re-selected per resample, so the band shows the sampling
noise of the curve, not of the bandwidth choice). Below the curve, the
density of the scores (a histogram).
"""
from __future__ import annotations

import numpy as np

from fitontest import families
from fitontest.families.smece import smoothed_map
from fitontest.core.validation import check_binary
from .axes import new_ax


def smooth_band(scores, labels, sigma: float, at, *, n_boot: int = 200, level: float = 0.9,
                seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) pointwise bootstrap quantiles of the smoothed map at ``at``."""
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    if int(n_boot) < 2:
        raise ValueError(f"n_boot must be at least 2, got {n_boot!r}")
    s, y = np.asarray(scores, dtype=np.float64), np.asarray(labels, dtype=np.float64)
    rng = np.random.default_rng(seed)
    boots = np.empty((int(n_boot), np.size(at)))
    for b in range(int(n_boot)):      # one resample per pass; each pass is vectorised
        idx = rng.integers(0, s.size, s.size)
        boots[b] = smoothed_map(s[idx], y[idx], sigma, at)
    alpha = (1.0 - level) / 2.0
    return np.quantile(boots, alpha, axis=0), np.quantile(boots, 1.0 - alpha, axis=0)


def smooth_reliability_diagram(scores, labels, *, ax=None, n_boot: int = 200,
                               level: float = 0.9, seed: int = 0, n_points: int = 200,
                               title: str | None = None, color: str = "C3",
                               band: float | None = None):
    """Draw the smooth reliability diagram of (scores, labels) on ``ax``; returns ``ax``.

    ``band``: a level in (0, 1) shades the band of the calibration map of
    :func:`fitontest.inference.bands.reliability_band` (method ``auto``, its coverage
    measured: docs/methods/11-tests-and-bands.md §11.9) instead of the curve's pointwise
    bootstrap band, whose coverage of the map is not measured.
    """
    s, y = check_binary(scores, labels, need_both_classes=False)
    fam = families.get("smece").fit(s, y)
    t = np.linspace(0.0, 1.0, int(n_points))
    curve = fam.predict(t)
    ax = new_ax(ax, figsize=(4.5, 4.5))
    ax.plot([0, 1], [0, 1], ls="--", lw=1, color="0.5", label="perfect calibration")
    if band is None:
        lo, hi = smooth_band(s, y, fam.sigma_, t, n_boot=n_boot, level=level, seed=seed)
        ax.fill_between(t, lo, hi, color=color, alpha=0.25, lw=0,
                        label=f"{level:.0%} bootstrap band ({n_boot})")
        caption = ""
    else:
        from .reliability import draw_band, shape_caption

        caption = shape_caption(draw_band(ax, s, y, band))
    ax.plot(t, curve, color=color, lw=2, label="smoothed E[y | s]")
    hist, edges = np.histogram(s, bins=50, range=(0, 1))
    ax.bar(edges[:-1], 0.15 * hist / max(hist.max(), 1), width=np.diff(edges), align="edge",
           color="0.75", alpha=0.6, label="score density")
    ax.text(0.04, 0.92, f"smECE {fam.smece_:.4f} (σ = {fam.sigma_:.3f})",
            transform=ax.transAxes)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_aspect("equal")
    ax.set_xlabel("score s")
    ax.set_ylabel("E[y | s]")
    ax.legend(loc="lower right", fontsize="small", frameon=False)
    if title or caption:
        ax.set_title("\n".join(filter(None, (title, caption))),
                     fontsize=None if not caption else 8)
    return ax
