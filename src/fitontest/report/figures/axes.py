"""The one Axes helper every figure module shares."""
from __future__ import annotations

import matplotlib.pyplot as plt


def new_ax(ax=None, figsize=(4.2, 4.2)):
    """``ax``, or the Axes of a new figure of ``figsize`` when it is None."""
    if ax is None:
        _, ax = plt.subplots(figsize=figsize, constrained_layout=True)
    return ax
