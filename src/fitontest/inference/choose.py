"""Which evaluator to trust on *these* predictions: a data-adaptive choice
(docs/methods/14-chooser.md §14), on binary tasks.

>>> import fitontest
>>> choice = fitontest.choose_evaluator(probs, labels)       # doctest: +SKIP
>>> print(choice)                                            # doctest: +SKIP

The front door, :func:`fitontest.choose_evaluator`, reduces a K-class model's
predictions to binary tasks as :func:`fitontest.evaluate` does and hands them
to :func:`choose_tasks`, the rule itself.

No evaluator wins everywhere: the best one moves with the shape of the true
map, the score law and n. :func:`choose_tasks` measures the candidates in
worlds shaped like the user's data (:mod:`fitontest.inference.worlds`): the user's scores
resampled, true maps drawn from the set the data cannot rule out (several
generator families' fits, each perturbed by refitting on bootstrap resamples),
labels redrawn at the user's n. Every candidate is fitted in every world and
scored against the world's known map:

- ``criterion="ce"``: ``|CE estimate - true CE|`` (the estimate the tables use:
  debiased where the family has one; true CE = mean |c(s*) - s*|^p over the
  world's sample, as the study's ``ce_error``);
- ``criterion="map"``: CMEE, mean |c_hat(s) - c(s)|^p over the user's scores
  (evaluators without a map get none);
- ``criterion="ranking"``: 1 - Spearman correlation, across five temperature
  scalings of the world's scores (T in :data:`RANK_TEMPERATURES`, the
  "calibrators" to rank), between the estimated and the true CE of each.

Over several tasks (classwise / ovr) a world's error is that of the mean over
the tasks, as :func:`fitontest.evaluate` reports the mean. The recommendation
is the candidate with the lowest mean loss over the worlds; ``tied`` marks the
candidates not significantly worse than any other (two-sided paired t-tests
over the worlds, Holm over all pairs: :func:`fitontest.inference.stats.significance_markers`,
the tables' rule). Its estimate on the real data is :func:`fitontest.evaluate`'s.

Under ``"ce"`` the worlds also measure each candidate's bias (mean signed CE
error). Where the bias is clear (|bias| > :data:`DEBIAS_SD` world SDs of the
signed error) the candidate's estimate is corrected by it, and candidates are
ranked by the error so adjusted; the chooser's estimate is the mean of the
:data:`ENSEMBLE` best candidates' adjusted estimates (an ensemble, said so in
the output). ``debias=False`` gives the plain ranking by raw error. The
*recommended estimate* is that one only where the worlds tell it apart from
:data:`FALLBACK` (:func:`fallback_test`), else :data:`FALLBACK`'s; its
interval is :func:`recommended_interval`. ``DEBIAS_SD``, ``ENSEMBLE`` and
``MAP_CANDIDATES`` were chosen on the truth benchmark's own subsets (mainly
synthetic and procedural): an in-sample choice; the step-map and calibrated
generators and :data:`FALLBACK_ALPHA` were declared; all are checked on four
held-out sources: two step maps, a calibrated and a near-calibrated model
(docs/methods/14-chooser.md §14.3, benchmarks/measured/choose_truth.md).

Cost: ``n_worlds`` fits of every candidate (times 5 for ``"ranking"``), per
task, and the interval's (docs/methods/14-chooser.md §14.3 has it measured); ``n_jobs``
spreads worlds over processes.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from fitontest.core.validation import check_option

from .candidates import RANK_TEMPERATURES, all_world_losses, fit_used, world_losses

CRITERIA = ("ce", "map", "ranking")

#: the binning, parametric, isotonic and smooth families (PL / PL3 with ``with_pl``);
#: ``kde`` only when asked for: the costliest fit at n = 10,000 (0.4 s) and, in the
#: truth benchmark, the pick that cost most when wrong (benchmarks/measured/choose_truth.md)
DEFAULT_CANDIDATES = ("ece_es15", "ece_es_cv", "ece_es_sweep", "ece_ew15", "ece_ew_cv",
                      "ece_ew_sweep", "platt", "temp_1vsrest", "beta", "isotonic",
                      "scaling_binning", "smece", "spline_natural", "spline_cubic",
                      "spline_parabolic")
#: default candidates of ``criterion="map"``: the worlds' maps (bootstrap refits) are
#: rougher than true maps, and against exact truth the worlds' CMEE ranking of the
#: flexible smoothers misled (docs/methods/14-chooser.md §14.3)
MAP_CANDIDATES = ("platt", "beta")
#: ``"ce"``: a candidate's estimate is corrected by its bias in the worlds only where
#: that bias exceeds this many world SDs of its signed error (a smaller bias is within
#: what the worlds can tell apart from their mismatch with the truth)
DEBIAS_SD = 1.0
#: ``"ce"``: the recommended estimate is the mean of this many best candidates' estimates
ENSEMBLE = 3
PL_CANDIDATES = ("pl_ce", "pl3_ce")
#: ``"ce"``: the evaluator whose estimate is reported when the worlds cannot tell the
#: recommendation apart from it (``fitontest.evaluate``'s default): not choosing
FALLBACK = "ece_es_cv"
#: ``"ce"``: the recommendation stands only where it errs less than :data:`FALLBACK`
#: in the worlds of every kept generator and, over all worlds, significantly so
#: (one-sided paired t at this level); else :data:`FALLBACK`'s estimate is reported
FALLBACK_ALPHA = 0.05



@dataclass(frozen=True)
class EvaluatorScore:
    """One candidate's mean loss over the worlds, with its Monte Carlo SE.

    ``ce_error``: mean ``|CE estimate - true CE|``; ``cmee``: mean CMEE (NaN
    without a map); ``ranking``: mean 1 - Spearman (NaN unless asked for);
    ``tied``: not significantly worse than any other under the criterion;
    ``bias``: mean signed CE error (estimate - true CE) over the worlds;
    ``corrected``: whether the estimate is corrected by that bias (|bias| >
    :data:`DEBIAS_SD` world SDs); ``adjusted_error``: mean |CE error| of the
    estimate so corrected (the bias taken from the other worlds: leave-one-out),
    which ``"ce"`` ranks by.
    """

    evaluator: str
    ce_error: float
    ce_error_se: float
    cmee: float
    cmee_se: float
    ranking: float = float("nan")
    ranking_se: float = float("nan")
    tied: bool = False
    bias: float = float("nan")
    bias_se: float = float("nan")
    adjusted_error: float = float("nan")
    adjusted_error_se: float = float("nan")
    corrected: bool = False


@dataclass
class EvaluatorChoice:
    """What :func:`choose_evaluator` returns: the recommended ``evaluator``,
    every candidate's ``scores`` (best first under ``criterion``), the
    recommended one's :class:`~fitontest.EvaluationResult` on the data
    (``result``), its used ``estimate`` (debiased where the family has one:
    evaluate's value) and ``interval`` (one task only; the recommended
    evaluator's, around ``estimate``), and the generators whose maps made the
    worlds with their Kuiper p-values (``generators``, first task).

    Under ``criterion="ce"`` (with ``debias``) the chooser's own number is the
    mean over ``ensemble`` (the :data:`ENSEMBLE` candidates with the lowest
    adjusted error in the worlds, ``evaluator`` first) of their estimates,
    each minus its bias in the worlds where ``corrected``, floored at 0
    (``ensemble_estimate``); ``ensemble_error`` (± ``ensemble_error_se``) is
    that mean's expected |CE error| in the worlds. The number to report is
    ``recommended_estimate``: that one, or :data:`FALLBACK`'s estimate where
    the worlds cannot tell the two apart (``fallback``, with
    ``fallback_reason``); ``interval`` is the interval for it (one task
    only; :func:`recommended_interval`)."""

    evaluator: str
    criterion: str
    p: int
    scores: list[EvaluatorScore]
    result: Any
    estimate: float
    interval: Any = None
    n_worlds: int = 0
    generators: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    debias: bool = True
    ensemble: list[str] = field(default_factory=list)
    ensemble_estimate: float = float("nan")
    ensemble_error: float = float("nan")
    ensemble_error_se: float = float("nan")
    fallback: bool = False
    fallback_reason: str = ""
    fallback_estimate: float = float("nan")

    @property
    def recommended_estimate(self) -> float:
        """The CE estimate to report: under ``"ce"`` :data:`FALLBACK`'s where
        ``fallback``, else ``ensemble_estimate`` (with ``debias``) or the pick's
        ``estimate``; the pick's ``estimate`` under the other criteria."""
        if self.criterion == "ce" and self.fallback:
            return self.fallback_estimate
        return self.ensemble_estimate if self._adjusted else self.estimate

    def recommended_what(self) -> str:
        """What :attr:`recommended_estimate` is, in words."""
        if self.criterion == "ce" and self.fallback:
            return f"{FALLBACK}'s estimate (not choosing: {self.fallback_reason})"
        if self._adjusted:
            return (f"mean of {', '.join(self.ensemble)} (bias-corrected where clear; "
                    f"{self.fallback_reason})")
        return f"{self.evaluator}'s estimate"

    @property
    def _adjusted(self) -> bool:
        return self.criterion == "ce" and self.debias

    @property
    def tied(self) -> list[str]:
        """The candidates not significantly worse than any other."""
        return [r.evaluator for r in self.scores if r.tied]

    def reason(self) -> str:
        """One line: which evaluator and why."""
        best = self.scores[0]
        what = {"ce": ("expected |CE error| (bias-corrected where clear)", best.adjusted_error,
                       best.adjusted_error_se) if self.debias else
                ("expected |CE error|", best.ce_error, best.ce_error_se),
                "map": ("expected CMEE", best.cmee, best.cmee_se),
                "ranking": ("expected 1 - Spearman", best.ranking, best.ranking_se)}
        label, v, se = what[self.criterion]
        others = [e for e in self.tied if e != self.evaluator]
        return (f"auto: {self.evaluator}, the lowest {label} ({v:.5f} ± {se:.5f}) of "
                f"{len(self.scores)} evaluators in {self.n_worlds} worlds like these data; "
                + (f"not significantly worse: {', '.join(others)}" if others
                   else "every other is significantly worse")
                + (f"; recommended estimate {self.recommended_estimate:.6f}: "
                   f"{self.recommended_what()}" if self.criterion == "ce" else ""))

    def table(self) -> str:
        iv = self.interval
        head = (f"recommended: {self.evaluator} (criterion {self.criterion}, p={self.p}): "
                + (f"recommended estimate {self.recommended_estimate:.6f}"
                   + (f", interval [{iv.lo:.6f}, {iv.hi:.6f}] ({iv.level:g}; "
                      f"{_coverage_word(iv)})" if iv else "") + "; "
                   if self.criterion == "ce" else "")
                + f"{self.evaluator}'s estimate {self.estimate:.6f}"
                + (f", interval [{iv.lo:.6f}, {iv.hi:.6f}] ({iv.level:g})"
                   if iv and self.criterion != "ce" else "")
                + f"; worlds from {', '.join(self.generators) or '-'}")
        rows: list[tuple[str, ...]] = [("evaluator", "CE error", "± SE", "bias", "adjusted",
                                        "± SE", "CMEE", "± SE", "1-Spearman", "± SE", "")]
        for r in self.scores:
            rows.append((r.evaluator, *(f"{v:.5f}" if np.isfinite(v) else "-" for v in (
                r.ce_error, r.ce_error_se, r.bias)),
                *(f"{v:.5f}" + ("c" if r.corrected and i == 0 else "") if np.isfinite(v)
                  else "-" for i, v in enumerate((r.adjusted_error, r.adjusted_error_se))),
                *(f"{v:.5f}" if np.isfinite(v) else "-" for v in (
                    r.cmee, r.cmee_se, r.ranking, r.ranking_se)),
                "*" if r.tied else ""))
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        lines = ["  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in rows]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join([head, *lines, "* = not significantly worse than any other "
                          "(paired t over the worlds, Holm); adjusted = CE error once "
                          f"corrected by the bias (c: corrected, |bias| > {DEBIAS_SD:g} "
                          "world SD)", self.reason()])

    __str__ = table

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        iv = self.interval
        return {"evaluator": self.evaluator, "criterion": self.criterion, "p": self.p,
                "estimate": self.estimate, "recommended_estimate": self.recommended_estimate,
                "recommended": self.recommended_what(), "fallback": self.fallback,
                "ensemble": self.ensemble, "ensemble_estimate": self.ensemble_estimate,
                "ensemble_error": self.ensemble_error,
                "ensemble_error_se": self.ensemble_error_se, "n_worlds": self.n_worlds,
                "interval": None if iv is None else {"lo": iv.lo, "hi": iv.hi,
                                                     "level": iv.level, "method": iv.method,
                                                     "valid": iv.valid,
                                                     "validity_note": iv.validity_note},
                "generators": self.generators, "seconds": self.seconds,
                "reason": self.reason(), "result": self.result.to_dict(),
                "scores": [{k: (None if isinstance(v, float) and not np.isfinite(v) else v)
                            for k, v in asdict(r).items()} for r in self.scores]}


