"""Evaluate the calibration of a K-class model's predictions in one call.

>>> import fitontest
>>> res = fitontest.evaluate(probs, labels, evaluator="ece_es_cv")        # doctest: +SKIP
>>> res.estimate, res.debiased, res.hyper                                  # doctest: +SKIP
>>> fitontest.evaluate(logits, labels, from_logits=True, mode="classwise") # doctest: +SKIP

The K-class predictions are reduced to binary tasks (docs/methods.md §1, the
reductions of :mod:`fitontest.study.tasks`), an evaluator (any registered family,
docs/methods.md §2-§4) is fitted on each task, and its CE estimate (as in the
workflow: :func:`fitontest.families.base.estimates`) is reported:

- ``mode="confidence"``: the top-label task (max_k p_k, prediction correct);
- ``mode="classwise"``: the one-vs-rest task of every class in ``classes``
  (default: all K); the estimate is the mean over those classes, the
  per-class values are in ``per_class``;
- ``mode="ovr"``: the one-vs-rest tasks of the classes named in ``classes``
  (the paper's car / cat / dog tasks), each reported in ``per_class``; the
  estimate is their mean (the value itself for one class). For K = 2 the
  default is class 1, the usual binary task; for K > 2 ``classes`` is
  required.

Inputs may be numpy arrays, pandas objects or torch tensors (any device; torch
is never imported here). A 1-D array is a binary model's probability of
class 1 (or its logit with ``from_logits``).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

import numpy as np
from sklearn.base import clone

from . import families
from .study import tasks
from .families.base import estimates

MODES = ("confidence", "classwise", "ovr")


@dataclass
class TaskResult:
    """The evaluator fitted on one binary task."""

    estimate: float
    debiased: float | None = None
    hyper: float | None = None
    interval: Any = None           # a fitontest.metrics.CEInterval, or None
    n: int = 0


@dataclass
class EvaluationResult:
    """What :func:`evaluate` returns.

    ``estimate`` is the CE estimate (L1 for p=1, squared for p=2, the maximum
    for p="max"); ``debiased`` the debiased estimate where the family has one
    (binning), else None; ``hyper`` the chosen hyper-parameter (bins, pieces,
    bandwidth) or None; ``interval`` the bootstrap interval when asked for
    (confidence mode; per class in ``per_class`` otherwise). For the classwise
    and ovr modes, ``per_class`` maps each class index to its
    :class:`TaskResult`, and ``debiased`` is the mean of the per-class
    debiased values.
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
                f"hyper {fmt(self.hyper)}, interval {fmt_interval(self.interval)}")
        lines = [head]
        for k, r in self.per_class.items():
            lines.append(f"  class {k}: estimate {fmt(r.estimate)}, debiased {fmt(r.debiased)}, "
                         f"hyper {fmt(r.hyper)}, interval {fmt_interval(r.interval)}")
        return "\n".join(lines)


# ---------------------------------------------------------------------- inputs
def to_numpy(x, name: str) -> np.ndarray:
    """numpy view of an array, a pandas object or a torch tensor (any device)."""
    if type(x).__module__.split(".")[0] == "torch" and hasattr(x, "detach"):
        x = x.detach().cpu()
        if str(x.dtype) == "torch.bfloat16":      # numpy has no bfloat16
            x = x.float()
        return x.numpy()
    if hasattr(x, "to_numpy"):                     # pandas DataFrame / Series
        return x.to_numpy()
    arr = np.asarray(x)
    if arr.dtype == object:
        raise ValueError(f"{name} must be a numeric array, got dtype object")
    return arr


def class_probabilities(probs_or_logits, from_logits: bool = False) -> np.ndarray:
    """(n, K) float64 probabilities, checked: rows sum to 1 unless ``from_logits``
    (then a softmax, or a sigmoid for a 1-D binary logit)."""
    from .multiclass.base import check_logits, softmax

    a = to_numpy(probs_or_logits, "logits" if from_logits else "probs")
    if a.ndim == 1:
        a = a.astype(np.float64)
        if from_logits:
            from .core.validation import sigmoid
            a = sigmoid(a)
        elif np.isfinite(a).all() and ((a < 0) | (a > 1)).any():
            raise ValueError("a 1-D probs array holds a binary model's P(class 1) and must lie "
                             "in [0, 1]; pass from_logits=True for logits")
        a = np.column_stack([1.0 - a, a])
    elif from_logits:
        a = softmax(check_logits(a).astype(np.float64))
    return tasks.check_probs(a)


def _family(evaluator):
    """(name, fresh family) of a registered name, a family or a duck-typed evaluator."""
    return families.resolve(evaluator)


def _check_p(p):
    if isinstance(p, str):
        if p != "max":
            raise ValueError(f"p must be 1, 2 or 'max', got {p!r}")
        return p
    if isinstance(p, bool) or p not in (1, 2):
        raise ValueError(f"p must be 1, 2 or 'max', got {p!r}")
    return int(p)


