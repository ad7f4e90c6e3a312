"""Critical-difference diagram (Demšar 2006; docs/methods/11-verdicts.md §11.6) of a table's
Friedman blocks."""
from __future__ import annotations

import pandas as pd
import scikit_posthocs as sp

from fitontest.inference.stats import average_ranks, complete_blocks, nemenyi
from .axes import new_ax


def critical_difference_diagram(blocks: pd.DataFrame, *, lower_is_better: bool = True,
                                alpha: float = 0.05, ax=None, title: str | None = None):
    """Average ranks (1 = best) of the methods (columns of ``blocks``) over
    the complete blocks (rows), methods whose Nemenyi post-hoc test
    (scikit_posthocs.posthoc_nemenyi_friedman) cannot tell them apart at
    ``alpha`` joined by a bar; drawn by scikit_posthocs.critical_difference_diagram.
    Needs at least three methods and two complete blocks (else ValueError)."""
    w = complete_blocks(blocks)
    if w.shape[1] < 3 or w.shape[0] < 2:
        raise ValueError(f"a critical-difference diagram needs >= 3 methods and >= 2 complete "
                         f"blocks, got {w.shape[1]} methods and {w.shape[0]} blocks")
    w.columns = [str(c) for c in w.columns]
    ranks = average_ranks(w, lower_is_better)
    ax = new_ax(ax, figsize=(6.0, 0.9 + 0.22 * w.shape[1]))
    sp.critical_difference_diagram(ranks, nemenyi(w), alpha=alpha, ax=ax)
    ax.set_title((f"{title}: " if title else "") +
                 f"average rank over {w.shape[0]} blocks (1 = best; bars: Nemenyi p ≥ {alpha:g})",
                 fontsize=8)
    return ax
