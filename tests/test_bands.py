"""Bands for the calibration map (fitontest.inference.bands, docs/methods/11-tests-and-bands.md §11.9)."""
from __future__ import annotations

import json
import warnings
from importlib import resources

import numpy as np
import pytest
from scipy import stats

from conftest import REPO
from fitontest import metrics
from fitontest.inference.world_band import _reference_fitter
from fitontest.inference.bands import (AUTO, BandCoverageWarning, band_validity,
                             monotone_band_test, reliability_band, world_parts)
from fitontest.inference import domains
from fitontest.data import synthetic
from fitontest.inference.monotone_band import dyadic_runs, monotone_band


def _grid(shape, ce):
    """101 points between the 2.5 % and 97.5 % score quantiles (c ~ U(0, 1))."""
    return np.linspace(*synthetic.forward(shape, ce)(np.array([0.025, 0.975])), 101)


def test_public_name():
    """reliability_band's home is fitontest.inference.bands; metrics' older
    address warns and gives the same function."""
    with pytest.deprecated_call(match="its home is fitontest.inference.bands"):
        assert metrics.reliability_band is reliability_band


def test_auto_band_holds_known_map_simultaneously():
    shape, ce, n = "sqrt", 0.1, 3000
    cmap, g = synthetic.true_map(shape, ce), _grid(shape, ce)
    held = []
    for seed in range(60):
        s, y, _ = synthetic.sample(shape, ce, n, seed)
        band = reliability_band(s, y, level=0.9, grid=g)
        assert band.simultaneous
        held.append(band.holds(cmap).all())
    assert np.mean(held) >= 0.85


def _flat_world(seed, n=300, c=0.02):
    rng = np.random.default_rng(seed)
    s = rng.random(n)
    return s, (rng.random(n) < c).astype(int)


def test_percentile_bootstrap_short_in_all_zero_bins():
    # c(s) = 0.02: most 20-point bins hold no positive, every resample of such a bin
    # has mean 0, so the percentile band is [0, 0] there and misses 0.02
    g = np.linspace(0.05, 0.95, 91)
    boot, cp, mono = [], [], []
    for seed in range(20):
        s, y = _flat_world(seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BandCoverageWarning)
            b = reliability_band(s, y, method="bootstrap", grid=g, seed=seed, n_boot=100)
            c = reliability_band(s, y, method="clopper_pearson", grid=g)
        m = reliability_band(s, y, method="monotone", grid=g)
        boot.append(b.holds(np.full(g.size, 0.02)).mean())
        cp.append(c.holds(np.full(g.size, 0.02)).mean())
        mono.append(m.holds(np.full(g.size, 0.02)).all())
        assert np.any((b.hi - b.lo) == 0.0)          # zero width where all labels are 0
    assert np.mean(boot) < 0.6
    assert np.mean(cp) >= 0.85
    assert np.mean(mono) >= 0.9


def brute_band(y, runs, a):
    """Per point i: the largest one-sided lower bound of the runs [j, k] ending at or
    before i and the smallest upper bound of those starting at or after i."""
    n = y.size
    lo, hi = np.zeros(n), np.ones(n)
    for i in range(n):
        for j, k in runs:
            m, t = k - j + 1, y[j:k + 1].sum()
            if k <= i and t > 0:
                lo[i] = max(lo[i], stats.beta.ppf(a, t, m - t + 1))
            if j >= i and t < m:
                hi[i] = min(hi[i], stats.beta.ppf(1 - a, t + 1, m - t))
    return lo, hi


def test_monotone_band_matches_brute_force():
    rng = np.random.default_rng(3)
    s = np.sort(rng.random(25))
    y = (rng.random(25) < s).astype(float)
    level = 0.8
    band = reliability_band(s, y, level=level, method="monotone", grid=s, n_groups=25)
    n = s.size
    runs = [(j, k) for j in range(n) for k in range(j, n)]
    lo, hi = brute_band(y, runs, (1 - level) / (n * (n + 1)))
    np.testing.assert_allclose(band.lo, lo, atol=1e-12)
    np.testing.assert_allclose(band.hi, hi, atol=1e-12)


