"""The peers' evaluators (fitontest.families.peers, docs/methods/03-binary-families.md §3.12): each
plugin's numbers against its package's own function on fixed inputs, the p
conventions against direct computations and exact worlds, the error naming
the extra, and the league switch and bench path that score them.

Tests that need a package skip without it (``pytest.importorskip``), so the
suite passes without ``fitontest[peers]``."""
import sys

import numpy as np
import pytest

from fitontest import families
from fitontest.core.extras import MissingExtraError
from fitontest.families.base import estimates, used_estimates
from fitontest.inference.intervals import family_interval

PEERS = ["probmetrics_catboost", "probmetrics_isotonic", "probmetrics_ts", "ucal_debiased",
         "relplot_smece", "netcal_ace", "torchmetrics_ece", "venn_abers", "probcal_skce"]
#: the packages each peer imports, the one it imports first first
REQUIRES = {"probmetrics_catboost": ("probmetrics", "catboost"),
            "probmetrics_isotonic": ("probmetrics",), "probmetrics_ts": ("probmetrics",),
            "ucal_debiased": ("calibration",), "relplot_smece": ("relplot",),
            "netcal_ace": ("netcal",), "torchmetrics_ece": ("torchmetrics", "torch"),
            "venn_abers": ("venn_abers",), "probcal_skce": ("probcal",)}
PACKAGES = [(name, packages[0]) for name, packages in REQUIRES.items()]


def _needs(name):
    """Skip unless every package the peer ``name`` imports is installed."""
    for package in REQUIRES[name]:
        pytest.importorskip(package)


def _sample(n=1000, seed=0, power=1.5):
    """A fixed miscalibrated sample: c(s) = s^power."""
    rng = np.random.default_rng(seed)
    s = rng.uniform(0.01, 0.99, n)
    c = s ** power
    return s, (rng.random(n) < c).astype(float), c


def _torch_inputs(s, y):
    torch = pytest.importorskip("torch")
    return torch.as_tensor(y.astype(np.int64)), torch.as_tensor(np.column_stack([1 - s, s]))


# ------------------------------------------------------------------ probmetrics
@pytest.mark.parametrize("name, cal", [("probmetrics_isotonic", "isotonic-mix"),
                                       ("probmetrics_ts", "ts-mix"),
                                       ("probmetrics_catboost", "WS_CatboostClassifier")])
def test_probmetrics_equals_its_registered_metrics(name, cal, tmp_path, monkeypatch):
    """The package's own ``Metrics.from_names`` on the same sample. CatBoost's
    folds run in probmetrics' multiprocessing pool, which deadlocked here when
    forked after torch's threads started; both sides run it serially (the same
    fold function in order; the forked pool gave the same 0.09325545159762316
    once, on this sample, when it did not hang)."""
    pytest.importorskip("probmetrics")
    if cal.startswith("WS"):
        pytest.importorskip("catboost")
    from probmetrics.metrics import Metrics
    from fitontest.families.peers.probmetrics_ce import metric_names, serial_pool

    s, y, _ = _sample()
    monkeypatch.chdir(tmp_path)
    fam = families.get(name).fit(s, y)
    assert not (tmp_path / "catboost_info").exists()
    l1, brier = metric_names(cal)
    with serial_pool():
        ref = Metrics.from_names([l1, brier]).compute_all_from_labels_probs(*_torch_inputs(s, y))
    if cal.startswith("WS"):        # the package's own run leaves CatBoost's logs behind
        assert (tmp_path / "catboost_info").is_dir()
    assert fam.ce_estimate(s, 1) == pytest.approx(float(ref[l1]), abs=1e-12)
    assert fam.ce_estimate(s, 2) == pytest.approx(0.5 * float(ref[brier]), abs=1e-12)
    assert np.isnan(fam.ce_estimate_debiased(s, 1)) and not fam.provides_map
    if cal.startswith("WS"):
        assert fam.ce_estimate(s, 1) == pytest.approx(0.09325545159762316, abs=1e-12)


def test_probmetrics_p2_is_the_squared_ce_not_twice_it():
    """probmetrics' Brier sums both classes (twice the 1-D Brier score): half its
    gain estimates E(s - c)^2. On 20,000 points of c = s^1.5 (true squared CE
    0.01223, L1 CE 0.1024) the cross-fitted isotonic gives 0.01121 and 0.1069
    (measured); twice the squared CE would be 0.024."""
    pytest.importorskip("probmetrics")
    s, y, c = _sample(20_000, seed=1)
    fam = families.get("probmetrics_isotonic").fit(s, y)
    assert 0.8 < fam.ce_estimate(s, 2) / np.mean((s - c) ** 2) < 1.1
    assert 0.9 < fam.ce_estimate(s, 1) / np.mean(np.abs(s - c)) < 1.1


