"""The findings report: every claim kind on hand-made tidy frames."""
import itertools

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from fitontest.report import findings as F
from fitontest.study.schema import CALIBRATOR_COLUMNS, SCORE_COLUMNS

KEYS = dict(arch="net", task="car", calibrator="none", size=1000, seed=0, truth="isotonic")


def scores(values: dict, measure: str = "cmee", **grid) -> pd.DataFrame:
    """Score rows: ``values[evaluator]`` is a number, or a function of the row's keys
    (evaluator included).

    ``grid`` gives lists of key values (default: one value each, KEYS)."""
    axes = {k: grid.get(k, [v]) for k, v in KEYS.items()}
    rows = []
    for combo in itertools.product(*axes.values()):
        key = dict(zip(axes, combo))
        for ev, v in values.items():
            rows.append({**key, "evaluator": ev,
                         measure: v(evaluator=ev, **key) if callable(v) else v})
    return pd.DataFrame(rows).reindex(columns=SCORE_COLUMNS)


def calibrators(values: dict, measure="ceac", kind="binary") -> pd.DataFrame:
    rows = [{"arch": a, "task": t, "calibrator": c, "truth": "isotonic", "kind": kind,
             measure: v + 0.001 * i}
            for i, (a, t) in enumerate([("r", "car"), ("r", "cat"), ("d", "car"), ("d", "cat")])
            for c, v in values.items()]
    return pd.DataFrame(rows).reindex(columns=CALIBRATOR_COLUMNS)


def claim(check, params, frame="scores", measure="cmee", **extra) -> F.Claim:
    return F.Claim.from_dict({"id": "c", "paper": "p", "source": "s", "frame": frame,
                              "measure": measure, "check": check, "params": params, **extra})


def run(c, orders=None, **frames) -> dict:
    out = F.evaluate_claims([c], orders=orders, **frames)
    assert len(out) == 1
    return out.iloc[0].to_dict()


def apart(tol):
    """Stand-in for the pairwise test: 'significantly better' = mean better by more than tol."""
    def orders(wide, *, lower_is_better=True, alpha=0.05):
        m = wide.mean().to_numpy()
        d = m[None, :] - m[:, None] if lower_is_better else m[:, None] - m[None, :]
        return pd.DataFrame(d > tol, index=wide.columns, columns=wide.columns)
    return orders


# ---------------------------------------------------------------------------
# the claims file


def test_paper_claims_parse_with_known_checks_and_unique_ids():
    claims = F.load_claims()
    assert len(claims) >= 15
    assert all(c.check in F.CHECKS for c in claims)
    assert len({c.id for c in claims}) == len(claims)
    kinds = {c.check for c in claims}
    assert {"best", "in_top_k", "rank_at_most_in_majority", "ahead_of", "in_bottom_fraction",
            "above_threshold", "rank_trend"} <= kinds
    for c in claims:
        assert c.paper and c.source and c.precise().endswith(".")


def test_every_paper_claim_is_not_testable_without_results():
    out = F.evaluate_claims(F.load_claims())
    assert (out["status"] == F.NOT_TESTABLE).all()
    assert out["evidence"].str.contains("no .* rows", regex=True).all()


@pytest.mark.parametrize("change, message", [
    ({"check": "bestest"}, "unknown check"),
    ({"measure": "nope"}, "measure 'nope'"),
    ({"frame": "tables"}, "frame must be"),
    ({"frame": "calibrators", "measure": "spearman"}, "use the scores frame"),
    ({"params": {}}, "missing \\['method'\\]"),
    ({"params": {"method": "x", "k": 2}}, "unknown \\['k'\\]"),
    ({"filter": {"colour": "red"}}, "filter column 'colour'"),
    ({"filter": {"task": {"like": "c"}}}, "filter on 'task'"),
    ({"by": [["evaluator"]]}, "'by' columns"),
    ({"id": "has space"}, "claim id"),
    ({"better": "bigger"}, "better must be"),
    ({"colour": 1}, "unknown keys"),
    ({"check": "rank_trend", "params": {"method": "x", "direction": "up"}},
     "direction must be one of"),
])
def test_bad_claims_are_rejected_naming_the_problem(change, message):
    d = {"id": "c", "paper": "p", "source": "s", "frame": "scores", "measure": "cmee",
         "check": "best", "params": {"method": "pl_ce"}, **change}
    with pytest.raises(ValueError, match=message):
        F.Claim.from_dict(d)


