"""The numba kernels of PL / PL3 against their reference forms."""
import numpy as np


def test_fused_pl_ce_pass_equals_the_two_pass_form_bit_for_bit():
    """The fused PL cross-entropy loop does the same operations in the same
    order as the elementwise pass plus the reduction, clipped points and a
    product long enough to be logged included."""
    from fitontest.families.pl import numba_kernels as nk

    rng = np.random.default_rng(3)
    n = 1003                                  # a remainder after the 4-lane loop
    xs = np.sort(rng.random(n))
    ws = rng.choice([-1.0, 0.0, 1.0], n, p=[0.45, 0.1, 0.45])   # 0: virtual points
    gb, lb = np.empty(n), np.empty(n)
    for aj, bj, i0, i1 in [(0.1, 0.8, 0, n), (-0.3, 2.0, 5, 998), (0.5, 0.0, 17, 18)]:
        nk._pl_ce(xs, ws, i0, i1, aj, bj, gb, lb)
        want = nk._sums_logprod(xs, gb, lb, i0, i1, 0.25)
        got = nk._pl_ce_sums(xs, ws, i0, i1, aj, bj, 0.25)
        assert got == want