# -------------------------------------------------------------------- estimates
def max_calibration_error(fam, name: str = "") -> float:
    """Maximum calibration error of a fitted family (its ``max_calibration_error``
    capability; the binning families: max_b |ybar_b - sbar_b| over non-empty bins)."""
    try:
        return float(fam.max_calibration_error())
    except families.MissingCapability as err:
        raise families.MissingCapability(
            f"the maximum calibration error (p='max') is not defined for evaluator "
            f"{name or type(fam).__name__!r}: it is defined for the binning families (ece_*) "
            "and for families with a max_calibration_error() method") from err


def _finite_or_none(v) -> float | None:
    return float(v) if v is not None and np.isfinite(v) else None


def evaluate_binary(evaluator, scores, labels, p=1, interval: float | None = None) -> TaskResult:
    """Fit ``evaluator`` (name or family instance) on one binary task and estimate its CE."""
    p = _check_p(p)
    name, proto = _family(evaluator)
    fam = clone(proto).fit(scores, labels)
    s = np.asarray(scores, dtype=np.float64)
    if p == "max":
        est, deb = max_calibration_error(fam, name), None
    else:
        e = estimates(fam, s)
        est = e["ce_est"] if p == 1 else e["ce_est_sq"]
        deb = e["ce_est_debiased"] if p == 1 else e["ce_est_debiased_sq"]
    ci = None
    if interval is not None:
        if p == "max":
            raise ValueError("intervals are available for p=1 and p=2, not p='max'")
        from .intervals import ce_interval
        ci = ce_interval(evaluator if isinstance(evaluator, str) else proto,
                         s, labels, p=p, level=float(interval))
    return TaskResult(estimate=float(est), debiased=_finite_or_none(deb),
                      hyper=_finite_or_none(fam.chosen_hyperparameter()), interval=ci,
                      n=int(s.size))


def _mean_or_none(values):
    values = list(values)
    return None if any(v is None for v in values) else float(np.mean(values))


def _classes(mode: str, classes, n_classes: int) -> list[int]:
    if classes is None:
        if mode == "classwise":
            return list(range(n_classes))
        if n_classes == 2:
            return [1]
        raise ValueError(f"mode='ovr' with {n_classes} classes needs classes= (the class "
                         "indices of the one-vs-rest tasks); use mode='classwise' for all")
    if isinstance(classes, (int, np.integer)):
        classes = [classes]
    out = [int(k) for k in classes]
    if not out:
        raise ValueError("classes is empty")
    bad = [k for k in out if not 0 <= k < n_classes]
    if bad:
        raise ValueError(f"classes {bad} out of range 0..{n_classes - 1} (K = {n_classes})")
    return list(dict.fromkeys(out))


def evaluate(probs_or_logits, labels, evaluator="ece_es_cv", mode: str = "confidence",
             classes: Sequence[int] | int | None = None, p: int | str = 1,
             from_logits: bool = False, interval: float | None = None) -> EvaluationResult:
    """Estimate the calibration error of K-class predictions (see the module docstring).

    ``evaluator``: a registered family name (``fitontest families`` lists them)
    or an unfitted family instance; ``p``: 1, 2 or ``"max"`` (the maximum
    calibration error, binning families only); ``interval``: a level such as
    0.9 for a bootstrap interval (:func:`fitontest.metrics.ce_interval`).
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    p = _check_p(p)
    name, _ = _family(evaluator)
    probs = class_probabilities(probs_or_logits, from_logits)
    y = to_numpy(labels, "labels")
    n, k = probs.shape
    if mode == "confidence":
        if classes is not None:
            raise ValueError("classes= applies to the classwise and ovr modes, not confidence")
        s, yb = tasks.confidence(probs, y)
        r = evaluate_binary(evaluator, s, yb, p=p, interval=interval)
        return EvaluationResult(name, mode, p, r.estimate, r.debiased, r.hyper, r.interval,
                                n=n, n_classes=k)
    chosen = _classes(mode, classes, k)
    reduced = tasks.reduce_all({str(c): c for c in chosen}, probs, y)
    per = {c: evaluate_binary(evaluator, *reduced[str(c)], p=p, interval=interval)
           for c in chosen}
    hyper = per[chosen[0]].hyper if len(chosen) == 1 else None
    return EvaluationResult(name, mode, p, float(np.mean([r.estimate for r in per.values()])),
                            _mean_or_none(r.debiased for r in per.values()), hyper,
                            per[chosen[0]].interval if len(chosen) == 1 else None,
                            n=n, n_classes=k, per_class=per)


__all__ = ["evaluate", "evaluate_binary", "EvaluationResult", "TaskResult",
           "class_probabilities", "max_calibration_error", "to_numpy", "MODES"]