def test_duplicate_ids_in_a_claims_file_are_rejected(tmp_path):
    p = tmp_path / "claims.yaml"
    entry = ("- {id: a, paper: p, source: s, frame: scores, measure: cmee, check: best, "
             "params: {method: x}}\n")
    p.write_text(entry * 2)
    with pytest.raises(ValueError, match="duplicate claim ids \\['a'\\]"):
        F.load_claims(p)


# ---------------------------------------------------------------------------
# best


def test_best_holds_fails_and_is_not_testable():
    s = scores({"pl_ce": 0.010, "beta": 0.020, "ece_es15": 0.030})
    r = run(claim("best", {"method": "pl_ce"}), scores=s)
    assert r["point"] == F.HOLDS and "pl_ce rank 1 of 3" in r["evidence"]
    assert "pl_ce 10" in r["evidence"]          # shown x 1000
    assert r["status"] == F.UNDECIDED and r["significance"].startswith("not distinguishable (1 ")
    assert run(claim("best", {"method": "beta"}), scores=s)["point"] == F.FAILS
    r = run(claim("best", {"method": "pl3_ce"}), scores=s)
    assert r["status"] == F.NOT_TESTABLE and "pl3_ce not in this run" in r["evidence"]
    # a tie for first is first, and says so
    r = run(claim("best", {"method": "beta"}), scores=s.assign(cmee=0.01))
    assert r["point"] == F.HOLDS and "beta rank 1 (tied with pl_ce, ece_es15)" in r["evidence"]
    r = run(claim("best", {"method": "pl_ce"}), scores=scores({"pl_ce": 0.01}))
    assert r["status"] == F.NOT_TESTABLE and "only 1 evaluator" in r["evidence"]


def test_best_uses_the_plain_mean_over_rows_and_the_main_truth():
    # pl_ce wins on one size by a lot, beta on the other by a little: means decide
    values = {"pl_ce": lambda size, **k: 0.01 if size == 1000 else 0.05,
              "beta": lambda size, **k: 0.04 if size == 1000 else 0.04}
    s = scores(values, size=[1000, 3000])
    assert np.mean([0.01, 0.05]) < np.mean([0.04, 0.04])
    assert run(claim("best", {"method": "beta"}), scores=s)["point"] == F.FAILS
    # a second truth where beta wins is ignored when isotonic (the main truth) is present
    other = scores({"pl_ce": 0.9, "beta": 0.0}).assign(truth="posterior")
    r = run(claim("best", {"method": "pl_ce"}), scores=pd.concat([s, other]))
    assert r["point"] == F.HOLDS and r["truth"] == "isotonic"


def test_best_verdict_from_the_pairwise_orders():
    s = scores({"pl_ce": lambda seed, **k: 0.010 + 0.001 * seed,
                "pl3_ce": lambda seed, **k: 0.012 + 0.001 * seed,
                "beta": lambda seed, **k: 0.050}, seed=[0, 1, 2])
    c = claim("best", {"method": "pl_ce"})
    r = run(c, orders=apart(0.001), scores=s)
    assert r["status"] == F.SUPPORTED and r["point"] == F.HOLDS
    assert r["significance"].startswith("supported: simultaneous rank bounds pl_ce rank 1 of 3")
    assert "3 independent (seed) clusters" in r["significance"]
    r = run(c, orders=apart(0.005), scores=s)          # pl3_ce not told apart from pl_ce
    assert r["status"] == F.UNDECIDED and "pl_ce rank 1–2" in r["significance"]
    r = run(claim("best", {"method": "beta"}), orders=apart(0.005), scores=s)
    assert r["status"] == F.CONTRADICTED and r["point"] == F.FAILS
    r = run(claim("best", {"method": "pl3_ce"}), orders=apart(0.005), scores=s)
    assert r["status"] == F.UNDECIDED and r["point"] == F.FAILS


