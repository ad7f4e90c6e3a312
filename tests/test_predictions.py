"""One door for predictions (issue 46): what an array holds is decided by
fitontest.core.predictions.read alone, the same way at every entry point --
the API, the CLI and the workflow's logit source -- whatever its storage.

The corpus of benchmarks/inputs/prediction_corpus.py (files as people export them)
runs through the three entry points here, small; its measured file is
benchmarks/measured/prediction_corpus.md.
"""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy.special import softmax

import fitontest
import fitontest_cli
from fitontest.core import predictions
from fitontest.data import logits as L
from conftest import load_benchmark

corpus = load_benchmark("prediction_corpus")


def _cli_estimate(capsys, path, *args):
    code = fitontest_cli.main(["evaluate", str(path), "--evaluator", "ece_es15", "--test", "none",
                     "--json", *args])
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)[0]["estimate"], out.err


# --- the rule -------------------------------------------------------------------

@pytest.mark.parametrize("k", [2, 10, 100, 1000])
@pytest.mark.parametrize("d", [3, 4, 6])
def test_rounded_probabilities_are_probabilities_for_every_k(k, d):
    z, _ = corpus.model(k, 400)
    p = np.round(softmax(z, axis=1), d)
    r = predictions.read(p)
    assert r.kind == "probabilities" and r.by == "rows"
    assert r.storage == f"rounded to {d} decimals"
    # the bound is the worst case of the rounding: K half-units, never exceeded
    assert r.deviation <= k * 0.5 * 10.0 ** -d + 1e-12
    np.testing.assert_allclose(r.probs.sum(axis=1), 1.0, atol=1e-12)


def test_float16_through_text_and_bfloat16_values_are_probabilities():
    z, _ = corpus.model(100, 400)
    p16 = softmax(z, axis=1).astype(np.float16)
    text = pd.read_csv(pd.io.common.StringIO(pd.DataFrame(p16).to_csv(index=False)))
    assert np.abs(text.to_numpy().sum(axis=1) - 1).max() > 1e-4        # the case at stake
    assert predictions.read(text).kind == "probabilities"
    torch = pytest.importorskip("torch")
    bf = torch.from_numpy(softmax(z, axis=1)).to(torch.bfloat16)
    r = predictions.read(bf)
    assert r.kind == "probabilities" and r.storage == "bfloat16"


@pytest.mark.parametrize("name, make, why", [
    ("percentages", lambda p, z: 100 * p, "entries above 1"),
    ("multi-label sigmoids", lambda p, z: 1 / (1 + np.exp(-z)), "do not sum to 1"),
    ("zero-minimum logits", lambda p, z: z - z.min(axis=1, keepdims=True), "entries above 1"),
    ("probabilities rescaled by 0.98", lambda p, z: 0.98 * p, "do not sum to 1"),
])
def test_non_negative_arrays_that_rows_cannot_settle_are_ambiguous(name, make, why):
    z, y = corpus.model(10, 300)
    p = softmax(z, axis=1)
    a = make(p, z)
    with pytest.raises(ValueError, match=f"cannot tell probabilities from logits.*{why}.*"
                                         "from_logits=True.*from_logits=False"):
        fitontest.evaluate(a, y)
    # the switch settles it, and reads right
    declared = "logits" if "logits" in name else "probabilities"
    want = softmax(a, axis=1) if declared == "logits" else a / a.sum(axis=1, keepdims=True)
    got = fitontest.api.class_probabilities(a, from_logits=declared == "logits")
    np.testing.assert_allclose(got, want, atol=1e-12)
    if declared == "logits":
        np.testing.assert_allclose(got, p, atol=1e-12)        # shift-invariance of softmax


