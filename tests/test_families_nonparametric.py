"""KDE, splines, pwlf PL_DE and KCE against independent computations."""
import numpy as np
import pytest
from scipy.interpolate import CubicSpline

from fitontest import families, metrics
from fitontest.families.piecewise_de import _FastSSR, _fit_pwlf
from fitontest.families.spline import _second_derivative_map, spline_design


# ------------------------------------------------------------------- KDE
def brute_kde_map(s, y, x):
    """Zhang et al.'s recipe written out: full mirror of the data, triweight
    kernel whose *standard deviation* is h (KDEpy convention: support 3h)."""
    n = s.size
    h = np.std(s[y == 1]) * (2 * n) ** -0.2
    r = 3 * h

    def dens(pts):
        m = np.concatenate((pts, -pts, 2 - pts))
        u = (x[:, None] - m[None, :]) / r
        k = 35 / 32 * np.clip(1 - u * u, 0, None) ** 3
        return k.sum(axis=1) / (pts.size * r)

    return np.minimum(1.0, y.mean() * dens(s[y == 1]) / dens(s))


def test_kde_equals_brute_force_on_the_grid():
    rng = np.random.default_rng(0)
    s = rng.beta(2, 2, 800)
    s[:3] = [0.0, 1.0, 0.001]
    y = (rng.random(800) < s ** 2).astype(float)
    fam = families.get("kde").fit(s, y)
    x = fam.grid_[::37]
    ref = brute_kde_map(s, y, x)
    assert fam.bandwidth_ == pytest.approx(np.std(s[y == 1]) * 1600 ** -0.2)
    assert np.allclose(fam.predict(x), ref, atol=1e-12)


def test_kde_fills_empty_regions_by_interpolation():
    s = np.r_[np.linspace(0.1, 0.2, 50), np.linspace(0.8, 0.9, 50)]
    y = np.r_[np.zeros(40), np.ones(10), np.zeros(10), np.ones(40)]
    fam = families.get("kde").fit(s, y)
    c = fam.predict(np.linspace(0, 1, 101))
    assert np.all(np.isfinite(c)) and np.all((c >= 0) & (c <= 1))


# ---------------------------------------------------------------- splines
@pytest.mark.parametrize("runout", ["natural", "parabolic", "cubic"])
def test_spline_basis_is_the_interpolating_cubic_spline(runout):
    k = 7
    rng = np.random.default_rng(1)
    v = rng.normal(size=k)
    knots = np.linspace(0, 1, k)
    m = _second_derivative_map(k, runout) @ v
    t = np.linspace(0, 1, 333)
    phi, dphi = spline_design(t, k, runout)
    ref = CubicSpline(knots, v, bc_type=((2, m[0]), (2, m[-1])))
    assert np.allclose(phi @ v, ref(t), atol=1e-12)
    assert np.allclose(dphi @ v, ref(t, 1), atol=1e-10)
    assert np.allclose(ref(knots, 2), m, atol=1e-9)
    if runout == "natural":
        assert m[0] == pytest.approx(0, abs=1e-12) and m[-1] == pytest.approx(0, abs=1e-12)
    elif runout == "parabolic":
        assert m[0] == pytest.approx(m[1]) and m[-1] == pytest.approx(m[-2])
    else:
        assert m[0] == pytest.approx(2 * m[1] - m[2]) and m[-1] == pytest.approx(2 * m[-2] - m[-3])


@pytest.mark.parametrize("name", ["spline_natural", "spline_parabolic", "spline_cubic"])
def test_spline_recovers_a_smooth_map_and_reports_k(name):
    rng = np.random.default_rng(2)
    s = rng.random(4000)
    c = s ** 2
    y = (rng.random(4000) < c).astype(float)
    fam = families.get(name).fit(s, y)
    assert fam.n_knots_ in fam.candidates_ and fam.candidates_[0] == 4
    assert fam.chosen_hyperparameter() == fam.n_knots_
    grid = np.linspace(0.05, 0.95, 200)
    assert np.mean(np.abs(fam.predict(grid) - grid ** 2)) < 0.03
    assert np.mean(np.abs(grid - grid ** 2)) > 0.15


def test_spline_solver_cache_changes_nothing_and_keeps_its_cap(monkeypatch):
    from fitontest.families import spline

    rng = np.random.default_rng(3)
    s = np.round(rng.random(1500), 3)                 # ties: the averaged branch too
    y = (rng.random(1500) < s ** 2).astype(float)
    x = np.linspace(0, 1, 257)
    fresh = []
    for cap in (0, 10 ** 9):                          # 0: nothing kept, every solver rebuilt
        monkeypatch.setattr(spline, "SOLVER_CACHE_BYTES", cap)
        spline._SOLVERS.clear()
        fits = [families.get("spline_cubic").fit(s, y) for _ in range(2)]
        fresh.append(fits)
        assert (len(spline._SOLVERS) > 0) == (cap > 0)
    for a in (*fresh[0], fresh[1][1]):
        b = fresh[1][0]
        assert a.n_knots_ == b.n_knots_ and np.array_equal(a.cv_scores_, b.cv_scores_)
        assert np.array_equal(a.predict(x), b.predict(x))
    one = sum(a.nbytes for a in spline._spline_solver(1350, 20, "cubic"))
    monkeypatch.setattr(spline, "SOLVER_CACHE_BYTES", 3 * one)
    spline._SOLVERS.clear()
    families.get("spline_cubic").fit(s, y)
    assert 0 < sum(a.nbytes for v in spline._SOLVERS.values() for a in v) <= 3 * one
    spline._SOLVERS.clear()