def _coverage_word(iv) -> str:
    return {True: "coverage measured", False: "measured short",
            None: "coverage not measured here"}[iv.valid]


# --------------------------------------------------------------------- public
def check_settings(criterion, p, n_worlds, level) -> None:
    check_option("criterion", criterion, CRITERIA)
    if isinstance(p, bool) or p not in (1, 2):
        raise ValueError(f"p must be 1 or 2 for choose_evaluator, got {p!r}")
    if isinstance(n_worlds, bool) or not isinstance(n_worlds, (int, np.integer)) \
            or n_worlds < 4:
        raise ValueError(f"n_worlds must be an integer >= 4, got {n_worlds!r}")
    if level is not None and not 0.0 < float(level) < 1.0:
        raise ValueError(f"interval must be a level in (0, 1) or None, got {level!r}")


def candidate_names(criterion: str, candidates: Sequence[str] | None,
                    with_pl: bool) -> tuple[list[str], list[str]]:
    """(candidates, extra): the names ranked (checked against the registry: an
    unknown one is its error, with the close names) and those fitted in the
    worlds only (:data:`FALLBACK` under ``"ce"`` where it is not a candidate)."""
    from .. import families

    default = MAP_CANDIDATES if criterion == "map" else DEFAULT_CANDIDATES
    names = list(dict.fromkeys(candidates if candidates is not None
                               else default + (PL_CANDIDATES if with_pl else ())))
    if not names:
        raise ValueError("candidates is empty")
    # the fallback is fitted in the worlds too (its errors decide the fallback), but
    # ranked only where it is a candidate
    extra = [FALLBACK] if criterion == "ce" and FALLBACK not in names else []
    for name in names + extra:
        families.get(name)
    return names, extra


