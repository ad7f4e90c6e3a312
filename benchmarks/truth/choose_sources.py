"""The sources of the chooser's truth benchmark (benchmarks/truth/choose_truth.py):
each yields test subsets (label, scores, labels, true map at the scores) with a
known true calibration map; imported by choose_truth.py, it measures nothing
itself.

- ``synthetic``: the synthetic shapes (src/fitontest/data/synthetic.py), exact c;
- ``tabular``: a logistic regression (misspecified: the Bayes boundaries are
  quadratic) trained on the tabular source (src/fitontest/data/tabular.py);
  confidence and class-0-vs-rest tasks; c = the ``posterior`` truth (isotonic
  regression of the exact event posterior on the scores of a 200k hold-out);
- ``procedural``: the procedural source's exact posterior q
  (src/fitontest/data/procedural.py) turned into an over-confident network's
  outputs, logits = 1.5 log q + N(0, 0.3^2) noise; confidence task; c as for
  tabular;
- held out from every choice of the rule: ``steps`` (a step true map),
  ``binned`` (a histogram-binning calibrator's 15 scores), and, for the
  calibrated worlds of issue 56, ``calibrated`` (the tabular model's
  confidence with labels drawn from the scores themselves: c(s) = s, true CE
  0) and ``platt_recal`` (that confidence recalibrated by Platt scaling fitted
  on 5,000 labelled points, a near-calibrated model; c = the ``posterior``
  truth of the recalibrated scores).
"""
from __future__ import annotations

import numpy as np

from fitontest.data import synthetic
from fitontest.study.truth import estimate as truth_estimate

HOLDOUT = 200_000


SHAPES = ("square", "sqrt", "beta1", "beta2", "stairs")
CES = (0.02, 0.05)


def synthetic_subsets(ns, seeds):
    """One unit per (shape, CE, n, seed), each with its own label draw."""
    settings = [(shape, ce) for shape in SHAPES for ce in CES]
    for n in ns:
        for seed in seeds:
            for i, (shape, ce) in enumerate(settings):
                unit = seed * len(settings) + i
                p, y, c = synthetic.sample(shape, ce, n, unit)
                yield f"synthetic {shape} ce={ce} n={n} seed={unit}", p, y, c


def _posterior_subsets(name, task_sets, ns, seeds):
    for t, (task, (s, q)) in enumerate(task_sets.items()):
        rng = np.random.default_rng([7, len(task)])
        y = (rng.random(s.size) < q).astype(int)
        c = truth_estimate("posterior", s, y, q)
        for n in ns:
            for seed in seeds:
                # each task its own rows; labels of the subset drawn from the exact posterior
                pos = np.random.default_rng([11, n, seed, t]).choice(s.size, n, replace=False)
                yield f"{name} {task} n={n} seed={seed}", s[pos], y[pos], c[pos]


def _tabular_probs():
    """(hold-out probabilities, exact event posterior) of a logistic regression
    on the tabular source: the tabular sources' model."""
    from sklearn.linear_model import LogisticRegression

    from fitontest.data.tabular import TabularGenerator

    gen = TabularGenerator()
    X, y = gen.sample(20_000, np.random.default_rng(1))
    clf = LogisticRegression(max_iter=500).fit(X, y)
    Xh, _ = gen.sample(HOLDOUT, np.random.default_rng(2))
    return clf.predict_proba(Xh), gen.posterior(Xh)


def tabular_subsets(ns, seeds):
    probs, post = _tabular_probs()
    top = probs.argmax(axis=1)
    sets = {"confidence": (probs.max(axis=1), post[np.arange(HOLDOUT), top]),
            "class0": (probs[:, 0], post[:, 0])}
    yield from _posterior_subsets("tabular", sets, ns, seeds)


