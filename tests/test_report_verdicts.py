"""Verdicts whose error rate is measured: the A/A harness, coverage, replication, and the
synthetic frames they run on (fitontest.report.verdicts, fitontest.report.simulate)."""
import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from fitontest.report import simulate as S
from fitontest.inference import stats
from fitontest.report import verdicts as V

SMALL = dict(archs=("a", "b"), tasks=("car", "ship"), calibrators=("none", "platt", "beta"),
             sizes=(1000, 10000))


def test_aa_new_markers_hold_alpha_where_the_old_ones_do_not():
    """Units of one seed share their test images (a random effect per seed, per (seed,
    model), per (seed, model, task)). The old rule pairs (model, task, calibrator, seed)
    units as if independent and tests against the best chosen by the same data: most
    A/A rows are marked. The new rule tests over the independent seeds."""
    w = S.ScoreWorld(random_sd=S.STRONG_SHARING, **SMALL)
    r = V.aa_rate(w, n_rep=120, rows=("size",)).set_index("procedure")
    old, new = r.loc[V.OLD.name], r.loc[V.NEW.name]
    assert new["rate"] <= 0.05 + 2 * max(new["mc_se"], 0.02)
    assert old["rate"] > 0.25 and old["rate"] - 3 * old["mc_se"] > 0.05


def test_aa_new_markers_with_six_columns_and_independent_units():
    """Even with independent units, picking the best by mean then testing one-sided
    against it inflates the error with six columns; all pairs with Holm does not."""
    w = S.ScoreWorld(random_sd=S.NO_SHARING, **SMALL)
    r = V.aa_rate(w, n_rep=80, n_evaluators=6, seeds_per_evaluator=3, rows=()).set_index(
        "procedure")
    assert r.loc[V.NEW.name, "rate"] <= 0.05 + 2 * max(r.loc[V.NEW.name, "mc_se"], 0.02)
    assert r.loc[V.OLD.name, "rate"] > 0.1


def test_new_intervals_cover_the_population_mean():
    w = S.ScoreWorld(random_sd=S.STRONG_SHARING, **SMALL)
    c = V.coverage(w, n_rep=100, seeds=3).set_index("procedure")
    assert c.loc[V.NEW.name, "coverage"] >= 0.93 - 2 * c.loc[V.NEW.name, "mc_se"]
    assert c.loc[V.OLD.name, "coverage"] < 0.85           # units of a seed are not independent


def test_replication_matches_the_t_model():
    w = S.ScoreWorld(random_sd=S.STRONG_SHARING, **SMALL)
    r = V.replication(w, n_rep=60, seeds=3).set_index("procedure").loc[V.NEW.name]
    assert abs(r["capture"] - r["expected_capture"]) < 0.08
    assert r["predict"] >= 0.9


def test_expected_capture_by_simulation():
    """Independent check of the t-model's capture rate: normal clusters, numpy only."""
    rng = np.random.default_rng(5)
    k, reps = 3, 40000
    a, b = rng.normal(size=(reps, k)), rng.normal(size=(reps, k))
    half = sps.t.ppf(0.975, k - 1) * a.std(axis=1, ddof=1) / np.sqrt(k)
    hit = np.abs(b.mean(axis=1) - a.mean(axis=1)) <= half
    assert hit.mean() == pytest.approx(V.expected_capture(k), abs=0.01)


def test_world_population_mean_is_the_mean_over_many_seeds():
    w = S.ScoreWorld(effects={"e0": 0.0, "e1": 0.2}, **SMALL)
    f = w.draw(1500, rng_seed=9)
    mc = f.groupby(["arch", "task", "calibrator", "evaluator", "size"])["cmee"].mean()
    pop = w.population_mean().set_index(["arch", "task", "calibrator", "evaluator", "size"])
    ratio = (mc / pop["mean"].reindex(mc.index)).to_numpy()
    np.testing.assert_allclose(ratio, 1.0, atol=0.03)
    # same seeds, same subsets: the draw is reproducible per seed
    pd.testing.assert_frame_equal(w.draw([4, 5], rng_seed=1).reset_index(drop=True),
                                  w.draw([4, 5], rng_seed=1).reset_index(drop=True))