def choose_tasks(task_list: list[tuple[np.ndarray, np.ndarray]], names: Sequence[str],
                 extra: Sequence[str] = (), *, criterion: str = "ce", p: int = 1,
                 n_worlds: int = 40, seed: int = 0, interval: float | None = 0.9,
                 alpha: float = 0.05, debias: bool = True, n_jobs: int = 1,
                 progress: bool | None = None) -> EvaluatorChoice:
    """The choice on binary tasks ``[(scores, labels), ...]`` (their errors
    averaged, as :func:`fitontest.evaluate` averages classes): what
    :func:`fitontest.choose_evaluator` computes once it has reduced a
    K-class model's predictions (see it for the parameters), without the
    ``result`` of the front door."""
    from .worlds import plausible_maps

    t0 = time.perf_counter()
    check_settings(criterion, p, n_worlds, interval)
    # a candidate that cannot be fitted on the data is not a candidate
    s0, y0 = task_list[0]
    fitted = [nm for nm in list(names) + list(extra)
              if np.isfinite(fit_used(nm, s0, y0, p, None)[0])]
    names = [nm for nm in fitted if nm not in extra]
    if not names:
        raise ValueError("no candidate evaluator can be fitted on these data")
    per_task = [plausible_maps(s, y, int(n_worlds), [seed, 1, k])
                for k, (s, y) in enumerate(task_list)]
    losses = all_world_losses([(s, maps) for (s, _), (maps, _, _) in zip(task_list, per_task)],
                              fitted, p, criterion == "ranking", seed, n_jobs,
                              sys.stderr.isatty() if progress is None else progress)
    scores, adjusted = _scores(losses[:, :, :len(names)], names, CRITERIA.index(criterion),
                               alpha, debias)
    best = scores[0].evaluator

    def used_on_data(name):
        """The used estimate on the data (debiased where the family has one), as
        ``fitontest.evaluate`` reports it: the mean over the tasks."""
        return float(np.mean([fit_used(name, s, y, p, None)[0] for s, y in task_list]))

    used = used_on_data(best)
    ens, ens_est, ens_err, ens_se = [], float("nan"), float("nan"), float("nan")
    fallback, why, fb_est = False, "", float("nan")
    if criterion == "ce":
        rec_err = np.abs(losses[:, 3, names.index(best)])
        if debias:
            ranked = [r for r in scores if np.isfinite(r.adjusted_error)][:ENSEMBLE]
            ens = [r.evaluator for r in ranked]
            ens_est = max(0.0, float(np.mean([
                (used if r.evaluator == best else used_on_data(r.evaluator))
                - (r.bias if r.corrected else 0.0) for r in ranked])))
            rec_err = np.abs(adjusted[:, [names.index(nm) for nm in ens]].mean(axis=1))
            ens_err, ens_se = float(rec_err.mean()), float(rec_err.std(ddof=1)
                                                          / np.sqrt(rec_err.size))
        if FALLBACK in fitted:
            fallback, why = fallback_test(rec_err, np.abs(losses[:, 3, fitted.index(FALLBACK)]),
                                          per_task[0][1])
            # its used estimate (debiased, as the tables use it), floored at 0 as the
            # ensemble's: no CE is negative
            fb_est = max(0.0, used if best == FALLBACK else used_on_data(FALLBACK))
        else:
            why = f"{FALLBACK} cannot be fitted on these data: no fallback"
    choice = EvaluatorChoice(best, criterion, p, scores, None, used, None,
                             n_worlds=int(n_worlds), generators=per_task[0][2],
                             debias=bool(debias), ensemble=ens, ensemble_estimate=ens_est,
                             ensemble_error=ens_err, ensemble_error_se=ens_se,
                             fallback=fallback, fallback_reason=why, fallback_estimate=fb_est)
    if interval is not None and len(task_list) == 1:
        choice.interval = recommended_interval(choice, s0, y0, float(interval), seed)
    choice.seconds = time.perf_counter() - t0
    return choice


