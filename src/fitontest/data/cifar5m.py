"""CIFAR-5m loader (Nakkiran et al. 2021; docs/methods/08-networks.md §8), with bounded memory.

The data set is six files ``part0.npz`` … ``part5.npz`` (also distributed as
``cifar5m_part{i}.npz``; where both names exist, ``part{i}.npz`` is used), each
with arrays ``X`` (uint8, N×32×32×3) and ``Y`` (integer labels 0..9, length
N), N ≈ 1,000,448. Global image index i runs over the parts in order
(part boundaries from the per-part N's).

Memory: the 5M images (≈15 GB) are never held at once.

- **Uncompressed members** (``np.savez``, the published files): the member's
  data offset inside the zip is computed (central directory → local file
  header → ``.npy`` header) and ``X`` / ``Y`` are opened with ``np.memmap``;
  ``load`` reads only the requested rows.
- **Compressed members** (``np.savez_compressed``): ``X`` is decompressed as a
  stream, ``rows_per_read`` rows at a time, in one forward pass per part and
  call, keeping only the requested rows; ``Y`` of a part is read whole.

Labels of a part are read once, range-checked and cached as uint8 (≤ 6 MB
for the whole data set). ``iter_chunks`` walks the requested indices in
increasing order, so one pass over each part serves all its chunks; its memory
is one chunk plus one read window.
"""
from __future__ import annotations

import struct
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np
from numpy.lib import format as npformat

from fitontest.core.validation import check_indices

NUM_PARTS = 6
NUM_CLASSES = 10
IMAGE_SHAPE = (32, 32, 3)
PART_NAMES = ("part{i}.npz", "cifar5m_part{i}.npz")
EXPECTED = ("expected keys X (uint8, N×32×32×3) and Y (integer labels 0..9, length N)")

_LOCAL_HEADER = struct.Struct("<4s5H3L2H")   # zip local file header, 30 bytes
_LOCAL_MAGIC = b"PK\x03\x04"


@dataclass(frozen=True)
class NpyMember:
    """Header facts of one array inside an .npz file."""

    name: str
    dtype: np.dtype
    shape: tuple
    fortran_order: bool
    compressed: bool
    data_offset: int | None   # absolute file offset of the array data (uncompressed only)


def part_path(directory, i: int) -> Path:
    """The existing file of part ``i`` (``part{i}.npz`` first), else ValueError."""
    d = Path(directory)
    cands = [d / pat.format(i=i) for pat in PART_NAMES]
    for c in cands:
        if c.is_file():
            return c
    raise ValueError(f"CIFAR-5m part {i} not found in {d}: expected "
                     f"{' or '.join(c.name for c in cands)} ({EXPECTED})")


def read_npz_headers(path) -> dict[str, NpyMember]:
    """Dtype/shape/offset of every ``.npy`` member, reading headers only."""
    path = Path(path)
    out: dict[str, NpyMember] = {}
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise ValueError(f"{path}: not a readable .npz (zip) file ({exc}); {EXPECTED}") from None
    with zf, open(path, "rb") as raw:
        for info in zf.infolist():
            if not info.filename.endswith(".npy"):
                continue
            key = info.filename[:-4]
            try:
                with zf.open(info) as fh:
                    version = npformat.read_magic(fh)
                    if version == (1, 0):
                        shape, fortran, dtype = npformat.read_array_header_1_0(fh)
                    else:
                        shape, fortran, dtype = npformat.read_array_header_2_0(fh)
                    header_len = fh.tell()
            except (ValueError, OSError, zipfile.BadZipFile) as exc:
                raise ValueError(f"{path}: member {info.filename} has no valid .npy header "
                                 f"({exc}); {EXPECTED}") from None
            compressed = info.compress_type != zipfile.ZIP_STORED
            offset = None
            if not compressed:
                raw.seek(info.header_offset)
                fields = _LOCAL_HEADER.unpack(raw.read(_LOCAL_HEADER.size))
                if fields[0] != _LOCAL_MAGIC:
                    raise ValueError(f"{path}: corrupt zip local header of {info.filename}")
                name_len, extra_len = fields[9], fields[10]
                offset = info.header_offset + _LOCAL_HEADER.size + name_len + extra_len + header_len
            out[key] = NpyMember(key, np.dtype(dtype), tuple(int(s) for s in shape),
                                 bool(fortran), compressed, offset)
    return out