def test_relabel_as_evaluators():
    w = S.ScoreWorld(**SMALL)
    f = w.draw(4, rng_seed=3)
    aa = S.relabel_as_evaluators(f, [[0, 1], [2, 3]], names=["A", "B"])
    assert sorted(aa["evaluator"].unique()) == ["A", "B"]
    assert set(aa["seed"]) == {0, 1}
    b = aa[aa["evaluator"] == "B"].sort_values(["arch", "task", "calibrator", "size", "seed"])
    orig = f[f["seed"].isin([2, 3])].sort_values(["arch", "task", "calibrator", "size", "seed"])
    np.testing.assert_array_equal(b["cmee"].to_numpy(), orig["cmee"].to_numpy())
    with pytest.raises(ValueError, match="same number of seeds"):
        S.relabel_as_evaluators(f, [[0], [1, 2]])
    with pytest.raises(ValueError, match="not in the frame"):
        S.relabel_as_evaluators(f, [[0], [9]])


def test_aa_on_a_frame_uses_every_split():
    f = S.ScoreWorld(**SMALL).draw(4, rng_seed=3)
    r = V.aa_rate_frame(f, "e0")
    assert set(r["splits"]) == {6} and set(r["seeds_per_evaluator"]) == {2}
    assert r["rate"].between(0, 1).all()


def test_pairwise_t_equals_scipy_paired_t():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(7, 4)) + np.array([0, 0.5, 1.0, 0])
    x[0, 3] = np.nan
    mean, p, n = stats.pairwise_t(x)
    for i, j in ((0, 1), (1, 2), (0, 3)):
        ok = np.isfinite(x[:, i]) & np.isfinite(x[:, j])
        ref = sps.ttest_rel(x[ok, i], x[ok, j])
        assert p[i, j] == pytest.approx(ref.pvalue) and n[i, j] == ok.sum()
        assert mean[i, j] == pytest.approx(np.mean(x[ok, i] - x[ok, j]))


def test_markers_are_a_confidence_set_and_need_enough_clusters():
    rng = np.random.default_rng(6)
    base = rng.normal(size=8)
    wide = pd.DataFrame({"a": base, "b": base + 0.01 * rng.normal(size=8),
                         "c": base + 1 + 0.1 * rng.normal(size=8)})
    assert stats.significance_markers(wide).tolist() == [True, True, False]
    # c is worse than b as well as a: even without a, c stays out
    assert not stats.significance_markers(wide[["b", "c"]])["c"]
    # two clusters: no test, every defined column is "not distinguishable"
    assert stats.significance_markers(wide.iloc[:2]).tolist() == [True, True, True]
    assert stats.significance_markers(wide, min_clusters=9).all()


# the study's two designs of test subsets (docs/methods/06-truth-and-scores.md §6.2)
SHARED = {**S.STRONG_SHARING, "seed_evaluator": 0.08}
DESIGN = dict(archs=("a", "b", "c"), tasks=("car", "cat", "conf"), calibrators=("none", "platt"),
              sizes=(1000, 3000), effects={"e0": 0.0, "e1": 0.08})


def test_the_policy_reads_the_design_from_the_frame():
    from fitontest.report import policy

    paper = S.ScoreWorld(random_sd=SHARED, design="paper", **DESIGN).draw(3)
    indep = S.ScoreWorld(random_sd=SHARED, design="independent", **DESIGN).draw(3)
    assert policy.inference_for("scores", "cmee", paper).clusters == ("seed",)
    assert policy.inference_for("scores", "cmee", indep).clusters == ("arch", "network", "task",
                                                                      "seed")
    assert V.NEW.cells(paper, "cmee", ()).n_units.loc["all", "e0"] == 3
    assert V.NEW.cells(indep, "cmee", ()).n_units.loc["all", "e0"] == 27


