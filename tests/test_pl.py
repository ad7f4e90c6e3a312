"""PL / PL3 families (docs/methods/04-pl.md §4) and their batched trainer.

Sizes and epoch caps are kept small where the property allows, and every fit
runs on one torch thread (fast and stable on a shared 2-core machine).
"""
import subprocess
import sys
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from fitontest import families, metrics
from fitontest.families.pl import PiecewiseLinearFamily, evaluate_map
from fitontest.core.selection import kfold_indices
from fitontest.core.validation import logit

torch = pytest.importorskip("torch")
from fitontest.families.pl import algorithm as alg  # noqa: E402  (numba, after torch's skip)
from fitontest.families.pl.trainer import BatchedTrainer  # noqa: E402

# a continuous 3-piece calibration map (knots, heights)
TRUE_KNOTS = np.array([0.0, 0.3, 0.7, 1.0])
TRUE_HEIGHTS = np.array([0.05, 0.15, 0.85, 0.95])


def three_piece(s):
    return np.interp(s, TRUE_KNOTS, TRUE_HEIGHTS)


def draw(n, seed, cmap=three_piece):
    rng = np.random.default_rng(seed)
    s = rng.random(n)
    return s, (rng.random(n) < cmap(s)).astype(int)


def log_loss(y, p):
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log1p(-p)))


# --------------------------------------------------------------- registry / API
def test_registered_names_and_defaults():
    names = families.names()
    for name, space, loss in [("pl_ce", "prob", "ce"), ("pl_mse", "prob", "mse"),
                              ("pl3_ce", "logit", "ce"), ("pl3_mse", "logit", "mse")]:
        assert name in names
        fam = families.get(name)
        assert isinstance(fam, PiecewiseLinearFamily)
        assert (fam.space, fam.loss, fam.n_folds, fam.tol) == (space, loss, 10, 1e-3)
        assert fam.needs_both_classes and fam.hyper_attr == "n_pieces_"


def test_clone_get_params_and_not_fitted():
    fam = families.get("pl3_ce", max_knots=2, seed=3)
    params = fam.get_params()
    assert params["space"] == "logit" and params["max_knots"] == 2 and params["seed"] == 3
    twin = clone(fam)
    assert twin.get_params() == params and twin is not fam
    with pytest.raises(NotFittedError):
        fam.predict([0.2, 0.5])


