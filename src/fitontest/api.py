"""Evaluate the calibration of a K-class model's predictions in one call.

>>> import fitontest
>>> res = fitontest.evaluate(probs, labels, evaluator="ece_es_cv")        # doctest: +SKIP
>>> res.estimate, res.debiased, res.hyper                                  # doctest: +SKIP
>>> fitontest.evaluate(logits, labels, from_logits=True, mode="classwise") # doctest: +SKIP

The K-class predictions are reduced to binary tasks (docs/methods/01-binary-tasks.md §1, the
reductions of :mod:`fitontest.tasks`), an evaluator (any registered family,
docs/methods/02-binning.md §2, docs/methods/03-binary-families.md §3,
docs/methods/04-pl.md §4) is fitted on each task, and its CE estimate (as in
the workflow: :func:`fitontest.families.base.estimates`) is reported:

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

import warnings
from typing import Any, Literal, Sequence, cast

import numpy as np

from . import families
from .core.moved import moved
from .core.validation import check_option
from . import results

MODES = ("confidence", "classwise", "ovr")
#: ``evaluator="auto"``: the evaluator chooser's recommended estimate (fitontest.choose)
AUTO = "auto"


def class_probabilities(probs_or_logits: Any, from_logits: bool | None = None) -> np.ndarray:
    """(n, K) float64 class probabilities of K-class predictions, checked.

    What the array holds is decided by :func:`fitontest.core.predictions.read`
    (docs/methods/01-binary-tasks.md §1.1), the one rule every entry point shares.

    Parameters
    ----------
    probs_or_logits : array-like of shape (n, K) or (n,)
        Probabilities or logits (log-probabilities included). A 1-D array is a
        binary model's P(class 1) (or its logit). numpy, pandas and torch
        inputs are accepted, in any float dtype.
    from_logits : bool or None, default None
        None: the rows decide -- rows in [0, 1] summing to 1 within what
        their storage can lose (rounding to d decimals, float16, bfloat16)
        are probabilities, brought to sum to 1; probability rows but for a
        few are an error naming the others; otherwise a negative entry makes
        them logits, and other non-negative arrays are an error naming this
        switch. True: logits (a softmax, a sigmoid for 1-D); False:
        probabilities (renormalised).

    Returns
    -------
    numpy.ndarray of shape (n, K), float64, rows summing to 1

    Raises
    ------
    ValueError
        Rows the rule cannot settle, corrupted rows among probability rows
        (naming them), a declared kind the rows contradict, NaN or infinity
        (naming the rows), a wrong shape.

    Warns
    -----
    UserWarning
        Rows brought to sum to 1 from more than 1e-4 away (said once, with
        the largest deviation); logits declared for 1-D values that all lie
        in [0, 1].

    Examples
    --------
    >>> from fitontest.api import class_probabilities
    >>> class_probabilities([0.2, 0.9])
    array([[0.8, 0.2],
           [0.1, 0.9]])
    >>> class_probabilities([[0.0, 0.0]], from_logits=True)
    array([[0.5, 0.5]])
    >>> class_probabilities([[-0.7, -0.7]])          # log-probabilities: the rows decide
    array([[0.5, 0.5]])
    """
    return _read(probs_or_logits, from_logits, stacklevel=2).probs


def _read(probs_or_logits, from_logits, stacklevel: int = 2):
    """:func:`fitontest.core.predictions.read` of the front door's argument, its
    note warned (``stacklevel`` as warnings.warn's, counted from this function's caller)."""
    from .core import predictions

    where = "logits" if from_logits else "probs" if from_logits is False else "probs_or_logits"
    reading = predictions.read(probs_or_logits, predictions.kind_from_logits(from_logits),
                               where=where, switch=predictions.API)
    note = reading.note()
    if note:
        warnings.warn(note, UserWarning, stacklevel=stacklevel + 1)
    return reading


def _family(evaluator):
    """(name, fresh family) of a registered name, a family or a duck-typed evaluator."""
    return families.resolve(evaluator)


def _check_p(p):
    if isinstance(p, str) and p == "max":
        return p
    if isinstance(p, (bool, str)) or p not in (1, 2):
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


def evaluate_binary(evaluator, scores, labels, p=1, interval: float | None = None,
                    test: str | None = None) -> results.TaskResult:
    """Fit ``evaluator`` (name or family instance) on one binary task, estimate
    its CE and, with ``test``, test perfect calibration."""
    from sklearn.base import clone

    from .families.base import estimates

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
        from .inference.intervals import ce_interval
        ci = ce_interval(evaluator if isinstance(evaluator, str) else proto,
                         s, labels, p=p, level=float(interval))
    pvalue, tested = None, None
    if test is not None:
        from .inference.calibration_tests import calibration_test
        tested = calibration_test(s, labels, method=test, evaluator=proto,
                                  p=1 if p == "max" else p)
        pvalue = float(tested.pvalue)
    return results.TaskResult(estimate=float(est), debiased=_finite_or_none(deb),
                      hyper=_finite_or_none(fam.chosen_hyperparameter()), interval=ci,
                      n=int(s.size), pvalue=pvalue,
                      pvalue_valid=None if tested is None else tested.valid,
                      pvalue_note="" if tested is None else tested.validity_note)


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


def _read_tasks(probs_or_logits: Any, labels: Any, mode: str = "confidence",
               classes: Sequence[int] | int | None = None, from_logits: bool | None = None,
               *, stacklevel: int = 2):
    """The front door's one reading of its input: the predictions read
    (:func:`class_probabilities`' rule), the labels checked and the binary tasks
    of ``mode`` / ``classes`` built, as a :class:`fitontest.tasks.BinaryTasks`
    (keys: None for the confidence task, else the class index). Everything
    below takes it as it is; nothing checks its arrays again. ``mode`` is the
    caller's, checked; ``stacklevel``: where a note on the rows is warned, as
    warnings.warn's, counted from the caller."""
    from . import tasks

    if mode == "confidence" and classes is not None:
        raise ValueError("classes= applies to the classwise and ovr modes, not confidence")
    reading = _read(probs_or_logits, from_logits, stacklevel=stacklevel + 1)
    specs: dict[Any, int | None] = ({None: None} if mode == "confidence" else
             {c: c for c in _classes(mode, classes, reading.probs.shape[1])})
    return tasks.from_reading(reading, labels, specs)


def binary_tasks(probs_or_logits: Any, labels: Any, mode: str = "confidence",
                 classes: Sequence[int] | int | None = None,
                 from_logits: bool | None = None
                 ) -> tuple[tuple[int, int], dict[int | None, tuple[np.ndarray, np.ndarray]]]:
    """((n, K), tasks): the binary tasks of :func:`evaluate`, checked as it checks
    them -- ``{None: (scores, labels)}`` of the top-label task for
    ``mode="confidence"``, else ``{class: (p_class, 1[label == class])}``."""
    data = _read_tasks(probs_or_logits, labels, check_option("mode", mode, MODES), classes,
                       from_logits, stacklevel=3)
    return (data.n, data.n_classes), {c: (s.copy(), y.astype(np.int64))
                                      for c, (s, y) in data.tasks.items()}


def evaluate(probs_or_logits: Any, labels: Any, evaluator: Any = "ece_es_cv",
             mode: Literal["confidence", "classwise", "ovr"] = "confidence",
             classes: Sequence[int] | int | None = None, p: int | str = 1,
             from_logits: bool | None = None, interval: float | None = None,
             test: str | None = "kuiper") -> results.EvaluationResult:
    """Estimate the calibration error (CE) of a model's K-class predictions.

    The predictions are reduced to binary tasks (the top label, or one class
    against the rest), an evaluator -- a calibration-map family fitted on
    these test predictions -- is fitted on each task, and its CE estimate is
    returned (docs/methods/01-binary-tasks.md §1 to docs/methods/04-pl.md §4; the
    module docstring has the details).

    Parameters
    ----------
    probs_or_logits : array-like of shape (n, K) or (n,)
        Class probabilities or logits (log-probabilities included); rows
        rounded to d >= 2 decimals or stored in float16 / bfloat16 are
        recognised and brought to sum to 1 (rows of probabilities but for
        a few are an error naming them). A 1-D array is a binary model's
        P(class 1). numpy arrays, pandas objects and torch tensors (any
        device) are accepted.
    labels : array-like of shape (n,)
        True classes, integers in 0..K-1.
    evaluator : str or family instance, default "ece_es_cv"
        A registered calibration-map family (``fitontest families`` and
        :func:`fitontest.families.names` list them) or an unfitted instance;
        ``"auto"``: the recommended estimate of
        :func:`fitontest.choose_evaluator` (criterion ce, its defaults, seed
        0) -- the mean of the best candidates in worlds like these data, or
        ece_es_cv's where those worlds cannot tell it apart -- with the
        interval measured for it; ``note`` says which and why.
    mode : {"confidence", "classwise", "ovr"}, default "confidence"
        ``"confidence"``: the top-label task (max_k p_k, prediction correct);
        ``"classwise"``: every class in ``classes`` (default all) against the
        rest, averaged; ``"ovr"``: the classes named in ``classes`` against
        the rest (for K = 2 the default is class 1).
    classes : int or sequence of int, optional
        Class indices of the classwise / ovr tasks.
    p : {1, 2, "max"}, default 1
        The CE's norm: absolute (1), squared (2) or the maximum CE
        (``"max"``, binning families and families with a
        ``max_calibration_error`` method).
    from_logits : bool or None, default None
        None: the rows decide what the array holds (a negative entry: logits;
        rows in [0, 1] summing to 1 within their storage's rounding:
        probabilities; anything else is an error naming this switch;
        docs/methods/01-binary-tasks.md §1.1). True: logits (a softmax, a sigmoid for 1-D);
        False: probabilities. A declared kind the rows contradict is an error.
    interval : float, optional
        Level (e.g. 0.9) of a bootstrap interval of the CE
        (:func:`fitontest.metrics.ce_interval`), for p = 1 or 2.
    test : str or None, default "kuiper"
        Method of :func:`fitontest.metrics.calibration_test` for the p-value
        of perfect calibration of each task (``"kuiper"``, ``"ks"``:
        O(n log n), no bins; ``"tcal"``, ``"consistency"``: Monte Carlo,
        the latter around ``evaluator``); None skips the test.

    Returns
    -------
    EvaluationResult
        ``estimate``, ``debiased``, ``hyper``, ``interval`` and, for the
        classwise and ovr modes, ``per_class``.

    Raises
    ------
    ValueError
        Bad input, named: predictions whose rows cannot tell probabilities
        from logits (naming ``from_logits``), a declared kind the rows
        contradict, labels out of range, an unknown evaluator (with
        the close names, or the registry that has the name), a bad mode, p or
        classes.
    fitontest.core.extras.MissingExtraError
        The evaluator's backend is not installed (PL / PL3 need
        ``fitontest[fast]``); an ImportError.

    Examples
    --------
    >>> import numpy as np
    >>> import fitontest
    >>> rng = np.random.default_rng(0)
    >>> logits = 3 * rng.normal(size=(2000, 3))
    >>> probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    >>> labels = np.array([rng.choice(3, p=row) for row in probs])  # calibrated by construction
    >>> res = fitontest.evaluate(probs, labels, evaluator="ece_es15")
    >>> res.evaluator, res.mode, res.n, res.n_classes, res.hyper
    ('ece_es15', 'confidence', 2000, 3, 15.0)
    >>> res.estimate < 0.05
    True

    Over-confident predictions (the logits doubled) have a larger CE:

    >>> fitontest.evaluate(2 * logits, labels, from_logits=True,
    ...                    evaluator="ece_es15").estimate > 0.05
    True

    Class-wise, one binary task per class:

    >>> res = fitontest.evaluate(probs, labels, evaluator="smece", mode="classwise")
    >>> sorted(res.per_class)
    [0, 1, 2]
    >>> bool(np.isclose(res.estimate, np.mean([r.estimate for r in res.per_class.values()])))
    True
    """
    check_option("mode", mode, MODES)
    p = _check_p(p)
    if isinstance(evaluator, str) and evaluator == AUTO:
        return _evaluate_auto(probs_or_logits, labels, mode, classes, p, from_logits, interval,
                              test)
    _family(evaluator)                 # an unknown evaluator is named before the data are read
    data = _read_tasks(probs_or_logits, labels, mode, classes, from_logits, stacklevel=3)
    return _evaluate_tasks(data, evaluator, mode, p, interval, test)


def _evaluate_tasks(data, evaluator: Any, mode: str, p: int | str = 1,
                   interval: float | None = None, test: str | None = "kuiper"
                   ) -> results.EvaluationResult:
    """:func:`evaluate` on the front door's reading ``data`` (:func:`_read_tasks`),
    checked once: its arrays are not checked again below
    (:meth:`fitontest.tasks.BinaryTasks.checked`)."""
    name, _ = _family(evaluator)
    n, k = data.n, data.n_classes
    with data.checked():
        per = {c: evaluate_binary(evaluator, s, y, p=p, interval=interval, test=test)
               for c, (s, y) in data.tasks.items()}
    if mode == "confidence":
        r = per[None]
        return results.EvaluationResult(name, mode, p, r.estimate, r.debiased, r.hyper,
                                        r.interval, n=n, n_classes=k, pvalue=r.pvalue,
                                        test=test, pvalue_valid=r.pvalue_valid,
                                        pvalue_note=r.pvalue_note)
    chosen = list(per)
    # Bonferroni: a valid test that all m tasks are calibrated, whatever their dependence
    pvalue = (None if test is None
              else min(1.0, len(per) * min(cast(float, r.pvalue) for r in per.values())))
    hyper = per[chosen[0]].hyper if len(chosen) == 1 else None
    # the combined p-value is as valid as its least valid task's
    flags = [r.pvalue_valid for r in per.values()]
    combined = False if False in flags else None if None in flags else True
    note = next((r.pvalue_note for r in per.values() if r.pvalue_valid is combined), "")
    return results.EvaluationResult(name, mode, p,
                                    float(np.mean([r.estimate for r in per.values()])),
                                    _mean_or_none(r.debiased for r in per.values()), hyper,
                                    per[chosen[0]].interval if len(chosen) == 1 else None,
                                    n=n, n_classes=k, per_class=per, pvalue=pvalue, test=test,
                                    pvalue_valid=combined if test is not None else None,
                                    pvalue_note=note if test is not None else "")


def _evaluate_auto(probs_or_logits, labels, mode, classes, p, from_logits, interval, test
                   ) -> results.EvaluationResult:
    """``evaluator="auto"``: the chooser's recommended estimate (criterion ce,
    default settings, seed 0) with the interval measured for it; the test of
    calibration around the evaluator reported. The input is read once: the
    chooser and the evaluation share the reading."""
    from .inference.choose import (
        FALLBACK,
        candidate_names,
        check_settings,
        choose_tasks,
    )

    if p == "max":
        raise ValueError("evaluator='auto' chooses for p = 1 or 2, not p='max'")
    check_settings("ce", p, 40, interval)
    names, extra = candidate_names("ce", None, False)
    data = _read_tasks(probs_or_logits, labels, mode, classes, from_logits, stacklevel=4)
    with data.checked():
        choice = choose_tasks(data.pairs(), names, extra, p=p, interval=interval,
                              progress=False)
    used = FALLBACK if choice.fallback else choice.evaluator
    base = _evaluate_tasks(data, used, mode, p, test=test)
    return results.EvaluationResult(AUTO, mode, p, float(choice.recommended_estimate), None,
                                    None, choice.interval, n=base.n,
                                    n_classes=base.n_classes, pvalue=base.pvalue, test=test,
                                    note=choice.reason(), pvalue_valid=base.pvalue_valid,
                                    pvalue_note=base.pvalue_note)


# an older address of a name defined elsewhere warns (core.moved)
__getattr__, __dir__ = moved(__name__)

__all__ = ["evaluate", "evaluate_binary", "binary_tasks", "class_probabilities",
           "max_calibration_error", "MODES"]