def test_independent_units_detect_a_difference_that_seed_clusters_miss():
    """Equal compute (the same frame size): with a large effect shared by a seed's
    units (the paper design), three seed clusters rarely tell the planted gap; drawn
    per (model, task, seed), 27 clusters nearly always do. The seed-clustered rule
    applied to the independent frames misses it more often: most of the gain is
    the clusters' count, read from the design."""
    seed_rule = V.Procedure("seed clusters", V.policy.INFERENCE[("scores", "paper", "networks")],
                            V.significance_markers)
    worlds = {d: S.ScoreWorld(random_sd=SHARED, design=d, **DESIGN)
              for d in ("paper", "independent")}
    got = {d: V.power(w, n_rep=20).set_index("gap").loc[0.08, "detected"]
           for d, w in worlds.items()}
    missed = V.power(worlds["independent"], seed_rule, n_rep=20).set_index("gap") \
        .loc[0.08, "detected"]
    assert got["independent"] >= 0.9, got
    assert got["paper"] <= 0.5, got
    assert missed <= got["independent"] - 0.2, (got, missed)


def test_aa_rate_holds_under_the_independent_design():
    w = S.ScoreWorld(random_sd=SHARED, design="independent",
                     **{**DESIGN, "effects": {"e0": 0.0}})
    r = V.aa_rate(w, procedures=(V.NEW,), n_rep=60, rows=("size",)).iloc[0]
    assert r["rate"] <= 0.05 + 2 * max(r["mc_se"], 0.02)


NETWORK_AA = dict(archs=("r", "d", "w"), tasks=("car", "cat"), calibrators=("platt", "beta"),
                  sizes=(1000,), effects={"A": 0.0, "B": 0.0}, design="independent",
                  fixed_sd={**S.DEFAULT_FIXED, "interaction": 0.0}, networks=3)


def test_network_aa_holds_alpha_with_networks_as_clusters_and_not_without():
    """Each network shifts the two evaluators its own way (a retrained network
    moves Table 3 by about one interval: the measured retrain variance), but
    they are equal on average over networks. With the networks as the
    clusters the rows are marked at most at alpha; with the test subsets of
    fixed networks as clusters (the earlier design) far more often."""
    w = S.ScoreWorld(random_sd={**S.NO_SHARING, "network_evaluator": 0.06}, **NETWORK_AA)
    f = w.draw(3)
    assert f.groupby("arch")["network"].nunique().eq(3).all()
    assert V.policy.inference_for("scores", "cmee", f).clusters == ("arch", "network")
    r = V.aa_rate_networks(w, n_rep=150).set_index("procedure")
    new, old = r.loc[V.NEW.name], r.loc[V.FIXED_NETWORKS.name]
    assert new["rate"] <= 0.05 + 2 * max(new["mc_se"], 0.015), r
    assert old["rate"] - 3 * old["mc_se"] > 0.05, r


def test_network_aa_needs_an_aa_world():
    with pytest.raises(ValueError, match="A/A world"):
        V.aa_rate_networks(S.ScoreWorld(**{**NETWORK_AA, "effects": {"A": 0.0, "B": 0.1}}))


def test_one_network_per_architecture_keeps_the_fixed_scope():
    """With one network per architecture the networks cannot be the clusters:
    the tables say "these networks"."""
    f = S.ScoreWorld(**{**NETWORK_AA, "networks": 1}).draw(3)
    inf = V.policy.inference_for("scores", "cmee", f)
    assert inf.clusters == ("arch", "network", "task", "seed")
    assert inf.population.startswith("these networks")
    many = S.ScoreWorld(**NETWORK_AA).draw(3)
    assert V.policy.inference_for("scores", "cmee", many).population.startswith(
        "networks of these architectures")
    asked = V.policy.with_scope(many, "networks")
    assert V.policy.inference_for("scores", "cmee", asked).clusters == (
        "arch", "network", "task", "seed")