def test_import_of_families_does_not_import_torch():
    import subprocess
    import sys

    code = ("import sys, fitontest.families as f; f.names(); "
            "sys.exit(1 if 'torch' in sys.modules else 0)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


@pytest.mark.parametrize("s,y,msg", [
    ([0.1, np.nan] * 10, [0, 1] * 10, "NaN"),
    ([0.1, 1.2] * 10, [0, 1] * 10, r"\[0, 1\]"),
    ([0.1, 0.9] * 10, [1, 1] * 10, "single class"),
    ([0.1, 0.9, 0.5], [0, 1, 0], "fewer points"),
    ([0.1, 0.9] * 10, [0, 2] * 10, "0 or 1"),
])
def test_bad_input_raises(s, y, msg):
    with pytest.raises(ValueError, match=msg):
        families.get("pl_ce", max_epochs=1).fit(s, y)


@pytest.mark.parametrize("param,value", [
    ("space", "z"), ("loss", "hinge"), ("selection", "best"), ("n_folds", 1),
    ("max_knots", -1), ("tol", -0.1), ("lr", 0.0), ("max_epochs", -1), ("patience", 0),
    ("device", "tpu"),
])
def test_bad_hyper_parameters_raise(param, value):
    s, y = draw(100, 0)
    with pytest.raises(ValueError, match=param):
        families.get("pl_ce", **{param: value}).fit(s, y)


def test_cuda_request_without_cuda_is_an_error():
    if torch.cuda.is_available():
        pytest.skip("CUDA present")
    s, y = draw(100, 0)
    with pytest.raises(ValueError, match="CUDA is not available"):
        families.get("pl_ce", device="cuda", max_epochs=1).fit(s, y)
    fam = families.get("pl_ce", device="auto", max_epochs=2, max_knots=1, n_threads=1)
    assert fam.fit(s, y).predict(s).shape == s.shape


# ----------------------------------------------------------------- the gradient
def _reference_losses(P, ks, x, y, w, space, loss, K1):
    """Plain autograd implementation, one row at a time (independent of the trainer)."""
    out = []
    for m, k in enumerate(ks):
        p = torch.softmax(P[m, :k + 1], 0)
        one = torch.ones(1, dtype=P.dtype)
        t = torch.cat([0 * one, torch.cumsum(p, 0)[:-1], one])
        if space == "logit":
            u = 1 - t        # fine here: knots well inside (0, 1)
            X = torch.log(t.clamp_min(1e-16)) - torch.log(u.clamp_min(1e-16))
            h = P[m, K1:K1 + k + 2]
        else:
            X, h = t, torch.sigmoid(P[m, K1:K1 + k + 2])
        xm = x[m]
        j = (torch.searchsorted(X.detach().contiguous(), xm, right=True) - 1).clamp(0, k)
        f = h[j] + (xm - X[j]) / (X[j + 1] - X[j]) * (h[j + 1] - h[j])
        if space == "prob":
            c = f.clamp(1e-16, 1 - 1e-16)
        else:
            c = torch.sigmoid(f)
        if loss == "ce":
            per = -(y[m] * torch.log(c) + (1 - y[m]) * torch.log(1 - c))
        else:
            per = (c - y[m]) ** 2
        out.append((per * w).sum())
    return torch.stack(out)


def _numba_loss_and_grad():
    """Batch loss and gradient of every row r on its own sorted batch
    ``bdata[r]`` (all points real), from the numba kernels."""
    from numba import njit

    from fitontest.families.pl import numba_kernels as nk

    @njit
    def loss_and_grad(P, ks, bdata, space, loss, lossb, grad):
        K1 = (P.shape[1] - 1) // 2
        B = bdata.shape[2]
        for r in range(P.shape[0]):
            k = ks[r]
            p, t, u, X, h, bb, aa, inv, S0, S1, dh, dX, dp, ends = nk.scratch(K1)
            alg.geometry(P, r, k, K1, space, False, p, t, u, X, h, bb, aa, inv)
            lossb[r] = nk.point_pass(bdata[r, 0], bdata[r, 1], bdata[r, -1], 0, B, 1.0 / B, 0.0,
                                     k, space, loss, X, aa, bb, S0, S1, ends)
            alg.backward(k, K1, space, p, t, u, h, bb, inv, S0, S1, dh, dX, dp, grad, r)

    return loss_and_grad


def _torch_loss_and_grad(P, ks, space, loss, D, rowscale):
    """The same from the torch kernels (D: torch (n_arrays, rows, B))."""
    from fitontest.families.pl import torch_kernels as tk

    M, K1 = P.shape[0], (P.shape[1] - 1) // 2
    ks = np.asarray(ks, dtype=np.int64)
    p, b, a, inv = (np.zeros((M, K1)) for _ in range(4))
    t, u, X, h = (np.zeros((M, K1 + 1)) for _ in range(4))
    alg.geometry_rows(P, ks, space, p, t, u, X, h, b, a, inv)
    padint = np.arange(K1 - 1)[None, :] >= ks[:, None]
    lossb, S0, S1 = tk.point_sums(space, loss, X, a, b, padint, D, rowscale, None)
    grad = np.zeros_like(P)
    dh, dX, dp = np.empty(K1 + 1), np.empty(K1 + 1), np.empty(K1)
    for r in range(M):
        alg.backward(ks[r], K1, space, p[r], t[r], u[r], h[r], b[r], inv[r], S0[r], S1[r],
                     dh, dX, dp, grad, r)
    return lossb, grad


def _kernel_gradient(backend, tr, P, ks, kmax, arrays, scaled, B):
    """Batch losses and gradients of the trainer's hand-written kernels."""
    space, loss = alg.SPACES[tr.space], alg.LOSSES[tr.loss]
    if backend == "torch":
        D = torch.as_tensor(np.stack(arrays))
        if scaled is not None:
            D[scaled] /= B
        with torch.no_grad():
            return _torch_loss_and_grad(P.copy(), ks, space, loss, D, 1.0 / B)
    bdata = np.ascontiguousarray(np.stack(arrays, axis=1))       # (rows, arrays, B)
    lossb, grad = np.empty(P.shape[0]), np.zeros_like(P)
    _numba_loss_and_grad()(P.copy(), np.array(ks), bdata, space, loss, lossb, grad)
    return lossb, grad


@pytest.mark.parametrize("backend", ["torch", "numba"])
@pytest.mark.parametrize("space", ["prob", "logit"])
@pytest.mark.parametrize("loss", ["ce", "mse"])
def test_hand_written_gradient_matches_autograd(backend, space, loss):
    gen = torch.Generator().manual_seed(0)
    kmax, ks, B = 4, [0, 1, 2, 4], 257        # 257: a remainder after numba's 4-way sums
    K1, M = kmax + 1, 4
    s = torch.sort(torch.rand(M, B, generator=gen, dtype=torch.float64) * 0.98 + 0.01, 1).values
    y = (torch.rand(M, B, generator=gen, dtype=torch.float64) < s).double()
    x = s if space == "prob" else torch.log(s) - torch.log1p(-s)
    P = torch.randn(M, K1 + kmax + 2, generator=gen, dtype=torch.float64) * 0.5
    if space == "logit":
        P[:, K1:] *= 3
    tr = BatchedTrainer(space=space, loss=loss)
    arrays, scaled = alg.point_arrays(alg.SPACES[space], alg.LOSSES[loss], x.numpy(), y.numpy(),
                                      np.ones((M, B)))
    lossb, grad = _kernel_gradient(backend, tr, P.numpy(), ks, kmax, arrays, scaled, B)
    Pr = P.clone().requires_grad_(True)
    ref = _reference_losses(Pr, ks, x, y, torch.full((B,), 1.0 / B, dtype=torch.float64),
                            space, loss, K1)
    ref.sum().backward()
    used = np.zeros(P.shape, dtype=bool)
    for m, k in enumerate(ks):
        used[m, :k + 1] = True
        used[m, K1:K1 + k + 2] = True
    np.testing.assert_allclose(lossb, ref.detach().numpy(), atol=1e-13, rtol=0)
    np.testing.assert_allclose(grad[used], Pr.grad.numpy()[used], atol=1e-12, rtol=1e-10)
    assert (grad[~used] == 0).all()


# ---------------------------------------------------------- initialisation etc.
@pytest.mark.parametrize("name", ["pl_ce", "pl3_ce"])
def test_identity_before_training(name):
    s, y = draw(2000, 1)
    fam = families.get(name, max_epochs=0, max_knots=4, tol=0, n_threads=1).fit(s, y)
    grid = np.linspace(0, 1, 2001)
    if name == "pl3_ce":
        # heights equal knot positions: the identity in logit space, everywhere
        for knots, heights in zip(fam.knots_, fam.heights_):
            z = logit(grid)
            assert np.allclose(np.interp(z, knots, heights), z, atol=1e-9)
            assert knots[0] == pytest.approx(-36.841361487904734)
            assert knots[-1] == pytest.approx(36.841361487904734)
        assert np.allclose(fam.predict(grid), grid, atol=1e-12)
    else:
        # exact between the first and last interior knot (inside [1e-3, 1 - 1e-3]),
        # within 1e-3 everywhere (end heights sigmoid(logit(1e-3)) = 1e-3, 1 - 1e-3)
        assert np.max(np.abs(fam.predict(grid) - grid)) <= 1e-3 + 1e-12
        for knots, heights in zip(fam.knots_, fam.heights_):
            assert heights[0] == pytest.approx(1e-3) and heights[-1] == pytest.approx(1 - 1e-3)
            inner = (grid >= knots[1]) & (grid <= knots[-2])
            assert inner.sum() > 1000
            assert np.allclose(np.interp(grid[inner], knots, heights), grid[inner], atol=1e-12)
    # knots at equal-size quantiles of each fold's training scores
    folds = kfold_indices(2000, 10, 0)
    for (tr, _), knots in zip(folds, fam.knots_):
        q = np.quantile(s[tr], np.linspace(0, 1, fam.n_knots_ + 2)[1:-1])
        got = knots[1:-1] if name == "pl_ce" else 1 / (1 + np.exp(-knots[1:-1]))
        assert np.allclose(got, q, atol=1e-12)


@pytest.mark.parametrize("name", ["pl_ce", "pl_mse", "pl3_ce", "pl3_mse"])
def test_knots_ordered_and_outputs_in_unit_interval(name):
    s, y = draw(1005, 2, cmap=lambda s: 0.5 + 0.4 * np.sin(8 * s))   # unequal folds
    fam = families.get(name, max_epochs=60, max_knots=5, n_threads=1).fit(s, y)
    res = fam._trainer().fit(s, y, [tr for tr, _ in kfold_indices(1005, 10, 0)],
                             np.arange(6), n_batches=4)
    for knots in res.knots.reshape(-1, res.knots.shape[-1]):
        assert np.all(np.diff(knots) >= 0)
    grid = np.concatenate([np.linspace(0, 1, 1001), [1e-300, 1 - 1e-16]])
    pred = fam.predict(grid)
    assert np.isfinite(pred).all() and (pred >= 0).all() and (pred <= 1).all()
    assert fam.knots_.shape == (10, fam.n_knots_ + 2) == fam.heights_.shape
    assert fam.n_epochs_.shape == (10, 6) and fam.cv_scores_.shape == (6,)
    assert list(fam.candidates_) == [1, 2, 3, 4, 5, 6]


def test_default_candidates_follow_n():
    s, y = draw(1000, 3)
    fam = families.get("pl_ce", max_epochs=1, n_threads=1).fit(s, y)
    assert list(fam.candidates_) == [1, 2, 3, 4, 5, 6]        # 1..6 pieces for n = 1000
    assert fam.n_pieces_ in fam.candidates_ and fam.n_knots_ == fam.n_pieces_ - 1


# ------------------------------------------------------ masking / determinism
def test_early_stopped_model_unaffected_by_the_others():
    """A batched run and a run of one candidate alone give the same model."""
    s, y = draw(1200, 4, cmap=lambda s: 0.5 + 0.4 * np.sin(6 * s))
    groups = [tr for tr, _ in kfold_indices(1200, 10, 0)][:3]
    trainer = BatchedTrainer(space="prob", loss="ce", seed=6, max_epochs=300, patience=3,
                             n_threads=1)
    both = trainer.fit(s, y, groups, [0, 1, 2, 3, 4, 5], n_batches=4)
    alone = trainer.fit(s, y, groups, [4], n_batches=4, pad_knots=5)
    # the candidates stop at different epochs: other rows went on after k = 4
    # stopped, and k = 4 went on after others had left the batch
    assert (both.n_epochs.max(1) > both.n_epochs[:, 4]).any()
    assert (both.n_epochs.min(1) < both.n_epochs[:, 4]).any()
    assert np.array_equal(both.n_epochs[:, 4], alone.n_epochs[:, 0])
    assert np.array_equal(both.knots[:, 4], alone.knots[:, 0])
    assert np.array_equal(both.heights[:, 4], alone.heights[:, 0])
    # every group has its own shuffling stream: one group trained alone
    one = trainer.fit(s, y, groups[1:2], [0, 1, 2, 3, 4, 5], n_batches=4, group_ids=[1])
    assert np.array_equal(one.heights[0], both.heights[1])
    assert np.array_equal(one.n_epochs[0], both.n_epochs[1])
    # a model's trajectory: stopping at its epoch == training exactly that long
    g = int(np.argmin(both.n_epochs[:, 4]))
    capped = BatchedTrainer(space="prob", loss="ce", seed=6, max_epochs=int(both.n_epochs[g, 4]),
                            patience=10**6, n_threads=1).fit(
        s, y, groups[g:g + 1], [4], n_batches=4, pad_knots=5, group_ids=[g])
    assert np.array_equal(capped.heights[0, 0], both.heights[g, 4])


def test_same_seed_same_result_other_seed_differs():
    s, y = draw(800, 5)
    kw = dict(max_epochs=40, max_knots=3, n_threads=1)
    a = families.get("pl3_ce", seed=1, **kw).fit(s, y)
    b = families.get("pl3_ce", seed=1, **kw).fit(s, y)
    c = families.get("pl3_ce", seed=2, **kw).fit(s, y)
    assert np.array_equal(a.predict(s), b.predict(s))
    assert np.array_equal(a.cv_scores_, b.cv_scores_)
    assert not np.array_equal(a.predict(s), c.predict(s))


# ------------------------------------------------------------- the method
def test_pl_ce_recovers_a_three_piece_map():
    """n = 3000 points from a 3-piece map, CV over 1..6 pieces.

    A 3-piece map has 6 free parameters (2 knots, 4 heights); a correctly
    specified fit has CMEE of order sqrt(2/pi) * sqrt(6 Var(Y|s) / n) ~
    0.8 * sqrt(6 * 0.12 / 3000) ~ 0.012 (Var(Y|s) = c(1 - c) averages 0.12 for
    this map); fold averaging only lowers it. Bound 0.03, and the chosen number
    of pieces is 3 or 4.
    """
    s, y = draw(3000, 6)
    fam = families.get("pl_ce", max_knots=5, n_threads=1).fit(s, y)
    test = np.random.default_rng(7).random(100_000)
    cmee = metrics.cmee(fam.predict(test), three_piece(test))
    assert cmee < 0.03, cmee
    assert fam.n_pieces_ in (3, 4)
    assert fam.monotone_[fam.n_knots_]


def test_pl3_one_piece_is_logistic_calibration():
    """With k = 0 the PL3 map is sigmoid(a + b logit(s)): trained to convergence
    (full batch, no mini-batch noise) it reaches the log-loss of an independent
    logistic regression on logit(s) (scipy BFGS).

    At the paper's settings (lr 0.01, batches of n_train / 4, 1500 epochs) the
    one-piece fit converges slowly when the slope must change: the slope is
    (h_1 - h_0) / 73.7 with both heights at the far end knots +-36.84 and their
    gradients dominated by the shared intercept noise. So the family at its
    defaults is only checked to lie between the identity and the optimum.
    """
    from scipy.optimize import minimize

    rng = np.random.default_rng(8)
    n = 1500
    s = rng.beta(2, 2, n)
    z = logit(s)
    y = (rng.random(n) < 1 / (1 + np.exp(-(0.6 * z + 0.3)))).astype(int)

    def optimum(zz, yy):
        def nll(w):
            return np.mean(np.logaddexp(0, -(2 * yy - 1) * (w[0] + w[1] * zz)))
        return minimize(nll, [0.0, 1.0], method="BFGS", options={"gtol": 1e-12}).fun

    res = BatchedTrainer(space="logit", loss="ce", lr=0.05, max_epochs=2500, patience=100,
                         n_threads=1).fit(s, y, [np.arange(n)], [0], n_batches=1)
    assert log_loss(y, res.predict(0, 0, s)) == pytest.approx(optimum(z, y), abs=1e-7)
    fam = families.get("pl3_ce", max_knots=0, n_threads=1, max_epochs=300).fit(s, y)
    assert fam.n_pieces_ == 1 and fam.knots_.shape == (10, 2)
    for (tr, _), knots, heights in zip(kfold_indices(n, 10, 0), fam.knots_, fam.heights_):
        got = log_loss(y[tr], evaluate_map("logit", knots, heights, s[tr]))
        assert optimum(z[tr], y[tr]) - 1e-9 <= got < log_loss(y[tr], s[tr])


def test_sweep_selection_stops_before_first_non_monotone_map():
    s, y = draw(1500, 9)
    fam = families.get("pl_ce", selection="sweep", max_knots=5, max_epochs=150,
                       n_threads=1).fit(s, y)
    mono = fam.monotone_
    first_bad = np.flatnonzero(~mono)
    expected = len(mono) - 1 if first_bad.size == 0 else max(first_bad[0] - 1, 0)
    assert fam.n_knots_ == expected
    assert fam.knots_.shape == (1, fam.n_knots_ + 2)
    assert np.isnan(fam.cv_scores_).all()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert fam.predict(s).shape == s.shape


def test_complexity_rule_tolerance_is_used():
    s, y = draw(1000, 10)
    fam = families.get("pl_mse", max_knots=3, max_epochs=30, tol=0.5, n_threads=1).fit(s, y)
    # a 50 % tolerance accepts the simplest candidate
    assert fam.n_pieces_ == 1
    plain = families.get("pl_mse", max_knots=3, max_epochs=30, tol=0.0, n_threads=1).fit(s, y)
    assert plain.n_knots_ == int(np.argmin(plain.cv_scores_))


# ------------------------------------------------ the numba backend (CPU default)
def test_fast_exp_within_two_ulp_of_exp():
    """The inlined exp of the PL3 kernels against an independent reference:
    mpmath at 50 digits on a sample, numpy's exp on a dense grid."""
    mpmath = pytest.importorskip("mpmath")
    from numba import njit

    from fitontest.families.pl.numba_kernels import fast_exp

    @njit
    def many(x):
        out = np.empty_like(x)
        for i in range(x.shape[0]):
            out[i] = fast_exp(x[i])
        return out

    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-40, 40, 400), rng.uniform(-708, 709, 100),
                        [0.0, np.log(2.0), -np.log(2.0) / 2, 36.841361487904734]])
    with mpmath.workdps(50):
        ref = np.array([float(mpmath.exp(mpmath.mpf(float(v)))) for v in x])
    got = many(x)
    assert np.all(np.abs(got - ref) <= 2 * np.spacing(ref))
    grid = np.linspace(-708, 709, 1_000_003)
    assert np.max(np.abs(many(grid) / np.exp(grid) - 1)) < 5e-16
    # clipped ends: tiny and finite where the kernels meet them
    assert 0 < many(np.array([-1e4]))[0] < 1e-307 and np.isfinite(many(np.array([1e4]))[0])