def test_too_few_independent_clusters_are_not_distinguishable():
    """Two seeds are two clusters however many (model, task, calibrator, size) rows
    they hold: the verdict says so instead of marking."""
    s = scores({"pl_ce": 0.01, "beta": 0.02}, seed=[0, 1], arch=["a", "b", "c"],
               task=["car", "cat"], size=[100, 1000])
    r = run(claim("best", {"method": "pl_ce"}), orders=apart(0.001), scores=s)
    assert r["point"] == F.HOLDS and r["status"] == F.UNDECIDED
    assert r["significance"].startswith("not distinguishable (2 independent (seed) cluster")


def test_findings_use_the_tables_units_and_clusters():
    """The matrix a marker function sees has one row per seed (the tables' clusters),
    each the mean of that seed's (model, task, calibrator) unit means."""
    from fitontest.report.specs import build, spec_named
    seen = []

    def spy(wide, **kw):
        seen.append(wide.copy())
        return pd.DataFrame(False, index=wide.columns, columns=wide.columns)
    v = {"pl_ce": lambda seed, arch, size, **k: 0.01 + 0.001 * seed + (arch == "b") * 0.002
         + (size == 100) * 0.001, "beta": 0.02}
    s = scores(v, seed=[0, 1, 2], arch=["a", "b"], size=[100, 1000])
    r = run(claim("best", {"method": "pl_ce"}), orders=spy, scores=s)
    assert r["point"] == F.HOLDS and len(seen) == 1
    assert list(seen[0].index) == [0, 1, 2]
    np.testing.assert_allclose(seen[0]["pl_ce"], 0.0115 + 0.001 * np.arange(3))
    table = build(spec_named("table3_cmee_overall"), {"scores": s}, "isotonic")
    assert f"pl_ce {table.values.loc['all', 'pl_ce']:.4g}" in r["evidence"]


# ---------------------------------------------------------------------------
# in_top_k, ahead_of, in_bottom_fraction, above_threshold


def test_in_top_k_on_calibrators():
    cal = calibrators({"none": 0.09, "temps": 0.05, "beta": 0.02, "pl_ce": 0.01,
                       "pl3_ce": 0.015, "platt": 0.03, "isotonic": 0.04})
    c = claim("in_top_k", {"methods": ["beta", "pl_ce", "pl3_ce"], "k": 3},
              frame="calibrators", measure="ceac")
    r = run(c, calibrators=cal)
    assert r["point"] == F.HOLDS and "beta rank 3" in r["evidence"]
    c2 = claim("in_top_k", {"methods": ["beta", "isotonic"], "k": 3}, frame="calibrators",
               measure="ceac")
    assert run(c2, calibrators=cal)["point"] == F.FAILS
    small = calibrators({"beta": 0.02, "pl_ce": 0.01, "pl3_ce": 0.015})
    r = run(c, calibrators=small)
    assert r["status"] == F.NOT_TESTABLE and "top 3 holds them all" in r["evidence"]


def test_filter_on_kind_selects_binary_calibrators():
    cal = pd.concat([calibrators({"pl3_ce": 0.02, "beta": 0.03}, measure="cmee"),
                     calibrators({"temps": 0.001}, measure="cmee", kind="multiclass")])
    c = claim("best", {"method": "pl3_ce"}, frame="calibrators", filter={"kind": "binary"})
    assert run(c, calibrators=cal)["point"] == F.HOLDS
    c = claim("best", {"method": "pl3_ce"}, frame="calibrators")
    assert run(c, calibrators=cal)["point"] == F.FAILS


