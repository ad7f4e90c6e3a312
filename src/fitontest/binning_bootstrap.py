"""Former home of the batched binning replicates, kept for its one function.

The replicates are now the binning family's own capability,
:meth:`fitontest.families.binning.BinningFamily.bootstrap_replicates`, which
runs the binning code of :mod:`fitontest.families.bincounts` (the same code a
plain fit runs) on many resamples (docs/methods.md §11.2).
"""
from __future__ import annotations

import numpy as np


def replicate_estimates(fam, s: np.ndarray, y: np.ndarray, idx: np.ndarray,
                        p: int = 1) -> np.ndarray:
    """Used L^p estimate of ``fam`` refitted on every row ``s[idx[r]], y[idx[r]]``."""
    return fam.bootstrap_replicates(s, y, [np.asarray(idx)], p=p)
