"""What every peer family shares (docs/methods/03-binary-families.md §3.12): importing its package
lazily, naming the extra when it is missing, running a package that draws from
NumPy's global random state under a seed of ours, and the estimate-only base
class."""
from __future__ import annotations

import contextlib
import importlib
from typing import Iterator

import numpy as np
from sklearn.utils.validation import check_is_fitted

from fitontest.metrics import check_p
from fitontest.core.extras import MissingExtraError
from fitontest.families.base import CalibrationFamily, MissingCapability, OwnInterval

#: the extra that installs every peer's package
EXTRA = "peers"


def peer_module(module: str, what: str):
    """``importlib.import_module(module)``, or :class:`MissingExtraError` naming
    the package, the family that needs it (``what``) and the extra."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise MissingExtraError(f"{what} needs the package {module.split('.')[0]!r}, not "
                                f"installed ({err}): pip install 'fitontest[{EXTRA}]'") from None


def int_seed(seed) -> int:
    """A 32-bit seed for NumPy's legacy global state from an int or a sequence
    of ints (the workflow seeds a subset's resamples with ``[seed, size, seed]``)."""
    return int(np.random.SeedSequence(seed).generate_state(1)[0])


@contextlib.contextmanager
def global_numpy_seed(seed) -> Iterator[None]:
    """NumPy's global random state seeded with ``seed`` inside the block and
    restored after it: relplot's and uncertainty-calibration's bootstraps (and
    the latter's debiased L1) draw from it, so with the same seed they repeat,
    and the caller's draws are untouched."""
    saved = np.random.get_state()
    np.random.seed(int_seed(seed))
    try:
        yield
    finally:
        np.random.set_state(saved)


class PeerEstimate(CalibrationFamily):
    """A peer's CE estimate of its fitting sample, computed by its package at fit time.

    Subclasses set ``package`` (the import name) and ``p2`` (whether the
    package has a p = 2 estimate) and implement ``_estimates(s, y)`` returning
    (plug-in, debiased) per p as ``{1: (est, debiased), 2: (est, debiased)}``
    (NaN where the package has none). ``ce_estimate(s, 2)`` is NaN where the
    package has no L2 form: the tables leave those cells empty. Without a
    map (``provides_map = False``), ``predict`` raises
    :class:`~fitontest.families.base.MissingCapability`. Like ``kce`` the
    estimate belongs to the fitting sample."""

    provides_map = False
    needs_both_classes = True
    package: str = ""

    def _module(self, name: str | None = None):
        return peer_module(name or self.package, f"the {type(self).__name__} evaluator")

    def _fit(self, s, y):
        # families with a map (provides_map) fit it in _estimates too
        self.estimates_ = self._estimates(s, y)

    def _estimates(self, s, y) -> dict[int, tuple[float, float]]:  # pragma: no cover
        raise NotImplementedError

    def ce_estimate(self, scores, p: int = 1) -> float:
        """The package's estimate (p = 1) or its L2 counterpart (p = 2, NaN if none)."""
        self._fitting_sample(scores)
        return float(self.estimates_[check_p(p)][0])

    def ce_estimate_debiased(self, scores, p: int = 1) -> float:
        self._fitting_sample(scores)
        return float(self.estimates_[check_p(p)][1])

    def predict(self, scores):
        check_is_fitted(self, "n_fit_")
        if not self.provides_map:
            raise MissingCapability(f"{type(self).__name__} gives no calibration map (the "
                                    f"package {self.package!r} estimates the CE only)")
        return super().predict(scores)


def package_interval(estimate: float, lo: float, hi: float, level: float, n_boot: int,
                 p: int, target: float) -> OwnInterval:
    """The package's interval as an :class:`~fitontest.families.base.OwnInterval`,
    ``lo`` and ``hi`` clipped at 0 (no CE is negative)."""
    return OwnInterval(float(estimate), max(float(lo), 0.0), max(float(hi), 0.0), float(level),
                       int(n_boot), int(p), float(target))
