"""The real-data table: anchors, ranks, rank agreement and its intervals, and a
tiny end-to-end run (probability files among the logit files)."""
import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats
from scipy.special import softmax

from conftest import REPO, run_snakemake
from fitontest.report import real

EVALUATORS = ["a", "b", "c", "d", "e", "f"]


def _scores(values: dict, sizes=(100, 300), n_seeds=2, truth=None, true_ce=None):
    """Score rows for two units; ce_used = values[e] + size term, equal per seed."""
    rows = []
    for unit in ("u1", "u2"):
        for e, v in values.items():
            for size in sizes:
                for seed in range(n_seeds):
                    rows.append({"arch": unit, "task": "t", "calibrator": "c", "evaluator": e,
                                 "size": size, "seed": seed, "truth": truth or "none",
                                 "ce_used": v + 1.0 / size + (0.01 if unit == "u2" else 0.0),
                                 "true_ce": true_ce if true_ce is not None else np.nan})
    return pd.DataFrame(rows)


def test_cells_are_means_of_unit_means():
    f = _scores({"a": 0.1}, sizes=(100,))
    f = pd.concat([f, f.iloc[[0]].assign(seed=9, ce_used=10.0)])  # u1 gets a third subset
    m = real.real_means(f)
    u1 = (2 * (0.1 + 0.01) + 10.0) / 3
    u2 = 0.1 + 0.01 + 0.01
    assert m[("a", 100)] == pytest.approx((u1 + u2) / 2)


def test_anchor_matches_pseudo_row_and_ranks_do_not_depend_on_it():
    vals = dict(zip(EVALUATORS, [0.05, 0.02, 0.09, 0.01, 0.07, 0.03]))
    r = _scores(vals)
    # pseudo-real biases: the same order, other scale and shift
    p = _scores({e: 2 * v for e, v in vals.items()}, truth="isotonic", true_ce=0.5)
    t = real.bias_table(r, p, truth="isotonic")
    for _, row in t.groupby("size"):
        assert row["real_bias"].mean() == pytest.approx(row["pseudo_bias"].mean())
        assert set(row["anchor_kind"]) == {"pseudo_real"}
        assert list(row["real_rank"]) == list(row["pseudo_rank"])
    a = real.rank_agreement(t, level=0.9)
    assert list(a["size"]) == [100, 300]
    assert np.allclose(a["spearman"], 1) and np.allclose(a["kendall"], 1)
    # reversed order: perfect disagreement, an interval around it
    p_rev = _scores({e: -v for e, v in vals.items()}, truth="isotonic", true_ce=0.5)
    a = real.rank_agreement(real.bias_table(r, p_rev, truth="isotonic"))
    assert np.allclose(a["spearman"], -1) and np.allclose(a["kendall"], -1)
    # partial agreement: the interval holds the estimate, inside [-1, 1]
    p_mix = _scores(dict(zip(EVALUATORS, [0.05, 0.09, 0.02, 0.01, 0.07, 0.03])),
                    truth="isotonic", true_ce=0.5)
    a = real.rank_agreement(real.bias_table(r, p_mix, truth="isotonic")).iloc[0]
    assert -1 <= a["spearman_fisher_lo"] < a["spearman"] < a["spearman_fisher_hi"] <= 1
    assert -1 <= a["kendall_fisher_lo"] < a["kendall"] < a["kendall_fisher_hi"] <= 1
    with pytest.raises(ValueError, match="no truth 'posterior'"):
        real.bias_table(r, p, truth="posterior")


def test_without_pseudo_real_the_anchor_is_the_largest_size_mean():
    vals = dict(zip(EVALUATORS, [0.05, 0.02, 0.09, 0.01, 0.07, 0.03]))
    t = real.bias_table(_scores(vals))
    big = t[t["size"] == 300]
    assert big["real_bias"].mean() == pytest.approx(0.0, abs=1e-12)
    assert set(t["anchor_kind"]) == {"largest_size"} and t["anchor"].nunique() == 1
    assert real.rank_agreement(t).empty
    md = real.markdown(t, real.rank_agreement(t))
    assert "pseudo" not in md.split("\n")[4] and "No pseudo-real scores" in md


