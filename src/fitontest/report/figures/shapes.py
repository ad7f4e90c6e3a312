"""The synthetic study's calibration-map shapes (Figure 8)."""
from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np


def synthetic_shapes_figure(shapes: Sequence[str] | None = None,
                            ce_levels: Sequence[float] = (0.05, 0.1), ax=None):
    """Figure 8: each base shape's true calibration map c(p) (p = f(c)) and
    two derivates f_a with true CE in ``ce_levels``.

    ``ax``: None (one row of panels is made) or a sequence of Axes, one per
    shape. Returns the array of Axes.
    """
    from fitontest.data import synthetic

    shapes = list(synthetic.SHAPES if shapes is None else shapes)
    if ax is None:
        fig, axes = plt.subplots(1, len(shapes), figsize=(2.6 * len(shapes), 2.9),
                                 constrained_layout=True, squeeze=False)
        axes = axes[0]
    else:
        axes = np.atleast_1d(np.asarray(ax, dtype=object))
        if axes.size != len(shapes):
            raise ValueError(f"need one Axes per shape ({len(shapes)}), got {axes.size}")
    c = np.linspace(0.0, 1.0, 801)
    for a, shape in zip(axes, shapes):
        a.plot([0, 1], [0, 1], color="0.6", lw=0.8, ls="--")
        base = synthetic.BASE_SHAPES[shape]
        a.plot(base(c), c, color="k", lw=1.8, label=f"base (CE {synthetic.base_ce(shape):.3f})")
        for i, ce in enumerate(ce_levels):
            if ce > synthetic.base_ce(shape):
                continue
            a.plot(synthetic.forward(shape, ce)(c), c, lw=1.3, color=f"C{i}", label=f"CE {ce:g}")
        a.set_title(shape, fontsize=9)
        a.set_xlim(0, 1)
        a.set_ylim(0, 1)
        a.set_aspect("equal")
        a.set_xlabel("prediction p")
        a.legend(fontsize=6, loc="upper left")
    axes[0].set_ylabel("true calibration map c(p)")
    return axes
