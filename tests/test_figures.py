"""Figures: diagonal-filling geometry equals textbook ECE; every plot renders headless."""
import itertools

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402

from fitontest.study.schema import with_network
from fitontest.report.figures import maps, output, reliability, shapes, study  # noqa: E402
from fitontest.families.base import CalibrationFamily  # noqa: E402
from fitontest.study.schema import SCORE_COLUMNS, SCORE_VALUES  # noqa: E402


def textbook_ece(s, y, n_bins, scheme):
    """Σ_b (n_b/n)|s̄_b − ȳ_b|: EW by floor(s·B), ES by array_split of the sorted order."""
    if scheme == "ew":
        idx = np.minimum(np.floor(s * n_bins).astype(int), n_bins - 1)
        groups = [np.flatnonzero(idx == b) for b in range(n_bins)]
    else:
        groups = np.array_split(np.argsort(s), n_bins)
    return sum(len(g) / len(s) * abs(s[g].mean() - y[g].mean()) for g in groups if len(g))


@pytest.mark.parametrize("scheme,n,n_bins,seed", [
    ("ew", 1000, 15, 0), ("es", 1000, 15, 1), ("es", 997, 15, 2), ("ew", 503, 7, 3),
    ("es", 20, 15, 4), ("ew", 5000, 40, 5)])
def test_diagonal_filling_gives_back_ece(scheme, n, n_bins, seed):
    rng = np.random.default_rng(seed)
    s = rng.beta(0.7, 1.6, n)
    y = (rng.random(n) < s ** 1.4).astype(int)
    g = reliability.diagonal_filling_geometry(s, y, n_bins, scheme)
    expected = textbook_ece(s, y, n_bins, scheme)
    assert abs(g.ece - expected) < 1e-9
    assert abs(np.sum(g.weights * np.abs(g.gap)) - expected) < 1e-9
    # instance-weighted distance of the filling's top to the diagonal at the data points
    assert abs(np.mean(np.abs(g.top(s) - s)) - expected) < 1e-9
    # polygons: band between the diagonal and the slope-1 line over the bin
    for b, poly in enumerate(g.polygons):
        if poly is None:
            assert g.counts[b] == 0
            continue
        np.testing.assert_allclose(poly[2, 1] - poly[1, 1], g.gap[b])
        np.testing.assert_allclose(poly[3, 1] - poly[0, 1], g.gap[b])
        np.testing.assert_allclose(poly[:2, 0], poly[:2, 1])        # lower edge on the diagonal


class ToyBins(CalibrationFamily):
    """Equal-width slope-1 binning, only for these tests."""

    hyper_attr = "n_bins_"

    def __init__(self, n_bins=5):
        self.n_bins = n_bins

    def _idx(self, s):
        return np.minimum((s * self.n_bins).astype(int), self.n_bins - 1)

    def _fit(self, s, y):
        i = self._idx(s)
        c = np.bincount(i, minlength=self.n_bins)
        d = np.bincount(i, weights=y - s, minlength=self.n_bins)
        self.gap_ = np.where(c > 0, d / np.maximum(c, 1), 0.0)
        self.n_bins_ = self.n_bins

    def _predict(self, s):
        return s + self.gap_[self._idx(s)]


def toy_data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.random(n)
    c = s ** 0.8
    y = (rng.random(n) < c).astype(int)
    return s, y, c


def toy_scores_frame():
    rng = np.random.default_rng(0)
    rows = []
    for arch, task, cal, ev, size, seed in itertools.product(
            ["r110"], ["car", "confidence"], ["platt", "isotonic", "beta"],
            ["ece_es15", "kce", "toy"], [100, 300], [0, 1]):
        r = {c: rng.random() * 0.05 for c in SCORE_VALUES}
        r.update(arch=arch, task=task, calibrator=cal, evaluator=ev, size=size, seed=seed,
                 truth="isotonic")
        if ev == "kce":
            r["cmee"] = np.nan
        rows.append(r)
    return with_network(pd.DataFrame(rows))[SCORE_COLUMNS]