def test_probmetrics_names_a_class_too_rare_for_its_folds():
    pytest.importorskip("probmetrics")
    s, _, _ = _sample(100)
    y = np.zeros(100)
    y[:3] = 1
    with pytest.raises(ValueError, match="each class needs 5 points"):
        families.get("probmetrics_isotonic").fit(s, y)


# ----------------------------------------------------------- uncertainty-calibration
def _kumar_debiased_sq(s, y, n_bins=15):
    """The debiased squared ES-15 CE written out here: the package's equal-mass
    bins (midpoints between 15 sorted chunks, scores assigned by bisect_left)."""
    srt = np.sort(s)
    chunks = np.array_split(srt, n_bins)
    edges = sorted(set([(a[-1] + b[0]) / 2 for a, b in zip(chunks[:-1], chunks[1:])] + [1.0]))
    idx = np.searchsorted(edges, s, side="left")
    total = 0.0
    for b in np.unique(idx):
        yb, sb = y[idx == b], s[idx == b]
        total += yb.size / s.size * ((yb.mean() - sb.mean()) ** 2
                                     - yb.mean() * (1 - yb.mean()) / (yb.size - 1))
    return total


def test_ucal_equals_get_calibration_error_and_is_squared_at_p2():
    cal = pytest.importorskip("calibration")
    from fitontest.families.peers.base import global_numpy_seed

    s, y, _ = _sample()
    yi = y.astype(int)
    fam = families.get("ucal_debiased", seed=5).fit(s, y)
    est = estimates(fam, s)
    root = cal.get_calibration_error(s, yi, p=2, debias=True)
    assert est["ce_est_debiased_sq"] == pytest.approx(root ** 2, abs=1e-12)
    assert est["ce_est_sq"] == pytest.approx(cal.get_calibration_error(s, yi, p=2,
                                                                       debias=False) ** 2, abs=1e-12)
    assert est["ce_est"] == pytest.approx(cal.get_calibration_error(s, yi, p=1, debias=False),
                                          abs=1e-12)
    with global_numpy_seed(5):
        assert est["ce_est_debiased"] == pytest.approx(
            cal.get_calibration_error(s, yi, p=1, debias=True), abs=1e-12)
    # the package returns the root of the debiased squared CE; ce_est_debiased_sq is that square
    assert est["ce_est_debiased_sq"] == pytest.approx(max(_kumar_debiased_sq(s, y), 0), abs=1e-12)
    assert used_estimates(est) == (est["ce_est_debiased"], est["ce_est_debiased_sq"])


def test_ucal_interval_is_the_packages_at_alpha_in_percent():
    """get_calibration_error_uncertainties reads alpha in percent (its default 0.1
    is a 99.9 % interval): level 0.9 is its alpha=10, the same resamples under
    the same global seed."""
    cal = pytest.importorskip("calibration")
    from fitontest.families.peers.base import global_numpy_seed

    s, y, _ = _sample(600)
    fam = families.get("ucal_debiased").fit(s, y)
    ci = family_interval(fam, s, y, level=0.9, n_boot=100, seed=[0, 600, 1])
    with global_numpy_seed([0, 600, 1]):
        lo, _, hi = cal.get_calibration_error_uncertainties(s, y.astype(int), p=1, alpha=10)
    assert (ci.lo, ci.hi) == pytest.approx((max(lo, 0), hi), abs=1e-12)
    assert ci.level == 0.9 and ci.method == "own" and ci.estimate == fam.ce_estimate_debiased(s)
    with global_numpy_seed([0, 600, 1]):
        wide = cal.get_calibration_error_uncertainties(s, y.astype(int), p=1, alpha=0.1)
    assert wide[2] - wide[0] > hi - lo
    # the package's interval whatever our method; ours on request
    assert family_interval(fam, s, y, method="basic", n_boot=20).method == "own"
    from fitontest.inference.intervals import bootstrap_interval
    assert families.get("ece_es15").own_interval(s, y) is None         # ours have none
    assert bootstrap_interval(fam, s, y, method="basic", n_boot=20).method == "basic"