@pytest.mark.parametrize("space", ["prob", "logit"])
@pytest.mark.parametrize("loss", ["ce", "mse"])
def test_numba_and_torch_backends_train_the_same_models(space, loss):
    """Same batches, same steps: the two implementations agree to rounding
    over up to 60 epochs (lr 0.05), with unequal groups (virtual points) and early stopping."""
    s, y = draw(1005, 11, cmap=lambda s: 0.5 + 0.4 * np.sin(7 * s))
    groups = [tr for tr, _ in kfold_indices(1005, 10, 0)][:4]
    fits = {}
    for backend in ("numba", "torch"):
        trainer = BatchedTrainer(space=space, loss=loss, seed=3, max_epochs=60, patience=5, lr=0.05,
                                 n_threads=1, backend=backend)
        fits[backend] = trainer.fit(s, y, groups, [0, 1, 3, 5], n_batches=4)
    a, b = fits["numba"], fits["torch"]
    assert np.array_equal(a.n_epochs, b.n_epochs)
    assert a.n_epochs.min() < 60                     # early stopping took part
    np.testing.assert_allclose(a.final_loss, b.final_loss, rtol=1e-9, atol=0)
    np.testing.assert_allclose(a.knots, b.knots, rtol=0, atol=1e-9)
    np.testing.assert_allclose(a.heights, b.heights, rtol=0, atol=1e-9)


