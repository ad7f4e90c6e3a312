"""The Axes and style helpers the figure modules share."""
from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt

# tab20 with the dark shades first, then the light ones: neighbours in a list
# of methods get far-apart hues, and up to 20 methods get distinct colours
_TAB20 = plt.get_cmap("tab20").colors
COLOURS = tuple(_TAB20[0::2]) + tuple(_TAB20[1::2])
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "*", "h")
LINES = ("-", "--", ":", "-.")


def new_ax(ax=None, figsize=(4.2, 4.2)):
    """``ax``, or the Axes of a new figure of ``figsize`` when it is None."""
    if ax is None:
        _, ax = plt.subplots(figsize=figsize, constrained_layout=True)
    return ax


def method_styles(names: Sequence) -> dict:
    """A distinct (colour, marker, linestyle) per name, in order: 20 colours,
    11 markers and 4 line styles, so every pair differs in colour or marker
    for up to 220 names (a 10-colour palette repeats after 10)."""
    out = {}
    for i, name in enumerate(names):
        out[name] = dict(color=COLOURS[i % len(COLOURS)], marker=MARKERS[i % len(MARKERS)],
                         ls=LINES[(i // len(COLOURS)) % len(LINES)])
    return out


def legend_outside(ax_or_fig, handles=None, labels=None, fontsize: float = 7, ncol: int = 1):
    """A legend to the right of the axes (or figure), off the data."""
    kw = dict(fontsize=fontsize, frameon=False, ncol=ncol)
    if hasattr(ax_or_fig, "transAxes"):
        args = () if handles is None else (handles, labels)
        return ax_or_fig.legend(*args, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                                borderaxespad=0.0, **kw)
    return ax_or_fig.legend(handles, labels, loc="outside right upper", **kw)
