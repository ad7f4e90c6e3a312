"""fitontest.evaluate: the K-class front door over tasks + families."""
import numpy as np
import pandas as pd
import pytest
from scipy.special import softmax

import fitontest
from fitontest import tasks
from fitontest.study import experiment
from fitontest import families, metrics
from fitontest.inference.calibration_tests import calibration_test
from fitontest.inference.intervals import ce_interval


def data(n=1500, k=4, seed=0, scale=2.0):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * scale
    y = rng.integers(0, k, n)
    return z, softmax(z, axis=1), y


def test_confidence_mode_is_the_reduction_plus_the_family():
    _, p, y = data()
    s, yb = tasks.confidence(p, y)
    fam = families.get("ece_es15").fit(s, yb)
    res = fitontest.evaluate(p, y, evaluator="ece_es15")
    assert res.estimate == pytest.approx(metrics.ce_estimate(s, fam.predict(s)), abs=1e-12)
    assert res.debiased == pytest.approx(fam.ce_estimate_debiased(s), abs=1e-12)
    assert res.hyper == 15 and res.n == len(y) and res.n_classes == 4
    sq = fitontest.evaluate(p, y, evaluator="ece_es15", p=2)
    assert sq.estimate == pytest.approx(metrics.ce_estimate(s, fam.predict(s), p=2), abs=1e-12)


def test_classwise_is_the_mean_of_hand_made_one_vs_rest_values():
    _, p, y = data(k=3)
    want = []
    for k in range(3):
        s, yb = p[:, k], (y == k).astype(int)
        fam = families.get("isotonic").fit(s, yb)
        want.append(np.mean(np.abs(fam.predict(s) - s)))
    res = fitontest.evaluate(p, y, evaluator="isotonic", mode="classwise")
    assert [res.per_class[k].estimate for k in range(3)] == pytest.approx(want, abs=1e-12)
    assert res.estimate == pytest.approx(np.mean(want), abs=1e-12)
    ovr = fitontest.evaluate(p, y, evaluator="isotonic", mode="ovr", classes=[2])
    assert ovr.estimate == pytest.approx(want[2], abs=1e-12) and list(ovr.per_class) == [2]


def test_logits_torch_and_pandas_inputs_agree_with_numpy():
    torch = pytest.importorskip("torch")
    z, p, y = data()
    ref = fitontest.evaluate(p, y, evaluator="ece_es15", mode="classwise")
    got = [fitontest.evaluate(z, y, evaluator="ece_es15", mode="classwise", from_logits=True),
           fitontest.evaluate(torch.tensor(p), torch.tensor(y), evaluator="ece_es15",
                              mode="classwise"),
           fitontest.evaluate(torch.tensor(z, dtype=torch.float64, requires_grad=True),
                              torch.tensor(y), evaluator="ece_es15", mode="classwise",
                              from_logits=True),
           fitontest.evaluate(pd.DataFrame(p), pd.Series(y), evaluator="ece_es15",
                              mode="classwise")]
    for g in got:
        assert g.estimate == pytest.approx(ref.estimate, abs=1e-9)
        assert [c.estimate for c in g.per_class.values()] == pytest.approx(
            [c.estimate for c in ref.per_class.values()], abs=1e-9)


def test_binary_one_d_input():
    rng = np.random.default_rng(1)
    s = rng.random(800)
    y = (rng.random(800) < s ** 2).astype(int)
    res = fitontest.evaluate(s, y, evaluator="isotonic", mode="ovr")
    fam = families.get("isotonic").fit(s, y)
    assert res.estimate == pytest.approx(np.mean(np.abs(fam.predict(s) - s)), abs=1e-12)