def check_part(path) -> int:
    """Validate the keys, dtypes and shapes of one part file from its headers; return N."""
    heads = read_npz_headers(path)
    missing = [k for k in ("X", "Y") if k not in heads]
    if missing:
        raise ValueError(f"{path}: missing key(s) {missing} (found {sorted(heads)}); {EXPECTED}")
    X, Y = heads["X"], heads["Y"]
    if X.dtype != np.uint8:
        raise ValueError(f"{path}: X has dtype {X.dtype}, {EXPECTED}")
    if len(X.shape) != 4 or X.shape[1:] != IMAGE_SHAPE:
        raise ValueError(f"{path}: X has shape {X.shape}, {EXPECTED}")
    if X.fortran_order:
        raise ValueError(f"{path}: X is stored in Fortran order; re-save it C-ordered; {EXPECTED}")
    if Y.dtype.kind not in "iu":
        raise ValueError(f"{path}: Y has dtype {Y.dtype}, {EXPECTED}")
    if len(Y.shape) != 1 or Y.shape[0] != X.shape[0]:
        raise ValueError(f"{path}: Y has shape {Y.shape} but X has {X.shape[0]} images; {EXPECTED}")
    return X.shape[0]


def check_cifar5m_dir(directory) -> list[int]:
    """Fast pre-flight check of the whole directory (headers only); the per-part N."""
    if directory is None or str(directory) == "":
        raise ValueError("data_source is 'cifar5m' but cifar5m_dir is not set; set it to "
                         "the folder holding part0.npz … part5.npz")
    d = Path(directory)
    if not d.is_dir():
        raise ValueError(f"cifar5m_dir {str(d)!r} does not exist or is not a directory; it "
                         f"must hold part0.npz … part5.npz (or cifar5m_part0.npz …)")
    return [check_part(part_path(d, i)) for i in range(NUM_PARTS)]