def test_filters_by_value_list_and_threshold():
    # beta wins at size 1000 (by 0.02), pl_ce at 300 and 3000 (by 0.01)
    s = scores({"pl_ce": lambda size, **k: 0.04 if size == 1000 else 0.01,
                "beta": 0.02}, size=[300, 1000, 3000])
    beta = dict(check="best", params={"method": "beta"})
    cases = [({"size": 1000}, F.HOLDS), ({"size": [300, 1000]}, F.HOLDS),
             ({"size": [300, 3000]}, F.FAILS), ({"size": {"above": 500}}, F.HOLDS),
             ({"size": {"above": 2000}}, F.FAILS), ({"size": {"below": 500}}, F.FAILS),
             ({"size": {"below": 2000}}, F.HOLDS), ({"size": {"not": [300, 3000]}}, F.HOLDS),
             ({"size": {"not": 1000}}, F.FAILS)]
    for filt, want in cases:
        c = claim(**beta, filter=filt)
        assert run(c, scores=s)["point"] == want, filt
    c = claim(**beta, filter={"size": {"above": 500}, "seed": 0})
    assert "size > 500; seed = 0" in c.precise()
    r = run(claim(**beta, filter={"size": 10}), scores=s)
    assert r["status"] == F.NOT_TESTABLE and r["evidence"] == "no rows with size = 10"


def test_ahead_of():
    s = scores({"ece_es_cv": 0.02, "ece_es_sweep": 0.025, "ece_es15": 0.03, "beta": 0.01})
    c = claim("ahead_of", {"ahead": ["ece_es_cv", "ece_es_sweep"], "behind": ["ece_es15"]})
    assert run(c, scores=s)["point"] == F.HOLDS
    c = claim("ahead_of", {"ahead": ["ece_es_cv", "ece_es15"], "behind": ["ece_es_sweep"]})
    assert run(c, scores=s)["point"] == F.FAILS
    c = claim("ahead_of", {"ahead": ["ece_es_cv"], "behind": ["ece_ew15"]})
    assert run(c, scores=s)["status"] == F.NOT_TESTABLE


def test_ahead_of_counts_significant_pairs():
    s = scores({"a": 0.010, "b": 0.0105, "c": 0.030}, seed=[0, 1, 2])
    c = claim("ahead_of", {"ahead": ["a", "b"], "behind": ["c"]})
    r = run(c, orders=apart(0.005), scores=s)
    assert r["status"] == F.SUPPORTED
    assert r["significance"].startswith("supported: ahead significantly in 2 of 2")
    r = run(c, orders=apart(0.05), scores=s)
    assert r["status"] == F.UNDECIDED
    assert r["significance"].startswith("not distinguishable: ahead significantly in 0 of 2")
    r = run(claim("ahead_of", {"ahead": ["c"], "behind": ["a", "b"]}), orders=apart(0.005),
            scores=s)
    assert r["status"] == F.CONTRADICTED and "behind significantly in 2" in r["significance"]


def test_in_bottom_fraction():
    s = scores({f"e{i}": 0.01 * i for i in range(1, 7)})        # e6 worst, e1 best
    # bottom third of 6 = ranks 5 and 6
    assert run(claim("in_bottom_fraction", {"method": "e5", "fraction": 1 / 3}),
               scores=s)["point"] == F.HOLDS
    r = run(claim("in_bottom_fraction", {"method": "e4", "fraction": 1 / 3}), scores=s)
    assert r["point"] == F.FAILS and "bottom 2 = ranks 5–6: e5, e6" in r["evidence"]
    r = run(claim("in_bottom_fraction", {"method": "e1", "fraction": 1 / 3}),
            scores=scores({"e1": 0.1, "e2": 0.2}))
    assert r["status"] == F.NOT_TESTABLE


