"""benchmarks/truth/choose_truth.py, the chooser's truth benchmark: its units are
independent, and its verdicts come from the paired tests it states."""
import numpy as np
import pytest
from conftest import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("choose_truth")


def test_every_synthetic_setting_has_its_own_label_draw(bench):
    units = list(bench.synthetic_subsets([200], range(2)))
    assert len(units) == 2 * len(bench.SHAPES) * len(bench.CES)
    labels = {lab for lab, *_ in units}
    assert len(labels) == len(units)
    # synthetic.sample draws (c, y) from the seed alone: distinct seeds, distinct draws
    draws = {tuple(y[:50]) for _, _, y, _ in units}
    assert len(draws) == len(units)


def _rows(errors: dict[str, np.ndarray], chooser: np.ndarray):
    return [{"ce": {k: float(v[i]) for k, v in errors.items()},
             "pick_ce_err": float(chooser[i]), "pick_raw_err": float(chooser[i]),
             "ensemble_err": float(chooser[i]), "fallback": i % 3 == 0, "covered": i % 2 == 0,
             "hull": i % 3 != 0} for i in range(chooser.size)]


def test_summary_marks_only_the_clearly_worse_evaluator(bench):
    rng = np.random.default_rng(0)
    S = 40
    chooser = 0.01 + 0.001 * rng.random(S)
    errors = {"ece_es_cv": chooser + 0.005 + 0.0005 * rng.standard_normal(S),  # clearly worse
              "near": chooser + 0.002 * rng.standard_normal(S)}                  # a tie
    line, per, verdict = bench.summary("src", _rows(errors, chooser), list(errors), "ce")
    assert "better than 1 of 2 fixed evaluators (ece_es_cv)" in verdict
    assert "significantly worse than 0 (-)" in verdict
    assert per.startswith("- src, ce (x1e-3): near")


def test_the_other_half_pick_is_scored_out_of_sample(bench):
    # "a" is best on the even subsets, "b" on the odd ones: each half's pick is the
    # other half's worse evaluator, so the cross-fitted mean is 2e-3, not 1e-3
    S = 20
    even = np.arange(S) % 2 == 0
    errors = {"ece_es_cv": np.where(even, 0.001, 0.0021),
              "b": np.where(even, 0.002, 0.001)}
    line, _, _ = bench.summary("src", _rows(errors, np.full(S, 0.0015)), list(errors), "ce")
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[11] == "2.05"     # picks: b on the even half (2.0), ece_es_cv on the odd (2.1)
    assert cells[4] == "7"         # fallbacks: every third subset
    assert cells[6].startswith("50 %")
