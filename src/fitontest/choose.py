"""The evaluator chooser at the front door: :func:`choose_evaluator` takes a
K-class model's predictions as :func:`fitontest.evaluate` does (docs/methods/14-chooser.md
§14); the rule itself, on binary tasks, is :mod:`fitontest.inference.choose`,
the home of its constants and results (the names once re-exported here warn:
:data:`fitontest.core.moved.MOVED`).

>>> import fitontest
>>> choice = fitontest.choose_evaluator(probs, labels)       # doctest: +SKIP
>>> print(choice)                                            # doctest: +SKIP
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from .core.moved import moved
from .inference.choose import candidate_names, check_settings, choose_tasks

if TYPE_CHECKING:
    from .inference.choose import EvaluatorChoice


def choose_evaluator(probs_or_logits: Any, labels: Any, *, criterion: str = "ce",
                     mode: str = "confidence", classes: Sequence[int] | int | None = None,
                     p: int = 1, from_logits: bool | None = None,
                     candidates: Sequence[str] | None = None, with_pl: bool = False,
                     n_worlds: int = 40, seed: int = 0, interval: float | None = 0.9,
                     alpha: float = 0.05, debias: bool = True, n_jobs: int = 1,
                     progress: bool | None = None) -> EvaluatorChoice:
    """Recommend the evaluator to trust on these predictions (:mod:`fitontest.inference.choose`).

    Parameters
    ----------
    probs_or_logits, labels, mode, classes, from_logits
        As :func:`fitontest.evaluate` (the same checks and errors).
    criterion : {"ce", "map", "ranking"}
        Loss the recommendation minimises: ``|CE estimate - true CE|``, CMEE, or
        1 - Spearman across temperature-scaled versions of the scores.
    p : {1, 2}
        The CE's norm.
    candidates : sequence of str, optional
        Registered family names (default :data:`DEFAULT_CANDIDATES`, for
        ``"map"`` :data:`MAP_CANDIDATES`; plus :data:`PL_CANDIDATES` with
        ``with_pl``).
    n_worlds : int
        Worlds (true maps), at least 4; the Monte Carlo SE falls as 1 / sqrt.
    seed : int
        Seeds the maps' bootstrap and every world's draws: same seed, same choice.
    interval : float or None
        Level of the interval of the recommended estimate on the data
        (:func:`recommended_interval`; one task only), None for none.
    alpha : float
        Family-wise level of the "not significantly worse" set.
    debias : bool
        ``"ce"`` only (default True): correct each candidate's estimate by its
        bias in the worlds where that bias exceeds :data:`DEBIAS_SD` world SDs,
        rank by the CE error so adjusted, and recommend the mean of the
        :data:`ENSEMBLE` best candidates' adjusted estimates
        (``recommended_estimate``; measured against exact truth in
        benchmarks/measured/choose_truth.md). False: rank by the raw CE error
        and recommend evaluate's estimate of the best.
    n_jobs : int
        Processes over the worlds (joblib).
    progress : bool, optional
        A progress bar on stderr; default: when stderr is a terminal.
    """
    from .api import MODES, _evaluate_tasks, _read_tasks
    from .core.validation import check_option

    check_option("mode", mode, MODES)
    check_settings(criterion, p, n_worlds, interval)
    names, extra = candidate_names(criterion, candidates, with_pl)
    # one reading: the chooser and the recommended evaluator's result share it
    data = _read_tasks(probs_or_logits, labels, mode, classes, from_logits, stacklevel=3)
    with data.checked():
        choice = choose_tasks(data.pairs(), names, extra, criterion=criterion, p=p,
                              n_worlds=n_worlds, seed=seed, interval=interval, alpha=alpha,
                              debias=debias, n_jobs=n_jobs, progress=progress)
    choice.result = _evaluate_tasks(data, choice.evaluator, mode, p, test=None)
    return choice


__all__ = ["choose_evaluator"]

# the chooser's constants and results, re-exported here before issue 58, warn
# and point to their homes (fitontest.inference.choose; EvaluatorChoice: fitontest)
__getattr__, __dir__ = moved(__name__)
