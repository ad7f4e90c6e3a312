"""Bad input at the front door: `fitontest evaluate` answers with one line on
stderr and exit status 2 (no traceback, nothing written); fitontest.evaluate
with a ValueError naming the problem. One test per case of issue 26.

The command runs in this process (``fitontest_cli.main``), which is what the console
script calls; one subprocess test checks that no traceback reaches a shell.
"""
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scipy.special import softmax

import fitontest
import fitontest_cli
from conftest import REPO


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    z = rng.normal(size=(600, 3)) * 2
    return z, softmax(z, axis=1), rng.integers(0, 3, 600)


def fail(capsys, *argv):
    """Run the command; assert exit 2, one stderr line, empty stdout; the line."""
    code = fitontest_cli.main(["evaluate", *map(str, argv)])
    out = capsys.readouterr()
    assert code == 2, out
    assert out.out == ""
    lines = out.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("fitontest evaluate: error: "), out.err
    assert "Traceback" not in out.err
    return lines[0]


def ok(capsys, *argv):
    code = fitontest_cli.main(["evaluate", *map(str, argv)])
    out = capsys.readouterr()
    assert code == 0, out.err
    return out


def estimate_of(stdout: str, name: str = "ece_es15") -> float:
    return float(next(ln for ln in stdout.splitlines() if ln.startswith(name)).split()[4])


def test_logits_declared_on_probabilities_stop(data, tmp_path, capsys):
    _, p, y = data
    np.savez(tmp_path / "p.npz", probs=p, labels=y)
    for switch in (["--from-logits"], ["--kind", "logits"]):
        line = fail(capsys, tmp_path / "p.npz", *switch, "--evaluator", "ece_es15")
        assert "declared logits" in line and "--kind probabilities" in line
    with pytest.raises(ValueError, match="declared logits.*from_logits=False"):
        fitontest.evaluate(p, y, evaluator="ece_es15", from_logits=True)


def test_logits_under_a_probability_name_are_read_by_their_rows(data, tmp_path, capsys):
    z, p, y = data
    np.savez(tmp_path / "z.npz", probs=z, labels=y)
    out = ok(capsys, tmp_path / "z.npz", "--evaluator", "ece_es15")
    assert "read 'probs' as logits (negative entries" in out.err     # the name did not decide
    assert estimate_of(out.out) == pytest.approx(
        fitontest.evaluate(p, y, evaluator="ece_es15").estimate, abs=1e-6)
    assert fitontest.evaluate(z, y, evaluator="ece_es15").estimate == pytest.approx(
        fitontest.evaluate(p, y, evaluator="ece_es15").estimate, abs=1e-12)
    # declared probabilities: the rows contradict it, one line naming the switch
    assert "--kind logits" in fail(capsys, tmp_path / "z.npz", "--kind", "probabilities")
    with pytest.raises(ValueError, match="negative entry.*from_logits=True"):
        fitontest.evaluate(z, y, from_logits=False)