def fallback_test(rec_err: np.ndarray, default_err: np.ndarray, generators: np.ndarray,
                  alpha: float = FALLBACK_ALPHA) -> tuple[bool, str]:
    """(fall back?, why): whether the worlds cannot tell the recommendation's
    |CE error| (``rec_err``, per world) from :data:`FALLBACK`'s: unless it is
    lower in the worlds of every generator (``generators``: each world's) and,
    over all worlds, significantly lower (one-sided paired t at ``alpha``)."""
    from scipy import stats

    d = default_err - rec_err                     # > 0: the recommendation errs less
    worse = [str(g) for g in dict.fromkeys(generators) if not d[generators == g].mean() > 0]
    if worse:
        return True, (f"in the worlds from {', '.join(worse)} it errs no less than "
                      f"{FALLBACK}")
    with np.errstate(invalid="ignore", divide="ignore"):
        pv = float(stats.ttest_1samp(d, 0.0, alternative="greater").pvalue)
    gain = f"{d.mean():.5f} ± {d.std(ddof=1) / np.sqrt(d.size):.5f}"
    if not pv < alpha:
        return True, (f"its |CE error| is {gain} below {FALLBACK}'s in the worlds, not "
                      f"significantly (one-sided paired t, p = {pv:.2g})")
    return False, (f"{gain} below {FALLBACK}'s |CE error| in the worlds of every generator, "
                   f"p = {pv:.2g}")


