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
- Verdict (three outcomes, never from point ranks alone): ``orders(wide,
  lower_is_better=..., alpha=...)`` receives the same clusters x methods
  matrix as the tables (rows = the policy's independent clusters of the
  run's design, e.g. the (model, task, seed) draws for evaluators, the
  (model, draw) fits for calibrators) and returns the methods x methods
  matrix "row significantly better than column"
  (:func:`fitontest.report.stats.pairwise_better`: paired t-tests of every
  pair, Holm over the pairs, as the tables' markers). From it each method
  gets simultaneous rank bounds (:func:`.stats.rank_bounds`). A claim is
  **supported** when the significant orders imply it (e.g. ``best``: the
  method is significantly better than every other), **contradicted** when
  they imply its negation (another method is significantly better), and
  **not distinguishable** otherwise — including with fewer clusters than
  the policy's ``min_clusters``. The point order (means) is reported beside
  it as ``point``: *holds* or *does not hold*.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from . import policy
from .aggregate import aggregate_units
from .stats import mean_interval, pairwise_better, rank_bounds

ALPHA = policy.ALPHA
SPEARMAN = "spearman"
Orders = Callable[..., pd.DataFrame]
SUPPORTED, CONTRADICTED, UNDECIDED = "supported", "contradicted", "not distinguishable"


def verdict(supported: bool, contradicted: bool) -> str:
    """The three outcomes (module docstring); both at once cannot come from
    consistent rank bounds, and is read as not distinguishable."""
    if supported and not contradicted:
        return SUPPORTED
    if contradicted and not supported:
        return CONTRADICTED
    return UNDECIDED


@dataclass(frozen=True)
class Outcome:
    """What a check returns: the point order, the verdict, and their words."""

    point: bool                 # the claimed order holds for the means
    verdict: str                # SUPPORTED, CONTRADICTED or UNDECIDED
    evidence: str               # means and ranks
    significance: str           # the significant orders behind the verdict


class NotTestable(Exception):
    """The run's configuration cannot test the claim (the message says why)."""


def _pct(q: float) -> str:
    return f"{100 * float(q):.3g}%"


# ---------------------------------------------------------------------------
# what a check sees


@dataclass
class Evidence:
    """A claim's rows, reduced the ways the checks need them."""

    rows: pd.DataFrame          # main-truth rows after the filter (defined measure only)
    entity: str                 # the compared column: evaluator or calibrator
    measure: str
    lower_is_better: bool
    inference: policy.Inference  # units and independent clusters, as the tables use
    by: tuple[tuple[str, ...], ...] = ()
    orders: Orders = pairwise_better

    @property
    def scale(self) -> float:
        return policy.scale_for(self.measure)

    def cells(self, rows: Sequence[str]):
        inf = self.inference
        return aggregate_units(self.rows, self.measure, list(rows), inf.units,
                               columns=self.entity, clusters=inf.clusters)

    def fmt(self, v: float) -> str:
        return f"{v * self.scale:.4g}"

    def means(self) -> pd.Series:
        """Mean of every method with a defined value, best first."""
        m = self.table([]).iloc[0]
        return m.dropna().sort_values(ascending=self.lower_is_better, kind="stable")

    def ranks(self, wide: pd.DataFrame) -> pd.DataFrame:
        return wide.rank(axis=1, ascending=self.lower_is_better, method="min")

    def overall_ranks(self) -> pd.Series:
        return self.ranks(self.means().to_frame().T).iloc[0]

    def require(self, methods: Sequence[str], at_least: int = 2) -> pd.Series:
        """The means, or NotTestable if a method did not run or too few did."""
        means = self.means()
        absent = [m for m in methods if m not in means.index]
        if absent:
            raise NotTestable(f"{', '.join(absent)} not in this run's {self.entity}s "
                              f"(with a defined {self.measure})")
        if len(means) < at_least:
            raise NotTestable(f"only {len(means)} {self.entity}(s) to compare")
        return means

    def table(self, rows: Sequence[str]) -> pd.DataFrame:
        """Cell means by ``rows`` (columns = methods), as the tables compute them."""
        return self.cells(rows).mean

    def disaggregated(self) -> tuple[pd.DataFrame, list[str]]:
        """Rows of every ``by`` grouping with two or more rows, and the groupings left out."""
        parts, skipped = [], []
        for g in self.by:
            w = self.table(g)
            if len(w) < 2:
                skipped.append(", ".join(g))
                continue
            labels = w.index if isinstance(w.index, pd.MultiIndex) else [(v,) for v in w.index]
            w.index = [", ".join(f"{k}={v}" for k, v in zip(g, t)) for t in labels]
            parts.append(w)
        if not parts:
            raise NotTestable(f"a single row in every grouping ({'; '.join(skipped)})")
        return pd.concat(parts), skipped

    def better(self, rows: Sequence[str] = (), methods: Sequence[str] | None = None
               ) -> dict:
        """Per table row of ``rows`` (``"all"`` without rows): the matrix
        "significantly better" over ``methods`` (default: those with a
        defined mean in that row) on the row's independent clusters, or None
        where the row has fewer clusters than the policy's ``min_clusters``."""
        inf = self.inference
        out = {}
        for label, wide in self.cells(rows).units.items():
            cols = [m for m in (methods if methods is not None else wide.columns)
                    if m in wide.columns and wide[m].notna().any()]
            w = wide[cols]
            w = w[w.notna().any(axis=1)]
            out[label] = (None if len(w) < inf.min_clusters else
                          self.orders(w, lower_is_better=self.lower_is_better, alpha=ALPHA))
        return out

    def where(self, rows: Sequence[str] = ()) -> str:
        """Words naming the test behind a verdict: α and the clusters."""
        inf = self.inference
        mats = self.cells(rows).units
        k = min((len(w) for w in mats.values()), default=0)
        k = str(k) if len({len(w) for w in mats.values()}) <= 1 else f"≥ {k}"
        return (f"α = {ALPHA}, Holm over the pairs, {k} independent "
                f"{policy.words(inf.clusters)} clusters")

    def too_few(self, rows: Sequence[str] = ()) -> str:
        inf = self.inference
        k = min((len(w) for w in self.cells(rows).units.values()), default=0)
        return (f"not distinguishable ({k} independent {policy.words(inf.clusters)} "
                f"cluster(s); a test needs {inf.min_clusters})")


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
               choices: Mapping[str, tuple] | None = None):
    """Register a check: ``func(evidence, params) -> Outcome`` (the point
    order, the three-way verdict and their words); it raises
    :class:`NotTestable` when the run cannot decide. ``describe(claim, params)``
    words the precise test; ``choices`` lists the allowed values of enumerated parameters."""
    def deco(func):
        CHECKS[name] = CheckKind(func, describe, tuple(required), tuple(optional),
                                 dict(choices or {}))
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


