"""PL and PL3: the paper's piecewise-linear calibration-map families (docs/methods/04-pl.md §4).

- :mod:`.family`: the estimator (``pl_ce``, ``pl_mse``, ``pl3_ce``,
  ``pl3_mse``): cross-validation over the number of pieces, the averaged
  fold models, the prediction;
- :mod:`.algorithm`: the training algorithm, stated once: geometry of a map,
  initialisation, losses, mini-batch rule, chain rule, Adam, early stopping;
- :mod:`.trainer`: the batched trainer (every fold x k model at once) that
  runs the algorithm on a backend;
- :mod:`.numba_kernels`, :mod:`.torch_kernels`: the two backends' passes over
  the points (vectorised numba loops on the CPU; torch on CPU or CUDA);
  :mod:`.numba_train`: the numba backend's whole fit in one compiled call.

Importing this package imports neither numba nor torch; a fit does.
"""
from .family import PiecewiseLinearFamily
from .maps import evaluate_map

__all__ = ["PiecewiseLinearFamily", "evaluate_map"]
