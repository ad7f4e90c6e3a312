"""PL / PL3: the L-BFGS optimiser (``optimizer="lbfgs"``, docs/methods/04-pl.md §4.8)
and the vectorised mini-batch shuffle of the Adam path (§4.7)."""
import numpy as np
import pytest

from fitontest import families
from fitontest.core.validation import logit
from fitontest.core.selection import kfold_indices

pytest.importorskip("torch")
from fitontest.families.pl import algorithm as alg  # noqa: E402  (numba, after torch's skip)
from fitontest.families.pl.trainer import BatchedTrainer  # noqa: E402


def draw(n, seed, cmap):
    rng = np.random.default_rng(seed)
    s = rng.random(n)
    return s, (rng.random(n) < cmap(s)).astype(int)


def log_loss(y, p):
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log1p(-p)))


# ------------------------------------------------ optimizer="lbfgs" (docs/methods/04-pl.md §4.8)
def _one_piece_optimum(space, s, y):
    """Independent optimum of the one-piece CE: scipy BFGS on the line's two
    end heights (PL: probabilities at s = 0, 1, clipped as the loss; PL3:
    logistic regression on logit(s))."""
    from scipy.optimize import minimize

    z = s if space == "prob" else logit(s)

    def nll(w):
        f = w[0] + w[1] * z
        if space == "prob":
            c = np.clip(f, 1e-16, 1 - 1e-16)
            return -np.mean(y * np.log(c) + (1 - y) * np.log1p(-c))
        return np.mean(np.logaddexp(0, -(2 * y - 1) * f))

    w0 = [0.1, 0.8] if space == "prob" else [0.0, 1.0]
    return minimize(nll, w0, method="Nelder-Mead",
                    options={"xatol": 1e-12, "fatol": 1e-15, "maxiter": 20000}).fun


@pytest.mark.parametrize("space", ["prob", "logit"])
def test_lbfgs_reaches_the_one_piece_optimum(space):
    rng = np.random.default_rng(13)
    n = 1500
    s = rng.beta(2, 2, n)
    y = (rng.random(n) < 1 / (1 + np.exp(-(0.6 * logit(s) + 0.3)))).astype(float)
    res = BatchedTrainer(space=space, loss="ce", optimizer="lbfgs", n_threads=1).fit(
        s, y, [np.arange(n)], [0], n_batches=1)
    assert log_loss(y, res.predict(0, 0, s)) == pytest.approx(_one_piece_optimum(space, s, y),
                                                             abs=1e-8)
    assert res.final_loss[0, 0] == pytest.approx(log_loss(y, res.predict(0, 0, s)), abs=1e-12)
    assert res.n_epochs[0, 0] < 200                  # passes over the data, not 1500


@pytest.mark.parametrize("space", ["prob", "logit"])
@pytest.mark.parametrize("loss", ["ce", "mse"])
def test_lbfgs_descends_from_the_identity_and_threads_agree(space, loss):
    """L-BFGS only accepts steps that lower the loss: every model ends below
    its identity start, and the one-piece models (a near-convex problem) at
    or below Adam's. (With more pieces it finds a stationary point, not
    always a better one than Adam's: a knot can run onto an end knot,
    docs/methods/04-pl.md §4.8.)"""
    s, y = draw(1005, 14, cmap=lambda s: 0.5 + 0.4 * np.sin(7 * s))   # unequal folds
    groups = [tr for tr, _ in kfold_indices(1005, 10, 0)][:3]
    ks = [0, 1, 3]
    adam = BatchedTrainer(space=space, loss=loss, n_threads=1).fit(s, y, groups, ks, n_batches=4)
    kw = dict(space=space, loss=loss, optimizer="lbfgs")
    start = BatchedTrainer(max_epochs=0, **kw).fit(s, y, groups, ks, n_batches=4)
    one = BatchedTrainer(n_threads=1, **kw).fit(s, y, groups, ks, n_batches=4)
    two = BatchedTrainer(n_threads=2, **kw).fit(s, y, groups, ks, n_batches=4)
    assert np.array_equal(one.heights, two.heights) and np.array_equal(one.knots, two.knots)
    assert np.array_equal(one.n_epochs, two.n_epochs)

    def train_loss(res, g, c):      # recomputed from the fitted map, independent of the kernels
        pred = res.predict(g, c, s[groups[g]])
        yy = y[groups[g]]
        if loss == "mse":
            return np.mean((pred - yy) ** 2)
        return log_loss(yy, np.clip(pred, 1e-16, 1 - 1e-16))

    for g in range(len(groups)):
        for c in range(len(ks)):
            got = train_loss(one, g, c)
            assert got == pytest.approx(one.final_loss[g, c], rel=1e-9)
            assert got < train_loss(start, g, c)
        assert train_loss(one, g, 0) <= train_loss(adam, g, 0) + 1e-9
    for knots in one.knots.reshape(-1, one.knots.shape[-1]):
        assert np.all(np.diff(knots) >= 0)


def test_lbfgs_family_identity_cap_and_errors():
    s, y = draw(1000, 15, cmap=lambda s: 0.1 + 0.8 * s)
    fam = families.get("pl3_ce", optimizer="lbfgs", max_epochs=0, max_knots=2).fit(s, y)
    grid = np.linspace(0.001, 0.999, 999)
    assert np.allclose(fam.predict(grid), grid, atol=1e-12)       # identity initialisation
    fam = families.get("pl_ce", optimizer="lbfgs", max_epochs=7, max_knots=2).fit(s, y)
    assert fam.n_epochs_.max() <= 7 and fam.n_pieces_ in fam.candidates_
    with pytest.raises(ValueError, match="optimizer"):
        families.get("pl_ce", optimizer="newton").fit(s, y)
    with pytest.raises(ValueError, match="numba backend"):
        families.get("pl_ce", optimizer="lbfgs", backend="torch").fit(s, y)


def test_shuffle_equals_the_sequential_fisher_yates():
    """The vectorised shuffle against a plain-Python Fisher-Yates on the same
    SplitMix64 stream (Lemire's rejection included): at n = 200,000 a
    rejection-prone draw (low < bound) near certain (~5 expected per shuffle),
    n = 500 unlikely (the vectorised path)."""
    M64 = (1 << 64) - 1

    def splitmix(state):
        state = (state + 0x9E3779B97F4A7C15) & M64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return state, z ^ (z >> 31)

    def reference(key, epoch, label):
        state = key ^ (((epoch + 1) * 0x94D049BB133111EB) & M64)
        out = list(label)
        for i in range(len(out) - 1, 0, -1):
            bound = i + 1
            state, z = splitmix(state)
            m = (z >> 32) * bound
            if (m & 0xFFFFFFFF) < bound:
                threshold = ((1 << 32) - bound) % bound
                while (m & 0xFFFFFFFF) < threshold:
                    state, z = splitmix(state)
                    m = (z >> 32) * bound
            j = m >> 32
            out[i], out[j] = out[j], out[i]
        return out

    for n, epochs in ((500, range(6)), (200_000, range(2))):
        label = np.repeat(np.arange(4), n // 4 + 1)[:n].astype(np.int64)
        out = np.empty_like(label)
        for epoch in epochs:
            alg.shuffle_labels(np.uint64(123456789012345), epoch, label, out)
            assert out.tolist() == reference(123456789012345, epoch, label.tolist())
