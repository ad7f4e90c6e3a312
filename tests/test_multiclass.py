"""Multi-class post-hoc calibrators (docs/methods/05-multiclass.md §5), checked independently:
grid searches, autograd re-fits, known miscalibrations, invariances."""
import warnings

import numpy as np
import pytest
import torch
from scipy.optimize import minimize
from scipy.special import log_softmax as sp_log_softmax, softmax as sp_softmax
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError

from fitontest import multiclass
from fitontest.multiclass import base as mc_base

K = 6
torch.set_num_threads(1)  # tiny tensors; avoid thread contention on small machines
SMALL_GRID = dict(lambdas=(1e-2, 1.0, 100.0), mus=(1e-2, 1.0))
REQUIRED = {"none", "temps", "vecs", "msodir", "dirodir", "dirl2", "iop_oi", "iop_op"}


def make_data(n, seed, k=K, scale=2.5, bias=1.0, mix=0.0):
    """Labels drawn from softmax(true logits); observed logits miscalibrated by
    a known map: z = scale * (true + mix * shuffled true) + class bias."""
    rng = np.random.default_rng(seed)
    true = rng.normal(size=(n, k)) * 1.5
    p = sp_softmax(true, axis=1)
    y = (p.cumsum(axis=1) > rng.random((n, 1))).argmax(axis=1)
    z = scale * (true + mix * np.roll(true, 1, axis=1)) + bias * np.linspace(-1, 1, k)
    return z, y


def nll(probs, y):
    return float(-np.mean(np.log(probs[np.arange(len(y)), y])))


def quick(name, **params):
    """Registered calibrator with a small CV grid where it has one (test speed)."""
    est = multiclass.get(name, **params)
    keys = est.get_params()
    small = {k: v for k, v in SMALL_GRID.items() if k in keys and k not in params}
    return est.set_params(**small)


@pytest.fixture(scope="module")
def data():
    zv, yv = make_data(3000, 0)
    zt, yt = make_data(20000, 1)
    return zv, yv, zt, yt


@pytest.fixture(scope="module")
def fitted(data):
    zv, yv, _, _ = data
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        return {name: quick(name).fit(zv, yv) for name in sorted(REQUIRED)}


def test_registry_has_every_calibrator():
    assert REQUIRED <= set(multiclass.names())
    with pytest.raises(KeyError, match="unknown multi-class calibrator"):
        multiclass.get("nope")


def test_temps_matches_dense_grid_search(data):
    zv, yv, _, _ = data
    cal = multiclass.get("temps").fit(zv, yv)

    def grid_nll(temps):
        a = zv[None, :, :] / temps[:, None, None]
        m = a.max(axis=2, keepdims=True)
        lse = np.log(np.exp(a - m).sum(axis=2)) + m[:, :, 0]
        return (lse - a[:, np.arange(len(yv)), yv]).mean(axis=1)

    # dense log grid 0.05..50, then two zooms of 201 points around the best
    grid = np.exp(np.linspace(np.log(0.05), np.log(50), 300))
    t_grid = grid[np.argmin(grid_nll(grid))]
    for width in (0.03, 3e-4):
        grid = np.linspace(t_grid * (1 - width), t_grid * (1 + width), 201)
        t_grid = grid[np.argmin(grid_nll(grid))]
    assert cal.temperature_ == pytest.approx(t_grid, rel=1e-5)
    assert grid_nll(np.array([cal.temperature_]))[0] <= grid_nll(np.array([t_grid]))[0] + 1e-12
    assert cal.temperature_ > 1.5  # the logits were scaled up by 2.5


def test_known_miscalibration_ordering(data, fitted):
    _, _, zt, yt = data
    held = {name: nll(fitted[name].predict_proba(zt), yt) for name in fitted}
    assert held["temps"] < held["none"] - 0.05
    assert held["vecs"] < held["temps"] - 0.01
    assert held["msodir"] < held["temps"] - 0.01
    assert held["dirodir"] < held["temps"] - 0.01
    assert held["iop_oi"] < held["none"] - 0.05


def test_vecs_recovers_the_known_map():
    zv, yv = make_data(20000, 3)
    cal = multiclass.get("vecs").fit(zv, yv)
    assert np.allclose(cal.w_, 1 / 2.5, atol=0.03)
    assert np.allclose(cal.b_, -np.linspace(-1, 1, K) / 2.5, atol=0.1)


def test_msodir_huge_penalty_kills_off_diagonal():
    z, y = make_data(3000, 4, mix=0.6)  # a map that needs off-diagonal weights
    free = multiclass.get("msodir", lambdas=(1e-4,), mus=(1e-4,)).fit(z, y)
    tied = multiclass.get("msodir", lambdas=(1e7,), mus=(1e-4,)).fit(z, y)
    off = ~np.eye(K, dtype=bool)
    assert np.abs(free.W_[off]).max() > 0.05
    assert np.abs(tied.W_[off]).max() < 1e-3
    assert np.abs(np.diag(tied.W_) - 1).max() > 0.1  # the diagonal is not penalised
    # with the off-diagonal gone MS-ODIR is vector scaling (up to the tiny mu)
    vecs = multiclass.get("vecs").fit(z, y)
    assert np.allclose(np.diag(tied.W_), vecs.w_, atol=2e-3)


