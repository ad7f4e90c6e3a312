"""Binning on per-code counts: the one implementation of the binning families'
bins, sweep and cross-validation, for one sample or many bootstrap resamples
at once (docs/methods.md §2.6 and §11.2).

Every sample here is a *row*: a multiset of points drawn from one original
sample (the sample itself, a resample of it, a fold of either). A score is
coded by its rank among the original sample's distinct scores
(:class:`Codes`), and every ES or EW bin is a run of consecutive codes
``[E_b, E_{b+1})`` (tied scores share a bin), so a bin's count, label sum
and score sum are differences of a row's cumulative sums below two edge codes.
A plain fit is one row; :func:`replicate_estimates` runs the same functions
on chunks of resampled rows. A row is held as :class:`Dense` per-code counts
(a whole sample or resample; O(m) per row); a CV held-out fold as
:class:`HeldOut`, its points' codes sorted (O(n_fold) per row, so the folds
never cost O(m) each), and its training fold as the row less it.
"""
from __future__ import annotations

import functools
from typing import Iterable

import numpy as np

from fitontest.core import calibration_error
from ..selection import complexity_rule, kfold_indices

#: bytes of working arrays per chunk of resampled rows (sets the chunk size)
CHUNK_BYTES = 48 * 2 ** 20
#: the sweep's B at which rows still monotone try the per-code shortcut
SHORTCUT_AFTER = 64
#: :func:`count_rows` counts by histogram when the value range plus the values
#: per row is below this many times the needles per row (else it searches)
DENSE_PER_NEEDLE = 16


def es_starts(n, n_bins, b):
    """Sorted position of the first point of ES group ``b`` (1..B-1) under
    ``numpy.array_split(range(n), n_bins)``; broadcasts over all arguments."""
    q, r = np.divmod(n, n_bins)
    return b * q + np.minimum(b, r)


def count_rows(values: np.ndarray, needles: np.ndarray, top: int, side: str) -> np.ndarray:
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


def read_counts(table: np.ndarray, needles: np.ndarray, side: str) -> np.ndarray:
    """:func:`count_rows` read off a :func:`count_table`."""
    rows = np.arange(table.shape[0])[:, None]
    return np.take(table, needles + (side == "right") + table.shape[1] * rows)


class Codes:
    """Distinct scores ``uniq`` of an original sample, every point's ``code``
    and ``pair = code + m label`` (a point of any row is one pair)."""

    def __init__(self, s: np.ndarray, y: np.ndarray):
        self.uniq, codes = np.unique(s, return_inverse=True)
        self.codes = codes.astype(np.int64).ravel()
        self.m = self.uniq.size
        # int32 where it fits: resampled pairs are gathered and sorted faster
        small = np.int32 if 2 * self.m < 2 ** 31 else np.int64
        self.pairs = (self.codes + self.m * y.astype(np.int64)).astype(small)
        self.code_one = int(np.searchsorted(self.uniq, 1.0, side="left"))   # the edge 1.0

    def ew_first(self, n_bins: int, b_max: int) -> np.ndarray:
        """First code of EW bins 1..b_max-1 of B = ``n_bins`` (m past B - 1);
        O(m) once per B (kept: the CV asks for every candidate in every fold)."""
        cache = self.__dict__.setdefault("_ew", {})
        if n_bins not in cache:
            bins = np.minimum(np.floor(self.uniq * n_bins).astype(np.int64), n_bins - 1)
            cache[n_bins] = np.searchsorted(bins, np.arange(1, n_bins), side="left")
        first = cache[n_bins][:max(b_max - 1, 0)]
        return np.concatenate((first, np.full(max(b_max - n_bins, 0), self.m, dtype=np.int64)))

    def value_edges(self, edges: np.ndarray, scheme: str) -> np.ndarray:
        """Score edges ``[0, e_1, .., 1]`` of one row's code edges (B + 1,)."""
        n_bins = edges.size - 1
        if scheme == "ew":
            return np.arange(n_bins + 1, dtype=np.float64) / n_bins
        inner = self.uniq[np.minimum(edges[1:-1], self.m - 1)]
        return np.concatenate(([0.0], np.where(edges[1:-1] < self.m, inner, 1.0), [1.0]))


