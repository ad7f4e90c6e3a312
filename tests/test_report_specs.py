"""Table specs as data: units and clusters from the policy, the long-format interval CSV,
and a new spec."""
import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from fitontest.study.schema import with_network
from fitontest.report import write
from fitontest.report import policy
from fitontest.report.specs import SPECS, TableSpec, build
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
    return with_network(pd.DataFrame(rows))[SCORE_COLUMNS]


def test_a_new_spec_averages_within_units_first():
    """Adding a table = one TableSpec: CMEE overall on the one-vs-rest tasks. With
    every unit its own cluster the cell is the mean of the unit means."""
    units = policy.INFERENCE[("scores", "paper", "networks")].units
    spec = TableSpec(name="cmee_ovr_overall", source="scores", measure="cmee", rows=(),
                     where="ovr", caption="CMEE overall (values ×1000).",
                     inference=policy.Inference(units=units, clusters=units, population="x"))
    t = build(spec, {"scores": unbalanced()}, "iso")
    # unit means 2, 5, 8 (not the row mean 17/4)
    assert t.values.loc["all", "E"] == pytest.approx(5.0)
    assert t.n_units.loc["all", "E"] == 3
    ref = sps.t.interval(0.95, 2, loc=5.0, scale=np.std([2, 5, 8], ddof=1) / np.sqrt(3))
    np.testing.assert_allclose([t.lo.loc["all", "E"], t.hi.loc["all", "E"]], ref)
    assert "(network, task, calibrator, seed)" in t.full_caption()


def test_the_policy_clusters_units_by_seed():
    """The default spec uses the policy: a frame without the design column is read
    as the paper design: units (r1, 0) = 2 and (r2, 0) = 8 share seed 0 -> cluster
    mean 5; seed 1 has (r1, 1) = 5: two clusters, both 5."""
    spec = TableSpec(name="cmee_ovr_overall", source="scores", measure="cmee", rows=(),
                     caption="CMEE overall (values ×1000).")
    assert spec.inf(unbalanced()) is policy.INFERENCE[("scores", "paper", "networks")]
    assert spec.factor == policy.ERROR_SCALE
    t = build(spec, {"scores": unbalanced()}, "iso")
    assert t.values.loc["all", "E"] == pytest.approx(5.0)
    assert t.n_units.loc["all", "E"] == 2
    assert t.lo.loc["all", "E"] == pytest.approx(5.0) and t.hi.loc["all", "E"] == pytest.approx(5.0)
    cap = t.full_caption()
    assert "clusters (seed)" in cap and policy.INFERENCE[("scores", "paper", "networks")].population in cap


def test_the_policy_clusters_by_the_runs_design():
    """The same rows under the independent design: every (model, task, seed) is a
    cluster, so the units (r1, 0) = 2, (r2, 0) = 8 and (r1, 1) = 5 are three."""
    spec = TableSpec(name="cmee_ovr_overall", source="scores", measure="cmee", rows=(),
                     caption="CMEE overall (values ×1000).")
    f = unbalanced().assign(subsets="independent")
    assert spec.inf(f) is policy.INFERENCE[("scores", "independent", "networks")]
    t = build(spec, {"scores": f}, "iso")
    assert t.values.loc["all", "E"] == pytest.approx(5.0) and t.n_units.loc["all", "E"] == 3
    assert "clusters (network, task, seed)" in t.full_caption()
    with pytest.raises(ValueError, match="mix test-subset designs"):
        build(spec, {"scores": pd.concat([f, unbalanced().assign(subsets="paper")])}, "iso")


def test_ci_csv_long_format(tmp_path):
    f = unbalanced()
    g = f.assign(evaluator="F", cmee=f["cmee"] + 1e-3)
    paths = write.write_all(pd.concat([f, g]), None, tmp_path, cd_diagrams=False)
    ci = pd.read_csv(tmp_path / "table3_cmee_by_size.ci.csv", dtype={"group": str})
    assert list(ci.columns) == ["group", "column", "mean", "ci_lo", "ci_hi", "n_units", "best",
                                "not_worse"]
    row = ci[(ci["group"] == "100") & (ci["column"] == "E")].iloc[0]
    # seed clusters: seed 0 = mean(1, 8) = 4.5, seed 1 = 5 -> 4.75 over 2 clusters
    assert row["mean"] == pytest.approx(4.75) and row["n_units"] == 2 and row["best"]
    one = ci[(ci["group"] == "1000")]
    assert (one["n_units"] == 1).all() and one["ci_lo"].isna().all()   # one cluster: no interval
    assert one.set_index("column")["best"].to_dict() == {"E": True, "F": False}
    # one cluster cannot tell the columns apart: both "not significantly worse"
    assert one["not_worse"].all()
    assert tmp_path / "table3_cmee_by_size.ci.csv" in paths
    md = (tmp_path / "table3_cmee_by_size.md").read_text()
    assert "| 1000 | **3.00** (1) | <u>4.00</u> (2) |" in md                 # mean only


def test_specs_and_findings_read_one_policy(monkeypatch):
    """Change the policy's clusters for scores: the tables and the findings follow."""
    from fitontest.report import findings as F

    units = policy.INFERENCE[("scores", "paper", "networks")].units
    every_unit = policy.Inference(units=units, clusters=units, population="each unit")
    monkeypatch.setitem(policy.INFERENCE, ("scores", "paper", "networks"), every_unit)
    spec = TableSpec(name="cmee_ovr_overall", source="scores", measure="cmee", rows=(),
                     caption="CMEE overall (values ×1000).")
    t = build(spec, {"scores": unbalanced()}, "iso")
    assert t.n_units.loc["all", "E"] == 3 and "each unit" in t.full_caption()
    seen = []
    claim = F.Claim.from_dict({"id": "c", "paper": "p", "source": "s", "frame": "scores",
                               "measure": "cmee", "check": "best", "params": {"method": "E"}})
    f = pd.concat([unbalanced(), unbalanced().assign(evaluator="G", cmee=1.0)])
    F.evaluate_claims([claim], f, truth="iso",
                      orders=lambda w, **kw: seen.append(len(w)) or pd.DataFrame(
                          False, index=w.columns, columns=w.columns))
    assert seen == [3]
