"""Optional capabilities declared on CalibrationFamily, overridden by the
families that have them, and the one resolver of evaluators (issue #24.2)."""
import numpy as np
import pytest
from sklearn.base import clone

import fitontest
from fitontest import families
from fitontest.families.base import (CalibrationFamily, DuckFamily, MissingCapability,
                                     estimates, resample_chunks)
from fitontest.families.binning import BinningFamily
from fitontest.inference.intervals import bootstrap_indices, ce_interval, refit_replicates


def _data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.random(n)
    return s, (rng.random(n) < s ** 2).astype(float)


class CountingBins(BinningFamily):
    """A user's subclass of the binning family; counts its fits."""

    fits = 0

    def _fit(self, s, y):
        type(self).fits += 1
        super()._fit(s, y)


class DuckBins:
    """Equal-width slope-1 binning that does not derive from CalibrationFamily."""

    def __init__(self, n_bins=5):
        self.n_bins = n_bins

    def get_params(self, deep=True):
        return {"n_bins": self.n_bins}

    def set_params(self, **params):
        self.n_bins = params.get("n_bins", self.n_bins)
        return self

    def _bin(self, s):
        return np.minimum((np.asarray(s) * self.n_bins).astype(int), self.n_bins - 1)

    def fit(self, s, y):
        b = self._bin(s)
        cnt = np.bincount(b, minlength=self.n_bins)
        diff = np.bincount(b, weights=np.asarray(y) - s, minlength=self.n_bins)
        self.shift_ = np.where(cnt > 0, diff / np.maximum(cnt, 1), 0.0)
        self.full_ = cnt > 0
        return self

    def predict(self, s):
        return np.asarray(s) + self.shift_[self._bin(s)]

    def ce_estimate(self, s, p=1):
        return float(np.mean(np.abs(self.predict(s) - s) ** p))


class DuckBinsWithMax(DuckBins):
    def max_calibration_error(self):
        return float(np.max(np.abs(self.shift_[self.full_])))


def test_defaults_of_the_base_class():
    s, y = _data()
    fam = families.get("isotonic").fit(s, y)
    assert np.isnan(fam.ce_estimate_debiased(s))
    est = estimates(fam, s)
    assert np.isnan(est["ce_est_debiased"]) and np.isnan(est["ce_est_debiased_sq"])
    with pytest.raises(MissingCapability, match="not defined for IsotonicFamily|Isotonic"):
        fam.max_calibration_error()
    assert issubclass(MissingCapability, ValueError)
    assert not fam.batched_replicates and BinningFamily.batched_replicates


def test_default_bootstrap_replicates_is_refitting_on_the_same_resamples():
    s, y = _data(200)
    fam = families.get("platt")
    idx = bootstrap_indices(s.size, 5, 3)
    np.testing.assert_array_equal(fam.bootstrap_replicates(s, y, resample_chunks(s.size, 5, 3)),
                                  refit_replicates(fam, s, y, idx))


def test_binning_subclass_keeps_the_batched_replicates_and_max_error():
    s, y = _data()
    sub = CountingBins(scheme="es", n_bins=10)
    CountingBins.fits = 0
    reps = sub.bootstrap_replicates(s, y, resample_chunks(s.size, 30, 1))
    assert CountingBins.fits == 0                   # computed from counts, not refitted
    np.testing.assert_allclose(reps, refit_replicates(BinningFamily(scheme="es", n_bins=10),
                                                      s, y, bootstrap_indices(s.size, 30, 1)),
                               rtol=1e-10)
    probs = np.column_stack([1 - s, s])
    y_int = y.astype(int)
    res = fitontest.evaluate(probs, y_int, evaluator=sub, mode="ovr", interval=0.9)
    ref = ce_interval(BinningFamily(scheme="es", n_bins=10), s, y_int)
    assert (res.interval.lo, res.interval.hi) == pytest.approx((ref.lo, ref.hi), abs=1e-12)
    top = fitontest.evaluate(probs, y_int, evaluator=sub, mode="ovr", p="max")
    fitted = BinningFamily(scheme="es", n_bins=10).fit(s, y)
    assert top.estimate == pytest.approx(fitted.max_calibration_error())


def test_duck_typed_family_gets_estimates_and_intervals():
    s, y = _data()
    probs, y_int = np.column_stack([1 - s, s]), y.astype(int)
    res = fitontest.evaluate(probs, y_int, evaluator=DuckBins(5), mode="ovr", interval=0.9)
    by_hand = BinningFamily(scheme="ew", n_bins=5).fit(s, y).ce_estimate(s)
    assert res.estimate == pytest.approx(by_hand, abs=1e-12) and res.debiased is None
    iv = res.interval
    assert iv is not None and iv.lo <= iv.hi and iv.method == "inverted" and iv.n_boot > 0
    # the interval is the refit bootstrap of the wrapped object
    same = ce_interval(BinningFamily(scheme="ew", n_bins=5, map="slope1"), s, y_int)
    assert iv.target == pytest.approx(same.target, abs=1e-12)


def test_duck_typed_family_p_max_where_it_qualifies_and_a_clear_error_otherwise():
    s, y = _data()
    probs, y_int = np.column_stack([1 - s, s]), y.astype(int)
    got = fitontest.evaluate(probs, y_int, evaluator=DuckBinsWithMax(5), mode="ovr", p="max")
    ew = BinningFamily(scheme="ew", n_bins=5).fit(s, y)
    assert got.estimate == pytest.approx(ew.max_calibration_error(), abs=1e-12)
    with pytest.raises(ValueError, match="not defined for evaluator 'DuckBins'"):
        fitontest.evaluate(probs, y_int, evaluator=DuckBins(5), mode="ovr", p="max")


class NoEstimate:
    def fit(self, s, y):
        return self


@pytest.mark.parametrize("bad, lacks", [(NoEstimate(), "ce_estimate"),
                                        (object(), "fit, ce_estimate")])
def test_objects_without_the_protocol_get_one_error_naming_what_they_lack(bad, lacks):
    s, y = _data(100)
    for call in (lambda: families.resolve(bad), lambda: ce_interval(bad, s, y),
                 lambda: fitontest.evaluate(np.column_stack([1 - s, s]), y.astype(int),
                                            evaluator=bad)):
        with pytest.raises(ValueError, match=f"CalibrationFamily.*lacks {lacks}"):
            call()


def test_resolver():
    name, fam = families.resolve("ece_es_cv", {"max_bins": 7})
    assert name == "ece_es_cv" and fam.max_bins == 7 and fam.selection == "cv"
    mine = BinningFamily(n_bins=4)
    name, fam = families.resolve(mine, {"n_bins": 6})
    assert name == "BinningFamily" and fam is not mine and mine.n_bins == 4 and fam.n_bins == 6
    assert not hasattr(fam, "n_fit_")
    duck = DuckBins(3)
    name, fam = families.resolve(duck, {"n_bins": 8})
    assert name == "DuckBins" and isinstance(fam, DuckFamily) and duck.n_bins == 3
    assert fam.estimator.n_bins == 8
    assert isinstance(clone(fam), CalibrationFamily)
    with pytest.raises(ValueError, match="unknown calibration-map family 'nope'"):
        families.resolve("nope")
    with pytest.raises(ValueError, match=r"got the class BinningFamily \(pass BinningFamily\(\)"):
        families.resolve(BinningFamily)
