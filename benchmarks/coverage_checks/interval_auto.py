"""The ``auto`` choice and the measured coverage table of fitontest.inference.intervals,
derived from the coverage benchmark's output (docs/methods/11-intervals.md §11.3).

Reads one or more outputs of benchmarks/coverage_checks/interval_coverage.py (markdown; later
runs win for a repeated (family, p, method, n) row, except that a top-up run,
``--first-sample`` > 0, adds its samples to the row it continues: coverage and
width averaged with the samples as weights, each cell's count read from its
coverage and Monte Carlo SE) and prints, per (family,
p), each method's smallest coverage over the (CE, n) cells, the samples of that
cell, the cells within 90 +- 3 % and the mean width, then the entries of
``AUTO`` and ``MEASURED_MIN_COVERAGE`` as Python.

Also reads outputs of benchmarks/coverage_checks/interval_coverage_study.py (the intervals on
a finished run's own worlds): each (map, task kind, n) is one more cell.

Labels: every run's plain "inverted" rows are made explicit ("inverted k=X",
X its header's "default alpha scale", or for runs before the header said it:
1 where the run also scored k = 0.7, else 0.7), then the rows at the library's
``INVERTED_ALPHA_SCALE`` (or ``--default-k``) are called "inverted".

Rule (the issue's target: >= 87 % in every cell at level 0.9): a cell is
*short* when its coverage is more than one Monte Carlo SE below 87 %;
``auto`` is the narrowest candidate with no short cell, else the candidate
with the largest smallest coverage, among the candidates scored on every
cell any candidate was scored on; ``sun`` at p = 1 only where its p = 2
interval (from which the p = 1 route is derived) has no short cell. (The
library's ``valid`` flag is looser: it warns only where a cell is
significantly short, by 2 SEs.) Candidates: ``inverted`` and ``sun`` (the
two built to be valid at CE = 0).

    python benchmarks/coverage_checks/interval_auto.py benchmarks/measured/interval_coverage.md
        benchmarks/measured/interval_coverage_study.md [--default-k 0.6] [--markdown]
        [--write-domain src/fitontest/inference/measured/intervals.json]

``--write-domain``: the measured domain the library's ``valid`` flag reads
(fitontest.inference.domains): per (family, method, p) the level (0.9), the range
of n of its cells, the replicates (``n_boot`` >= 100, the benchmark's; ``sun``
draws none) and the worst cell with its samples.
"""
from __future__ import annotations

import argparse
import re

import numpy as np

CANDIDATES = ("inverted", "sun")
FLOOR = 0.87
_SECTION = re.compile(r"^### (\S+), p = (\d)")
_CELL = re.compile(r"([\d.]+) \(([\d.]+)\) / ([\d.]+)")


def _count(cov: float, se: float) -> float:
    """Samples behind a printed cell (nan where the SE says nothing: 0 or 100 %)."""
    return cov * (1 - cov) / se ** 2 if se > 0 else np.nan


def _merge(old: list, new: list) -> list:
    """Cells of a row and of its top-up, as one row over both runs' samples."""
    if len(old) != len(new):
        raise ValueError("a top-up run must have the CE levels of the run it continues")
    out = []
    for a, b in zip(old, new):
        w = np.array([a[3], b[3]])
        cov = float(np.dot(w, [a[0], b[0]]) / w.sum())
        out.append((cov, float(np.sqrt(cov * (1 - cov) / w.sum())),
                    float(np.dot(w, [a[2], b[2]]) / w.sum()), float(w.sum())))
    return out


def run_default_k(text: str) -> float:
    """The alpha scale that a run's plain "inverted" rows were read at: its
    header's "default alpha scale", else (runs made before the header said it)
    1 where the run also scored k = 0.7 (runs from before 0.7 became the
    default), 0.7 otherwise."""
    got = re.search(r"default alpha scale ([\d.]+)", text)
    if got:
        return float(got.group(1))
    return 1.0 if "| inverted k=0.7 |" in text else 0.7


def _label(label: str, run_k: float, default_k: float) -> str:
    """Labels made explicit ("inverted k=X"), then today's default called "inverted"."""
    if label == "inverted":
        label = f"inverted k={run_k:g}"
    return "inverted" if label == f"inverted k={default_k:g}" else label


_STUDY_CELL = re.compile(r"([\d.]+) \(([\d.]+), (\d+)\)")


