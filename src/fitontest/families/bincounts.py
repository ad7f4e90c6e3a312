"""Binning on per-code counts: the one implementation of the binning families'
bins, sweep and cross-validation, for one sample or many bootstrap resamples
at once (docs/methods/02-binning.md §2.6 and
docs/methods/11-intervals.md §11.2).

Every sample here is a *row*: a multiset of points drawn from one original
sample (the sample itself, a resample of it, a fold of either). A score is
coded by its rank among the original sample's distinct scores
(:class:`Codes`), and every ES or EW bin is a run of consecutive codes
``[E_b, E_{b+1})`` (tied scores share a bin), so a bin's count, label sum
and score sum are differences of a row's cumulative sums below two edge codes.
A plain fit is one row; :func:`replicate_estimates` runs the same functions
on chunks of resampled rows. A row is held as :class:`Dense` per-code counts
(a whole sample or resample; O(m) per row); the cross-validation is
:mod:`fitontest.families.bincv`'s (held-out folds kept as sorted codes).
"""
from __future__ import annotations

from typing import Iterable

import numpy as np

from fitontest import metrics
from ..core.selection import complexity_rule
from .bincv import CVCodes, count_rows, count_table, es_starts, fold_tests, read_counts

__all__ = ["Codes", "Dense", "es_starts", "edges", "sweep", "fit_rows", "replicate_estimates",
           "fold_tests", "used_estimates"]

