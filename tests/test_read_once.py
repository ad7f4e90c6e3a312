"""The front door reads its input once (issue 58).

``fitontest.evaluate`` and ``fitontest.choose_evaluator`` read the K-class
array once (:func:`fitontest.core.predictions.read`), reduce it to binary tasks
once (:class:`fitontest.tasks.BinaryTasks`) and hand that reading down:
nothing below checks its arrays again. The counts below are of the checks
themselves, monkeypatched to count and then do their work.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import fitontest
from fitontest.core import predictions, validation

N, K = 400, 4


def _model(seed: int = 0):
    rng = np.random.default_rng(seed)
    z = 2.0 * rng.normal(size=(N, K))
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    y = (rng.random(N)[:, None] > np.cumsum(p, axis=1)).sum(axis=1)
    return p, y


def _count(monkeypatch, module, name: str, record) -> list:
    """Patch ``module.name`` to note ``record(first argument)`` of every call and
    run the real function; the notes."""
    calls: list = []
    real = getattr(module, name)

    def counted(first, *args, **kw):
        calls.append(record(first))
        return real(first, *args, **kw)

    monkeypatch.setattr(module, name, counted)
    return calls


@pytest.fixture
def reads(monkeypatch):
    """How many times predictions.read ran."""
    return _count(monkeypatch, predictions, "read", lambda a: a)


@pytest.fixture
def value_passes(monkeypatch):
    """The passes over a binary sample's values (check_scores / check_labels)."""
    return _count(monkeypatch, validation, "_float_1d", np.shape)


@pytest.fixture
def array_checks(monkeypatch):
    """The shapes given to the one "real numeric array" check."""
    return _count(monkeypatch, validation, "check_array_real", np.shape)


@pytest.mark.parametrize("mode", ["confidence", "classwise"])
def test_evaluate_reads_once_and_checks_no_task_again(reads, value_passes, mode):
    p, y = _model()
    res = fitontest.evaluate(p, y, evaluator="ece_es15", mode=mode, test="kuiper")
    assert res.n == N and res.n_classes == K
    assert len(reads) == 1
    # the tasks' scores and labels came from the reading: fitting, the estimates and
    # the calibration test take them as they are
    assert value_passes == []


def test_evaluate_checks_each_input_array_once(array_checks):
    p, y = _model()
    fitontest.evaluate(p, y, evaluator="ece_es15", mode="classwise")
    # the predictions, then the labels; no task array, no second look at either
    assert array_checks == [(N, K), (N,)]


def _auto(p, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fitontest.evaluate(p, y, evaluator="auto", test=None)
    assert res.evaluator == "auto" and res.n == N


def _choose(p, y):
    choice = fitontest.choose_evaluator(p, y, candidates=["ece_es15", "platt"], n_worlds=4,
                                        interval=None, progress=False)
    assert choice.result.n == N


def test_auto_reads_once_and_reuses_the_reading(reads, array_checks):
    # one read serves the chooser and the evaluation of the evaluator it picked,
    # and the K-class array is checked once (one chooser run for both counts:
    # auto's 40 worlds are most of this file's time)
    _auto(*_model())
    assert len(reads) == 1
    assert array_checks.count((N, K)) == 1


def test_choose_evaluator_reads_once(reads):
    # one read serves the choice and its result (evaluate's estimate of the pick)
    _choose(*_model())
    assert len(reads) == 1


def test_the_k_class_array_is_checked_once(array_checks):
    _choose(*_model())
    assert array_checks.count((N, K)) == 1


def test_the_same_numbers_as_the_binary_tasks_checked_anew():
    """Handing the reading down changes no number: the evaluation equals
    evaluate_binary on the reduction done by the public fitontest.tasks."""
    from fitontest import tasks
    from fitontest.api import evaluate_binary

    p, y = _model(1)
    res = fitontest.evaluate(p, y, evaluator="ece_ew_cv", mode="ovr", classes=[2])
    s, b = tasks.one_vs_rest(p, y, 2)
    ref = evaluate_binary("ece_ew_cv", s.copy(), b.copy(), test="kuiper")
    assert (res.estimate, res.debiased, res.hyper, res.pvalue) == \
        (ref.estimate, ref.debiased, ref.hyper, ref.pvalue)


# --------------------------------------------------------------- the checks themselves
def test_checked_trusts_exactly_the_arrays_handed_down():
    s = np.array([0.2, 0.7])
    y = np.array([0, 1])
    y64 = y.astype(np.float64)
    for a in (s, y, y64):
        a.setflags(write=False)
    with validation.checked(s, y64):
        assert validation.check_scores(s) is s
        assert validation.check_labels(y64) is y64
        # the int labels the float64 ones were made from are not the array checked
        assert validation.check_labels(y) is not y64
        # an equal array is not the one checked, and a bad one is still an error
        with pytest.raises(ValueError, match=r"must lie in \[0, 1\]"):
            validation.check_scores(np.array([0.2, 1.7]))
        assert validation.check_scores(s.copy()) is not s
    # outside the block nothing is trusted: the labels come back as a new float64 array
    assert validation.check_labels(y) is not y64


def test_checked_refuses_a_writable_array():
    s = np.array([0.2, 0.7])
    with pytest.raises(ValueError, match="read-only"):
        with validation.checked(s):
            pass


def test_the_task_arrays_handed_down_are_read_only():
    """What the reading hands down cannot change after its check; the class
    probabilities are not kept (a reading holds only what the tasks need)."""
    from fitontest import tasks

    p, y = _model()
    data = tasks.from_reading(predictions.read(p), y, {c: c for c in range(K)})
    assert (data.n, data.n_classes, data.kind) == (N, K, "probabilities")
    assert sorted(data.tasks) == list(range(K))
    for s, b in data.tasks.values():
        assert not s.flags.writeable and not b.flags.writeable
        assert s.dtype == b.dtype == np.float64
    assert not [v for v in vars(data).values() if isinstance(v, np.ndarray)]


@pytest.mark.parametrize("a", [np.array([True, False]), np.array([1 + 2j]),
                               np.array(["a"]), np.array([None, 1.0], dtype=object)])
def test_check_array_real_names_the_dtype(a):
    with pytest.raises(ValueError, match=f"x must be a real numeric array, got dtype "
                                         f"{np.dtype(a.dtype)}"):
        validation.check_array_real(a, "x")


def test_check_option_is_the_one_message():
    assert validation.check_option("mode", "ovr", ("confidence", "ovr")) == "ovr"
    with pytest.raises(ValueError, match=r"^mode must be one of 'confidence', 'ovr'; got "
                                         r"'bogus'$"):
        validation.check_option("mode", "bogus", ("confidence", "ovr"))
    # an array is no option (its == answers elementwise)
    with pytest.raises(ValueError, match="must be one of"):
        validation.check_option("mode", np.array(["ovr", "x"]), ("ovr",))
    # the front door's options use it
    p, y = _model()
    with pytest.raises(ValueError, match="mode must be one of 'confidence', 'classwise', "
                                         "'ovr'; got 'bogus'"):
        fitontest.evaluate(p, y, mode="bogus")