def test_undefined_measures_take_no_part():
    # KCE has no map, so no CMEE: it must not count as a competitor
    s = scores({"e1": 0.01, "e2": 0.02, "kce": np.nan})
    r = run(claim("best", {"method": "e1"}), scores=s)
    assert "rank 1 of 2" in r["evidence"]
    assert run(claim("best", {"method": "kce"}), scores=s)["status"] == F.NOT_TESTABLE


# ---------------------------------------------------------------------------
# Spearman (Table 4) and above_threshold


def spearman_scores():
    """Three evaluators estimating the CE of four calibrators on two tasks: 'iso' in the
    true order, 'rev' reversed, 'mix' with one swap."""
    true = {"beta": 0.01, "platt": 0.02, "isotonic": 0.03, "vecs": 0.04}
    est = {"iso": [0.011, 0.019, 0.031, 0.05], "rev": [0.04, 0.03, 0.02, 0.01],
           "mix": [0.02, 0.01, 0.03, 0.04]}
    rows = []
    for task in ("car", "confidence"):
        for j, (cal, ce) in enumerate(true.items()):
            for ev, e in est.items():
                rows.append({**KEYS, "task": task, "calibrator": cal, "evaluator": ev,
                             "ce_used": e[j], "true_ce": ce})
    return pd.DataFrame(rows).reindex(columns=SCORE_COLUMNS), true, est


def test_spearman_claims_match_scipy():
    s, true, est = spearman_scores()
    rho_mix = spearmanr(est["mix"], list(true.values()))[0]
    assert rho_mix == pytest.approx(0.8)
    best = claim("best", {"method": "iso"}, measure="spearman",
                 filter={"task": {"not": "confidence"}})
    r = run(best, scores=s)
    assert r["point"] == F.HOLDS and "mix 0.8" in r["evidence"] and "rev -1" in r["evidence"]
    above = claim("above_threshold", {"method": "mix", "threshold": 0.75}, measure="spearman",
                  filter={"task": "confidence"})
    assert run(above, scores=s)["point"] == F.HOLDS
    above = claim("above_threshold", {"method": "mix", "threshold": 0.85}, measure="spearman")
    assert run(above, scores=s)["point"] == F.FAILS
    # fewer than two of the ranked calibrators present: every calibrator present is used
    r = F.evaluate_claims([best], scores=s, ranked_calibrators=["beta", "platt"]).iloc[0]
    assert r["point"] == F.HOLDS
    none = claim("best", {"method": "iso"}, measure="spearman", filter={"task": "dog"})
    assert run(none, scores=s)["status"] == F.NOT_TESTABLE


def test_synthetic_spearman_is_across_ce_levels():
    from fitontest.study.schema import SYNTHETIC_COLUMNS

    levels = [0.0, 0.02, 0.05, 0.1]
    est = {"iso": [0.01, 0.03, 0.04, 0.12], "es": [0.03, 0.01, 0.06, 0.05]}
    rows = [{"shape": "square", "ce_level": lv, "evaluator": ev, "size": 1000, "seed": 0,
             "truth": "exact", "ce_used": e[i], "true_ce": lv}
            for ev, e in est.items() for i, lv in enumerate(levels)]
    syn = pd.DataFrame(rows).reindex(columns=SYNTHETIC_COLUMNS)
    c = claim("above_threshold", {"method": "es", "threshold": 0.5}, frame="synthetic",
              measure="spearman")
    r = run(c, synthetic=syn)
    assert r["point"] == F.HOLDS and r["truth"] == "exact"
    assert f"{spearmanr(est['es'], levels)[0]:.4g}" in r["evidence"]
    c = claim("best", {"method": "iso"}, frame="synthetic", measure="spearman")
    assert run(c, synthetic=syn)["point"] == F.HOLDS


