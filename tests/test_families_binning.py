"""Binning families against textbook formulas written independently here."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fitontest import families, metrics
from fitontest.families.binning import BinningFamily
from fitontest.core.selection import complexity_rule, kfold_indices


# ---------------------------------------------------------------- textbook
def textbook_bins(s, n_bins, scheme):
    """Bin of every score straight from the docs/methods/README.md wording (mask per bin)."""
    s = np.asarray(s, dtype=float)
    if scheme == "ew":
        return np.minimum(np.floor(s * n_bins).astype(int), n_bins - 1)
    groups = np.array_split(np.sort(s), n_bins)
    edges = [0.0] + [g[0] if g.size else 1.0 for g in groups[1:]] + [1.0]
    idx = np.full(s.shape, -1)
    for b in range(n_bins):
        if b < n_bins - 1:
            m = (s >= edges[b]) & (s < edges[b + 1])
        else:
            m = (s >= edges[b]) & (s <= 1.0)
        assert np.all(idx[m] == -1)
        idx[m] = b
    assert np.all(idx >= 0)
    return idx


def textbook_ece(s, y, n_bins, scheme, p=1):
    idx = textbook_bins(s, n_bins, scheme)
    total = 0.0
    for b in range(n_bins):
        m = idx == b
        if m.any():
            total += m.mean() * abs(s[m].mean() - y[m].mean()) ** p
    return total


def textbook_debiased(s, y, n_bins, scheme, p):
    from scipy.stats import norm

    idx = textbook_bins(s, n_bins, scheme)
    total = 0.0
    for b in range(n_bins):
        m = idx == b
        nb = m.sum()
        if not nb:
            continue
        sb, yb = s[m].mean(), y[m].mean()
        if p == 2:
            corr = yb * (1 - yb) / (nb - 1) if nb > 1 else 0.0
            total += nb / s.size * ((sb - yb) ** 2 - corr)
        else:
            sig = np.sqrt(yb * (1 - yb) / nb)
            d = abs(sb - yb)
            fold = d if sig == 0 else (sig * np.sqrt(2 / np.pi) * np.exp(-d * d / (2 * sig * sig))
                                       + d * (1 - 2 * norm.cdf(-d / sig)))
            total += nb / s.size * (2 * d - fold)
    return total


scores_st = st.one_of(
    st.floats(0, 1, allow_nan=False),
    st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.7, 1.0]),    # ties and the ends
)


@settings(max_examples=150, deadline=None)
@given(s=st.lists(scores_st, min_size=2, max_size=60),
       data=st.data(), n_bins=st.integers(1, 20), scheme=st.sampled_from(["es", "ew"]),
       p=st.sampled_from([1, 2]))
def test_theorem2_classic_ece_is_ce_estimate_of_slope1_map(s, data, n_bins, scheme, p):
    s = np.array(s)
    y = np.array(data.draw(st.lists(st.integers(0, 1), min_size=s.size, max_size=s.size)),
                 dtype=float)
    fam = BinningFamily(scheme=scheme, n_bins=n_bins).fit(s, y)
    assert np.array_equal(fam.bin_index(s), textbook_bins(s, n_bins, scheme))
    assert metrics.ce_estimate(s, fam.predict(s), p=p) == pytest.approx(
        textbook_ece(s, y, n_bins, scheme, p), abs=1e-12)
    assert fam.ce_estimate(s, p=p) == pytest.approx(textbook_ece(s, y, n_bins, scheme, p), abs=1e-12)
    assert fam.ce_estimate_debiased(s, p=p) == pytest.approx(
        textbook_debiased(s, y, n_bins, scheme, p), abs=1e-12)


def test_registered_defaults():
    assert families.get("ece_es15").get_params()["n_bins"] == 15
    assert families.get("ece_ew15").get_params()["scheme"] == "ew"
    assert families.get("ece_es_cv").get_params()["max_bins"] == 40
    assert families.get("ece_ew_sweep").get_params()["selection"] == "sweep"


def test_edges_ends_and_ties():
    s = np.array([0.0, 0.1, 0.2, 0.3, 0.3, 0.3, 0.6, 0.9, 1.0])
    y = np.zeros_like(s)
    es = BinningFamily(scheme="es", n_bins=3).fit(s, y)
    # groups of 3: [0, .1, .2], [.3, .3, .3], [.6, .9, 1] -> edges 0, .3, .6, 1
    assert np.allclose(es.edges_, [0, 0.3, 0.6, 1.0])
    assert es.bin_index([0.0, 1.0, 0.3, 0.2999])[:].tolist() == [0, 2, 1, 0]
    ew = BinningFamily(scheme="ew", n_bins=4).fit(s, y)
    assert ew.bin_index([0.0, 0.25, 1.0]).tolist() == [0, 1, 3]
    # a group boundary inside a run of ties: the whole run goes to the later bin
    s2 = np.array([0.1, 0.2, 0.2, 0.2, 0.2, 0.5])
    es2 = BinningFamily(scheme="es", n_bins=2).fit(s2, np.zeros(6))
    assert es2.edges_[1] == 0.2 and es2.bin_counts_.tolist() == [1, 5]
    # many exact zeros: [0, 0) is empty and 0 lands in the first non-empty bin
    s3 = np.array([0.0] * 6 + [0.5, 0.7])
    es3 = BinningFamily(scheme="es", n_bins=4).fit(s3, np.zeros(8))
    assert es3.bin_counts_[0] == 0 and es3.bin_index([0.0])[0] == es3.bin_index([0.0, 0.4])[1]
    # fewer points than bins: trailing empty bins, 1.0 in the last one
    es4 = BinningFamily(scheme="es", n_bins=5).fit([0.2, 0.5, 0.9], [0, 1, 1])
    assert es4.bin_counts_.tolist() == [1, 1, 1, 0, 0] and es4.bin_index([1.0])[0] == 4


def test_es_bins_have_array_split_sizes_without_ties():
    rng = np.random.default_rng(1)
    s = rng.random(1003)
    fam = BinningFamily(scheme="es", n_bins=15).fit(s, rng.integers(0, 2, s.size))
    assert fam.bin_counts_.tolist() == [len(g) for g in np.array_split(s, 15)]


def test_maps_flat_slope1_and_empty_bins():
    s = np.array([0.05, 0.15, 0.85, 0.95])
    y = np.array([0, 1, 1, 1.0])
    fam = BinningFamily(scheme="ew", n_bins=4).fit(s, y)
    # bin 0: sbar .1, ybar .5 ; bins 1, 2 empty ; bin 3: sbar .9, ybar 1
    assert np.allclose(fam.predict_flat([0.1, 0.3, 0.6, 0.9]), [0.5, 0.3, 0.6, 1.0])
    assert np.allclose(fam.predict_slope1([0.1, 0.3, 0.6, 0.99]), [0.5, 0.3, 0.6, 1.09])
    assert fam.predict([0.99])[0] > 1.0          # slope-1 is not clipped (Theorem 2)
    flat = BinningFamily(scheme="ew", n_bins=4, map="flat").fit(s, y)
    assert np.allclose(flat.predict([0.1]), [0.5])


def naive_cv_scores(s, y, scheme, max_bins, n_folds, seed):
    out = np.zeros(max_bins)
    for train, test in kfold_indices(s.size, n_folds, seed):
        for b in range(1, max_bins + 1):
            f = BinningFamily(scheme=scheme, n_bins=b).fit(s[train], y[train])
            out[b - 1] += np.mean((f.predict(s[test]) - y[test]) ** 2) / n_folds
    return out


@pytest.mark.parametrize("scheme", ["es", "ew"])
def test_vectorised_cv_equals_naive_loop(scheme):
    rng = np.random.default_rng(2)
    s = np.round(rng.random(400) ** 2, 2)            # heavy ties
    s[:5], s[5:9] = 0.0, 1.0
    y = (rng.random(400) < np.sqrt(s)).astype(float)
    fam = BinningFamily(scheme=scheme, selection="cv", max_bins=25, n_folds=5, seed=3).fit(s, y)
    ref = naive_cv_scores(s, y, scheme, 25, 5, 3)
    assert np.allclose(fam.cv_scores_, ref, rtol=1e-12, atol=1e-14)
    assert fam.candidates_.tolist() == list(range(1, 26))
    assert fam.n_bins_ == complexity_rule(fam.candidates_, ref, tol=1e-3)


def test_cv_one_bin_is_exact_model_and_wins_by_the_01_percent_rule():
    # c(s) = s - 0.05 on s ~ U(0.05, 1): the one-bin slope-1 map s + (ybar - sbar)
    # is the true model, every extra bin only adds variance, so all CV scores lie
    # within noise of each other and the 0.1 % rule picks B = 1 even though the
    # arg-min (tol = 0) is a larger B here.
    # (n = 20000: the expected excess of each extra bin, ~var/n_train ~ 0.005 %,
    # is far below 0.1 %, while CV noise still moves the arg-min)
    rng = np.random.default_rng(1)
    s = 0.05 + 0.95 * rng.random(20000)
    y = (rng.random(20000) < s - 0.05).astype(float)
    fam = families.get("ece_ew_cv").fit(s, y)
    assert fam.n_bins_ == 1
    best = int(fam.candidates_[np.argmin(fam.cv_scores_)])
    assert best > 1 and fam.cv_scores_[0] <= fam.cv_scores_.min() * 1.001
    argmin = families.get("ece_ew_cv", tol=0.0).fit(s, y)
    assert argmin.n_bins_ == best
    # a step-shaped truth: one bin cannot fit, CV must choose more
    y2 = (rng.random(20000) < np.where(s < 0.5, 0.1, 0.9)).astype(float)
    assert families.get("ece_ew_cv").fit(s, y2).n_bins_ > 1


def test_sweep_by_hand_and_against_refits():
    s = np.linspace(0.01, 0.99, 200)
    # labels increasing in s: every B stays monotone -> the cap
    fam = BinningFamily(scheme="es", selection="sweep", max_bins=30).fit(s, s > 0.5)
    assert fam.n_bins_ == 30
    # labels decreasing in s: B = 2 already breaks monotonicity -> 1
    assert BinningFamily(scheme="ew", selection="sweep").fit(s, s < 0.5).n_bins_ == 1
    rng = np.random.default_rng(4)
    for scheme in ("es", "ew"):
        s = rng.random(500)
        y = (rng.random(500) < s).astype(float)
        fam = BinningFamily(scheme=scheme, selection="sweep", max_bins=None).fit(s, y)
        # reference: refit every B and look at the flat bin means of non-empty bins
        b = 1
        while True:
            f = BinningFamily(scheme=scheme, n_bins=b + 1).fit(s, y)
            means = f.bin_mean_labels_[f.bin_counts_ > 0]
            if np.any(np.diff(means) < 0):
                break
            b += 1
        assert fam.n_bins_ == b


def test_debiased_on_fitting_scores_is_paper_formula_and_reweights_other_scores():
    rng = np.random.default_rng(6)
    s = rng.random(300)
    y = (rng.random(300) < s ** 2).astype(float)
    fam = families.get("ece_es15").fit(s, y)
    for p in (1, 2):
        direct = metrics.debiased_ece(fam.bin_counts_, fam.bin_mean_scores_,
                                      fam.bin_mean_labels_, p=p)
        assert fam.ce_estimate_debiased(s, p=p) == pytest.approx(direct, abs=1e-15)
        terms = metrics.debiased_bin_terms(fam.bin_counts_, fam.bin_mean_scores_,
                                           fam.bin_mean_labels_, p=p)
        other = rng.random(50)
        w = np.bincount(fam.bin_index(other), minlength=15) / 50
        assert fam.ce_estimate_debiased(other, p=p) == pytest.approx(w @ terms, abs=1e-15)


def test_debiased_l2_is_unbiased_monte_carlo():
    # truth constant within each EW bin: E[debiased L2] = sum_b n_b/n (sbar_b - q_b)^2
    rng = np.random.default_rng(7)
    s = rng.random(200)
    q_of_bin = np.array([0.1, 0.5, 0.3, 0.9, 0.6])
    idx = np.minimum((s * 5).astype(int), 4)
    q = q_of_bin[idx]
    target = sum((idx == b).mean() * (s[idx == b].mean() - q_of_bin[b]) ** 2 for b in range(5))
    reps = 3000
    vals = np.empty(reps)
    plug = np.empty(reps)
    for r in range(reps):
        y = (rng.random(200) < q).astype(float)
        fam = BinningFamily(scheme="ew", n_bins=5).fit(s, y)
        vals[r] = fam.ce_estimate_debiased(s, p=2)
        plug[r] = fam.ce_estimate(s, p=2)
    se = vals.std() / np.sqrt(reps)
    assert abs(vals.mean() - target) < 4 * se
    assert plug.mean() - target > 10 * se          # the plug-in is biased upwards


def test_debiased_l1_matches_monte_carlo_of_its_expectation():
    rng = np.random.default_rng(8)
    s = rng.random(120)
    y = (rng.random(120) < s).astype(float)
    fam = BinningFamily(scheme="es", n_bins=6).fit(s, y)
    n, sb, yb = fam.bin_counts_, fam.bin_mean_scores_, fam.bin_mean_labels_
    r = rng.normal(yb[:, None], np.sqrt(yb * (1 - yb) / n)[:, None], size=(6, 400_000))
    mc = np.sum(n / n.sum() * (2 * np.abs(sb - yb) - np.abs(sb[:, None] - r).mean(axis=1)))
    assert fam.ce_estimate_debiased(s, p=1) == pytest.approx(mc, abs=1e-3)


def test_bad_parameters_are_named():
    s, y = [0.1, 0.6, 0.8], [0, 1, 1]
    with pytest.raises(ValueError, match="scheme"):
        BinningFamily(scheme="xx").fit(s, y)
    with pytest.raises(ValueError, match="n_bins"):
        BinningFamily(n_bins=0).fit(s, y)
    with pytest.raises(ValueError, match="map"):
        BinningFamily(map="xx").fit(s, y)
    with pytest.raises(ValueError, match="fewer points"):
        families.get("ece_es_cv").fit(s, y)
    BinningFamily(n_bins=15).fit(s, y)            # fixed B needs no folds


# ------------------------------------------- the one implementation vs a naive loop
def naive_edges(s, n_bins, scheme):
    """Score edges from the docs/methods/02-binning.md §2.1 wording, one group at a time."""
    if scheme == "ew":
        return [b / n_bins for b in range(n_bins + 1)]
    groups = np.array_split(np.sort(s), n_bins)
    return [0.0] + [g[0] if g.size else 1.0 for g in groups[1:]] + [1.0]


def naive_bins(s, y, edges):
    """(count, mean score, mean label) of every bin, one bin at a time; NaN when empty."""
    out = []
    for b in range(len(edges) - 1):
        last = b == len(edges) - 2
        m = (s >= edges[b]) & ((s <= edges[b + 1]) if last else (s < edges[b + 1]))
        out.append((m.sum(), s[m].mean() if m.any() else np.nan,
                    y[m].mean() if m.any() else np.nan))
    return out


def naive_map(stats, edges, t, map_):
    """The fitted map at score t (identity in empty bins)."""
    b = sum(t >= e for e in edges[1:-1])
    n, sb, yb = stats[b]
    if n == 0:
        return t
    return t + (yb - sb) if map_ == "slope1" else yb


def naive_sweep(s, y, scheme, max_bins):
    cap = s.size if max_bins is None else min(max_bins, s.size)
    best = 1
    for n_bins in range(2, cap + 1):
        means = [yb for n, _, yb in naive_bins(s, y, naive_edges(s, n_bins, scheme)) if n]
        if any(means[i + 1] < means[i] for i in range(len(means) - 1)):
            break
        best = n_bins
    return best


def naive_cv(s, y, scheme, max_bins, n_folds, seed, map_):
    scores = np.zeros(max_bins)
    for train, test in kfold_indices(s.size, n_folds, seed):
        for n_bins in range(1, max_bins + 1):
            e = naive_edges(s[train], n_bins, scheme)
            st = naive_bins(s[train], y[train], e)
            err = [(naive_map(st, e, t, map_) - yt) ** 2 for t, yt in zip(s[test], y[test])]
            scores[n_bins - 1] += np.mean(err) / n_folds
    return scores


def naive_fit(fam, s, y):
    """(B, per-bin stats, CV scores or None) of ``fam``'s parameters on (s, y)."""
    cv = None
    if fam.selection == "fixed":
        n_bins = fam.n_bins
    elif fam.selection == "sweep":
        n_bins = naive_sweep(s, y, fam.scheme, fam.max_bins)
    else:
        cv = naive_cv(s, y, fam.scheme, fam.max_bins, fam.n_folds, fam.seed, fam.map)
        n_bins = complexity_rule(np.arange(1, fam.max_bins + 1), cv, tol=fam.tol)
    return n_bins, naive_bins(s, y, naive_edges(s, n_bins, fam.scheme)), cv


