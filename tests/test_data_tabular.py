"""Tabular source: exact posterior against Monte Carlo and scipy, the Bayes classifier's
identity truth map, determinism, settings and the classifier registry."""
import numpy as np
import pytest
from scipy.stats import multivariate_normal

from fitontest import tasks
from fitontest.data import sources
from fitontest.data.tabular import TabularGenerator, TabularSource, check_params
from fitontest.models import tabular as T
from fitontest.study import truth
from fitontest.study.tasks import event_posterior

SMALL = {"n_classes": 4, "n_features": 3, "n_components": 2, "separation": 1.0,
         "correlation": 0.6, "imbalance": 1.5, "label_noise": 0.1, "seed": 3}


def test_posterior_matches_scipy_mixture_density():
    g = TabularGenerator(**SMALL)
    X, _ = g.sample(50, np.random.default_rng(0))
    dens = np.zeros((50, g.num_classes))
    for k in range(g.num_classes):
        cov = g.chol[k] @ g.chol[k].T
        for m in range(g.means.shape[1]):
            dens[:, k] += g.weights[k, m] * multivariate_normal(g.means[k, m], cov).pdf(X)
    clean = g.prior * dens / (g.prior * dens).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(g.clean_posterior(X), clean, rtol=1e-9, atol=1e-12)
    eta = SMALL["label_noise"]
    np.testing.assert_allclose(g.posterior(X), (1 - eta) * clean + eta / 4, rtol=1e-9)


def test_exact_posterior_equals_monte_carlo_frequencies_within_their_se():
    """Among rows whose exact P(y = k | x) falls in a bin, the share with label k
    is the bin's mean posterior (up to Monte-Carlo error)."""
    g = TabularGenerator(**SMALL)
    X, y = g.sample(200_000, np.random.default_rng(1))
    P = g.posterior(X)
    worst = 0.0
    for k in range(g.num_classes):
        bins = np.minimum((P[:, k] * 10).astype(int), 9)
        for b in np.unique(bins):
            sel = bins == b
            if sel.sum() < 200:
                continue
            freq, mean_p = (y[sel] == k).mean(), P[sel, k].mean()
            se = np.sqrt(mean_p * (1 - mean_p) / sel.sum())
            worst = max(worst, abs(freq - mean_p) / max(se, 1e-12))
    assert worst < 4.5, worst
    # label marginal: (1 - eta) pi + eta / K
    expect = (1 - 0.1) * g.prior + 0.1 / 4
    se = np.sqrt(expect * (1 - expect) / len(y))
    assert np.all(np.abs(np.bincount(y, minlength=4) / len(y) - expect) < 4 * se)


def test_bayes_classifier_has_the_identity_as_truth_map():
    src = TabularSource(200_000, **SMALL)
    X, y = src.load(np.arange(200_000))
    clf = T.get("bayes", generator=src.generator).fit(X[:10], y[:10])
    probs = np.exp(T.log_proba(clf, X).astype(np.float64))
    probs /= probs.sum(axis=1, keepdims=True)
    post = src.posterior(np.arange(200_000))
    for k in (0, None):
        s, yb = tasks.reduce(k, probs, y)
        q = event_posterior(k, probs, post)
        exact = truth.estimate("posterior", s, yb, posterior=q)
        assert np.abs(exact - s).max() < 1e-5
        # from the labels alone: isotonic regression on 200k rows, only sampling noise
        iso = truth.estimate("isotonic", s, yb)
        assert np.mean(np.abs(iso - s)) < 0.01


def test_rows_are_addressed_by_index_deterministically():
    a = TabularSource(30_000, **{**SMALL, "block_size": 1000})
    b = TabularSource(30_000, **{**SMALL, "block_size": 1000})
    idx = np.array([29_999, 5, 1000, 5, 17_123])
    Xa, ya = a.load(idx)
    Xb, yb = b.load(idx[::-1])
    np.testing.assert_array_equal(Xa, Xb[::-1])
    np.testing.assert_array_equal(ya, yb[::-1])
    np.testing.assert_array_equal(Xa[1], Xa[3])
    X_all, _ = a.load(np.arange(30_000))
    np.testing.assert_array_equal(X_all[idx], Xa)
    chunks = list(a.iter_chunks(idx, chunk_size=2))
    assert sorted(np.concatenate([p for *_, p in chunks]).tolist()) == list(range(5))
    other = TabularSource(30_000, **{**SMALL, "block_size": 1000, "seed": 4})
    assert not np.array_equal(other.load(idx)[0], Xa)


