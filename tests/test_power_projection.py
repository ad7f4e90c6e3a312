"""What it would take (docs/methods/11-verdicts.md §11.5.2): the power functions against
independent references, and the projected clusters against simulated runs."""
import numpy as np
import pandas as pd
import pytest

from fitontest.report import findings as F
from fitontest.report import projection as P
from fitontest.report.equivalence import Margin, tost_pair


def test_difference_power_matches_statsmodels():
    sp = pytest.importorskip("statsmodels.stats.power")
    for d, sd, k, level in [(0.5, 1.0, 20, 0.05), (0.1, 0.3, 60, 0.05 / 10), (1.0, 2.0, 8, 0.01)]:
        ref = sp.TTestPower().power(effect_size=d / sd, nobs=k, alpha=level,
                                    alternative="two-sided")
        assert P.power_difference(d, sd, k, level) == pytest.approx(ref, abs=1e-6)


def test_tost_power_matches_simulation():
    rng = np.random.default_rng(0)
    d, sd, delta, k, level = 0.02, 0.1, 0.06, 30, 0.05
    x = rng.normal(d, sd, (4000, k))
    m, s = x.mean(axis=1), x.std(axis=1, ddof=1)
    from scipy import stats
    q = stats.t.ppf(1 - level, k - 1) * s / np.sqrt(k)
    sim = np.mean((m - q > -delta) & (m + q < delta))
    se = np.sqrt(sim * (1 - sim) / 4000)
    assert P.power_tost(d, sd, delta, k, level) == pytest.approx(sim, abs=4 * se)


def test_smallest_k_is_the_first_with_enough_power():
    d, sd, level = 0.3, 1.0, 0.05
    k = int(P.k_difference(d, sd, level))
    assert P.power_difference(d, sd, k, level) >= 0.8 > P.power_difference(d, sd, k - 1, level)
    k = int(P.k_equivalence(0.0, 1.0, 0.5, level))
    assert P.power_tost(0.0, 1.0, 0.5, k, level) >= 0.8 > P.power_tost(0.0, 1.0, 0.5, k - 1,
                                                                        level)
    assert P.k_difference(0.0, 1.0, level) == np.inf          # nothing to detect
    assert P.k_equivalence(0.6, 1.0, 0.5, level) == np.inf    # outside the margin


def test_knob_turns_a_factor_into_seeds_draws_and_cpu():
    rows = pd.DataFrame({"seed": [0, 1, 2] * 2, "draw": [1, 2, 3, 4, 1, 2]})
    k = P.knob("scores", ("arch", "task", "seed"), rows, 2.5, {"evaluate": 300.0})
    assert (k["knob"], k["now"], k["new"]) == ("evaluation.seeds", 3, 8)
    assert k["cpu_s"] == pytest.approx(300.0 / 3 * 5)
    k = P.knob("calibrators", ("arch", "draw"), rows, 2.0, {"calibrator_draws": 30.0})
    # every draw is a cluster (draws 1..4; config calibrators.draws 4 -> 8)
    assert (k["knob"], k["now"], k["new"]) == ("calibrators.draws", 4, 8)
    assert k["cpu_s"] == pytest.approx(30.0 / 4 * 4)
    assert P.knob("scores", ("arch",), rows, 2.0)["knob"] == ""


# ---------------------------------------------------------------------------
# the projection against simulated runs


def world(k: int, means: dict, sd: float, rng, exact: bool = False) -> pd.DataFrame:
    """``k`` independent (model, task, seed) clusters; per cluster one row per
    method: its mean + a shared cluster effect + its own N(0, sd) noise.
    ``exact``: the noise standardised per method (sample mean 0, sd exactly
    ``sd``), so that a pilot run's observed differences are the true ones."""
    e = rng.normal(0, sd, (k, len(means)))
    if exact:
        e = (e - e.mean(axis=0)) / e.std(axis=0, ddof=1) * sd
    x = np.array(list(means.values()))[None, :] + rng.normal(0, 0.01, (k, 1)) + e
    return pd.DataFrame({"arch": "net", "task": "car", "calibrator": "none", "size": 1000,
                         "truth": "isotonic", "subsets": "independent",
                         "seed": np.repeat(np.arange(k), len(means)),
                         "evaluator": np.tile(list(means), k), "cmee": x.ravel()})