class Dense:
    """Rows given by per-code counts ``cnt`` and label sums ``pos`` (k, m)."""

    def __init__(self, cnt: np.ndarray, pos: np.ndarray, codes: Codes):
        self.k, self.m, self.codes = cnt.shape[0], codes.m, codes
        self.per_code = {"n": cnt, "y": pos}
        self.n = int(cnt[0].sum())
        self._cum: dict[str, np.ndarray] = {}
        self._inclusive = None
        self._codes_below = None

    def keep_code_table(self):
        """Read every later :meth:`code_at` (``presorted``) off one table of
        the codes below each position, O(n + m) per row: cheaper than
        searching when the positions asked for are many (all CV folds')."""
        if self._codes_below is None:
            self._codes_below = count_table(self.cum("n")[:, 1:], self.n)

    @classmethod
    def of_pairs(cls, pairs: np.ndarray, codes: Codes) -> "Dense":
        """Rows of the points ``pairs`` (k, n): one bincount over all rows."""
        k, m2 = pairs.shape[0], 2 * codes.m
        flat = pairs.ravel() if k == 1 else (pairs + m2 * np.arange(k)[:, None]).ravel()
        c = np.bincount(flat, minlength=k * m2).reshape(k, 2, codes.m)   # (row, label, code)
        return cls(c[:, 0] + c[:, 1], c[:, 1], codes)

    def cum(self, q: str) -> np.ndarray:
        """Exclusive cumulative sums (k, m + 1) of ``q``: "n", "y" or "s"."""
        if q not in self._cum:
            a = (self.per_code["n"] * self.codes.uniq) if q == "s" else self.per_code[q]
            out = np.zeros((self.k, self.m + 1), dtype=a.dtype)
            np.add.accumulate(a, axis=1, out=out[:, 1:])   # (np.cumsum into a slice: slower)
            self._cum[q] = out
        return self._cum[q]

    def below(self, edges, q, rows):
        """Sums of ``q`` over codes < ``edges`` (j, w) in rows ``rows`` (j,)."""
        return np.take(self.cum(q), edges + (self.m + 1) * rows[:, None])

    def code_at(self, pos, rows, presorted: bool = False):
        """Code at sorted position ``pos`` (< n) of rows ``rows``: one search over
        all rows' inclusive counts, row r offset by r (n + 1) so they never overlap.
        ``presorted``: ``pos`` is non-decreasing along each row and ``rows`` is
        increasing, so the offset queries are sorted already."""
        if presorted and rows.size == self.k:         # the code: #{codes c: n(<= c) <= pos}
            if self._codes_below is not None:
                return read_counts(self._codes_below, pos, "right")
            return count_rows(self.cum("n")[:, 1:], pos, self.n, "right")
        if self._inclusive is None:
            self._inclusive = self.cum("n")[0, 1:] if self.k == 1 else (
                self.cum("n")[:, 1:] + (self.n + 1) * np.arange(self.k)[:, None]).ravel()
        query = (pos + (self.n + 1) * rows[:, None]).ravel()
        if presorted:
            code = np.searchsorted(self._inclusive, query, side="right")
        else:
            order = np.argsort(query, kind="stable")          # sorted keys: cache-friendly
            code = np.empty(query.size, dtype=np.int64)
            code[order] = np.searchsorted(self._inclusive, query[order], side="right")
        return code.reshape(pos.shape) - self.m * rows[:, None]

    def segment_sums(self, edges: np.ndarray, q: str) -> np.ndarray:
        """Bin sums (k, B) of ``q`` summed within each bin (``reduceat``), not as a
        difference of cumulative sums: the fitted bin means keep full precision."""
        a = (self.per_code["n"] * self.codes.uniq) if q == "s" else self.per_code[q]
        # the code runs of positive length tile every row: each one's sum runs
        # up to the next one's start (the last to the end)
        run = edges[:, 1:] > edges[:, :-1]
        starts = (edges[:, :-1] + self.m * np.arange(self.k)[:, None])[run]
        out = np.zeros(run.shape)
        out[run] = np.add.reduceat(a.reshape(-1), starts)
        return out


