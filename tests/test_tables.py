"""Table builders (fitontest.report) on small hand-made tidy frames; expected
numbers computed by hand."""
import itertools
import math

import numpy as np
import pandas as pd
import pytest

from scipy import stats

from fitontest.study.schema import with_network
from fitontest.report import frames, write
from fitontest.report.specs import SPECS, build, spec_named
from fitontest.report.table import flat_index
from fitontest.study.schema import (CALIBRATOR_COLUMNS, SCORE_COLUMNS, SCORE_VALUES,
                              SYNTHETIC_COLUMNS)


def table(name, truth, *, scores=None, calibrators=None, synthetic=None, **kw):
    return build(spec_named(name), {"scores": scores, "calibrators": calibrators,
                                    "synthetic": synthetic}, truth, **kw)


def _row(**keys):
    r = {c: 0.01 for c in SCORE_VALUES}
    r.update(keys)
    return r


# CMEE (x 1e-3) by (size, evaluator); seed 0 gets v - 0.5, seed 1 v + 0.5 (x 1e-3)
CMEE = {(100, "A"): 3.0, (100, "B"): 2.0, (100, "D"): 2.0,
        (200, "A"): 1.0, (200, "B"): 2.0, (200, "D"): 3.0}


def scores_frame(truths=("isotonic", "es100_flat"), extra_eval=None):
    rows = []
    evals = ["A", "B", "D", "kce"] + ([extra_eval] if extra_eval else [])
    for arch, task, cal, ev, size, seed, truth in itertools.product(
            ["r110", "d40"], ["car", "confidence"], ["platt", "isotonic"], evals,
            [100, 200], [0, 1], truths):
        v = CMEE.get((size, ev), 5.0) if ev != "kce" else np.nan
        cm = np.nan if np.isnan(v) else (v + (0.5 if seed else -0.5)) * 1e-3
        rows.append(_row(arch=arch, task=task, calibrator=cal, evaluator=ev, size=size,
                         seed=seed, truth=truth, cmee=cm,
                         cmee_sq=np.nan if np.isnan(v) else cm * cm,
                         hyper=np.nan if ev == "kce" else (10 if seed else 20)))
    return with_network(pd.DataFrame(rows))[SCORE_COLUMNS]


def calibrator_frame():
    # ceac x 1e-3 per (task, calibrator), the two archs at v -/+ 1
    ceac = {"car": {"none": 9, "temps": 4, "platt": 2, "isotonic": 4},
            "confidence": {"none": 8, "temps": 1, "platt": 3, "isotonic": 2}}
    kind = {"none": "none", "temps": "multiclass", "platt": "binary", "isotonic": "binary"}
    rows = []
    for arch, d in (("r110", -1), ("d40", +1)):
        for task, cals in ceac.items():
            for cal, v in cals.items():
                rows.append(dict(arch=arch, task=task, calibrator=cal, truth="isotonic",
                                 kind=kind[cal], ceac=(v + d) * 1e-3, ceac_sq=1e-6,
                                 cmee=(10 - v) * 1e-3, cmee_sq=1e-6, accuracy=0.9))
    return with_network(pd.DataFrame(rows))[CALIBRATOR_COLUMNS]