def _study_rows(text: str, run_k: float, default_k: float, rows: dict) -> None:
    """Cells of benchmarks/coverage_checks/interval_coverage_study.py: one per (map, task kind,
    n), keyed by n as "MAP n"."""
    mapping = None
    for line in text.splitlines():
        m = re.match(r"^### map (\S+), by (.+)$", line)
        if m:
            mapping = m.group(1) if m.group(2) == "task kind" else None
            continue
        parts = [c.strip() for c in line.strip().strip("|").split("|")]
        if mapping is None or len(parts) < 6 or not parts[3].isdigit():
            continue
        width = float(parts[-1])
        cells = [(float(c.group(1)) / 100, float(c.group(2)) / 100, width, float(c.group(3)))
                 for c in map(_STUDY_CELL.match, parts[5:-1]) if c]
        key = (parts[0], int(parts[1]), _label(parts[2], run_k, default_k))
        rows.setdefault(key, {})[f"{mapping} {parts[3]}"] = cells


def parse(paths, default_k: float = 0.7, level: float = 0.9) -> dict:
    """{(family, p, method): {n: [(cov, se, width, samples), ...]}} of every table row;
    "inverted" is the belt at alpha scale ``default_k``, others "inverted k=X"."""
    rows: dict = {}
    # a file may hold several runs ("## run: ..." sections, as the measured file
    # does): each run is read with its own labels
    runs = [run for path in paths
            for run in open(path, encoding="utf-8").read().split("\n## run: ")]
    for text in runs:
        got = re.search(r"--level ([\d.]+)", text)
        if got and float(got.group(1)) != level:
            continue        # a run at another level (the 0.95 check) is not this table's
        run_k = run_default_k(text)
        if "interval_coverage_study.py" in text:
            _study_rows(text, run_k, default_k, rows)
            continue
        key = None
        got = re.search(r"--first-sample (\d+)", text)
        top_up = bool(got and int(got.group(1)) > 0)
        seen = set()        # a run that scored its default k again lists the same rows twice
        for line in text.splitlines():
            m = _SECTION.match(line)
            if m:
                key = (m.group(1), int(m.group(2)))
                continue
            parts = [c.strip() for c in line.strip().strip("|").split("|")]
            if key is None or len(parts) < 4 or not parts[1].isdigit():
                continue
            cells = [tuple(float(v) / (100.0 if i < 2 else 1.0) for i, v in enumerate(c.groups()))
                     for c in map(_CELL.match, parts[2:-2]) if c]
            k = np.array([_count(c[0], c[1]) for c in cells])
            k = np.where(np.isnan(k), np.nanmedian(k) if np.isfinite(k).any() else 1.0, k)
            cells = [(*c, float(kc)) for c, kc in zip(cells, k)]
            label, n = _label(parts[0], run_k, default_k), int(parts[1])
            if (key, label, n) in seen:
                continue
            seen.add((key, label, n))
            by_n = rows.setdefault((*key, label), {})
            by_n[n] = _merge(by_n[n], cells) if top_up and n in by_n else cells
    return rows


def _samples(cells) -> str:
    """Samples per cell, from the printed coverage and Monte Carlo SE (cells at
    0 or 100 % say nothing)."""
    return str(int(round(np.median([c[3] for c in cells])))) if cells else "?"


