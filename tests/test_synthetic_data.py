"""The synthetic shapes of docs/methods/07-synthetic.md §7 against closed forms."""
import numpy as np
import pytest

from fitontest.data import synthetic as S


def test_base_ce_closed_forms():
    # E|x - x^2| = E|x - sqrt x| = 1/6 on U(0, 1)
    assert S.base_ce("square") == pytest.approx(1 / 6, abs=1e-9)
    assert S.base_ce("sqrt") == pytest.approx(1 / 6, abs=1e-7)


@pytest.mark.parametrize("shape", S.SHAPES)
def test_shapes_are_increasing_bijections_of_unit_interval(shape):
    f = S.BASE_SHAPES[shape]
    x = np.linspace(0, 1, 10001)
    fx = f(x)
    assert fx[0] == pytest.approx(0, abs=1e-12) and fx[-1] == pytest.approx(1, abs=1e-12)
    assert np.all(np.diff(fx) >= -1e-12)


@pytest.mark.parametrize("shape", S.SHAPES)
@pytest.mark.parametrize("ce", [0.0, 0.05, 0.1])
def test_true_map_inverts_and_ce_is_as_asked(shape, ce):
    p, y, c = S.sample(shape, ce, 200_000, seed=3)
    c_back = S.true_map(shape, ce)(p)
    assert np.max(np.abs(c_back - c)) < 1e-9
    # true CE of the sample = mean |p - c(p)|, close to the level asked for
    assert np.mean(np.abs(p - c)) == pytest.approx(ce, abs=2e-3)


def test_sample_shares_c_and_y_across_shapes_and_levels():
    _, y1, c1 = S.sample("square", 0.01, 500, seed=4)
    _, y2, c2 = S.sample("stairs", 0.09, 500, seed=4)
    assert np.array_equal(c1, c2) and np.array_equal(y1, y2)
    _, y3, c3 = S.sample("square", 0.01, 500, seed=5)
    assert not np.array_equal(c1, c3)


def test_beta1_matches_its_formula_at_a_point():
    m, a, b = 0.4, 0.4, 0.45
    g = b * np.log(1 - m) - a * np.log(m)
    x = 0.3
    expected = 1 / (1 + 1 / (np.exp(g) * x**a / (1 - x) ** b))
    assert S.BASE_SHAPES["beta1"](np.array([x]))[0] == pytest.approx(expected, rel=1e-12)
    # gamma is chosen so that f(m) = 1/2
    assert S.BASE_SHAPES["beta1"](np.array([m]))[0] == pytest.approx(0.5, rel=1e-12)


def test_bad_shape_and_ce():
    with pytest.raises(ValueError, match="unknown synthetic shape"):
        S.true_map("circle", 0.1)
    with pytest.raises(ValueError, match="exceeds the CE of the base shape"):
        S.alpha("beta2", 0.2)