def _overall(ev: Evidence, methods: Sequence[str], ok_each, *, combine=all):
    """Verdict and words of a claim on the overall row about ``methods``'
    rank bounds: ``ok_each(lo, hi) -> (supported, contradicted)`` per method;
    supported when every method is, contradicted when any is."""
    better = ev.better([]).get("all")
    if better is None:
        return UNDECIDED, ev.too_few()
    b = rank_bounds(better)
    per = [ok_each(int(b.loc[m, "lo"]), int(b.loc[m, "hi"])) for m in methods]
    v = verdict(combine(s for s, _ in per), any(c for _, c in per))
    return v, (f"{v}: simultaneous rank bounds {_bounds_words(b, methods)} of {len(b)} "
               f"({ev.where()})")


@check_kind("best", required=["method"],
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
    v, sig = _overall(ev, [m], lambda lo, hi: (hi == 1, lo > 1))
    return Outcome(rank == 1, v, text, sig)


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
    v, sig = _overall(ev, methods, lambda lo, hi: (hi <= k, lo > k))
    return Outcome(holds, v, text, sig)


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
    sig = (f"{v}: rank ≤ {r} significantly in {sup} of {n} rows, significantly not in "
           f"{con} (simultaneous rank bounds per row over that row's independent "
           f"{policy.words(ev.inference.clusters)} clusters; α = {ALPHA}, Holm over each "
           f"row's pairs)")
    return Outcome(holds, v, text, sig)


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
    if any(v not in bounds for v in ranks.index):
        return Outcome(holds, UNDECIDED, text, ev.too_few([along]))
    # on the "worse" scale (larger = in the claimed direction): [lo, hi] per value
    b = [(sign * bounds[v].loc[m, "lo"], sign * bounds[v].loc[m, "hi"]) for v in ranks.index]
    b = [(min(x), max(x)) for x in b]
    certain_steps = all(nxt[0] >= prev[1] for prev, nxt in zip(b, b[1:]))
    sup = certain_steps and b[-1][0] > b[0][1]
    con = any(nxt[1] < prev[0] for prev, nxt in zip(b, b[1:])) or b[-1][1] <= b[0][0]
    v = verdict(sup, con)
    sig = (f"{v}: rank bounds by {along}: " + ", ".join(
        f"{s}: {_span(bounds[s].loc[m])}" for s in ranks.index) + f" ({ev.where([along])})")
    return Outcome(holds, v, text, sig)


@check_kind("ahead_of", required=["ahead", "behind"],
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
    # Holm over the claim's own pairs of methods
    better = ev.better([], methods=list(dict.fromkeys(ahead + behind))).get("all")
    if better is None:
        return Outcome(holds, UNDECIDED, text, ev.too_few())
    sup = sum(bool(better.loc[a, b]) for a, b in pairs)
    con = sum(bool(better.loc[b, a]) for a, b in pairs)
    v = verdict(sup == len(pairs), con > 0)
    return Outcome(holds, v, text, f"{v}: ahead significantly in {sup} of {len(pairs)} pairs, "
                                   f"behind significantly in {con} ({ev.where()})")


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
    v, sig = _overall(ev, [m], lambda lo, hi: (lo > n - size, hi <= n - size))
    return Outcome(holds, v, text, sig)


@check_kind("above_threshold", required=["method", "threshold"],
            describe=lambda c, p: f"{p['method']}'s mean {c.measure_words} is above {p['threshold']}")
def check_above_threshold(ev: Evidence, p):
    m, t = p["method"], float(p["threshold"])
    means = ev.require([m], at_least=1)
    holds = bool(means[m] > t)
    text = f"{m} mean {ev.measure} {means[m]:.4g} vs threshold {t:g}"
    vals = ev.cells([]).units["all"][m].dropna().to_numpy()   # cluster means, own units
    if len(vals) < ev.inference.min_clusters:
        return Outcome(holds, UNDECIDED, text, ev.too_few())
    lo, hi = mean_interval(vals, 1 - 2 * ALPHA)[1:]    # two one-sided tests at α
    v = verdict(bool(lo > t), bool(hi < t))
    return Outcome(holds, v, text, f"{v}: {1 - 2 * ALPHA:.0%} t-interval of the mean "
                                   f"[{lo:.4g}, {hi:.4g}] ({ev.where()})")
