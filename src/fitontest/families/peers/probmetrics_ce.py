"""probmetrics' cross-fitted calibration errors (Berta, Holzmüller, Jordan & Bach
2025; package ``probmetrics``; docs/methods/03-binary-families.md §3.12).

probmetrics' ``MetricsWithCalibration`` splits the sample in 5 stratified folds
(``CVSplitter(5)``, seed ``random_state``), fits a post-hoc calibrator g on 4
and predicts the fifth, and reports the loss gain of the out-of-fold g over
the scores f, ``calib-err = mean l(f, y) - mean l(g, y)``, for proper losses l:

- p = 1: ``calib-err_proper-L1-binary-as-1d_<cal>_cv-5``, the proper L1 loss
  centred at f, whose gain is mean sign(g_i - f_i)(y_i - f_i): a variational
  (lower-bound) estimate of the L1 CE E|c(f) - f|, unbiased for
  E[sign(g - f)(c(f) - f)] because g_i never saw y_i; it can be negative.
  (Its L2 and Linf versions are the same number on a binary task.)
- p = 2: half of ``calib-err_brier_<cal>_cv-5``: probmetrics' Brier loss sums
  over both classes (twice the 1-D Brier score), and the 1-D Brier gain
  E(f - y)^2 - E(g - y)^2 = E(f - c)^2 - E(g - c)^2 estimates the squared
  L2 CE from below (the **ce_est_sq** convention: squared, not its root).

Calibrators (``<cal>``): ``WS_CatboostClassifier`` (``probmetrics_catboost``:
CatBoost boosting from the scores' logits, itself 8-fold with a quadratic
logistic recalibration of its out-of-fold predictions), ``isotonic-mix``
(``probmetrics_isotonic``) and ``ts-mix`` (``probmetrics_ts``: temperature
scaling), each mixed with a constant as the package does. The package keeps
no calibrator, so these families have no map.

Two changes of execution, not of result, during the fit (:func:`quiet_run`):

- ``WS_CatboostClassifier.fit`` maps its 8 folds over a ``multiprocessing.Pool``;
  forked from a process whose torch thread pool has started, the workers
  deadlocked (observed here, twice in three runs). The pool is a serial one
  (:class:`SerialPool`): the same function on the same folds in order, the
  same models (CatBoost's seed fixed, one thread); tests/test_peers.py checks
  the estimate against the package's own ``Metrics.from_names`` under the
  same serial pool.
- CatBoost writes its training logs to ``catboost_info/`` in the working
  directory (probmetrics gives no way to turn that off), which parallel
  workflow jobs would share: the fit runs in a temporary directory.
"""
from __future__ import annotations

import contextlib
from typing import Iterator

import numpy as np

from fitontest.families import register
from .base import PeerEstimate

#: probmetrics' name of each calibrator and how it builds it
CALIBRATORS = ("WS_CatboostClassifier", "isotonic-mix", "ts-mix")
#: probmetrics' cross-fitting folds (its registered ``cv-5`` metrics)
N_FOLDS = 5


class SerialPool:
    """``multiprocessing.Pool``'s ``map`` in this process, in order."""

    def __init__(self, processes=None, *args, **kwargs):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    @staticmethod
    def map(func, iterable, chunksize=None):
        return [func(x) for x in iterable]


@contextlib.contextmanager
def serial_pool() -> Iterator[None]:
    """``multiprocessing.Pool`` replaced by :class:`SerialPool` inside the block."""
    import multiprocessing

    saved = multiprocessing.Pool
    multiprocessing.Pool = SerialPool  # type: ignore[assignment]
    try:
        yield
    finally:
        multiprocessing.Pool = saved


@contextlib.contextmanager
def quiet_run() -> Iterator[None]:
    """:func:`serial_pool`, in a temporary working directory (CatBoost's logs)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="fitontest-catboost-") as tmp, \
            contextlib.chdir(tmp), serial_pool():
        yield


def metric_names(calibrator: str) -> tuple[str, str]:
    """probmetrics' names of the L1 and the Brier cross-fitted calibration errors."""
    tail = f"_{calibrator}_cv-{N_FOLDS}"
    return f"calib-err_proper-L1-binary-as-1d{tail}", f"calib-err_brier{tail}"


@register("probmetrics_catboost", calibrator="WS_CatboostClassifier")
@register("probmetrics_isotonic", calibrator="isotonic-mix")
@register("probmetrics_ts", calibrator="ts-mix")
class ProbmetricsCrossFitted(PeerEstimate):
    """probmetrics' cross-fitted calibration error (L1 loss gain; half the Brier gain at p = 2).

    ``calibrator``: one of :data:`CALIBRATORS`; ``seed``: the folds' (and
    CatBoost's) random state, probmetrics' 0 by default. Fitted:
    ``estimates_``."""

    package = "probmetrics"
    estimand = "population"

    def __init__(self, calibrator: str = "WS_CatboostClassifier", seed: int = 0):
        self.calibrator = calibrator
        self.seed = seed

    def _metrics(self):
        """probmetrics' ``MetricsWithCalibration`` of the two losses, built as the
        package builds its registered ``calib-err_*_cv-5`` metrics."""
        metrics = self._module("probmetrics.metrics")
        calibrators = self._module("probmetrics.calibrators")
        splitters = self._module("probmetrics.splitters")
        if self.calibrator == "WS_CatboostClassifier":
            self._module("catboost")
            cal = self._module("probmetrics.classifiers").WS_CatboostClassifier()
            name = None                                   # the class name, as probmetrics
        elif self.calibrator in ("isotonic-mix", "ts-mix"):
            method = {"isotonic-mix": "isotonic", "ts-mix": "temp-scaling"}[self.calibrator]
            cal = calibrators.get_calibrator(method, calibrate_with_mixture=True)
            name = self.calibrator
        else:
            raise ValueError(f"calibrator must be one of {CALIBRATORS}, got {self.calibrator!r}")
        losses = metrics.CombinedMetrics([metrics.ProperLpLoss(p=1), metrics.BrierLoss()])
        return metrics.MetricsWithCalibration(losses, cal, val_splitter=splitters.CVSplitter(
            n_cv=N_FOLDS), cal_name=name, random_state=int(self.seed))

    def _estimates(self, s, y):
        counts = np.bincount(y.astype(np.int64), minlength=2)
        if counts.min() < N_FOLDS:
            raise ValueError(f"{type(self).__name__} cross-fits over {N_FOLDS} stratified folds: "
                             f"each class needs {N_FOLDS} points, got {counts.tolist()}")
        metrics = self._metrics()             # probmetrics first: a missing one is named
        torch = self._module("torch")
        probs = torch.as_tensor(np.column_stack([1.0 - s, s]))
        with quiet_run():
            out = metrics.compute_all_from_labels_probs(torch.as_tensor(y.astype(np.int64)), probs)
        l1, brier = metric_names(self.calibrator)
        return {1: (float(out[l1]), np.nan), 2: (0.5 * float(out[brier]), np.nan)}
