"""benchmarks/coverage_checks/interval_auto.py, the reader that derives ``intervals.AUTO`` and
``MEASURED_MIN_COVERAGE`` from the coverage benchmark's output: a top-up run
(``--first-sample`` > 0) is pooled with the run it continues, a fresh run
replaces it."""
from pathlib import Path

import pytest
from conftest import load_benchmark


@pytest.fixture(scope="module")
def reader():
    return load_benchmark("interval_auto")


def _run(first: int, cov: float, k: int, width: float) -> str:
    se = (cov * (1 - cov) / k) ** 0.5
    cell = f"{100 * cov:.1f} ({100 * se:.1f}) / {width:.4f}"
    return (f"command: python benchmarks/coverage_checks/interval_coverage.py --samples {k} --n 1000 "
            f"--level 0.9 --first-sample {first}\n\n### ece_es15, p = 1\n\n"
            "| method | n | CE 0 | CE 0.1 | min cov | s/interval |\n|---|---|---|---|---|---|\n"
            f"| inverted | 1000 | {cell} | {cell} | {100 * cov:.1f} | 0.01 |\n")


def _write(tmp_path, runs) -> Path:
    path = tmp_path / "coverage.md"
    path.write_text("# header\n" + "".join(f"\n## run: r{i}\n\n{r}" for i, r in enumerate(runs)))
    return path


def test_a_top_up_run_is_pooled_with_the_run_it_continues(reader, tmp_path):
    # 240 samples at 80 % and 160 more at 95 %: 400 samples at 86 %
    path = _write(tmp_path, [_run(0, 0.80, 240, 0.02), _run(400, 0.95, 160, 0.03)])
    cells = reader.parse([path])[("ece_es15", 1, "inverted")][1000]
    assert len(cells) == 2
    for cov, se, width, k in cells:
        assert k == pytest.approx(400, rel=0.03)
        assert cov == pytest.approx(0.86, abs=0.002)
        assert width == pytest.approx(0.024, abs=3e-4)
        assert se == pytest.approx((0.86 * 0.14 / 400) ** 0.5, rel=0.03)


def test_a_fresh_run_replaces_an_earlier_one(reader, tmp_path):
    path = _write(tmp_path, [_run(0, 0.80, 240, 0.02), _run(0, 0.95, 160, 0.03)])
    cov, _, width, k = reader.parse([path])[("ece_es15", 1, "inverted")][1000][0]
    assert (cov, width) == (pytest.approx(0.95), pytest.approx(0.03))
    assert k == pytest.approx(160, rel=0.05)


def test_a_top_up_with_other_ce_levels_is_refused(reader, tmp_path):
    short = _run(400, 0.9, 100, 0.02).replace(" | CE 0.1", "").replace(
        " | 90.0 (3.0) / 0.0200 | 90.0", " | 90.0")
    with pytest.raises(ValueError, match="CE levels"):
        reader.parse([_write(tmp_path, [_run(0, 0.8, 240, 0.02), short])])


def test_labels_are_read_at_each_runs_own_default_alpha_scale(reader, tmp_path):
    """A run made when the default was k = 1 (it scored k = 0.7 beside it), one
    made at k = 0.7, one that states its default: all read with k = 0.6 as
    "inverted"; a row listed twice in one run (its default scored again as
    "inverted k=0.6") counts once."""
    def run(rows, header=""):
        return (f"command: x --level 0.9\n{header}\n### ece_es15, p = 1\n\n"
                "| method | n | CE 0 | min cov | s/interval |\n|---|---|---|---|---|\n"
                + "".join(f"| {label} | {n} | {cell} | 1 | 0.01 |\n" for label, n, cell in rows))
    cell = "{:.1f} (2.0) / 0.0100"
    old = run([("inverted", 1000, cell.format(80)), ("inverted k=0.7", 1000, cell.format(85)),
               ("inverted k=0.6", 1000, cell.format(90))])
    mid = run([("inverted", 3000, cell.format(86)), ("inverted k=0.6", 3000, cell.format(91))])
    new = run([("inverted", 400, cell.format(92)), ("inverted k=0.6", 400, cell.format(92)),
               ("inverted k=1", 400, cell.format(82))], "default alpha scale 0.6; wall 1 s")
    rows = reader.parse([_write(tmp_path, [old, mid, new])], default_k=0.6)
    got = {m: {n: round(c[0][0], 3) for n, c in by_n.items()}
           for (_, _, m), by_n in rows.items()}
    assert got == {"inverted": {1000: 0.9, 3000: 0.91, 400: 0.92},
                   "inverted k=1": {1000: 0.8, 400: 0.82},
                   "inverted k=0.7": {1000: 0.85, 3000: 0.86}}
