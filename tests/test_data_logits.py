"""Logit files as a data source: both layouts, every malformed case, model discovery."""
import pickle

import numpy as np
import pytest

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
    ({"logits_val": np.full((40, 5), np.nan)}, r"val logits contain NaN or infinity"),
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
    with pytest.raises(ConfigError, match=r"evaluation.sizes.*60 test points"):
        check_config(_real_config(tmp_path, evaluation={
            "calibrators": ["temps"], "sizes": [100], "seeds": [0], "evaluators": []}))
    _write_npz(tmp_path / "broken.npz", d, logits_test=np.full((60, 5), np.inf))
    with pytest.raises(ConfigError, match=r"'logits'.*broken\.npz: test logits contain NaN"):
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
