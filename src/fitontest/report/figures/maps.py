"""Fit-on-test diagram (Figure 5) and logit-logit plot (Figure 7)."""
from __future__ import annotations

from typing import Mapping

import numpy as np

from fitontest.core.validation import check_binary, check_scores, logit
from .axes import new_ax

def family_and_name(family_or_name):
    """A fresh, unfitted family from a name or an estimator (cloned)."""
    from fitontest import families

    if isinstance(family_or_name, str):
        return families.resolve(family_or_name)[1], family_or_name
    name = getattr(family_or_name, "name", None)
    if not isinstance(name, str):
        name = repr(family_or_name)             # sklearn repr: class + non-default params
        name = name if len(name) <= 40 else type(family_or_name).__name__
    return families.resolve(family_or_name)[1], name


def _eval_map(m, s: np.ndarray) -> np.ndarray:
    """Values of a map at sorted scores ``s``: a callable, a fitted family
    (``predict``) or an array aligned with ``s``."""
    if hasattr(m, "predict"):
        return np.asarray(m.predict(s), dtype=np.float64)
    if callable(m):
        return np.asarray(m(s), dtype=np.float64)
    arr = np.asarray(m, dtype=np.float64)
    if arr.shape != s.shape:
        raise ValueError(f"a map given as an array must have one value per score "
                         f"({s.shape[0]}), got shape {arr.shape}")
    return arr


def fit_on_test_diagram(family_or_name, scores, labels, true_map=None, ax=None, p: int = 1,
                        n_grid: int = 400, band: float | None = None):
    """Figure 5: fit a family on (scores, labels) and draw its map ĉ.

    ``family_or_name``: a registered name or an estimator (cloned, then fitted
    on these data). ``true_map``: a callable c(s) or an array of c(s_i)
    aligned with ``scores``. The title gives the CE estimate mean |ĉ(s) − s|^p
    (and the debiased one where the family has it) and the true CE.
    ``band``: a level in (0, 1) shades the band of the calibration map from
    the same data (:func:`fitontest.inference.bands.reliability_band`, method ``auto``).
    """
    s, y = check_binary(scores, labels, need_both_classes=False)
    fam, name = family_and_name(family_or_name)
    fam.fit(s, y)
    return draw_fit_on_test(fam, name, s, true_map, ax, p, n_grid, y=y, band=band)


def draw_fit_on_test(fam, name, s, true_map, ax, p, n_grid, y=None, band=None):
    ax = new_ax(ax)
    ax.plot([0, 1], [0, 1], color="0.4", lw=1, ls="--", label="diagonal")
    drawn = None
    if band is not None:
        if y is None:
            raise ValueError("a band needs the labels: pass y")
        from .reliability import draw_band

        drawn = draw_band(ax, s, y, band)
    parts = []
    if fam.provides_map:
        grid = np.linspace(s.min(), s.max(), n_grid)
        ax.plot(grid, fam.predict(grid), color="C1", lw=2, label=f"{name} (fit on test)")
    parts.append(f"CE est. {fam.ce_estimate(s, p=p):.4f}")
    debiased = fam.ce_estimate_debiased(s, p=p)         # NaN: the family has none
    if np.isfinite(debiased):
        parts.append(f"debiased {debiased:.4f}")
    if true_map is not None:
        order = np.argsort(s)
        c = _eval_map(true_map, s[order]) if callable(true_map) else \
            _eval_map(np.asarray(true_map, dtype=np.float64)[order], s[order])
        ax.plot(s[order], c, color="k", lw=1.2, label="true map")
        d = np.abs(s[order] - c)
        parts.append(f"true CE {float(np.mean(d if p == 1 else d * d)):.4f}")
    rug = s if s.size <= 3000 else s[np.linspace(0, s.size - 1, 3000).astype(int)]
    ax.plot(rug, np.zeros_like(rug), "|", color="0.3", ms=6, alpha=0.3)
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("score s")
    ax.set_ylabel("estimated calibrated probability ĉ(s)")
    from .reliability import shape_caption

    caption = shape_caption(drawn)
    ax.set_title(f"{name}: " + ", ".join(parts) + (f"\n{caption}" if caption else ""),
                 fontsize=8)
    ax.legend(fontsize=7, loc="upper left")
    return ax


def logit_logit_plot(maps: Mapping[str, object], scores, true_map=None, ax=None):
    """Figure 7: calibration maps in logit-logit space.

    ``maps``: name -> callable, fitted family, or array aligned with
    ``scores``; ``true_map`` likewise. x = logit(s), y = logit(ĉ(s)).
    """
    s0 = check_scores(scores)
    order = np.argsort(s0)
    s = s0[order]
    ax = new_ax(ax)
    z = logit(s)
    ax.plot([z[0], z[-1]], [z[0], z[-1]], color="0.4", lw=1, ls="--", label="identity")

    def values(m):
        if hasattr(m, "predict") or callable(m):
            return _eval_map(m, s)
        return _eval_map(np.asarray(m, dtype=np.float64)[order], s)

    for i, (name, m) in enumerate(maps.items()):
        ax.plot(z, logit(np.clip(values(m), 0.0, 1.0)), lw=1.5, color=f"C{i % 10}", label=name)
    if true_map is not None:
        ax.plot(z, logit(np.clip(values(true_map), 0.0, 1.0)), color="k", lw=2, label="true map")
    margin = 0.1 * max(z[-1] - z[0], 1.0)
    ax.set_xlim(z[0] - margin, z[-1] + margin)
    ax.set_ylim(z[0] - 2 * margin, z[-1] + 2 * margin)
    ax.set_xlabel("logit(s)")
    ax.set_ylabel("logit(ĉ(s))")
    ax.legend(fontsize=7)
    return ax