def test_ambiguous_files_name_the_switch_of_each_entry_point(tmp_path, capsys):
    z, y = corpus.model(10, 300)
    a = z - z.min(axis=1, keepdims=True)
    np.savez(tmp_path / "nonneg.npz", logits=a, labels=y)
    assert fitontest_cli.main(["evaluate", str(tmp_path / "nonneg.npz")]) == 2
    err = capsys.readouterr().err
    assert "cannot tell" in err and "--kind logits" in err and err.count("\n") == 1
    with pytest.raises(ValueError, match="cannot tell.*logits.kind: logits"):
        L.load(tmp_path / "nonneg.npz", split={"n_val": 0.5})
    # the switch set: the right reading, by every entry point
    want = fitontest.evaluate(softmax(z, axis=1), y, evaluator="ece_es15", test=None).estimate
    got, _ = _cli_estimate(capsys, tmp_path / "nonneg.npz", "--kind", "logits")
    assert got == pytest.approx(want, abs=1e-9)
    f = L.load(tmp_path / "nonneg.npz", split={"n_val": 0.5}, kind="logits")
    assert f.kind == "logits"


def test_a_renormalisation_is_said_once_with_its_deviation(tmp_path, capsys):
    z, y = corpus.model(100, 500)
    p = np.round(softmax(z, axis=1), 4)
    with pytest.warns(UserWarning, match=r"shifted to sum to 1.*largest \|row sum - 1\| "
                                         r"[0-9.e-]+, within the [0-9.e-]+ that rounded to 4 "
                                         r"decimals allows; no entry moved more than [0-9.e-]+, "
                                         r"where the rounding moved each by up to 5e-05"):
        fitontest.evaluate(p, y, evaluator="ece_es15", test=None)
    np.savez(tmp_path / "p.npz", probs=p, labels=y)
    _, err = _cli_estimate(capsys, tmp_path / "p.npz")
    assert err.count("shifted to sum to 1") == 1 and err.count("\n") == 1
    # exact rows: nothing to say
    np.savez(tmp_path / "e.npz", probs=softmax(z, axis=1), labels=y)
    assert _cli_estimate(capsys, tmp_path / "e.npz")[1] == ""


def test_binary_values_and_rows_that_rounding_erased():
    p1 = np.array([0.1, 0.7, 1.0, 0.0])
    assert predictions.read(p1).kind == "probabilities"
    np.testing.assert_allclose(predictions.read(p1).probs[:, 1], p1)
    assert predictions.read(p1 - 0.5).kind == "logits"
    with pytest.raises(ValueError, match="non-negative but some exceed 1"):
        predictions.read(p1 * 3)
    # one column is a binary model's P(class 1) too (a one-column .csv)
    assert predictions.read(p1[:, None]).probs.shape == (4, 2)
    # K = 1000 spread thin and rounded to 2 decimals: a row rounded to all zeros
    flat = np.round(np.full((3, 1000), 1e-3), 2)
    with pytest.raises(ValueError, match=r"3 of 3 rows sum to 0 \(row 0, row 1, row 2\).*more "
                                         "precision"):
        predictions.read(flat)


def test_a_declared_kind_the_rows_contradict_stops_and_names_the_row():
    z, _ = corpus.model(5, 50)
    labels = ["val row 0", "val row 1"] + [f"test row {i}" for i in range(48)]
    with pytest.raises(ValueError, match=r"declared probabilities \(logits.kind: "
                                         r"probabilities\) but val row 0 has a negative"):
        predictions.read(z, "probabilities", where="f.npz", switch=predictions.WORKFLOW,
                         row_label=labels.__getitem__)
    with pytest.raises(ValueError, match="kind must be one of"):
        predictions.read(z, "probs")
    with pytest.raises(ValueError, match="from_logits must be True, False or None"):
        predictions.kind_from_logits("yes")


