"""Table 2's replicates: calibrators refitted on disjoint validation draws of the
hold-out, each measured on its own slice (fitontest.study.draws;
docs/methods.md §6.4), and the A/A check of Table 2's test on that layout
(benchmarks/draws_design.py)."""
import numpy as np
import pandas as pd
import pytest
from conftest import load_benchmark

from fitontest import families, multiclass
from fitontest.report.specs import build, spec_named
from fitontest.study import draws as D
from fitontest.study import tasks, truth
from fitontest.study.experiment import calibrator_rows

TASK = {"car": 1}
#: three "networks": one logit model at three temperatures (1: near calibrated, 3: over-confident)
SCALES = {"a": 1.0, "b": 2.0, "c": 3.0}


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("draws_design")


def rows_of(n, k=4, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    logits = scale * (rng.normal(0, 1, (n, k)) + 2.5 * np.eye(k)[y])
    return {"logits": logits.astype(np.float32), "labels": y.astype(np.int64)}


def test_draws_fit_and_measure_on_disjoint_seeded_slices():
    n, n_val, draws = 10_000, 1000, 3
    fit = D.draw_positions(n, n_val, draws, seed=3)
    meas = D.measure_positions(n, n_val, draws, seed=3)
    assert len(fit) == 3 and all(p.size == 1000 for p in fit)
    assert len(meas) == 4 and {p.size for p in meas} == {1750}
    every = np.concatenate(fit + meas)
    assert every.size == n and np.unique(every).size == n      # a partition of the hold-out
    perm = np.random.default_rng([3, D.DRAW_SALT]).permutation(n)
    np.testing.assert_array_equal(fit[1], np.sort(perm[1000:2000]))
    np.testing.assert_array_equal(meas[0], np.sort(perm[3000:4750]))
    for (f, m), f2, m2 in zip(D.draw_layout(n, n_val, draws, seed=3), fit, meas[1:]):
        np.testing.assert_array_equal(f, f2)
        np.testing.assert_array_equal(m, m2)
    # no draws: draw 0 is measured on the whole hold-out (the paper's design)
    np.testing.assert_array_equal(D.measure_positions(500, 100, 0)[0], np.arange(500))
    with pytest.raises(ValueError, match="more than half of the 10000"):
        D.draw_positions(n, 1000, 6)
    with pytest.raises(ValueError, match="must not include its fitting points"):
        D.draw_rows(rows_of(100), np.arange(10), TASK, [], [], ["isotonic"],
                    measure=np.arange(5, 50))


def test_a_draw_is_the_study_procedure_on_its_own_slice():
    """The rows of draw 1 equal the calibrators fitted on its points by hand and
    measured on its slice, with the truths re-estimated there."""
    h = rows_of(3000)
    f = D.calibrator_draws(h, 600, 1, {"car": 1, "confidence": None}, ["temps"], ["platt"],
                           ["isotonic"], arch="net")
    assert set(f["calibrator"]) == {"none", "temps", "platt"} and len(f) == 6
    assert (f["draw"] == 1).all() and (f["arch"] == "net").all()
    (pos, meas), = D.draw_layout(3000, 600, 1)
    lg = h["logits"].astype(np.float64)
    cal = multiclass.get("temps").fit(lg[pos], h["labels"][pos])
    s, y = tasks.reduce(1, cal.predict_proba(lg[meas]), h["labels"][meas])
    s0, y0 = tasks.reduce(1, multiclass.get("none").fit(lg[pos], h["labels"][pos])
                          .predict_proba(lg[meas]), h["labels"][meas])
    want = calibrator_rows("multiclass", s, y, {"isotonic": truth.estimate("isotonic", s, y)},
                           {"isotonic": truth.estimate("isotonic", s0, y0)})[0]
    got = f[(f["task"] == "car") & (f["calibrator"] == "temps")].iloc[0]
    for k in ("ceac", "cmee", "accuracy"):
        assert got[k] == pytest.approx(want[k])
    # a binary calibrator is fitted on the draw's uncalibrated scores
    s_fit, y_fit = tasks.reduce(1, multiclass.get("none").fit(lg[pos], h["labels"][pos])
                                .predict_proba(lg[pos]), h["labels"][pos])
    c = np.clip(families.get("platt").fit(s_fit, y_fit).predict(s0), 0, 1)
    want = calibrator_rows("binary", c, y0, {"isotonic": truth.estimate("isotonic", c, y0)},
                           {"isotonic": truth.estimate("isotonic", s0, y0)})[0]
    got = f[(f["task"] == "car") & (f["calibrator"] == "platt")].iloc[0]
    assert got["ceac"] == pytest.approx(want["ceac"]) and got["cmee"] == pytest.approx(want["cmee"])


def test_draw_0_is_the_study_calibrators_measured_on_slice_0(tmp_path):
    """Draw 0 takes the study's calibrated files (as rule calibrate_* writes them)
    and measures them on slice 0 with the truths re-estimated there."""
    from fitontest.core.io import save_npz

    val, h = rows_of(500, seed=1), rows_of(4000, seed=2)
    study = D.calibrated_scores(val, h, TASK, [], ["platt"])
    paths = {}
    for (task, name), d in study.items():
        paths[(task, name)] = tmp_path / f"{task}_{name}.npz"
        save_npz(paths[(task, name)], **d)
    f = D.calibrator_draws(h, 500, 2, TASK, [], ["platt"], ["isotonic", "es100_flat"],
                           arch="net", validation=paths)
    assert sorted(f["draw"].unique()) == [0, 1, 2]
    m0 = D.measure_positions(4000, 500, 2)[0]
    d, n = study[("car", "platt")], study[("car", "none")]
    s, y = d["holdout_scores"][m0], d["holdout_labels"][m0]
    s0 = n["holdout_scores"][m0]
    want = calibrator_rows("binary", s, y, {"es100_flat": truth.estimate("es100_flat", s, y)},
                           {"es100_flat": truth.estimate("es100_flat", s0, y)})[0]
    got = f[(f["draw"] == 0) & (f["calibrator"] == "platt") & (f["truth"] == "es100_flat")]
    assert got["ceac"].item() == pytest.approx(want["ceac"])
    assert got["cmee"].item() == pytest.approx(want["cmee"])
    with pytest.raises(ValueError, match="'none'"):
        D.validation_rows({("car", "platt"): study[("car", "platt")]}, m0, [], ["isotonic"])


def _none_ceac_per_draw(n_val, n_holdout, draws, rep):
    """CEAC of the uncalibrated model in draws 0..draws of one simulated study."""
    h = rows_of(n_holdout, seed=1000 + rep, scale=2.0)
    study = D.calibrated_scores(h, h, TASK, [], [])     # "none" needs no fit
    f = D.calibrator_draws(h, n_val, draws, TASK, [], [], ["isotonic"], arch="net",
                           validation=study)
    return f.sort_values("draw")["ceac"].to_numpy()


def test_the_draws_of_a_network_share_no_error():
    """Over repeated studies, the variance of a network's mean over its draws is
    the within-study variance / draws (design effect 1): the draws share no
    measuring point nor truth. The uncalibrated model has no fit to vary, so
    when draws share measuring points (every draw measured on the rest of the
    hold-out) its draws nearly agree and the design effect is near 4."""
    x = np.array([_none_ceac_per_draw(100, 1200, 3, r) for r in range(60)])
    deff = x.mean(axis=1).var(ddof=1) / (x.var(axis=1, ddof=1).mean() / x.shape[1])
    # independent draws: deff ~ 1 with sd ~ 0.2 at 60 studies
    assert 0.4 < deff < 2.0, deff


def test_aa_of_table2_on_the_draws_layout(bench):
    """A/A on the real layout: platt fitted on the two halves of every draw's
    points (equal population performance), measured where the draw measures,
    three networks x 4 draws; Table 2's paired t-test over the (network, draw)
    clusters (two-sided 5 %, Holm) calls one "significantly worse" at most
    5 % + 2 SE of the time, in the per-task rows (12 clusters) and the
    by-network rows (4 clusters)."""
    n_val, n_holdout, draws, reps = 120, 1000, 3, 80
    lay = bench.study_layout(n_val, n_holdout, draws)
    verdicts = []
    for r in range(reps):
        parts = [bench.placebo_rows(rows_of(n_val + n_holdout, seed=[r, i], scale=sc), lay,
                                    TASK, ["isotonic"], arch=a)
                 for i, (a, sc) in enumerate(SCALES.items())]
        verdicts += bench.aa_verdicts(pd.concat(parts, ignore_index=True), measures=("ceac",))
    v = pd.DataFrame(verdicts)
    assert set(v["clusters"]) == {12, 4}
    for layout, n_rows in (("per task", reps), ("by model", 3 * reps)):
        rate = v.loc[v["layout"] == layout, "false_positive"].mean()
        se = np.sqrt(0.05 * 0.95 / n_rows)
        print(f"A/A {layout}: {100 * rate:.1f} % of {n_rows} rows (5 % + 2 SE = "
              f"{100 * (0.05 + 2 * se):.1f} %)")
        assert rate <= 0.05 + 2 * se, (layout, rate)


def test_table2_clusters_are_network_draws_and_tell_a_real_difference():
    """With draws, each (network, draw) is a cluster: 3 networks x 4 draws = 12,
    and the caption names the population of new validation sets. On the real
    layout the 12 clusters mark the over-confident uncalibrated model worse than
    platt; draw 0 alone (3 networks) cannot test."""
    parts = []
    for i, (arch, sc) in enumerate(SCALES.items()):
        val, h = rows_of(300, seed=[7, i], scale=sc), rows_of(3000, seed=[8, i], scale=sc)
        study = D.calibrated_scores(val, h, TASK, [], ["platt"])
        parts.append(D.calibrator_draws(h, 300, 3, TASK, [], ["platt"], ["isotonic"],
                                        arch=arch, validation=study))
    cal = pd.concat(parts, ignore_index=True)
    t = build(spec_named("table2_ceac"), {"calibrators": cal}, "isotonic")
    assert (t.n_units.to_numpy() == 12).all()
    assert "new validation sets" in t.full_caption()
    assert not t.not_worse.loc["car", "none"] and t.not_worse.loc["car", "platt"]
    one = build(spec_named("table2_ceac"), {"calibrators": cal[cal["draw"] == 0]}, "isotonic")
    assert (one.n_units.to_numpy() == 3).all() and one.not_worse.loc["car", "none"]