def test_settings_are_checked():
    assert check_params({})["n_classes"] == 10
    for bad, msg in [({"colour": 1}, "unknown tabular"), ({"n_classes": 1}, "at least 2"),
                     ({"correlation": 1.0}, "below 1"), ({"label_noise": 2}, r"\[0, 1\]"),
                     ({"separation": -1}, "non-negative"), ({"n_features": 2.5}, "integer")]:
        with pytest.raises(ValueError, match=msg):
            check_params(bad)
    cfg = {"data_source": "tabular", "tabular": {"n_classes": 4},
           "split": {"n_train": 10, "n_val": 10, "n_holdout": 10}}
    assert sources.kind(cfg) == "features" and sources.has_posterior(cfg)
    assert sources.num_classes(cfg) == 4
    assert isinstance(sources.open_source(cfg), sources.ImageSource)


@pytest.mark.parametrize("name", ["logreg", "gnb", "rf", "hgb", "mlp", "svc"])
def test_each_classifier_gives_finite_logits_for_every_class(name):
    src = TabularSource(1200, **SMALL)
    X, y = src.load(np.arange(1200))
    clf = T.get(name, seed=0, generator=src.generator)
    if name == "mlp":
        clf.set_params(mlpclassifier__max_iter=20)
    keep = y != 3                       # a class the training rows lack
    clf.fit(X[:400][keep[:400]], y[:400][keep[:400]])
    z = T.log_proba(clf, X[400:], n_classes=4)
    assert z.shape == (800, 4) and np.isfinite(z).all()
    assert np.all(z[:, 3] == np.float32(np.log(T.PROBA_FLOOR)))
    np.testing.assert_allclose(np.exp(z.astype(np.float64)).sum(axis=1), 1, atol=1e-6)


def _same_arrays(a, b) -> bool:
    """Two npz files hold the same arrays (their zip entries carry the write time)."""
    with np.load(a) as x, np.load(b) as y:
        return x.files == y.files and all(np.array_equal(x[k], y[k]) for k in x.files)


@pytest.mark.workflow
@pytest.mark.parametrize("again", ["tabular stages", pytest.param("whole study",
                                                                   marks=pytest.mark.slow)])
def test_tabular_workflow_same_config_same_tables(tmp_path, again):
    """A tiny tabular run, and again in another directory: the same results. Again
    the tabular source's own stages (the split, the exact posterior, each
    classifier's fit and logits: the default set), whose outputs must be the same
    arrays; or the whole study (the slow set), whose tables must be the same bytes.
    (The stages after the logits are the image studies' and see the same inputs.)"""
    import yaml

    from conftest import REPO, run_snakemake

    cfg = yaml.safe_load((REPO / "config" / "tabular.yaml").read_text())
    cfg.update(exp="tab", tabular={**SMALL, "block_size": 2000},
               split={"n_train": 800, "n_val": 800, "n_holdout": 6000, "seed": 0},
               archs={"gnb": {"model": "gnb"}, "bayes": {"model": "bayes"}},
               # one network each: gnb and bayes draw nothing, so tabular.yaml's
               # seeds 1 and 2 would only repeat seed 0's fits (two clusters remain)
               training={**cfg["training"], "seeds": [0]},
               tasks={"c0": 0, "confidence": None},
               calibrators={"multiclass": ["none", "temps"], "binary": ["platt"]},
               truth=["posterior", "isotonic"])
    cfg["evaluation"].update(calibrators=["none", "temps", "platt"], sizes=[500, 1000],
                             seeds=[0], evaluators=["ece_es15", "isotonic"],
                             ranked_calibrators=["none", "temps", "platt"])
    arrays = ["data/holdout_posterior.npz", *(f"logits/{a}/{part}.npz" for a in cfg["archs"]
                                               for part in ("val", "holdout"))]
    targets = [] if again == "whole study" else [f"results/tab/{name}" for name in arrays]
    runs = []
    for run, only in (("a", []), ("b", targets)):
        (tmp_path / run).mkdir()
        out = run_snakemake(tmp_path / run, "--cores", "2", *only, config=cfg)
        assert out.returncode == 0, out.stderr[-3000:]
        runs.append(tmp_path / run / "results" / "tab")
    a, b = runs
    if again == "whole study":
        tables = [{p.name: p.read_bytes() for p in sorted((r / "tables").glob("*.csv"))}
                  for r in runs]
        assert tables[0] and tables[0] == tables[1]
    else:
        assert not (b / "calibrated").exists()        # the tabular stages alone ran again
        for name in arrays:
            assert _same_arrays(a / name, b / name), name
        assert (a / "data/split.json").read_bytes() == (b / "data/split.json").read_bytes()
    scores = __import__("pandas").read_parquet(a / "scores.parquet")
    # the Bayes posterior is calibrated: its true CE under the exact truth is ~0
    bayes = scores[(scores["arch"] == "bayes") & (scores["calibrator"] == "none")
                   & (scores["truth"] == "posterior")]
    assert bayes["true_ce_pop"].max() < 1e-4
