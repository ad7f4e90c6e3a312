"""Logit files as a data source: both layouts, every malformed case, model discovery."""
import pickle

import numpy as np
import pytest
from scipy.special import log_softmax, softmax

from fitontest.data import logits as L
from fitontest.data import sources
from fitontest.study.config import ConfigError, check_config


def _data(n_val=40, n_test=60, k=5, seed=0):
    return L.simulate(n_val, n_test, k, seed=seed)


def _same(a, b):
    for part in ("val", "test"):
        np.testing.assert_allclose(a[part][0], b[part][0], rtol=1e-6)
        np.testing.assert_array_equal(a[part][1], b[part][1])


def test_pickle_layout_with_column_labels(tmp_path):
    d = _data()
    path = tmp_path / "probs_resnet110_c10_logits.p"
    col = {p: (z, y.reshape(-1, 1)) for p, (z, y) in d.items()}   # labels (n, 1)
    path.write_bytes(pickle.dumps(((col["val"]), (col["test"]))))
    got = L.read_logits(path)
    _same(got, d)
    assert got["val"][1].shape == (40,) and got["test"][0].dtype == np.float64


def test_npz_layout_default_and_custom_keys(tmp_path):
    d = _data()
    L.write_npz(tmp_path / "a.npz", d)
    _same(L.read_logits(tmp_path / "a.npz"), d)
    np.savez(tmp_path / "b.npz", zv=d["val"][0], yv=d["val"][1], zt=d["test"][0], yt=d["test"][1])
    keys = {"logits_val": "zv", "labels_val": "yv", "logits_test": "zt", "labels_test": "yt"}
    _same(L.read_logits(tmp_path / "b.npz", keys), d)


def test_one_pair_file_is_split_by_the_config(tmp_path):
    z, y = _data()["test"]
    np.savez(tmp_path / "one.npz", logits=z, labels=y)
    with pytest.raises(ValueError, match=r"one.npz.*logits.split"):
        L.read_logits(tmp_path / "one.npz")
    got = L.read_logits(tmp_path / "one.npz", split={"n_val": 20, "seed": 3})
    assert len(got["val"][1]) == 20 and len(got["test"][1]) == 40
    # a partition of the rows: together they are the file's rows, each once
    both = np.concatenate([got["val"][0], got["test"][0]])
    assert sorted(map(tuple, both.round(5))) == sorted(map(tuple, z.astype(float).round(5)))
    again = L.read_logits(tmp_path / "one.npz", split={"n_val": 20, "seed": 3})
    _same(got, again)


def _write_npz(path, d, **change):
    arrays = {"logits_val": d["val"][0], "labels_val": d["val"][1],
              "logits_test": d["test"][0], "labels_test": d["test"][1]}
    arrays.update(change)
    np.savez(path, **{k: v for k, v in arrays.items() if v is not None})
    return path


@pytest.mark.parametrize("change, problem", [
    ({"labels_test": None}, r"missing keys \['labels_test'\]"),
    ({"labels_val": np.zeros(39, dtype=np.int64)}, r"val shape mismatch: 40 logit rows but 39"),
    ({"logits_test": np.zeros((60, 4)), "labels_test": np.zeros(60, dtype=np.int64)},
     r"shape mismatch: validation logits have 5 classes, test"),
    ({"logits_val": np.full((40, 5), np.nan)},
     r"contain NaN or infinity in 40 of 100 rows: val row 0, val row 1, .* and 32 more"),
    ({"labels_test": np.full(60, 5)}, r"test labels out of range 0..4"),
    ({"labels_test": np.full(60, -1)}, r"test labels out of range"),
    ({"labels_val": np.full(40, 0.5)}, r"val labels must be integer class indices"),
    ({"logits_val": np.zeros(40)}, r"val logits must have shape \(n, K\)"),
    ({"labels_val": np.zeros((40, 2), dtype=np.int64)}, r"labels must have shape \(n,\) or \(n, 1\)"),
])
def test_each_malformed_npz_names_the_file_and_the_problem(tmp_path, change, problem):
    path = _write_npz(tmp_path / "bad_model.npz", _data(), **change)
    with pytest.raises(ValueError, match=r"bad_model\.npz.*" + problem):
        L.read_logits(path)


