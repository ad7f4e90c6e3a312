"""Which of the paper's conclusions does this run reproduce?

Each conclusion of the paper (Sections 7-9: Tables 2, 3 and 4) is a *claim*
declared as data in ``claims.yaml`` (next to this module): an id, the paper's
wording, its source, and a small test — the tidy frame (``scores``,
``calibrators`` or ``synthetic``, columns in :mod:`fitontest.schema`), a
measure (a value column, or ``spearman`` as in Table 4), an optional row
filter and disaggregation, and one of a few check kinds (:data:`CHECKS`).
:func:`evaluate_claims` runs every claim on the main truth's rows and marks it
**holds**, **does not hold** or **not testable** (a method absent, a single
test size, ...), with the evidence (means, ranks, significance);
:func:`write_findings` writes ``findings.md`` and ``findings.csv``.

Adding a claim: append an entry to ``claims.yaml`` (its header lists the keys
and filter conditions), or pass your own list to :func:`evaluate_claims`
(``load_claims(path)`` reads any YAML file of the same form)::

    - id: my_isotonic_beats_platt
      paper: Isotonic approximates the true map better than Platt.
      source: my study
      frame: scores
      measure: cmee
      check: ahead_of
      params: {ahead: [isotonic], behind: [platt]}

Check kinds and their ``params`` (each compares the methods' means):

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
- A method's value is the plain mean of the measure over the matching tidy
  rows, as in :mod:`fitontest.report.specs` (Table 3 "overall" for ``cmee``).
  Methods whose measure is undefined (NaN, e.g. the CMEE of KCE) take no part.
- Ranks: 1 = best (lowest, or highest for ``spearman``); ties share the best
  rank of the tie.
- Disaggregated rows (``by``) are the rows of each grouping's table (e.g. the
  by-model, by-size and by-task sections of Table 3); a grouping with a
  single row (one network, one size) repeats the overall row and is left out.
- Significance: ``markers(wide, lower_is_better=..., alpha=...)`` receives the
  per-unit table (rows = paired units: every key of the frame except the
  compared column and the truth, e.g. (arch, task, calibrator, size, seed) for
  evaluators; columns = methods; units where a method is undefined dropped)
  and returns True for the best column and every column not significantly
  worse than it. Without a marker function significance is "n/a".
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd
import yaml

from .aggregate import aggregate
from .frames import resolve_ranked_calibrators, select_truth, spearman_by_group
from fitontest.core.io import write_text
from fitontest.study.schema import (CALIBRATOR_COLUMNS, CALIBRATOR_KEYS, SCORE_COLUMNS, SCORE_KEYS,
                              SYNTHETIC_COLUMNS, SYNTHETIC_KEYS)

HOLDS, FAILS, NOT_TESTABLE = "holds", "does not hold", "not testable"
ALPHA = 0.05
SPEARMAN = "spearman"
# keys, columns and the compared column of each tidy frame
FRAMES = {"scores": (SCORE_KEYS, SCORE_COLUMNS, "evaluator"),
          "calibrators": (CALIBRATOR_KEYS, CALIBRATOR_COLUMNS, "calibrator"),
          "synthetic": (SYNTHETIC_KEYS, SYNTHETIC_COLUMNS, "evaluator")}
MAIN_TRUTH = {"scores": "isotonic", "calibrators": "isotonic", "synthetic": "exact"}
# measures shown as they are; every other (an error) is shown x 1000 as in the tables
UNSCALED = {SPEARMAN, "accuracy", "hyper", "fit_seconds"}
FILTER_OPS = ("not", "above", "below", "quantile_above", "quantile_below")
REPORT_COLUMNS = ["id", "source", "paper", "precise", "status", "evidence", "significance",
                  "note", "check", "frame", "measure", "truth"]

Markers = Callable[..., pd.Series]


class NotTestable(Exception):
    """The run's configuration cannot test the claim (the message says why)."""


# ---------------------------------------------------------------------------
# claims


