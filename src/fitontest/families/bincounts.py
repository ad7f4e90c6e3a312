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
on chunks of resampled rows. Three kinds of rows answer the two questions the
functions ask (cumulative sums below a code, the code at a sorted position):

- :class:`Dense`: per-code counts (a whole sample or resample; O(m) per row);
- :class:`Sorted`: the sorted codes of a few points (a CV held-out fold,
  O(n_fold) per row, so the folds never cost O(m) each);
- :class:`Minus`: one row less another (a CV training fold = sample - held-out).
"""
from __future__ import annotations

from typing import Iterable

import numpy as np

from fitontest.core import calibration_error
from ..selection import complexity_rule, kfold_indices

#: bytes of working arrays per chunk of resampled rows (sets the chunk size)
CHUNK_BYTES = 48 * 2 ** 20
#: the sweep's B at which rows still monotone try the per-code shortcut
SHORTCUT_AFTER = 64


def es_starts(n, n_bins, b):
    """Sorted position of the first point of ES group ``b`` (1..B-1) under
    ``numpy.array_split(range(n), n_bins)``; broadcasts over all arguments."""
    q, r = np.divmod(n, n_bins)
    return b * q + np.minimum(b, r)


class Codes:
    """Distinct scores ``uniq`` of an original sample, every point's ``code``
    and ``pair = code + m label`` (a point of any row is one pair)."""

    def __init__(self, s: np.ndarray, y: np.ndarray):
        self.uniq, codes = np.unique(s, return_inverse=True)
        self.codes = codes.astype(np.int64).ravel()
        self.m = self.uniq.size
        self.pairs = self.codes + self.m * y.astype(np.int64)
        self.code_one = int(np.searchsorted(self.uniq, 1.0, side="left"))   # the edge 1.0

    def ew_first(self, n_bins: int, b_max: int) -> np.ndarray:
        """First code of EW bins 1..b_max-1 of B = ``n_bins`` (m past B - 1)."""
        bins = np.minimum(np.floor(self.uniq * n_bins).astype(np.int64), n_bins - 1)
        return np.searchsorted(bins, np.arange(1, b_max), side="left")

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
            np.cumsum(a, axis=1, out=out[:, 1:])
            self._cum[q] = out
        return self._cum[q]

    def below(self, edges, q, rows):
        """Sums of ``q`` over codes < ``edges`` (j, w) in rows ``rows`` (j,)."""
        return self.cum(q).ravel()[edges + (self.m + 1) * rows[:, None]]

    def code_at(self, pos, rows):
        """Code at sorted position ``pos`` (< n) of rows ``rows``: one search over
        all rows' inclusive counts, row r offset by r (n + 1) so they never overlap."""
        if self._inclusive is None:
            self._inclusive = self.cum("n")[0, 1:] if self.k == 1 else (
                self.cum("n")[:, 1:] + (self.n + 1) * np.arange(self.k)[:, None]).ravel()
        query = (pos + (self.n + 1) * rows[:, None]).ravel()
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


class Sorted:
    """Rows given by their points' pairs (k, n_fold), sorted per row; cumulative
    "n", "y", "s", "ss" (sum s^2) and "sy" (sum s y) over the sorted points."""

    def __init__(self, pairs: np.ndarray, codes: Codes):
        self.k, self.n, self.m = pairs.shape[0], pairs.shape[1], codes.m
        y = pairs >= self.m
        pairs = np.sort(2 * (pairs - self.m * y) + y, axis=1)    # by code, then label
        self.code = pairs >> 1
        self._y = pairs & 1
        self._s = codes.uniq[self.code]
        self._keys = (self.code + (self.m + 1) * np.arange(self.k)[:, None]).ravel()
        self._cum: dict[str, np.ndarray] = {}
        self._last: list = [None, None, None]

    def _values(self, q: str) -> np.ndarray:
        s, y = self._s, self._y
        return {"y": y, "s": s, "ss": s * s, "sy": s * y}[q]

    def cum(self, q: str) -> np.ndarray:
        """Exclusive cumulative sums (k, n_fold + 1) of ``q`` over the sorted points."""
        if q not in self._cum:
            a = self._values(q)
            out = np.zeros((self.k, self.n + 1), dtype=a.dtype)
            np.cumsum(a, axis=1, out=out[:, 1:])
            self._cum[q] = out
        return self._cum[q]

    def _positions(self, edges, rows):
        """Points below ``edges`` per row; the last search is kept (the same
        edges are asked for several sums in turn)."""
        if self._last[0] is not edges or self._last[1] is not rows:
            query = (edges + (self.m + 1) * rows[:, None]).ravel()
            order = np.argsort(query, kind="stable")      # sorted keys: cache-friendly
            at = np.empty(query.size, dtype=np.int64)
            at[order] = np.searchsorted(self._keys, query[order], side="left")
            self._last = [edges, rows, at.reshape(edges.shape) - self.n * rows[:, None]]
        return self._last[2]

    def below(self, edges, q, rows):
        at = self._positions(edges, rows)
        if q == "n":
            return at
        return self.cum(q).ravel()[at + (self.n + 1) * rows[:, None]]

    def total(self, q: str) -> np.ndarray:
        """Sum of ``q`` over each row's points."""
        return self._cum[q][:, -1] if q in self._cum else self._values(q).sum(axis=1)


