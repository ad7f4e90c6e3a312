"""Binary reductions of K-class outputs (docs/methods/01-binary-tasks.md §1)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from fitontest import multiclass
from fitontest.core import predictions
from fitontest import tasks

PROBS = np.array([[0.7, 0.2, 0.1],
                  [0.1, 0.3, 0.6],
                  [0.3, 0.4, 0.3],
                  [0.5, 0.5, 0.0]])
LABELS = np.array([0, 2, 0, 1])


def test_one_vs_rest_by_hand():
    for k, s_exp, y_exp in [(0, [0.7, 0.1, 0.3, 0.5], [1, 0, 1, 0]),
                            (1, [0.2, 0.3, 0.4, 0.5], [0, 0, 0, 1]),
                            (2, [0.1, 0.6, 0.3, 0.0], [0, 1, 0, 0])]:
        s, y = tasks.one_vs_rest(PROBS, LABELS, k)
        assert s.dtype == np.float64 and y.dtype == np.int64
        assert np.array_equal(s, s_exp) and y.tolist() == y_exp


def test_confidence_by_hand_ties_go_to_lowest_index():
    s, y = tasks.confidence(PROBS, LABELS)
    assert np.array_equal(s, [0.7, 0.6, 0.4, 0.5])
    # row 3 ties classes 0 and 1 at 0.5: the prediction is class 0, label is 1
    assert y.tolist() == [1, 1, 0, 0]


def test_reduce_and_reduce_all_follow_the_config_mapping():
    cfg = {"car": 1, "cat": 2, "confidence": None}
    out = tasks.reduce_all(cfg, PROBS, LABELS)
    assert list(out) == ["car", "cat", "confidence"]
    for name, spec in cfg.items():
        ref = tasks.reduce(spec, PROBS, LABELS)
        assert all(np.array_equal(a, b) for a, b in zip(out[name], ref))
    assert np.array_equal(tasks.reduce(None, PROBS, LABELS)[0],
                          tasks.confidence(PROBS, LABELS)[0])
    assert np.array_equal(tasks.reduce("confidence", PROBS, LABELS)[1],
                          tasks.confidence(PROBS, LABELS)[1])
    assert np.array_equal(tasks.reduce(np.int64(2), PROBS, LABELS)[0], PROBS[:, 2])
    assert set(tasks.TASKS) == {"one_vs_rest", "confidence"}


def test_scores_are_clipped_to_unit_interval():
    p = np.array([[1.0 + 1e-7, 0.0], [0.4, 0.6]])
    s, _ = tasks.confidence(p, [0, 1])
    assert s.max() == 1.0


@pytest.mark.parametrize("probs,labels,msg", [
    (np.array([[0.5, np.nan], [0.5, 0.5]]), [0, 1], r"NaN or infinity in 1 of 2 rows: row 0"),
    (np.array([[0.5, 0.5], [1.2, -0.2]]), [0, 1], "not probability vectors.*: row 1"),
    (np.array([[2.0, -1.0], [0.5, 0.5]]), [0, 1], "not probability vectors.*: row 0.*not logits"),
    (np.array([[3.0, 1.0], [0.5, 0.5]]), [0, 1], "not probability vectors.*: row 0.*renormalise"),
    (np.array([[3.0, -1.0], [-0.5, 1.5]]), [0, 1], "holds logits.*softmax"),
    (np.array([[3.0, 1.0], [1.5, 0.5]]), [0, 1], "cannot tell probabilities from logits"),
    (np.array([0.5, 0.5]), [0], "2-D"),
    (np.array([[1.0], [1.0]]), [0, 0], "at least 2 classes"),
    (np.zeros((0, 3)), [], "empty"),
    (np.array([["a", "b"]]), [0], "numeric"),
    (PROBS, [0, 1, 3, 0], r"lie in 0\.\.2"),
    (PROBS, [0, 1, -1, 0], r"lie in 0\.\.2"),
    (PROBS, [0, 1, 1.5, 0], "integer class indices"),
    (PROBS, [0, 1, 2], "differ in length"),
])
def test_bad_inputs_are_named(probs, labels, msg):
    for call in (lambda: tasks.confidence(probs, labels),
                 lambda: tasks.one_vs_rest(probs, labels, 0),
                 lambda: tasks.reduce_all({"c": None}, probs, labels)):
        with pytest.raises(ValueError, match=msg):
            call()


def test_rows_are_read_by_the_one_rule_of_predictions_read():
    """Rows rounded to 2 decimals miss 1 by up to 0.01: read brings them to 1 (it
    used to be an error here, under a second, tighter rule); the tasks' scores are
    read's probabilities, bit for bit."""
    rng = np.random.default_rng(3)
    w = rng.dirichlet(np.ones(5), size=200)
    p = np.round(w, 2)
    assert np.abs(p.sum(axis=1) - 1).max() > 1e-3
    with pytest.warns(UserWarning, match="rows shifted to sum to 1"):
        s, y = tasks.confidence(p, np.zeros(200, dtype=int))
    probs = predictions.read(p).probs
    assert np.array_equal(s, probs.max(axis=1))
    assert not hasattr(tasks, "ROW_SUM_ATOL")