@dataclass(frozen=True)
class Claim:
    id: str
    paper: str
    source: str
    frame: str
    measure: str
    check: str
    params: Mapping[str, Any]
    filter: Mapping[str, Any] = field(default_factory=dict)
    by: tuple[tuple[str, ...], ...] = ()
    better: str | None = None
    note: str = ""

    @property
    def lower_is_better(self) -> bool:
        if self.better is None:
            return self.measure != SPEARMAN
        return self.better == "lower"

    @property
    def measure_words(self) -> str:
        if self.measure == SPEARMAN:
            return ("Spearman correlation between estimated and true CE (across "
                    f"{'calibrators' if self.frame == 'scores' else 'CE levels'}, per group)")
        return self.measure

    @property
    def entity(self) -> str:
        return FRAMES[self.frame][2]

    def precise(self) -> str:
        """The tested statement, in words, generated from the check and its parameters."""
        text = CHECKS[self.check].describe(self, self.params)
        words = filter_words(self.filter)
        return f"{text}{f' (rows: {words})' if words else ''}."

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Claim":
        if not isinstance(d, Mapping):
            raise ValueError(f"a claim must be a mapping, got {d!r}")
        name = d.get("id", "?")
        required = ("id", "paper", "source", "frame", "measure", "check")
        optional = ("params", "filter", "by", "better", "note")
        missing = [k for k in required if k not in d]
        unknown = sorted(set(d) - set(required) - set(optional))
        if missing or unknown:
            raise ValueError(f"claim {name!r}: missing keys {missing}, unknown keys {unknown}")
        if not re.fullmatch(r"\w+", str(name)):
            raise ValueError(f"claim id {name!r}: use letters, digits and underscores")
        if d["frame"] not in FRAMES:
            raise ValueError(f"claim {name!r}: frame must be one of {sorted(FRAMES)}, "
                             f"got {d['frame']!r}")
        keys, columns, entity = FRAMES[d["frame"]]
        if d["measure"] != SPEARMAN and d["measure"] not in columns:
            raise ValueError(f"claim {name!r}: measure {d['measure']!r} is not a column of "
                             f"the {d['frame']} frame nor {SPEARMAN!r}")
        if d["measure"] == SPEARMAN and d["frame"] == "calibrators":
            raise ValueError(f"claim {name!r}: {SPEARMAN!r} ranks calibrators by the "
                             f"evaluators' estimates: use the scores frame")
        if d["check"] not in CHECKS:
            raise ValueError(f"claim {name!r}: unknown check {d['check']!r}; "
                             f"known: {sorted(CHECKS)}")
        params = dict(d.get("params") or {})
        CHECKS[d["check"]].validate(name, params)
        filt = dict(d.get("filter") or {})
        for col, cond in filt.items():
            if col not in columns:
                raise ValueError(f"claim {name!r}: filter column {col!r} is not a column of "
                                 f"the {d['frame']} frame")
            if isinstance(cond, Mapping) and (len(cond) != 1 or next(iter(cond)) not in FILTER_OPS):
                raise ValueError(f"claim {name!r}: filter on {col!r} must be a value, a list or "
                                 f"one of {{{', '.join(FILTER_OPS)}: ...}}, got {cond!r}")
        by = tuple(tuple([g] if isinstance(g, str) else g) for g in (d.get("by") or ()))
        bad = [c for g in by for c in g if c not in keys or c in (entity, "truth")]
        if bad:
            raise ValueError(f"claim {name!r}: 'by' columns {bad} are not keys of the "
                             f"{d['frame']} frame (other than {entity} and truth)")
        if d.get("better") not in (None, "lower", "higher"):
            raise ValueError(f"claim {name!r}: better must be 'lower' or 'higher'")
        return cls(id=str(name), paper=str(d["paper"]), source=str(d["source"]),
                   frame=d["frame"], measure=d["measure"], check=d["check"], params=params,
                   filter=filt, by=by, better=d.get("better"), note=str(d.get("note") or ""))


def load_claims(path: str | Path | None = None) -> list[Claim]:
    """The claims of a YAML file (default: the paper's, ``claims.yaml``)."""
    if path is None:
        text = resources.files("fitontest.report").joinpath("claims.yaml").read_text("utf-8")
    else:
        text = Path(path).read_text(encoding="utf-8")
    entries = yaml.safe_load(text)
    if not isinstance(entries, list) or not entries:
        raise ValueError(f"{path or 'claims.yaml'}: expected a non-empty list of claims")
    claims = [Claim.from_dict(e) for e in entries]
    ids = [c.id for c in claims]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ValueError(f"{path or 'claims.yaml'}: duplicate claim ids {dup}")
    return claims


