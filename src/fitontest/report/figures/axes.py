"""The one Axes helper every figure module shares (matplotlib, Agg backend)."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def new_ax(ax=None, figsize=(4.2, 4.2)):
    """``ax``, or the Axes of a new figure of ``figsize`` when it is None."""
    if ax is None:
        _, ax = plt.subplots(figsize=figsize, constrained_layout=True)
    return ax