def test_same_scores_same_files(tmp_path):
    vals = dict(zip(EVALUATORS, [0.05, 0.02, 0.09, 0.01, 0.07, 0.03]))
    r, p = _scores(vals), _scores(vals, truth="isotonic", true_ce=0.3)
    outs = []
    for d in ("x", "y"):
        (tmp_path / d).mkdir()
        names = [tmp_path / d / n for n in ("bias.csv", "agreement.csv", "bias.md")]
        real.write_real_tables(r, p, *names, truth="isotonic")
        outs.append([n.read_bytes() for n in names])
    assert outs[0] == outs[1]


def test_row_statistics_are_scipys():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 5, (30, 9)).astype(float)      # ties, as equal cells give
    b = rng.normal(size=(30, 9))
    b[:, 3] = b[:, 4]
    rho, tau = real.spearman_rows(a, b), real.kendall_rows(a, b)
    for i in range(30):
        assert rho[i] == pytest.approx(stats.spearmanr(a[i], b[i])[0], abs=1e-12)
        assert tau[i] == pytest.approx(stats.kendalltau(a[i], b[i])[0], abs=1e-12)


def test_unit_weights_give_the_cells_and_draws_keep_subsets_together():
    vals = dict(zip(EVALUATORS, [0.05, 0.02, 0.09, 0.01, 0.07, 0.03]))
    f = _scores(vals, sizes=(100,), n_seeds=3)
    f["ce_used"] += np.random.default_rng(1).normal(0, 0.01, len(f))
    f = f.drop(index=[0, 7])                            # missing cells stay out of the means
    arrays = real.subset_arrays(f, f["ce_used"], 100, EVALUATORS)
    assert [x.shape for x in arrays] == [(3, 1, 6), (3, 1, 6)]
    ones = [np.ones((1, 3)), np.ones((1, 3))]
    cells = real.bootstrap_cells(arrays, 1, None, weights=ones)[0]
    expect = real.cell_means(f, f["ce_used"]).xs(100, level="size").reindex(EVALUATORS)
    np.testing.assert_allclose(cells, expect.to_numpy(), rtol=1e-12)
    # one draw = one multiset of subsets per network, the same for every evaluator
    x = np.zeros((4, 2, 3))
    x[:, :, :] = np.arange(4)[:, None, None]            # every cell of subset j is j
    reps = real.bootstrap_cells([x], 50, np.random.default_rng(0))
    assert np.allclose(reps, reps[:, :1]) and reps.std() > 0


def _simulated_runs(rng, n, m_real, m_pseudo, noise, archs=2, units=3):
    """n simulated (real, pseudo-real) runs of 10 evaluators: per network its
    (subsets, units, evaluators) arrays; a subset's noise is shared by the
    network's units (the same test points), plus noise of each cell."""
    b = np.arange(10) * 0.5                          # expected real cells
    c = b[[2, 0, 4, 1, 3, 7, 5, 9, 6, 8]]            # expected pseudo-real biases
    real_runs = (b + rng.normal(0, 2, (n, archs, 1, units, 1))
                 + rng.normal(0, noise, (n, archs, m_real, 1, 10))
                 + rng.normal(0, noise / 2, (n, archs, m_real, units, 10)))
    pseudo_runs = (c + rng.normal(0, noise, (n, archs, m_pseudo, 1, 10))
                   + rng.normal(0, noise / 2, (n, archs, m_pseudo, units, 10)))
    return b, c, real_runs, pseudo_runs


@pytest.mark.parametrize("m_real, m_pseudo", [(8, 5), (3, 3)])
def test_subset_bootstrap_covers_the_agreement_of_repeated_runs(m_real, m_pseudo):
    """The known agreement: the mean rho (tau) over 4000 repeats of both runs on
    other test subsets (same models, as many subsets), by simulation; the
    bootstrap's 90 % interval from one run covers it in about 90 % of 120 runs."""
    rng = np.random.default_rng(5)
    _, _, r, p = _simulated_runs(rng, 4000, m_real, m_pseudo, noise=1.0)
    rc, pc = r.mean(axis=(1, 2, 3)), p.mean(axis=(1, 2, 3))
    truth = {"spearman": real.spearman_rows(rc, pc).mean(),
             "kendall": real.kendall_rows(rc, pc).mean()}
    _, _, r, p = _simulated_runs(rng, 120, m_real, m_pseudo, noise=1.0)
    hits = {"spearman": 0, "kendall": 0}
    for i in range(120):
        ci = real.bootstrap_intervals(list(r[i]), list(p[i]), level=0.9, n_boot=400, rng=i)
        assert (ci["real_subsets"], ci["pseudo_subsets"]) == (m_real, m_pseudo)
        for k in hits:
            hits[k] += ci[f"{k}_boot_lo"] <= truth[k] <= ci[f"{k}_boot_hi"]
    for k, h in hits.items():
        assert 0.82 <= h / 120 <= 0.99, (k, h / 120, truth[k])