def test_truncated_npz(data, tmp_path, capsys):
    _, p, y = data
    np.savez(tmp_path / "p.npz", probs=p, labels=y)
    whole = (tmp_path / "p.npz").read_bytes()
    (tmp_path / "cut.npz").write_bytes(whole[: len(whole) // 2])
    assert "not a readable .npz file" in fail(capsys, tmp_path / "cut.npz")


def test_random_bytes_named_npz(tmp_path, capsys):
    (tmp_path / "r.npz").write_bytes(np.random.default_rng(0).bytes(2000))
    line = fail(capsys, tmp_path / "r.npz")
    assert "neither an .npz" in line and "pickle" not in line


@pytest.mark.parametrize("target", ["a_file/rd.png", "rd.txt", "."])
def test_plot_into_a_bad_path_writes_nothing(data, tmp_path, capsys, target):
    _, p, y = data
    np.savez(tmp_path / "p.npz", probs=p, labels=y)
    (tmp_path / "a_file").write_text("x")
    before = sorted(os.listdir(tmp_path))
    line = fail(capsys, tmp_path / "p.npz", "--plot", tmp_path / target)
    assert "--plot" in line
    assert sorted(os.listdir(tmp_path)) == before


def test_plot_into_a_read_only_directory(data, tmp_path, capsys, monkeypatch):
    _, p, y = data
    np.savez(tmp_path / "p.npz", probs=p, labels=y)
    (tmp_path / "ro").mkdir(mode=0o500)
    if os.access(tmp_path / "ro", os.W_OK):        # root writes anywhere: say it cannot
        monkeypatch.setattr(os, "access", lambda path, mode: False)
    assert "not writable" in fail(capsys, tmp_path / "p.npz", "--plot", tmp_path / "ro/x.png")
    assert not (tmp_path / "ro/x.png").exists()


@pytest.mark.parametrize("dtype, torch_dtype", [("float16", None), (None, "bfloat16")])
def test_low_precision_probabilities_are_accepted(data, tmp_path, capsys, dtype, torch_dtype):
    z, p, y = data
    z = z * 3                                # peaked rows: large rounding of the top entry
    p = softmax(z, axis=1)
    if dtype:
        low = p.astype(dtype)
    else:
        torch = pytest.importorskip("torch")
        low = torch.from_numpy(p).to(getattr(torch, torch_dtype))
    rows = np.asarray(low.float() if torch_dtype else low, dtype=np.float64)
    assert np.abs(rows.sum(axis=1) - 1).max() > 1e-4        # the case at stake
    got = fitontest.evaluate(low, y, evaluator="ece_es15").estimate
    renorm = rows / rows.sum(axis=1, keepdims=True)
    assert got == pytest.approx(fitontest.evaluate(renorm, y, evaluator="ece_es15").estimate,
                                abs=1e-12)
    if dtype:
        np.savez(tmp_path / "p16.npz", probs=low, labels=y)
        assert estimate_of(ok(capsys, tmp_path / "p16.npz", "--evaluator",
                              "ece_es15").out) == pytest.approx(got, abs=1e-6)
    # float64 rows that far off 1 are still refused: neither kind is safe
    with pytest.raises(ValueError, match="cannot tell probabilities from logits.*from_logits"):
        fitontest.evaluate(rows * 0.99, y)


def test_upper_case_parquet(data, tmp_path, capsys):
    pytest.importorskip("pyarrow")
    _, p, y = data
    pd.DataFrame(p, columns=list("abc")).assign(label=y).to_parquet(tmp_path / "P.PARQUET")
    ref = fitontest.evaluate(p, y, evaluator="ece_es15").estimate
    out = ok(capsys, tmp_path / "P.PARQUET", "--evaluator", "ece_es15")
    assert estimate_of(out.out) == pytest.approx(ref, abs=1e-6)


def test_parquet_without_pyarrow_names_it(data, tmp_path, capsys, monkeypatch):
    (tmp_path / "p.parquet").write_bytes(b"PAR1")
    monkeypatch.setitem(sys.modules, "pyarrow", None)       # import pyarrow -> ImportError
    monkeypatch.setitem(sys.modules, "fastparquet", None)
    assert "pyarrow" in fail(capsys, tmp_path / "p.parquet")


def test_csv_with_an_id_column(data, tmp_path, capsys):
    _, p, y = data
    frame = pd.DataFrame(p, columns=["cat", "dog", "car"])
    frame.insert(0, "id", np.arange(len(y)) + 1000)
    frame.assign(label=y).to_csv(tmp_path / "p.csv", index=False)
    ref = fitontest.evaluate(p, y, evaluator="ece_es15").estimate
    out = ok(capsys, tmp_path / "p.csv", "--evaluator", "ece_es15")
    assert estimate_of(out.out) == pytest.approx(ref, abs=1e-6)
    frame.assign(note="x", label=y).to_csv(tmp_path / "text.csv", index=False)
    assert "['note'] are not numeric" in fail(capsys, tmp_path / "text.csv")


def test_one_column_binary_csv(data, tmp_path, capsys):
    _, p, y = data
    p1, y1 = p[:, 1] / (p[:, 0] + p[:, 1]), (y == 1).astype(int)
    pd.DataFrame({"p1": p1, "label": y1}).to_csv(tmp_path / "b.csv", index=False)
    np.save(tmp_path / "b.npy", p1)
    np.save(tmp_path / "y.npy", y1)
    from_csv = estimate_of(ok(capsys, tmp_path / "b.csv", "--evaluator", "ece_es15").out)
    from_npy = estimate_of(ok(capsys, tmp_path / "b.npy", "--labels", tmp_path / "y.npy",
                              "--evaluator", "ece_es15").out)
    assert from_csv == pytest.approx(from_npy, abs=1e-12)


def test_unknown_evaluator_suggests_close_names(data, tmp_path, capsys):
    _, p, y = data
    with pytest.raises(ValueError, match=r"did you mean 'ece_es15'"):
        fitontest.evaluate(p, y, evaluator="ece_es16")
    with pytest.raises(KeyError):                  # still a failed look-up
        fitontest.families.get("ece_es16")
    np.savez(tmp_path / "p.npz", probs=p, labels=y)
    assert "did you mean 'smece'" in fail(capsys, tmp_path / "p.npz", "--evaluator", "smece2")


def test_a_multiclass_calibrator_is_not_an_evaluator(data, tmp_path, capsys):
    _, p, y = data
    with pytest.raises(ValueError, match="'temps' is a multi-class calibrator"):
        fitontest.evaluate(p, y, evaluator="temps")
    np.savez(tmp_path / "p.npz", probs=p, labels=y)
    line = fail(capsys, tmp_path / "p.npz", "--evaluator", "temps")
    assert "multi-class calibrator" in line and "evaluators are" in line


def test_no_traceback_reaches_the_shell(tmp_path):
    (tmp_path / "r.npz").write_bytes(b"garbage" * 100)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    out = subprocess.run([sys.executable, "-m", "fitontest_cli", "evaluate",
                          str(tmp_path / "r.npz")], capture_output=True, text=True, env=env)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr


# --- array names of shared prediction files (issue 34) --------------------------

@pytest.mark.parametrize("labels", ["labels", "label", "y", "y_true", "target", "targets",
                                    "ground_truth", "GROUND_TRUTH"])
@pytest.mark.parametrize("preds", ["probs", "probabilities", "predictions", "logits", "scores"])
def test_common_array_names_are_recognised(data, tmp_path, capsys, preds, labels):
    z, p, y = data
    held = z if preds == "logits" else p
    np.savez(tmp_path / "f.npz", **{preds: held, labels: y})
    out = ok(capsys, tmp_path / "f.npz", "--evaluator", "ece_es15")
    want = fitontest.evaluate(p, y, evaluator="ece_es15").estimate
    assert estimate_of(out.out) == pytest.approx(want, abs=1e-6)
    said = [ln for ln in out.err.splitlines() if ln.startswith("fitontest evaluate: read ")]
    if preds in ("probs", "logits") and labels == "labels":
        assert out.err == ""                      # the documented names: nothing to say
    else:
        assert len(said) == 1 and f"{preds!r} as " in said[0], out.err


def test_predictions_or_scores_holding_logits_are_read_as_logits(data, tmp_path, capsys):
    z, p, y = data
    np.savez(tmp_path / "s.npz", scores=z, ground_truth=y)
    out = ok(capsys, tmp_path / "s.npz", "--evaluator", "ece_es15")
    assert estimate_of(out.out) == pytest.approx(
        fitontest.evaluate(p, y, evaluator="ece_es15").estimate, abs=1e-6)
    assert ("read 'scores' as logits (negative entries: probabilities never are) and "
            "'ground_truth' as labels") in out.err


def test_two_label_or_prediction_candidates_are_listed(data, tmp_path, capsys):
    _, p, y = data
    np.savez(tmp_path / "two.npz", predictions=p, y=y, ground_truth=y)
    line = fail(capsys, tmp_path / "two.npz")
    assert "2 arrays could be the labels: 'y', 'ground_truth'" in line and "--labels-key" in line
    np.savez(tmp_path / "twop.npz", probs=p, scores=p, labels=y)
    line = fail(capsys, tmp_path / "twop.npz")
    assert "'probs', 'scores'" in line and "--key" in line
    # naming one settles it
    ok(capsys, tmp_path / "two.npz", "--labels-key", "y", "--evaluator", "ece_es15")
    table = pd.DataFrame(p, columns=[f"p{k}" for k in range(3)]).assign(y=y, target=y)
    table.to_csv(tmp_path / "t.csv", index=False)
    assert "'y', 'target'" in fail(capsys, tmp_path / "t.csv")