@pytest.mark.parametrize("k,msg", [(3, r"out of range 0\.\.2"), (-1, r"out of range 0\.\.2"),
                                   (True, "integer"), (1.0, "integer"), ("1", "integer")])
def test_bad_class_is_named(k, msg):
    with pytest.raises(ValueError, match=msg):
        tasks.one_vs_rest(PROBS, LABELS, k)


def test_bad_task_spec_is_named():
    with pytest.raises(ValueError, match=">= 0"):
        tasks.reduce(-1, PROBS, LABELS)
    with pytest.raises(ValueError, match="integer class index.*or null"):
        tasks.reduce(1.0, PROBS, LABELS)


@pytest.mark.parametrize("cfg,msg", [
    ({}, "non-empty mapping"),
    ([("a", 1)], "non-empty mapping"),
    ({"dog": 5}, r"task 'dog'.*out of range 0\.\.2"),
    ({"x": 1.5}, "task 'x'.*integer class index"),
    ({"x": "cat"}, "task 'x'.*integer class index"),
    ({"x": False}, "task 'x'"),
    ({3: 1}, "task names must be non-empty strings"),
])
def test_bad_task_configs_are_named(cfg, msg):
    with pytest.raises(ValueError, match=msg):
        tasks.reduce_all(cfg, PROBS, LABELS)


def test_validate_tasks_without_k():
    assert tasks.validate_tasks({"car": 1, "dog": 5, "confidence": None}) == \
        {"car": 1, "dog": 5, "confidence": None}
    with pytest.raises(ValueError, match="out of range"):
        tasks.validate_tasks({"dog": 5}, n_classes=3)


def test_calibrator_then_reduction():
    rng = np.random.default_rng(0)
    z = rng.normal(size=(500, 4)) * 3
    y = rng.integers(0, 4, 500)
    probs = multiclass.get("temps").fit(z, y).predict_proba(z)
    for spec in (0, 3, None):
        s, b = tasks.reduce(spec, probs, y)
        assert s.shape == (500,) and np.all((s >= 0) & (s <= 1)) and set(b) <= {0, 1}
    # TempS keeps the argmax, so the confidence labels equal the uncalibrated ones
    uncal = multiclass.get("none").fit(z, y).predict_proba(z)
    assert np.array_equal(tasks.confidence(probs, y)[1], tasks.confidence(uncal, y)[1])


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 6).flatmap(lambda k: st.tuples(
    arrays(np.float64, (7, k), elements=st.floats(0.01, 1.0)),
    arrays(np.int64, (7,), elements=st.integers(0, k - 1)))))
def test_reductions_are_consistent(pz):
    w, y = pz
    p = w / w.sum(axis=1, keepdims=True)
    k = p.shape[1]
    ovr = [tasks.one_vs_rest(p, y, j) for j in range(k)]
    # one-vs-rest scores of all classes add to 1; exactly one positive per row
    assert np.allclose(sum(s for s, _ in ovr), 1.0)
    assert np.array_equal(sum(b for _, b in ovr), np.ones(7, dtype=np.int64))
    s, b = tasks.confidence(p, y)
    assert np.array_equal(s, np.stack([s_ for s_, _ in ovr], axis=1).max(axis=1))
    assert np.array_equal(b, (p.argmax(axis=1) == y).astype(int))


def test_event_posterior_by_hand():
    from fitontest.study.tasks import event_posterior

    probs = np.array([[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]])
    post = np.array([[0.1, 0.7, 0.2], [0.3, 0.3, 0.4]])
    # one-vs-rest class 2: P(label = 2 | x)
    assert np.allclose(event_posterior(2, probs, post), [0.2, 0.4])
    # confidence: P(label = predicted class | x); predictions are classes 1 and 0
    assert np.allclose(event_posterior(None, probs, post), [0.7, 0.3])
    with pytest.raises(ValueError, match="posterior has shape"):
        event_posterior(None, probs, post[:, :2] / post[:, :2].sum(1, keepdims=True))


def test_the_old_address_warns_and_names_the_home():
    """The reduction moved from the study to the library (issue 58)."""
    import fitontest.study.tasks as old

    with pytest.warns(DeprecationWarning, match="fitontest.study.tasks.confidence is "
                                                "deprecated: its home is fitontest.tasks"):
        f = old.confidence
    assert f is tasks.confidence
    assert "reduce_all" in dir(old)
    with pytest.raises(AttributeError):
        _ = old.no_such_name
