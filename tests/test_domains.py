"""Measured domains (fitontest.inference.domains): a valid flag only where its
coverage or size was measured, read from the package data the benchmarks
write, each data file tied to the measured file it summarises."""
from __future__ import annotations

import json
from importlib import resources

import pytest

from fitontest.inference import domains
from conftest import REPO

DATA = {"measured_file": "benchmarks/measured/x.md", "quantity": "coverage",
        "methods": {"m": {"domain": {"level": [0.9, 0.95], "n": {"min": 100, "max": 1000},
                                     "grid": ["trimmed"]},
                          "cells": {"0.9": [0.80, 400], "0.95": [0.945, 400]}}}}


def test_outside_the_domain_is_none_with_the_reason():
    m = domains.Measured(DATA)
    for kw, why in (({"level": 0.99, "n": 500}, "level 0.99"),
                    ({"level": 0.9, "n": 30}, "n = 30"),
                    ({"level": 0.9, "n": 5000}, "n = 5000"),
                    ({"level": 0.95, "n": 500, "grid": "full"}, "grid = 'full'")):
        v = m.validity("m", **kw)
        assert v.valid is None and why in v.why and "not measured here" in v.why
    assert m.validity("other", level=0.9, n=500).valid is None


def test_inside_the_domain_the_worst_cell_decides():
    m = domains.Measured(DATA)
    # 80 % of 400 at 0.9: 2 SEs (3 points) still far below 0.87
    assert m.validity("m", level=0.9, n=500).valid is False
    # 94.5 % at 0.95 holds
    assert m.validity("m", level=0.95, n=500, grid="trimmed").valid is True
    # the tolerance is SHORTFALL after 2 Monte Carlo SEs: 0.87 - 2 SE is the edge
    se = (0.09 / 400) ** 0.5
    edge = 0.9 - domains.SHORTFALL - 2 * se
    near = json.loads(json.dumps(DATA))
    near["methods"]["m"]["cells"]["0.9"] = [edge + 1e-6, 400]
    assert domains.Measured(near).validity("m", level=0.9, n=500).valid is True
    near["methods"]["m"]["cells"]["0.9"] = [edge - 1e-3, 400]
    assert domains.Measured(near).validity("m", level=0.9, n=500).valid is False


def test_size_is_the_other_way_round():
    size = {"measured_file": "f", "quantity": "size",
            "methods": {"t": {"domain": {"level": [0.05]}, "cells": {"0.05": [0.12, 400]}}}}
    assert domains.Measured(size).validity("t", level=0.05, n=10).valid is False
    size["methods"]["t"]["cells"]["0.05"] = [0.055, 400]
    assert domains.Measured(size).validity("t", level=0.05, n=10).valid is True


def _data_files():
    root = resources.files("fitontest.inference").joinpath("measured")
    return sorted(p.name for p in root.iterdir() if p.name.endswith(".json"))


@pytest.mark.parametrize("name", _data_files())
def test_every_data_file_names_a_committed_measured_file(name):
    m = domains.measured(name.removesuffix(".json"))
    assert (REPO / m.measured_file).is_file(), m.measured_file
    assert m.written_by.startswith("python benchmarks/")
    for key, entry in m.methods.items():
        assert entry["cells"], key
        assert set(entry["cells"]) <= {f"{v:g}" for v in entry["domain"]["level"]}, key


# --- each data file is what its benchmark derives from the measured file --------------

def _rederived(tmp_path, name, argv):
    import json as _json
    import sys

    from conftest import load_benchmark

    out = tmp_path / f"{name}.json"
    mod = load_benchmark(argv[0])
    old = sys.argv
    try:
        sys.argv = [argv[0], *[a.replace("OUT", str(out)) for a in argv[1:]]]
        mod.main()
    finally:
        sys.argv = old
    shipped = _json.loads(resources.files("fitontest.inference").joinpath(
        "measured", f"{name}.json").read_text())
    return _json.loads(out.read_text()), shipped


