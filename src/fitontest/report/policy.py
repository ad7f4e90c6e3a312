"""The statistics policy of every table, figure, finding and ``fitontest bench``
verdict, in one place (docs/methods.md §11.4-§11.6).

Per kind of result (:data:`INFERENCE`): the **units** whose rows are averaged
first (the cells of the balanced design), the **clusters** that are
independent draws (the unit means of one cluster are averaged into one value
before any interval or test), the **population** an interval generalises to
(words for the captions), and the fewest clusters a verdict needs. Beside
them: the main truth estimator, the display scale, the interval method and
the significance procedure.

Why these clusters: the test subsets of one seed are one permutation of the
hold-out shared by every (model, task, calibrator) (docs/methods.md §6.2), so
the units of one seed are scored on the same images and move together; the
seeds are the independent draws. The calibrators' table has no seed (each
calibrator is fitted once per network), so its units are the networks.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

#: The main truth estimator of the pseudo-real tables, findings and figures,
#: and the synthetic study's (exact: the CE level is known).
MAIN_TRUTH = "isotonic"
SYNTHETIC_TRUTH = "exact"
#: Errors are displayed x 1000; these measures as they are.
ERROR_SCALE = 1000.0
UNSCALED = frozenset({"spearman", "spearman_sq", "accuracy", "hyper", "fit_seconds"})
LEVEL = 0.95
ALPHA = 0.05
INTERVAL_METHOD = ("cluster t-interval: Student-t {level:.0%} interval of the mean of the "
                   "cluster means (k - 1 degrees of freedom)")
SIGNIFICANCE = ("not underlined = significantly worse than at least one other column: "
                "two-sided paired t-tests of every pair of columns over the shared "
                "clusters, Holm-corrected over all pairs of the row (family-wise error "
                "α = {alpha:g}; underlined cells form a confidence set for the best column)")


@dataclass(frozen=True)
class Inference:
    """How the cells of one kind of table are estimated and compared."""

    units: tuple            # keys of a unit: its rows are averaged first
    clusters: tuple         # keys of an independent cluster (a subset of units)
    population: str         # what the intervals generalise to (captions)
    min_clusters: int = 3   # fewer: no test, every column "not distinguishable"

    def __post_init__(self):
        if not set(self.clusters) <= set(self.units):
            raise ValueError(f"clusters {self.clusters} must be among the units {self.units}")


INFERENCE: dict[str, Inference] = {
    "scores": Inference(
        units=("arch", "task", "calibrator", "seed"), clusters=("seed",),
        population="these networks, tasks and calibrators; new test subsets (seeds)"),
    "spearman": Inference(
        units=("arch", "task", "seed"), clusters=("seed",),
        population="these networks, tasks and calibrators; new test subsets (seeds)"),
    "synthetic": Inference(
        units=("seed",), clusters=("seed",),
        population="these shapes and CE levels; new synthetic samples (seeds)"),
    # three networks make three clusters: the interval is honest but wide, and
    # no paired test of three values can hold its rate without normality
    "calibrators": Inference(
        units=("arch",), clusters=("arch",), min_clusters=4,
        population="new networks like these (each network one unit)"),
}
WORDS = {"arch": "model"}


def inference_for(source: str, measure: str = "") -> Inference:
    """The :class:`Inference` of a frame (``scores``, ``calibrators``,
    ``synthetic``) and measure (Spearman correlations of the scores frame
    are per (model, task, size, seed, evaluator), hence their own units)."""
    if source == "scores" and measure.startswith("spearman"):
        return INFERENCE["spearman"]
    if source not in INFERENCE:
        raise ValueError(f"unknown source {source!r}; known: {sorted(INFERENCE)}")
    return INFERENCE[source]


def scale_for(measure: str) -> float:
    """Display factor of a measure: errors x 1000, the rest as they are."""
    return 1.0 if measure in UNSCALED else ERROR_SCALE


def main_truth(source: str) -> str:
    return SYNTHETIC_TRUTH if source == "synthetic" else MAIN_TRUTH


def pick_truth(present: Iterable[str], wanted: str | None = None) -> str | None:
    """``wanted`` (default :data:`MAIN_TRUTH`) if present, else the first present."""
    present = list(dict.fromkeys(present))
    if not present:
        return None
    wanted = MAIN_TRUTH if wanted is None else wanted
    return wanted if wanted in present else present[0]


def words(keys: Iterable[str]) -> str:
    return "(" + ", ".join(WORDS.get(k, k) for k in keys) + ")"


def method_note(inf: Inference, level: float = LEVEL, alpha: float = ALPHA) -> str:
    """The caption sentence that says what a ranked table's cells and markers promise."""
    return (f"Rank within each row. Cells: mean ± half-width of the "
            f"{INTERVAL_METHOD.format(level=level)} over the independent clusters "
            f"{words(inf.clusters)}, each the mean of its units {words(inf.units)}; "
            f"population: {inf.population}. Bold: the best mean of the row; "
            f"{SIGNIFICANCE.format(alpha=alpha)}. "
            f"Rows with fewer than {inf.min_clusters} clusters are not tested: every "
            f"cell is underlined (not distinguishable).")