def naive_used(stats, p):
    n = np.array([st[0] for st in stats], dtype=float)
    return metrics.debiased_ece(n, [st[1] for st in stats], [st[2] for st in stats], p=p)


def _sample(kind, n, rng):
    s = rng.random(n) if kind == "random" else rng.choice([0.0, 0.2, 0.35, 0.5, 0.8, 1.0], n)
    return s, (rng.random(n) < s ** 1.5).astype(float)


NAIVE_CASES = [("es", "fixed", {"n_bins": 7}), ("ew", "fixed", {"n_bins": 7}),
               ("es", "sweep", {"max_bins": None}), ("ew", "sweep", {"max_bins": None}),
               ("es", "cv", {"max_bins": 9, "n_folds": 4}),
               ("ew", "cv", {"max_bins": 9, "n_folds": 4, "map": "flat"})]


@pytest.mark.parametrize("kind", ["random", "tied"])
@pytest.mark.parametrize("scheme, selection, kw", NAIVE_CASES)
def test_single_fit_equals_naive_per_bin_loop(kind, scheme, selection, kw):
    rng = np.random.default_rng([ord(c) for c in kind + scheme + selection])
    s, y = _sample(kind, 90, rng)
    fam = BinningFamily(scheme=scheme, selection=selection, seed=5, **kw).fit(s, y)
    n_bins, stats, cv = naive_fit(fam, s, y)
    assert fam.n_bins_ == n_bins
    np.testing.assert_array_equal(fam.bin_counts_, [st[0] for st in stats])
    np.testing.assert_allclose(fam.bin_mean_scores_, [st[1] for st in stats], rtol=1e-13)
    np.testing.assert_allclose(fam.bin_mean_labels_, [st[2] for st in stats], rtol=1e-13)
    if cv is not None:
        np.testing.assert_allclose(fam.cv_scores_, cv, rtol=1e-12)
    for p in (1, 2):
        assert fam.ce_estimate_debiased(s, p=p) == pytest.approx(naive_used(stats, p), abs=1e-13)


