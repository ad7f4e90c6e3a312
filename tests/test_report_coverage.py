"""Coverage tables of the evaluators' CE intervals, on intervals built to cover or miss."""
import numpy as np
import pandas as pd
from scipy import stats as sps

from fitontest.study.schema import with_network
from fitontest.report import write
from fitontest.report.specs import build, spec_named
from fitontest.study.schema import SCORE_COLUMNS, SCORE_VALUES, SYNTHETIC_COLUMNS

CI_COLUMNS = ["ce_lo", "ce_hi", "ci_level", "true_ce_pop"]
assert set(CI_COLUMNS) <= set(SCORE_COLUMNS) and set(CI_COLUMNS) <= set(SYNTHETIC_COLUMNS)


def clopper_pearson(k, n, level=0.95):
    """Textbook exact interval from beta quantiles (independent of binomtest)."""
    a = 1 - level
    lo = 0.0 if k == 0 else sps.beta.ppf(a / 2, k, n - k + 1)
    hi = 1.0 if k == n else sps.beta.ppf(1 - a / 2, k + 1, n - k)
    return lo, hi


def frame_with_intervals():
    rows = []
    for task in ("car", "ship", "confidence"):
        for cal in ("platt", "isotonic"):
            for size in (100, 1000):
                for seed in range(5):
                    for ev in ("cover", "miss", "half", "no_ci"):
                        t = 0.05
                        lo, hi = {"cover": (t - 0.01, t + 0.01), "miss": (t + 0.01, t + 0.02),
                                  "half": ((t - 0.01, t + 0.01) if cal == "platt"
                                           else (t - 0.03, t - 0.02)),
                                  "no_ci": (np.nan, np.nan)}[ev]
                        r = {c: 0.01 for c in SCORE_VALUES}
                        r.update(arch="r110", task=task, calibrator=cal, evaluator=ev, size=size,
                                 seed=seed, truth="isotonic", ce_lo=lo, ce_hi=hi, ci_level=0.9,
                                 true_ce_pop=t)
                        rows.append(r)
    return with_network(pd.DataFrame(rows))[SCORE_COLUMNS]


def korn_graubard(k, n, clusters, level=0.95):
    """Textbook Korn-Graubard interval when every cluster has the same share
    (design effect 1): Clopper-Pearson at n (z / t_{clusters-1})^2 rows."""
    a = 1 - level
    n_eff = n * (sps.norm.ppf(a / 2) / sps.t.ppf(a / 2, clusters - 1)) ** 2
    x = k / n * n_eff
    lo = 0.0 if x == 0 else sps.beta.ppf(a / 2, x, n_eff - x + 1)
    hi = 1.0 if x == n_eff else sps.beta.ppf(1 - a / 2, x + 1, n_eff - x)
    return lo, hi


def test_coverage_by_design_and_cluster_interval():
    f = frame_with_intervals()
    t = build(spec_named("coverage_ovr"), {"scores": f}, "isotonic")
    assert list(t.values.columns) == ["cover", "miss", "half"]          # no_ci left out
    assert list(t.values.index) == [100, 1000]
    np.testing.assert_allclose(t.values["cover"], 100.0)
    np.testing.assert_allclose(t.values["miss"], 0.0)
    np.testing.assert_allclose(t.values["half"], 50.0)                  # platt rows only
    assert (t.n_units == 20).all().all()                                # 2 tasks x 2 cal x 5 seeds
    for col, k in (("cover", 20), ("miss", 0), ("half", 10)):   # same share in every seed
        lo, hi = korn_graubard(k, 20, clusters=5)
        np.testing.assert_allclose(t.lo[col], 100 * lo, rtol=1e-6)
        np.testing.assert_allclose(t.hi[col], 100 * hi, rtol=1e-6)
    assert "90%" in t.full_caption() and t.ranks is None
    assert "5 independent clusters (seed)" in t.full_caption()
    conf = build(spec_named("coverage_confidence"), {"scores": f}, "isotonic")
    assert (conf.n_units == 10).all().all()


def test_coverage_tables_written_only_with_interval_columns(tmp_path):
    f = frame_with_intervals()
    names = {p.name for p in write.write_all(f, None, tmp_path / "a", cd_diagrams=False)}
    assert {"coverage_ovr.md", "coverage_confidence.ci.csv", "coverage_ovr__isotonic.md"} <= names
    names = {p.name for p in write.write_all(f.drop(columns=CI_COLUMNS), None, tmp_path / "b",
                                             cd_diagrams=False)}
    assert not any(n.startswith("coverage") for n in names)
    assert "table3_cmee.md" in names


def test_synthetic_coverage():
    rows = []
    for shape in ("square", "sqrt"):
        for lvl in (0.0, 0.05, 0.1):
            for seed in range(4):
                for ev, (lo, hi) in (("wide", (lvl - 0.01, lvl + 0.01)),
                                     ("narrow", (lvl + 0.001, lvl + 0.002))):
                    r = {c: 0.01 for c in SCORE_VALUES}
                    r.update(shape=shape, ce_level=lvl, evaluator=ev, size=1000, seed=seed,
                             truth="exact", ce_lo=lo, ce_hi=hi, ci_level=0.9, true_ce_pop=lvl)
                    rows.append(r)
    syn = pd.DataFrame(rows)[SYNTHETIC_COLUMNS]
    t = build(spec_named("synthetic_coverage"), {"synthetic": syn}, "exact")
    np.testing.assert_allclose(t.values.loc[1000].to_numpy(), [100.0, 0.0])
    assert (t.n_units == 24).all().all()


def test_cluster_interval_covers_where_clopper_pearson_does_not():
    """Rows correlated within clusters (each cluster's coverage probability drawn
    from a beta law with mean 0.85, intra-cluster correlation 0.2): the
    Clopper-Pearson interval over all rows as if independent misses the mean
    far more often than 5 %; Korn-Graubard over the clusters holds it."""
    from fitontest.inference.stats import cluster_binomial_interval

    rng = np.random.default_rng(3)
    p, rho, k, m, reps = 0.85, 0.2, 6, 18, 400
    a = p * (1 - rho) / rho
    hit_cp = hit_kg = 0
    for _ in range(reps):
        hits = rng.binomial(m, rng.beta(a, a * (1 - p) / p, k))
        lo, hi = clopper_pearson(hits.sum(), k * m)
        hit_cp += lo <= p <= hi
        lo, hi = cluster_binomial_interval(hits, np.full(k, m))
        hit_kg += lo <= p <= hi
    assert hit_cp / reps < 0.80
    assert hit_kg / reps >= 0.93


def test_cluster_interval_matches_clopper_pearson_for_independent_rows():
    """One row per cluster and many clusters: the design effect is about 1 and
    the t quantile about z, so the interval is about Clopper-Pearson's."""
    from fitontest.inference.stats import cluster_binomial_interval

    y = (np.random.default_rng(0).random(2000) < 0.9).astype(int)
    got = cluster_binomial_interval(y, np.ones(y.size))
    want = clopper_pearson(int(y.sum()), y.size)
    np.testing.assert_allclose(got, want, atol=0.004)
    assert np.isnan(cluster_binomial_interval([3], [4])).all()      # one cluster: no interval