def recommended_interval(choice: EvaluatorChoice, s: np.ndarray, y: np.ndarray,
                         level: float, seed):
    """The interval of :attr:`EvaluatorChoice.recommended_estimate` (``"ce"``)
    or of the pick's estimate (other criteria), a
    :class:`~fitontest.inference.intervals.CEInterval`.

    Where the pick or :data:`FALLBACK` is reported, its own ``ce_interval``.
    For the ensemble's mean: the hull of the ``ce_interval`` of
    :data:`FALLBACK` and of every ensemble member whose coverage was measured
    (the measured domain of the intervals), widened to hold the estimate. It
    holds the true CE whenever any of them does, so its coverage is at least
    each one's; its ``valid`` flag is the chooser's measured domain
    (benchmarks/measured/choose_truth.md, end to end; None between its sizes)."""
    from dataclasses import replace

    from .domains import measured
    from .intervals import ce_interval, resolve_method

    p = choice.p
    if choice.criterion != "ce" or not choice._adjusted or choice.fallback:
        name = FALLBACK if choice.criterion == "ce" and choice.fallback else choice.evaluator
        return ce_interval(name, s, y, p=p, level=level, seed=seed)
    dom = measured("intervals")
    members = [FALLBACK] + [m for m in choice.ensemble if m != FALLBACK and dom.has(
        f"{m}/{resolve_method('auto', m, p)}/{p}")]
    ivs = [ce_interval(m, s, y, p=p, level=level, seed=seed) for m in members]
    est = choice.recommended_estimate
    v = measured("chooser").validity(f"ensemble/{p}", level=level, n=s.size,
                                     n_worlds=choice.n_worlds)
    return replace(ivs[0], estimate=est, lo=min(est, *(iv.lo for iv in ivs)),
                   hi=max(est, *(iv.hi for iv in ivs)), n_boot=sum(iv.n_boot for iv in ivs),
                   method="hull of " + ", ".join(members), valid=v.valid,
                   validity_note=v.why)


