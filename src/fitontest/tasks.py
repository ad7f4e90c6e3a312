"""Binary tasks from a K-class model (docs/methods/01-binary-tasks.md §1).

- one-vs-rest(k): score ``s = p_k``, label ``y = 1[label == k]``;
- confidence (top-label): ``s = max_k p_k``, ``y = 1[argmax_k p_k == label]``
  (ties go to the lowest class index, as ``numpy.argmax``).

A multi-class calibrator is applied to the logits first (its
``predict_proba`` gives ``probs``), then the reduction. Tasks are named as a
mapping ``{car: 1, cat: 3, dog: 5, confidence: null}`` (the workflow's config):
an integer is the one-vs-rest class, ``null`` the confidence task.

>>> from fitontest import tasks
>>> scores, y = tasks.reduce(3, probs, labels)             # doctest: +SKIP
>>> per_task = tasks.reduce_all({"cat": 3, "confidence": None}, probs, labels)  # doctest: +SKIP

``probs`` are read by the one rule of what probabilities are
(:func:`fitontest.core.predictions.read`, docs/methods/01-binary-tasks.md §1.1):
rows in [0, 1] summing to 1 within what their storage can lose are brought to
sum to 1 (said when they missed it by more than
:data:`~fitontest.core.predictions.ROW_SUM_ATOL`); rows that are not are an
error naming them. Scores are float64 clipped to [0, 1] (a softmax row of
float32 logits can exceed 1 by an ulp); labels are int64 0/1.

The front door (:func:`fitontest.evaluate`, :func:`fitontest.choose_evaluator`)
reads its input once into a :class:`BinaryTasks` (:func:`from_reading`) and
hands that down: nothing below checks its arrays again
(:func:`fitontest.core.validation.checked`).
"""
from __future__ import annotations

import warnings
from collections.abc import Hashable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from fitontest.core import predictions
from fitontest.core.validation import checked
from fitontest.multiclass.base import check_class_labels

CONFIDENCE = "confidence"
ONE_VS_REST = "one_vs_rest"

#: how a caller of this module says what its array holds, named in the errors
#: of :func:`fitontest.core.predictions.read` (these functions take probabilities)
SWITCH = predictions.Switch(logits="softmax(logits) as probs",
                            probabilities="probs / probs.sum(axis=1, keepdims=True) as probs")


def check_probs(probs, name: str = "probs") -> np.ndarray:
    """(n, K) float64 probability rows, K >= 2, summing to 1.

    The rows are read by :func:`fitontest.core.predictions.read`: probability
    rows within what their storage can lose of summing to 1 are brought to 1
    (a UserWarning says so above ROW_SUM_ATOL); NaN, corrupted rows, rows that
    cannot be told from logits and logits themselves are errors naming them.
    """
    shape = tuple(getattr(probs, "shape", None) or np.shape(probs))
    if len(shape) != 2:
        raise ValueError(f"{name} must be a 2-D (n_samples, n_classes) array, got shape "
                         f"{shape}")
    if shape[1] < 2:
        raise ValueError(f"{name} must have at least 2 classes (columns), got {shape[1]}")
    reading = predictions.read(probs, where=name, switch=SWITCH)
    if reading.kind != "probabilities":
        raise ValueError(f"{name} holds logits (negative entries), not probabilities: pass "
                         "softmax(logits) as probs")
    note = reading.note()
    if note:
        warnings.warn(note, UserWarning, stacklevel=3)
    return reading.probs


def check_class(k, n_classes: int) -> int:
    """``k`` as a one-vs-rest class index of a K = ``n_classes`` model."""
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
        raise ValueError(f"one-vs-rest class must be an integer, got {k!r}")
    if not 0 <= k < n_classes:
        raise ValueError(f"one-vs-rest class {k} out of range 0..{n_classes - 1} "
                         f"(K = {n_classes} classes)")
    return int(k)


def _check_pair(probs, labels) -> tuple[np.ndarray, np.ndarray]:
    p = check_probs(probs)
    y = check_class_labels(labels, p.shape[1])
    if y.shape[0] != p.shape[0]:
        raise ValueError(f"probs and labels differ in length: {p.shape[0]} != {y.shape[0]}")
    return p, y


