"""CIFAR-5m loader on small generated part files (both names, both zip modes)."""
import zipfile

import numpy as np
import pytest

from fitontest.data import cifar5m as C
from fitontest.data.sources import ImageSource, check_source, open_source

SIZES = [7, 5, 9, 3, 6, 4]


def write_parts(d, compressed=False, naming="part{i}.npz", sizes=SIZES, seed=0, skip=()):
    rng = np.random.default_rng(seed)
    Xs, Ys = [], []
    save = np.savez_compressed if compressed else np.savez
    for i, n in enumerate(sizes):
        X = rng.integers(0, 256, (n, 32, 32, 3), dtype=np.uint8)
        Y = rng.integers(0, 10, n)
        Xs.append(X)
        Ys.append(Y)
        if i not in skip:
            save(d / naming.format(i=i), X=X, Y=Y)
    return np.concatenate(Xs), np.concatenate(Ys)


@pytest.mark.parametrize("compressed", [False, True])
@pytest.mark.parametrize("naming", C.PART_NAMES)
def test_load_matches_concatenated_parts(tmp_path, compressed, naming):
    X_all, Y_all = write_parts(tmp_path, compressed, naming)
    s = C.Cifar5mSource(tmp_path, rows_per_read=2)
    assert isinstance(s, ImageSource) and not s.has_posterior
    assert s.n_images == sum(SIZES) and list(s.part_sizes) == SIZES
    idx = np.random.default_rng(3).integers(0, s.n_images, 60)
    idx[:4] = [s.n_images - 1, 0, 0, 7]        # ends, a repeat, a part boundary
    X, y = s.load(idx)
    assert X.dtype == np.uint8 and X.shape == (60, 32, 32, 3) and y.dtype == np.int64
    np.testing.assert_array_equal(X, X_all[idx])
    np.testing.assert_array_equal(y, Y_all[idx])
    np.testing.assert_array_equal(s.labels(idx), Y_all[idx])
    # streaming in chunks: bounded size, positions cover every entry once
    seen = np.zeros(idx.size, int)
    for Xc, yc, pos in s.iter_chunks(idx, chunk_size=8):
        assert 0 < len(Xc) <= 8 and len(Xc) == len(yc) == len(pos)
        np.testing.assert_array_equal(Xc, X_all[idx[pos]])
        np.testing.assert_array_equal(yc, Y_all[idx[pos]])
        seen[pos] += 1
    assert np.all(seen == 1)
    with pytest.raises(NotImplementedError):
        s.posterior(idx)
    with pytest.raises(IndexError):
        s.load([s.n_images])


def test_uncompressed_parts_are_memory_mapped(tmp_path):
    write_parts(tmp_path)
    heads = C.read_npz_headers(tmp_path / "part0.npz")
    assert not heads["X"].compressed and heads["X"].data_offset is not None
    s = C.Cifar5mSource(tmp_path)
    s.load([0, 1])
    assert isinstance(s._memmaps[(0, "X")], np.memmap)
    comp = tmp_path / "c"
    comp.mkdir()
    write_parts(comp, compressed=True)
    assert C.read_npz_headers(comp / "part0.npz")["X"].compressed


def test_mixed_naming_and_config_entry_points(tmp_path):
    X_all, _ = write_parts(tmp_path, naming="part{i}.npz", skip=(2,))
    write_parts(tmp_path, naming="cifar5m_part{i}.npz", skip=(0, 1, 3, 4, 5))
    cfg = {"data_source": "cifar5m", "cifar5m_dir": str(tmp_path),
           "split": {"n_train": 1, "n_val": 1, "n_holdout": 1, "seed": 0}}
    check_source(cfg)
    s = open_source(cfg)
    assert isinstance(s, C.Cifar5mSource) and s.n_images == sum(SIZES)
    np.testing.assert_array_equal(s.load(np.arange(s.n_images))[0], X_all)


def test_missing_directory_and_part(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        check_source({"data_source": "cifar5m", "cifar5m_dir": str(tmp_path / "nope")})
    with pytest.raises(ValueError, match="cifar5m_dir is not set"):
        check_source({"data_source": "cifar5m", "cifar5m_dir": None})
    write_parts(tmp_path, skip=(3,))
    with pytest.raises(ValueError, match=r"part 3 not found.*part3\.npz or cifar5m_part3\.npz"):
        check_source({"data_source": "cifar5m", "cifar5m_dir": str(tmp_path)})


def _overwrite(d, i, **arrays):
    np.savez(d / f"part{i}.npz", **arrays)


def test_malformed_parts_name_the_file_and_expectation(tmp_path):
    write_parts(tmp_path)
    X = np.zeros((4, 32, 32, 3), np.uint8)
    Y = np.zeros(4, np.int64)
    cases = [
        (dict(X=X), r"part1\.npz: missing key\(s\) \['Y'\]"),
        (dict(images=X, Y=Y), r"part1\.npz: missing key\(s\) \['X'\]"),
        (dict(X=X.astype(np.float32), Y=Y), r"part1\.npz: X has dtype float32"),
        (dict(X=np.zeros((4, 3, 32, 32), np.uint8), Y=Y), r"part1\.npz: X has shape \(4, 3, 32, 32\)"),
        (dict(X=X, Y=Y.astype(np.float64)), r"part1\.npz: Y has dtype float64"),
        (dict(X=X, Y=np.zeros(5, np.int64)), r"part1\.npz: Y has shape \(5,\) but X has 4"),
    ]
    for arrays, pattern in cases:
        _overwrite(tmp_path, 1, **arrays)
        with pytest.raises(ValueError, match=pattern) as err:
            check_source({"data_source": "cifar5m", "cifar5m_dir": str(tmp_path)})
        assert "expected keys X (uint8, N×32×32×3) and Y" in str(err.value)
    (tmp_path / "part1.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match=r"part1\.npz: not a readable \.npz"):
        C.Cifar5mSource(tmp_path)


def test_labels_out_of_range_fail_on_load(tmp_path):
    write_parts(tmp_path)
    _overwrite(tmp_path, 0, X=np.zeros((7, 32, 32, 3), np.uint8), Y=np.full(7, 10))
    s = C.Cifar5mSource(tmp_path)          # headers are fine
    with pytest.raises(ValueError, match=r"part0\.npz: Y has labels outside 0\.\.9"):
        s.load([0])


def test_truncated_compressed_member(tmp_path):
    write_parts(tmp_path, compressed=True)
    # rewrite part 2 with an X member whose .npy header promises more rows than stored
    X = np.zeros((9, 32, 32, 3), np.uint8)
    with zipfile.ZipFile(tmp_path / "part2.npz", "w", zipfile.ZIP_DEFLATED) as zf:
        from numpy.lib import format as npformat
        import io
        buf = io.BytesIO()
        npformat.write_array(buf, X)
        zf.writestr("X.npy", buf.getvalue()[:-5000])
        buf = io.BytesIO()
        npformat.write_array(buf, np.zeros(9, np.int64))
        zf.writestr("Y.npy", buf.getvalue())
    s = C.Cifar5mSource(tmp_path, rows_per_read=4)
    with pytest.raises(ValueError, match=r"part2\.npz: X is truncated"):
        s.load([7 + 5 + 8])
