"""Reliability diagrams (Figure 4) and the diagonal-filling geometry.

The bins are the binning family's (docs/methods/02-binning.md §2): a fixed-B
:class:`~fitontest.families.binning.BinningFamily` is fitted and its edges,
bin statistics and bin of every point are drawn, so a diagram shows exactly
the bins whose classic ECE ``ece_es15`` / ``ece_ew15`` report.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from matplotlib.patches import Polygon

from fitontest.core.validation import check_binary, check_option
from fitontest.families.binning import SCHEMES, BinningFamily
from .axes import new_ax

STYLES = ("bars", "bars_centres", "histogram", "diagonal_filling")
_UNDER = "#1f77b4"   # ȳ > s̄: under-confident (blue)
_OVER = "#d62728"    # ȳ < s̄: over-confident (red)

# ---------------------------------------------------------------------------
# binning and the diagonal-filling geometry


@dataclass
class FillingGeometry:
    """Per-bin geometry of the diagonal-filling reliability diagram.

    In bin b the filling is the band between the diagonal and the slope-1 map
    ĉ(s) = s + gap_b, gap_b = ȳ_b − s̄_b, over the bin's interval [lo_b, hi_b].
    Its vertical distance to the diagonal is |gap_b| everywhere in the bin, so
    the instance-weighted distance Σ_b weight_b·|gap_b| (weight_b = n_b / n) is
    the classic ECE (Theorem 2). Empty bins have weight 0, gap 0 and no polygon.
    """

    edges: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    counts: np.ndarray
    weights: np.ndarray
    mean_score: np.ndarray
    mean_label: np.ndarray
    gap: np.ndarray
    polygons: list            # (4, 2) vertex arrays, None for empty bins
    bin_index: np.ndarray     # bin of every data point

    @property
    def ece(self) -> float:
        return float(np.sum(self.weights * np.abs(self.gap)))

    def top(self, s) -> np.ndarray:
        """The filling's upper/lower boundary (slope-1 map) at scores ``s``."""
        s = np.asarray(s, dtype=np.float64)
        b = np.clip(np.searchsorted(self.edges[1:-1], s, side="right"), 0, self.gap.size - 1)
        return s + self.gap[b]


def diagonal_filling_geometry(scores, labels, n_bins: int = 15,
                              scheme: str = "ew") -> FillingGeometry:
    """Pure geometry of the diagonal filling (no plotting); see :class:`FillingGeometry`."""
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be 'ew' or 'es', got {scheme!r}")
    if int(n_bins) < 1:
        raise ValueError(f"n_bins must be >= 1, got {n_bins}")
    s, y = check_binary(scores, labels, need_both_classes=False,
                        min_points=BinningFamily.min_points)
    fam = BinningFamily(scheme=scheme, n_bins=int(n_bins), selection="fixed").fit(s, y)
    edges, counts, gap, B = fam.edges_, fam.bin_counts_, fam.bin_shift_, fam.n_bins_
    mean_s, mean_y, idx = fam.bin_mean_scores_, fam.bin_mean_labels_, fam.bin_index(s)
    nz = counts > 0
    lo, hi = edges[:-1].copy(), edges[1:].copy()
    polys = []
    for b in range(B):
        if not nz[b]:
            polys.append(None)
            continue
        polys.append(np.array([[lo[b], lo[b]], [hi[b], hi[b]],
                               [hi[b], hi[b] + gap[b]], [lo[b], lo[b] + gap[b]]]))
    return FillingGeometry(edges=edges, lo=lo, hi=hi, counts=counts, weights=counts / s.size,
                           mean_score=mean_s, mean_label=mean_y, gap=gap, polygons=polys,
                           bin_index=idx)


# ---------------------------------------------------------------------------
# reliability diagrams (Figure 4)


BAND_COLOUR = "#6a3d9a"   # purple: apart from the bars' blue and the filling's red/blue


def draw_band(ax, scores, labels, level: float, color: str = BAND_COLOUR, **options):
    """Shade the :func:`fitontest.inference.bands.reliability_band` of (scores, labels) at
    ``level`` (method ``auto`` unless ``options`` say otherwise) on ``ax``; the
    legend entry names the level, pointwise or simultaneous, the method and,
    unless valid, why (the monotone shape rejected, coverage not measured here)."""
    from fitontest.inference.bands import reliability_band

    band = reliability_band(scores, labels, level=level, **options)
    band.plot(ax, color=color, alpha=0.2)
    return band


def shape_caption(band) -> str:
    """The caption's words when the data reject the shape the band assumes
    ("" otherwise): the band then claims no coverage (docs/methods/11-tests-and-bands.md §11.9)."""
    if band is None or not band.shape_rejected:
        return ""
    return (f"band: non-decreasing map rejected (monotonicity p = {band.shape_pvalue:.2g}), "
            "no coverage claimed")