def test_spline_bad_knots_are_named():
    with pytest.raises(ValueError, match="min_knots"):
        families.get("spline_cubic", min_knots=3).fit(np.linspace(0, 1, 50), np.arange(50) % 2)


# ---------------------------------------------------------------- PL_DE
def svd_ssr(A, y):
    """Minimum-norm least squares with a clean rank cut-off."""
    u, sv, _ = np.linalg.svd(A, full_matrices=False)
    u = u[:, sv > 1e-10 * sv[0]]
    r = y - u @ (u.T @ y)
    return r @ r


@pytest.mark.parametrize("degree", [1, 2])
def test_fast_ssr_equals_least_squares_on_pwlf_basis(degree):
    import pwlf

    rng = np.random.default_rng(3)
    s = np.round(rng.random(1500), 3)            # ties
    s[:20], s[20:30] = 0.0, 1.0
    y = (rng.random(1500) < s).astype(float)
    fast = _FastSSR(s, y, degree)
    model = pwlf.PiecewiseLinFit(s, y, degree=degree)
    for k in (2, 3, 5):
        model.use_custom_opt(k)
        X = rng.random((40, k - 1))
        X[0] = 0.5                                   # coincident breaks
        X[1, 0], X[2, 0] = 0.0, 1.0                  # breaks on the data ends
        X[3, 0] = 0.999                              # a very narrow last segment
        got = fast.ssr(X)
        # reference: pwlf's own regression matrix, solved by SVD
        ref = np.array([svd_ssr(model.assemble_regression_matrix(model._get_breaks(x), s), y)
                        for x in X])
        assert np.allclose(got, ref, rtol=1e-9)
        # and pwlf's objective itself wherever its basis is well conditioned
        ok = np.ones(len(X), bool)
        ok[:4] = False
        pw = np.array([model.fit_with_breaks_opt(x) for x in X[ok]])
        assert np.allclose(got[ok], pw, rtol=1e-8)


def test_pl_de_finds_the_breaks_of_a_piecewise_linear_truth():
    import pwlf

    rng = np.random.default_rng(4)
    s = rng.random(5000)
    g = np.interp(s, [0, 0.3, 0.7, 1], [0.05, 0.6, 0.3, 0.95])
    y = (rng.random(5000) < g).astype(float)
    model = _fit_pwlf(s, y, 1, 3, seed=0)
    assert isinstance(model, pwlf.PiecewiseLinFit)
    assert np.allclose(model.fit_breaks[1:-1], [0.3, 0.7], atol=0.06)
    # at least as good as pwlf's own multi-start optimiser
    ref = pwlf.PiecewiseLinFit(s, y, degree=1, seed=0)
    ref.fitfast(3, pop=3)
    assert model.ssr <= ref.ssr * (1 + 1e-7)


def test_pl_de_registered_candidates():
    assert families.get("pl_de").get_params()["max_segments"] == 7
    assert families.get("pl_de").get_params()["degree"] == 1
    assert families.get("pl_de2").get_params()["max_segments"] == 5
    assert families.get("pl_de2").get_params()["degree"] == 2


@pytest.mark.parametrize("name", ["pl_de", "pl_de2"])
def test_pl_de_cv_contract(name):
    from fitontest.core.selection import complexity_rule

    rng = np.random.default_rng(5)
    s = rng.random(300)
    y = (rng.random(300) < s).astype(float)
    fam = families.get(name, max_segments=3, n_folds=5).fit(s, y)   # small, to stay fast
    assert fam.candidates_.tolist() == [1, 2, 3]
    assert fam.n_pieces_ == complexity_rule(fam.candidates_, fam.cv_scores_, tol=1e-3)
    assert fam.chosen_hyperparameter() == fam.n_pieces_
    grid = np.linspace(0, 1, 101)
    assert np.allclose(fam.predict(grid), np.clip(fam.pwlf_.predict(grid), 0, 1))
    again = families.get(name, max_segments=3, n_folds=5).fit(s, y)   # seeded: reproducible
    assert np.array_equal(again.cv_scores_, fam.cv_scores_)


# ------------------------------------------------------------------- KCE
def test_kce_family_wraps_metric_and_has_no_map():
    rng = np.random.default_rng(6)
    s = rng.random(300)
    y = (rng.random(300) < s).astype(float)
    fam = families.get("kce").fit(s, y)
    assert not fam.provides_map
    assert fam.ce_estimate(s, p=2) == pytest.approx(metrics.kce(s, y))
    assert fam.bandwidth_ == pytest.approx(metrics.median_heuristic(s))
    p1 = fam.ce_estimate(s, p=1)
    assert p1 == pytest.approx(np.sign(fam.skce_) * np.sqrt(abs(fam.skce_)))
    with pytest.raises(NotImplementedError, match="no calibration map"):
        fam.predict(s)
    with pytest.raises(ValueError, match="fitting sample"):
        fam.ce_estimate(s[:10])


def test_kce_detects_miscalibration():
    rng = np.random.default_rng(7)
    s = rng.random(2000)
    calibrated = [metrics.kce(s, (rng.random(2000) < s)) for _ in range(20)]
    miscal = metrics.kce(s, (rng.random(2000) < s ** 2))
    assert abs(np.mean(calibrated)) < 3 * np.std(calibrated) / np.sqrt(20) + 1e-4
    assert miscal > 10 * np.std(calibrated)
