"""The study's side of the binary tasks (docs/methods/01-binary-tasks.md §1).

The reduction itself -- one-vs-rest and confidence tasks, the config's task
mapping -- is the library's, :mod:`fitontest.tasks`; its names used to live
here and still resolve, with a DeprecationWarning naming their home
(:data:`fitontest.core.moved.MOVED`). What stays is what only the study has: a
known class posterior (synthetic and tabular sources), turned into the true
P(binary label = 1 | x) of a task.
"""
from __future__ import annotations

import numpy as np

from .. import tasks as _tasks
from ..core.moved import moved


def event_posterior(task_spec, probs, posterior) -> np.ndarray:
    """The known P(binary label = 1 | x) of a task, from the class posterior.

    One-vs-rest k: ``posterior[:, k]``; confidence: the posterior of the
    predicted class ``argmax_k probs`` (ties to the lowest index, as in
    :func:`fitontest.tasks.confidence`), i.e. the probability that the
    prediction is right.
    """
    p = _tasks.check_probs(probs)
    q = _tasks.check_probs(posterior, "posterior")
    if q.shape != p.shape:
        raise ValueError(f"posterior has shape {q.shape}, probs {p.shape}")
    if _tasks.task_kind(task_spec) == _tasks.CONFIDENCE:
        out = q[np.arange(q.shape[0]), np.argmax(p, axis=1)]
    else:
        out = q[:, _tasks.check_class(task_spec, p.shape[1])]
    return np.clip(out.astype(np.float64), 0.0, 1.0)


__getattr__, __dir__ = moved(__name__)

__all__ = ["event_posterior"]