def test_numba_threads_give_the_serial_result_bit_for_bit():
    s, y = draw(1200, 12)
    groups = [tr for tr, _ in kfold_indices(1200, 10, 0)][:3]
    kw = dict(space="logit", loss="ce", seed=4, max_epochs=40, patience=5, backend="numba")
    one = BatchedTrainer(n_threads=1, **kw).fit(s, y, groups, [0, 2, 4], n_batches=4)
    two = BatchedTrainer(n_threads=2, **kw).fit(s, y, groups, [0, 2, 4], n_batches=4)
    assert np.array_equal(one.heights, two.heights) and np.array_equal(one.knots, two.knots)
    assert np.array_equal(one.n_epochs, two.n_epochs)


def test_backend_choice():
    from fitontest.families.pl.trainer import resolve_backend

    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert resolve_backend("auto", cpu) == "numba" and resolve_backend("auto", cuda) == "torch"
    assert resolve_backend("torch", cpu) == "torch"
    with pytest.raises(ValueError, match="CPU only"):
        resolve_backend("numba", cuda)
    assert resolve_backend("auto", "cpu") == "numba" and resolve_backend("auto", "cuda") == "torch"
    s, y = draw(100, 0)
    with pytest.raises(ValueError, match="backend"):
        families.get("pl_ce", backend="jax").fit(s, y)
    with pytest.raises(ValueError, match="n_threads"):
        families.get("pl_ce", n_threads=0).fit(s, y)