@pytest.mark.parametrize("check, params, means, sd", [
    ("best", {"method": "a"}, {"a": 0.100, "b": 0.1025, "c": 0.104}, 0.004),   # a difference
    ("ahead_of", {"ahead": ["a"], "behind": ["b"]}, {"a": 0.1, "b": 0.1}, 0.012),  # none
])
def test_projected_clusters_decide_the_claim(check, params, means, sd):
    """A pilot run whose observed means and spreads are the truth leaves the
    claim not distinguishable and projects K clusters; runs with K clusters
    decide it in at least 70 % of 60 (the projection targets 80 %)."""
    rng = np.random.default_rng(11)
    c = F.Claim.from_dict({"id": "c", "paper": "p", "source": "s", "frame": "scores",
                           "measure": "cmee", "check": check, "params": params})
    pilot = F.evaluate_claims([c], scores=world(12, means, sd, rng, exact=True)).iloc[0]
    assert pilot["status"] == F.UNDECIDED, pilot["significance"]
    k = int(pilot["clusters_needed"])
    assert 12 < k < 2000, pilot["takes"]
    runs = [F.evaluate_claims([c], scores=world(k, means, sd, rng)).iloc[0]["status"]
            for _ in range(60)]
    decided = np.mean([s != F.UNDECIDED for s in runs])
    assert decided >= 0.7, (k, pilot["takes"], runs)
    assert pilot["takes_outcome"] in runs


def test_tost_power_is_what_the_claims_tost_reaches():
    """The projection's TOST power at its k is the rate the claim's own TOST
    (relative margin, paired clusters) reaches on simulated pairs."""
    rng = np.random.default_rng(5)
    base, d, sd, k = 1.0, 0.01, 0.05, 60
    level = 0.05
    power = P.power_tost(d, sd, 0.05 * (base + d / 2), k, level)
    hits = [tost_pair(a, a + d + rng.normal(0, sd, k), Margin("relative", 0.05)) < level
            for a in rng.normal(base, 0.02, (1500, k))]
    se = np.sqrt(power * (1 - power) / len(hits))
    assert np.mean(hits) == pytest.approx(power, abs=4 * se + 0.01)


@pytest.mark.parametrize("better", ["lower", "higher"])
def test_a_threshold_claim_is_projected_on_the_side_of_its_mean(better):
    """"Above the threshold" is supported by a mean above it whichever way the
    measure is better (a run caught the projection reading it the other way)."""
    rng = np.random.default_rng(2)
    v = 0.5 + rng.normal(0, 0.1, 6)
    v = v - v.mean()
    above = P.target_factor(0.62 + v, 0.6, None, 0.05)
    below = P.target_factor(0.58 + v, 0.6, None, 0.05)
    assert list(above) == ["supported"] and list(below) == ["contradicted"]
    assert above["supported"] == pytest.approx(below["contradicted"])
    rows = pd.DataFrame({"arch": "net", "task": "car", "calibrator": "none", "size": 1000,
                         "truth": "isotonic", "subsets": "independent", "evaluator": "e",
                         "seed": np.arange(6), "cmee": 0.62 + v})
    c = F.Claim.from_dict({"id": "c", "paper": "p", "source": "s", "frame": "scores",
                           "measure": "cmee", "check": "above_threshold",
                           "params": {"method": "e", "threshold": 0.6}, "margin": "none",
                           "better": better})
    r = F.evaluate_claims([c], scores=rows).iloc[0]
    assert r["status"] == F.UNDECIDED and r["takes_outcome"] == F.SUPPORTED, r["takes"]
