"""Train/val/hold-out splits and the test subsets of docs/methods/06-truth-and-scores.md §6."""
import json

import numpy as np
import pytest

from fitontest.data import split as S
from fitontest.data.sources import open_source


@pytest.mark.parametrize("contiguous", [False, True])
def test_make_split_disjoint_sizes_deterministic(contiguous):
    sp = S.make_split(10_000, 500, 200, 3000, seed=4, contiguous=contiguous)
    assert set(sp) == {"train", "val", "holdout"}
    assert [sp[k].size for k in ("train", "val", "holdout")] == [500, 200, 3000]
    allidx = np.concatenate(list(sp.values()))
    assert np.unique(allidx).size == allidx.size
    assert allidx.min() >= 0 and allidx.max() < 10_000
    for k in sp:
        assert sp[k].dtype == np.int64 and np.all(np.diff(sp[k]) > 0)
    again = S.make_split(10_000, 500, 200, 3000, seed=4, contiguous=contiguous)
    for k in sp:
        np.testing.assert_array_equal(sp[k], again[k])


def test_permutation_split_is_seeded_and_random():
    a = S.make_split(10_000, 500, 200, 3000, seed=4)
    b = S.make_split(10_000, 500, 200, 3000, seed=5)
    assert not np.array_equal(a["train"], b["train"])
    assert a["holdout"].max() > 9000 and a["train"].min() < 1000   # spread over the range
    perm = np.random.default_rng([4, 0]).permutation(10_000)
    np.testing.assert_array_equal(a["train"], np.sort(perm[:500]))
    np.testing.assert_array_equal(a["holdout"], np.sort(perm[700:3700]))


def test_contiguous_split_is_ranges():
    sp = S.make_split(100, 10, 5, 85, seed=None, contiguous=True)
    np.testing.assert_array_equal(sp["train"], np.arange(10))
    np.testing.assert_array_equal(sp["val"], np.arange(10, 15))
    np.testing.assert_array_equal(sp["holdout"], np.arange(15, 100))


def test_split_too_large_names_the_key():
    with pytest.raises(ValueError, match=r"split\.n_holdout does not fit.*1100 exceeds the 1000"):
        S.make_split(1000, 50, 50, 1000, seed=0)
    with pytest.raises(ValueError, match=r"split\.n_train does not fit"):
        S.make_split(1000, 2000, 0, 0, seed=0)
    with pytest.raises(ValueError, match="n_val must be non-negative"):
        S.make_split(1000, 1, -1, 1, seed=0)


def test_split_for_source_procedural_uses_ranges():
    cfg = {"data_source": "procedural",
           "split": {"n_train": 30, "n_val": 20, "n_holdout": 50, "seed": 1}}
    sp = S.split_for_source(cfg, open_source(cfg))
    np.testing.assert_array_equal(sp["holdout"], np.arange(50, 100))


def test_write_read_roundtrip_atomic(tmp_path):
    sp = S.make_split(5000, 100, 50, 1000, seed=2)
    sp["val"] = np.arange(4000, 4050)        # a range: stored compactly
    path = tmp_path / "data" / "split.json"
    S.write_split(path, sp, {"data_source": "cifar5m", "seed": 2})
    back = S.read_split(path)
    for k in ("train", "val", "holdout"):
        np.testing.assert_array_equal(back[k], sp[k])
        assert back[k].dtype == np.int64
    assert back["meta"] == {"data_source": "cifar5m", "seed": 2}
    doc = json.loads(path.read_text())
    assert doc["val"] == {"start": 4000, "stop": 4050} and doc["sizes"]["holdout"] == 1000
    assert [p.name for p in path.parent.iterdir()] == ["split.json"]   # no temp file left
    S.write_split(path, S.make_split(10, 1, 1, 1, seed=0), {})       # overwrite in place
    assert S.read_split(path)["train"].size == 1
    with pytest.raises(ValueError, match="lacks part"):
        S.write_split(path, {"train": np.arange(3)}, {})