def test_table3_by_size_values_ranks_and_average_rank():
    t = table("table3_cmee_by_size", "isotonic", scores=scores_frame())
    assert list(t.values.columns) == ["A", "B", "D", "kce"]
    assert list(t.values.index) == [100, 200]
    expected = pd.DataFrame({"A": [3.0, 1.0], "B": [2.0, 2.0], "D": [2.0, 3.0],
                             "kce": [np.nan, np.nan]}, index=[100, 200])
    np.testing.assert_allclose(t.values.to_numpy(), expected.to_numpy(), atol=1e-9)
    # row 100: B and D tie for best -> 1.5 each, A 3; row 200: A 1, B 2, D 3
    np.testing.assert_array_equal(t.ranks.to_numpy(),
                                  [[3, 1.5, 1.5, np.nan], [1, 2, 3, np.nan]])
    avg = t.avg_rank
    assert avg["A"] == 2.0 and avg["B"] == 1.75 and avg["D"] == 2.25 and np.isnan(avg["kce"])
    # 16 units (arch, task, calibrator, seed) per cell in 2 independent clusters (the
    # seeds: the units of one seed share its test images), at v - 0.5 and v + 0.5
    half = stats.t.ppf(0.975, 1) * np.std([-0.5, 0.5], ddof=1) / np.sqrt(2)
    np.testing.assert_allclose((t.hi - t.lo).to_numpy()[:, :3] / 2, half)
    assert (t.n_units[["A", "B", "D"]] == 2).all().all() and (t.n_units["kce"] == 0).all()
    md = t.to_markdown()
    # two decimals: three significant digits at the median magnitude (2.0); B is the
    # first best (bold); two clusters are too few to test: the others are underlined
    # (not distinguishable), though A is worse in every unit
    h = f"{half:.2f}"
    assert (f"| 100 | <u>3.00 ± {h}</u> (3) | **2.00 ± {h}** (1.5) | <u>2.00 ± {h}</u> (1.5) "
            f"| – |") in md
    assert "| *avg. rank* | 2.00 | 1.75 | 2.25 | – |" in md
    tex = t.to_latex()
    for rule in (r"\toprule", r"\midrule", r"\bottomrule"):
        assert rule in tex
    assert (rf"100 & $\underline{{3.00 \pm {h}}}_{{3}}$ & $\mathbf{{2.00 \pm {h}}}_{{1.5}}$ & "
            rf"$\underline{{2.00 \pm {h}}}_{{1.5}}$ & -- \\") in tex
    t.decimals = 1
    h = f"{half:.1f}"
    assert (f"| 200 | **1.0 ± {h}** (1) | <u>2.0 ± {h}</u> (2) | <u>3.0 ± {h}</u> (3) | – |"
            in t.to_markdown())
    assert r"avg. rank & 2.00 & 1.75 & 2.25 & -- \\" in tex


def test_table3_sections_overall_and_std_over_seeds():
    f = scores_frame()
    t = table("table3_cmee", "isotonic", scores=f)
    assert list(t.values.index.get_level_values(0).unique()) == [
        "overall", "by architecture", "by size", "by task"]
    overall = t.values.loc[("overall", "all")]
    np.testing.assert_allclose(overall[["A", "B", "D"]].to_numpy(), [2.0, 2.0, 2.5])
    # seed means differ by 1.0 (x 1e-3 x 1000) -> sample std sqrt(0.5)
    s = table("table3_cmee_std", "isotonic", scores=f).values.loc["by size"]
    assert table("table3_cmee_std", "isotonic", scores=f).ranks is None
    np.testing.assert_allclose(s[["A", "B", "D"]].to_numpy(), math.sqrt(0.5))
    assert s["kce"].isna().all()


def test_table2_calibrators_mean_over_models_and_binary_cmee():
    c = calibrator_frame()
    t = table("table2_ceac", "isotonic", calibrators=c)
    assert list(t.values.columns) == ["none", "temps", "platt", "isotonic"]
    assert list(t.values.index) == ["car", "confidence"]
    np.testing.assert_allclose(t.values.to_numpy(), [[9, 4, 2, 4], [8, 1, 3, 2]])
    np.testing.assert_array_equal(t.ranks.to_numpy(), [[4, 2.5, 1, 2.5], [4, 1, 3, 2]])
    np.testing.assert_allclose(t.avg_rank.to_numpy(), [4, 1.75, 2, 2.25])
    b = table("table2_cmee_binary", "isotonic", calibrators=c)
    assert list(b.values.columns) == ["platt", "isotonic"]
    np.testing.assert_allclose(b.values.to_numpy(), [[8, 6], [7, 8]])
    m = table("table2_ceac_by_model", "isotonic", calibrators=c)
    assert m.values.loc[("r110", "car"), "none"] == pytest.approx(8.0)
    assert table("table2_cmee_binary", "isotonic", calibrators=c[c["kind"] != "binary"]) is None