class HeldOut:
    """A CV held-out fold of k rows, from its points' pairs (k, n_f): the codes
    sorted per row and exclusive cumulative sums over them of ``quantities``
    ("y", "s", "ss" = sum s^2, "sy" = sum s y); ``base`` is sum (s - y)^2."""

    def __init__(self, pairs: np.ndarray, codes: Codes, quantities=("y", "s")):
        self.k, self.n, self.m = pairs.shape[0], pairs.shape[1], codes.m
        y = (pairs >= self.m).astype(pairs.dtype)
        key = 2 * pairs - (2 * self.m - 1) * y                   # 2 code + label
        key.sort(axis=1)                                         # by code, then label
        self.code = key >> 1
        y = key & 1
        s = codes.uniq[self.code]
        d = s - y
        self.base = np.einsum("ij,ij->i", d, d)
        self._cum = {}
        for q in quantities:
            a = {"y": y, "s": s}[q] if q in ("y", "s") else (s * s if q == "ss" else s * y)
            out = np.zeros((self.k, self.n + 1), dtype=a.dtype)
            np.add.accumulate(a, axis=1, out=out[:, 1:])
            self._cum[q] = out

    def below(self, at: np.ndarray, q: str) -> np.ndarray:
        """Sums of ``q`` over each row's first ``at`` (k, w) sorted points."""
        return np.take(self._cum[q], at + (self.n + 1) * np.arange(self.k)[:, None])

    def count_below(self, code: np.ndarray) -> np.ndarray:
        """Points with a code < ``code`` (k, w; non-decreasing along each row):
        one search over all rows, row r's codes offset by r (m + 1)."""
        return count_rows(self.code, code, self.m, "left")

    def training_ranks(self, sample: "Dense") -> np.ndarray:
        """Per held-out point of code c, the training points (the row less this
        fold) with a code <= c: A(<= c) - F(<= c), non-decreasing along a row."""
        n_f = self.n
        a_le = sample.below(self.code + 1, "n", np.arange(self.k))
        # F(<= c_j) = the end of c_j's run in the sorted codes: the next run's start
        end = np.empty(self.code.shape, dtype=bool)
        end[:, -1] = True
        np.not_equal(self.code[:, 1:], self.code[:, :-1], out=end[:, :-1])
        f_le = np.where(end, np.arange(1, n_f + 1), n_f)
        return a_le - np.minimum.accumulate(f_le[:, ::-1], axis=1)[:, ::-1]


# --------------------------------------------------------------------- bins
def edges(sample, codes: Codes, scheme: str, n_bins, b_max: int, rows=None) -> np.ndarray:
    """Code edges (k, b_max + 1) of the bins of ``rows`` (default every row):
    bin b holds codes [E_b, E_{b+1}); bins past a row's B are empty [m, m).
    ES: E_b is the code at sorted position ``es_starts`` (code of 1.0 where the
    row has fewer points than bins); EW: the first code of EW bin b."""
    rows = np.arange(sample.k) if rows is None else rows
    m = codes.m
    b = np.arange(1, b_max)[None, :]
    nb = np.broadcast_to(np.asarray(n_bins, dtype=np.int64).reshape(-1, 1), (rows.size, 1))
    if scheme == "es":
        starts = es_starts(sample.n, nb, b)
        code = sample.code_at(np.minimum(starts, sample.n - 1), rows)
        inner = np.where(starts < sample.n, code, codes.code_one)
    else:
        inner = np.empty((rows.size, max(b_max - 1, 0)), dtype=np.int64)
        for k in np.unique(nb):
            inner[nb[:, 0] == k] = codes.ew_first(int(k), b_max)[None, :]
    inner = np.where(b < nb, inner, m)
    return np.concatenate((np.zeros((rows.size, 1), dtype=np.int64), inner,
                           np.full((rows.size, 1), m)), axis=1)


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