def test_malformed_pickles_and_unreadable_files(tmp_path):
    (tmp_path / "junk.p").write_bytes(b"not a pickle")
    with pytest.raises(ValueError, match=r"junk\.p: cannot read as a pickle"):
        L.read_logits(tmp_path / "junk.p")
    (tmp_path / "three.pkl").write_bytes(pickle.dumps((1, 2, 3)))
    with pytest.raises(ValueError, match=r"three\.pkl: the pickle must hold"):
        L.read_logits(tmp_path / "three.pkl")
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match=r"junk\.npz: cannot read as \.npz"):
        L.read_logits(tmp_path / "junk.npz")
    d = _data()
    bad = (d["val"], (d["test"][0], d["test"][1] + 10))
    (tmp_path / "range.p").write_bytes(pickle.dumps(bad))
    with pytest.raises(ValueError, match=r"range\.p: test labels out of range"):
        L.read_logits(tmp_path / "range.p")


def test_models_of_a_directory_and_their_names(tmp_path):
    d = _data()
    L.write_pickle(tmp_path / "probs_resnet-110_c10.p", d)
    L.write_npz(tmp_path / "dense.npz", d)
    (tmp_path / "notes.txt").write_text("ignored")
    cfg = {"data_source": "logits", "logits": {"dir": str(tmp_path)}}
    assert sources.model_names(cfg) == ["dense", "probs_resnet_110_c10"]
    assert sources.kind(cfg) == "logits" and not sources.has_posterior(cfg)
    assert sources.num_classes(cfg) == 5
    L.write_npz(tmp_path / "dense.pkl", d)   # same stem, another suffix
    with pytest.raises(ValueError, match="both give the model name 'dense'"):
        sources.model_names(cfg)
    cfg["logits"]["files"] = {"r110": "probs_resnet-110_c10.p"}
    assert sources.model_names(cfg) == ["r110"]
    with pytest.raises(ValueError, match="logits.dir"):
        sources.model_names({"data_source": "logits", "logits": {"dir": str(tmp_path / "no")}})


def _real_config(directory, **over):
    cfg = {"exp": "r", "data_source": "logits", "logits": {"dir": str(directory)},
           "tasks": {"c1": 1, "confidence": None}, "truth": ["isotonic"],
           "calibrators": {"multiclass": ["none", "temps"], "binary": []},
           "evaluation": {"calibrators": ["temps"], "sizes": [20, 60], "seeds": [0],
                          "evaluators": ["ece_es15"], "external_evaluators": []},
           "family_params": {}, "synthetic": {"enabled": False}}
    cfg.update(over)
    return cfg


def test_config_check_reads_every_file_before_any_job(tmp_path):
    d = _data()
    L.write_npz(tmp_path / "good.npz", d)
    check_config(_real_config(tmp_path))
    with pytest.raises(ConfigError, match=r"tasks.c9.*0..4"):
        check_config(_real_config(tmp_path, tasks={"c9": 9}))
    # a size above the test set is capped at it (and said), not an error
    big = _real_config(tmp_path, evaluation={"calibrators": ["temps"], "sizes": [20, 100, 200],
                                             "seeds": [0], "evaluators": []})
    check_config(big)
    facts = L.study_facts(big)
    assert facts["sizes"] == [20, 60] and facts["n_test"] == 60
    assert any("capped at the 60 test points" in n for n in facts["notes"])
    assert L.study_facts(_real_config(tmp_path))["notes"] == []
    _write_npz(tmp_path / "broken.npz", d, logits_test=np.full((60, 5), np.inf))
    with pytest.raises(ConfigError, match=r"'logits'.*broken\.npz contain NaN or infinity in "
                                          r"60 of 100 rows: test row 0, test row 1"):
        check_config(_real_config(tmp_path))