# ------------------------------------------------------------------- relplot
def test_relplot_is_relplots_smece_curve_and_interval():
    relplot = pytest.importorskip("relplot")
    from fitontest.families.peers.base import global_numpy_seed

    s, y, _ = _sample(800)
    fam = families.get("relplot_smece").fit(s, y)
    assert fam.ce_estimate(s) == relplot.smECE(s, y)
    assert np.isnan(fam.ce_estimate(s, p=2))
    diagram = relplot.prepare_rel_diagram(s, y, plot_confidence_band=False, report_CE_std=False)
    np.testing.assert_allclose(fam.predict(diagram["mesh"]), diagram["mu"], rtol=0, atol=1e-15)
    assert fam.chosen_hyperparameter() == relplot.smECE(s, y, return_width=True)[1]
    ci = family_interval(fam, s, y, level=0.9, seed=7)
    with global_numpy_seed(7):
        width = relplot.prepare_rel_diagram(s, y, plot_confidence_band=False)["ce_ci_width"]
    assert (ci.lo, ci.hi) == pytest.approx((max(ci.estimate - width, 0), ci.estimate + width),
                                           abs=1e-12)
    assert ci.level == 0.95 and ci.estimand == "smECE"     # relplot's level, whatever asked
    # our reimplementation agrees with the package on interior scores (docs/methods/03-binary-families.md §3.10)
    assert families.get("smece").fit(s, y).ce_estimate(s) == pytest.approx(fam.ce_estimate(s),
                                                                            abs=1e-6)


# -------------------------------------------------------------------- netcal
def test_netcal_ace_is_the_unweighted_mean_of_equal_width_bins():
    pytest.importorskip("netcal")
    from netcal.metrics import ACE

    s, y, _ = _sample(2000)
    fam = families.get("netcal_ace").fit(s, y)
    assert fam.ce_estimate(s) == ACE(bins=10).measure(s, y.astype(int))
    idx = np.minimum((s * 10).astype(int), 9)
    gaps = [abs(y[idx == b].mean() - s[idx == b].mean()) for b in range(10) if (idx == b).any()]
    assert fam.ce_estimate(s) == pytest.approx(np.mean(gaps), abs=1e-12)
    assert np.isnan(fam.ce_estimate(s, p=2))