def test_quantile_filter_splits_far_from_and_near_calibrated():
    # PL3 best where the true CE is high, PL where it is low
    ces = [0.01, 0.02, 0.10, 0.20, 0.15, 0.005]
    grid = dict(calibrator=[f"c{i}" for i in range(6)])
    tce = {f"c{i}": ce for i, ce in enumerate(ces)}
    s = scores({"pl_ce": lambda calibrator, **k: 0.01 if tce[calibrator] < 0.05 else 0.05,
                "pl3_ce": lambda calibrator, **k: 0.02 if tce[calibrator] < 0.05 else 0.03},
               **grid)
    s["true_ce"] = s["calibrator"].map(tce)
    far = claim("best", {"method": "pl3_ce"}, filter={"true_ce": {"quantile_above": 2 / 3}})
    near = claim("best", {"method": "pl_ce"}, filter={"true_ce": {"quantile_below": 1 / 3}})
    assert run(far, scores=s)["point"] == F.HOLDS
    assert run(near, scores=s)["point"] == F.HOLDS
    # unfiltered, PL loses: mean 0.03 against PL3's 0.025
    assert run(claim("best", {"method": "pl_ce"}), scores=s)["point"] == F.FAILS


# ---------------------------------------------------------------------------
# disaggregation and trends


def by_size(ranked: dict[int, list[str]]):
    """Scores whose order by CMEE at each size is ``ranked[size]`` (best first)."""
    return lambda evaluator, size, **k: 0.01 * (1 + ranked[size].index(evaluator))


def test_rank_at_most_in_majority():
    ranked = {300: ["pl_ce", "pl3_ce", "beta"], 1000: ["pl_ce", "beta", "pl3_ce"],
              3000: ["beta", "pl_ce", "pl3_ce"]}
    s = scores({e: by_size(ranked) for e in ["pl_ce", "pl3_ce", "beta"]},
               size=[300, 1000, 3000])
    c = claim("rank_at_most_in_majority", {"method": "pl_ce", "rank": 1},
              by=[["arch"], ["size"]])
    r = run(c, scores=s)
    assert r["point"] == F.HOLDS and "rank ≤ 1 in 2 of 3 rows" in r["evidence"]
    assert "size=3000: 2" in r["evidence"]
    assert "left out: arch" in r["evidence"]
    c = claim("rank_at_most_in_majority", {"method": "pl3_ce", "rank": 2}, by=[["size"]])
    assert run(c, scores=s)["point"] == F.FAILS          # 1 of 3
    c = claim("rank_at_most_in_majority", {"method": "pl_ce", "rank": 1, "share": "all"},
              by=[["size"]])
    assert run(c, scores=s)["point"] == F.FAILS
    one = scores({"pl_ce": 0.01, "beta": 0.02})
    c = claim("rank_at_most_in_majority", {"method": "pl_ce", "rank": 1},
              by=[["arch"], ["size"], ["task"]])
    r = run(c, scores=one)
    assert r["status"] == F.NOT_TESTABLE and "single row in every grouping" in r["evidence"]


def test_half_is_not_a_majority():
    ranked = {300: ["pl_ce", "beta"], 1000: ["beta", "pl_ce"]}
    s = scores({e: by_size(ranked) for e in ["pl_ce", "beta"]}, size=[300, 1000])
    c = claim("rank_at_most_in_majority", {"method": "pl_ce", "rank": 1}, by=[["size"]])
    assert run(c, scores=s)["point"] == F.FAILS
    c = claim("rank_at_most_in_majority", {"method": "pl_ce", "rank": 1, "share": 0.5},
              by=[["size"]])
    assert run(c, scores=s)["point"] == F.HOLDS