def test_dirodir_is_msodir_on_log_probabilities(data):
    zv, yv, zt, _ = data
    dir_ = quick("dirodir").fit(zv, yv)
    ms = quick("msodir").fit(sp_log_softmax(zv, axis=1), yv)
    assert (dir_.lambda_, dir_.mu_) == (ms.lambda_, ms.mu_)
    assert np.allclose(dir_.W_, ms.W_, atol=1e-9) and np.allclose(dir_.b_, ms.b_, atol=1e-9)
    assert np.allclose(dir_.predict_proba(zt), ms.predict_proba(sp_log_softmax(zt, axis=1)),
                       atol=1e-12)
    assert np.allclose(dir_.cv_scores_, ms.cv_scores_, atol=1e-12)


@pytest.mark.parametrize("name,lam,mu", [("msodir", 0.3, 0.7), ("dirodir", 2.0, 0.05),
                                         ("dirl2", 0.5, None)])
def test_matrix_fit_matches_autograd_lbfgs(name, lam, mu):
    """Newton solution == an independent torch-autograd L-BFGS minimisation of
    the documented objective (mean NLL + penalty)."""
    z, y = make_data(800, 5, mix=0.3)
    params = dict(lambdas=(lam,)) if mu is None else dict(lambdas=(lam,), mus=(mu,))
    cal = multiclass.get(name, **params).fit(z, y)
    x = torch.from_numpy(z if name == "msodir" else sp_log_softmax(z, axis=1))
    yt = torch.from_numpy(y)
    off = ~torch.eye(K, dtype=torch.bool)

    def obj(theta_np):
        th = torch.from_numpy(theta_np).requires_grad_(True)
        W, b = th[:K * K].reshape(K, K), th[K * K:]
        loss = torch.nn.functional.cross_entropy(x @ W.T + b, yt)
        if mu is None:
            loss = loss + lam * ((W ** 2).sum() + (b ** 2).sum()) / (K * (K + 1))
        else:
            loss = loss + lam * (W[off] ** 2).sum() / (K * (K - 1)) + mu * (b ** 2).sum() / K
        (g,) = torch.autograd.grad(loss, th)
        return float(loss.detach()), g.numpy()

    theta0 = np.concatenate([np.eye(K).ravel(), np.zeros(K)])
    ref = minimize(obj, theta0, jac=True, method="L-BFGS-B",
                   options=dict(maxiter=3000, gtol=1e-9, ftol=1e-14))
    ours = obj(np.concatenate([cal.W_.ravel(), cal.b_]))[0]
    assert ours <= ref.fun + 1e-10
    W_ref, b_ref = ref.x[:K * K].reshape(K, K), ref.x[K * K:]
    # strictly convex for positive penalties: the minimiser is unique
    assert np.allclose(cal.W_, W_ref, atol=1e-3) and np.allclose(cal.b_, b_ref, atol=1e-3)


def test_cv_picks_grid_minimum_and_exposes_choice(data):
    zv, yv, _, _ = data
    cal = quick("msodir").fit(zv, yv)
    assert cal.cv_scores_.shape == (6,)
    best = int(np.nanargmin(cal.cv_scores_))
    grid = [(lam, mu) for lam in (100.0, 1.0, 1e-2) for mu in (1.0, 1e-2)]
    assert (cal.lambda_, cal.mu_) == grid[best]
    l2 = quick("dirl2").fit(zv, yv)
    assert l2.lambda_ in SMALL_GRID["lambdas"] and np.isfinite(l2.cv_scores_).all()


def test_rows_sum_to_one_float64(data, fitted):
    _, _, zt, _ = data
    for name, cal in fitted.items():
        p = cal.predict_proba(zt.astype(np.float32))
        assert p.dtype == np.float64 and p.shape == zt.shape, name
        assert np.all(p >= 0) and np.allclose(p.sum(axis=1), 1.0, atol=1e-12), name
    assert np.allclose(fitted["none"].predict_proba(zt), sp_softmax(zt, axis=1), atol=1e-14)


@pytest.mark.parametrize("name", ["temps", "iop_oi", "iop_op", "none"])
def test_argmax_preserved(data, fitted, name):
    _, _, zt, _ = data
    z = np.vstack([zt, 10 * zt, zt / 10])
    assert np.array_equal(fitted[name].predict_proba(z).argmax(axis=1), z.argmax(axis=1))
    # and the whole ranking for the order-preserving maps
    if name.startswith("iop"):
        logits = fitted[name].predict_logits(zt[:2000])
        assert np.array_equal(np.argsort(-logits, axis=1, kind="stable"),
                              np.argsort(-zt[:2000], axis=1, kind="stable"))