def procedural_subsets(ns, seeds):
    from fitontest.data.procedural import ProceduralSource

    q = ProceduralSource(HOLDOUT).posterior(np.arange(HOLDOUT))
    rng = np.random.default_rng(3)
    z = 1.5 * np.log(np.clip(q, 1e-12, 1.0)) + rng.normal(0.0, 0.3, size=q.shape)
    probs = np.exp(z - z.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    top = probs.argmax(axis=1)
    sets = {"confidence": (probs.max(axis=1), q[np.arange(HOLDOUT), top])}
    yield from _posterior_subsets("procedural", sets, ns, seeds)


def _tabular_model():
    """(hold-out confidence scores, their exact event posterior) of the logistic
    regression on the tabular source (as ``tabular_subsets``)."""
    probs, post = _tabular_probs()
    top = probs.argmax(axis=1)
    return probs.max(axis=1), post[np.arange(HOLDOUT), top]


def _labelled_subsets(name, s, rate, c, ns, seeds, salt):
    """Subsets of n hold-out points per seed: scores ``s``, labels ~ Bernoulli(``rate``),
    true map ``c`` (each source its own ``salt``)."""
    for n in ns:
        for seed in seeds:
            rng = np.random.default_rng([salt, n, seed])
            pos = rng.choice(s.size, n, replace=False)
            y = (rng.random(n) < rate[pos]).astype(int)
            yield f"{name} n={n} seed={seed}", s[pos], y, c[pos]


def steps_subsets(ns, seeds):
    """Held out from every choice of the rule: a step true map, what an isotonic
    calibrator leaves. The tabular model's confidence s (continuous), its true
    map c = the isotonic regression of the exact event posterior on s fitted on
    1,000 points (a step function of about 30 steps), labels ~ Bernoulli(c(s))."""
    from sklearn.isotonic import IsotonicRegression

    s, q = _tabular_model()
    fit = np.random.default_rng(13).choice(s.size, 1000, replace=False)
    c = IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip").fit(s[fit], q[fit]).predict(s)
    yield from _labelled_subsets("steps", s, c, c, ns, seeds, salt=17)


def binned_subsets(ns, seeds):
    """Held out from every choice of the rule: a calibrated model's usual scores,
    what a binning calibrator leaves. The tabular model's confidence binned by
    15 equal-size bins fitted on 1,000 labelled points (s' = the bin's label
    mean: 15 distinct scores); the exact true map c(s') = the mean exact
    posterior over the hold-out points of that bin; labels ~ Bernoulli(q)."""
    s, q = _tabular_model()
    rng0 = np.random.default_rng(19)
    fit = rng0.choice(s.size, 1000, replace=False)
    yfit = (rng0.random(fit.size) < q[fit]).astype(int)
    # histogram binning (Zadrozny & Elkan 2001): 15 equal-count bins of the fitting
    # scores, each score mapped to its bin's label mean
    edges = np.quantile(s[fit], np.linspace(0, 1, 16)[1:-1])
    fit_bin, bin_of = np.searchsorted(edges, s[fit]), np.searchsorted(edges, s)
    means = np.bincount(fit_bin, weights=yfit, minlength=15) / np.bincount(fit_bin,
                                                                          minlength=15)
    sb = means[bin_of]
    c = (np.bincount(bin_of, weights=q, minlength=15) / np.bincount(bin_of, minlength=15))[bin_of]
    yield from _labelled_subsets("binned", sb, q, c, ns, seeds, salt=23)


def calibrated_subsets(ns, seeds):
    """Held out: a calibrated model. The tabular model's confidence s
    (continuous), labels ~ Bernoulli(s): the true map is the identity and every
    subset's true CE is 0."""
    s, _ = _tabular_model()
    yield from _labelled_subsets("calibrated", s, s, s, ns, seeds, salt=29)


def platt_recal_subsets(ns, seeds):
    """Held out: a near-calibrated model. The tabular model's confidence
    recalibrated by Platt scaling fitted on 5,000 points with labels from the
    exact posterior; labels ~ Bernoulli(posterior); c = the ``posterior`` truth
    (isotonic regression of the exact posterior on the recalibrated scores)."""
    from fitontest import families

    s, q = _tabular_model()
    rng0 = np.random.default_rng(31)
    fit = rng0.choice(s.size, 5000, replace=False)
    platt = families.get("platt").fit(s[fit], (rng0.random(fit.size) < q[fit]).astype(int))
    sr = np.clip(platt.predict(s), 1e-6, 1 - 1e-6)
    c = truth_estimate("posterior", sr, (rng0.random(s.size) < q).astype(int), q)
    yield from _labelled_subsets("platt_recal", sr, q, c, ns, seeds, salt=37)


MAKERS = {"synthetic": synthetic_subsets, "tabular": tabular_subsets,
          "procedural": procedural_subsets, "steps": steps_subsets, "binned": binned_subsets,
          "calibrated": calibrated_subsets, "platt_recal": platt_recal_subsets}
#: sources no constant of the rule was chosen on (docs/methods/14-chooser.md §14.3)
HELD_OUT = ("steps", "binned", "calibrated", "platt_recal")