def _scores(losses: np.ndarray, names: list[str], c: int, alpha: float,
            debias: bool = True):
    """(scores, (W, E) adjusted signed CE errors): each candidate's
    :class:`EvaluatorScore` over the worlds (:func:`fitontest.inference.ranking.rank`),
    best first under criterion ``c`` (``"ce"``: the CE error corrected by the bias
    where it exceeds :data:`DEBIAS_SD` world SDs, the raw one without ``debias``)."""
    from .ranking import rank

    r = rank(losses, names, 4 if c == 0 and debias else c, alpha, debias, DEBIAS_SD,
             CRITERIA[c])
    mean, se = r.mean, r.se
    return [EvaluatorScore(names[j], ce_error=float(mean[0, j]), ce_error_se=float(se[0, j]),
                           cmee=float(mean[1, j]), cmee_se=float(se[1, j]),
                           ranking=float(mean[2, j]), ranking_se=float(se[2, j]),
                           tied=bool(r.tied[j]), bias=float(mean[3, j]),
                           bias_se=float(se[3, j]), adjusted_error=float(mean[4, j]),
                           adjusted_error_se=float(se[4, j]), corrected=bool(r.corrected[j]))
            for j in r.order], r.adjusted


__all__ = ["choose_tasks", "candidate_names", "check_settings", "fallback_test",
           "recommended_interval", "EvaluatorChoice", "EvaluatorScore", "CRITERIA",
           "DEFAULT_CANDIDATES", "MAP_CANDIDATES", "PL_CANDIDATES", "DEBIAS_SD", "ENSEMBLE",
           "FALLBACK", "FALLBACK_ALPHA", "RANK_TEMPERATURES", "world_losses"]