def test_reliability_diagram_styles_render():
    s, y, _ = toy_data()
    fig, axes = plt.subplots(2, 4)
    for row, scheme in zip(axes, ["ew", "es"]):
        for a, style in zip(row, reliability.STYLES):
            assert reliability.reliability_diagram(s, y, n_bins=10, scheme=scheme, style=style,
                                               ax=a) is a
    fig.canvas.draw()
    plt.close(fig)
    ax = reliability.reliability_diagram(s, y)                 # ax=None makes a figure
    assert isinstance(ax, Axes)
    plt.close(ax.figure)
    with pytest.raises(ValueError, match="style"):
        reliability.reliability_diagram(s, y, style="pie")


def test_other_plots_render_and_return_axes():
    s, y, c = toy_data()
    ax = maps.fit_on_test_diagram(ToyBins(5), s, y, true_map=c)
    assert isinstance(ax, Axes) and "true CE" in ax.get_title()
    fam = ToyBins(5).fit(s, y)
    ax2 = maps.logit_logit_plot({"toy": fam, "power": lambda p: p ** 0.9, "array": c},
                                   s, true_map=lambda p: p ** 0.8)
    assert isinstance(ax2, Axes)
    axes = shapes.synthetic_shapes_figure(ce_levels=(0.05,))
    assert len(axes) == 5 and all(isinstance(a, Axes) for a in axes)
    df = toy_scores_frame()
    ax3 = study.ranking_figure(df, "r110", "car", 300)
    ax4 = study.summary_by_size(df, "cmee")
    ax5 = study.summary_by_size(df, "spearman", tasks="ovr")
    for a in (ax, ax2, ax3, ax4, ax5, axes[0]):
        assert isinstance(a, Axes)
        a.figure.canvas.draw()
    _, given = plt.subplots()
    assert study.summary_by_size(df, "ce_error", ax=given) is given
    plt.close("all")


def test_save_writes_pdf_and_png_atomically(tmp_path):
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot([0, 1], [0, 1])
    paths = output.save(fig, tmp_path / "sub" / "fig")
    assert [p.name for p in paths] == ["fig.pdf", "fig.png"]
    assert all(p.stat().st_size > 0 for p in paths)
    assert paths[1].read_bytes()[:4] == b"\x89PNG" and paths[0].read_bytes()[:4] == b"%PDF"
    assert sorted(p.name for p in (tmp_path / "sub").iterdir()) == ["fig.pdf", "fig.png"]


def test_write_default_figures_names(tmp_path, monkeypatch):
    saved = []

    def fake_save(fig, stem, dpi=150):       # draw (catches render errors), skip the files
        fig.canvas.draw()
        plt.close(fig)
        saved.append(stem.name)
        return [stem]

    monkeypatch.setattr(output, "save", fake_save)
    s, y, c = toy_data(400)
    output.write_default_figures(toy_scores_frame(), tmp_path, scores=s, labels=y,
                                  true_c=c, evaluators=[ToyBins(3), ToyBins(6)], n_fit=200)
    assert saved == [f"reliability_{st}" for st in reliability.STYLES] + [
        "fit_on_test", "logit_logit", "summary_by_size", "ranking"]
    # npz input (keys holdout_scores / holdout_labels, truth keyed by name)
    saved.clear()
    np.savez(tmp_path / "cal.npz", holdout_scores=s, holdout_labels=y)
    np.savez(tmp_path / "truth.npz", isotonic=c)
    output.write_default_figures(None, tmp_path, calibrated_npz=tmp_path / "cal.npz",
                                  truth_npz=tmp_path / "truth.npz", evaluators=[ToyBins(3)])
    assert "fit_on_test" in saved and "ranking" not in saved


