"""Table 2's replicates: calibrators refitted on disjoint validation draws of the
hold-out (fitontest.study.draws; docs/methods.md §6.4)."""
import numpy as np
import pandas as pd
import pytest

from fitontest import multiclass
from fitontest.report import policy
from fitontest.report.specs import build, spec_named
from fitontest.study import draws as D
from fitontest.study import tasks, truth
from fitontest.study.experiment import calibrator_rows
from fitontest.study.schema import CALIBRATOR_COLUMNS


def holdout(n=3000, k=4, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    logits = rng.normal(0, 1, (n, k)) + 2.5 * np.eye(k)[y]
    return {"logits": logits.astype(np.float32), "labels": y.astype(np.int64)}


def test_draws_are_disjoint_seeded_and_leave_half_the_hold_out():
    d = D.draw_positions(10_000, 1000, 4, seed=3)
    assert len(d) == 4 and all(p.size == 1000 for p in d)
    assert np.unique(np.concatenate(d)).size == 4000
    perm = np.random.default_rng([3, D.DRAW_SALT]).permutation(10_000)
    np.testing.assert_array_equal(d[1], np.sort(perm[1000:2000]))
    with pytest.raises(ValueError, match="more than half of the 10000"):
        D.draw_positions(10_000, 1000, 6)


def test_a_draw_is_the_study_procedure_on_new_validation_points():
    """The rows of one draw equal the calibrators fitted on its points by hand and
    measured on the other hold-out points with the truths re-estimated there."""
    h = holdout()
    pos = D.draw_positions(3000, 600, 1, seed=0)[0]
    f = D.draw_rows(h, pos, {"car": 1, "confidence": None}, ["temps"], ["platt"],
                    ["isotonic"], seed=0)
    assert set(f["calibrator"]) == {"none", "temps", "platt"} and len(f) == 6
    rest = np.setdiff1d(np.arange(3000), pos)
    lg = h["logits"].astype(np.float64)
    cal = multiclass.get("temps").fit(lg[pos], h["labels"][pos])
    s, y = tasks.reduce(1, cal.predict_proba(lg[rest]), h["labels"][rest])
    s0, y0 = tasks.reduce(1, multiclass.get("none").fit(lg[pos], h["labels"][pos])
                          .predict_proba(lg[rest]), h["labels"][rest])
    want = calibrator_rows("multiclass", s, y, {"isotonic": truth.estimate("isotonic", s, y)},
                           {"isotonic": truth.estimate("isotonic", s0, y0)})[0]
    got = f[(f["task"] == "car") & (f["calibrator"] == "temps")].iloc[0]
    for k in ("ceac", "cmee", "accuracy"):
        assert got[k] == pytest.approx(want[k])


def test_table2_clusters_are_network_draws():
    """With draws, each (network, draw) is a cluster: 3 networks x 4 draws = 12, and
    the caption names the population of new validation sets."""
    rng = np.random.default_rng(1)
    rows = [{"arch": a, "task": t, "calibrator": c, "truth": "isotonic", "kind": "binary",
             "ceac": 0.01 + 0.005 * (c == "platt") + rng.normal(0, 0.001), "draw": d}
            for a in ("r", "d", "w") for t in ("car", "cat") for c in ("beta", "platt")
            for d in range(4)]
    cal = pd.DataFrame(rows).reindex(columns=CALIBRATOR_COLUMNS + ["draw"])
    assert policy.inference_for("calibrators", "ceac", cal).clusters == ("arch", "draw")
    t = build(spec_named("table2_ceac"), {"calibrators": cal}, "isotonic")
    assert (t.n_units.to_numpy() == 12).all()
    assert "new validation sets" in t.full_caption()
    assert not t.not_worse.loc["car", "platt"]          # 12 clusters tell 5e-3 apart
    one = build(spec_named("table2_ceac"), {"calibrators": cal[cal["draw"] == 0]}, "isotonic")
    assert (one.n_units.to_numpy() == 3).all() and one.not_worse.loc["car", "platt"]
