"""Intervals, significance markers, Friedman test and CD diagram (fitontest.report)."""
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from scipy import stats as sps  # noqa: E402

from fitontest.study.schema import with_network
from fitontest.inference import stats  # noqa: E402
from fitontest.report.figures.cd import critical_difference_diagram  # noqa: E402
from fitontest.report.specs import build, spec_named  # noqa: E402
from fitontest.study.schema import SCORE_COLUMNS, SCORE_VALUES  # noqa: E402


def test_mean_interval_covers_the_true_mean_95_percent_of_the_time():
    rng = np.random.default_rng(20261123)
    mu, reps, n = 1.3, 2000, 8
    samples = rng.normal(mu, 2.0, size=(reps, n))
    hits = 0
    for x in samples:
        m, lo, hi = stats.mean_interval(x)
        hits += lo <= mu <= hi
    assert 0.93 <= hits / reps <= 0.97
    # the same bounds as scipy's reference t-interval
    x = samples[0]
    ref = sps.t.interval(0.95, n - 1, loc=x.mean(), scale=sps.sem(x))
    np.testing.assert_allclose(stats.mean_interval(x)[1:], ref)
    lo, hi = stats.t_bounds(samples.mean(1), samples.std(1, ddof=1), np.full(reps, n))
    assert np.mean((lo <= mu) & (mu <= hi)) == hits / reps


def test_mean_interval_undefined_with_fewer_than_two_values():
    m, lo, hi = stats.mean_interval([2.0, np.nan])
    assert m == 2.0 and np.isnan(lo) and np.isnan(hi)
    assert all(np.isnan(stats.mean_interval([np.nan])))
    with pytest.raises(ValueError, match="level"):
        stats.mean_interval([1, 2], level=95)


def test_holm_adjustment_by_hand():
    # sorted 0.01, 0.03, 0.04 -> 3 x 0.01, 2 x 0.03, max(0.06, 1 x 0.04)
    np.testing.assert_allclose(stats.holm([0.01, 0.04, 0.03]), [0.03, 0.06, 0.06])


def test_markers_clearly_better_column_alone_and_identical_columns_together():
    rng = np.random.default_rng(1)
    base = rng.gamma(2.0, 1.0, 40)
    wide = pd.DataFrame({"good": base, "worse": base + 1.0 + rng.random(40),
                         "worst": base + 3.0 + rng.random(40)})
    m = stats.significance_markers(wide)
    assert m.tolist() == [True, False, False]
    # higher is better: the order flips
    assert stats.significance_markers(wide, lower_is_better=False).tolist() == [False, False, True]
    twin = pd.DataFrame({"a": base, "b": base, "c": base + 2.0})
    assert stats.significance_markers(twin).tolist() == [True, True, False]


def test_markers_pair_only_shared_units_and_keep_close_columns():
    rng = np.random.default_rng(2)
    base = rng.normal(0, 1, 30)
    noise = rng.normal(0, 1, 30)
    wide = pd.DataFrame({"a": base, "b": base + 0.01 * noise, "c": base + 2.0})
    wide.loc[:9, "c"] = np.nan            # c only on 20 units: still clearly worse
    wide.loc[20:, "b"] = np.nan
    m = stats.significance_markers(wide)
    assert m["a"] and m["b"] and not m["c"]
    empty = pd.DataFrame({"a": [np.nan, np.nan], "b": [1.0, 2.0]})
    assert stats.significance_markers(empty).tolist() == [False, True]


def test_friedman_statistic_for_a_consistent_ranking_by_hand():
    # ranks 1, 2, 3 in every one of n blocks: chi2 = 12n/(k(k+1)) sum R^2 - 3n(k+1) = 2n,
    # p = exp(-chi2 / 2) for 2 degrees of freedom
    n = 10
    wide = pd.DataFrame({"x": np.arange(n), "y": np.arange(n) + 5.0, "z": np.arange(n) + 9.0})
    stat, p, nb, nm = stats.friedman(wide)
    assert (nb, nm) == (n, 3)
    assert stat == pytest.approx(2 * n) and p == pytest.approx(np.exp(-n))
    assert np.isnan(stats.friedman(wide[["x", "y"]])[1])          # two methods: undefined


def _scores(effect):
    rows = []
    rng = np.random.default_rng(3)
    for arch in ("r110", "d40"):
        for task in ("car", "ship"):
            for cal in ("platt", "isotonic", "beta"):
                for seed in range(3):
                    for size in (100, 1000):
                        noise = rng.normal(0, 0.5)
                        for k, ev in enumerate(("E1", "E2", "E3", "E4")):
                            r = {c: 0.0 for c in SCORE_VALUES}
                            r.update(arch=arch, task=task, calibrator=cal, evaluator=ev,
                                     size=size, seed=seed, truth="isotonic",
                                     cmee=(5.0 + noise + effect * k + rng.normal(0, 0.3)) * 1e-3)
                            rows.append(r)
    return with_network(pd.DataFrame(rows))[SCORE_COLUMNS]


def _caption_p(t):
    found = re.search(r"Friedman test .*?p = ([0-9][0-9.e+-]*[0-9])", t.full_caption())
    return float(found.group(1))


def test_friedman_p_in_caption_and_cd_diagram():
    t = build(spec_named("table3_cmee"), {"scores": _scores(effect=1.0)}, "isotonic")
    assert _caption_p(t) < 1e-6 and t.friedman_p < 1e-6
    assert "36 blocks = (network, task, calibrator, seed)" in t.full_caption()
    tex = t.to_latex()
    assert "$$" not in tex and r"$\chi$\textsuperscript{2} = " in tex    # no empty math
    # bold for the best, no other column marked in the overall row
    overall = t.values.index.get_loc(("overall", "all"))
    assert t.best.iloc[overall].tolist() == [True, False, False, False]
    assert t.not_worse.iloc[overall].tolist() == [True, False, False, False]
    same = build(spec_named("table3_cmee"), {"scores": _scores(effect=0.0)}, "isotonic")
    assert _caption_p(same) > 1e-3
    ax = critical_difference_diagram(t.blocks, title="t3")
    texts = " ".join(x.get_text() for x in ax.texts)
    for ev in ("E1", "E2", "E3", "E4"):
        assert ev in texts
    ax.figure.canvas.draw()
    plt.close("all")
    with pytest.raises(ValueError, match="3 methods"):
        critical_difference_diagram(t.blocks[["E1", "E2"]])
