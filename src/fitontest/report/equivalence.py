"""The fourth outcome, *equivalent*: two one-sided tests (TOST) over the
independent clusters (docs/methods/11-verdicts.md §11.5.1).

Two methods are **equivalent** when their means differ by less than a margin
declared before the run (:class:`Margin`, per claim in ``claims.yaml``, else
:func:`.policy.margin_for` the measure):

- ``absolute`` δ: |μa - μb| < δ, shown by the one-sided paired t-tests of
  H0: μa - μb ≤ -δ and H0: μa - μb ≥ δ over the clusters both have;
- ``relative`` r: |μa - μb| < r (μa + μb) / 2 (within r of the pair's mean).
  Both bounds are linear in the means, so each one-sided test is an exact
  paired t-test of a contrast of the cluster means —
  (1 + r/2) xa - (1 - r/2) xb > 0 and (1 + r/2) xb - (1 - r/2) xa > 0 — with
  no estimated margin plugged in (a Fieller-type test of the ratio).

The TOST p-value is the larger of the two (an intersection-union test: no
multiplicity within the pair). A claim's TOST p-values join its pairwise
difference tests in one Holm family (:func:`.stats.pairwise_family`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
from scipy import stats as sps

from fitontest.core.validation import check_option

KINDS = ("relative", "absolute")


@dataclass(frozen=True)
class Margin:
    kind: str       # "relative" (share of the pair's mean) or "absolute" (measure units)
    value: float

    def __post_init__(self):
        check_option("margin kind", self.kind, KINDS)
        if not np.isfinite(self.value) or not 0 < self.value < (2 if self.kind == "relative"
                                                                 else np.inf):
            raise ValueError(f"a {self.kind} margin must be positive"
                             f"{' and below 2' if self.kind == 'relative' else ''}, "
                             f"got {self.value!r}")

    @classmethod
    def parse(cls, spec: Any, where: str = "margin") -> "Margin | None":
        """``{relative: 0.05}``, ``{absolute: 0.02}`` or None / "none" (no equivalence)."""
        if spec is None or spec == "none":
            return None
        if isinstance(spec, Margin):
            return spec
        if not isinstance(spec, Mapping) or len(spec) != 1:
            raise ValueError(f"{where}: expected {{relative: r}}, {{absolute: d}} or none, "
                             f"got {spec!r}")
        (kind, value), = spec.items()
        try:
            return cls(str(kind), float(value))
        except (TypeError, ValueError) as err:
            raise ValueError(f"{where}: {err}") from None

    def words(self, scale: float = 1.0) -> str:
        if self.kind == "relative":
            return f"±{100 * self.value:.3g} %"
        return f"±{self.value * scale:.3g}"

    def delta(self, reference: float) -> float:
        """The margin in the measure's units around ``reference`` (a mean)."""
        return self.value * abs(reference) if self.kind == "relative" else self.value


def _one_sided_greater(w: np.ndarray) -> float:
    """p of H0: E w ≤ 0 against E w > 0 (t with n - 1 df); zero variance:
    0 when every w is positive, else 1."""
    n = w.size
    if n < 2:
        return 1.0
    m, sd = float(w.mean()), float(w.std(ddof=1))
    if sd <= 1e-12 * max(1.0, float(np.abs(w).max())):
        return 0.0 if m > 0 else 1.0
    return float(sps.t.sf(m / (sd / np.sqrt(n)), n - 1))


def tost_pair(xa, xb, margin: Margin, min_clusters: int = 2) -> float:
    """TOST p-value of "a and b are within the margin" from paired cluster
    values (NaN pairs dropped); 1 with fewer than ``min_clusters`` pairs."""
    xa, xb = np.asarray(xa, dtype=np.float64), np.asarray(xb, dtype=np.float64)
    ok = np.isfinite(xa) & np.isfinite(xb)
    xa, xb = xa[ok], xb[ok]
    if xa.size < max(2, min_clusters):
        return 1.0
    if margin.kind == "relative":
        h = margin.value / 2
        lo, hi = (1 + h) * xa - (1 - h) * xb, (1 + h) * xb - (1 - h) * xa
    else:
        lo, hi = xa - xb + margin.value, xb - xa + margin.value
    return max(_one_sided_greater(lo), _one_sided_greater(hi))


def tost_target(values, target: float, margin: Margin, min_clusters: int = 2) -> float:
    """TOST p-value of "the mean is within the margin of ``target``" (a
    relative margin is a share of |target|)."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if v.size < max(2, min_clusters):
        return 1.0
    d = margin.delta(target)
    return max(_one_sided_greater(v - target + d), _one_sided_greater(target + d - v))


def tost_pvalues(wide, pairs: Sequence[tuple[str, str]], margin: Margin,
                 min_clusters: int = 2) -> np.ndarray:
    """TOST p-values of ``pairs`` of columns of a clusters x methods frame."""
    return np.array([tost_pair(wide[a].to_numpy(), wide[b].to_numpy(), margin, min_clusters)
                     for a, b in pairs], dtype=np.float64)
