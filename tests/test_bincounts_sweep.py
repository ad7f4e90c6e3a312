"""The binning sweep on many rows at once (families.bincounts.sweep) against a
plain loop written here, one row and one B at a time: the bins from the
docs/methods/02-binning.md §2.1 wording, the label means of the non-empty bins compared
as exact fractions. Rows are drawn as the consistency worlds of intervals draw
them (n points of a doubled sample, each score with label 0 and with label 1);
scores with ties, exactly 0 and 1, ten values spread over decades (most EW
bins empty for many B), rows monotone for every B."""
from fractions import Fraction

import numpy as np
import pytest

from fitontest import metrics
from fitontest.families import bincounts


def plain_bins(s, n_bins, scheme):
    """Bin of every score: EW min(floor(s B), B - 1); ES #{interior edges <= s},
    the edges the first scores of array_split groups 2..B (1.0 for an empty group)."""
    if scheme == "ew":
        return np.minimum(np.floor(s * n_bins).astype(int), n_bins - 1)
    groups = np.array_split(np.sort(s), n_bins)
    inner = np.array([g[0] if g.size else 1.0 for g in groups[1:]])
    return (s[:, None] >= inner[None, :]).sum(axis=1)


def plain_sweep(s, y, scheme, max_bins):
    """Last B before the first B whose non-empty bins' label means decrease."""
    cap = s.size if max_bins is None else min(max_bins, s.size)
    best = 1
    for n_bins in range(2, cap + 1):
        b = plain_bins(s, n_bins, scheme)
        means = [Fraction(int(y[b == j].sum()), int(np.sum(b == j)))
                 for j in range(n_bins) if np.any(b == j)]
        if any(later < earlier for earlier, later in zip(means, means[1:])):
            break
        best = n_bins
    return best


def scores(kind, n, rng):
    if kind == "decades":                 # scaling-binning-like: ten values, 0 and 1
        tail = np.logspace(-5, -0.7, 4)
        levels = np.concatenate(([0.0, 1.0], tail, 1.0 - tail))
        return rng.choice(levels, n)
    if kind == "ties":
        s = np.round(rng.random(n), 2)
        s[:6] = [0.0, 0.0, 1.0, 1.0, 1.0, 0.5]
        return s
    return 1.0 - rng.beta(0.4, 6.0, n)    # over-confident, continuous


def world_rows(s, rng, k):
    """Rows of n resampled points, labels Bernoulli(0.2 + 0.6 s) or, in every
    third row, monotone in the score (the row is monotone for every B)."""
    n = s.size
    idx = rng.integers(0, n, size=(k, n))
    y = rng.random((k, n)) < 0.2 + 0.6 * s[idx]
    y[::3] = s[idx[::3]] >= np.median(s)
    return idx + n * y


@pytest.fixture(params=["default", "small blocks, early shortcut", "no shortcut"])
def knobs(request, monkeypatch):
    """The EW block size, the ES steps' size (here one B a step) and the
    per-code shortcut's B change the work, never the outcome."""
    if request.param == "small blocks, early shortcut":
        monkeypatch.setattr(bincounts, "EW_CELLS", 40)
        monkeypatch.setattr(bincounts, "SWEEP_CELLS", 1)
        monkeypatch.setattr(bincounts, "SHORTCUT_AFTER", 3)
    elif request.param == "no shortcut":
        monkeypatch.setattr(bincounts, "SHORTCUT_AFTER", 10 ** 6)
    return request.param


@pytest.mark.parametrize("max_bins", [None, 40])
@pytest.mark.parametrize("scheme", ["ew", "es"])
@pytest.mark.parametrize("kind", ["decades", "ties", "overconfident"])
def test_sweep_of_many_rows_equals_a_plain_loop_per_row_and_b(kind, scheme, max_bins, knobs):
    rng = np.random.default_rng([len(kind), len(knobs), max_bins or 0])
    n = 90
    s = scores(kind, n, rng)
    s2, y2 = np.concatenate((s, s)), np.concatenate((np.zeros(n), np.ones(n)))
    rows = world_rows(s, rng, 6)
    codes = bincounts.Codes(s2, y2)
    got = bincounts.sweep(bincounts.Dense.of_pairs(codes.pairs[rows], codes), codes, scheme,
                          max_bins)
    want = [plain_sweep(s2[r], y2[r], scheme, max_bins) for r in rows]
    np.testing.assert_array_equal(got, want)
    cap = n if max_bins is None else max_bins
    assert np.all(got[::3] == cap)          # the monotone rows reach the cap
    assert np.any(got < cap)


def test_ew_changes_are_the_b_where_the_non_empty_bins_change(monkeypatch):
    monkeypatch.setattr(bincounts, "EW_CELLS", 30)        # many small blocks
    rng = np.random.default_rng(5)
    s = np.concatenate((scores("decades", 40, rng), scores("ties", 40, rng)))
    codes = bincounts.Codes(s, s > 0.5)
    want, prev = [], None
    for n_bins in range(2, 301):
        b = plain_bins(codes.uniq, n_bins, "ew")      # the bin of every distinct score
        first = [0] + [c for c in range(1, codes.m) if b[c] != b[c - 1]] + [codes.m]
        if first != prev:
            want.append((n_bins, first))
        prev = first
    assert len(want) > 20
    for cap in (120, 300, 50):                 # extends the kept list, then reads it back
        got = [(n_bins, e[0].tolist()) for n_bins, e in codes.ew_changes(cap)]
        assert got == [w for w in want if w[0] <= cap]


@pytest.mark.parametrize("p", [1, 2])
def test_used_estimates_of_the_non_empty_bins_are_those_of_all_bins(p):
    """Terms of the non-empty bins only, put back in place, give the estimate
    of every bin's terms to the last bit."""
    rng = np.random.default_rng(p)
    counts = rng.integers(0, 4, size=(7, 300)) * (rng.random((7, 300)) < 0.1)
    counts[:, 0] += 1
    sum_y = rng.binomial(counts, 0.7).astype(float)
    counts = counts.astype(float)
    sum_s = counts * rng.random(counts.shape)
    safe = np.where(counts > 0, counts, 1.0)
    terms = metrics.debiased_bin_terms(counts, sum_s / safe, sum_y / safe, p=p)
    want = np.sum(counts * terms, axis=1) / counts.sum(axis=1)
    np.testing.assert_array_equal(bincounts.used_estimates(counts, sum_s, sum_y, p), want)