def test_rank_trend():
    ranked = {300: ["beta", "pl_ce", "isotonic"], 1000: ["pl_ce", "beta", "isotonic"],
              3000: ["pl_ce", "isotonic", "beta"]}
    s = scores({e: by_size(ranked) for e in ["pl_ce", "beta", "isotonic"]},
               size=[3000, 300, 1000])          # row order must not matter: sizes are sorted
    r = run(claim("rank_trend", {"method": "beta"}), scores=s)
    assert r["point"] == F.HOLDS and "300: 1, 1000: 2, 3000: 3" in r["evidence"]
    assert run(claim("rank_trend", {"method": "isotonic"}), scores=s)["point"] == F.FAILS
    assert run(claim("rank_trend", {"method": "isotonic", "direction": "better"}),
               scores=s)["point"] == F.HOLDS
    flat = {k: ["pl_ce", "beta", "isotonic"] for k in ranked}
    s2 = scores({e: by_size(flat) for e in ["pl_ce", "beta", "isotonic"]}, size=[300, 1000])
    assert run(claim("rank_trend", {"method": "beta"}), scores=s2)["point"] == F.FAILS
    r = run(claim("rank_trend", {"method": "beta"}),
            scores=scores({"beta": 0.1, "pl_ce": 0.2}))
    assert r["status"] == F.NOT_TESTABLE and "a single size" in r["evidence"]


# ---------------------------------------------------------------------------
# the report


def test_report_lists_every_claim_and_round_trips(tmp_path):
    claims = F.load_claims()
    s = scores({"pl_ce": 0.01, "pl3_ce": 0.02, "beta": 0.03, "ece_es15": 0.05,
                "ece_es_cv": 0.04, "ece_es_sweep": 0.045, "spline_natural": 0.06})
    out = F.evaluate_claims(claims, scores=s)
    F.write_findings(out, tmp_path / "findings.md", tmp_path / "findings.csv", exp="x")
    md = (tmp_path / "findings.md").read_text()
    for c in claims:
        assert f"`{c.id}`" in md
    back = pd.read_csv(tmp_path / "findings.csv", keep_default_na=False)
    assert list(back["id"]) == [c.id for c in claims]
    assert set(back["status"]) <= {F.SUPPORTED, F.CONTRADICTED, F.EQUIVALENT, F.UNDECIDED,
                                   F.NOT_TESTABLE}
    point = back.set_index("id")["point"]
    assert point["t3_pl_best"] == F.HOLDS
    assert point["t3_es_cv_sweep_ahead_of_es15"] == F.HOLDS
    assert point["t3_spline_among_worst"] == F.HOLDS
    status = back.set_index("id")["status"]
    assert status["t2_pl3_best_ceac"] == F.NOT_TESTABLE       # no calibrator frame
    # one row per seed: no test, so nothing is a verdict
    assert status[point != ""].eq(F.UNDECIDED).all()
    assert (f"**0 supported**, **0 contradicted**, **0 equivalent**, "
            f"{(status == F.UNDECIDED).sum()} not ") in md


# ---------------------------------------------------------------------------
# three outcomes with the policy's own tests, under the independent design


def noisy_scores(effects: dict, noise: float = 0.002, seed: int = 0) -> pd.DataFrame:
    """Independent (model, task, seed) draws: CMEE = 0.02 + effect + noise per row."""
    rng = np.random.default_rng(seed)
    s = scores({e: (lambda eff: lambda **k: 0.02 + eff + rng.normal(0, noise))(v)
                for e, v in effects.items()},
               arch=["a", "b", "c"], task=["car", "cat", "dog"], seed=[0, 1, 2])
    return s.assign(subsets="independent")


@pytest.mark.parametrize("effects, want", [
    ({"pl_ce": -0.005, "beta": 0.0, "ece_es15": 0.001}, F.SUPPORTED),      # planted, significant
    ({"pl_ce": 0.005, "beta": 0.0, "ece_es15": 0.001}, F.CONTRADICTED),    # reversed
    ({"pl_ce": 0.0, "beta": 0.0, "ece_es15": 0.0}, F.UNDECIDED),           # pure noise
])
def test_three_outcomes_from_the_policys_tests(effects, want):
    r = run(claim("best", {"method": "pl_ce"}), scores=noisy_scores(effects))
    assert r["status"] == want, r["significance"]
    assert "27 independent (network, task, seed) clusters" in r["significance"]


