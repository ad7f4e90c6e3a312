"""The batched CV of the binning families (families.bincounts) against a naive
per-point loop written here: held-out edges, both ways of counting per row
(histogram and search), rows shorter than the sample as the consistency
worlds of intervals draw them, n not divisible by the folds, tied scores
(empty bins), fewer training points than candidate bins."""
import numpy as np
import pytest

from fitontest import families, metrics
from fitontest.families import bincounts, bincv
from fitontest.families.binning import BinningFamily
from fitontest.core.selection import complexity_rule, kfold_indices


@pytest.fixture(params=["histogram", "search"])
def counting(request, monkeypatch):
    """Force one of count_rows' two ways (the threshold decides otherwise)."""
    monkeypatch.setattr(bincv, "DENSE_PER_NEEDLE", 10 ** 9 if request.param == "histogram"
                        else 0)
    return request.param


def naive_edges(s, n_bins, scheme):
    if scheme == "ew":
        return np.arange(n_bins + 1) / n_bins
    groups = np.array_split(np.sort(s), n_bins)
    return np.array([0.0] + [g[0] if g.size else 1.0 for g in groups[1:]] + [1.0])


def naive_bins(s, y, edges):
    """(count, score sum, label sum) per bin; score t is in bin #{interior edges <= t}."""
    b = np.array([sum(t >= e for e in edges[1:-1]) for t in s], dtype=int)
    n_bins = len(edges) - 1
    return [(np.sum(b == j), s[b == j].sum(), y[b == j].sum()) for j in range(n_bins)]


def naive_cv(s, y, scheme, max_bins, n_folds, seed, map_):
    out = np.zeros(max_bins)
    for train, test in kfold_indices(s.size, n_folds, seed):
        for n_bins in range(1, max_bins + 1):
            e = naive_edges(s[train], n_bins, scheme)
            st = naive_bins(s[train], y[train], e)
            err = 0.0
            for t, yt in zip(s[test], y[test]):
                cnt, ss, sy = st[sum(t >= v for v in e[1:-1])]
                c = t if cnt == 0 else (t + (sy - ss) / cnt if map_ == "slope1" else sy / cnt)
                err += (c - yt) ** 2
            out[n_bins - 1] += err / test.size / n_folds
    return out