def test_only_the_decider_module_decides():
    """The duplicated rules and constants of issue 46 are gone."""
    from fitontest import api
    from fitontest.core import prediction_files
    from fitontest.study import tasks

    for mod, names in ((api, ("_looks_like_probs", "_row_sum_tolerance", "_EPS")),
                       (prediction_files, ("looks_like_probabilities", "row_sum_tolerance",
                                           "probability_rows", "_is_logits", "_EPS",
                                           "ROW_SUM_ATOL")),
                       (L, ("_kind_of",))):
        assert not [n for n in names if hasattr(mod, n)], mod.__name__
    # one row-sum rule: the reduction reads rows with predictions.read; neither tasks
    # module keeps a tolerance of its own
    from fitontest import tasks as library_tasks

    assert "ROW_SUM_ATOL" not in vars(library_tasks)
    assert not {"ROW_SUM_ATOL", "check_probs"} & set(vars(tasks))


# --- the issue's cases, through the three entry points ---------------------------------

@pytest.mark.parametrize("k", [100, 1000])
@pytest.mark.parametrize("i", range(len(corpus.NAMES)))
def test_rounded_probabilities_give_the_exact_ece_everywhere(tmp_path, capsys, k, i):
    z, y = corpus.model(k, 1000)
    exact = fitontest.evaluate(softmax(z, axis=1), y, evaluator="ece_es15", test=None).estimate
    path = corpus.write(tmp_path / "p", "npz", np.round(softmax(z, axis=1), 4), y, i)
    with np.load(path) as d:
        assert corpus.NAMES[i] in d.files
    got = {"api": corpus.via_api(path), "workflow": corpus.via_workflow(path)}
    got["cli"] = corpus.via_cli(path)
    for entry, (kind, _, ece, _) in got.items():
        assert kind == "probabilities", entry
        assert ece == pytest.approx(exact, abs=0.002), entry


def test_the_corpus_reads_alike_through_every_entry_point(tmp_path):
    frame = corpus.run(n=200, ks=[2, 10, 1000], directory=tmp_path)
    assert len(frame) == 3 * len(corpus.VARIANTS) * len(corpus.STORAGE)
    eps = list(corpus.ENTRY_POINTS)
    for _, r in frame.iterrows():
        kinds = {r[e] for e in eps}
        assert len(kinds) == 1, (r.file, {e: (r[e], r[f"{e}_msg"]) for e in eps})
        if r.api != "error":
            assert r.probs_diff <= 1e-9, r.file           # the same probabilities
            assert r.api_ece == r.cli_ece or abs(r.api_ece - r.cli_ece) < 1e-12, r.file
        # no silent misread: the right kind, or a clear error where no rule can tell, or
        # one naming the bad rows of a corrupted file (at every entry point)
        expected = "error" if r.truth in ("ambiguous", "corrupted") else r.truth
        assert r.api == expected, (r.file, r.api_msg)
        if r.truth == "corrupted":
            assert {r[f"{e}_verdict"] for e in eps} == {"rows named"}, r.file


# --- corrupted rows and rounded rows (issue 56) -----------------------------------------

def _dirichlet(n=2000, k=10):
    rng = np.random.default_rng(56)
    p = rng.dirichlet(np.full(k, 0.5), size=n)
    return p, (rng.random(n)[:, None] > np.cumsum(p, axis=1)[:, :-1]).sum(axis=1)


