"""The procedural pseudo-real image source: format, determinism, known posterior."""
import numpy as np
import pytest

from fitontest.data import procedural as P
from fitontest.data.sources import ImageSource, check_source, open_source


def small(n=3000, **kw):
    return P.ProceduralSource(n, **{"block_size": 500, **kw})


def test_shape_dtype_and_interface():
    s = small()
    assert isinstance(s, ImageSource)
    assert s.num_classes == 10 and s.has_posterior and s.n_images == 3000
    X, y = s.load(np.arange(40))
    assert X.shape == (40, 32, 32, 3) and X.dtype == np.uint8 and X.flags.c_contiguous
    assert y.shape == (40,) and y.dtype == np.int64 and y.min() >= 0 and y.max() <= 9
    assert X.std() > 20  # not blank


def test_block_regenerated_alone_equals_block_in_larger_run():
    big = small()
    X_all, y_all = big.load(np.arange(0, 2000))                  # blocks 0..3 together
    alone = small()                                              # fresh object, block 2 only
    X2, y2 = alone.load(np.arange(1000, 1500))
    np.testing.assert_array_equal(X2, X_all[1000:1500])
    np.testing.assert_array_equal(y2, y_all[1000:1500])
    # the image does not depend on n_images nor on the block cache
    other = small(n=10_000)
    np.testing.assert_array_equal(other.load(np.arange(1000, 1500))[0], X2)


def test_load_any_order_with_repeats_equals_sequential_slicing():
    s = small()
    X_seq, y_seq = s.load(np.arange(3000))
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 3000, 700)
    idx[:5] = [2999, 0, 0, 1501, 2999]
    X, y = small().load(idx)
    np.testing.assert_array_equal(X, X_seq[idx])
    np.testing.assert_array_equal(y, y_seq[idx])
    np.testing.assert_array_equal(s.labels(idx), y_seq[idx])
    # the streaming block iterator gives the same images
    got = np.concatenate([X for _, X, _ in s.iter_blocks(0, 3000)])
    np.testing.assert_array_equal(got, X_seq)


def test_iter_chunks_positions_cover_indices():
    s = small()
    idx = np.random.default_rng(1).permutation(3000)[:1234]
    X_ref, y_ref = s.load(idx)
    seen = np.zeros(idx.size, int)
    for X, y, pos in s.iter_chunks(idx, chunk_size=300):
        assert len(X) <= 300 and len(X) == len(y) == len(pos)
        np.testing.assert_array_equal(X, X_ref[pos])
        np.testing.assert_array_equal(y, y_ref[pos])
        seen[pos] += 1
    assert np.all(seen == 1)


def test_seed_changes_images_and_labels():
    a, b = small(seed=1), small(seed=2)
    assert not np.array_equal(a.load(np.arange(50))[0], b.load(np.arange(50))[0])
    assert not np.array_equal(a.labels(np.arange(500)), b.labels(np.arange(500)))


def test_posterior_rows_are_distributions():
    s = small(n=20_000, block_size=10_000)
    post = s.posterior(np.arange(20_000))
    assert post.shape == (20_000, 10) and post.dtype == np.float64
    assert np.all(post >= 0)
    np.testing.assert_allclose(post.sum(axis=1), 1.0, atol=1e-12)
    mx = post.max(axis=1)
    # a realistic mix of confident and ambiguous images
    assert 0.7 < mx.mean() < 0.9
    assert (mx > 0.9).mean() > 0.2 and (mx < 0.5).mean() > 0.05
    # in any order, with repeats
    idx = np.array([5, 19_999, 5, 0])
    np.testing.assert_array_equal(s.posterior(idx), post[idx])


def test_labels_follow_the_posterior():
    n = 200_000
    s = P.ProceduralSource(n)
    idx = np.arange(n)
    post, y = s.posterior(idx), s.labels(idx)
    onehot = np.eye(10)[y]
    # per class: observed count vs expected sum of probabilities (binomial z)
    z = (onehot.sum(0) - post.sum(0)) / np.sqrt((post * (1 - post)).sum(0))
    assert np.all(np.abs(z) < 4.5), z
    # reliability of the posterior: within bins of P(y = argmax), the frequency matches
    top = post.argmax(1)
    conf = post[idx, top]
    hit = (y == top).astype(float)
    bins = np.minimum((conf * 10).astype(int), 9)
    for b in np.unique(bins):
        m = bins == b
        if m.sum() < 500:
            continue
        var = (conf[m] * (1 - conf[m])).sum()
        zb = (hit[m].sum() - conf[m].sum()) / np.sqrt(var)
        assert abs(zb) < 4.5, (b, zb)


def test_posterior_is_a_function_of_the_visible_latents():
    s = small(n=10_000, block_size=10_000)
    lat = s.block_latents(0)
    post = lat["posterior"]
    pure = lat["m"] == 0
    # unmixed images: the visual class is the mode; confidence grows with clarity
    assert np.all(post[pure].argmax(1) == lat["a"][pure])
    c = lat["clarity"][pure]
    conf = post[pure].max(1)
    assert np.all(np.diff(conf[np.argsort(c)]) >= -1e-12)
    mixed = ~pure
    rows = np.flatnonzero(mixed)
    assert np.all(post[rows, lat["b"][rows]] <= post[rows, lat["a"][rows]] + 1e-12)
    assert np.all(lat["a"][rows] != lat["b"][rows])


def test_bad_settings_and_indices():
    with pytest.raises(ValueError, match="unknown procedural setting"):
        P.ProceduralSource(10, sigma=3)
    with pytest.raises(ValueError, match="mix_prob"):
        P.ProceduralSource(10, mix_prob=1.5)
    s = small(n=100)
    with pytest.raises(IndexError):
        s.load([0, 100])
    with pytest.raises(ValueError):
        s.load(np.zeros((2, 2), int))
    X, y = s.load(np.array([], dtype=np.int64))
    assert X.shape == (0, 32, 32, 3) and y.shape == (0,)


def test_open_and_check_source_from_config():
    cfg = {"data_source": "procedural", "cifar5m_dir": None,
           "procedural": {"seed": 7, "block_size": 1000},
           "split": {"n_train": 100, "n_val": 50, "n_holdout": 1000, "seed": 0}}
    check_source(cfg)
    s = open_source(cfg)
    assert isinstance(s, P.ProceduralSource) and s.n_images == 1150 and s.seed == 7
    assert s.params["beta"] == P.DEFAULTS["beta"]
    cfg_defaults = {k: v for k, v in cfg.items() if k != "procedural"}
    assert open_source(cfg_defaults).seed == P.DEFAULTS["seed"]
    with pytest.raises(ValueError, match="unknown procedural setting"):
        check_source({**cfg, "procedural": {"colour": 1}})
    with pytest.raises(ValueError, match="n_holdout"):
        check_source({**cfg, "split": {"n_train": 1, "n_val": 1}})
    with pytest.raises(ValueError, match="data_source"):
        open_source({**cfg, "data_source": "imagenet"})
