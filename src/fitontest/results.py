"""What :func:`fitontest.evaluate` returns: the result of one binary task and
of the whole evaluation (its estimate, the per-class results, the interval and
the test of perfect calibration)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np


@dataclass
class TaskResult:
    """The evaluator fitted on one binary task."""

    estimate: float
    debiased: float | None = None
    hyper: float | None = None
    interval: Any = None           # a fitontest.metrics.CEInterval, or None
    n: int = 0
    pvalue: float | None = None    # p-value of a test of perfect calibration, or None
    pvalue_valid: bool | None = None   # the test's size measured to hold here (None: not)
    pvalue_note: str = ""


@dataclass
class EvaluationResult:
    """What :func:`evaluate` returns.

    ``estimate`` is the CE estimate (L1 for p=1, squared for p=2, the maximum
    for p="max"); ``debiased`` the debiased estimate where the family has one
    (binning), else None; ``hyper`` the chosen hyper-parameter (bins, pieces,
    bandwidth) or None; ``interval`` the bootstrap interval when asked for
    (confidence mode; per class in ``per_class`` otherwise). ``pvalue`` is
    the p-value of the test of perfect calibration named by ``test``
    (:func:`fitontest.metrics.calibration_test`); over several classes it is
    the Bonferroni-combined ``min(1, m * min p)``, a valid test that every
    one of the m tasks is calibrated. For the classwise and ovr modes,
    ``per_class`` maps each class index to its :class:`TaskResult`, and
    ``debiased`` is the mean of the per-class debiased values. ``note``: what
    the estimate is where the evaluator does not say it (``"auto"``: the
    chooser's recommended estimate, or its fallback, and why).
    """

    evaluator: str
    mode: str
    p: int | str
    estimate: float
    debiased: float | None = None
    hyper: float | None = None
    interval: Any = None
    n: int = 0
    n_classes: int = 0
    per_class: dict[int, TaskResult] = field(default_factory=dict)
    pvalue: float | None = None
    test: str | None = None
    note: str | None = None
    pvalue_valid: bool | None = None
    pvalue_note: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values (intervals as dicts)."""
        def plain(v):
            if v is None or isinstance(v, (str, int, bool)):
                return v
            if isinstance(v, (float, np.floating)):
                return float(v)
            if isinstance(v, (np.integer,)):
                return int(v)
            if isinstance(v, dict):
                return {str(k): plain(x) for k, x in v.items()}
            if hasattr(v, "__dataclass_fields__"):
                return plain(asdict(v))
            if hasattr(v, "_asdict"):
                return plain(v._asdict())
            return str(v)

        return plain(asdict(self))

    def __str__(self) -> str:
        def fmt(v):
            return "-" if v is None else f"{v:.6g}"

        def fmt_interval(iv):
            return "-" if iv is None else f"[{iv.lo:.6g}, {iv.hi:.6g}] ({iv.level:g})"

        head = (f"{self.evaluator} ({self.mode}, p={self.p}, n={self.n}, K={self.n_classes}): "
                f"estimate {fmt(self.estimate)}, debiased {fmt(self.debiased)}, "
                f"hyper {fmt(self.hyper)}, interval {fmt_interval(self.interval)}, "
                f"calibration test ({self.test or '-'}) p {fmt(self.pvalue)}")
        lines = [head] + ([f"  {self.note}"] if self.note else [])
        for k, r in self.per_class.items():
            lines.append(f"  class {k}: estimate {fmt(r.estimate)}, debiased {fmt(r.debiased)}, "
                         f"hyper {fmt(r.hyper)}, interval {fmt_interval(r.interval)}, "
                         f"p {fmt(r.pvalue)}")
        return "\n".join(lines)


# ---------------------------------------------------------------------- inputs


__all__ = ["TaskResult", "EvaluationResult"]