def naive_used(fam, s, y, p=1):
    cv = naive_cv(s, y, fam.scheme, fam.max_bins, fam.n_folds, fam.seed, fam.map)
    n_bins = complexity_rule(np.arange(1, fam.max_bins + 1), cv, tol=fam.tol)
    st = naive_bins(s, y, naive_edges(s, n_bins, fam.scheme))
    n = np.array([c for c, _, _ in st], dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_s = np.array([a for _, a, _ in st]) / n
        mean_y = np.array([b for _, _, b in st]) / n
    return metrics.debiased_ece(n, mean_s, mean_y, p=p), cv


@pytest.mark.parametrize("n, n_folds, max_bins", [(31, 10, 40), (57, 4, 9)])
def test_count_rows_equals_a_search_per_row(counting, n, n_folds, max_bins):
    rng = np.random.default_rng(n)
    values = np.sort(rng.integers(0, 50, size=(4, n)), axis=1)
    needles = np.sort(rng.integers(0, 51, size=(4, 3 * max_bins)), axis=1)
    for side in ("left", "right"):
        want = np.stack([np.searchsorted(v, q, side=side) for v, q in zip(values, needles)])
        np.testing.assert_array_equal(bincv.count_rows(values, needles, 50, side), want)


CASES = [("es", "slope1", 10, 40), ("ew", "slope1", 10, 40),
         ("es", "flat", 4, 9), ("ew", "flat", 3, 12)]


@pytest.mark.parametrize("scheme, map_, n_folds, max_bins", CASES)
def test_cv_of_tied_scores_equals_naive_loop(counting, scheme, map_, n_folds, max_bins):
    """Scores on few values with 0 and 1 among them: many bins are empty, and
    n = 43 is not divisible by the folds; with 10 folds the training folds
    (38-39 points) have fewer points than the largest candidates' bins."""
    rng = np.random.default_rng([n_folds, max_bins, ord(scheme[1])])
    s = rng.choice([0.0, 0.05, 0.3, 0.31, 0.7, 1.0], 43)
    y = (rng.random(43) < s ** 1.3).astype(float)
    fam = BinningFamily(scheme=scheme, selection="cv", max_bins=max_bins,
                                 n_folds=n_folds, seed=4, map=map_).fit(s, y)
    want, cv = naive_used(fam, s, y)
    np.testing.assert_allclose(fam.cv_scores_, cv, rtol=1e-12, atol=1e-15)
    assert fam.ce_estimate_debiased(s) == pytest.approx(want, abs=1e-13)


@pytest.mark.parametrize("scheme, map_, n_folds, max_bins", CASES)
def test_replicates_of_short_rows_equal_naive_loop(counting, scheme, map_, n_folds, max_bins):
    """Rows of n = 37 points drawn from a doubled sample of 74 (each score with
    label 0 and label 1), as intervals.world_replicates draws them; continuous
    scores for ES (every edge a distinct code), rounded ones for EW."""
    rng = np.random.default_rng([n_folds, max_bins, ord(scheme[1]), 1])
    n = 37
    s = rng.random(n) if scheme == "es" else np.round(rng.random(n), 1)
    s2, y2 = np.concatenate((s, s)), np.concatenate((np.zeros(n), np.ones(n)))
    idx = rng.integers(0, n, size=(3, n)) + n * (rng.random((3, n)) < s[None, :] ** 1.5)
    fam = BinningFamily(scheme=scheme, selection="cv", max_bins=max_bins,
                                 n_folds=n_folds, seed=1, map=map_)
    got = fam.bootstrap_replicates(s2, y2, [idx], p=1)
    want = [naive_used(fam, s2[r], y2[r])[0] for r in idx]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_held_out_edges_are_the_training_folds_codes(counting):
    """ES edges of a training fold (row less held-out) at every candidate's
    sorted positions, and the held-out points below each, against sorting the
    training fold directly."""
    rng = np.random.default_rng(8)
    s = np.round(rng.random(200), 2)
    codes = bincounts.Codes(s, (rng.random(200) < s).astype(float))
    pairs = codes.pairs[rng.integers(0, 200, size=(5, 123))]
    sample = bincounts.Dense.of_pairs(pairs, codes)
    test = bincv.fold_tests(families.get("ece_es_cv"), 123)[3]
    held = np.sort(pairs[:, test] % codes.m, axis=1)
    cands = tuple(range(1, 41))
    c, j, _, _ = bincv.held_out_edges(sample, held, codes, "es", cands)
    u = bincv.es_columns(123 - test.size, cands)[0]
    train = np.delete(pairs, test, axis=1) % codes.m
    held = pairs[:, test] % codes.m
    for r in range(5):
        want = np.sort(train[r])[u]
        np.testing.assert_array_equal(c[r, 1:u.size + 1], want)
        np.testing.assert_array_equal(j[r, 1:u.size + 1],
                                      [(held[r] < code).sum() for code in want])


def test_blocks_of_the_same_points_reuse_the_label_free_part(monkeypatch):
    """The consistency worlds pass blocks of the same points with other labels
    in turn: the CV's label-free part is built once per chunk of rows (two
    chunks of 2 and 1 rows here) and every world's replicates still equal the
    naive loop's."""
    rng = np.random.default_rng(11)
    n = 41
    s = rng.random(n)
    s2, y2 = np.concatenate((s, s)), np.concatenate((np.zeros(n), np.ones(n)))
    idx, u = rng.integers(0, n, size=(3, n)), rng.random((3, n))
    worlds = [idx + n * (u < t * s[idx]) for t in (0.5, 1.0, 1.5)]
    built = []

    class Counted(bincv.CVCodes):
        def __init__(self, *args, **kw):
            built.append(1)
            super().__init__(*args, **kw)

    monkeypatch.setattr(bincounts, "CVCodes", Counted)
    monkeypatch.setattr(bincounts, "CHUNK_BYTES", 8 * 10 * n * 2)      # 2 rows a chunk
    fam = BinningFamily(scheme="es", selection="cv", max_bins=12, n_folds=5, seed=2)
    got = fam.bootstrap_replicates(s2, y2, iter(worlds), p=1)
    assert len(built) == 2
    want = [naive_used(fam, s2[r], y2[r])[0] for w in worlds for r in w]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("scheme, map_", [("es", "slope1"), ("ew", "flat")])
def test_kept_label_free_part_gives_every_world_its_own_cv_scores_exactly(scheme, map_):
    """The per-bin counts and score sums kept across worlds are read, never
    changed: each world's CV scores from the part built for the first world
    equal those from a part built afresh, to the last bit."""
    rng = np.random.default_rng(12)
    n = 60
    s = np.round(rng.random(n), 2)
    codes = bincounts.Codes(np.concatenate((s, s)), np.repeat([0.0, 1.0], n))
    idx, u = rng.integers(0, n, size=(4, n)), rng.random((4, n))
    worlds = [codes.pairs[idx + n * (u < t * s[idx])] for t in (0.0, 0.6, 1.0, 1.8)]
    fam = BinningFamily(scheme=scheme, selection="cv", max_bins=15, n_folds=5, seed=3, map=map_)
    kept = bincounts.fit_rows(fam, worlds[0], codes)[6]
    for pairs in worlds:
        again = bincounts.fit_rows(fam, pairs, codes, shared=kept)[5]
        np.testing.assert_array_equal(again, bincounts.fit_rows(fam, pairs, codes)[5])
