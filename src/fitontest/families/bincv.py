"""Counting per row and the binning families' cross-validation on per-code
counts (docs/methods/02-binning.md §2.6 and
docs/methods/11-intervals.md §11.2); rows, codes and bins are
:mod:`fitontest.families.bincounts`'s, which calls :func:`cv_scores`.

A CV held-out fold is kept as its points' codes sorted per row, so a fold
costs O(n_fold), not O(m), per row; its training fold is the row less it.
Every candidate B's bins are runs of codes between edges, and the edges of
all candidates are few (about sum B) and shared: each distinct edge is
found once per fold (:func:`held_out_edges`), and every bin's sums are
differences of sums below two edges.

Nothing about the codes depends on the labels. :class:`CVCodes` holds that
part of a chunk of rows (the folds' sorted codes, the edges, every bin's
counts and score sums), so rows with the same points and other labels -- the
consistency worlds of :mod:`fitontest.inference.intervals`, which redraw only the
labels -- pay only for the labels (:meth:`CVCodes.scores`).
"""
from __future__ import annotations

import functools
from typing import Literal

import numpy as np

from ..core.selection import kfold_indices

#: :func:`count_rows` counts by histogram when the value range plus the values
#: per row is below this many times the needles per row (else it searches)
DENSE_PER_NEEDLE = 16


def es_starts(n, n_bins, b):
    """Sorted position of the first point of ES group ``b`` (1..B-1) under
    ``numpy.array_split(range(n), n_bins)``; broadcasts over all arguments."""
    q, r = np.divmod(n, n_bins)
    return b * q + np.minimum(b, r)


# ------------------------------------------------------------- counting
def count_rows(values: np.ndarray, needles: np.ndarray, top: int,
               side: Literal["left", "right"]) -> np.ndarray:
    """Per row r and needle v = ``needles[r, i]``: how many of ``values[r]`` are
    < v (``side="left"``) or <= v (``"right"``); integers in [0, top], values
    sorted and needles non-decreasing along each row (k rows).

    Few needles over a wide range: one search over all rows at once (row r
    offset by r (top + 1), so the offset needles are sorted too). Many needles
    over a narrow range (small rows): a histogram of each row's values and its
    cumulative sums, read at the needles, costs O(range) per row and no search.
    """
    k, w = needles.shape
    rows = np.arange(k)[:, None]
    span = top + 1
    if span + values.shape[1] < DENSE_PER_NEEDLE * w:
        return read_counts(count_table(values, top), needles, side)
    if k == 1:
        return np.searchsorted(values[0], needles[0], side=side)[None, :]
    found = np.searchsorted((values + span * rows).ravel(), (needles + span * rows).ravel(),
                            side=side)
    return found.reshape(k, w) - values.shape[1] * rows


def count_table(values: np.ndarray, top: int) -> np.ndarray:
    """(k, top + 2): [r, v] = how many of ``values[r]`` (integers in [0, top]) are < v."""
    k, span = values.shape[0], top + 1
    table = np.zeros((k, span + 1), dtype=np.int64)
    table[:, 1:] = np.bincount((values + span * np.arange(k)[:, None]).ravel(),
                               minlength=k * span).reshape(k, span)
    return np.add.accumulate(table, axis=1, out=table)


def read_counts(table: np.ndarray, needles: np.ndarray,
                side: Literal["left", "right"]) -> np.ndarray:
    """:func:`count_rows` read off a :func:`count_table`."""
    rows = np.arange(table.shape[0])[:, None]
    return np.take(table, needles + (side == "right") + table.shape[1] * rows)