def filter_words(filt: Mapping[str, Any]) -> str:
    out = []
    for col, cond in filt.items():
        if isinstance(cond, Mapping):
            (op, v), = cond.items()
            if op == "not":
                out.append(f"{col} ≠ {_names(v)}")
            elif op in ("above", "below"):
                out.append(f"{col} {'>' if op == 'above' else '<'} {v}")
            else:
                out.append(f"{col} {'≥' if op == 'quantile_above' else '≤'} "
                           f"its {_pct(v)} quantile")
        else:
            out.append(f"{col} = {_names(cond)}")
    return "; ".join(out)


def _pct(q: float) -> str:
    return f"{100 * float(q):.3g}%"


def _names(v) -> str:
    return " or ".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)


def _apply_filter(f: pd.DataFrame, filt: Mapping[str, Any]) -> pd.DataFrame:
    for col, cond in filt.items():
        if col not in f.columns:
            raise NotTestable(f"the {col!r} column is absent")
        x = f[col]
        if isinstance(cond, Mapping):
            (op, v), = cond.items()
            if op == "not":
                keep = ~x.isin(v if isinstance(v, (list, tuple)) else [v])
            elif op in ("above", "below"):
                keep = (x > v) if op == "above" else (x < v)
            else:
                cut = pd.to_numeric(x, errors="coerce").quantile(float(v))
                keep = (x >= cut) if op == "quantile_above" else (x <= cut)
        else:
            keep = x.isin(cond if isinstance(cond, (list, tuple)) else [cond])
        f = f[keep.to_numpy()]
    return f


# ---------------------------------------------------------------------------
# what a check sees


@dataclass
class Evidence:
    """A claim's rows, reduced the ways the checks need them."""

    rows: pd.DataFrame          # main-truth rows after the filter (defined measure only)
    entity: str                 # the compared column: evaluator or calibrator
    measure: str
    lower_is_better: bool
    units: list[str]            # keys of one paired unit (significance)
    by: tuple[tuple[str, ...], ...] = ()
    markers: Markers | None = None

    @property
    def scale(self) -> float:
        return 1.0 if self.measure in UNSCALED else 1000.0

    def fmt(self, v: float) -> str:
        return f"{v * self.scale:.4g}"

    def means(self) -> pd.Series:
        """Mean of every method with a defined value, best first."""
        m = aggregate(self.rows, self.measure, [], columns=self.entity).iloc[0]
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
        return aggregate(self.rows, self.measure, list(rows), columns=self.entity)

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
        """The markers over ``columns`` on the paired units and the words naming those
        units, or (None, why there are none)."""
        if self.markers is None:
            return None, "n/a"
        wide = self.table(self.units)[list(columns)].dropna()
        if len(wide) < 2:
            return None, f"n/a ({len(wide)} paired unit(s))"
        try:
            marked = self.markers(wide, lower_is_better=self.lower_is_better, alpha=ALPHA)
        except ValueError as e:
            return None, f"n/a ({e})"
        words = f"α={ALPHA}, {len(wide)} paired ({', '.join(self.units)}) units"
        return pd.Series(marked, index=wide.columns).astype(bool), words


def _word(ev_or_claim) -> str:
    return "lowest" if ev_or_claim.lower_is_better else "highest"


# ---------------------------------------------------------------------------
# check kinds


@dataclass(frozen=True)
class CheckKind:
    func: Callable[[Evidence, Mapping[str, Any]], tuple[bool, str, str]]
    describe: Callable[[Claim, Mapping[str, Any]], str]
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


# ---------------------------------------------------------------------------
# evaluation and the report


def _main_truth(frame: pd.DataFrame, wanted: str) -> str | None:
    truths = list(pd.unique(frame["truth"])) if "truth" in frame.columns else []
    if not truths:
        return None
    return wanted if wanted in truths else truths[0]


def evidence_for(claim: Claim, frames: Mapping[str, pd.DataFrame | None], *,
                 truth: str | None = None, ranked_calibrators: Sequence[str] | None = None,
                 markers: Markers | None = None) -> tuple[Evidence, str | None]:
    """The claim's rows under the main truth (or NotTestable); also returns that truth."""
    f = frames.get(claim.frame)
    if f is None or f.empty:
        raise NotTestable(f"no {claim.frame} rows in this run")
    used = _main_truth(f, truth or MAIN_TRUTH[claim.frame])
    f = select_truth(f, used)
    f = _apply_filter(f, claim.filter)
    if f.empty:
        raise NotTestable(f"no rows with {filter_words(claim.filter)}")
    keys = FRAMES[claim.frame][0]
    measure = claim.measure
    if measure == SPEARMAN:
        item = "calibrator" if claim.frame == "scores" else "ce_level"
        items = (resolve_ranked_calibrators(f["calibrator"], ranked_calibrators)[0]
                 if item == "calibrator" else None)
        f = spearman_by_group(f, item=item, items=items)
        keys = [k for k in keys if k != item]
    else:
        f = f.assign(**{measure: pd.to_numeric(f[measure], errors="coerce")})
    f = f[np.isfinite(f[measure].to_numpy(dtype=np.float64))]
    if f.empty:
        raise NotTestable(f"{measure} is undefined on every matching row")
    units = [k for k in keys if k in f.columns and k not in (claim.entity, "truth")]
    return Evidence(rows=f, entity=claim.entity, measure=measure,
                    lower_is_better=claim.lower_is_better, units=units, by=claim.by,
                    markers=markers), used


