"""Bootstrap replicates of the binned CE estimates, all replicates in one pass
(docs/methods.md §11.2).

:func:`replicate_estimates` returns, for every row of a bootstrap index matrix,
exactly what refitting a :class:`~fitontest.families.binning.BinningFamily`
on that resample and taking its used CE estimate (debiased, docs/methods.md §2.4)
would give -- fixed B, the monotone sweep and the cross-validated choice of B
included -- without refitting.

How: every resample draws from the original sample, so a score is coded by its
rank among the sample's unique scores (as the family's CV does). A resample is
then a row of per-code counts; their cumulative sums give, for any bin edges
expressed as codes, every bin's (count, score sum, label sum) as two look-ups.
ES edges are codes at fixed sorted positions (one ``searchsorted`` over all rows
at once, rows offset so they never overlap), EW edges do not depend on the
resample at all. Cost: O(R n) for the counts plus O(R B) per candidate B;
the CV adds O(R n / n_folds) per (fold, candidate) for the held-out errors.
"""
from __future__ import annotations

import numpy as np

from fitontest.core import calibration_error
from .selection import complexity_rule, kfold_indices


class _Codes:
    """Unique scores of the original sample and the look-ups shared by all rows."""

    def __init__(self, s: np.ndarray):
        self.uniq, self.codes = np.unique(s, return_inverse=True)
        self.m = self.uniq.size
        self.code_one = int(np.searchsorted(self.uniq, 1.0, side="left"))
        self._ew: dict[int, np.ndarray] = {}

    def ew_bins(self, n_bins: int) -> np.ndarray:
        """EW bin of every unique score (non-decreasing in the code)."""
        if n_bins not in self._ew:
            self._ew[n_bins] = np.minimum(np.floor(self.uniq * n_bins).astype(np.int64),
                                          n_bins - 1)
        return self._ew[n_bins]


class _Cumulative:
    """Exclusive cumulative (count, score sum, label sum) per code of every row,
    each (R, m + 1), for resamples given as codes (R, n_fit) and labels."""

    def __init__(self, codes: np.ndarray, y: np.ndarray, cd: _Codes):
        n_rep, m = codes.shape[0], cd.m
        self.n_rep, self.n_fit, self.width = n_rep, codes.shape[1], m + 1
        flat = (codes + m * np.arange(n_rep)[:, None]).ravel()
        cnt = np.bincount(flat, minlength=n_rep * m)
        ysum = np.bincount(flat, weights=y.ravel(), minlength=n_rep * m)
        self.cums = []
        for a in (cnt, cnt * np.tile(cd.uniq, n_rep), ysum):
            c = np.cumsum(a).reshape(n_rep, m)            # one flat pass, then row offsets
            full = np.zeros((n_rep, m + 1))
            full[:, 1:] = c - np.concatenate(([0], c[:-1, -1]))[:, None]
            self.cums.append(full)
        # inclusive counts of all rows in one sorted array: row r offset by r (n_fit + 1)
        self.row_off = np.arange(n_rep)[:, None]
        self.inclusive = (self.cums[0][:, 1:] + (self.n_fit + 1) * self.row_off).ravel()

    def at(self, codes: np.ndarray, which: int = 0, rows: np.ndarray | None = None) -> np.ndarray:
        """Cumulative ``which`` (0 count, 1 score sum, 2 label sum) at codes (k, j)
        of rows ``rows`` (k,) (default: every row)."""
        off = self.row_off if rows is None else rows[:, None]
        return self.cums[which].ravel()[codes + self.width * off]

    def code_at_position(self, pos: np.ndarray, rows: np.ndarray, m: int) -> np.ndarray:
        """Code at sorted position ``pos`` (k, j) of rows ``rows`` (k,) (pos < n_fit)."""
        query = (pos + (self.n_fit + 1) * rows[:, None]).ravel()
        order = np.argsort(query, kind="stable")     # sorted keys: cache-friendly search
        code = np.empty(query.size, dtype=np.int64)
        code[order] = np.searchsorted(self.inclusive, query[order], side="right")
        return code.reshape(pos.shape) - m * rows[:, None]