def test_real_subsets_are_the_papers_disjoint_slices():
    sub = L.real_subsets(10_000, [1000, 3000, 10_000], seed=0)
    counts = {s: sum(1 for (size, _) in sub if size == s) for s in (1000, 3000, 10_000)}
    assert counts == {1000: 10, 3000: 3, 10_000: 1}
    for s in (1000, 3000):
        allpos = np.concatenate([sub[(s, j)] for j in range(counts[s])])
        assert len(np.unique(allpos)) == len(allpos) == s * counts[s]
    assert np.array_equal(sub[(10_000, 0)], np.arange(10_000))
    with pytest.raises(ValueError, match="must lie in"):
        L.real_subsets(500, [1000])


def test_real_sizes_cap_at_the_test_set():
    assert L.real_sizes([1000, 3000, 10000], 10000) == [1000, 3000, 10000]
    assert L.real_sizes([1000, 3000, 10000], 5000) == [1000, 3000, 5000]
    assert L.real_sizes([3000, 1000, 10000], 2000) == [1000, 2000]
    assert L.real_sizes([1000], 500) == [500]


# --- probabilities in a logit file (issue 34) ---------------------------------

def _as_probs(d, dtype=np.float32):
    return {p: (softmax(z.astype(np.float64), axis=1).astype(dtype), y) for p, (z, y) in d.items()}


def _as_logprobs(d):
    return {p: (log_softmax(z.astype(np.float64), axis=1), y) for p, (z, y) in d.items()}