def test_spearman_hand_cases_ties_constant_and_restriction():
    rows = []

    def group(ev, size, seed, used, true, extra=None):
        for i, (u, t) in enumerate(zip(used, true)):
            rows.append(_row(arch="r", task="car", calibrator=f"c{i}", evaluator=ev, size=size,
                             seed=seed, truth="iso", ce_used=u, true_ce=t))
        if extra is not None:  # a calibrator outside the ranked set
            rows.append(_row(arch="r", task="car", calibrator="zzz", evaluator=ev, size=size,
                             seed=seed, truth="iso", ce_used=extra[0], true_ce=extra[1]))

    group("E1", 100, 0, [1, 2, 3, 4], [1, 3, 2, 4], extra=(100, -100))   # rho 0.8
    group("E1", 100, 1, [4, 3, 2, 1], [1, 2, 3, 4])                       # rho -1
    group("E2", 100, 0, [5, 5, 5, 5], [1, 2, 3, 4])                       # constant: NaN
    group("E2", 100, 1, [1, 1, 2, 3], [1, 2, 3, 4])                       # ties: sqrt(0.9)
    f = with_network(pd.DataFrame(rows))[SCORE_COLUMNS]
    ranked = ["c0", "c1", "c2", "c3"]
    rho = frames.spearman_by_group(f, items=ranked).set_index(["evaluator", "seed"])["spearman"]
    assert rho[("E1", 0)] == pytest.approx(0.8)
    assert rho[("E1", 1)] == pytest.approx(-1.0)
    assert np.isnan(rho[("E2", 0)])
    assert rho[("E2", 1)] == pytest.approx(math.sqrt(0.9))
    t = table("table4_spearman_ovr", "iso", scores=f, ranked_calibrators=ranked)
    np.testing.assert_allclose(t.values.loc[100].to_numpy(), [-0.1, math.sqrt(0.9)])
    np.testing.assert_array_equal(t.ranks.loc[100].to_numpy(), [2, 1])   # higher is better
    assert "1 of 4 groups" in t.full_caption()
    # including "zzz" changes E1 seed 0 (it is then ranked last by estimate, first by truth)
    rho_all = frames.spearman_by_group(f).set_index(["evaluator", "seed"])["spearman"]
    assert rho_all[("E1", 0)] < 0.8


def test_ranked_calibrators_default_and_fallback():
    chosen, note = frames.resolve_ranked_calibrators(["none", "platt", "isotonic", "temps"])
    assert chosen == ["platt", "isotonic"] and "beta" in note
    chosen, note = frames.resolve_ranked_calibrators(["none", "platt", "temps"])
    assert chosen == ["none", "platt", "temps"] and "every calibrator" in note


def test_table4_ce_error_splits_tasks():
    f = scores_frame()
    f.loc[f["task"] == "confidence", "ce_error"] = 0.004
    f.loc[f["task"] == "car", "ce_error"] = 0.002
    ovr = table("table4_ce_error_ovr", "isotonic", scores=f)
    conf = table("table4_ce_error_confidence", "isotonic", scores=f)
    np.testing.assert_allclose(ovr.values.to_numpy(), 2.0)
    np.testing.assert_allclose(conf.values.to_numpy(), 4.0)
    assert ovr.name == "table4_ce_error_ovr" and conf.name == "table4_ce_error_confidence"


def test_hyper_table_mean_and_mode():
    f = scores_frame()
    f.loc[(f["seed"] == 0) & (f["arch"] == "d40") & (f["evaluator"] != "kce"), "hyper"] = 10   # mode 10 everywhere
    mean = table("hyper_mean_by_size", "isotonic", scores=f)
    mode = table("hyper_mode_by_size", "isotonic", scores=f)
    assert mean.ranks is None
    np.testing.assert_allclose(mean.values[["A", "B", "D"]].to_numpy(), 12.5)
    np.testing.assert_allclose(mode.values[["A", "B", "D"]].to_numpy(), 10)
    assert mode.values["kce"].isna().all() and "–" in mode.to_markdown()


