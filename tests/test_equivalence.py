"""The fourth outcome, *equivalent* (docs/methods/11-verdicts.md §11.5.1): TOST over the
independent clusters, in one Holm family with the pairwise tests."""
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from fitontest.report import findings as F
from fitontest.report.equivalence import Margin, tost_pair, tost_target
from fitontest.inference.stats import holm, pairwise_better, pairwise_family

MARGIN = 0.05


def frame(means: dict, k: int, sd: float = 0.002, shared: float = 0.004, seed: int = 0):
    """A scores frame with ``k`` independent (model, task, seed) clusters, one row per
    evaluator each: CMEE = mean + a cluster effect shared by the evaluators + noise."""
    rng = np.random.default_rng(seed)
    c = rng.normal(0, shared, k)
    rows = [{"arch": "net", "task": "car", "calibrator": "none", "size": 1000, "seed": s,
             "truth": "isotonic", "evaluator": e, "cmee": m + c[s] + rng.normal(0, sd)}
            for s in range(k) for e, m in means.items()]
    return pd.DataFrame(rows).assign(subsets="independent")


def claim(check, params, **extra):
    return F.Claim.from_dict({"id": "c", "paper": "p", "source": "s", "frame": "scores",
                              "measure": "cmee", "check": check, "params": params, **extra})


def run(c, s):
    return F.evaluate_claims([c], scores=s).iloc[0]


def at_margin(base: float, r: float = MARGIN) -> float:
    """b with |b - base| = r (b + base) / 2: the relative margin's boundary."""
    return base * (1 + r / 2) / (1 - r / 2)


# ---------------------------------------------------------------------------
# the TOST against independent implementations


def test_absolute_tost_matches_statsmodels():
    sm = pytest.importorskip("statsmodels.stats.weightstats")
    rng = np.random.default_rng(1)
    for _ in range(5):
        a = rng.normal(1.0, 0.2, 12)
        b = a + rng.normal(0.02, 0.05, 12)
        p_ref = sm.ttost_paired(a, b, -0.05, 0.05)[0]
        assert tost_pair(a, b, Margin("absolute", 0.05)) == pytest.approx(p_ref, rel=1e-9)


def test_relative_tost_is_two_one_sided_tests_of_linear_contrasts():
    rng = np.random.default_rng(2)
    a = rng.normal(10.0, 1.0, 15)
    b = a * 1.01 + rng.normal(0, 0.2, 15)
    h = MARGIN / 2
    p1 = stats.ttest_1samp((1 + h) * a - (1 - h) * b, 0, alternative="greater").pvalue
    p2 = stats.ttest_1samp((1 + h) * b - (1 - h) * a, 0, alternative="greater").pvalue
    assert tost_pair(a, b, Margin("relative", MARGIN)) == pytest.approx(max(p1, p2), rel=1e-9)
    # against a fixed target: the plain TOST with delta = r |target|
    v = rng.normal(0.56, 0.01, 10)
    p = max(stats.ttest_1samp(v, 0.55 - 0.0275, alternative="greater").pvalue,
            stats.ttest_1samp(v, 0.55 + 0.0275, alternative="less").pvalue)
    assert tost_target(v, 0.55, Margin("relative", MARGIN)) == pytest.approx(p, rel=1e-9)


def test_one_family_keeps_the_tables_holm_without_equivalence_tests():
    rng = np.random.default_rng(3)
    wide = pd.DataFrame(rng.normal(0, 1, (20, 5)) + np.arange(5) * 0.4, columns=list("abcde"))
    better, rej = pairwise_family(wide)
    assert rej.size == 0 and better.equals(pairwise_better(wide))
    # at most 2 of 4 hypotheses true: multipliers min(2, 4 - j + 1) = 2, 2, 2, 1
    p = np.array([0.001, 0.002, 0.004, 0.2])
    assert np.allclose(holm(p, max_true=2), [0.002, 0.004, 0.008, 0.2])
    assert np.allclose(holm(p), [0.004, 0.006, 0.008, 0.2])