def test_summary_by_size_bars_are_the_tables_cluster_intervals():
    from scipy import stats as sps

    df = toy_scores_frame()
    ax = study.summary_by_size(df, "cmee", evaluators=["ece_es15", "toy"])
    container = ax.containers[0]                   # first evaluator: ece_es15
    segments = container.lines[2][0].get_segments()
    for size, seg in zip([100, 300], segments):
        sub = df[(df["evaluator"] == "ece_es15") & (df["size"] == size)]
        assert len(sub) == 12           # 2 tasks x 3 calibrators x 2 seeds, one row each
        v = sub.groupby("seed")["cmee"].mean().to_numpy() * 1000   # the seeds are the clusters
        lo, hi = sps.t.interval(0.95, v.size - 1, loc=v.mean(), scale=sps.sem(v))
        np.testing.assert_allclose([seg[0][1], seg[1][1]], [lo, hi])
    plt.close("all")


def test_summary_by_size_tells_seventeen_evaluators_apart_with_the_legend_outside(tmp_path):
    from fitontest.report.figures.axes import method_styles

    names = [f"ev{i}" for i in range(17)]
    styles = method_styles(names)
    pairs = {(st["color"], st["marker"]) for st in styles.values()}
    assert len(pairs) == 17 and len({st["color"] for st in styles.values()}) == 17
    df = toy_scores_frame()
    df = pd.concat([df[df["evaluator"] == "toy"].assign(evaluator=n, cmee=df["cmee"] + i * 1e-3)
                    for i, n in enumerate(names)])
    ax = study.summary_by_size(df, "cmee")
    fig = ax.figure
    fig.canvas.draw()
    leg = ax.get_legend().get_window_extent()
    assert leg.x0 >= ax.get_window_extent().x1            # off the data, to the right
    assert [t.get_text() for t in ax.get_legend().get_texts()] == names
    plt.close("all")
    paths = output._summaries(df, tmp_path, "summary_by_size", "isotonic", ("cmee", "ce_error"))
    assert {p.suffix for p in paths} == {".pdf", ".png"}


def test_smooth_reliability_diagram_draws_on_the_given_axes_and_band_holds_the_map():
    import matplotlib.pyplot as plt

    from fitontest import families
    from fitontest.report.figures.smooth import smooth_band, smooth_reliability_diagram

    rng = np.random.default_rng(3)
    s = rng.uniform(0, 1, 3000)
    y = (rng.uniform(0, 1, s.size) < s ** 2).astype(int)     # over-confident: c(s) = s^2
    fig, ax = plt.subplots()
    assert smooth_reliability_diagram(s, y, ax=ax, n_boot=30) is ax
    fam = families.get("smece").fit(s, y)
    t = np.linspace(0.2, 0.8, 7)
    lo, hi = smooth_band(s, y, fam.sigma_, t, n_boot=60, level=0.9)
    assert np.all(lo <= hi)
    # the band is around the smoothed map, which lies below the diagonal here
    assert np.mean((lo <= fam.predict(t) + 0.02) & (fam.predict(t) - 0.02 <= hi)) > 0.8
    assert np.all(hi[2:] < t[2:])
    plt.close(fig)


def test_captions_say_when_the_bands_shape_assumption_was_rejected():
    """Issue 56: on a map that turns down the band claims no coverage, and the
    figures' captions say so; on a rising map they say nothing of the kind."""
    from fitontest.report.figures.maps import fit_on_test_diagram
    from fitontest.report.figures.reliability import reliability_diagram
    from fitontest.report.figures.smooth import smooth_reliability_diagram

    rng = np.random.default_rng(56)
    s = rng.random(3000)
    down = (rng.random(3000) < np.where(s <= 0.7, s, 1.4 - s)).astype(int)
    up = (rng.random(3000) < s).astype(int)
    for y, rejected in ((down, True), (up, False)):
        # y bound as a default: each lambda draws the y of its own pass
        for draw in (lambda ax, y=y: reliability_diagram(s, y, ax=ax, band=0.9),
                     lambda ax, y=y: fit_on_test_diagram("platt", s, y, ax=ax, band=0.9),
                     lambda ax, y=y: smooth_reliability_diagram(s, y, ax=ax, band=0.9)):
            fig, ax = plt.subplots()
            draw(ax)
            title = ax.get_title()
            legend = " ".join(t.get_text() for t in ax.get_legend().get_texts())
            plt.close(fig)
            assert ("non-decreasing map rejected" in title) is rejected, title
            assert ("monotone shape rejected" in legend) is rejected, legend