def test_dyadic_band_matches_brute_force():
    # every group one point: the band is the max / min over the dyadic runs' bounds,
    # Bonferroni over their number
    rng = np.random.default_rng(5)
    n, level = 40, 0.8
    s = np.sort(rng.random(n))
    y = (rng.random(n) < s).astype(float)
    band = reliability_band(s, y, level=level, method="monotone_dyadic", grid=s, n_groups=n)
    runs = [(j, j + L - 1) for e in range(6) for L in [2 ** e]
            for j in range(0, n - L + 1, max(1, L // 2))]
    lo, hi = brute_band(y, runs, (1 - level) / (2 * len(runs)))
    np.testing.assert_allclose(band.lo, lo, atol=1e-12)
    np.testing.assert_allclose(band.hi, hi, atol=1e-12)
    j, k = np.triu_indices(n)
    assert dyadic_runs(j, k).sum() == len(runs)


def test_world_reference_refit_is_the_worlds_reference_map():
    from fitontest.inference.worlds import reference_gap

    for n in (60, 3000):
        s, y, _ = synthetic.sample("beta1", 0.1, n, 2)
        order = np.argsort(s)
        ss, yy = s[order], y[order].astype(float)
        fit, _, _ = _reference_fitter(ss)
        np.testing.assert_allclose(fit(yy[None, :], ss)[0],
                                   np.clip(ss + reference_gap(ss, yy, 1), 0, 1), atol=1e-12)


def _world(s, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BandCoverageWarning)   # measured short on step maps
        return reliability_band(s, y, method="world", **kw)


def test_world_band_holds_a_smooth_map_on_the_figures_grid():
    # the default grid runs from the smallest to the largest score, where the
    # reference map only extrapolates: there the band is the monotone band's
    shape, ce, n = "stairs", 0.1, 3000
    cmap = synthetic.true_map(shape, ce)
    held = []
    for seed in range(60):
        s, y, _ = synthetic.sample(shape, ce, n, 100 + seed)
        band = _world(s, y, level=0.9, seed=seed)
        assert band.simultaneous and band.method == "world"
        held.append(band.holds(cmap).all())
    assert np.mean(held) >= 0.85


def test_world_band_is_the_monotone_band_beyond_the_reference_bins():
    s, y, _ = synthetic.sample("sqrt", 0.1, 3000, 4)
    g = np.linspace(s.min(), s.max(), 201)
    parts = world_parts(s, y, g, seed=1)
    assert 0 < parts.inner.sum() < g.size
    band = _world(s, y, grid=g, seed=1)
    mono = monotone_band(s, y, g[~parts.inner], 0.9)
    np.testing.assert_array_equal(band.lo[~parts.inner], mono[0])
    np.testing.assert_array_equal(band.hi[~parts.inner], mono[1])
    # inside, the sup-t band around the reference fit: narrower than monotone there
    inside = reliability_band(s, y, method="monotone", grid=g[parts.inner])
    assert np.mean(band.hi - band.lo, where=parts.inner) < inside.width


def _step_world(seed, n=3000, steps=5):
    """Continuous scores, c(s) a step function with jumps of 1 / steps."""
    rng = np.random.default_rng(seed)
    s = rng.random(n)
    c = (np.floor(s * steps) + 0.5) / steps
    return s, (rng.random(n) < c).astype(int), lambda t: (np.floor(np.asarray(t) * steps)
                                                           + 0.5) / steps


def test_auto_takes_the_band_that_holds_step_maps_and_says_why():
    # a step map (a binned calibrator's): the narrow world band misses it, the
    # finite-sample monotone band auto takes holds it
    world, auto = [], []
    for seed in range(30):
        s, y, cmap = _step_world(seed)
        band = reliability_band(s, y)
        assert band.method == AUTO == "monotone" and "step maps" in band.reason
        auto.append(band.holds(cmap).all())
        world.append(_world(s, y, seed=seed).holds(cmap).all())
    assert np.mean(auto) >= 0.9
    assert np.mean(world) <= 0.2


def test_world_band_is_seeded_and_narrower_than_monotone():
    s, y, _ = synthetic.sample("sqrt", 0.05, 3000, 0)
    a = _world(s, y, seed=3)
    b = _world(s, y, seed=3)
    np.testing.assert_array_equal(a.lo, b.lo)
    assert a.width < reliability_band(s, y, method="monotone").width


@pytest.mark.parametrize("method", ["monotone", "monotone_dyadic"])
def test_monotone_ends_non_decreasing(method):
    s, y, _ = synthetic.sample("stairs", 0.1, 2000, 1)
    band = reliability_band(s, y, method=method)
    assert np.all(np.diff(band.lo) >= 0) and np.all(np.diff(band.hi) >= 0)
    assert np.all(band.lo <= band.hi)


def test_bands_contain_their_fitted_map():
    for seed in range(5):
        s, y, _ = synthetic.sample("beta2", 0.05, 3000, seed)
        for method in ("monotone", "monotone_dyadic", "world", "clopper_pearson",
                       "clopper_pearson_bonferroni", "bootstrap", "family_bootstrap"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", BandCoverageWarning)
                band = reliability_band(s, y, method=method, n_boot=30) if "boot" in method \
                    else reliability_band(s, y, method=method)
            assert band.holds(band.fit).all(), (method, seed)


@pytest.mark.parametrize("method", ["monotone", "monotone_dyadic", "world", "clopper_pearson",
                                    "bootstrap"])
def test_bands_shrink_with_n(method):
    g = _grid("square", 0.05)
    widths = []
    for n in (500, 3000, 20000):
        s, y, _ = synthetic.sample("square", 0.05, n, 0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BandCoverageWarning)
            widths.append(reliability_band(s, y, method=method, grid=g, n_boot=50).width
                          if method == "bootstrap" else
                          reliability_band(s, y, method=method, grid=g).width)
    assert widths[0] > widths[1] > widths[2]


@pytest.mark.parametrize("dyadic", [False, True])
def test_band_and_test_agree(dyadic):
    method = "monotone_dyadic" if dyadic else "monotone"
    outcomes = []
    for shape, ce in (("square", 0.0), ("sqrt", 0.05), ("beta2", 0.1), ("stairs", 0.1)):
        for seed in range(3):
            s, y, _ = synthetic.sample(shape, ce, 2000, seed)
            p = monotone_band_test(s, y, dyadic=dyadic).pvalue
            for level in (0.5, 0.8, 0.9, 0.95):
                inside = reliability_band(s, y, level=level, method=method).holds_diagonal()
                assert inside == (not p < 1 - level), (shape, ce, seed, level, p)
                outcomes.append(inside)
    assert any(outcomes) and not all(outcomes)    # both outcomes were checked


def test_band_test_holds_its_level_under_the_null():
    rejected = []
    for seed in range(40):
        rng = np.random.default_rng(seed)
        s = rng.beta(2, 5, 400)
        rejected.append(monotone_band_test(s, (rng.random(400) < s).astype(int)).pvalue < 0.1)
    assert np.mean(rejected) <= 0.1


def _worst_table():
    """(method, level) -> (worst coverage, samples) from the measured file's domain table."""
    text = (REPO / "benchmarks" / "measured" / "band_coverage.md").read_text()
    table = text.split("<!-- bands domain: worst cells of the run of record -->", 1)[1]
    rows = {}
    for line in table.strip().splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[(cells[0], float(cells[2]))] = (float(cells[4]) / 100, int(cells[5]), cells[3])
    return rows


def test_domain_file_is_the_measured_files_worst_cells():
    data = json.loads(resources.files("fitontest.inference").joinpath("measured", "bands.json")
                      .read_text())
    rows = _worst_table()
    assert data["measured_file"] == "benchmarks/measured/band_coverage.md"
    assert {(m, float(lv)) for m, e in data["methods"].items() for lv in e["cells"]} == set(rows)
    for (m, lv), (worst, k, ns) in rows.items():
        e = data["methods"][m]
        assert e["cells"][f"{lv:g}"] == [pytest.approx(worst), k]
        assert f"{e['domain']['n']['min']}-{e['domain']['n']['max']}" == ns


@pytest.mark.parametrize("method", ["monotone", "world", "bootstrap", "clopper_pearson"])
def test_valid_flag_follows_the_measured_file(method):
    # inside the domain the flag is the measured file's worst cell at that level,
    # read here from the .md (2 Monte Carlo SEs, SHORTFALL points of tolerance)
    s, y, _ = synthetic.sample("sqrt", 0.05, 500, 0)
    for (m, level), (worst, k, _) in _worst_table().items():
        if m != method:
            continue
        short = bool(worst + 2 * np.sqrt(level * (1 - level) / k) < level - domains.SHORTFALL)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            band = reliability_band(s, y, level=level, method=method)
        assert band.valid is (not short), (method, level, worst, band.validity_note)
        assert any(issubclass(w.category, BandCoverageWarning) for w in caught) is short
        assert "band_coverage.md" in band.validity_note


@pytest.mark.parametrize("kwargs, why", [
    (dict(level=0.99), "level 0.99"), (dict(n=30), "n = 30"), (dict(n=50_000), "n = 50000"),
    (dict(grid=np.linspace(0.1, 0.9, 50)), "grid = 'custom'"),
    (dict(method="world", n_boot=20), "n_boot = 20"),
    (dict(method="world", family="platt", n_boot=200), "family = 'platt'"),
    (dict(method="bootstrap", n_boot=50), "n_boot = 50"),
])
def test_outside_the_measured_domain_valid_is_none_with_the_reason(kwargs, why):
    kwargs = dict(kwargs)
    n = kwargs.pop("n", 300)
    rng = np.random.default_rng(2)
    s = rng.random(n)
    y = (rng.random(n) < s).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("error", BandCoverageWarning)     # None never warns
        band = reliability_band(s, y, **kwargs)
    assert band.valid is None
    assert "coverage not measured here" in band.validity_note and why in band.validity_note
    assert band.note == "coverage not measured here"
    if band.method == "monotone":
        assert "finite-sample guarantee" in band.validity_note


def test_band_validity_reads_the_domain_for_a_method_not_measured():
    assert band_validity("no_such_band", 0.9, 1000).valid is None


def test_measured_short_methods_warn_and_say_so():
    s, y, _ = synthetic.sample("sqrt", 0.05, 500, 0)
    with pytest.warns(BandCoverageWarning, match="bootstrap"):
        band = reliability_band(s, y, method="bootstrap")
    assert band.valid is False and not band.simultaneous and band.note == "measured short"
    with warnings.catch_warnings():
        warnings.simplefilter("error", BandCoverageWarning)
        default = reliability_band(s, y)
    assert default.method == "monotone" and default.valid is True and default.note == ""


def test_seeded_bootstrap_is_deterministic():
    s, y, _ = synthetic.sample("sqrt", 0.05, 500, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BandCoverageWarning)
        a = reliability_band(s, y, method="bootstrap", n_boot=30, seed=4)
        b = reliability_band(s, y, method="bootstrap", n_boot=30, seed=4)
    np.testing.assert_array_equal(a.lo, b.lo)
    np.testing.assert_array_equal(a.hi, b.hi)


@pytest.mark.parametrize("kwargs, match", [
    (dict(level=0.0), "level"), (dict(level=1.0), "level"), (dict(level=1.5), "level"),
    (dict(level=True), "level"), (dict(method="nope"), "method"),
    (dict(method="bootstrap", n_bins=15), "at least 30 points"),
    (dict(method="monotone", n_groups=0), "n_groups"),
    (dict(method="bootstrap", n_boot=1), "n_boot"),
    (dict(method="world", n_boot=5), "n_boot"),
    (dict(grid=[0.5, 0.2]), "sorted"),
    (dict(bins=3), "unknown option"),
])
def test_bad_input_errors(kwargs, match):
    rng = np.random.default_rng(0)
    n = 20 if kwargs.get("method") == "bootstrap" and "n_boot" not in kwargs else 200
    s = rng.random(n)
    y = (rng.random(n) < s).astype(int)
    with pytest.raises(ValueError, match=match):
        reliability_band(s, y, **kwargs)


def test_bad_data_errors():
    with pytest.raises(ValueError, match="differ in length"):
        reliability_band([0.1, 0.2, 0.3], [0, 1])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        reliability_band([0.1, 1.2, 0.3], [0, 1, 1])
    with pytest.raises(ValueError, match="at least 2"):
        reliability_band([0.1], [1])


def test_reliability_diagram_draws_band_with_legend():
    import matplotlib.pyplot as plt

    from fitontest.report.figures.reliability import reliability_diagram

    s, y, _ = synthetic.sample("sqrt", 0.05, 1000, 0)
    ax = reliability_diagram(s, y, band=0.9)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("90%" in t and "simultaneous" in t for t in labels)
    plt.close(ax.figure)


def test_auto_is_monotone_at_every_size():
    rng = np.random.default_rng(1)
    for n in (12, 300):
        s = rng.random(n)
        band = reliability_band(s, (rng.random(n) < s).astype(int))
        assert band.method == "monotone" and band.reason.startswith("auto")
    assert reliability_band(s, (s > 0.5).astype(int), method="monotone_dyadic").reason \
        == "monotone_dyadic: as requested"


def test_world_band_keeps_width_where_all_labels_are_zero():
    # the percentile bootstrap collapses to [0, 0] here; the worlds' map is kept off 0
    s, y = _flat_world(0, n=600, c=0.0)
    band = _world(s, y)
    assert np.all(band.lo == 0.0) and np.all(band.hi > 0.0)
    assert band.holds(np.full(band.s.size, 0.005)).all()


def test_world_band_with_another_family_is_not_called_measured():
    s, y, _ = synthetic.sample("sqrt", 0.05, 400, 0)
    band = reliability_band(s, y, method="world", family="platt", n_boot=20)
    assert band.valid is None and band.holds(band.fit).all()


def test_legend_says_when_coverage_was_not_measured_here():
    import matplotlib.pyplot as plt

    from fitontest.report.figures.reliability import reliability_diagram

    s, y, _ = synthetic.sample("sqrt", 0.05, 30, 0)           # below the measured n
    ax = reliability_diagram(s, y, band=0.9)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("coverage not measured here" in t for t in labels), labels
    plt.close(ax.figure)


# ------------------------------------------------------------------ the shape assumed
def _turns_down(s):
    """The map of issue 56: the diagonal up to 0.7, then down to 0.4 at s = 1."""
    return np.where(s <= 0.7, s, 1.4 - s)


def test_a_band_on_a_map_that_turns_down_at_3000_is_not_valid():
    # the monotone band misses this map in every sample; its coverage there is not
    # its claim, so the test of monotonicity must take the claim away
    from fitontest.inference.bands import ASSUMES_MONOTONE

    for seed in range(5):
        rng = np.random.default_rng([56, seed])
        s = rng.random(3000)
        y = (rng.random(3000) < _turns_down(s)).astype(int)
        for method in ASSUMES_MONOTONE:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", BandCoverageWarning)
                b = reliability_band(s, y, level=0.9, method=method)
            assert b.valid is not True, (seed, method)
            assert b.shape_rejected and "test of monotonicity" in b.validity_note
            assert "monotone shape rejected" in b.note
        assert not b.holds(_turns_down).all()     # the claim taken away was wrong


def test_a_band_on_a_rising_map_keeps_its_claim_and_names_the_assumption():
    rng = np.random.default_rng(3)
    s = rng.random(3000)
    b = reliability_band(s, rng.random(3000) < s, level=0.9)
    assert b.valid is True and not b.shape_rejected and b.note == ""
    assert "non-decreasing map assumed" in b.validity_note
    # a method that assumes no shape is not tested
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BandCoverageWarning)
        assert reliability_band(s, rng.random(3000) < s, method="bootstrap").shape_pvalue is None


def _drop_by_hand(s, y, G):
    """The statistic of monotonicity_test by loops: the largest pooled z of a drop
    from a run of groups to any later run."""
    from fitontest.inference.monotone_band import score_groups

    order = np.argsort(s, kind="stable")
    gid = score_groups(s[order], G)
    yy = y[order].astype(float)
    pbar = yy.mean()
    groups = [yy[gid == g] for g in range(gid[-1] + 1)]
    best = -np.inf
    for j in range(len(groups)):
        for k in range(j, len(groups)):
            left = np.concatenate(groups[j:k + 1])
            for j2 in range(k + 1, len(groups)):
                for k2 in range(j2, len(groups)):
                    right = np.concatenate(groups[j2:k2 + 1])
                    se = np.sqrt(pbar * (1 - pbar) * (1 / left.size + 1 / right.size))
                    best = max(best, (left.mean() - right.mean()) / se)
    return best


def test_monotonicity_test_statistic_and_pvalue_by_hand():
    from fitontest.inference.monotone_band import monotonicity_test

    rng = np.random.default_rng(11)
    s = rng.random(240)
    y = (rng.random(240) < _turns_down(s)).astype(int)
    r = monotonicity_test(s, y, n_groups=8, n_resamples=999, seed=2)
    assert r.statistic == pytest.approx(_drop_by_hand(s, y, 8), rel=1e-9)
    # the p-value against plain label shuffles (another generator, the same law)
    null = np.array([_drop_by_hand(s, rng.permutation(y), 8) for _ in range(150)])
    p = (1 + np.sum(null >= r.statistic - 1e-9)) / 151
    assert abs(p - r.pvalue) < 3 * np.sqrt(0.25 / 150) + 0.01


def test_monotonicity_test_size_on_a_constant_map_is_exact():
    from fitontest.inference.monotone_band import monotonicity_test

    rng = np.random.default_rng(5)
    p = np.array([monotonicity_test(rng.random(200), rng.random(200) < 0.3,
                                    n_resamples=99, seed=k).pvalue for k in range(300)])
    # permutation test: P(p <= 0.1) = 0.1 for a constant map; 300 samples, 3 SEs
    assert abs(np.mean(p <= 0.1) - 0.1) < 3 * np.sqrt(0.09 / 300)
    # a rising map is further from a drop: rejected less often
    q = [monotonicity_test(s, rng.random(200) < s, n_resamples=99, seed=k).pvalue
         for k, s in enumerate(rng.random((100, 200)))]
    assert np.mean(np.array(q) <= 0.1) <= 0.1


def test_monotonicity_test_errors_and_degenerate_samples():
    from fitontest.inference.monotone_band import monotonicity_test

    s = np.linspace(0.1, 0.9, 50)
    with pytest.raises(ValueError, match="n_resamples"):
        monotonicity_test(s, s > 0.5, n_resamples=0)
    with pytest.raises(ValueError, match="n_groups"):
        monotonicity_test(s, s > 0.5, n_groups=1)
    assert monotonicity_test(s, np.zeros(50)).pvalue == 1.0       # one class: no drop
    assert monotonicity_test(np.full(50, 0.3), s > 0.5).pvalue == 1.0   # one score
