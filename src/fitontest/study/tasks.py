"""Binary tasks from a K-class model (docs/methods/01-binary-tasks.md §1).

- one-vs-rest(k): score ``s = p_k``, label ``y = 1[label == k]``;
- confidence (top-label): ``s = max_k p_k``, ``y = 1[argmax_k p_k == label]``
  (ties go to the lowest class index, as ``numpy.argmax``).

A multi-class calibrator is applied to the logits first (its
``predict_proba`` gives ``probs``), then the reduction. The config names tasks
as a mapping ``{car: 1, cat: 3, dog: 5, confidence: null}``: an integer is
the one-vs-rest class, ``null`` the confidence task.

>>> from fitontest import tasks
>>> scores, y = tasks.reduce(3, probs, labels)             # doctest: +SKIP
>>> per_task = tasks.reduce_all({"cat": 3, "confidence": None}, probs, labels)  # doctest: +SKIP

Scores are float64 clipped to [0, 1] (a softmax row of float32 logits can
exceed 1 by an ulp); labels are int64 0/1.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from fitontest.core.predictions import ROW_SUM_ATOL
from fitontest.multiclass.base import check_class_labels

CONFIDENCE = "confidence"
ONE_VS_REST = "one_vs_rest"


def check_probs(probs, name: str = "probs", atol: float = ROW_SUM_ATOL) -> np.ndarray:
    """2-D (n, K) float64 array: finite, non-negative, rows summing to ~1."""
    p = np.asarray(probs)
    if p.dtype == object or p.dtype == bool or not np.issubdtype(p.dtype, np.number) \
            or np.iscomplexobj(p):
        raise ValueError(f"{name} must be a real numeric array, got dtype {p.dtype}")
    p = p.astype(np.float64, copy=False)
    if p.ndim != 2:
        raise ValueError(f"{name} must be a 2-D (n_samples, n_classes) array, got shape {p.shape}")
    if p.shape[1] < 2:
        raise ValueError(f"{name} must have at least 2 classes (columns), got {p.shape[1]}")
    if p.shape[0] == 0:
        raise ValueError(f"{name} is empty (0 rows)")
    bad = ~np.isfinite(p).all(axis=1)
    if bad.any():
        rows = np.flatnonzero(bad)
        raise ValueError(f"{name} contain NaN or infinity: {rows.size} row(s), "
                         f"first at row {rows[0]}")
    bad = (p < 0).any(axis=1)
    if bad.any():
        rows = np.flatnonzero(bad)
        raise ValueError(f"{name} must be non-negative: {rows.size} row(s) with negative "
                         f"entries, first at row {rows[0]} (min {p.min():.6g})")
    dev = np.abs(p.sum(axis=1) - 1.0)
    bad = dev > atol
    if bad.any():
        rows = np.flatnonzero(bad)
        raise ValueError(f"{name} rows must sum to 1 (tolerance {atol:g}): {rows.size} row(s) "
                         f"do not, first at row {rows[0]} (sum {p[rows[0]].sum():.6g}); "
                         "pass probabilities (softmax), not logits")
    return p


def _check_pair(probs, labels) -> tuple[np.ndarray, np.ndarray]:
    p = check_probs(probs)
    y = check_class_labels(labels, p.shape[1])
    if y.shape[0] != p.shape[0]:
        raise ValueError(f"probs and labels differ in length: {p.shape[0]} != {y.shape[0]}")
    return p, y


def _check_class(k, n_classes: int) -> int:
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
        raise ValueError(f"one-vs-rest class must be an integer, got {k!r}")
    if not 0 <= k < n_classes:
        raise ValueError(f"one-vs-rest class {k} out of range 0..{n_classes - 1} "
                         f"(K = {n_classes} classes)")
    return int(k)


def one_vs_rest(probs, labels, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(``p_k``, ``1[label == k]``) for class ``k``."""
    p, y = _check_pair(probs, labels)
    return _one_vs_rest(p, y, _check_class(k, p.shape[1]))


def _one_vs_rest(p, y, k):
    return np.clip(p[:, k], 0.0, 1.0), (y == k).astype(np.int64)


def confidence(probs, labels) -> tuple[np.ndarray, np.ndarray]:
    """(``max_k p_k``, ``1[argmax_k p_k == label]``), the top-label task."""
    return _confidence(*_check_pair(probs, labels))


def _confidence(p, y):
    top = np.argmax(p, axis=1)
    return np.clip(p[np.arange(p.shape[0]), top], 0.0, 1.0), (top == y).astype(np.int64)


#: the reduction kinds by name
TASKS = {ONE_VS_REST: one_vs_rest, CONFIDENCE: confidence}


def task_kind(spec) -> str:
    """``"confidence"`` for ``None`` (or the string ``"confidence"``),
    ``"one_vs_rest"`` for an integer class index."""
    if spec is None or (isinstance(spec, str) and spec == CONFIDENCE):
        return CONFIDENCE
    if isinstance(spec, (int, np.integer)) and not isinstance(spec, (bool, np.bool_)):
        if spec < 0:
            raise ValueError(f"task class index must be >= 0, got {spec}")
        return ONE_VS_REST
    raise ValueError(f"a task is an integer class index (one-vs-rest) or null "
                     f"(confidence), got {spec!r}")


def validate_tasks(tasks: Mapping, n_classes: int | None = None) -> dict:
    """Check a config task mapping ``{name: int | None}``; returns a plain dict.

    With ``n_classes`` the one-vs-rest classes are range-checked too.
    """
    if not isinstance(tasks, Mapping) or not tasks:
        raise ValueError(f"tasks must be a non-empty mapping name -> class index or null, "
                         f"got {tasks!r}")
    out = {}
    for name, spec in tasks.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"task names must be non-empty strings, got {name!r}")
        try:
            kind = task_kind(spec)
            if kind == ONE_VS_REST and n_classes is not None:
                _check_class(spec, n_classes)
        except ValueError as err:
            raise ValueError(f"task {name!r}: {err}") from None
        out[name] = None if kind == CONFIDENCE else int(spec)
    return out


def reduce(task_spec, probs, labels) -> tuple[np.ndarray, np.ndarray]:
    """Binary (scores, labels) of one task: ``None`` → confidence, ``k`` → one-vs-rest."""
    if task_kind(task_spec) == CONFIDENCE:
        return confidence(probs, labels)
    return one_vs_rest(probs, labels, task_spec)


def event_posterior(task_spec, probs, posterior) -> np.ndarray:
    """The known P(binary label = 1 | x) of a task, from the class posterior.

    One-vs-rest k: ``posterior[:, k]``; confidence: the posterior of the
    predicted class ``argmax_k probs`` (ties to the lowest index, as in
    :func:`confidence`), i.e. the probability that the prediction is right.
    """
    p = check_probs(probs)
    q = check_probs(posterior, "posterior")
    if q.shape != p.shape:
        raise ValueError(f"posterior has shape {q.shape}, probs {p.shape}")
    if task_kind(task_spec) == CONFIDENCE:
        out = q[np.arange(q.shape[0]), np.argmax(p, axis=1)]
    else:
        out = q[:, _check_class(task_spec, p.shape[1])]
    return np.clip(out.astype(np.float64), 0.0, 1.0)


def reduce_all(tasks: Mapping, probs, labels) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Every task of a config mapping, validating ``probs``/``labels`` once."""
    p, y = _check_pair(probs, labels)
    tasks = validate_tasks(tasks, n_classes=p.shape[1])
    return {name: _confidence(p, y) if spec is None else _one_vs_rest(p, y, spec)
            for name, spec in tasks.items()}
