"""The statistics policy of every table, figure, finding and ``fitontest bench``
verdict, in one place (docs/methods/11-verdicts.md §11.4-§11.6).

Per kind of result (:data:`INFERENCE`): the **units** whose rows are averaged
first (the cells of the balanced design), the **clusters** that are
independent draws (the unit means of one cluster are averaged into one value
before any interval or test), the **population** an interval generalises to
(words for the captions), and the fewest clusters a verdict needs. Beside
them: the main truth estimator, the display scale, the interval method and
the significance procedure.

The clusters follow the run's **design** and **scope**, read from its frames
(:func:`design_of`, :func:`scope_of`), never assumed:

- scope ``architectures`` (config ``report.scope``, the default) where every
  architecture has two or more networks (``training.seeds``,
  :mod:`fitontest.study.networks`): the **networks** are the independent
  clusters, and everything measured on one network — its tasks, calibrators,
  test subsets, validation draws — is averaged within it; the claims are
  about networks of these architectures trained by this recipe;
- scope ``networks`` (asked for, or one network per architecture): these
  networks, whose replicates are the clusters —
- evaluator scores, ``subsets = independent`` (the default,
  docs/methods/06-truth-and-scores.md §6.2): the test subsets are drawn per
  (network, task, seed) and shared only by the calibrators of that (network,
  task), so every (network, task, seed) is an independent cluster;
- ``subsets = paper`` (the authors' design, and any frame without the
  ``subsets`` column): one permutation per seed shared by every (network,
  task, calibrator), so the units of one seed move together and the seeds
  are the only independent clusters (whatever the scope);
- calibrators: each network's calibrators are refitted on validation draws of
  its own (§6.4); every (network, draw) is an independent cluster (a frame
  without ``draw``: the networks).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import pandas as pd

from fitontest.core.validation import check_option
from fitontest.study.schema import CALIBRATOR_DRAW, SCORE_DESIGN, with_network

from .frames import SCOPE

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
#: The equivalence margin of a claim that declares none (docs/methods/11-verdicts.md §11.5.1):
#: two means are *equivalent* when they differ by less than this, shown by two
#: one-sided tests. Errors (CMEE, CE error, CEAC): 5 % of the pair's mean
#: (relative: the errors differ by orders of magnitude between tasks and sizes);
#: Spearman's rho: 0.05 absolute, less than one swap of two adjacent calibrators
#: among the six ranked (6 * 2 / (6 * 35) = 0.057).
EQUIVALENCE_MARGIN = {"spearman": {"absolute": 0.05}}
DEFAULT_MARGIN = {"relative": 0.05}
#: the power at which "what it would take" sizes a run (docs/methods/11-verdicts.md §11.5.2)
POWER = 0.8
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


_TEST_SUBSETS = "these networks, tasks and calibrators; new test subsets"
#: a claim about architectures: the networks a recipe makes are the population
_NETWORKS = ("networks of these architectures trained by this recipe on this training set "
             "(new training seeds); these tasks and calibrators; new test subsets")
_UNITS = ("arch", "network", "task", "calibrator", "seed")
_SP_UNITS = ("arch", "network", "task", "seed")
#: (source, test-subset design, scope) -> Inference; scope ``architectures``:
#: the networks are the clusters (their tasks, calibrators and test subsets
#: nested within them); ``networks``: these networks, the test subsets the clusters
INFERENCE: dict[tuple[str, str, str], Inference] = {
    ("scores", "independent", "networks"): Inference(
        units=_UNITS, clusters=("arch", "network", "task", "seed"),
        population=_TEST_SUBSETS + " (each (network, task, seed) its own draw)"),
    ("spearman", "independent", "networks"): Inference(
        units=_SP_UNITS, clusters=("arch", "network", "task", "seed"),
        population=_TEST_SUBSETS + " (each (network, task, seed) its own draw)"),
    ("scores", "independent", "architectures"): Inference(
        units=_UNITS, clusters=("arch", "network"),
        population=_NETWORKS + " (each network one cluster, its test subsets within it)"),
    ("spearman", "independent", "architectures"): Inference(
        units=_SP_UNITS, clusters=("arch", "network"),
        population=_NETWORKS + " (each network one cluster, its test subsets within it)"),
    # the authors' design shares each seed's test subsets across the networks:
    # the seeds are the clusters, and the claim is about these networks
    ("scores", "paper", "networks"): Inference(
        units=_UNITS, clusters=("seed",),
        population=_TEST_SUBSETS + " (seeds; one draw shared by every network and task)"),
    ("spearman", "paper", "networks"): Inference(
        units=_SP_UNITS, clusters=("seed",),
        population=_TEST_SUBSETS + " (seeds; one draw shared by every network and task)"),
    ("synthetic", "paper", "networks"): Inference(
        units=("seed",), clusters=("seed",),
        population="these shapes and CE levels; new synthetic samples (seeds)"),
    # each (network, validation draw) is an independent fit of every calibrator
    ("calibrators", "draws", "networks"): Inference(
        units=("arch", "network", "draw"), clusters=("arch", "network", "draw"),
        min_clusters=4,
        population="these networks; new validation sets (each (network, draw) one unit)"),
    ("calibrators", "draws", "architectures"): Inference(
        units=("arch", "network", "draw"), clusters=("arch", "network"), min_clusters=4,
        population="networks of these architectures trained by this recipe on this training "
                   "set (new training seeds); new validation sets (each network one "
                   "cluster, its draws within it)"),
    # one fit per network: three networks make three clusters, and no paired
    # test of three values can hold its rate without normality
    # (one fit per network, on the validation split they share: the networks are
    # the only replicates, whatever the scope)
    ("calibrators", "paper", "networks"): Inference(
        units=("arch", "network"), clusters=("arch", "network"), min_clusters=4,
        population="new networks like these (each network one unit)"),
    ("calibrators", "paper", "architectures"): Inference(
        units=("arch", "network"), clusters=("arch", "network"), min_clusters=4,
        population="networks of these architectures trained by this recipe on this training "
                   "set (new training seeds; each network one unit)"),
}
#: the design of each source: the frame column that records it and its
#: value when the column is absent (frames written before the column existed)
DESIGN_COLUMN = {"scores": SCORE_DESIGN, "calibrators": CALIBRATOR_DRAW}
#: the in-memory column a table's or finding's frame carries to ask for a
#: scope (:func:`with_scope`); absent: ``architectures`` where it can hold
SCOPES = ("architectures", "networks")
WORDS = {"arch": "architecture"}


def with_scope(frame: pd.DataFrame | None, scope: str = SCOPES[0]) -> pd.DataFrame | None:
    """``frame`` ready for the tables and findings: with its ``network``
    column (:func:`fitontest.study.schema.with_network`) and asking for
    ``scope`` (config ``report.scope``): ``architectures`` (claims about the
    architectures: the networks are the independent clusters) or
    ``networks`` (claims about these networks)."""
    check_option("scope", scope, SCOPES)
    if frame is None or frame.empty:
        return frame
    return with_network(frame).assign(**{SCOPE: scope})


def networks_per_arch(frame: pd.DataFrame) -> int:
    """The fewest networks of any architecture in ``frame`` (1 without a
    ``network`` column: one network per architecture)."""
    if "network" not in frame.columns or "arch" not in frame.columns or frame.empty:
        return 1
    return int(frame.groupby("arch", sort=False)["network"].nunique().min())


def scope_of(source: str, frame: pd.DataFrame | None, design: str) -> str:
    """``architectures`` where the frame asks for it (the default) and can
    hold it — every architecture with two networks or more, test subsets
    drawn per network (the ``independent`` design) or calibrator rows;
    ``networks`` otherwise: the claim is about these networks."""
    if frame is None or source == "synthetic" or design == "paper" and source == "scores":
        return "networks"
    asked = SCOPES[0]
    if SCOPE in frame.columns and not frame.empty:
        asked = str(frame[SCOPE].iloc[0])
    return asked if asked == "networks" or networks_per_arch(frame) >= 2 else "networks"


def design_of(source: str, frame: pd.DataFrame | None = None) -> str:
    """The design a frame of ``source`` was made under (module docstring):
    ``independent`` or ``paper`` for scores (the ``subsets`` column, one value
    per frame), ``draws`` or ``paper`` for calibrators (a ``draw`` column);
    ``paper`` for synthetic rows and for frames without the column."""
    col = DESIGN_COLUMN.get(source)
    if col is None or frame is None or col not in frame.columns or frame.empty:
        return "paper"
    if source == "calibrators":
        return "draws"
    values = pd.unique(frame[col].dropna())
    if len(values) != 1:
        raise ValueError(f"the {source} rows mix test-subset designs {sorted(map(str, values))}; "
                         f"tables compare rows of one design")
    if values[0] not in ("independent", "paper"):
        raise ValueError(f"unknown test-subset design {values[0]!r} in column {col!r}")
    return str(values[0])


def inference_for(source: str, measure: str = "",
                  frame: pd.DataFrame | None = None) -> Inference:
    """The :class:`Inference` of a frame (``scores``, ``calibrators``,
    ``synthetic``) and measure under the design and scope recorded in
    ``frame`` (:func:`design_of`, :func:`scope_of`; None: the conservative
    ``paper`` design of these networks). Spearman correlations of the scores
    frame are per (network, task, size, seed, evaluator), hence their own units."""
    if source not in {s for s, _, _ in INFERENCE}:
        raise ValueError(f"unknown source {source!r}; known: "
                         f"{sorted({s for s, _, _ in INFERENCE} - {'spearman'})}")
    design = design_of(source, frame)
    scope = scope_of(source, frame, design)
    if source == "scores" and measure.startswith("spearman"):
        source = "spearman"
    return INFERENCE[(source, design, scope)]


def margin_for(measure: str) -> dict:
    """The default equivalence margin of a measure (:data:`EQUIVALENCE_MARGIN`)."""
    return dict(EQUIVALENCE_MARGIN.get(measure, DEFAULT_MARGIN))


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
    """Cluster or unit keys in words; a network names its architecture, so
    ``arch`` beside ``network`` goes unsaid."""
    keys = list(keys)
    return "(" + ", ".join(WORDS.get(k, k) for k in keys
                           if not (k == "arch" and "network" in keys)) + ")"


def method_note(inf: Inference, level: float = LEVEL, alpha: float = ALPHA) -> str:
    """The caption sentence that says what a ranked table's cells and markers promise."""
    return (f"Rank within each row. Cells: mean ± half-width of the "
            f"{INTERVAL_METHOD.format(level=level)} over the independent clusters "
            f"{words(inf.clusters)}, each the mean of its units {words(inf.units)}; "
            f"population: {inf.population}. Bold: the best mean of the row; "
            f"{SIGNIFICANCE.format(alpha=alpha)}. "
            f"Rows with fewer than {inf.min_clusters} clusters are not tested: every "
            f"cell is underlined (not distinguishable).")