def test_shuffle_is_a_uniform_permutation_and_batches_are_sorted():
    from scipy.stats import chisquare

    # every ordering of 4 distinct labels equally likely over (key, epoch) streams
    label = np.arange(4, dtype=np.int64)
    out = np.empty(4, dtype=np.int64)
    counts = {}
    for epoch in range(12_000):
        alg.shuffle_labels(np.uint64(987654321), epoch, label, out)
        counts[tuple(out)] = counts.get(tuple(out), 0) + 1
    assert len(counts) == 24
    assert chisquare(list(counts.values())).pvalue > 1e-3
    # a group's batches: every member once, each batch in increasing input order
    members = np.sort(np.random.default_rng(0).choice(500, size=(2, 103), replace=False), 1)
    counts_b = np.array([len(a) for a in np.array_split(np.arange(103), 4)])
    bounds = np.concatenate([[0], np.cumsum(counts_b)])
    lab = np.repeat(np.arange(4), counts_b)
    keys = np.array([11, 12], dtype=np.uint64)
    order = np.zeros((2, 103), dtype=np.int64)
    alg.batch_orders(keys, 5, np.array([0, 1]), lab, bounds, members, order)
    for g in range(2):
        assert np.array_equal(np.sort(order[g]), members[g])
        for b in range(4):
            assert np.all(np.diff(order[g, bounds[b]:bounds[b + 1]]) > 0)
    again = np.zeros_like(order)
    alg.batch_orders(keys, 5, np.array([1]), lab, bounds, members, again)
    assert np.array_equal(again[1], order[1])            # a group's batches: its own stream
    alg.batch_orders(keys, 6, np.array([1]), lab, bounds, members, again)
    assert not np.array_equal(again[1], order[1])        # a new epoch, new batches


