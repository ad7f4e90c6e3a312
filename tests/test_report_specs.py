"""Table specs as data: units, the long-format interval CSV, and a new spec."""
import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from fitontest.report import write
from fitontest.report.specs import SCORE_UNITS, SPECS, TableSpec, build
from fitontest.study.schema import SCORE_COLUMNS, SCORE_VALUES


def test_spec_names_unique():
    names = [s.name for s in SPECS]
    assert len(names) == len(set(names))


def unbalanced():
    """Evaluator E: unit (r1, seed 0) has two sizes (values 1 and 3 -> unit mean 2),
    units (r1, seed 1) and (r2, seed 0) one size each (values 5 and 8)."""
    rows = []
    for arch, seed, size, v in (("r1", 0, 100, 1.0), ("r1", 0, 1000, 3.0), ("r1", 1, 100, 5.0),
                                ("r2", 0, 100, 8.0)):
        r = {c: 0.0 for c in SCORE_VALUES}
        r.update(arch=arch, task="car", calibrator="platt", evaluator="E", size=size, seed=seed,
                 truth="iso", cmee=v * 1e-3)
        rows.append(r)
    return pd.DataFrame(rows)[SCORE_COLUMNS]


def test_a_new_spec_averages_within_units_first():
    """Adding a table = one TableSpec: CMEE overall on the one-vs-rest tasks."""
    spec = TableSpec(name="cmee_ovr_overall", source="scores", measure="cmee", rows=(),
                     where="ovr", units=SCORE_UNITS, caption="CMEE overall (values ×1000).")
    t = build(spec, {"scores": unbalanced()}, "iso")
    # unit means 2, 5, 8 (not the row mean 17/4)
    assert t.values.loc["all", "E"] == pytest.approx(5.0)
    assert t.n_units.loc["all", "E"] == 3
    ref = sps.t.interval(0.95, 2, loc=5.0, scale=np.std([2, 5, 8], ddof=1) / np.sqrt(3))
    np.testing.assert_allclose([t.lo.loc["all", "E"], t.hi.loc["all", "E"]], ref)
    assert "(model, task, calibrator, seed)" in t.full_caption()


def test_ci_csv_long_format(tmp_path):
    f = unbalanced()
    g = f.assign(evaluator="F", cmee=f["cmee"] + 1e-3)
    paths = write.write_all(pd.concat([f, g]), None, tmp_path, cd_diagrams=False)
    ci = pd.read_csv(tmp_path / "table3_cmee_by_size.ci.csv", dtype={"group": str})
    assert list(ci.columns) == ["group", "column", "mean", "ci_lo", "ci_hi", "n_units", "best",
                                "not_worse"]
    row = ci[(ci["group"] == "100") & (ci["column"] == "E")].iloc[0]
    assert row["mean"] == pytest.approx(14 / 3) and row["n_units"] == 3 and row["best"]
    one = ci[(ci["group"] == "1000")]
    assert (one["n_units"] == 1).all() and one["ci_lo"].isna().all()      # one unit: no interval
    assert one.set_index("column")["best"].to_dict() == {"E": True, "F": False}
    assert tmp_path / "table3_cmee_by_size.ci.csv" in paths
    md = (tmp_path / "table3_cmee_by_size.md").read_text()
    assert "| 1000 | **3.00** (1) | 4.00 (2) |" in md                        # mean only