def reliability_diagram(scores, labels, n_bins: int = 15, scheme: str = "ew",
                        style: str = "bars", ax=None, title: str | None = None,
                        band: float | None = None):
    """Reliability diagram in one of the four styles of the paper's Figure 4.

    - "bars": one bar per bin, height = fraction of positives ȳ_b;
    - "bars_centres": the bars plus each bin's centre of mass (s̄_b, ȳ_b) and
      its gap to the diagonal;
    - "histogram": the bars plus the histogram of the scores (right axis);
    - "diagonal_filling": per bin, the band between the diagonal and the
      slope-1 map s + (ȳ_b − s̄_b); its instance-weighted height is the ECE.

    ``band``: a level in (0, 1) shades the band of the calibration map at that
    level (:func:`draw_band`, docs/methods/11-tests-and-bands.md §11.9) and adds a legend; None
    draws none.
    """
    check_option("style", style, STYLES)
    g = diagonal_filling_geometry(scores, labels, n_bins, scheme)
    ax = new_ax(ax)
    nz = g.counts > 0
    ax.plot([0, 1], [0, 1], color="0.4", lw=1, ls="--", zorder=5, label="perfect calibration")
    width = g.hi - g.lo
    if style in ("bars", "bars_centres"):
        ax.bar(g.lo[nz], g.mean_label[nz], width=width[nz], align="edge", color="#9ecae1",
               edgecolor="#08519c", lw=0.8, zorder=2, label="fraction of positives")
    if style == "histogram":   # outlined bars, so the score histogram shows beneath
        ax.bar(g.lo[nz], g.mean_label[nz], width=width[nz], align="edge", fill=False,
               edgecolor="#08519c", lw=1.4, zorder=3, label="fraction of positives")
    if style == "bars_centres":
        for b in np.flatnonzero(nz):
            ax.plot([g.mean_score[b]] * 2, [g.mean_score[b], g.mean_label[b]],
                    color=_OVER if g.gap[b] < 0 else _UNDER, lw=1.5, zorder=3)
        ax.scatter(g.mean_score[nz], g.mean_label[nz], s=14, color="k", zorder=4,
                   label="bin centre (s̄, ȳ)")
    if style == "histogram":
        ax2 = ax.twinx()
        ax2.bar(g.lo[nz], g.counts[nz] / g.counts.sum(), width=width[nz], align="edge",
                color="0.55", alpha=0.45, lw=0)
        ax.set_zorder(ax2.get_zorder() + 1)   # reliability bars and diagonal on top
        ax.patch.set_visible(False)
        top = g.weights.max() if g.weights.size else 1.0
        ax2.set_ylim(0, 4 * max(top, 1e-12))
        ax2.set_ylabel("share of scores", color="0.4")
        ax2.tick_params(axis="y", colors="0.4", labelsize=7)
    if style == "diagonal_filling":
        wmax = g.weights.max() if g.weights.size else 1.0
        for b in np.flatnonzero(nz):
            colour = _OVER if g.gap[b] < 0 else _UNDER
            alpha = 0.25 + 0.6 * g.weights[b] / max(wmax, 1e-12)
            ax.add_patch(Polygon(g.polygons[b], closed=True, facecolor=colour, alpha=alpha,
                                 edgecolor=colour, lw=0.6, zorder=2))
            ax.plot([g.lo[b], g.hi[b]], [g.lo[b] + g.gap[b], g.hi[b] + g.gap[b]],
                    color=colour, lw=1.2, zorder=3)
        for e in g.edges[1:-1]:
            ax.axvline(e, color="0.85", lw=0.5, zorder=0)
        lo_y = min(0.0, float(np.nanmin(g.lo + g.gap))) if nz.any() else 0.0
        hi_y = max(1.0, float(np.nanmax(g.hi + g.gap))) if nz.any() else 1.0
        ax.set_ylim(lo_y - 0.01, hi_y + 0.01)
    else:
        ax.set_ylim(0, 1)
    drawn = None
    if band is not None:
        drawn = draw_band(ax, scores, labels, band)
        ax.legend(fontsize=6.5, loc="upper left", framealpha=0.85)
    ax.set_xlim(0, 1)
    ax.set_xlabel("score s")
    ax.set_ylabel("fraction of positives")
    caption = shape_caption(drawn)
    ax.set_title((title or f"{style.replace('_', ' ')}: ECE = {g.ece:.4f} "
                  f"({scheme.upper()}, {len(g.counts)} bins)")
                 + (f"\n{caption}" if caption else ""), fontsize=9)
    return ax
