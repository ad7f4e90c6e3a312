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
- Significance: ``markers(wide, lower_is_better=..., alpha=...)`` receives the
  same clusters x methods matrix as the tables (rows = the policy's
  independent clusters, e.g. the seeds for evaluators, the networks for
  calibrators; clusters where a method is undefined dropped) and returns
  True for every column not significantly worse (e.g.
  :func:`fitontest.report.stats.significance_markers`). With fewer clusters
  than the policy's ``min_clusters`` the verdict is "not distinguishable";
  without a marker function significance is "n/a".
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from . import policy
from .aggregate import aggregate_units

ALPHA = policy.ALPHA
SPEARMAN = "spearman"
Markers = Callable[..., pd.Series]


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
    markers: Markers | None = None

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

    def significance(self, columns: Sequence[str]) -> tuple[pd.Series | None, str]:
        """The markers over ``columns`` on the independent clusters (as in the
        tables) and the words naming them, or (None, why there are none)."""
        if self.markers is None:
            return None, "n/a"
        inf = self.inference
        mats = self.cells([]).units
        wide = (next(iter(mats.values())) if mats else pd.DataFrame(columns=list(columns)))
        wide = wide[list(columns)].dropna()
        clusters = policy.words(inf.clusters)
        if len(wide) < inf.min_clusters:
            return None, (f"not distinguishable ({len(wide)} independent {clusters} "
                          f"cluster(s); a test needs {inf.min_clusters})")
        try:
            marked = self.markers(wide, lower_is_better=self.lower_is_better, alpha=ALPHA)
        except ValueError as e:
            return None, f"n/a ({e})"
        words = f"α={ALPHA}, {len(wide)} independent {clusters} clusters"
        return pd.Series(marked, index=wide.columns).astype(bool), words


def _word(ev_or_claim) -> str:
    return "lowest" if ev_or_claim.lower_is_better else "highest"


# ---------------------------------------------------------------------------
# check kinds


@dataclass(frozen=True)
class CheckKind:
    func: Callable[[Evidence, Mapping[str, Any]], tuple[bool, str, str]]
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
    """Register a check: ``func(evidence, params) -> (holds, evidence_text, significance_text)``;
    it raises :class:`NotTestable` when the run cannot decide. ``describe(claim, params)``
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


@check_kind("best", required=["method"],
            describe=lambda c, p: f"{p['method']} has the {_word(c)} mean {c.measure_words} "
                                  f"of all {c.entity}s")
def check_best(ev: Evidence, p):
    m = p["method"]
    means = ev.require([m])
    ranks = ev.overall_ranks()
    rank, best = int(ranks[m]), means.index[0]
    holds = rank == 1
    ties = [c for c in ranks.index if ranks[c] == rank and c != m]
    tied = f" (tied with {', '.join(ties)})" if ties else ""
    text = f"{m} rank {rank}{tied} of {len(means)}; {_listing(ev, means, top=4)}"
    marked, where = ev.significance(means.index)
    if marked is None:
        return holds, text, where
    others = [c for c in marked.index[marked] if c != m]
    if marked[m] and holds:
        sig = ("significantly best" if not others
               else f"tied: {', '.join(others)} not significantly worse")
    elif marked[m]:
        sig = f"not significantly worse than {best}"
    else:   # a marker function that does not rank by the mean may favour another column
        sig = (f"significantly worse than {best}" if not holds
               else f"the paired test favours {', '.join(others)}")
    return holds, text, f"{sig} ({where})"


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
    return holds, text, "n/a"


def _top(rank) -> str:
    return "first" if rank == 1 else f"in the top {rank}"


def _share_words(share) -> str:
    return ("a majority (more than half)" if share == "majority" else
            "every one" if share == "all" else f"at least {_pct(share)}")


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
    holds = (k > n / 2 if share == "majority" else k == n if share == "all"
             else k >= float(share) * n)
    text = (f"rank ≤ {r} in {k} of {n} rows (" + ", ".join(
        f"{lab}: {int(v)}" for lab, v in ranks.items()) + ")")
    if skipped:
        text += f"; single-row groupings left out: {'; '.join(skipped)}"
    return holds, text, "n/a"


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
    return holds, text, "n/a"


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
    sig, where = 0, "n/a"
    for a, b in pairs:
        marked, where = ev.significance([a, b])
        if marked is None:
            return holds, text, where
        sig += bool(marked[a] and not marked[b])
    return holds, text, f"ahead significantly in {sig} of {len(pairs)} pairs ({where})"


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
    return holds, text, "n/a"


@check_kind("above_threshold", required=["method", "threshold"],
            describe=lambda c, p: f"{p['method']}'s mean {c.measure_words} is above {p['threshold']}")
def check_above_threshold(ev: Evidence, p):
    m, t = p["method"], float(p["threshold"])
    means = ev.require([m], at_least=1)
    holds = bool(means[m] > t)
    return holds, f"{m} mean {ev.measure} {means[m]:.4g} vs threshold {t:g}", "n/a"

