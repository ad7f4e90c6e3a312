"""The real-data table: anchors, ranks, rank agreement, and a tiny end-to-end run."""
import numpy as np
import pandas as pd
import pytest
import yaml

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
    for size, row in t.groupby("size"):
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
    assert -1 <= a["spearman_lo"] < a["spearman"] < a["spearman_hi"] <= 1
    assert -1 <= a["kendall_lo"] < a["kendall"] < a["kendall_hi"] <= 1
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


@pytest.mark.workflow
def test_real_data_workflow_on_generated_logits(tmp_path):
    from fitontest.data import logits

    d = tmp_path / "logits"
    d.mkdir()
    logits.write_pickle(d / "probs_net_a_logits.p", logits.simulate(600, 1200, 10, seed=0))
    logits.write_npz(d / "net_b.npz", logits.simulate(600, 1200, 10, seed=1, temperature=1.5))
    cfg = yaml.safe_load((REPO / "config" / "real.yaml").read_text())
    evaluators = ["ece_es15", "ece_ew15", "platt", "isotonic", "beta"]
    cfg.update(logits={"dir": str(d)}, tasks={"car": 1, "confidence": None},
               calibrators={"multiclass": ["none", "temps"], "binary": []})
    cfg["evaluation"].update(calibrators=["none", "temps"], sizes=[300, 1200],
                             evaluators=evaluators)
    # a pseudo-real scores file (as a pseudo-real run writes) to compare with
    rng = np.random.default_rng(0)
    pseudo = pd.DataFrame([{"arch": "n", "task": "t", "calibrator": "c", "evaluator": e,
                            "size": s, "seed": r, "truth": "isotonic",
                            "ce_used": 0.05 + 0.01 * i + rng.normal(0, 1e-3), "true_ce": 0.04}
                           for i, e in enumerate(evaluators) for s in (300, 1200)
                           for r in range(2)])
    pseudo.to_parquet(tmp_path / "pseudo.parquet")
    cfg["real"] = {"pseudo_real_scores": str(tmp_path / "pseudo.parquet"), "truth": None}
    out = run_snakemake(tmp_path, "--cores", "2", config=cfg)
    assert out.returncode == 0, out.stderr[-3000:]
    res = tmp_path / "results" / "real" / "real"
    scores = pd.read_parquet(res / "scores.parquet")
    assert set(scores["arch"]) == {"net_b", "probs_net_a_logits"}
    # 1200 test points: 4 subsets of 300, 1 of 1200, per (model, task, calibrator, evaluator)
    per = scores.groupby(["arch", "task", "calibrator", "evaluator", "size"]).size()
    assert set(per.xs(300, level="size")) == {4} and set(per.xs(1200, level="size")) == {1}
    assert scores["true_ce"].isna().all() and scores["ce_used"].notna().all()
    table = pd.read_csv(res / "bias.csv")
    assert set(table["evaluator"]) == set(evaluators) and set(table["size"]) == {300, 1200}
    agreement = pd.read_csv(res / "agreement.csv")
    assert list(agreement["size"]) == [300, 1200] and agreement["spearman"].between(-1, 1).all()
    assert "Rank agreement" in (res / "bias.md").read_text()