# ------------------------------------------------------- candidates' edges
def bin_layout(cands: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every bin of every candidate B, candidate after candidate (sum of the
    candidates in all): its B, its index b in 0..B-1, and each candidate's first bin."""
    c = np.asarray(cands, dtype=np.int64)
    first = np.concatenate(([0], np.cumsum(c)[:-1]))
    return np.repeat(c, c), np.arange(c.sum()) - np.repeat(first, c), first


@functools.lru_cache(maxsize=16)
def es_columns(n_tr: int, cands: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct ES edges of every candidate on a training fold of ``n_tr``
    points: (sorted positions U, lower and upper edge column of every bin of
    :func:`bin_layout`). Columns: 0 = code 0, 1..|U| = the code at position
    U_i, |U| + 1 = the code of 1.0 (positions past the fold), |U| + 2 = m."""
    big_b, b, _ = bin_layout(cands)
    j = np.concatenate((b, b + 1))                 # lower, then upper edge of every bin
    nb = np.concatenate((big_b, big_b))
    pos = es_starts(n_tr, nb, j)
    inner = (j > 0) & (j < nb)
    u = np.unique(pos[inner & (pos < n_tr)])
    col = np.where(pos < n_tr, 1 + np.searchsorted(u, pos), u.size + 1)
    col = np.where(j == 0, 0, np.where(j == nb, u.size + 2, col))
    for a in (u, col):
        a.flags.writeable = False
    return u, col[:big_b.size], col[big_b.size:]


def ew_columns(codes, cands: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct EW edge codes V of every candidate (0 and m included) and
    the lower and upper column of every bin of :func:`bin_layout`; kept on ``codes``."""
    cache = codes.__dict__.setdefault("_ew_columns", {})
    if cands not in cache:
        first = {B: np.concatenate(([0], codes.ew_first(B, B), [codes.m])) for B in cands}
        lo = np.concatenate([first[B][:-1] for B in cands])
        hi = np.concatenate([first[B][1:] for B in cands])
        v = np.unique(np.concatenate((lo, hi)))
        cache[cands] = v, np.searchsorted(v, lo), np.searchsorted(v, hi)
    return cache[cands]


def training_ranks(sample, code: np.ndarray) -> np.ndarray:
    """Per held-out point (sorted codes ``code``, k x n_f) of code c, the
    training points (the row less the fold) with a code <= c:
    A(<= c) - F(<= c), non-decreasing along a row."""
    n_f = code.shape[1]
    a_le = sample.below(code + 1, "n", np.arange(code.shape[0]))
    # F(<= c_j) = the end of c_j's run in the sorted codes: the next run's start
    end = np.empty(code.shape, dtype=bool)
    end[:, -1] = True
    np.not_equal(code[:, 1:], code[:, :-1], out=end[:, :-1])
    f_le = np.where(end, np.arange(1, n_f + 1), n_f)
    return a_le - np.minimum.accumulate(f_le[:, ::-1], axis=1)[:, ::-1]


def held_out_edges(sample, code: np.ndarray, codes, scheme: str, cands: tuple):
    """(C, J, lower, upper): every distinct edge of the candidates' bins on the
    training fold (the row ``sample`` less the held-out points of sorted codes
    ``code``) as a code C (k, w), the held-out points below it J (k, w), and
    each bin's lower and upper column.

    EW edges are fixed codes. The ES edge at training position t is the code
    c of the t-th training point; the held-out points below it are those whose
    training rank (training points with code <= theirs) is <= t, and that
    point sits at position t + J of the whole row, whose code is read off the
    row's counts. U and the ranks are sorted, so no search needs a sort."""
    k, n_f, rows = sample.k, code.shape[1], np.arange(sample.k)
    if scheme == "ew":
        v, lo, hi = ew_columns(codes, cands)
        c = np.broadcast_to(v, (k, v.size))
        return c, count_rows(code, c, codes.m, "left"), lo, hi
    u, lo, hi = es_columns(sample.n - n_f, cands)
    j_u = count_rows(training_ranks(sample, code), np.broadcast_to(u, (k, u.size)),
                     sample.n - n_f, "right")
    c_u = sample.code_at(u + j_u, rows, presorted=True)
    one = np.full((k, 1), codes.code_one)
    c = np.concatenate((np.zeros((k, 1), dtype=np.int64), c_u, one,
                        np.full((k, 1), codes.m)), axis=1)
    j = np.concatenate((np.zeros((k, 1), dtype=np.int64), j_u,
                        count_rows(code, one, codes.m, "left"), np.full((k, 1), n_f)), axis=1)
    return c, j, lo, hi


# ------------------------------------------------------------------ folds
def _cum_at(a: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Sums of each row of ``a`` (k, n) over its first ``at`` (k, w) entries."""
    k, n = a.shape
    cum = np.zeros((k, n + 1), dtype=np.float64 if a.dtype.kind == "f" else np.int64)
    np.add.accumulate(a, axis=1, out=cum[:, 1:], dtype=cum.dtype)
    return np.take(cum, at + (n + 1) * np.arange(k)[:, None])


class FoldCodes:
    """The label-free part of one held-out fold of k rows (positions ``test``
    of rows of codes ``code_rows``): where each point sorted by code sits in
    the row (``where``, flat), its score ``s``, the held-out points below
    every distinct edge of the candidates (:func:`held_out_edges`), and every
    bin's held-out and training counts and score sums: kept, as every world
    of the same points reads them."""

    def __init__(self, sample, code_rows: np.ndarray, test: np.ndarray, codes, scheme: str,
                 cands: tuple, flat: bool):
        k, n = code_rows.shape
        n_f = test.size
        self.n = n_f
        key = code_rows[:, test].astype(np.int64) * n_f + np.arange(n_f)
        key.sort(axis=1)                           # by code, then position
        code = key // n_f
        self.where = test[key - code * n_f] + n * np.arange(k)[:, None]
        if k * n < 2 ** 31:
            self.where = self.where.astype(np.int32)      # kept for every world: half the memory
        self.s = codes.uniq[code]
        c, self.j, self.lo, self.hi = held_out_edges(sample, code, codes, scheme, cands)
        self.c_flat = c + (codes.m + 1) * np.arange(k)[:, None]
        te_s = _cum_at(self.s, self.j)
        # counts as int32 (exact; half the memory), read as the same float64;
        # a bin without training points divides by 1 (its term is dropped)
        small = np.int32 if n < 2 ** 31 else np.int64
        n_tr = self.bins(np.take(sample.cum("n"), self.c_flat) - self.j)
        self.full = n_tr > 0
        self.safe = np.where(self.full, n_tr, 1).astype(small)
        self.n_te = self.bins(self.j).astype(small)
        self.s_tr = self.bins(np.take(sample.cum("s"), self.c_flat) - te_s)
        self.s_te = self.bins(te_s)
        self.ss_te = self.bins(_cum_at(self.s * self.s, self.j)) if flat else None

    def bins(self, a: np.ndarray) -> np.ndarray:
        """Per-bin sums (k, bins) from sums below the edges (k, columns)."""
        return np.take(a, self.hi, axis=1) - np.take(a, self.lo, axis=1)

    def squared_errors(self, sample, labels: np.ndarray, first: np.ndarray) -> np.ndarray:
        """Summed held-out squared error (k, n_candidates) of the map fitted on
        the training fold, for rows of labels ``labels`` (flat, k n; the
        labelled ``sample``'s). Per held-out bin it is a sum of the fold's bin
        sums: slope-1 c = s + d: sum (s - y)^2 + 2 d sum (s - y) + d^2 n; flat
        c = ybar on bins with training points (s elsewhere): sum (s - y)^2 +
        ybar^2 n - 2 ybar sum y - sum s^2 + 2 sum s y."""
        y = np.take(labels, self.where)
        d = self.s - y
        base = np.einsum("ij,ij->i", d, d)
        te_y = _cum_at(y, self.j)
        n_te = self.n_te
        y_tr = self.bins(np.take(sample.cum("y"), self.c_flat) - te_y)
        y_te = self.bins(te_y)
        full, safe = self.full, self.safe
        if self.ss_te is None:
            dd = np.where(full, (y_tr - self.s_tr) / safe, 0.0)
            extra = 2 * dd * (self.s_te - y_te) + dd * dd * n_te
        else:
            c = y_tr / safe
            extra = np.where(full, c * c * n_te - 2 * c * y_te - self.ss_te
                             + 2 * self.bins(_cum_at(self.s * y, self.j)), 0.0)
        return base[:, None] + np.add.reduceat(extra, first, axis=1)


class CVCodes:
    """The label-free part of the CV of a chunk of rows (their codes
    ``code_rows`` and per-code counts ``sample``): one :class:`FoldCodes` per
    held-out fold ``tests``, for candidates ``cands``."""

    def __init__(self, sample, code_rows: np.ndarray, tests, codes, scheme: str,
                 cands: np.ndarray, map: str):
        self.cands = tuple(int(b) for b in cands)
        self.first = bin_layout(self.cands)[2]
        if scheme == "es" and sample.n + sample.m < DENSE_PER_NEEDLE * len(tests) * sum(
                self.cands):
            sample.keep_code_table()              # the folds ask ~sum(cands) codes each
        self.folds = [FoldCodes(sample, code_rows, test, codes, scheme, self.cands,
                                map != "slope1") for test in tests]

    def scores(self, sample, labels: np.ndarray) -> np.ndarray:
        """Mean held-out squared error (k, n_candidates) of the map fitted on
        each training fold, all candidates B at once; ``sample``: the rows'
        counts with labels (:meth:`Dense.labelled`), ``labels`` (k, n)."""
        flat = labels.ravel()
        out = sum(f.squared_errors(sample, flat, self.first) / f.n for f in self.folds)
        return np.asarray(out) / len(self.folds)


@functools.lru_cache(maxsize=8)
def _held_out_positions(n: int, n_folds: int, seed: int) -> tuple[np.ndarray, ...]:
    tests = tuple(test for _, test in kfold_indices(n, n_folds, seed))
    for t in tests:
        t.flags.writeable = False
    return tests


def fold_tests(fam, n: int) -> tuple[np.ndarray, ...] | None:
    """Held-out positions of the family's CV folds
    (:func:`fitontest.core.selection.kfold_indices`) over a row of n points, or None
    without CV. Every resample has n points, so one split serves all rows (and
    every later call with the same n: the split is kept)."""
    if fam.selection != "cv":
        return None
    return _held_out_positions(int(n), int(fam.n_folds), int(fam.seed))
