"""What a check sees (:class:`Evidence`) and what it returns (:class:`Outcome`):
the four outcomes of a claim and the tests behind them (docs/methods/11-verdicts.md
§11.5, §11.5.1, §11.5.2; the check kinds are in :mod:`.checks`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import pandas as pd

from . import policy
from .aggregate import aggregate_units
from .equivalence import Margin, tost_pvalues
from .projection import Projection, Takes
from ..inference.stats import holm, pairwise_better, pairwise_family

ALPHA = policy.ALPHA
SPEARMAN = "spearman"
Orders = Callable[..., pd.DataFrame]
SUPPORTED, CONTRADICTED, UNDECIDED = "supported", "contradicted", "not distinguishable"
#: the fourth outcome: the compared means are within the claim's margin (§11.5.1)
EQUIVALENT = "equivalent"


def verdict(supported: bool, contradicted: bool) -> str:
    """Supported, contradicted or not distinguishable (a check turns the last
    into :data:`EQUIVALENT` by its TOSTs); both at once cannot come from
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
    verdict: str                # SUPPORTED, CONTRADICTED, EQUIVALENT or UNDECIDED
    evidence: str               # means and ranks
    significance: str           # the significant orders behind the verdict
    takes: Takes | None = None  # not distinguishable: what would decide it


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
    margin: Margin | None = None    # the claim's equivalence margin (None: no TOST)
    _cells: dict = field(default_factory=dict, repr=False)

    @property
    def scale(self) -> float:
        return policy.scale_for(self.measure)

    def cells(self, rows: Sequence[str]):
        key = tuple(rows)
        if key not in self._cells:      # every check asks for the same rows several times
            inf = self.inference
            self._cells[key] = aggregate_units(self.rows, self.measure, list(rows), inf.units,
                                               columns=self.entity, clusters=inf.clusters)
        return self._cells[key]

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

    def _wides(self, rows: Sequence[str], methods: Sequence[str] | None) -> dict:
        """Per table row: the clusters x methods matrix of ``methods`` (default:
        those with a defined mean in that row), clusters with a value only."""
        out = {}
        for label, wide in self.cells(rows).units.items():
            cols = [m for m in (methods if methods is not None else wide.columns)
                    if m in wide.columns and wide[m].notna().any()]
            w = wide[cols]
            out[label] = w[w.notna().any(axis=1)]
        return out

    def decide(self, rows: Sequence[str] = (), methods: Sequence[str] | None = None,
               eq_pairs: Sequence[tuple[str, str]] = ()) -> dict:
        """Per table row of ``rows`` (``"all"`` without rows): None where the
        row has fewer clusters than the policy's ``min_clusters``, else
        (the matrix "significantly better", {pair: equivalent}). The pairwise
        difference tests of the row and the TOSTs of ``eq_pairs`` (with the
        claim's margin; none without one) form one Holm family
        (:func:`.stats.pairwise_family`)."""
        inf = self.inference
        out = {}
        for label, w in self._wides(rows, methods).items():
            if len(w) < inf.min_clusters:
                out[label] = None
                continue
            pairs = [p for p in eq_pairs if p[0] in w and p[1] in w] if self.margin else []
            p_eq = tost_pvalues(w, pairs, self.margin, inf.min_clusters) if pairs else ()
            if self.orders is pairwise_better:
                better, rej = pairwise_family(w, p_eq, lower_is_better=self.lower_is_better,
                                              alpha=ALPHA)
            else:       # a caller's order test: the TOSTs are a Holm family of their own
                better = self.orders(w, lower_is_better=self.lower_is_better, alpha=ALPHA)
                rej = holm(p_eq) < ALPHA
            out[label] = (better, dict(zip(pairs, map(bool, rej))))
        return out

    def better(self, rows: Sequence[str] = (), methods: Sequence[str] | None = None
               ) -> dict:
        """Per table row: the "significantly better" matrix of :meth:`decide`
        without equivalence tests, or None with too few clusters."""
        return {k: None if v is None else v[0] for k, v in self.decide(rows, methods).items()}

    def projection(self, rows: Sequence[str] = (), methods: Sequence[str] | None = None
                   ) -> dict:
        """Per table row: the :class:`.projection.Projection` of its pairs at
        level α / (its number of pairs), Holm's strictest step."""
        out = {}
        for label, w in self._wides(rows, methods).items():
            m = w.shape[1]
            level = ALPHA / max(m * (m - 1) // 2, 1)
            out[label] = Projection(w, self.lower_is_better, level, self.margin,
                                    self.inference.min_clusters)
        return out

    def where(self, rows: Sequence[str] = (), n_eq: int = 0) -> str:
        """Words naming the test behind a verdict: α, the family and the clusters."""
        inf = self.inference
        mats = self.cells(rows).units
        k = min((len(w) for w in mats.values()), default=0)
        k = str(k) if len({len(w) for w in mats.values()}) <= 1 else f"≥ {k}"
        eq = (f" and {n_eq} TOST(s) within {self.margin.words()} (one family, at most one "
              f"true hypothesis per pair)" if n_eq and self.margin else "")
        return (f"α = {ALPHA}, Holm over the pairs{eq}, {k} independent "
                f"{policy.words(inf.clusters)} clusters")

    def too_few(self, rows: Sequence[str] = ()) -> str:
        inf = self.inference
        k = min((len(w) for w in self.cells(rows).units.values()), default=0)
        return (f"not distinguishable ({k} independent {policy.words(inf.clusters)} "
                f"cluster(s); a test needs {inf.min_clusters})")