def test_subset_indices_consecutive_disjoint_slices():
    subs = S.subset_indices(20_000, [10_000, 1000, 3000], seeds=[0, 1])
    assert set(subs) == {(s, r) for s in (1000, 3000, 10_000) for r in (0, 1)}
    for r in (0, 1):
        perm = np.random.default_rng([r, 1234]).permutation(20_000)
        np.testing.assert_array_equal(subs[(1000, r)], perm[:1000])
        np.testing.assert_array_equal(subs[(3000, r)], perm[1000:4000])
        np.testing.assert_array_equal(subs[(10_000, r)], perm[4000:14_000])
        together = np.concatenate([subs[(s, r)] for s in (1000, 3000, 10_000)])
        assert np.unique(together).size == 14_000
    assert not np.array_equal(subs[(1000, 0)], subs[(1000, 1)])
    # the same for any order of the sizes
    again = S.subset_indices(20_000, [1000, 3000, 10_000], seeds=[1])
    np.testing.assert_array_equal(again[(3000, 1)], subs[(3000, 1)])


def test_subset_indices_errors_name_the_sizes():
    with pytest.raises(ValueError, match=r"sizes \[1000, 3000, 10000\] sum to 14000.*13999"):
        S.subset_indices(13_999, [1000, 3000, 10_000], seeds=[0])
    with pytest.raises(ValueError, match="distinct"):
        S.subset_indices(10_000, [1000, 1000], seeds=[0])
    with pytest.raises(ValueError, match="positive"):
        S.subset_indices(10_000, [0], seeds=[0])


UNITS = [("resnet", "car"), ("resnet", "cat"), ("densenet", "car")]


def test_independent_design_draws_per_network_and_task():
    """Two (network, task) pairs of one seed get different subsets; each is the
    documented permutation of its names' CRC-32 seeds, so the calibrators of one
    (network, task) — which read the same file — share theirs."""
    import zlib

    subs = S.design_subsets("independent", 20_000, [1000, 3000], [0, 1], UNITS)
    a, b, c = (subs[u] for u in UNITS)
    for key in a:
        assert not np.array_equal(a[key], b[key]) and not np.array_equal(a[key], c[key])
    perm = np.random.default_rng([1, 1234, zlib.crc32(b"resnet"), zlib.crc32(b"cat")]) \
        .permutation(20_000)
    np.testing.assert_array_equal(b[(1000, 1)], perm[:1000])
    np.testing.assert_array_equal(b[(3000, 1)], perm[1000:4000])
    # adding a network leaves the others' subsets as they were
    more = S.design_subsets("independent", 20_000, [1000, 3000], [0, 1],
                            UNITS + [("wrn", "car")])
    np.testing.assert_array_equal(more[("resnet", "cat")][(3000, 0)], b[(3000, 0)])
    # overlap between two units' subsets is what independent draws give (~ n^2 / N)
    shared = np.intersect1d(a[(3000, 0)], b[(3000, 0)]).size
    assert 200 < shared < 700


def test_paper_design_reproduces_the_shared_subsets_byte_for_byte(tmp_path):
    """variant paper: every (network, task) gets the one permutation per seed of
    the authors' design (docs/methods/06-truth-and-scores.md §6.2), written as the same bytes (every
    member of the npz; the zip headers carry the time of writing)."""
    import zipfile

    from fitontest.core.io import save_subsets

    def members(path):
        with zipfile.ZipFile(path) as z:
            return {n: z.read(n) for n in z.namelist()}

    subs = S.design_subsets("paper", 20_000, [1000, 3000], [0, 1, 2], UNITS)
    old = S.subset_indices(20_000, [1000, 3000], [0, 1, 2])
    perm = np.random.default_rng([2, 1234]).permutation(20_000)
    np.testing.assert_array_equal(old[(3000, 2)], perm[1000:4000])
    save_subsets(tmp_path / "old.npz", old)
    for i, u in enumerate(UNITS):
        save_subsets(tmp_path / f"{i}.npz", subs[u])
        assert members(tmp_path / f"{i}.npz") == members(tmp_path / "old.npz")
    with pytest.raises(ValueError, match="unknown test-subset design 'shared'"):
        S.design_subsets("shared", 20_000, [1000], [0], UNITS)