def _group_of(j, n: int, n_bins):
    """Group of sorted position ``j`` in ``array_split(range(n), n_bins)``."""
    q, r = n // n_bins, n % n_bins
    big = r * (q + 1)
    return np.where(j < big, j // (q + 1), r + (j - big) // np.maximum(q, 1))


def _edges(cum: _Cumulative, n_bins, b_max: int, scheme: str, cd: _Codes,
           rows: np.ndarray | None = None) -> np.ndarray:
    """Edge codes (k, b_max + 1) of bins of rows ``rows`` (default: every row):
    bin b holds the codes in [E_b, E_b+1); rows with fewer than b_max bins end
    in empty bins [m, m). ``n_bins``: one B, or one per row of the result."""
    rows = np.arange(cum.n_rep) if rows is None else rows
    m, n_fit = cd.m, cum.n_fit
    b = np.arange(1, b_max)[None, :]
    nb = np.broadcast_to(np.asarray(n_bins, dtype=np.int64).reshape(-1, 1), (rows.size, 1))
    valid = b < nb
    if scheme == "es":
        q, r = n_fit // nb, n_fit % nb
        starts = b * q + np.minimum(b, r)                         # sorted position of E_b
        code = cum.code_at_position(np.minimum(starts, n_fit - 1), rows, m)
        inner = np.where(starts < n_fit, code, cd.code_one)
    else:
        inner = np.empty((rows.size, max(b_max - 1, 0)), dtype=np.int64)
        for k in np.unique(nb):
            sel = nb[:, 0] == k
            first = np.searchsorted(cd.ew_bins(int(k)), np.arange(1, b_max), side="left")
            inner[sel] = first[None, :]
    inner = np.where(valid, inner, m)
    zeros = np.zeros((rows.size, 1), dtype=np.int64)
    return np.concatenate((zeros, inner, np.full((rows.size, 1), m)), axis=1)


def _edges_per_candidate(cum: _Cumulative, cands: np.ndarray, scheme: str, cd: _Codes):
    """[(R, B + 1) edge codes of every row for B] for every B in ``cands``, one search."""
    n_rep = cum.n_rep
    rows = np.tile(np.arange(n_rep), cands.size)
    flat = _edges(cum, np.repeat(cands, n_rep), int(cands.max()), scheme, cd, rows=rows)
    return [flat[j * n_rep:(j + 1) * n_rep, :nb + 1] for j, nb in enumerate(cands)]


def _bin_stats(cum: _Cumulative, edges, which=(0, 1, 2), rows: np.ndarray | None = None):
    """(counts, score sums, label sums), each (k, B), of the bins given by ``edges``
    (of rows ``rows``, default every row)."""
    return [np.diff(cum.at(edges, w, rows), axis=1) for w in which]


def _used(counts, sum_s, sum_y, p: int) -> np.ndarray:
    """The family's used estimate (the debiased binned CE) of every row."""
    full = counts > 0
    safe = np.where(full, counts, 1.0)
    terms = calibration_error.debiased_bin_terms(counts, sum_s / safe, sum_y / safe, p=p)
    return np.sum(counts * terms, axis=1) / counts.sum(axis=1)


def _decreasing(cnt: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Rows (of per-bin counts and positive counts, integers) in which some
    non-empty bin's label mean is below the previous non-empty bin's."""
    n_bins = cnt.shape[1]
    keep = cnt > 0
    # previous non-empty bin of every bin (-1 if none)
    last = np.maximum.accumulate(np.where(keep, np.arange(n_bins), -1), axis=1)
    prev = np.concatenate((np.full((cnt.shape[0], 1), -1), last[:, :-1]), axis=1)
    pi = np.maximum(prev, 0)
    k_prev = np.take_along_axis(pos, pi, axis=1)
    m_prev = np.take_along_axis(cnt, pi, axis=1)
    # ybar_prev <= ybar_b  <=>  k_prev m_b <= k_b m_prev (exact integers)
    return np.any(keep & (prev >= 0) & (k_prev * cnt > pos * m_prev), axis=1)


def _sweep(fam, cum: _Cumulative, cd: _Codes) -> np.ndarray:
    """Largest B with monotone bin label means, per row (the family's ``_sweep``).

    Every ES or EW bin is a run of consecutive unique scores, and the means of
    consecutive blocks of a non-decreasing sequence are non-decreasing: a row
    whose label means are monotone with one bin per unique score is monotone
    for every B, so it takes the cap at once. Without this, tied scores (a
    scaling-binning calibrator has ~10 values) kept every row in the loop up to
    B = n, at O(R B) per step. The loop works on the rows still undecided only.
    """
    n_fit = cum.n_fit
    cap = n_fit if fam.max_bins is None else min(int(fam.max_bins), n_fit)
    per_code = [np.rint(np.diff(cum.cums[w], axis=1)).astype(np.int64) for w in (0, 2)]
    finest_monotone = ~_decreasing(*per_code)
    best = np.where(finest_monotone, cap, 1).astype(np.int64)
    active = ~finest_monotone
    for n_bins in range(2, cap + 1):
        rows = np.flatnonzero(active)
        if rows.size == 0:
            break
        edges = _edges(cum, n_bins, n_bins, fam.scheme, cd, rows=rows)
        cnt, pos = (np.rint(a).astype(np.int64)
                    for a in _bin_stats(cum, edges, (0, 2), rows=rows))
        bad = _decreasing(cnt, pos)
        best[rows[~bad]] = n_bins
        active[rows[bad]] = False
    return best


def _cv(fam, codes: np.ndarray, y: np.ndarray, cd: _Codes) -> np.ndarray:
    """B chosen by the family's CV on every row, the folds batched over rows."""
    n_rep, n = codes.shape
    cands = np.arange(1, int(fam.max_bins) + 1)
    folds = kfold_indices(n, int(fam.n_folds), int(fam.seed))
    cv = np.zeros((n_rep, cands.size))
    for train, test in folds:
        cum = _Cumulative(codes[:, train], y[:, train], cd)
        n_tr = train.size
        c_te, y_te = codes[:, test], y[:, test]
        s_te = cd.uniq[c_te]
        if fam.scheme == "es":
            k = cum.at(c_te + 1).astype(np.int64)   # training codes <= the held-out code
            kk = np.arange(n_tr + 1)
            bin_of_k = np.where(kk == 0, 0, _group_of(kk - 1, n_tr, cands[:, None]))
        all_edges = _edges_per_candidate(cum, cands, fam.scheme, cd)
        for j, n_bins in enumerate(cands):
            edges = all_edges[j]
            cnt, ssum, ysum = _bin_stats(cum, edges)
            if fam.scheme == "es":
                b_te = bin_of_k[j][k]
                if n_tr < n_bins:
                    b_te = b_te + (n_bins - n_tr) * (c_te >= cd.code_one)
            else:
                b_te = cd.ew_bins(int(n_bins))[c_te]
            b_te = b_te + n_bins * cum.row_off           # flat index into (R, B)
            full = cnt > 0
            safe = np.where(full, cnt, 1.0)
            if fam.map == "slope1":
                pred = s_te + np.where(full, (ysum - ssum) / safe, 0.0).ravel()[b_te]
            else:
                got = np.where(full, ysum / safe, np.nan).ravel()[b_te]
                pred = np.where(np.isnan(got), s_te, got)
            cv[:, j] += np.mean((pred - y_te) ** 2, axis=1)
    cv /= len(folds)
    return np.array([complexity_rule(cands, row, tol=float(fam.tol)) for row in cv])


def replicate_estimates(fam, s: np.ndarray, y: np.ndarray, idx: np.ndarray,
                        p: int = 1) -> np.ndarray:
    """Used L^p CE estimate of the binning family ``fam`` (its parameters only)
    refitted on every resample ``s[idx[r]], y[idx[r]]``, shape (R,)."""
    fam._check_params()
    cd = _Codes(s)
    codes, yy = cd.codes[idx], y[idx]
    cum = _Cumulative(codes, yy, cd)
    if fam.selection == "fixed":
        n_bins = np.full(idx.shape[0], int(fam.n_bins))
    elif fam.selection == "sweep":
        n_bins = _sweep(fam, cum, cd)
    else:
        n_bins = _cv(fam, codes, yy, cd)
    edges = _edges(cum, n_bins, int(n_bins.max()), fam.scheme, cd)
    return _used(*_bin_stats(cum, edges), p=p)