def test_fisher_interval_ignores_the_cells_noise_the_bootstrap_does_not():
    rng = np.random.default_rng(2)
    widths = {}
    for noise in (0.1, 1.5):
        b, c, r, p = _simulated_runs(rng, 1, 6, 4, noise)
        rows = []
        for arrays, run in ((r[0], "real"), (p[0], "pseudo")):
            for a, x in enumerate(arrays):
                for j, u, e in np.ndindex(*x.shape):
                    rows.append({"arch": f"n{a}", "task": f"t{u}", "calibrator": "c",
                                 "evaluator": f"e{e}", "size": 100, "seed": j, "run": run,
                                 "ce_used": x[j, u, e], "true_ce": 0.0,
                                 "truth": "isotonic" if run == "pseudo" else "none"})
        f = pd.DataFrame(rows)
        fr, fp = f[f["run"] == "real"], f[f["run"] == "pseudo"]
        t = real.bias_table(fr, fp, "isotonic")
        a = real.rank_agreement(t, 0.9, real=fr, pseudo=fp, n_boot=300).iloc[0]
        fisher = np.arctanh(a["spearman_fisher_hi"]) - np.arctanh(a["spearman_fisher_lo"])
        widths[noise] = (fisher, a["spearman_boot_hi"] - a["spearman_boot_lo"])
        assert (a["real_subsets"], a["pseudo_subsets"]) == (6, 4)
    # Fisher z: the same width on the z scale whatever the noise (it only knows n)
    assert widths[0.1][0] == pytest.approx(widths[1.5][0])
    # the bootstrap: near zero for nearly exact cells, wide for noisy ones
    assert widths[0.1][1] < 0.05 < 0.2 < widths[1.5][1]
    md = real.markdown(t, real.rank_agreement(t, 0.9, real=fr, pseudo=fp, n_boot=50))
    assert "Fisher z: the evaluators as a sample of evaluators, the cells taken as exact" in md
    assert "Subset bootstrap (50 replicates)" in md


def test_one_subset_per_network_gives_no_bootstrap_interval():
    vals = dict(zip(EVALUATORS, [0.05, 0.02, 0.09, 0.01, 0.07, 0.03]))
    r = _scores(vals, sizes=(100, 300), n_seeds=1)
    p = _scores(vals, sizes=(100, 300), n_seeds=3, truth="isotonic", true_ce=0.1)
    a = real.rank_agreement(real.bias_table(r, p), real=r, pseudo=p, n_boot=100)
    assert list(a["real_subsets"]) == [1, 1] and list(a["pseudo_subsets"]) == [3, 3]
    assert a[["spearman_boot_lo", "kendall_boot_hi"]].isna().all().all()
    assert a["spearman_fisher_lo"].notna().all()