def test_max_calibration_error_for_binning_by_hand():
    _, p, y = data(n=900, k=3, seed=2)
    s, yb = tasks.confidence(p, y)
    order = np.argsort(s, kind="stable")
    gaps = [abs(yb[g].mean() - s[g].mean()) for g in np.array_split(order, 10)]
    res = fitontest.evaluate(p, y, evaluator="ece_es15", p="max")
    fam = families.get("ece_es15", n_bins=10)
    res10 = fitontest.evaluate(p, y, evaluator=fam, p="max")
    assert res10.estimate == pytest.approx(max(gaps), abs=1e-12)
    assert res.estimate >= fitontest.evaluate(p, y, evaluator="ece_es15").estimate
    with pytest.raises(ValueError, match="not defined for evaluator 'platt'"):
        fitontest.evaluate(p, y, evaluator="platt", p="max")


def test_smece_through_evaluate_equals_the_workflow_estimate():
    _, p, y = data(seed=3)
    s, yb = tasks.confidence(p, y)
    fam = families.get("smece").fit(s, yb)
    res = fitontest.evaluate(p, y, evaluator="smece")
    assert res.estimate == pytest.approx(experiment.estimates(fam, s)["ce_est"], abs=1e-12)
    assert res.hyper == pytest.approx(fam.sigma_)


@pytest.mark.parametrize("probs,labels,kw,match", [
    (np.ones((5, 3)) / 3, np.zeros(4, int), {}, "differ in length"),
    (np.ones((6, 3)) / 2, np.zeros(6, int), {}, "sum to 1"),
    (np.ones((6, 3)) / 3, np.array([0, 1, 2, 3, 0, 1]), {}, "range|0..2"),
    (np.ones((2, 3, 3)) / 3, np.zeros(2, int), {}, "shape"),
    (np.ones((6, 3)) / 3, np.zeros(6, int), {"mode": "top"}, "mode must be"),
    (np.ones((6, 3)) / 3, np.zeros(6, int), {"p": 3}, "p must be"),
    (np.ones((6, 3)) / 3, np.zeros(6, int), {"mode": "ovr"}, "needs classes"),
    (np.ones((6, 3)) / 3, np.zeros(6, int), {"mode": "classwise", "classes": [5]},
     "out of range"),
    (np.ones((6, 3)) / 3, np.zeros(6, int), {"evaluator": "nope"}, "unknown"),
])
def test_bad_input_raises_a_named_error(probs, labels, kw, match):
    with pytest.raises((ValueError, KeyError), match=match):
        fitontest.evaluate(probs, labels, **kw)


def test_interval_is_metrics_ce_interval():
    _, p, y = data(seed=4)
    s, yb = tasks.confidence(p, y)
    res = fitontest.evaluate(p, y, evaluator="ece_es15", interval=0.9)
    want = ce_interval("ece_es15", s, yb, p=1, level=0.9)
    assert (res.interval.lo, res.interval.hi) == pytest.approx((want.lo, want.hi))
    assert res.interval.lo <= res.estimate <= res.interval.hi


def test_pvalue_is_the_calibration_test_of_each_task():
    """evaluate's p-value is calibration_test on the reduced task; over
    several classes, Bonferroni's min(1, m * min p)."""
    rng = np.random.default_rng(3)
    z = 2.5 * rng.normal(size=(3000, 3))
    probs = softmax(z, axis=1)
    y = np.array([rng.choice(3, p=row) for row in probs])     # calibrated by construction
    res = fitontest.evaluate(probs, y, evaluator="ece_es15")
    s, yb = tasks.confidence(probs, y)
    assert res.test == "kuiper"
    assert res.pvalue == pytest.approx(calibration_test(s, yb, method="kuiper").pvalue)
    over = fitontest.evaluate(softmax(2 * z, axis=1), y, evaluator="ece_es15", mode="classwise",
                              test="ks")
    per = [r.pvalue for r in over.per_class.values()]
    assert over.pvalue == pytest.approx(min(1.0, 3 * min(per)))
    assert over.pvalue < 1e-6                                  # over-confident: rejected
    assert fitontest.evaluate(probs, y, evaluator="ece_es15", test=None).pvalue is None