# --------------------------------------------------------------- torchmetrics
def test_torchmetrics_ece_equals_ece_ew15_on_the_confidence_task():
    """The top-label task of a 4-class model: torchmetrics' binary ECE of
    (confidence, correct) is our ece_ew15 plug-in to rounding; its multi-class
    (top-label) function is the same number computed in float32."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("torchmetrics")
    from torchmetrics.functional.classification import (binary_calibration_error,
                                                        multiclass_calibration_error)

    rng = np.random.default_rng(4)
    z = rng.normal(size=(3000, 4)) * 2
    probs = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    labels = np.array([rng.choice(4, p=q) for q in probs])
    probs = probs ** 1.3 / (probs ** 1.3).sum(1, keepdims=True)       # over-confident
    conf, correct = probs.max(1), (probs.argmax(1) == labels).astype(float)
    fam = families.get("torchmetrics_ece").fit(conf, correct)
    ours = estimates(families.get("ece_ew15").fit(conf, correct), conf)
    assert fam.ce_estimate(conf) == pytest.approx(ours["ce_est"], abs=1e-12)
    assert fam.ce_estimate(conf, 2) == pytest.approx(ours["ce_est_sq"], abs=1e-12)
    t = torch.as_tensor(correct.astype(np.int64))
    assert fam.ce_estimate(conf) == float(binary_calibration_error(torch.as_tensor(conf), t))
    top = multiclass_calibration_error(torch.as_tensor(probs), torch.as_tensor(labels),
                                       num_classes=4, n_bins=15, norm="l1")
    assert float(top) == pytest.approx(ours["ce_est"], abs=1e-6)


# ---------------------------------------------------------------- venn-abers
def test_venn_abers_map_is_the_packages_merged_probability():
    va = pytest.importorskip("venn_abers")
    s, y, c = _sample(1500)
    fam = families.get("venn_abers").fit(s, y)
    at = np.linspace(0, 1, 301)
    p_prime, p0p1 = va.VennAbers().fit(np.column_stack([1 - s, s]), y.astype(int)).predict_proba(
        np.column_stack([1 - at, at]))
    np.testing.assert_array_equal(fam.predict(at), p_prime[:, 1])
    p0, p1 = fam.probability_interval(at)
    np.testing.assert_array_equal(np.c_[p0, p1], p0p1)
    assert np.all(p0 <= fam.predict(at) + 1e-15) and np.all(fam.predict(at) <= p1 + 1e-15)
    # its estimate is the plug-in of its map; the map beats the identity on c = s^1.5
    assert fam.ce_estimate(s) == pytest.approx(np.mean(np.abs(fam.predict(s) - s)), abs=1e-15)
    assert np.mean(np.abs(fam.predict(s) - c)) < 0.5 * np.mean(np.abs(s - c))


# ------------------------------------------------------------------- probcal
def test_probcal_skce_is_the_unbiased_laplace_skce():
    pytest.importorskip("probcal")
    from probcal.metrics import skce

    s, y, _ = _sample(300)
    fam = families.get("probcal_skce").fit(s, y)
    assert fam.ce_estimate(s, 2) == skce(y, s)
    # written out: h_ij = 2 exp(-|s_i - s_j| / h)(y_i - s_i)(y_j - s_j), h the median
    # pairwise distance, the mean over i != j
    d = np.abs(s[:, None] - s[None, :])
    bw = np.median(d[np.triu_indices(s.size, 1)])
    h = 2 * np.exp(-d / bw) * np.outer(y - s, y - s)
    uq = (h.sum() - np.trace(h)) / (s.size * (s.size - 1))
    assert fam.ce_estimate(s, 2) == pytest.approx(uq, abs=1e-12)
    assert fam.ce_estimate(s, 1) == pytest.approx(np.sign(uq) * np.sqrt(abs(uq)), abs=1e-12)


# ------------------------------------------------------- the contract, the extra
@pytest.mark.parametrize("name", PEERS)
def test_what_each_peer_has_and_lacks(name):
    fam = families.get(name)
    assert fam.provides_map == (name in ("venn_abers", "relplot_smece"))
    if not fam.provides_map:
        from fitontest.families import MissingCapability
        from sklearn.exceptions import NotFittedError

        with pytest.raises(NotFittedError):
            fam.predict([0.3])
        _needs(name)
        s, y, _ = _sample(300)
        fam.fit(s, y)
        with pytest.raises(MissingCapability, match="gives no calibration map"):
            fam.predict([0.3])
        with pytest.raises(ValueError, match="fitting sample"):
            fam.ce_estimate(s[:100])


def _block(monkeypatch, package):
    """``package`` and its submodules unimportable, as if not installed."""
    for name in [m for m in list(sys.modules) if m == package or m.startswith(package + ".")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, package, None)


@pytest.mark.parametrize("name, package", PACKAGES)
def test_a_missing_package_names_the_extra_in_one_line(monkeypatch, name, package):
    _block(monkeypatch, package)
    s, y, _ = _sample(200)
    with pytest.raises(MissingExtraError) as err:
        families.get(name).fit(s, y)
    msg = str(err.value)
    assert "pip install 'fitontest[peers]'" in msg and repr(package) in msg
    assert "\n" not in msg and "evaluator needs the package" in msg


def test_the_command_says_the_missing_extra(monkeypatch, tmp_path, capsys):
    import fitontest_cli

    _block(monkeypatch, "netcal")
    np.savez(tmp_path / "p.npz", probs=np.column_stack([np.linspace(0.1, 0.9, 400)[::-1],
                                                          np.linspace(0.1, 0.9, 400)]),
             labels=np.arange(400) % 2)
    assert fitontest_cli.main(["evaluate", str(tmp_path / "p.npz"), "--evaluator", "netcal_ace"]) == 2
    err = capsys.readouterr().err
    assert "fitontest[peers]" in err and err.count("\n") == 1


# -------------------------------------------------------------- the workflow
@pytest.mark.parametrize("name", PEERS)
def test_the_evaluate_job_scores_every_peer(name):
    """score_evaluator, the function of the evaluate job, on a small hold-out
    with the league's interval settings: a map where the peer has one, its
    own interval where its package gives one."""
    _needs(name)
    from fitontest.study.experiment import score_evaluator
    from fitontest.study.league import OWN_INTERVALS

    rng = np.random.default_rng(5)
    hold = rng.uniform(0.01, 0.99, 3000)
    labels = (rng.random(hold.size) < hold ** 1.4).astype(float)
    subsets = {(400, 0): np.arange(400), (800, 0): np.arange(400, 1200)}
    # the tabular config's method: the peers' own intervals all the same
    interval = {"level": 0.9, "method": "basic", "n_boot": 100, "refit_n_boot": 0,
                "per_family_n_boot": dict(OWN_INTERVALS)}
    rows = score_evaluator(name, {}, hold, labels, {"exact": hold ** 1.4}, subsets,
                           interval=interval, interval_seed=0)
    assert len(rows) == 2 and np.isfinite(rows["ce_used"]).all()
    fam = families.get(name)
    assert np.isfinite(rows["cmee"]).all() == fam.provides_map
    assert np.isfinite(rows["ce_lo"]).all() == (name in OWN_INTERVALS)
    if name in OWN_INTERVALS:
        assert (rows["ce_lo"] <= rows["ce_hi"]).all()
        assert rows["ci_level"].iloc[0] == (0.95 if name == "relplot_smece" else 0.9)


@pytest.mark.parametrize("name", PEERS + ["cf_isotonic", "cf_pl_ce"])
def test_bench_accepts_every_plugin_name(name):
    from fitontest_cli.commands.bench import bench_config, resolve_evaluator
    from conftest import load_config

    assert resolve_evaluator(name) == (name, None)
    cfg = bench_config(load_config(), name, None)
    assert name in cfg["evaluation"]["evaluators"] and name in cfg["synthetic"]["evaluators"]
    assert name in cfg["batch"]["alone"]
