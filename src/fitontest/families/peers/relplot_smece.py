"""relplot's smooth ECE, from relplot itself (Błasiok & Nakkiran 2023; package
``relplot``; docs/methods/03-binary-families.md §3.12). ``smece`` is our reimplementation
(docs/methods/03-binary-families.md §3.10); this family is the reference package's own numbers.

- Estimate (p = 1): ``relplot.smECE(f, y)``, the smECE at the fixed-point
  bandwidth sigma*. relplot has no L2 form: ``ce_est_sq`` is NaN.
- Map: relplot's reliability curve, ``prepare_rel_diagram(f, y)["mu"]`` -- the
  Nadaraya-Watson regression of y on f with relplot's reflected Gaussian
  kernel at sigma*, on its 200-point mesh -- read between mesh points by
  linear interpolation (``np.interp``).
- Own interval (``interval(...)``, whatever the configured ``method``):
  relplot's, from ``prepare_rel_diagram``:
  scipy's basic bootstrap (100 resamples) of smECE at 95 %, reported by
  relplot as the half-width ``ce_ci_width`` = the larger distance of the two
  ends from smECE, so the interval is smECE ± that width (lower end clipped
  at 0). Its level is relplot's 95 % whatever the config asks; the resamples
  come from NumPy's global state, here under the interval's seed.
"""
from __future__ import annotations

import numpy as np

from fitontest.metrics import check_p
from fitontest.families import register
from .base import PeerEstimate, global_numpy_seed, package_interval

#: relplot's level of its CE interval (``prepare_rel_diagram``'s 95 % bootstrap)
RELPLOT_LEVEL = 0.95
#: relplot's resamples of that bootstrap
RELPLOT_RESAMPLES = 100


@register("relplot_smece")
class RelplotSmECE(PeerEstimate):
    """relplot's smooth ECE, its reliability curve as the map, its 95 % bootstrap interval.

    Fitted: ``estimates_``, ``sigma_`` (relplot's bandwidth, the
    hyper-parameter), ``mesh_`` and ``mu_`` (the curve)."""

    package = "relplot"
    provides_map = True
    needs_both_classes = False
    estimand = "smECE"
    hyper_attr = "sigma_"

    def __init__(self):
        pass

    def _diagram(self, s, y, with_interval: bool) -> dict:
        relplot = self._module()
        return relplot.prepare_rel_diagram(s, y, plot_confidence_band=False,
                                           report_CE=True, report_CE_std=with_interval)

    def _estimates(self, s, y):
        out = self._diagram(s, y, with_interval=False)
        self.sigma_ = float(out["sigma"])
        self.mesh_ = np.asarray(out["mesh"], dtype=np.float64)
        self.mu_ = np.asarray(out["mu"], dtype=np.float64)
        return {1: (float(out["ce"]), np.nan), 2: (np.nan, np.nan)}

    def _predict(self, s):
        return np.interp(s, self.mesh_, self.mu_)

    def own_interval(self, scores, labels, *, p: int = 1, level: float = 0.9,
                     n_boot: int = 100, seed=0):
        """relplot's own 95 % interval of smECE (p = 1; ``level`` and ``n_boot``
        are relplot's own: unused)."""
        if check_p(p) != 1:
            raise ValueError("relplot's interval is of smECE (p = 1); it has no p = 2 form")
        s, y = self._check_sample(scores, labels)
        with global_numpy_seed(seed):
            out = self._diagram(s, y, with_interval=True)
        ce, width = float(out["ce"]), float(out["ce_ci_width"])
        return package_interval(ce, ce - width, ce + width, RELPLOT_LEVEL, RELPLOT_RESAMPLES,
                            1, ce)
