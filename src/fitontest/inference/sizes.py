"""Sizes that several methods share, each written once.

- :func:`reference_bin_count`: the number of equal-size bins of the worlds'
  reference map (docs/methods/14-chooser.md §14), b = n^(1/3) (bins of about n^(2/3)
  points), between 1 and n // 10: the worlds (:func:`fitontest.inference.worlds.reference_gap`)
  and the ``world`` reliability band (:mod:`fitontest.inference.bands`) refit the same map.
- :data:`CHUNK_CELLS` and :func:`chunk_rows`: label matrices of redrawn worlds
  or resamples are built in blocks of about 4 million cells (32 MB of float64),
  small enough for a laptop, large enough that the per-block Python overhead
  does not show.
"""
from __future__ import annotations

import numpy as np

CHUNK_CELLS = 4_000_000


def reference_bin_count(n: int) -> int:
    """Equal-size bins of the reference map for ``n`` points: round(n^(1/3)),
    between 1 and n // 10."""
    return int(np.clip(round(n ** (1.0 / 3.0)), 1, max(1, n // 10)))


def chunk_rows(n: int, cells: int = CHUNK_CELLS) -> int:
    """Rows of ``n`` cells each per block of about ``cells`` cells (at least 1)."""
    return max(1, int(cells) // max(int(n), 1))


__all__ = ["CHUNK_CELLS", "reference_bin_count", "chunk_rows"]