class Cifar5mSource:
    """Memory-bounded access to CIFAR-5m by global image index (see module doc)."""

    num_classes = NUM_CLASSES
    has_posterior = False

    def __init__(self, directory, rows_per_read: int = 4096):
        check_cifar5m_dir(directory)
        self.directory = Path(directory)
        self.paths = [part_path(self.directory, i) for i in range(NUM_PARTS)]
        self.headers = [read_npz_headers(p) for p in self.paths]
        self.part_sizes = np.array([h["X"].shape[0] for h in self.headers], dtype=np.int64)
        self.part_starts = np.concatenate([[0], np.cumsum(self.part_sizes)])
        self.n_images = int(self.part_starts[-1])
        self.rows_per_read = int(rows_per_read)
        self._labels: dict[int, np.ndarray] = {}
        self._memmaps: dict[tuple[int, str], np.memmap] = {}

    def __repr__(self) -> str:
        return f"Cifar5mSource({str(self.directory)!r}, n_images={self.n_images})"

    # -- per-part access -------------------------------------------------------
    def _memmap(self, part: int, key: str) -> np.ndarray:
        mm = self._memmaps.get((part, key))
        if mm is None:
            h = self.headers[part][key]
            mm = np.memmap(self.paths[part], dtype=h.dtype, mode="r", offset=h.data_offset,
                           shape=h.shape, order="F" if h.fortran_order else "C")
            self._memmaps[(part, key)] = mm
        return mm

    def part_labels(self, part: int) -> np.ndarray:
        """All labels of one part (uint8, validated, cached)."""
        y = self._labels.get(part)
        if y is None:
            path = self.paths[part]
            if self.headers[part]["Y"].compressed:
                with np.load(path) as npz:
                    raw = npz["Y"]
            else:
                raw = np.asarray(self._memmap(part, "Y"))
            if raw.size and (raw.min() < 0 or raw.max() >= NUM_CLASSES):
                raise ValueError(f"{path}: Y has labels outside 0..9 (min {raw.min()}, "
                                 f"max {raw.max()}); {EXPECTED}")
            y = raw.astype(np.uint8)
            self._labels[part] = y
        return y

    def _part_pieces(self, part: int, local: np.ndarray
                     ) -> Iterator[tuple[int, int, np.ndarray]]:
        """(start, stop, X[local[start:stop]]) over the sorted local rows ``local``."""
        h = self.headers[part]["X"]
        step = self.rows_per_read
        if not h.compressed:
            mm = self._memmap(part, "X")
            for s in range(0, local.size, step):
                yield s, min(s + step, local.size), np.asarray(mm[local[s:s + step]])
            return
        row_bytes = int(np.prod(IMAGE_SHAPE))
        last = int(local[-1])
        with zipfile.ZipFile(self.paths[part]) as zf, zf.open("X.npy") as fh:
            version = npformat.read_magic(fh)
            if version == (1, 0):
                npformat.read_array_header_1_0(fh)
            else:
                npformat.read_array_header_2_0(fh)
            pos = 0
            for r0 in range(0, last + 1, step):
                r1 = min(r0 + step, h.shape[0])
                buf = fh.read((r1 - r0) * row_bytes)
                if len(buf) != (r1 - r0) * row_bytes:
                    raise ValueError(f"{self.paths[part]}: X is truncated (rows {r0}..{r1} "
                                     f"unreadable); {EXPECTED}")
                end = int(np.searchsorted(local, r1, side="left"))
                if end > pos:
                    rows = np.frombuffer(buf, dtype=np.uint8).reshape((r1 - r0,) + IMAGE_SHAPE)
                    yield pos, end, rows[local[pos:end] - r0]
                    pos = end

    # -- public API ------------------------------------------------------------
    def _check_indices(self, indices) -> np.ndarray:
        return check_indices(indices, self.n_images)

    def _iter_pieces(self, idx: np.ndarray):
        """(positions into idx, X, y) pieces in increasing image index."""
        order = np.argsort(idx, kind="stable")
        sidx = idx[order]
        bounds = np.searchsorted(sidx, self.part_starts)
        for part in range(NUM_PARTS):
            lo, hi = int(bounds[part]), int(bounds[part + 1])
            if hi <= lo:
                continue
            local = sidx[lo:hi] - self.part_starts[part]
            labels = self.part_labels(part)
            for s, e, X in self._part_pieces(part, local):
                yield order[lo + s:lo + e], X, labels[local[s:e]].astype(np.int64)

    def iter_chunks(self, indices, chunk_size: int = 50_000
                    ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """(X, y, positions into ``indices``) in increasing image index, at most
        ``chunk_size`` images per chunk; memory is one chunk plus one read window."""
        idx = self._check_indices(indices)
        chunk_size = int(chunk_size)
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be positive, got {chunk_size}")
        pend: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        n_pend = 0
        for piece in self._iter_pieces(idx):
            pend.append(piece)
            n_pend += piece[0].size
            while n_pend >= chunk_size:
                pos, X, y = (np.concatenate(a) for a in zip(*pend))
                yield X[:chunk_size], y[:chunk_size], pos[:chunk_size]
                pend = [(pos[chunk_size:], X[chunk_size:], y[chunk_size:])]
                n_pend -= chunk_size
        if n_pend:
            pos, X, y = (np.concatenate(a) for a in zip(*pend))
            yield X, y, pos

    def load(self, indices) -> tuple[np.ndarray, np.ndarray]:
        idx = self._check_indices(indices)
        X = np.empty((idx.size,) + IMAGE_SHAPE, dtype=np.uint8)
        y = np.empty(idx.size, dtype=np.int64)
        for pos, Xp, yp in self._iter_pieces(idx):
            X[pos] = Xp
            y[pos] = yp
        return X, y

    def labels(self, indices) -> np.ndarray:
        idx = self._check_indices(indices)
        part = np.searchsorted(self.part_starts, idx, side="right") - 1
        y = np.empty(idx.size, dtype=np.int64)
        for p in np.unique(part):
            sel = part == p
            y[sel] = self.part_labels(int(p))[idx[sel] - self.part_starts[p]]
        return y

    def posterior(self, indices) -> np.ndarray:
        raise NotImplementedError("CIFAR-5m has no known class posterior (has_posterior is False)")