@pytest.mark.parametrize("layout", ["npz", "pickle"])
def test_auto_reads_probabilities_as_their_logs(tmp_path, layout):
    d = _data(k=10)
    write = L.write_npz if layout == "npz" else L.write_pickle
    write(tmp_path / f"p.{layout}", _as_probs(d, np.float32))
    write(tmp_path / f"z.{layout}", d)
    got = L.load(tmp_path / f"p.{layout}")
    assert got.kind == "probabilities" and "read as probabilities" in got.notes[0]
    ref = _as_logprobs(d)
    for part in ("val", "test"):
        # the logs of float32 probabilities: the log-probabilities to float32 rounding
        np.testing.assert_allclose(got.data[part][0], ref[part][0], rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(got.data[part][1], d[part][1])
        # softmax gives the probabilities back
        np.testing.assert_allclose(softmax(got.data[part][0], axis=1),
                                   softmax(d[part][0].astype(float), axis=1), atol=1e-6)
    plain = L.load(tmp_path / f"z.{layout}")
    assert plain.kind == "logits" and plain.notes == []
    _same(plain.data, d)
    # said kinds: probabilities on probabilities is the same; logits on them stops
    np.testing.assert_array_equal(L.read_logits(tmp_path / f"p.{layout}", kind="probabilities")
                                  ["test"][0], got.data["test"][0])
    with pytest.raises(ValueError, match=rf"p\.{layout}: declared logits \(logits.kind: "
                                         r"logits\) but every row is a probability vector.*set "
                                         r"logits.kind: probabilities"):
        L.read_logits(tmp_path / f"p.{layout}", kind="logits")
    with pytest.raises(ValueError, match=rf"z\.{layout}: declared probabilities \(logits.kind: "
                                         r"probabilities\) but \w+ row \d+ has a negative "
                                         r"entry"):
        L.read_logits(tmp_path / f"z.{layout}", kind="probabilities")


def test_zero_probabilities_are_clipped_and_mixed_files_stop(tmp_path):
    d = _as_probs(_data(k=5), np.float64)
    z, y = d["test"]
    z[0] = [1.0, 0.0, 0.0, 0.0, 0.0]
    L.write_npz(tmp_path / "p.npz", d)
    got = L.load(tmp_path / "p.npz")
    assert got.kind == "probabilities" and "4 zeros clipped" in got.notes[0]
    assert np.isfinite(got.data["test"][0]).all()
    assert softmax(got.data["test"][0][0])[0] == pytest.approx(1.0)
    # most rows probabilities, one not: a corrupted row, named, never logits
    z[3] = [0.5, 0.6, 0.0, 0.0, 0.0]
    L.write_npz(tmp_path / "mixed.npz", d)
    with pytest.raises(ValueError, match=r"mixed\.npz: 1 of \d+ rows are not probability "
                                         r"vectors.*other \d+ are: test row 3; test row 3 is.*"
                                         r"logits.kind: probabilities to renormalise"):
        L.read_logits(tmp_path / "mixed.npz")
    z[3] = [1.2, -0.2, 0.0, 0.0, 0.0]                  # sums to 1, one entry negative
    L.write_npz(tmp_path / "mixed.npz", d)
    with pytest.raises(ValueError, match=r"1 of \d+ rows are not probability vectors.*: "
                                         r"test row 3; .*drop these rows \(they are not "
                                         r"logits: the others are probabilities\)$"):
        L.read_logits(tmp_path / "mixed.npz")
    # float16 probabilities: rows off 1 by their rounding still count
    h = _as_probs(_data(k=10), np.float16)
    L.write_npz(tmp_path / "h.npz", h)
    assert L.load(tmp_path / "h.npz").kind == "probabilities"


def test_kind_logits_on_probabilities_stops_before_any_job(tmp_path):
    L.write_npz(tmp_path / "softmax_net.npz", _as_probs(_data()))
    check_config(_real_config(tmp_path))              # auto: fine
    cfg = _real_config(tmp_path, logits={"dir": str(tmp_path), "kind": "logits"})
    with pytest.raises(ConfigError) as err:
        check_config(cfg)
    line = str(err.value)
    assert "\n" not in line
    assert "softmax_net.npz" in line and "set logits.kind: probabilities (or auto)" in line
    facts = L.study_facts(_real_config(tmp_path))
    assert any(n.startswith("softmax_net.npz: read as probabilities") for n in facts["notes"])


# --- array names of a one-pair npz (issue 34) ----------------------------------

@pytest.mark.parametrize("labels", ["labels", "y", "y_true", "target", "targets",
                                    "ground_truth", "Label"])
@pytest.mark.parametrize("preds", ["probs", "probabilities", "predictions", "logits", "scores"])
def test_common_array_names_are_found(tmp_path, preds, labels):
    z, y = _data(k=4)["test"]
    np.savez(tmp_path / "m.npz", **{preds: z, labels: y})
    f = L.load(tmp_path / "m.npz", split={"n_val": 0.5, "seed": 1})
    assert len(f.data["val"][1]) == 30 and len(f.data["test"][1]) == 30
    both = np.sort(np.concatenate([f.data["val"][1], f.data["test"][1]]))
    np.testing.assert_array_equal(both, np.sort(y))
    guessed = [n for n in f.notes if n.startswith("arrays guessed")]
    if (preds, labels) == ("logits", "labels"):
        assert guessed == []
    else:
        assert len(guessed) == 1 and all(repr(k) in guessed[0] for k in (preds, labels)
                                         if k not in ("logits", "labels"))


def test_two_candidate_names_are_listed(tmp_path):
    z, y = _data()["test"]
    np.savez(tmp_path / "two.npz", predictions=z, y=y, ground_truth=y)
    with pytest.raises(ValueError, match=r"two\.npz: 2 arrays could be the labels: 'y', "
                                         r"'ground_truth'; name one with logits.keys.labels"):
        L.read_logits(tmp_path / "two.npz", split={"n_val": 20})
    np.savez(tmp_path / "preds.npz", probs=z, scores=z, labels=y)
    with pytest.raises(ValueError, match=r"'probs', 'scores'; name one with logits.keys.logits"):
        L.read_logits(tmp_path / "preds.npz", split={"n_val": 20})
    # a name in logits.keys settles it
    got = L.read_logits(tmp_path / "two.npz", keys={"labels": "y"}, split={"n_val": 20})
    assert len(got["test"][1]) == 40


def test_split_fraction_and_bad_split(tmp_path):
    z, y = _data()["test"]
    np.savez(tmp_path / "one.npz", logits=z, labels=y)
    assert len(L.read_logits(tmp_path / "one.npz", split={"n_val": 0.25})["val"][1]) == 15
    for bad in (1.5, 60, 0.001):
        with pytest.raises(ValueError, match=r"one\.npz: logits.split.n_val"):
            L.read_logits(tmp_path / "one.npz", split={"n_val": bad})