def test_the_intervals_domain_is_derived_from_the_coverage_files(tmp_path, capsys):
    got, shipped = _rederived(tmp_path, "intervals", [
        "interval_auto", str(REPO / "benchmarks/measured/interval_coverage.md"),
        str(REPO / "benchmarks/measured/interval_coverage_study.md"), "--write-domain", "OUT"])
    capsys.readouterr()
    assert got["methods"] == shipped["methods"]


def test_the_calibration_tests_domain_is_derived_from_its_file(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    got, shipped = _rederived(tmp_path, "calibration_tests", [
        "calibration_test_size", "--write-domain", "OUT"])
    assert got["methods"] == shipped["methods"]
    # a cell of the file: kuiper's worst size, 6.5 % of 400 at U(0,1), n = 10000
    assert "6.5 (1.2; 400)" in (REPO / shipped["measured_file"]).read_text()
    assert shipped["methods"]["kuiper"]["cells"]["0.05"] == [0.065, 400]


def test_a_test_of_calibration_says_where_its_size_was_measured():
    import numpy as np

    from fitontest.inference.calibration_tests import calibration_test

    rng = np.random.default_rng(0)
    s = rng.random(3000)
    y = rng.random(3000) < s
    inside = calibration_test(s, y, "kuiper")
    assert inside.valid is True and "calibration_tests.md" in inside.validity_note
    small = calibration_test(s[:300], y[:300], "kuiper")
    assert small.valid is None and "n = 300" in small.validity_note
    one_sided = calibration_test(s, y, "ks", alternative="greater")
    assert one_sided.valid is None and "alternative" in one_sided.validity_note
    # the Monte Carlo tests are exact for any n
    assert calibration_test(s[:300], y[:300], "tcal", n_resamples=19).valid is True


def test_the_chooser_domain_is_its_measured_files_worst_hull_cell():
    m = domains.measured("chooser")
    text = (REPO / m.measured_file).read_text()
    cov, k = m.methods["ensemble/1"]["cells"]["0.9"]
    assert f"the hull (no fallback) {100 * cov:.1f} % of {k}" in text
    cells = [float(x) for x in __import__("re").findall(
        r"the hull \(no fallback\) ([\d.]+) % of", text)]
    assert min(cells) == pytest.approx(100 * cov, abs=0.05)     # the worst cell
    assert m.methods["ensemble/1"]["domain"]["n_worlds"] == [40]  # the users' default


def test_the_chooser_domain_is_its_measured_points_not_a_range():
    # issue 56: the chooser's valid flag holds at the sizes measured, not between them
    import re

    m = domains.measured("chooser")
    dom = m.domain("ensemble/1")
    points = dom["n"]
    assert isinstance(points, list) and points == sorted(points) and len(points) >= 2
    text = (REPO / m.measured_file).read_text()
    sources = set(re.findall(r"^\| (\w+) n=\d+ \| ce \|", text, re.M))
    assert len(sources) >= 5
    for n in points:                      # every source was measured at every point
        for src in sources:
            assert f"| {src} n={n} | ce |" in text, (src, n)
    for n in points:
        assert m.validity("ensemble/1", level=0.9, n=n, n_worlds=40).valid is not None
    between = (points[0] + points[1]) // 2
    v = m.validity("ensemble/1", level=0.9, n=between, n_worlds=40)
    assert v.valid is None and f"n = {between}" in v.why
    assert m.validity("ensemble/1", level=0.9, n=points[-1] + 1, n_worlds=40).valid is None


def test_no_absolute_path_in_shipped_data():
    import re

    root = resources.files("fitontest.inference").joinpath("measured")
    for name in _data_files():
        text = root.joinpath(name).read_text()
        assert not re.search(r"(?<![\w.])(/work/|/home/|/tmp/|/Users/|/root/)", text), name