#: bytes of working arrays per chunk of resampled rows (sets the chunk size)
CHUNK_BYTES = 48 * 2 ** 20
#: the sweep's B at which rows still monotone try the per-code shortcut
SHORTCUT_AFTER = 64
#: codes x B per block of :meth:`Codes.ew_changes` (at most)
EW_CELLS = 2 ** 20
#: (row, B) x bins per step of the ES sweep (at most, but one B at a time)
SWEEP_CELLS = 2 ** 18


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

    def ew_changes(self, cap: int):
        """(B, code edges (1, w + 1)) of the EW bins of B = 2..``cap`` at every B
        whose non-empty bins differ from B - 1's (a row's sweep outcome can
        only change there): the first codes of the w non-empty bins, then m.
        Computed for blocks of B at once (~:data:`EW_CELLS` codes x B each,
        doubling from 32 B) as far as a caller reads, and kept."""
        found = self.__dict__.setdefault("_ew_changes", [])
        i = 0
        while True:
            while i < len(found) and found[i][0] <= cap:
                yield found[i]
                i += 1
            done = self.__dict__.get("_ew_done", 1)      # B up to which ``found`` is complete
            if done >= cap:
                return
            width = min(max(1, EW_CELLS // self.m), max(32, done), cap - done)
            b = np.arange(done + 1, done + 1 + width)
            # the bin of every code, as ew_first computes it (floor of uniq * float(B))
            bins = np.minimum(np.floor(self.uniq[None, :] * b[:, None]).astype(np.int64),
                              b[:, None] - 1)
            cut = bins[:, 1:] != bins[:, :-1]             # a bin starts at code c + 1
            prev = self.__dict__.get("_ew_cut")
            new = np.ones(width, dtype=bool)
            new[1:] = np.any(cut[1:] != cut[:-1], axis=1)
            if prev is not None:
                new[0] = not np.array_equal(cut[0], prev)
            for r in np.flatnonzero(new):
                e = np.concatenate(([0], np.flatnonzero(cut[r]) + 1, [self.m]))
                found.append((int(b[r]), e[None, :]))
            self._ew_cut, self._ew_done = cut[-1], done + width

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
        self._inclusive: np.ndarray | None = None
        self._codes_below: np.ndarray | None = None

    def keep_code_table(self):
        """Read every later :meth:`code_at` (``presorted``) off one table of
        the codes below each position, O(n + m) per row: cheaper than
        searching when the positions asked for are many (all CV folds')."""
        if self._codes_below is None:
            self._codes_below = count_table(self.cum("n")[:, 1:], self.n)

    @classmethod
    def of_codes(cls, code_rows: np.ndarray, codes: Codes) -> "Dense":
        """Rows of codes only (k, n), their labels to come (:meth:`labelled`)."""
        k, m = code_rows.shape[0], codes.m
        flat = code_rows.ravel() if k == 1 else (code_rows + m * np.arange(k)[:, None]).ravel()
        # no labels yet (None until labelled() gives them)
        return cls(np.bincount(flat, minlength=k * m).reshape(k, m), None,  # type: ignore[arg-type]
                   codes)

    def labelled(self, pairs: np.ndarray) -> "Dense":
        """These rows (:meth:`of_codes`) with labels, from their points ``pairs``
        (k, n): the label-free counts, sums and tables are shared, not copied."""
        out = Dense(self.per_code["n"], Dense.of_pairs(pairs, self.codes).per_code["y"],
                    self.codes)
        out._cum = {q: a for q, a in self._cum.items() if q != "y"}
        out._inclusive, out._codes_below = self._inclusive, self._codes_below
        return out

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
        """Bin sums (k, B) of ``q``. Score sums are summed within each bin
        (``reduceat``), not taken as a difference of cumulative sums: the fitted
        bin means keep full precision; counts are integers, exact either way."""
        if q != "s" and q in self._cum:
            return np.diff(self.below(edges, q, np.arange(self.k)), axis=1).astype(np.float64)
        a = (self.per_code["n"] * self.codes.uniq) if q == "s" else self.per_code[q]
        # the code runs of positive length tile every row: each one's sum runs
        # up to the next one's start (the last to the end)
        run = edges[:, 1:] > edges[:, :-1]
        starts = (edges[:, :-1] + self.m * np.arange(self.k)[:, None])[run]
        out = np.zeros(run.shape)
        out[run] = np.add.reduceat(a.reshape(-1), starts)
        return out


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

    A row's outcome at B depends only on its non-empty bins, in order. EW bins
    are the same codes in every row, so only the B at which the non-empty
    bins change are checked (:meth:`Codes.ew_changes`; over-confident scores
    leave most EW bins empty and keep them so for many B), on those bins alone.
    ES bins are checked for a run of B at once (:func:`es_decreasing`), the
    runs doubling (2-3, 4-7, ...): a few steps, each over all rows still going.
    """
    cap = sample.n if max_bins is None else min(int(max_bins), sample.n)
    best = np.ones(sample.k, dtype=np.int64)
    active = best < cap
    shortcut: int | None = min(cap, SHORTCUT_AFTER)
    changes = codes.ew_changes(cap) if scheme == "ew" else None
    n_bins = 2
    while n_bins <= cap:
        if changes is not None:
            step = next(changes, None)
            if step is None:
                break
            n_bins, e = step
        # monotone up to here: EW, the same bins since the last step
        best[active] = n_bins - 1
        if shortcut is not None and n_bins >= shortcut:   # O(k m): only for rows still going
            rows = np.flatnonzero(active)
            done = rows[~decreasing(sample.per_code["n"][rows], sample.per_code["y"][rows])]
            best[done], active[done], shortcut = cap, False, None
        rows = np.flatnonzero(active)
        if rows.size == 0:
            break
        if changes is not None:
            bad = decreasing(bin_sums(sample, e, "n", rows), bin_sums(sample, e, "y", rows))
            bad, width = bad[:, None], 1
        else:
            width = min(n_bins, cap + 1 - n_bins,
                        max(1, SWEEP_CELLS // (rows.size * 2 * n_bins)))
            if shortcut is not None and n_bins < shortcut:
                width = min(width, shortcut - n_bins)
            bad = es_decreasing(sample, codes, rows, n_bins, width)
        stop = bad.any(axis=1)            # the first bad B of a row ends it
        best[rows[stop]] = n_bins - 1 + np.argmax(bad[stop], axis=1)
        active[rows[stop]] = False
        n_bins += width
    best[active] = cap
    return best


def es_decreasing(sample: Dense, codes: Codes, rows: np.ndarray, lo: int, width: int):
    """:func:`decreasing` of the ES bins of rows ``rows`` at B = lo, ..,
    lo + width - 1 (rows, width): one row of bins per (row, B), the bins past
    its B empty."""
    nb = np.tile(np.arange(lo, lo + width), rows.size)
    rep = np.repeat(rows, width)
    e = edges(sample, codes, "es", nb, lo + width - 1, rep)
    return decreasing(bin_sums(sample, e, "n", rep),
                      bin_sums(sample, e, "y", rep)).reshape(rows.size, width)


def choose_bins(fam, sample: Dense, codes: Codes):
    """B of every row under a fixed or swept selection (the CV: :func:`fit_rows`)."""
    if fam.selection == "fixed":
        return np.full(sample.k, int(fam.n_bins))
    return sweep(sample, codes, fam.scheme, fam.max_bins)


def fit_rows(fam, pairs: np.ndarray, codes: Codes, tests=None, shared=None):
    """Bins of the family fitted on every row of points ``pairs`` (k, n):
    (B per row, code edges (k, max B + 1), counts, score sums, label sums, CV
    scores, the CV's label-free part). ``tests``: :func:`fold_tests` (computed
    when None); ``shared``: the :class:`~fitontest.families.bincv.CVCodes` of
    rows with the same codes (made when None)."""
    tests = fold_tests(fam, pairs.shape[1]) if tests is None else tests
    cv = None
    if fam.selection != "cv":
        sample = Dense.of_pairs(pairs, codes)
        n_bins = choose_bins(fam, sample, codes)
    else:
        labels = pairs >= codes.m
        if shared is None:
            code_rows = pairs - codes.m * labels.astype(pairs.dtype)
            rows = Dense.of_codes(code_rows, codes)
            shared = rows, CVCodes(rows, code_rows, tests, codes, fam.scheme,
                                   np.arange(1, int(fam.max_bins) + 1), fam.map)
        sample = shared[0].labelled(pairs)
        cv = shared[1].scores(sample, labels)
        cands = np.arange(1, int(fam.max_bins) + 1)
        n_bins = np.array([complexity_rule(cands, row, tol=float(fam.tol)) for row in cv])
    e = edges(sample, codes, fam.scheme, n_bins, int(n_bins.max()))
    return (n_bins, e, sample.segment_sums(e, "n"), sample.segment_sums(e, "s"),
            sample.segment_sums(e, "y"), cv, shared)


def used_estimates(counts, sum_s, sum_y, p: int) -> np.ndarray:
    """The binning family's used estimate (debiased binned CE, §2.4) per row."""
    full = counts > 0
    # terms of the non-empty bins only (a swept B may reach n bins, most of them
    # empty), put back in place: an empty bin's term is 0, and the row sums add
    # the same numbers in the same order
    terms = np.zeros(counts.shape)
    n = counts[full]
    terms[full] = metrics.debiased_bin_terms(n, sum_s[full] / n, sum_y[full] / n, p=p)
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
    those of a row's length, computed once per length. A block whose rows hold
    the same points as the previous block's, labels aside (the consistency
    worlds of ``intervals``, passed in one call), reuses their CV's label-free
    part (:class:`~fitontest.families.bincv.CVCodes`)."""
    codes = Codes(s, y)
    tests = {}
    out = []
    # chunk start -> (codes of its rows, their CV's label-free part) in the last
    # block: a block of the same points with other labels (the next consistency
    # world) reuses them
    last: dict = {}
    for block in resamples:
        m = block.shape[1]
        if m not in tests:
            tests[m] = fold_tests(fam, m)
        step = chunk_rows(m, codes.m)
        now = {}
        for i in range(0, block.shape[0], step):
            pairs = codes.pairs[block[i:i + step]]
            shared = None
            if fam.selection == "cv":
                rows = pairs - codes.m * (pairs >= codes.m).astype(pairs.dtype)   # codes
                before = last.pop(i, None)          # released here when it differs
                if before is not None and before[0].shape == rows.shape and np.array_equal(
                        before[0], rows):
                    shared = before[1]
                before = None
            _, _, cnt, ssum, ysum, _, shared = fit_rows(fam, pairs, codes, tests[m], shared)
            if shared is not None:
                now[i] = rows, shared
            out.append(used_estimates(cnt, ssum, ysum, p))
        last = now
    return np.concatenate(out) if out else np.empty(0)
