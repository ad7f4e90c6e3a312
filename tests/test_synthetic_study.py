"""The synthetic study (docs/methods/07-synthetic.md §7) on a small grid, against exact ground truth."""
import numpy as np
import pandas as pd
import pytest

from fitontest.data import synthetic
from fitontest.report.specs import build, spec_named
from fitontest.study.schema import SYNTHETIC_COLUMNS
from fitontest.study.synthetic import score_shape

EVALUATORS = ["ece_es15", "ece_es_cv", "isotonic", "platt"]


@pytest.fixture(scope="module")
def grid():
    rows = [score_shape(ev, None, shape, [0.0, 0.05, 0.1], [3000], [0, 1], n_test=50_000)
            for shape in synthetic.SHAPES for ev in EVALUATORS]
    return pd.concat(rows, ignore_index=True)


def test_rows_follow_the_schema(grid):
    assert list(grid.columns) == SYNTHETIC_COLUMNS
    assert len(grid) == len(synthetic.SHAPES) * len(EVALUATORS) * 3 * 2
    assert (grid.truth == "exact").all()


def test_isotonic_is_invariant_across_shapes(grid):
    """c and y are shared by the shapes of a seed, and isotonic regression is
    invariant to monotone transforms of the scores: its fitted values at the
    sample points are identical; on the test sample only the interpolation
    between fitted points differs."""
    iso = grid[grid.evaluator == "isotonic"]
    for (ce, seed), g in iso.groupby(["ce_level", "seed"]):
        assert np.ptp(g.cmee_subset) < 1e-12, (ce, seed)
        assert np.ptp(g.cmee) < 0.05 * g.cmee.mean(), (ce, seed)


def test_true_ce_is_exact_and_level_zero_estimates_are_small(grid):
    zero = grid[grid.ce_level == 0.0]
    assert (zero.true_ce == 0).all()
    assert (zero.ce_used.abs() < 0.03).all(), zero[["shape", "evaluator", "ce_used"]]
    # the estimates grow with the true CE level, for every evaluator
    mean = grid.groupby(["evaluator", "ce_level"]).ce_used.mean().unstack()
    assert (mean[0.1] > mean[0.0] + 0.05).all()
    # true CE of a sample of 3000 is within a few thousandths of its level
    assert np.allclose(grid.true_ce, grid.ce_level, atol=0.006)


def test_tables_have_the_documented_shape_and_consistent_ranks(grid):
    for measure in ("cmee", "ce_error", "spearman"):
        t = build(spec_named(f"synthetic_{measure}_by_shape"), {"synthetic": grid})
        assert list(t.values.columns) == EVALUATORS
        assert set(t.values.index) == set(synthetic.SHAPES)
        better = (np.less if t.lower_is_better else np.greater)
        for shape, vals in t.values.iterrows():
            ranks = t.ranks.loc[shape]
            best = ranks.idxmin()
            assert not any(better(vals[e], vals[best]) for e in EVALUATORS), (measure, shape)
        assert np.allclose(t.avg_rank, t.ranks.mean(axis=0))
    # Spearman across the CE levels: every evaluator orders 0 < 0.05 < 0.1 correctly
    sp = build(spec_named("synthetic_spearman_by_shape"), {"synthetic": grid})
    assert (sp.values.to_numpy() > 0.4).all()


def test_population_ce_is_the_level_and_intervals_are_filled():
    """true_ce_pop is the CE level: checked independently on 2M fresh draws of
    c ~ U(0, 1) per shape (Monte Carlo error ~1e-4)."""
    for shape in synthetic.SHAPES:
        for ce in (0.02, 0.1):
            p, c = synthetic.test_sample(shape, ce, 2_000_000, seed=5)
            assert abs(np.mean(np.abs(p - c)) - ce) < 5e-4, (shape, ce)
    cfg = {"level": 0.9, "n_boot": 50, "refit_n_boot": 0, "method": "basic"}
    rows = score_shape("ece_es15", None, "sqrt", [0.0, 0.05], [1000], [0, 1], n_test=10_000,
                       interval=cfg)
    assert list(rows.columns) == SYNTHETIC_COLUMNS
    assert (rows.true_ce_pop == rows.ce_level).all()
    assert (rows.ci_level == 0.9).all() and (rows.ce_lo <= rows.ce_hi).all()
    assert (rows.ce_lo >= 0).all() and rows.ce_hi.notna().all()
    none = score_shape("isotonic", None, "sqrt", [0.05], [1000], [0], n_test=10_000,
                       interval=cfg)
    assert none[["ce_lo", "ce_hi", "ci_level"]].isna().all().all()
