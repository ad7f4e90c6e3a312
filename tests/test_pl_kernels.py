"""The numba kernels of the PL / PL3 trainer against independent references
(docs/methods/04-pl.md §4.7): the sigmoid, the segment search, the loss as an
exponent sum and mantissa product, and the shuffled batch gather."""
import math

import numpy as np
import pytest

pytest.importorskip("numba")
from numba import njit  # noqa: E402

from fitontest.families.pl import algorithm as alg  # noqa: E402
from fitontest.families.pl import numba_kernels as nk  # noqa: E402


def test_sigmoid_parts_within_two_ulp():
    """(e^t / (1 + e^t), 1 / (1 + e^t)) against mpmath at 50 digits."""
    mpmath = pytest.importorskip("mpmath")

    @njit
    def many(x):
        a, b = np.empty_like(x), np.empty_like(x)
        for i in range(x.shape[0]):
            a[i], b[i] = nk.sigmoid_parts(x[i])
        return a, b

    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-40, 40, 1000), rng.uniform(-708, 709, 200),
                        [0.0, math.log(2) / 2, -math.log(2) / 2, alg.LOSS_CAP, -708.0]])
    a, b = many(x)
    with mpmath.workdps(50):
        ra = np.array([float(mpmath.exp(v) / (1 + mpmath.exp(v))) for v in x])
        rb = np.array([float(1 / (1 + mpmath.exp(v))) for v in x])
    assert np.all(np.abs(a - ra) <= 2 * np.spacing(ra))
    assert np.all(np.abs(b - rb) <= 2 * np.spacing(rb))
    # below the clip: as at -708, finite and tiny
    lo = many(np.array([-1e4]))
    assert lo[1][0] == 1.0 and 0 < lo[0][0] < 1e-300


def test_segment_ends_equal_numpy_searchsorted():
    rng = np.random.default_rng(1)
    ends = np.empty(8, dtype=np.int64)
    for _ in range(200):
        n = int(rng.integers(0, 40))
        xs = np.sort(rng.integers(0, 10, n).astype(float))        # ties
        start = int(rng.integers(0, 3))
        xs = np.concatenate([np.full(start, -1.0), xs])
        k = int(rng.integers(0, 7))
        X = np.sort(rng.uniform(-1, 11, k + 2))
        X[1:-1] = np.where(rng.random(k) < 0.3, np.round(X[1:-1]), X[1:-1])  # knots on points
        nk.segment_ends(xs, start, xs.shape[0], X, k, ends)
        ref = start + np.searchsorted(xs[start:], X[1:k + 1], side="left")
        assert np.array_equal(ends[:k], ref) and ends[k] == xs.shape[0]


@pytest.mark.parametrize("space", [alg.PROB, alg.LOGIT])
def test_ce_loss_of_a_long_batch_matches_the_sum_of_logs(space):
    """Batches longer than a mantissa chunk, probabilities down to the 1e-16
    clip: the exponent-and-mantissa loss equals -mean log p_y (math.fsum)."""
    rng = np.random.default_rng(2)
    B, k = 2600, 1
    s = np.sort(rng.uniform(0.001, 0.999, B))
    x = s if space == alg.PROB else np.log(s) - np.log1p(-s)
    y = (rng.random(B) < 0.5).astype(float)
    arrays, _ = alg.point_arrays(space, alg.CE, x, y, np.ones(B))
    P = alg.initial_params([s], [k], k, space)
    P[0, k + 1:] = [80.0, 80.0, -80.0] if space == alg.LOGIT else [40.0, 40.0, -40.0]
    K1 = k + 1
    p, t, u, X, h, bb, aa, inv, S0, S1, dh, dX, dp, ends = nk.scratch(K1)
    alg.geometry(P, 0, k, K1, space, False, p, t, u, X, h, bb, aa, inv)
    loss = nk.point_pass(arrays[0], arrays[1], arrays[1], 0, B, 1.0 / B, 0.0, k, space, alg.CE,
                         X, aa, bb, S0, S1, ends)
    f = np.interp(x, X[:k + 2], h[:k + 2])
    if space == alg.PROB:
        per = -np.log(np.clip(np.where(y == 1, f, 1 - f), alg.CLIP, 1 - alg.CLIP))
    else:
        per = np.minimum(np.logaddexp(0.0, -(2 * y - 1) * f), alg.LOSS_CAP)
    assert per.max() == pytest.approx(alg.LOSS_CAP)      # the clip is reached
    assert loss == pytest.approx(math.fsum(per) / B, rel=1e-12)


def test_shuffle_gather_equals_the_batch_orders():
    """The fused shuffle + gather puts every group's members where
    :func:`.algorithm.batch_orders` says, with per-batch virtual counts."""
    from fitontest.families.pl.numba_train import shuffle_gather

    rng = np.random.default_rng(3)
    for n_batches, A in [(4, 2), (3, 3), (7, 2)]:
        n, n_real = 103, 150                    # 3 virtual members at the end of group 1
        members = np.stack([np.sort(rng.choice(n_real, n, replace=False)),
                            np.concatenate([np.sort(rng.choice(n_real, n - 3, replace=False)),
                                            [150, 151, 152]])])
        data = rng.normal(size=(A, n_real + 3))
        gdata = np.ascontiguousarray(data[:, members].transpose(1, 0, 2))
        _, bounds, label = alg.batch_layout(n, n_batches)
        keys = np.array([5, 9], dtype=np.uint64)
        order = np.zeros((2, n), dtype=np.int64)
        alg.batch_orders(keys, 4, np.array([0, 1]), label, bounds, members, order)
        first_virtual = (members < n_real).sum(axis=1)
        lab, js = np.empty(n, dtype=np.uint8), np.empty(n, dtype=np.int32)
        for g in range(2):
            out, rscale, nvirt = np.zeros((A, n)), np.zeros(n_batches), np.zeros(n_batches)
            shuffle_gather(keys, 4, g, label.astype(np.uint8), bounds, gdata, first_virtual,
                           out, rscale, nvirt, lab, js)
            assert np.array_equal(out, data[:, order[g]])
            virt = np.array([(order[g, bounds[b]:bounds[b + 1]] >= n_real).sum()
                             for b in range(n_batches)])
            assert np.array_equal(nvirt, virt)
            assert np.allclose(rscale, 1.0 / (np.diff(bounds) - virt))
