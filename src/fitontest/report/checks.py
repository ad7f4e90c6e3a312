"""The check kinds of the findings, and what a check sees (:class:`Evidence`).

A check compares the methods of one claim (:mod:`.claims`) on the rows the
claim selects; :func:`check_kind` registers one (a function and the words of
its precise form). Check kinds and their ``params`` (each compares the methods' means):

- ``best`` (method): the method has the best mean;
- ``in_top_k`` (methods, k): each method is among the k best;
- ``rank_at_most_in_majority`` (method, rank, share: ``majority`` (default,
  more than half) | ``all`` | a fraction): the method ranks ``rank`` or better
  in that share of the disaggregated rows (``by``);
- ``rank_trend`` (method, along: ``size``, direction: ``worse`` | ``better``):
  its rank never improves (worsens) from one value of ``along`` to the next
  larger and is worse (better) at the largest than at the smallest;
- ``ahead_of`` (ahead, behind): every ``ahead`` method beats every ``behind``;
- ``in_bottom_fraction`` (method, fraction): in the bottom ceil(fraction × n);
- ``above_threshold`` (method, threshold): its mean exceeds the threshold
  (in the measure's own units, not ×1000).

A new check kind is one function decorated with :func:`check_kind`.

Semantics shared by every check (the "precise form" each report line prints
is generated from them):

- Rows are those of the main truth estimator (the first of the config's
  ``truth`` list; ``exact`` for synthetic rows), then the claim's filter.
- A method's value is its cell mean as in the tables (:mod:`.specs`): the
  mean over the independent clusters of the mean over their units
  (:mod:`.policy`; the plain mean of the rows when every unit has the same
  number of rows). Table 3 "overall" for ``cmee``.
  Methods whose measure is undefined (NaN, e.g. the CMEE of KCE) take no part.
- Ranks: 1 = best (lowest, or highest for ``spearman``); ties share the best
  rank of the tie.
- Disaggregated rows (``by``) are the rows of each grouping's table (e.g. the
  by-model, by-size and by-task sections of Table 3); a grouping with a
  single row (one network, one size) repeats the overall row and is left out.
- Verdict (never from point ranks alone): ``orders(wide,
  lower_is_better=..., alpha=...)`` receives the same clusters x methods
  matrix as the tables (rows = the policy's independent clusters of the
  run's design, e.g. the (model, task, seed) draws for evaluators, the
  (model, draw) fits for calibrators) and returns the methods x methods
  matrix "row significantly better than column"
  (:func:`fitontest.inference.stats.pairwise_better`: paired t-tests of every
  pair, Holm over the pairs, as the tables' markers). From it each method
  gets simultaneous rank bounds (:func:`.stats.rank_bounds`). A claim is
  **supported** when the significant orders imply it (e.g. ``best``: the
  method is significantly better than every other), **contradicted** when
  they imply its negation (another method is significantly better), and
  **not distinguishable** otherwise — including with fewer clusters than
  the policy's ``min_clusters``. The point order (means) is reported beside
  it as ``point``: *holds* or *does not hold*.
- The fourth outcome, **equivalent** (checks registered with
  ``equivalence=True``: ``best``, ``ahead_of``, ``above_threshold``): not
  supported nor contradicted, and the compared means shown within the
  claim's margin by TOSTs in one Holm family with the pairwise tests
  (:mod:`.equivalence`, docs/methods/11-verdicts.md §11.5.1). A claim left not
  distinguishable carries :class:`.projection.Takes`: the outcome its means
  lead to and the factor on the clusters that decides it at 80 % power
  (docs/methods/11-verdicts.md §11.5.2).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from . import policy
# SPEARMAN, Orders: re-exported (claims, findings and callers import them from here)
from .evidence import (ALPHA, CONTRADICTED, EQUIVALENT, SPEARMAN, SUPPORTED,  # noqa: F401
                       UNDECIDED, Evidence, NotTestable, Orders, Outcome, _pct, verdict)
from .equivalence import tost_target
from .projection import INF, Takes, kth, target_factor
from ..inference.stats import mean_interval, rank_bounds


def _word(ev_or_claim) -> str:
    return "lowest" if ev_or_claim.lower_is_better else "highest"


# ---------------------------------------------------------------------------
# check kinds


@dataclass(frozen=True)
class CheckKind:
    func: Callable[[Evidence, Mapping[str, Any]], Outcome]
    describe: Callable[[Any, Mapping[str, Any]], str]
    required: tuple[str, ...]
    optional: tuple[str, ...] = ()
    choices: Mapping[str, tuple] = field(default_factory=dict)
    equivalence: bool = False   # has the fourth outcome (takes a margin)

    def validate(self, claim_id: str, params: Mapping[str, Any]) -> None:
        missing = [p for p in self.required if p not in params]
        unknown = sorted(set(params) - set(self.required) - set(self.optional))
        if missing or unknown:
            raise ValueError(f"claim {claim_id!r}: check parameters missing {missing}, "
                             f"unknown {unknown} (takes {list(self.required)} "
                             f"+ optional {list(self.optional)})")
        for name, allowed in self.choices.items():
            if name in params and params[name] not in allowed:
                raise ValueError(f"claim {claim_id!r}: {name} must be one of {list(allowed)}, "
                                 f"got {params[name]!r}")


CHECKS: dict[str, CheckKind] = {}


def check_kind(name: str, *, describe, required: Sequence[str], optional: Sequence[str] = (),
               choices: Mapping[str, tuple] | None = None, equivalence: bool = False):
    """Register a check: ``func(evidence, params) -> Outcome`` (the point
    order, the verdict, their words and what would decide an open verdict); it raises
    :class:`NotTestable` when the run cannot decide. ``describe(claim, params)``
    words the precise test; ``choices`` lists the allowed values of enumerated parameters;
    ``equivalence``: the check has the fourth outcome (and its claims a margin)."""
    def deco(func):
        CHECKS[name] = CheckKind(func, describe, tuple(required), tuple(optional),
                                 dict(choices or {}), equivalence)
        return func
    return deco


def _listing(ev: Evidence, means: pd.Series, top: int | None = None) -> str:
    shown = means if top is None else means.iloc[:top]
    more = "" if top is None or len(means) <= top else ", ..."
    scale = "" if ev.scale == 1 else " ×1000"
    return f"mean {ev.measure}{scale}: " + ", ".join(
        f"{m} {ev.fmt(v)}" for m, v in shown.items()) + more


def _bounds_words(b: pd.DataFrame, methods: Sequence[str]) -> str:
    return ", ".join(f"{m} rank {_span(b.loc[m])}" for m in methods)


def _span(r) -> str:
    lo, hi = int(r["lo"]), int(r["hi"])
    return f"{lo}" if lo == hi else f"{lo}–{hi}"


def _rank_verdict(ev: Evidence, rows: Sequence[str], method: str, ok) -> tuple[dict, dict]:
    """Per table row: the verdict of "``method``'s rank satisfies ``ok``"
    (``ok(lo, hi) -> (supported, contradicted)`` on its simultaneous rank
    bounds), and the bounds; rows without a test are not distinguishable."""
    verdicts, bounds = {}, {}
    for label, better in ev.better(rows).items():
        if better is None or method not in better.index:
            verdicts[label] = UNDECIDED
            continue
        b = rank_bounds(better)
        bounds[label] = b
        verdicts[label] = verdict(*ok(int(b.loc[method, "lo"]), int(b.loc[method, "hi"])))
    return verdicts, bounds


def _overall(ev: Evidence, methods: Sequence[str], ok_each, *, combine=all, eq_pairs=()):
    """Verdict and words of a claim on the overall row about ``methods``'
    rank bounds: ``ok_each(lo, hi) -> (supported, contradicted)`` per method;
    supported when every method is, contradicted when any is. Also the
    bounds (None with too few clusters) and which ``eq_pairs`` are equivalent."""
    d = ev.decide([], eq_pairs=eq_pairs).get("all")
    if d is None:
        return UNDECIDED, ev.too_few(), None, {}
    better, eq = d
    b = rank_bounds(better)
    per = [ok_each(int(b.loc[m, "lo"]), int(b.loc[m, "hi"])) for m in methods]
    v = verdict(combine(s for s, _ in per), any(c for _, c in per))
    return v, (f"{v}: simultaneous rank bounds {_bounds_words(b, methods)} of {len(b)} "
               f"({ev.where(n_eq=len(eq))})"), b, eq


def _eq_words(ev: Evidence, methods: Sequence[str]) -> str:
    return (f"{EQUIVALENT}: {' and '.join(methods)} within {ev.margin.words()} of "
            f"each other's mean {ev.measure}")


@check_kind("best", required=["method"], equivalence=True,
            describe=lambda c, p: f"{p['method']} has the {_word(c)} mean {c.measure_words} "
                                  f"of all {c.entity}s")
def check_best(ev: Evidence, p):
    m = p["method"]
    means = ev.require([m])
    ranks = ev.overall_ranks()
    rank = int(ranks[m])
    ties = [c for c in ranks.index if ranks[c] == rank and c != m]
    tied = f" (tied with {', '.join(ties)})" if ties else ""
    text = f"{m} rank {rank}{tied} of {len(means)}; {_listing(ev, means, top=4)}"
    others = [o for o in means.index if o != m]
    v, sig, b, eq = _overall(ev, [m], lambda lo, hi: (hi == 1, lo > 1),
                             eq_pairs=[(m, o) for o in others])
    # the rivals: every other method not significantly worse than any (with m,
    # the confidence set for the best); m equivalent to each = best up to the margin
    rivals = [o for o in others if b is None or int(b.loc[o, "lo"]) == 1]
    if v == UNDECIDED and b is not None and eq and all(eq.get((m, o)) for o in rivals):
        v = EQUIVALENT
        sig = (f"{_eq_words(ev, [m, *rivals])}; the others significantly worse "
               f"({ev.where(n_eq=len(eq))})")
    takes = None
    if v == UNDECIDED:
        pr = ev.projection()["all"]
        takes = Takes.pick({SUPPORTED: pr.win(m, others, len(others)),
                            CONTRADICTED: pr.loss(m, others, 1),
                            EQUIVALENT: max((min(pr.equivalence(m, o), pr.loss(o, means.index, 1))
                                             for o in rivals), default=INF)})
    return Outcome(rank == 1, v, text, sig, takes)


@check_kind("in_top_k", required=["methods", "k"],
            describe=lambda c, p: f"each of {', '.join(p['methods'])} is among the {p['k']} "
                                  f"{c.entity}s with the {_word(c)} mean {c.measure_words}")
def check_in_top_k(ev: Evidence, p):
    methods, k = list(p["methods"]), int(p["k"])
    means = ev.require(methods)
    if len(means) <= k:
        raise NotTestable(f"only {len(means)} {ev.entity}s ran: the top {k} holds them all")
    ranks = ev.overall_ranks()
    holds = bool((ranks[methods] <= k).all())
    text = (", ".join(f"{m} rank {int(ranks[m])}" for m in methods) + f" of {len(means)}; "
            + _listing(ev, means, top=k + 1))
    v, sig, _, _ = _overall(ev, methods, lambda lo, hi: (hi <= k, lo > k))
    takes = None
    if v == UNDECIDED:
        pr, n = ev.projection()["all"], len(means)
        takes = Takes.pick({SUPPORTED: max(pr.win(x, means.index, n - k) for x in methods),
                            CONTRADICTED: min(pr.loss(x, means.index, k) for x in methods)})
    return Outcome(holds, v, text, sig, takes)


def _top(rank) -> str:
    return "first" if rank == 1 else f"in the top {rank}"


def _share_words(share) -> str:
    return ("a majority (more than half)" if share == "majority" else
            "every one" if share == "all" else f"at least {_pct(share)}")


def _share_met(k: int, n: int, share) -> bool:
    return k > n / 2 if share == "majority" else k == n if share == "all" \
        else k >= float(share) * n


@check_kind("rank_at_most_in_majority", required=["method", "rank"], optional=["share"],
            describe=lambda c, p: (
                f"{p['method']} ranks {_top(p['rank'])} by mean {c.measure_words} among the "
                f"{c.entity}s in {_share_words(p.get('share', 'majority'))} of the rows by "
                f"{'; by '.join(', '.join(g) for g in c.by) or '(no grouping)'} "
                f"(a grouping with a single row is left out)"))
def check_rank_in_majority(ev: Evidence, p):
    m, r, share = p["method"], p["rank"], p.get("share", "majority")
    ev.require([m])
    rows, skipped = ev.disaggregated()
    ranks = ev.ranks(rows)[m].dropna()
    if ranks.empty:
        raise NotTestable(f"{m} has no defined {ev.measure} in any disaggregated row")
    k, n = int((ranks <= r).sum()), len(ranks)
    holds = _share_met(k, n, share)
    text = (f"rank ≤ {r} in {k} of {n} rows (" + ", ".join(
        f"{lab}: {int(v)}" for lab, v in ranks.items()) + ")")
    if skipped:
        text += f"; single-row groupings left out: {'; '.join(skipped)}"
    got = {}
    for g in ev.by:
        if len(ev.table(g)) < 2:
            continue
        vs, _ = _rank_verdict(ev, g, m, lambda lo, hi: (hi <= r, lo > r))
        for lab, v in vs.items():
            t = lab if isinstance(lab, tuple) else (lab,)
            got[", ".join(f"{a}={b}" for a, b in zip(g, t))] = v
    got = {lab: got.get(lab, UNDECIDED) for lab in ranks.index}
    sup = sum(v == SUPPORTED for v in got.values())
    con = sum(v == CONTRADICTED for v in got.values())
    v = verdict(_share_met(sup, n, share), not _share_met(n - con, n, share))
    takes = _rows_takes(ev, m, r, share) if v == UNDECIDED else None
    sig = (f"{v}: rank ≤ {r} significantly in {sup} of {n} rows, significantly not in "
           f"{con} (simultaneous rank bounds per row over that row's independent "
           f"{policy.words(ev.inference.clusters)} clusters; α = {ALPHA}, Holm over each "
           f"row's pairs)")
    return Outcome(holds, v, text, sig, takes)


def _rows_takes(ev: Evidence, m: str, r: int, share) -> Takes:
    """Per disaggregated row the factor at which m's rank bound is ≤ r (or
    certainly > r); the claim needs as many rows as its share."""
    sup, con = [], []
    for g in ev.by:
        if len(ev.table(g)) < 2:
            continue
        for pr in ev.projection(g).values():
            if m in pr.wide.columns:
                cols = list(pr.wide.columns)
                sup.append(pr.win(m, cols, len(cols) - r))
                con.append(pr.loss(m, cols, r))
    n = len(sup)
    need = next(q for q in range(n + 1) if _share_met(q, n, share)) if n else 0
    return Takes.pick({SUPPORTED: kth(sup, need), CONTRADICTED: kth(con, n - need + 1)})


@check_kind("rank_trend", required=["method"], optional=["along", "direction"],
            choices={"direction": ("worse", "better"), "along": ("size", "seed", "ce_level")},
            describe=lambda c, p: (
                f"{p['method']}'s rank by mean {c.measure_words} among the {c.entity}s never "
                f"{'improves' if p.get('direction', 'worse') == 'worse' else 'worsens'} from one "
                f"{p.get('along', 'size')} to the next larger, and is "
                f"{p.get('direction', 'worse')} at the largest than at the smallest"))
def check_rank_trend(ev: Evidence, p):
    m, along, direction = p["method"], p.get("along", "size"), p.get("direction", "worse")
    ev.require([m])
    wide = ev.table([along])
    ranks = ev.ranks(wide)[m].dropna()
    if len(ranks) < 2:
        raise NotTestable(f"a single {along} ({', '.join(map(str, wide.index))})")
    steps = np.diff(ranks.to_numpy())
    sign = 1 if direction == "worse" else -1
    holds = bool((sign * steps >= 0).all() and sign * (ranks.iloc[-1] - ranks.iloc[0]) > 0)
    text = f"{m} rank by {along}: " + ", ".join(
        f"{s}: {int(v)}" for s, v in ranks.items()) + f" (of {wide.shape[1]})"
    _, bounds = _rank_verdict(ev, [along], m, lambda lo, hi: (False, False))
    # every pair of every row ordered: the ranks exact, the trend decided
    takes = Takes.pick({SUPPORTED if holds else CONTRADICTED: max(
        pr.all_orders() for pr in ev.projection([along]).values())})
    if any(v not in bounds for v in ranks.index):
        return Outcome(holds, UNDECIDED, text, ev.too_few([along]), takes)
    # on the "worse" scale (larger = in the claimed direction): [lo, hi] per value
    b = [(sign * bounds[v].loc[m, "lo"], sign * bounds[v].loc[m, "hi"]) for v in ranks.index]
    b = [(min(x), max(x)) for x in b]
    certain_steps = all(nxt[0] >= prev[1] for prev, nxt in zip(b, b[1:]))
    sup = certain_steps and b[-1][0] > b[0][1]
    con = any(nxt[1] < prev[0] for prev, nxt in zip(b, b[1:])) or b[-1][1] <= b[0][0]
    v = verdict(sup, con)
    sig = (f"{v}: rank bounds by {along}: " + ", ".join(
        f"{s}: {_span(bounds[s].loc[m])}" for s in ranks.index) + f" ({ev.where([along])})")
    return Outcome(holds, v, text, sig, takes if v == UNDECIDED else None)


@check_kind("ahead_of", required=["ahead", "behind"], equivalence=True,
            describe=lambda c, p: f"every one of {', '.join(p['ahead'])} has a "
                                  f"{'lower' if c.lower_is_better else 'higher'} mean "
                                  f"{c.measure_words} than every one of {', '.join(p['behind'])}")
def check_ahead_of(ev: Evidence, p):
    ahead, behind = list(p["ahead"]), list(p["behind"])
    means = ev.require(ahead + behind)
    sign = 1 if ev.lower_is_better else -1
    pairs = [(a, b) for a in ahead for b in behind]
    holds = all(sign * (means[a] - means[b]) < 0 for a, b in pairs)
    text = _listing(ev, means[[c for c in means.index if c in ahead + behind]])
    # Holm over the claim's own pairs of methods (and their equivalence tests)
    methods = list(dict.fromkeys(ahead + behind))
    pr = ev.projection([], methods=methods)["all"]
    takes = Takes.pick({SUPPORTED: max(pr.wins.loc[a, b] for a, b in pairs),
                        CONTRADICTED: min(pr.wins.loc[b, a] for a, b in pairs),
                        EQUIVALENT: max(min(pr.equivalence(a, b), pr.wins.loc[a, b])
                                        for a, b in pairs)})
    d = ev.decide([], methods=methods, eq_pairs=pairs).get("all")
    if d is None:
        return Outcome(holds, UNDECIDED, text, ev.too_few(), takes)
    better, eq = d
    sup = sum(bool(better.loc[a, b]) for a, b in pairs)
    con = sum(bool(better.loc[b, a]) for a, b in pairs)
    v = verdict(sup == len(pairs), con > 0)
    sig = (f"{v}: ahead significantly in {sup} of {len(pairs)} pairs, behind significantly "
           f"in {con} ({ev.where(n_eq=len(eq))})")
    open_ = [(a, b) for a, b in pairs if not better.loc[a, b]]
    if v == UNDECIDED and eq and all(eq.get(q) for q in open_):
        v = EQUIVALENT
        sig = (f"{'; '.join(_eq_words(ev, q) for q in open_)}; ahead significantly in {sup} "
               f"of {len(pairs)} pairs ({ev.where(n_eq=len(eq))})")
    return Outcome(holds, v, text, sig, takes if v == UNDECIDED else None)


@check_kind("in_bottom_fraction", required=["method", "fraction"],
            describe=lambda c, p: f"{p['method']} is in the bottom {_pct(p['fraction'])} "
                                  f"(rounded up) of the {c.entity}s by mean {c.measure_words}")
def check_in_bottom_fraction(ev: Evidence, p):
    m, frac = p["method"], float(p["fraction"])
    means = ev.require([m], at_least=3)
    n = len(means)
    size = math.ceil(frac * n - 1e-9)
    rank = int(ev.overall_ranks()[m])
    holds = rank > n - size
    text = (f"{m} rank {rank} of {n}; bottom {size} = ranks {n - size + 1}–{n}: "
            + ", ".join(means.index[n - size:]))
    v, sig, _, _ = _overall(ev, [m], lambda lo, hi: (lo > n - size, hi <= n - size))
    takes = None
    if v == UNDECIDED:
        pr = ev.projection()["all"]
        takes = Takes.pick({SUPPORTED: pr.loss(m, means.index, n - size),
                            CONTRADICTED: pr.win(m, means.index, size)})
    return Outcome(holds, v, text, sig, takes)


@check_kind("above_threshold", required=["method", "threshold"], equivalence=True,
            describe=lambda c, p: (f"{p['method']}'s mean {c.measure_words} is above "
                                   f"{p['threshold']}"))
def check_above_threshold(ev: Evidence, p):
    m, t = p["method"], float(p["threshold"])
    means = ev.require([m], at_least=1)
    holds = bool(means[m] > t)
    text = f"{m} mean {ev.measure} {means[m]:.4g} vs threshold {t:g}"
    vals = ev.cells([]).units["all"][m].dropna().to_numpy()   # cluster means, own units
    k = ev.inference.min_clusters
    takes = Takes.pick(target_factor(vals, t, ev.margin, ALPHA, k))
    if len(vals) < k:
        return Outcome(holds, UNDECIDED, text, ev.too_few(), takes)
    lo, hi = mean_interval(vals, 1 - 2 * ALPHA)[1:]    # two one-sided tests at α
    v = verdict(bool(lo > t), bool(hi < t))
    sig = f"{1 - 2 * ALPHA:.0%} t-interval of the mean [{lo:.4g}, {hi:.4g}] ({ev.where()})"
    # a false "supported" and a false "equivalent" lie in one tail of the mean:
    # the TOST needs no share of α (docs/methods/11-verdicts.md §11.5.1)
    if v == UNDECIDED and ev.margin and tost_target(vals, t, ev.margin, k) < ALPHA:
        v = EQUIVALENT
        return Outcome(holds, v, text, f"{v}: mean within {ev.margin.words()} of {t:g} (TOST; "
                                       f"{sig})")
    return Outcome(holds, v, text, f"{v}: {sig}", takes if v == UNDECIDED else None)