def test_synthetic_tables_spearman_across_ce_levels():
    rows = []
    for shape, ev, seed, (lvl, used) in itertools.product(
            ["square", "sqrt"], ["E1", "E2"], [0, 1], enumerate([1.0, 3.0, 2.0])):
        u = used if ev == "E1" else [1.0, 2.0, 3.0][lvl]
        rows.append(dict({c: 0.01 for c in SCORE_VALUES}, shape=shape, ce_level=lvl * 0.05,
                         evaluator=ev, size=1000, seed=seed, truth="exact",
                         ce_used=u, true_ce=lvl * 0.05, cmee=0.001 if ev == "E1" else 0.002))
    syn = pd.DataFrame(rows)[SYNTHETIC_COLUMNS]
    t = table("synthetic_spearman_by_shape", "exact", synthetic=syn)
    np.testing.assert_allclose(t.values.to_numpy(), [[0.5, 1.0], [0.5, 1.0]])
    np.testing.assert_array_equal(t.avg_rank.to_numpy(), [2, 1])
    c = table("synthetic_cmee", "exact", synthetic=syn)
    assert list(c.values.index) == [("square", "1000"), ("sqrt", "1000")]
    np.testing.assert_allclose(c.values.to_numpy(), [[1.0, 2.0], [1.0, 2.0]])


def test_write_all_naming_every_evaluator_and_robustness(tmp_path):
    f = scores_frame(extra_eval="my_new_eval")
    paths = write.write_all(f, calibrator_frame(), tmp_path, main_truth="isotonic")
    names = {p.name for p in paths}
    assert paths[-1].name == "index.md"
    for stem in ("table3_cmee_by_size", "table4_spearman_ovr", "table2_ceac"):
        assert f"{stem}__isotonic.md" in names and f"{stem}.md" in names
        assert f"{stem}.tex" in names and f"{stem}.csv" in names
    assert "table3_cmee_by_size__es100_flat.md" in names
    assert "table2_ceac__es100_flat.md" not in names          # calibrators only under isotonic
    assert "table3_cmee_std.md" in names and "table3_cmee_std.ranks.csv" not in names
    for p in tmp_path.glob("table[34]*.md"):
        text = p.read_text()
        for ev in ("A", "B", "D", "kce", "my_new_eval"):
            assert f" {ev} |" in text, (p.name, ev)
    tex = (tmp_path / "table3_cmee.tex").read_text()
    assert r"\toprule" in tex and r"\bottomrule" in tex and r"my\_new\_eval" in tex
    assert "$" in tex and "_{" in tex
    ranks = pd.read_csv(tmp_path / "table3_cmee_by_size.ranks.csv")
    assert ranks["group"].iloc[-1] == "avg. rank" and ranks["A"].iloc[-1] == 2.0
    assert not list(tmp_path.glob(".*"))                        # no temporary files left
    # one size, one seed, no binary calibrators, no confidence task, NaN column
    g = f[(f["size"] == 100) & (f["seed"] == 0) & (f["task"] == "car")].copy()
    g["ce_used"] = np.nan
    c = calibrator_frame()
    c = c[c["kind"] != "binary"]
    out = tmp_path / "small"
    paths = write.write_all(g, c, out, synthetic=pd.DataFrame(columns=SYNTHETIC_COLUMNS))
    names = {p.name for p in paths}
    assert "table2_cmee_binary.md" not in names and "table4_ce_error_confidence.md" not in names
    assert "table3_cmee_std.md" in names
    std = pd.read_csv(out / "table3_cmee_std.csv")
    assert std[["A", "B", "D"]].isna().all().all()
    assert "–" in (out / "table4_spearman_ovr.md").read_text()


def test_paper_ranked_calibrators_are_the_config_default():
    """PAPER_RANKED_CALIBRATORS is the one source; the schema default and the
    shipped configs carry it as data."""
    import yaml

    from conftest import REPO, load_config

    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    default = schema["properties"]["evaluation"]["properties"]["ranked_calibrators"]["default"]
    assert tuple(default) == frames.PAPER_RANKED_CALIBRATORS
    for name in ("config.yaml", "paper.yaml"):
        got = load_config(name)["evaluation"]["ranked_calibrators"]
        assert tuple(got) == frames.PAPER_RANKED_CALIBRATORS, name


def _html_rows(text):
    """(tag, text, bold, underlined) of every th/td cell, row by row, by the stdlib parser."""
    from html.parser import HTMLParser

    class P(HTMLParser):
        def __init__(self):
            super().__init__()
            self.rows, self.cell, self.open = [], None, []

        def handle_starttag(self, tag, attrs):
            self.open.append(tag)
            if tag == "tr":
                self.rows.append([])
            elif tag in ("td", "th"):
                self.cell = [tag, "", False, False]

        def handle_endtag(self, tag):
            self.open.pop()
            if tag in ("td", "th"):
                self.rows[-1].append(tuple(self.cell))
                self.cell = None

        def handle_data(self, data):
            if self.cell is not None:
                self.cell[1] += data
                self.cell[2] |= "strong" in self.open
                self.cell[3] |= "u" in self.open

    p = P()
    p.feed(text)
    return p.rows