def one_vs_rest(probs, labels, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(``p_k``, ``1[label == k]``) for class ``k``."""
    p, y = _check_pair(probs, labels)
    return _one_vs_rest(p, y, check_class(k, p.shape[1]))


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
                check_class(spec, n_classes)
        except ValueError as err:
            raise ValueError(f"task {name!r}: {err}") from None
        out[name] = None if kind == CONFIDENCE else int(spec)
    return out


def reduce(task_spec, probs, labels) -> tuple[np.ndarray, np.ndarray]:
    """Binary (scores, labels) of one task: ``None`` → confidence, ``k`` → one-vs-rest."""
    if task_kind(task_spec) == CONFIDENCE:
        return confidence(probs, labels)
    return one_vs_rest(probs, labels, task_spec)


def reduce_all(tasks: Mapping, probs, labels) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Every task of a config mapping, validating ``probs``/``labels`` once."""
    p, y = _check_pair(probs, labels)
    tasks = validate_tasks(tasks, n_classes=p.shape[1])
    return {name: _confidence(p, y) if spec is None else _one_vs_rest(p, y, spec)
            for name, spec in tasks.items()}


# ----------------------------------------------------------- the front door's reading
@dataclass(frozen=True, eq=False)
class BinaryTasks:
    """K-class predictions read once and reduced to binary tasks: what the
    front door builds (:func:`from_reading`) and hands down.

    ``kind`` and ``by``: what the prediction array holds and who said so
    (:class:`fitontest.core.predictions.Reading`); ``n``, ``n_classes`` its
    shape; ``tasks``: ``{key: (scores, labels)}``, float64 scores in [0, 1] and
    float64 0/1 labels (what :func:`~fitontest.core.validation.check_labels`
    makes of them), read-only. The class probabilities are not kept: a reading
    holds only what the tasks need. Inside :meth:`checked` the checks below the
    front door (:func:`fitontest.core.validation.check_scores`, ``check_labels``)
    return these arrays without another pass over them.
    """

    kind: str
    by: str
    n: int
    n_classes: int
    tasks: dict[Hashable, tuple[np.ndarray, np.ndarray]]

    def pairs(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """The tasks' (scores, labels) in order."""
        return list(self.tasks.values())

    @contextmanager
    def checked(self) -> Iterator[None]:
        """A block in which the tasks' arrays count as checked
        (:func:`fitontest.core.validation.checked`)."""
        with checked(*(a for task in self.tasks.values() for a in task)):
            yield


def _read_only(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def from_reading(reading: predictions.Reading, labels,
                 specs: Mapping[Hashable, int | None]) -> BinaryTasks:
    """The binary tasks ``specs`` (``{key: class index or None}``: one-vs-rest or
    confidence) of predictions already read (:func:`fitontest.core.predictions.read`),
    with ``labels`` checked against their K: one pass over each array."""
    p = reading.probs
    y = check_class_labels(predictions.to_numpy(labels, "labels"), p.shape[1])
    if y.shape[0] != p.shape[0]:
        raise ValueError(f"{reading.where} and labels differ in length: {p.shape[0]} != "
                         f"{y.shape[0]}")
    out = {}
    for key, spec in specs.items():
        s, b = (_confidence(p, y) if task_kind(spec) == CONFIDENCE
                else _one_vs_rest(p, y, check_class(spec, p.shape[1])))
        # the labels as check_labels returns them (float64), made once here
        out[key] = (_read_only(s), _read_only(b.astype(np.float64)))
    return BinaryTasks(reading.kind, reading.by, int(p.shape[0]), int(p.shape[1]), out)


__all__ = ["CONFIDENCE", "ONE_VS_REST", "TASKS", "SWITCH", "BinaryTasks", "check_class",
           "check_probs", "confidence", "from_reading", "one_vs_rest", "reduce", "reduce_all",
           "task_kind", "validate_tasks"]