@pytest.mark.workflow
def test_real_data_workflow_on_generated_logits(tmp_path):
    """config/real.yaml on a pickle of logits and on one-pair npz files of
    10,000-row style (split by the config's fraction, sizes capped at the test
    set): one of probabilities named as a shared CIFAR-10 file names them, its
    twin of the same data as log-probabilities. Both give the same scores and
    bias table; ``kind: logits`` on the probabilities stops before any job."""
    from fitontest.data import logits

    d = tmp_path / "logits"
    d.mkdir()
    logits.write_pickle(d / "probs_net_a_logits.p", logits.simulate(600, 1200, 10, seed=0))
    z = logits.simulate(600, 600, 10, seed=1, temperature=1.5)
    z, y = np.concatenate([z["val"][0], z["test"][0]]), np.concatenate([z["val"][1], z["test"][1]])
    probs = softmax(z.astype(np.float64), axis=1)
    np.savez(d / "net_b_p.npz", predictions=probs, ground_truth=y)
    np.savez(d / "net_b_logp.npz", logits=np.log(probs), labels=y)
    cfg = yaml.safe_load((REPO / "config" / "real.yaml").read_text())
    # three evaluators, a job per (network, evaluator): enough for the bias
    # table, the rank agreement and the two readings compared
    evaluators = ["ece_es15", "platt", "isotonic"]
    cfg["logits"]["dir"] = str(d)
    cfg.update(tasks={"car": 1, "confidence": None},
               calibrators={"multiclass": ["none", "temps"], "binary": []})
    cfg["evaluation"].update(calibrators=["none", "temps"], sizes=[300, 1200],
                             evaluators=evaluators)
    # a pseudo-real scores file (as a pseudo-real run writes) to compare with
    rng = np.random.default_rng(0)
    pseudo = pd.DataFrame([{"arch": "n", "task": "t", "calibrator": "c", "evaluator": e,
                            "size": s, "seed": r, "truth": "isotonic",
                            "ce_used": 0.05 + 0.01 * i + rng.normal(0, 1e-3), "true_ce": 0.04}
                           for i, e in enumerate(evaluators) for s in (300, 600)
                           for r in range(2)])
    pseudo.to_parquet(tmp_path / "pseudo.parquet")
    cfg["real"] = {"pseudo_real_scores": str(tmp_path / "pseudo.parquet"), "truth": None,
                   "n_boot": 200}
    # explicit logits on the probability file: one line naming it, no job run
    bad = {**cfg, "logits": {**cfg["logits"], "kind": "logits"}}
    out = run_snakemake(tmp_path, "--cores", "2", config=bad)
    assert out.returncode != 0 and "net_b_p.npz: declared logits (logits.kind: logits)" in out.stderr
    assert "set logits.kind: probabilities (or auto)" in out.stderr
    assert not (tmp_path / "results").exists() and not (tmp_path / "logs").exists()

    out = run_snakemake(tmp_path, "--cores", "2", config=cfg)
    assert out.returncode == 0, out.stderr[-3000:]
    res = tmp_path / "results" / "real" / "real"
    scores = pd.read_parquet(res / "scores.parquet")
    assert set(scores["arch"]) == {"net_b_logp", "net_b_p", "probs_net_a_logits"}
    # sizes 300, 1200 capped at the 600 test points of the split files: net_a's
    # 1200 test points give 4 subsets of 300 and 2 of 600, net_b's 600 give 2 and 1
    per = scores.groupby(["arch", "task", "calibrator", "evaluator", "size"]).size()
    assert sorted(scores["size"].unique()) == [300, 600]
    assert set(per.xs(("probs_net_a_logits", 300), level=["arch", "size"])) == {4}
    assert set(per.xs(("net_b_p", 600), level=["arch", "size"])) == {1}
    assert scores["true_ce"].isna().all() and scores["ce_used"].notna().all()
    # probabilities read with kind auto = the same data given as log-probabilities
    key = ["task", "calibrator", "evaluator", "size", "seed"]
    a, b = (scores[scores["arch"] == m].sort_values(key) for m in ("net_b_p", "net_b_logp"))
    np.testing.assert_allclose(a["ce_used"], b["ce_used"], rtol=1e-9, atol=1e-12)
    ta, tb = (real.bias_table(x.assign(arch="m"), pseudo) for x in (a, b))
    pd.testing.assert_frame_equal(ta, tb, rtol=1e-9)
    table = pd.read_csv(res / "bias.csv")
    assert set(table["evaluator"]) == set(evaluators) and set(table["size"]) == {300, 600}
    agreement = pd.read_csv(res / "agreement.csv")
    assert list(agreement["size"]) == [300, 600] and agreement["spearman"].between(-1, 1).all()
    assert list(agreement["real_subsets"]) == [2, 1] and agreement["n_boot"].eq(200).all()
    md = (res / "bias.md").read_text()
    assert "Rank agreement" in md
    assert "net_b_p.npz: arrays guessed by name: 'predictions' as predictions, " \
        "'ground_truth' as labels" in md
    assert "net_b_p.npz: read as probabilities" in md and "net_b_logp.npz: read as" not in md
    assert "capped at the 600 test points" in md
    log = (tmp_path / "logs" / "real" / "logits" / "net_b_p" / "import.log").read_text()
    assert log.count("read as probabilities") == 1