def ew_columns(codes: Codes, cands: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct EW edge codes V of every candidate (0 and m included) and
    the lower and upper column of every bin of :func:`bin_layout`; kept on ``codes``."""
    cache = codes.__dict__.setdefault("_ew_columns", {})
    if cands not in cache:
        big_b, b, _ = bin_layout(cands)
        first = {B: np.concatenate(([0], codes.ew_first(B, B), [codes.m])) for B in cands}
        lo = np.concatenate([first[B][:-1] for B in cands])
        hi = np.concatenate([first[B][1:] for B in cands])
        v = np.unique(np.concatenate((lo, hi)))
        cache[cands] = v, np.searchsorted(v, lo), np.searchsorted(v, hi)
    return cache[cands]


def held_out_edges(sample: "Dense", fold: HeldOut, codes: Codes, scheme: str, cands: tuple):
    """(C, J, lower, upper): every distinct edge of the candidates' bins on the
    training fold (the row less ``fold``) as a code C (k, w), the held-out
    points below it J (k, w), and each bin's lower and upper column.

    EW edges are fixed codes. The ES edge at training position t is the code
    c of the t-th training point; the held-out points below it are those whose
    training rank (training points with code <= theirs) is <= t, and that
    point sits at position t + J of the whole row, whose code is read off the
    row's counts. U and the ranks are sorted, so no search needs a sort."""
    k, rows = sample.k, np.arange(sample.k)
    if scheme == "ew":
        v, lo, hi = ew_columns(codes, cands)
        c = np.broadcast_to(v, (k, v.size))
        return c, fold.count_below(c), lo, hi
    u, lo, hi = es_columns(sample.n - fold.n, cands)
    j_u = count_rows(fold.training_ranks(sample), np.broadcast_to(u, (k, u.size)),
                     sample.n - fold.n, "right")
    c_u = sample.code_at(u + j_u, rows, presorted=True)
    one = np.full((k, 1), codes.code_one)
    c = np.concatenate((np.zeros((k, 1), dtype=np.int64), c_u, one,
                        np.full((k, 1), codes.m)), axis=1)
    j = np.concatenate((np.zeros((k, 1), dtype=np.int64), j_u, fold.count_below(one),
                        np.full((k, 1), fold.n)), axis=1)
    return c, j, lo, hi


def bin_sums(sample, edge_codes, q, rows=None) -> np.ndarray:
    """Per-bin sums (k, B) of ``q`` for code edges ``edge_codes`` (k, B + 1)."""
    rows = np.arange(sample.k) if rows is None else rows
    return np.diff(sample.below(edge_codes, q, rows), axis=1)


def decreasing(cnt: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Rows (integer per-bin counts and positives) in which a non-empty bin's
    label mean is below the previous non-empty bin's (exact cross-products)."""
    n_bins = cnt.shape[1]
    keep = cnt > 0
    last = np.maximum.accumulate(np.where(keep, np.arange(n_bins), -1), axis=1)
    prev = np.concatenate((np.full((cnt.shape[0], 1), -1), last[:, :-1]), axis=1)
    pi = np.maximum(prev, 0)
    k_prev = np.take_along_axis(pos, pi, axis=1)
    m_prev = np.take_along_axis(cnt, pi, axis=1)
    # ybar_prev <= ybar_b  <=>  k_prev m_b <= k_b m_prev
    return np.any(keep & (prev >= 0) & (k_prev * cnt > pos * m_prev), axis=1)


def sweep(sample: Dense, codes: Codes, scheme: str, max_bins) -> np.ndarray:
    """Largest B with non-decreasing bin label means, per row (§2.5).

    A row whose per-code label means are already non-decreasing is monotone
    for every B (each bin is a run of codes, whose mean lies between its
    codes' means): it takes the cap at once. The check costs O(m) per row, so
    it runs once, on the rows still monotone at B = :data:`SHORTCUT_AFTER`
    (most rows of continuous scores stop long before).
    """
    cap = sample.n if max_bins is None else min(int(max_bins), sample.n)
    best = np.ones(sample.k, dtype=np.int64)
    active = best < cap
    for n_bins in range(2, cap + 1):
        if n_bins == min(cap, SHORTCUT_AFTER):   # O(k m): only for rows still going
            rows = np.flatnonzero(active)
            done = rows[~decreasing(sample.per_code["n"][rows], sample.per_code["y"][rows])]
            best[done], active[done] = cap, False
        rows = np.flatnonzero(active)
        if rows.size == 0:
            break
        e = edges(sample, codes, scheme, n_bins, n_bins, rows)
        bad = decreasing(bin_sums(sample, e, "n", rows), bin_sums(sample, e, "y", rows))
        best[rows[~bad]] = n_bins
        active[rows[bad]] = False
    return best


def cv_scores(sample: Dense, pairs: np.ndarray, tests, codes: Codes, scheme: str, map: str,
              cands: np.ndarray) -> np.ndarray:
    """Mean held-out squared error (k, n_candidates) of the map fitted on each
    training fold (row less its held-out fold ``pairs[:, test]``), all
    candidates B at once.

    Every bin is a difference of sums below two edges (:func:`held_out_edges`:
    held-out sums read at J, training sums = the row's at C less them). Per
    held-out bin the squared error is a sum of the fold's bin sums:
    slope-1 c = s + d: sum (s - y)^2 + 2 d sum (s - y) + d^2 n; flat c = ybar
    on bins with training points (s elsewhere): sum (s - y)^2 + ybar^2 n
    - 2 ybar sum y - sum s^2 + 2 sum s y.
    """
    k, cands = sample.k, tuple(int(b) for b in cands)
    rows = np.arange(k)
    first = bin_layout(cands)[2]
    flat = map != "slope1"
    if scheme == "es" and sample.n + sample.m < DENSE_PER_NEEDLE * len(tests) * sum(cands):
        sample.keep_code_table()                  # the folds ask ~sum(cands) codes each
    out = np.zeros((k, len(cands)))
    for test in tests:                            # one fold in memory at a time
        fold = HeldOut(pairs[:, test], codes, ("y", "s", "ss", "sy") if flat else ("y", "s"))
        c, j, lo, hi = held_out_edges(sample, fold, codes, scheme, cands)
        te = {q: fold.below(j, q) for q in fold._cum}
        tr_n, tr_y = sample.below(c, "n", rows) - j, sample.below(c, "y", rows) - te["y"]

        def bins(a):                              # (k, columns) -> (k, bins)
            return np.take(a, hi, axis=1) - np.take(a, lo, axis=1)

        n_tr, y_tr, n_te, y_te = bins(tr_n), bins(tr_y), bins(j), bins(te["y"])
        full = n_tr > 0
        safe = np.where(full, n_tr, 1)
        if not flat:
            s_tr = bins(sample.below(c, "s", rows) - te["s"])
            d = np.where(full, (y_tr - s_tr) / safe, 0.0)
            extra = 2 * d * (bins(te["s"]) - y_te) + d * d * n_te
        else:
            m = y_tr / safe
            extra = np.where(full, m * m * n_te - 2 * m * y_te - bins(te["ss"])
                             + 2 * bins(te["sy"]), 0.0)
        out += (fold.base[:, None] + np.add.reduceat(extra, first, axis=1)) / fold.n
    return out / len(tests)


@functools.lru_cache(maxsize=8)
def _held_out_positions(n: int, n_folds: int, seed: int) -> tuple[np.ndarray, ...]:
    tests = tuple(test for _, test in kfold_indices(n, n_folds, seed))
    for t in tests:
        t.flags.writeable = False
    return tests


def fold_tests(fam, n: int) -> tuple[np.ndarray, ...] | None:
    """Held-out positions of the family's CV folds
    (:func:`fitontest.selection.kfold_indices`) over a row of n points, or None
    without CV. Every resample has n points, so one split serves all rows (and
    every later call with the same n: the split is kept)."""
    if fam.selection != "cv":
        return None
    return _held_out_positions(int(n), int(fam.n_folds), int(fam.seed))


def choose_bins(fam, sample: Dense, pairs: np.ndarray, codes: Codes, tests):
    """B of every row under the family's selection, and for CV the scores."""
    if fam.selection == "fixed":
        return np.full(sample.k, int(fam.n_bins)), None
    if fam.selection == "sweep":
        return sweep(sample, codes, fam.scheme, fam.max_bins), None
    cands = np.arange(1, int(fam.max_bins) + 1)
    cv = cv_scores(sample, pairs, tests, codes, fam.scheme, fam.map, cands)
    return np.array([complexity_rule(cands, row, tol=float(fam.tol)) for row in cv]), cv


def fit_rows(fam, pairs: np.ndarray, codes: Codes, tests=None):
    """Bins of the family fitted on every row of points ``pairs`` (k, n):
    (B per row, code edges (k, max B + 1), counts, score sums, label sums, CV
    scores). ``tests``: :func:`fold_tests` (computed when None)."""
    sample = Dense.of_pairs(pairs, codes)
    tests = fold_tests(fam, pairs.shape[1]) if tests is None else tests
    n_bins, cv = choose_bins(fam, sample, pairs, codes, tests)
    e = edges(sample, codes, fam.scheme, n_bins, int(n_bins.max()))
    return (n_bins, e, sample.segment_sums(e, "n"), sample.segment_sums(e, "s"),
            sample.segment_sums(e, "y"), cv)


def used_estimates(counts, sum_s, sum_y, p: int) -> np.ndarray:
    """The binning family's used estimate (debiased binned CE, §2.4) per row."""
    full = counts > 0
    safe = np.where(full, counts, 1.0)
    terms = calibration_error.debiased_bin_terms(counts, sum_s / safe, sum_y / safe, p=p)
    return np.sum(counts * terms, axis=1) / counts.sum(axis=1)


def chunk_rows(n: int, m: int) -> int:
    """Resampled rows per chunk: ~10 arrays of n or m numbers per row."""
    return max(1, int(CHUNK_BYTES // (8 * 10 * max(n, m, 1))))


def replicate_estimates(fam, s: np.ndarray, y: np.ndarray, resamples: Iterable[np.ndarray],
                        p: int = 1) -> np.ndarray:
    """Used L^p estimate of ``fam`` refitted on every resample row ``s[ix], y[ix]``,
    for ``resamples`` an iterable of (k, m) index arrays into ``s`` (a resample
    may be shorter than ``s``: the consistency worlds of ``intervals`` draw n
    points from a doubled sample); each is cut into chunks of
    :func:`chunk_rows` rows, so memory does not grow with R. The CV folds are
    those of a row's length, computed once per length."""
    codes = Codes(s, y)
    tests = {}
    out = []
    for block in resamples:
        m = block.shape[1]
        if m not in tests:
            tests[m] = fold_tests(fam, m)
        step = chunk_rows(m, codes.m)
        for i in range(0, block.shape[0], step):
            pairs = codes.pairs[block[i:i + step]]
            _, _, cnt, ssum, ysum, _ = fit_rows(fam, pairs, codes, tests[m])
            out.append(used_estimates(cnt, ssum, ysum, p))
    return np.concatenate(out) if out else np.empty(0)