@pytest.mark.parametrize("kind", ["random", "tied"])
@pytest.mark.parametrize("scheme, selection, kw", NAIVE_CASES)
def test_replicates_equal_naive_per_bin_loop_on_each_resample(kind, scheme, selection, kw):
    """The batched replicates (many rows of counts) against the naive fit of
    every resample; the resamples are those of default_rng(seed).integers."""
    from fitontest.families.base import resample_chunks

    rng = np.random.default_rng([ord(c) for c in selection + kind + scheme])
    s, y = _sample(kind, 70, rng)
    fam = BinningFamily(scheme=scheme, selection=selection, seed=2, **kw)
    idx = np.random.default_rng(9).integers(0, s.size, size=(4, s.size))
    want = [naive_used(naive_fit(fam, s[ix], y[ix])[1], 1) for ix in idx]
    one_by_one = fam.bootstrap_replicates(s, y, resample_chunks(s.size, 4, 9,
                                                                max_bytes=s.size * 8))
    together = fam.bootstrap_replicates(s, y, [idx])          # four rows in one pass
    np.testing.assert_allclose(one_by_one, want, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(together, want, rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("scheme", ["es", "ew"])
def test_fewer_points_than_bins_with_scores_at_one_equal_naive_loop(scheme):
    # missing ES edges are 1.0, so every 1.0 goes to the last bin
    s = np.array([0.2, 1.0, 0.5, 1.0, 0.3])
    y = np.array([0.0, 1.0, 1.0, 1.0, 0.0])
    fam = BinningFamily(scheme=scheme, n_bins=7).fit(s, y)
    _, stats, _ = naive_fit(fam, s, y)
    np.testing.assert_array_equal(fam.bin_counts_, [st[0] for st in stats])
    assert fam.bin_counts_[-1] == 2
    idx = np.random.default_rng(3).integers(0, s.size, size=(6, s.size))
    want = [naive_used(naive_fit(fam, s[ix], y[ix])[1], 2) for ix in idx]
    np.testing.assert_allclose(fam.bootstrap_replicates(s, y, [idx], p=2), want, atol=1e-13)