def summary(cells_by_n: dict) -> dict:
    cells = [c for cs in cells_by_n.values() for c in cs]
    cov = np.array([c[0] for c in cells])
    se = np.array([c[1] for c in cells])
    # the samples behind the smallest cell: what the library's valid flag tests
    k = int(round(cells[int(np.argmin(cov))][3]))
    return {"min": float(cov.min()), "k": k, "cells": len(cells),
            "short": int(np.sum(cov + se < FLOOR)),
            "near": int(np.sum(np.abs(cov - 0.9) <= 0.03)),
            "width": float(np.mean([c[2] for c in cells])), "n": sorted(cells_by_n, key=str)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--default-k", type=float, default=None,
                    help="the alpha scale read as 'inverted' (default: the library's "
                         "INVERTED_ALPHA_SCALE)")
    ap.add_argument("--level", type=float, default=0.9, help="read only the runs at this level")
    ap.add_argument("--markdown", action="store_true", help="also a summary table (docs)")
    ap.add_argument("--write-domain", default="", metavar="JSON",
                    help="write the measured domain (fitontest/inference/measured/intervals.json)")
    args = ap.parse_args()
    if args.default_k is None:
        from fitontest.inference.intervals import INVERTED_ALPHA_SCALE

        args.default_k = INVERTED_ALPHA_SCALE
    rows = parse(args.paths, args.default_k, args.level)
    auto, measured = {}, {}
    for fam, p in sorted({(f, q) for f, q, _ in rows}):
        print(f"\n{fam}, p = {p}")
        best = None
        # a candidate competes only on the worlds of every other candidate (sun is
        # not scored on the study's own worlds, so where inverted is, sun cannot win)
        keys = {n for (f, q, m), by_n in rows.items()
                if (f, q) == (fam, p) and m in CANDIDATES for n in by_n}
        for (f, q, m), by_n in sorted(rows.items()):
            if (f, q) != (fam, p):
                continue
            s = summary(by_n)
            measured[(f, m, q)] = (s["min"], s["k"])
            print(f"  {m:16s} min {100 * s['min']:5.1f}  short {s['short']}/{s['cells']}  "
                  f"in 87-93 {s['near']}/{s['cells']}  width {s['width']:.4f}  "
                  f"k {s['k']}  n {s['n']}")
            # sun's p = 1 route is derived from its p = 2 interval: valid only where that is
            sun_p2_short = ("sun" == m and p == 1 and (fam, 2, "sun") in rows
                            and summary(rows[(fam, 2, "sun")])["short"] > 0)
            if m in CANDIDATES and not sun_p2_short and keys <= set(by_n):
                rank = (s["short"] == 0, -s["width"] if s["short"] == 0 else s["min"])
                if best is None or rank > best[0]:
                    best = (rank, m)
        if best:
            auto[(fam, p)] = best[1]
            print(f"  -> auto: {best[1]}")
    if args.markdown:
        # synthetic worlds (int n) and the study's own worlds ("MAP n") apart
        def part(by_n, study):
            return {n: c for n, c in by_n.items() if isinstance(n, str) == study}

        def minw(by_n):
            return "–" if not by_n else "{:.1f} / {:.4f}".format(100 * summary(by_n)["min"],
                                                                 summary(by_n)["width"])
        methods = [("inverted", False), ("inverted", True), ("inverted k=1", False),
                   ("sun", False)]
        print("\n| family | p | `auto` | inverted, synthetic: min % / width | inverted, study's "
              "worlds: min % / width | inverted k=1, synthetic | sun, synthetic | `auto`, "
              "synthetic: cells in 87–93 % | synthetic samples per cell (n) |")
        print("|---" * 9 + "|")
        for (fam, p), m_auto in sorted(auto.items()):
            cells = [minw(part(rows.get((fam, p, m), {}), study)) for m, study in methods]
            synth = part(rows[(fam, p, m_auto)], False)
            near = (f"{summary(synth)['near']} of {summary(synth)['cells']}" if synth else "–")
            ks = ", ".join(f"{_samples(cs)} ({n})" for n, cs in sorted(synth.items()))
            print(f"| {fam} | {p} | {m_auto} | " + " | ".join(cells) + f" | {near} | {ks} |")
    if args.write_domain:
        write_domain(args.write_domain, rows, measured, args.level)
    print("\nAUTO = {")
    for (f, p), m in sorted(auto.items()):
        print(f"    ({f!r}, {p}): {m!r},")
    print("}\nMEASURED_MIN_COVERAGE = {")
    for (f, m, p), (c, k) in sorted(measured.items()):
        if " " not in m:
            print(f"    ({f!r}, {m!r}, {p}): ({c:.3f}, {k}),")
    print("}")


def _n_of(key) -> int:
    """n of a cell key: an int (synthetic worlds) or "MAP n" (the study's own)."""
    return int(str(key).split()[-1])


def write_domain(path: str, rows: dict, measured: dict, level: float) -> None:
    """The measured domain of every (family, method, p) at ``level``."""
    from fitontest.inference import domains

    methods = {}
    for (f, m, q), (cov, k) in sorted(measured.items()):
        if " " in m:                     # "inverted k=X": not the library's method
            continue
        ns = [_n_of(n) for n in rows[(f, q, m)]]
        dom = {"level": [level], "n": {"min": min(ns), "max": max(ns)}}
        if m != "sun":
            # measured with --n-boot 100 (50 replicates per world for inverted);
            # more replicates only narrow the Monte Carlo noise that k absorbs
            dom["n_boot"] = {"min": 100}
        methods[f"{f}/{m}/{q}"] = {"domain": dom, "cells": {f"{level:g}": [cov, k]}}
    domains.write(path, {
        "measured_file": "benchmarks/measured/interval_coverage.md",
        "also": ["benchmarks/measured/interval_coverage_study.md"],
        "written_by": "python benchmarks/coverage_checks/interval_auto.py "
                      "benchmarks/measured/interval_coverage.md "
                      "benchmarks/measured/interval_coverage_study.md --write-domain "
                      "src/fitontest/inference/measured/intervals.json",
        "quantity": "coverage",
        "laws": "synthetic worlds (shapes at CE 0-0.1, scores U(0,1) / Beta) and the "
                "default run's own calibrated scores and truths (posterior, smooth)",
        "methods": methods})


if __name__ == "__main__":
    main()