def test_main_tables_as_html_match_the_markdown(tmp_path):
    write.write_all(scores_frame(), calibrator_frame(), tmp_path, main_truth="isotonic")
    assert (tmp_path / "table2_ceac.html").exists()
    assert not list(tmp_path.glob("*__*.html"))              # only the main truth's tables
    text = (tmp_path / "table3_cmee.html").read_text()
    assert "<h2>Table 3 (table3_cmee)</h2>" in text
    assert "CMEE of the evaluators on the hold-out" in text
    rows = _html_rows(text)
    md = [line for line in (tmp_path / "table3_cmee.md").read_text().splitlines()
          if line.startswith("| ") and not line.startswith("| **")]   # no section rows
    html_rows = [r for r in rows if len(r) > 1]
    assert len(html_rows) == len(md)
    for r, line in zip(html_rows, md):
        cells = [c.strip() for c in line.strip("|").split("|")]
        plain = [c.replace("**", "").replace("<u>", "").replace("</u>", "").strip("*")
                 for c in cells]
        assert [c[1] for c in r] == plain
        assert [c[2] for c in r][1:] == [c.startswith("**") for c in cells][1:]
        assert [c[3] for c in r][1:] == [c.startswith("<u>") for c in cells][1:]
    # sections: one full-width row per section of Table 3
    sections = [r[0][1] for r in rows if len(r) == 1]
    assert sections == ["overall", "by architecture", "by size", "by task"]
    assert html_rows[-1][0][1] == "avg. rank"


def test_report_groups_of_table_names():
    from fitontest.report.html_table import report_group, title

    assert [report_group(n) for n in ("table2_ceac", "table3_cmee_sq_by_size",
                                      "table4_spearman_confidence", "synthetic_cmee",
                                      "synthetic_coverage", "coverage_ovr",
                                      "hyper_mean_by_size")] == [
        "Table 2", "Table 3", "Table 4", "Synthetic study", "Interval coverage",
        "Interval coverage", "Hyper-parameters"]
    assert title("table4_ce_error_ovr") == "Table 4 (table4_ce_error_ovr)"
    assert title("synthetic_cmee") == "synthetic_cmee"


# ---------------------------------------------------------------------------
# the speed changes leave every table as it was (compared with the old code paths)


def _old_intervals_long(t):
    parts = {"mean": t.values, "ci_lo": t.lo, "ci_hi": t.hi, "n_units": t.n_units,
             "best": t.best, "not_worse": t.not_worse}
    cols = {}
    for k, v in parts.items():
        w = v.copy()
        w.index = flat_index(w.index)
        cols[k] = w.stack(future_stack=True)
    out = pd.DataFrame(cols)
    out.index.names = ["group", "column"]
    return out.reset_index()


def test_speed_paths_equal_the_old_ones():
    """Cached rows and Spearman correlations, the vectorised long CSV and the
    coverage tables give what the per-table paths gave."""
    f = scores_frame()
    rng = np.random.default_rng(0)
    f["ce_used"], f["true_ce"] = rng.random(len(f)), rng.random(len(f))
    f["ce_lo"], f["ce_hi"] = f["true_ce"] - rng.random(len(f)), f["true_ce"] + 0.3
    f["ci_level"], f["true_ce_pop"] = 0.9, f["true_ce"]
    frames = {"scores": f, "calibrators": calibrator_frame()}
    cache = {}
    for spec in SPECS:
        if spec.source == "synthetic":
            continue
        a = build(spec, frames, "isotonic", cache=cache)
        b = build(spec, frames, "isotonic")
        if a is None:
            assert b is None
            continue
        assert a.to_markdown() == b.to_markdown() and a.to_latex() == b.to_latex(), spec.name
        if a.lo is not None:
            pd.testing.assert_frame_equal(a.intervals_long(), _old_intervals_long(a),
                                          check_dtype=False)
    assert any(k[0] == "spearman" for k in cache)