def test_pure_noise_is_rarely_called_either_way():
    """Over 40 noise frames the verdict is rarely 'supported' or 'contradicted':
    on noise those are false verdicts ('equivalent' is a true one here)."""
    calls = [run(claim("ahead_of", {"ahead": ["a"], "behind": ["b"]}),
                 scores=noisy_scores({"a": 0.0, "b": 0.0, "c": 0.0}, seed=i))["status"]
             for i in range(40)]
    assert calls.count(F.SUPPORTED) + calls.count(F.CONTRADICTED) <= 4, calls


def test_headline_counts_the_three_outcomes(tmp_path):
    s = noisy_scores({"pl_ce": -0.005, "beta": 0.0, "ece_es15": 0.001})
    claims = [claim("best", {"method": "pl_ce"}),
              F.Claim.from_dict({"id": "d", "paper": "p", "source": "s", "frame": "scores",
                                 "measure": "cmee", "check": "best",
                                 "params": {"method": "beta"}}),
              F.Claim.from_dict({"id": "e", "paper": "p", "source": "s", "frame": "scores",
                                 "measure": "cmee", "check": "best",
                                 "params": {"method": "kce"}})]
    out = F.evaluate_claims(claims, scores=s)
    assert list(out["status"]) == [F.SUPPORTED, F.CONTRADICTED, F.NOT_TESTABLE]
    md = F.findings_markdown(out)
    assert ("3 claims: **1 supported**, **1 contradicted**, **0 equivalent**, 0 not "
            "distinguishable, 1 not testable") in md
    assert "does not hold" in md          # the point order is shown beside the verdict


def test_rank_trend_and_bottom_fraction_verdicts():
    rng = np.random.default_rng(3)
    # 'm' is best at size 100 and worst at 1000, clearly; three other methods between
    v = {"m": lambda size, **k: (0.01 if size == 100 else 0.05) + rng.normal(0, 0.001),
         # the outer lambda binds i per method (ruff cannot see it)
         **{f"o{i}": (lambda i: lambda **k: 0.02 + 0.005 * i + rng.normal(0, 0.001))(i)  # noqa: B023
            for i in range(3)}}
    s = scores(v, arch=["a", "b", "c"], task=["car", "cat"], seed=[0, 1, 2],
               size=[100, 1000]).assign(subsets="independent")
    r = run(claim("rank_trend", {"method": "m", "along": "size", "direction": "worse"}),
            scores=s)
    assert r["status"] == F.SUPPORTED and r["point"] == F.HOLDS, r["significance"]
    r = run(claim("rank_trend", {"method": "m", "along": "size", "direction": "better"}),
            scores=s)
    assert r["status"] == F.CONTRADICTED, r["significance"]
    big = s[s["size"] == 1000]
    r = run(claim("in_bottom_fraction", {"method": "m", "fraction": 0.25}), scores=big)
    assert r["status"] == F.SUPPORTED, r["significance"]
    r = run(claim("in_bottom_fraction", {"method": "o0", "fraction": 0.25}), scores=big)
    assert r["status"] == F.CONTRADICTED, r["significance"]


def test_findings_cluster_by_the_runs_design():
    """The same rows read under the paper design have 3 (seed) clusters, under the
    independent design 27 (model, task, seed) clusters."""
    s = noisy_scores({"pl_ce": -0.005, "beta": 0.0})
    r = run(claim("best", {"method": "pl_ce"}), scores=s.assign(subsets="paper"))
    assert "3 independent (seed) clusters" in r["significance"]
    r = run(claim("best", {"method": "pl_ce"}), scores=s)
    assert "27 independent (network, task, seed) clusters" in r["significance"]