def test_margins_are_parsed_and_bad_ones_rejected():
    assert claim("best", {"method": "a"}).margin == Margin("relative", 0.05)
    sp = F.Claim.from_dict({"id": "c", "paper": "p", "source": "s", "frame": "scores",
                            "measure": "spearman", "check": "best", "params": {"method": "a"}})
    assert sp.margin == Margin("absolute", 0.05)
    assert claim("best", {"method": "a"}, margin="none").margin is None
    assert claim("in_top_k", {"methods": ["a"], "k": 1}).margin is None
    with pytest.raises(ValueError, match="no equivalence outcome"):
        claim("in_top_k", {"methods": ["a"], "k": 1}, margin={"relative": 0.1})
    with pytest.raises(ValueError, match="margin"):
        claim("best", {"method": "a"}, margin={"relative": -0.1})
    with pytest.raises(ValueError, match="margin"):
        claim("best", {"method": "a"}, margin={"percent": 5})


# ---------------------------------------------------------------------------
# the four outcomes on frames


def test_no_difference_and_many_clusters_is_equivalent():
    s = frame({"pl_ce": 0.02, "pl3_ce": 0.02, "beta": 0.03}, k=200)
    r = run(claim("best", {"method": "pl_ce"}), s)
    assert r["status"] == F.EQUIVALENT, r["significance"]
    # "PL is best" whose rival PL3 is equivalent reads as what it is
    assert "equivalent: pl_ce and pl3_ce within ±5 %" in r["significance"]
    assert r["margin"] == "±5 %"
    r = run(claim("ahead_of", {"ahead": ["pl_ce"], "behind": ["pl3_ce"]}), s)
    assert r["status"] == F.EQUIVALENT, r["significance"]


def test_a_difference_of_twice_the_margin_is_supported_or_contradicted():
    base = 0.02
    far = base * (1 + MARGIN) / (1 - MARGIN)          # |a - b| = 2 r (a + b) / 2
    s = frame({"pl_ce": base, "pl3_ce": far}, k=200)
    assert run(claim("best", {"method": "pl_ce"}), s)["status"] == F.SUPPORTED
    assert run(claim("best", {"method": "pl3_ce"}), s)["status"] == F.CONTRADICTED
    assert run(claim("ahead_of", {"ahead": ["pl3_ce"], "behind": ["pl_ce"]}),
               s)["status"] == F.CONTRADICTED


def test_few_clusters_are_not_distinguishable():
    s = frame({"pl_ce": 0.02, "pl3_ce": 0.02, "beta": 0.021}, k=4)
    r = run(claim("best", {"method": "pl_ce"}), s)
    assert r["status"] == F.UNDECIDED, r["significance"]
    assert r["takes"], "a claim left not distinguishable says what would decide it"


def test_equivalent_at_the_margin_is_rare():
    """The A/A rate of *equivalent* when the true difference equals the margin:
    at most 5 % + 2 Monte-Carlo SE (the TOST's size at its boundary), and not
    far below it (a test that never says equivalent would pass the bound)."""
    rng = np.random.default_rng(7)
    n_rep, k = 3000, 40
    base = 1.0
    cols = ["a", "b"]
    hits = 0
    for _ in range(n_rep):
        c = rng.normal(0, 0.05, (k, 1))
        x = c + np.array([base, at_margin(base)]) + rng.normal(0, 0.05, (k, 2))
        wide = pd.DataFrame(x, columns=cols)
        p_eq = [tost_pair(x[:, 0], x[:, 1], Margin("relative", MARGIN))]
        _, rej = pairwise_family(wide, p_eq)
        hits += bool(rej[0])
    rate = hits / n_rep
    se = np.sqrt(0.05 * 0.95 / n_rep)
    assert rate <= 0.05 + 2 * se, rate
    assert rate >= 0.05 - 4 * se, rate


def test_equivalence_against_a_threshold():
    rng = np.random.default_rng(4)
    rows = [{"arch": "net", "task": "car", "calibrator": c, "size": 1000, "seed": s,
             "truth": "isotonic", "evaluator": e, "cmee": v + rng.normal(0, 0.002)}
            for s in range(60) for c in ("x", "y", "z") for e, v in (("e", 0.01), ("f", 0.02))]
    s = pd.DataFrame(rows).assign(subsets="independent")
    c = claim("above_threshold", {"method": "e", "threshold": 0.01})
    assert run(c, s)["status"] == F.EQUIVALENT
    c = claim("above_threshold", {"method": "e", "threshold": 0.005})
    assert run(c, s)["status"] == F.SUPPORTED