def test_iop_oi_is_permutation_equivariant(data, fitted):
    _, _, zt, _ = data
    perm = np.random.default_rng(0).permutation(K)
    cal = fitted["iop_oi"]
    assert np.allclose(cal.predict_proba(zt[:, perm]), cal.predict_proba(zt)[:, perm], atol=1e-12)
    ties = np.zeros((1, K))
    assert np.allclose(cal.predict_proba(ties), 1.0 / K)
    for name in ("iop_oi", "iop_op"):
        z = np.array([[1.0, 3.0, 3.0, 0.0, -2.0, 1.0]])
        p = fitted[name].predict_proba(z)[0]
        assert p[1] == p[2] and p[0] == p[5] and p.argmax() == 1
        assert p[1] > p[0] > p[3] > p[4]


def test_iop_identity_parameters_give_the_uncalibrated_model(data, fitted):
    """The documented initial point (zero output weights, softplus = 1) is the identity."""
    _, _, zt, _ = data
    cal = clone(fitted["iop_oi"]).fit(*data[:2])
    cal.coefs_[1][:] = 0.0
    cal.intercepts_[1][:] = np.log(np.e - 1.0)
    assert np.allclose(cal.predict_proba(zt), sp_softmax(zt, axis=1), atol=1e-12)


def test_predict_is_chunked_consistently(data, fitted, monkeypatch):
    _, _, zt, _ = data
    full = {n: c.predict_proba(zt[:1000]) for n, c in fitted.items()}
    monkeypatch.setattr(mc_base, "CHUNK_ROWS", 37)
    for n, c in fitted.items():
        assert np.allclose(c.predict_proba(zt[:1000]), full[n], atol=1e-14), n


@pytest.mark.parametrize("name", sorted(REQUIRED))
def test_sklearn_conventions(data, name):
    zv, yv, zt, _ = data
    est = multiclass.get(name)
    params = est.get_params()
    assert type(est)(**params).get_params() == params
    with pytest.raises(NotFittedError):
        est.predict_proba(zt)
    fitted = quick(name).fit(zv[:600], yv[:600])
    assert fitted.n_classes_ == K and fitted.n_fit_ == 600
    fresh = clone(fitted)
    assert fresh.get_params() == fitted.get_params()
    with pytest.raises(NotFittedError):
        fresh.predict_proba(zt)


def test_fitted_attribute_names(fitted):
    assert fitted["temps"].temperature_ > 0
    assert fitted["vecs"].w_.shape == (K,) and fitted["vecs"].b_.shape == (K,)
    for name in ("msodir", "dirodir", "dirl2"):
        assert fitted[name].W_.shape == (K, K) and fitted[name].b_.shape == (K,)
        assert fitted[name].lambda_ in SMALL_GRID["lambdas"]
    assert fitted["msodir"].mu_ in SMALL_GRID["mus"]


@pytest.mark.parametrize("name", ["temps", "vecs", "msodir", "iop_oi"])
def test_non_convergence_warns(data, name):
    zv, yv, _, _ = data
    params = dict(max_iter=1)
    if name == "msodir":
        params.update(lambdas=(1e-3,), mus=(1e-3,))
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        multiclass.get(name, **params).fit(zv, yv)


@pytest.mark.parametrize("name", sorted(REQUIRED))
def test_bad_inputs_are_named(name):
    z, y = make_data(200, 7)
    est = quick(name)
    bad = z.copy()
    bad[5, 2] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity.*row 5"):
        est.fit(bad, y)
    bad[5, 2] = np.inf
    with pytest.raises(ValueError, match="NaN or infinity"):
        est.fit(bad, y)
    with pytest.raises(ValueError, match=r"lie in 0\.\.5"):
        est.fit(z, np.where(np.arange(200) == 3, K, y))
    with pytest.raises(ValueError, match=r"lie in 0\.\.5"):
        est.fit(z, np.where(np.arange(200) == 3, -1, y))
    with pytest.raises(ValueError, match="integer class indices"):
        est.fit(z, y + 0.5)
    with pytest.raises(ValueError, match="differ in length"):
        est.fit(z, y[:-1])
    with pytest.raises(ValueError, match="2-D"):
        est.fit(z[:, 0], y)
    with pytest.raises(ValueError, match="numeric"):
        est.fit(z > 0, y)
    est.fit(z, y)
    with pytest.raises(ValueError, match="fitted on 6"):
        est.predict_proba(z[:, :4])
    with pytest.raises(ValueError, match="NaN or infinity"):
        est.predict_proba(np.full((2, K), np.nan))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("name", ["msodir", "dirodir", "dirl2"])
def test_fewer_points_than_folds(name):
    z, y = make_data(4, 8)
    with pytest.raises(ValueError, match=r"fewer points \(4\) than cross-validation folds \(5\)"):
        multiclass.get(name).fit(z, y)
    multiclass.get(name, n_folds=2, **({"lambdas": (1.0, 10.0)})).fit(z, y)  # enough


def test_float32_and_integer_like_labels(data):
    zv, yv, zt, _ = data
    a = multiclass.get("temps").fit(zv.astype(np.float32), yv.astype(np.float64))
    b = multiclass.get("temps").fit(zv.astype(np.float32).astype(np.float64), yv)
    assert a.temperature_ == b.temperature_