class Minus:
    """Row r of ``a`` less row r of ``b`` (``b``'s points are among ``a``'s)."""

    def __init__(self, a: Dense, b: Sorted):
        self.a, self.b, self.k, self.m = a, b, a.k, a.m
        self.n = a.n - b.n

    def below(self, edges, q, rows):
        return self.a.below(edges, q, rows) - self.b.below(edges, q, rows)

    def code_at(self, pos, rows):
        """Code at sorted position ``pos`` of rows ``rows``: the smallest c with
        a(<= c) - b(<= c) > pos. Each step c <- a.code_at(pos + b(<= c)) is a
        lower bound of it and stops there; as ``b`` is a small part of ``a`` (a
        held-out fold) the steps shrink geometrically (a few steps)."""
        code = self.a.code_at(pos, rows)
        todo = np.ones(pos.shape, dtype=bool)
        while todo.any():
            r = np.broadcast_to(rows[:, None], pos.shape)[todo]
            step = self.a.code_at((pos[todo] + self.b.below(
                code[todo][:, None] + 1, "n", r)[:, 0])[:, None], r)[:, 0]
            moved = step != code[todo]
            code[todo] = step
            todo[todo] = moved
        return code


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


def candidate_edges(sample, codes: Codes, scheme: str, cands: np.ndarray) -> np.ndarray:
    """Code edges of every row for every candidate B, candidate-major:
    (n_candidates * k, max B + 1), row j k + r = candidate j, row r (as
    :func:`edges`). Every row has the same n, so the ES sorted positions of all
    candidates are shared: each distinct position is looked up once per row."""
    k, m, b_max = sample.k, codes.m, int(cands.max())
    b = np.arange(1, b_max)[None, :]
    valid = b < cands[:, None]                                   # (n_c, b_max - 1)
    if scheme == "es":
        starts = es_starts(sample.n, cands[:, None], b)
        want = np.where(valid, np.minimum(starts, sample.n - 1), 0)
        uniq, inv = np.unique(want, return_inverse=True)
        at = sample.code_at(np.broadcast_to(uniq, (k, uniq.size)), np.arange(k))
        inner = np.where(starts < sample.n, at[:, inv.reshape(want.shape)], codes.code_one)
    else:
        inner = np.stack([codes.ew_first(int(B), b_max) for B in cands])[None]
        inner = np.broadcast_to(inner, (k,) + inner.shape[1:])
    inner = np.where(valid, inner, m).transpose(1, 0, 2).reshape(cands.size * k, b_max - 1)
    n_rows = cands.size * k
    return np.concatenate((np.zeros((n_rows, 1), dtype=np.int64), inner,
                           np.full((n_rows, 1), m)), axis=1)


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


def cv_scores(sample: Dense, held_out: Iterable[Sorted], codes: Codes, scheme: str, map: str,
              cands: np.ndarray) -> np.ndarray:
    """Mean held-out squared error (k, n_candidates) of the map fitted on each
    training fold (row less its held-out fold), all candidates B at once.

    Per held-out bin the squared error is a sum of the fold's bin sums:
    slope-1 c = s + d: sum (s - y)^2 + 2 d sum (s - y) + d^2 n; flat c = ybar
    on bins with training points (s elsewhere): sum (s - y)^2 + ybar^2 n
    - 2 ybar sum y - sum s^2 + 2 sum s y.
    """
    k, n_c = sample.k, cands.size
    rows = np.tile(np.arange(k), n_c)                      # candidate j: rows j*k..
    out = np.zeros((k, n_c))
    n_folds = 0
    for test in held_out:                          # one fold in memory at a time
        n_folds += 1
        train = Minus(sample, test)
        e = candidate_edges(train, codes, scheme, cands)
        n_tr = bin_sums(train, e, "n", rows)
        y_tr = bin_sums(train, e, "y", rows)
        full = n_tr > 0
        safe = np.where(full, n_tr, 1)
        n_te, y_te = bin_sums(test, e, "n", rows), bin_sums(test, e, "y", rows)
        if map == "slope1":
            d = np.where(full, (y_tr - bin_sums(train, e, "s", rows)) / safe, 0.0)
            extra = 2 * d * (bin_sums(test, e, "s", rows) - y_te) + d * d * n_te
        else:
            c = y_tr / safe
            extra = np.where(full, c * c * n_te - 2 * c * y_te - bin_sums(test, e, "ss", rows)
                             + 2 * bin_sums(test, e, "sy", rows), 0.0)
        base = test.total("ss") - 2 * test.total("sy") + test.total("y")   # sum (s - y)^2
        out += (base[:, None] + extra.sum(axis=1).reshape(n_c, k).T) / test.n
    return out / n_folds


def fold_tests(fam, n: int) -> list[np.ndarray] | None:
    """Held-out positions of the family's CV folds
    (:func:`fitontest.selection.kfold_indices`) over a row of n points, or None
    without CV. Every resample has n points, so one split serves all rows."""
    if fam.selection != "cv":
        return None
    return [test for _, test in kfold_indices(n, int(fam.n_folds), int(fam.seed))]


def choose_bins(fam, sample: Dense, pairs: np.ndarray, codes: Codes, tests):
    """B of every row under the family's selection, and for CV the scores."""
    if fam.selection == "fixed":
        return np.full(sample.k, int(fam.n_bins)), None
    if fam.selection == "sweep":
        return sweep(sample, codes, fam.scheme, fam.max_bins), None
    cands = np.arange(1, int(fam.max_bins) + 1)
    cv = cv_scores(sample, (Sorted(pairs[:, test], codes) for test in tests), codes,
                   fam.scheme, fam.map, cands)
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