@pytest.mark.parametrize("name", ["bad1row", "bad1pct", "nanrow", "zerorow"])
def test_corrupted_rows_are_an_error_naming_them_never_logits(tmp_path, capsys, name):
    z, y = corpus.model(10, 2000)
    a = corpus.variant(name, z)
    bad = corpus.bad_rows(name, 2000)
    assert (name == "bad1pct") == (len(bad) == 20)
    named = ", ".join(f"row {i}" for i in bad[:predictions.SHOWN])
    with pytest.raises(ValueError, match=rf"{len(bad)} of 2000 rows.*: {named}\b"):
        fitontest.evaluate(a, y, evaluator="ece_es15")
    # declared probabilities: a clear error too; declared logits: not read as logits either
    with pytest.raises(ValueError, match=rf"{len(bad)} of 2000 rows.*{named}"):
        fitontest.evaluate(a, y, from_logits=False)
    if name != "nanrow":
        with pytest.raises(ValueError, match=rf"declared logits.*{2000 - len(bad)} of 2000 rows "
                                             "are probability vectors"):
            fitontest.evaluate(a, y, from_logits=True)
    # the CLI, the array stored under `probs`: one error line naming the rows
    np.savez(tmp_path / "p.npz", probs=a, labels=y)
    assert fitontest_cli.main(["evaluate", str(tmp_path / "p.npz")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{len(bad)} of 2000 rows" in err and named in err, err
    with pytest.raises(ValueError, match=named):
        L.load(tmp_path / "p.npz", split={"n_val": 0.5})


def test_the_issues_dirichlet_file_stops_where_it_read_as_logits():
    p, y = _dirichlet()
    clean = fitontest.evaluate(p, y, evaluator="ece_es15", test=None).estimate
    p[1] = 0.0
    p[1, :2] = 1.2, -0.2
    with pytest.raises(ValueError, match=r"1 of 2000 rows are not probability vectors.*: "
                                         r"row 1; row 1 is \[ 1.2 -0.2"):
        fitontest.evaluate(p, y, evaluator="ece_es15", test=None)
    assert fitontest.evaluate(np.delete(p, 1, 0), np.delete(y, 1), evaluator="ece_es15",
                              test=None).estimate == pytest.approx(clean, abs=2e-3)
    # logits stay logits: a negative entry in (nearly) every row, none a probability vector
    assert predictions.read(np.log(np.delete(p, 1, 0))).kind == "logits"


def test_binary_values_with_a_few_outside_zero_one_are_named():
    s = np.random.default_rng(0).random(500)
    s[[3, 40]] = -0.2, 1.3
    with pytest.raises(ValueError, match=r"2 of 500 rows are not probabilities.*row 3, row 40.*"
                                         "from_logits=True"):
        predictions.read(s)
    with pytest.raises(ValueError, match=r"2 of 500 values do not \(row 3, row 40"):
        predictions.read(s, "probabilities")
    # a binary model's logits, a third of them in [0, 1] by chance, are logits
    assert predictions.read(np.random.default_rng(1).normal(0.5, 1.0, 500)).kind == "logits"


@pytest.mark.parametrize("k", [10, 100, 1000])
@pytest.mark.parametrize("d", [3, 4])
def test_rounded_rows_move_no_score_by_more_than_the_rounding(k, d):
    z, y = corpus.model(k, 500)
    for scale in (1.0, 0.5):                    # the corpus model and a flatter one
        r = np.round(softmax(scale * z, axis=1), d)
        got = predictions.read(r)
        assert got.shifted and got.rounding == 0.5 * 10.0 ** -d
        np.testing.assert_allclose(got.probs.sum(axis=1), 1.0, atol=1e-12)
        assert (got.probs >= 0).all()
        # every entry, so every task's score (p_k, max_k p_k), within the rounding; the
        # predicted class kept
        assert np.abs(got.probs - r).max() <= got.moved <= 0.5 * 10.0 ** -d + 1e-12
        assert (got.probs.argmax(axis=1) == r.argmax(axis=1)).all()
        # dividing by the row sums does not keep to it where classes round to 0
        if k == 1000 and d == 3 and scale == 0.5:
            assert np.abs(r / r.sum(axis=1, keepdims=True) - r).max() > 10 * got.moved


def test_the_shift_is_the_nearest_probability_row():
    x = np.array([[0.5, 0.3, 0.0, 0.0], [0.7, 0.4, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25]])
    p = predictions.to_simplex(x)
    np.testing.assert_allclose(p, [[0.55, 0.35, 0.05, 0.05], [0.65, 0.35, 0.0, 0.0],
                                   [0.25, 0.25, 0.25, 0.25]], atol=1e-12)
    # nearer than any other probability row (random ones, and the rows divided by their sums)
    rng = np.random.default_rng(0)
    for row, q in zip(x, p):
        others = np.vstack([rng.dirichlet(np.ones(4), 200), row / row.sum()])
        assert (np.linalg.norm(others - row, axis=1) >= np.linalg.norm(q - row) - 1e-12).all()
