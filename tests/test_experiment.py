"""Scoring of evaluators and calibrators against hand computations."""
import numpy as np
import pandas as pd
import pytest

from fitontest.study.experiment import (calibrator_rows, mean_abs, mean_abs_pair, population_ce,
                                        score_external, score_rows, tidy)
from fitontest.core.io import load_subsets, save_subsets
from fitontest.study.schema import SCORE_COLUMNS, SCORE_VALUES


def test_score_rows_by_hand():
    hold = np.array([0.1, 0.4, 0.5, 0.9])
    c_true = np.array([0.2, 0.4, 0.3, 0.7])
    c_hat = np.array([0.15, 0.5, 0.5, 0.8])
    pos = np.array([1, 3])
    est = {"ce_est": 0.05, "ce_est_sq": 0.004, "ce_est_debiased": np.nan,
           "ce_est_debiased_sq": 0.003}
    truths = {"iso": c_true}
    (row,) = score_rows(c_hat, est, hold, pos, truths, population_ce(hold, truths))
    assert row["truth"] == "iso"
    assert row["true_ce"] == pytest.approx((0.0 + 0.2) / 2)
    assert row["true_ce_sq"] == pytest.approx((0.0 + 0.04) / 2)
    # no L1 debiased value -> plug-in; L2 debiased value used
    assert row["ce_used"] == 0.05 and row["ce_used_sq"] == 0.003
    assert row["ce_error"] == pytest.approx(abs(0.05 - 0.1))
    assert row["ce_error_sq"] == pytest.approx(abs(0.003 - 0.02))
    assert row["cmee"] == pytest.approx((0.05 + 0.1 + 0.2 + 0.1) / 4)
    assert row["cmee_subset"] == pytest.approx((0.1 + 0.1) / 2)
    assert row["cmee_sq"] == pytest.approx((0.0025 + 0.01 + 0.04 + 0.01) / 4)
    # population CE over the whole hold-out; no interval given -> NaN columns
    assert row["true_ce_pop"] == pytest.approx((0.1 + 0.0 + 0.2 + 0.2) / 4)
    assert np.isnan(row["ce_lo"]) and np.isnan(row["ce_hi"]) and np.isnan(row["ci_level"])


def test_estimate_only_rows_have_no_cmee():
    hold = np.linspace(0, 1, 5)
    est = {"ce_est": 0.1, "ce_est_sq": 0.01, "ce_est_debiased": np.nan,
           "ce_est_debiased_sq": np.nan}
    (row,) = score_rows(None, est, hold, np.arange(5), {"t": hold}, {"t": 0.0})
    assert np.isnan(row["cmee"]) and row["true_ce"] == 0 and row["ce_error"] == 0.1


def test_score_evaluator_interval_columns():
    """Binning evaluator: an interval per subset, equal to ce_interval on that
    subset with the documented seed, the same for every truth; a refitted
    family with refit_n_boot 0: NaN. true_ce_pop: the hold-out mean, per truth."""
    from fitontest.study.experiment import score_evaluator
    from fitontest.inference.intervals import ce_interval

    rng = np.random.default_rng(3)
    hold = rng.beta(2, 5, 4000)
    labels = (rng.random(4000) < hold ** 0.8).astype(np.int8)
    truths = {"a": hold ** 0.8, "b": np.sqrt(hold)}
    subsets = {(500, 0): np.arange(500), (800, 1): np.arange(1000, 1800)}
    cfg = {"level": 0.8, "n_boot": 40, "refit_n_boot": 0, "method": "basic"}
    df = pd.concat([score_evaluator(ev, {}, hold, labels, truths, subsets, interval=cfg,
                                    interval_seed=9) for ev in ("ece_es15", "platt")])
    for truth, c in truths.items():
        assert np.allclose(df[df.truth == truth].true_ce_pop, np.abs(hold - c).mean())
    binned = df[df.evaluator == "ece_es15"]
    assert (binned.ci_level == 0.8).all() and (binned.ce_lo <= binned.ce_hi).all()
    for (size, seed), pos in subsets.items():
        ci = ce_interval("ece_es15", hold[pos], labels[pos], level=0.8, n_boot=40,
                         seed=[9, size, seed], method="basic")
        rows = binned[(binned["size"] == size) & (binned.seed == seed)]
        assert len(rows) == 2 and (rows.ce_lo == ci.lo).all() and (rows.ce_hi == ci.hi).all()
        assert (rows.ce_used == ci.estimate).all()
    platt = df[df.evaluator == "platt"]
    assert platt[["ce_lo", "ce_hi", "ci_level"]].isna().all().all()
    assert list(tidy(df, SCORE_COLUMNS, arch="a", network="a", task="t",
                     calibrator="c").columns) \
        == SCORE_COLUMNS


def _external_setup():
    rng = np.random.default_rng(0)
    hold = rng.random(50)
    subsets = {(10, 0): np.arange(10), (20, 0): np.arange(10, 30)}
    truths = {"iso": hold ** 2}
    return hold, subsets, truths