def test_cpu_fit_imports_no_torch():
    """A numba fit on device "cpu" leaves torch unimported: a workflow job that
    fits PL saves torch's 2-4 CPU-s of import (issue 37)."""
    code = ("import sys, numpy as np; from fitontest import families; "
            "r = np.random.default_rng(0); s = r.random(400); y = (r.random(400) < s).astype(int); "
            "families.get('pl3_ce', max_epochs=3).fit(s, y); "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stderr


def test_map_is_a_function_of_the_score_at_rounded_knots():
    """An interior knot rounded past the end knot (cumsum(softmax) = 1 + 2^-52
    before the end, set to 1.0), or repeated: every score gets one value
    whatever the order of the points (np.interp alone gave a score of 1.0 two
    values in one prediction), the end height at the end; other scores keep
    np.interp's values bit for bit."""
    from fitontest.families.pl.maps import interp_knots

    rng = np.random.default_rng(0)
    x = np.concatenate([rng.random(3000), np.ones(500), np.full(200, 0.5)])
    for knots, heights in [
        (np.array([0.0, 0.4, 0.9, np.nextafter(1.0, 2.0), 1.0]), np.array([0.1, 0.3, 0.8, 0.95, 0.99])),
        (np.array([0.0, 0.5, 0.5, 0.8, 1.0, 1.0]), np.array([0.1, 0.3, 0.6, 0.7, 0.9, 0.97])),
    ]:
        ref = None
        for _ in range(5):
            order = rng.permutation(x.size)
            v = np.empty_like(x)
            v[order] = interp_knots(x[order], knots, heights)
            assert ref is None or np.array_equal(v, ref)
            ref = v
        assert np.all(ref[x == 1.0] == heights[-1])
        if knots[1] == knots[2] == 0.5:
            assert np.all(ref[x == 0.5] == heights[2])         # the last knot of the run
        plain = (x != 0.5) & (x < 1.0)
        assert np.array_equal(ref[plain], np.interp(x[plain], knots, heights))
    ordered = np.array([0.0, 0.3, 1.0])
    assert np.array_equal(interp_knots(x, ordered, np.array([0.2, 0.5, 0.9])),
                          np.interp(x, ordered, np.array([0.2, 0.5, 0.9])))