def evaluate_claims(claims: Sequence[Claim], scores: pd.DataFrame | None = None,
                    calibrators: pd.DataFrame | None = None,
                    synthetic: pd.DataFrame | None = None, *, truth: str | None = None,
                    ranked_calibrators: Sequence[str] | None = None,
                    markers: Markers | None = None) -> pd.DataFrame:
    """One row per claim (columns :data:`REPORT_COLUMNS`), in the claims' order.

    ``truth``: the main truth estimator of the real-data frames (default
    ``isotonic``, else the first present); ``ranked_calibrators``: the
    calibrators Spearman ranks across (as the tables); ``markers``: the
    significance marker function (module docstring), None for "n/a".
    """
    frames = {"scores": scores, "calibrators": calibrators, "synthetic": synthetic}
    out = []
    for c in claims:
        used = None
        try:
            ev, used = evidence_for(c, frames, truth=truth if c.frame != "synthetic" else None,
                                    ranked_calibrators=ranked_calibrators, markers=markers)
            holds, text, sig = CHECKS[c.check].func(ev, c.params)
            status = HOLDS if holds else FAILS
        except NotTestable as e:
            status, text, sig = NOT_TESTABLE, str(e), "n/a"
        out.append({"id": c.id, "source": c.source, "paper": c.paper, "precise": c.precise(),
                    "status": status, "evidence": text, "significance": sig, "note": c.note,
                    "check": c.check, "frame": c.frame, "measure": c.measure,
                    "truth": used or ""})
    return pd.DataFrame(out, columns=REPORT_COLUMNS)


def _cell(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def findings_markdown(findings: pd.DataFrame, exp: str = "") -> str:
    counts = findings["status"].value_counts()
    truths = ", ".join(t for t in pd.unique(findings["truth"]) if t)
    lines = [
        f"# Findings{f' of `{exp}`' if exp else ''}: which of the paper's conclusions this run "
        f"reproduces", "",
        f"{len(findings)} claims: **{counts.get(HOLDS, 0)} hold**, "
        f"{counts.get(FAILS, 0)} do not hold, {counts.get(NOT_TESTABLE, 0)} not testable "
        f"with this config. Truth estimator: {truths or 'none'}.", "",
        "Each row is one conclusion of Kängsepp, Valk & Kull (2025): the paper's words, the "
        "precise test run on this run's tidy frames (means over every matching row, rank 1 = "
        "best), the verdict and its evidence (errors ×1000 as in the tables). Significance "
        "is for the paired units named; \"n/a\" when none was computed. Claims are declared "
        "in `src/fitontest/report/claims.yaml`.", "",
        "| id | source | the paper says | tested as | result | evidence | significance |",
        "|:---|:---|:---|:---|:---|:---|:---|"]
    for r in findings.itertuples():
        precise = r.precise + (f" *{r.note}*" if r.note else "")
        lines.append("| " + " | ".join(_cell(x) for x in (
            f"`{r.id}`", r.source, r.paper, precise, f"**{r.status}**", r.evidence,
            r.significance)) + " |")
    return "\n".join(lines) + "\n"


def write_findings(findings: pd.DataFrame, md_path, csv_path, exp: str = "") -> None:
    """Write ``findings.md`` and ``findings.csv`` atomically."""
    write_text(md_path, findings_markdown(findings, exp))
    write_text(csv_path, findings.to_csv(index=False))


__all__ = ["Claim", "CHECKS", "Evidence", "NotTestable", "check_kind", "load_claims",
           "evaluate_claims", "evidence_for", "findings_markdown", "write_findings",
           "HOLDS", "FAILS", "NOT_TESTABLE"]