def test_score_external_with_map_computes_estimate_itself():
    hold, subsets, truths = _external_setup()
    c_hat = np.stack([hold * 0.9, hold * 0.8])
    out = {"size": np.array([10, 20]), "seed": np.array([0, 0]), "c_hat": c_hat}
    df = score_external("ext", out, hold, truths, subsets)
    assert len(df) == 2 and set(df.evaluator) == {"ext"}
    r = df.set_index("size").loc[20]
    pos = subsets[(20, 0)]
    assert r.ce_est == pytest.approx(np.mean(np.abs(0.8 * hold[pos] - hold[pos])))
    assert r.cmee == pytest.approx(np.mean(np.abs(0.8 * hold - hold ** 2)))
    assert np.isnan(r.hyper)
    assert np.isnan(r.ce_lo) and np.isnan(r.ce_hi) and np.isnan(r.ci_level)
    assert r.true_ce_pop == pytest.approx(np.mean(np.abs(hold - hold ** 2)))


def test_score_external_errors_name_the_problem():
    hold, subsets, truths = _external_setup()
    with pytest.raises(ValueError, match="lacks the key 'seed'"):
        score_external("ext", {"size": np.array([10]), "ce_est": np.array([0.1])}, hold,
                       truths, subsets)
    with pytest.raises(ValueError, match=r"no row for \(size, seed\) \[\(20, 0\)\]"):
        score_external("ext", {"size": np.array([10]), "seed": np.array([0]),
                               "ce_est": np.array([0.1])}, hold, truths, subsets)
    with pytest.raises(ValueError, match="c_hat has shape"):
        score_external("ext", {"size": np.array([10, 20]), "seed": np.array([0, 0]),
                               "c_hat": np.zeros((2, 3))}, hold, truths, subsets)


def test_calibrator_rows_ceac_and_cmee_by_hand():
    s = np.array([0.2, 0.8])
    (row,) = calibrator_rows("binary", s, np.array([0, 1]), {"t": np.array([0.3, 0.6])},
                             {"t": np.array([0.2, 0.5])})
    assert row["ceac"] == pytest.approx(0.15) and row["cmee"] == pytest.approx(0.15)
    assert row["ceac_sq"] == pytest.approx((0.01 + 0.04) / 2)
    assert row["accuracy"] == 1.0 and row["kind"] == "binary"


def test_tidy_orders_columns_and_rejects_missing(tmp_path):
    frame = pd.DataFrame([{c: 0.0 for c in SCORE_VALUES} | {"evaluator": "e", "size": 1,
                                                             "seed": 0, "truth": "t"}])
    out = tidy(frame, SCORE_COLUMNS, arch="a", network="a", task="car", calibrator="none")
    assert list(out.columns) == SCORE_COLUMNS
    with pytest.raises(ValueError, match="lacks columns"):
        tidy(frame.drop(columns="cmee"), SCORE_COLUMNS, arch="a", network="a", task="t",
             calibrator="c")


def test_subsets_roundtrip(tmp_path):
    subsets = {(1000, 0): np.arange(5), (3000, 2): np.arange(5, 9)}
    save_subsets(tmp_path / "s.npz", subsets)
    back = load_subsets(tmp_path / "s.npz")
    assert back.keys() == subsets.keys()
    assert all(np.array_equal(back[k], subsets[k]) for k in subsets)


def test_only_families_with_n_threads_take_threads():
    """The evaluate job hands its threads only to families that take them: a
    SLURM profile gives every evaluate job several, and BinningFamily has no
    n_threads (a TypeError under SLURM before)."""
    from fitontest import families
    from fitontest.study.experiment import takes_threads

    assert takes_threads("pl3_ce") and takes_threads("pl_ce")
    assert not takes_threads("ece_es15") and not takes_threads("isotonic")
    for name in families.names():
        if takes_threads(name):
            families.get(name, n_threads=2)


@pytest.mark.parametrize("name", __import__("fitontest.families").families.names())
def test_grid_predictions_equal_plain_ones(name):
    """ScoreGrid (the hold-out's distinct scores, sorted once) gives every
    family's map values bit for bit: a map acts on each score alone (issue 37).
    The grid repeats scores and holds 0 and 1, as a calibrator's scores do."""
    from fitontest import families
    from fitontest.study.experiment import ScoreGrid

    rng = np.random.default_rng(3)
    s = np.clip(rng.beta(2.0, 3.0, 1500), 1e-6, 1 - 1e-6)
    y = (rng.random(s.size) < s ** 1.3).astype(int)
    # short fits: the maps' shape does not matter here
    params = ({"max_epochs": 5} if name.startswith(("pl_ce", "pl_mse", "pl3"))
              else {"max_segments": 2, "n_folds": 2} if name.startswith("pl_de") else {})
    try:
        fam = families.get(name, **params).fit(s, y)
    except ImportError:
        pytest.skip(f"{name}: optional dependency missing")
    if not fam.provides_map:
        pytest.skip(f"{name} provides no map")
    grid = np.concatenate([rng.random(20_000), s, np.round(rng.random(5000), 2),
                           [0.0, 1.0, 0.5, 0.5, 1.0]])
    rng.shuffle(grid)
    got = ScoreGrid(grid).predict(fam)
    assert got.dtype == np.float64 and got.shape == grid.shape
    assert np.array_equal(got, fam.predict(grid))


def test_mean_abs_pair_equals_mean_abs_bit_for_bit():
    """The in-place pair of the CMEE columns: the values of mean_abs for p = 1 and 2."""
    d = np.random.default_rng(3).normal(0, 0.05, 100_003)
    want = (mean_abs(d, 1), mean_abs(d, 2))
    assert mean_abs_pair(d.copy()) == want
    assert want[1] != want[0] ** 2            # the two are different statistics
