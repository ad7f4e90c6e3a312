"""uncertainty-calibration's debiased calibration error (Kumar, Liang & Ma 2019,
"Verified uncertainty calibration"; package ``uncertainty-calibration``, module
``calibration``; docs/methods/03-binary-families.md §3.12).

``calibration.get_calibration_error(probs, labels, p, debias)`` on the binary
scores: 15 equal-mass bins (``lower_bound_scaling_ce``), or one bin per
distinct score when fewer than n / 4 scores are distinct (``is_discrete``: the
scores of a binning or isotonic calibrator), as the package decides.

- p = 2, ``debias=True``: the package returns the *root* of the debiased
  squared binned CE, max(sum_b w_b [(ybar_b - sbar_b)^2 - ybar_b(1 - ybar_b) /
  (n_b - 1)], 0)^(1/2); ``ce_est_debiased_sq`` is its square (the project's
  p = 2 convention: squared), ``ce_est_sq`` the square of the plug-in
  (``debias=False``).
- p = 1, ``debias=True``: the package's debiased L1 (2 x plug-in minus the
  mean of 1000 plug-ins with the bins' label means redrawn from normals),
  drawn from NumPy's global state: run under the family's ``seed``
  (:func:`~.base.global_numpy_seed`). The package refuses it when a bin holds
  one point (possible with one bin per distinct score): NaN then, and the
  tables use the plug-in ``ce_est`` (``debias=False``).

Own interval (``own_interval``, used whatever the configured ``method``, which
names our bootstrap's methods): the package's
``get_calibration_error_uncertainties`` -- a basic bootstrap of the plug-in
binned CE, 1 - alpha at ``alpha`` given in percent (its ``bootstrap_uncertainty``
reads alpha as a percentage: the public function's default ``alpha=0.1`` is a
99.9 % interval, so we pass 100 (1 - level)) -- with ``n_boot`` resamples (the
public function fixes 100) from the global state under the interval's seed.
No map: the bins' map is ``ece_es15``'s.
"""
from __future__ import annotations

import numpy as np

from fitontest.metrics import check_p
from fitontest.families import register
from .base import PeerEstimate, global_numpy_seed, package_interval


@register("ucal_debiased")
class UcalDebiased(PeerEstimate):
    """uncertainty-calibration's debiased binned CE (L1, squared L2) and bootstrap interval.

    ``seed``: NumPy's global state during the debiased L1 (restored after).
    Fitted: ``estimates_``."""

    package = "calibration"
    estimand = "binned"

    def __init__(self, seed: int = 0):
        self.seed = seed

    def _estimates(self, s, y):
        cal = self._module()
        yi = y.astype(np.int64)
        plug1 = float(cal.get_calibration_error(s, yi, p=1, debias=False))
        plug2 = float(cal.get_calibration_error(s, yi, p=2, debias=False))
        deb2 = float(cal.get_calibration_error(s, yi, p=2, debias=True))
        try:
            with global_numpy_seed(self.seed):
                deb1 = float(cal.get_calibration_error(s, yi, p=1, debias=True))
        except ValueError:                      # a one-point bin: the package refuses
            deb1 = np.nan
        return {1: (plug1, deb1), 2: (plug2 ** 2, deb2 ** 2)}

    def own_interval(self, scores, labels, *, p: int = 1, level: float = 0.9,
                     n_boot: int = 100, seed=0):
        """The package's bootstrap interval at ``level`` with ``n_boot`` resamples."""
        p = check_p(p)
        s, y = self._check_sample(scores, labels)
        cal = self._module()
        utils = self._module("calibration.utils")
        data = list(zip(s, y.astype(np.int64)))

        def plug_in(sample):                    # the package's ce_functional
            probs, labs = zip(*sample)
            return cal.get_calibration_error(probs, labs, p, debias=False, mode="marginal")

        with global_numpy_seed(seed):
            lo, _, hi = utils.bootstrap_uncertainty(data, plug_in, num_samples=int(n_boot),
                                                    alpha=100.0 * (1.0 - float(level)))
        if p == 2:                              # the package's interval is of the root
            lo, hi = max(lo, 0.0) ** 2, max(hi, 0.0) ** 2
        used = self.ce_estimate_debiased(s, p)
        used = used if np.isfinite(used) else self.ce_estimate(s, p)
        return package_interval(used, lo, hi, level, n_boot, p, self.ce_estimate(s, p))
