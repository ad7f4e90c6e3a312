"""The ``auto`` choice and the measured coverage table of fitontest.intervals,
derived from the coverage benchmark's output (docs/methods.md §11.3).

Reads one or more outputs of benchmarks/interval_coverage.py (markdown; later
runs win for a repeated (family, p, method, n) row, except that a top-up run,
``--first-sample`` > 0, adds its samples to the row it continues: coverage and
width averaged with the samples as weights, each cell's count read from its
coverage and Monte Carlo SE) and prints, per (family,
p), each method's smallest coverage over the (CE, n) cells, the samples of that
cell, the cells within 90 +- 3 % and the mean width, then the entries of
``AUTO`` and ``MEASURED_MIN_COVERAGE`` as Python.

Rule (the issue's target: >= 87 % in every cell at level 0.9): a cell is
*short* when its coverage is more than one Monte Carlo SE below 87 %;
``auto`` is the narrowest candidate with no short cell, else the candidate
with the largest smallest coverage; ``sun`` at p = 1 only where its p = 2
interval (from which the p = 1 route is derived) has no short cell. (The
library's ``valid`` flag is looser:
it warns only where a cell is significantly short, by 2 SEs.) Candidates: ``inverted`` and ``sun`` (the two built to be
valid at CE = 0).

    python benchmarks/interval_auto.py benchmarks/measured/interval_coverage.md
        [--as-inverted "inverted k=0.7"]

``--as-inverted LABEL``: in an output run before the default alpha scale
changed (one that has rows ``LABEL``), ``LABEL`` is read as "inverted" and
its "inverted" rows as "inverted k=1".
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


def parse(paths, as_inverted: str | None = None, level: float = 0.9) -> dict:
    """{(family, p, method): {n: [(cov, se, width, samples), ...]}} of every table row."""
    rows: dict = {}
    # a file may hold several runs ("## run: ..." sections, as the measured file
    # does): each run is read with its own labels
    runs = [run for path in paths
            for run in open(path, encoding="utf-8").read().split("\n## run: ")]
    for text in runs:
        got = re.search(r"--level ([\d.]+)", text)
        if got and float(got.group(1)) != level:
            continue        # a run at another level (the 0.95 check) is not this table's
        key = None
        got = re.search(r"--first-sample (\d+)", text)
        top_up = bool(got and int(got.group(1)) > 0)
        rename = as_inverted if as_inverted and f"| {as_inverted} |" in text else None
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
            label = parts[0]
            if rename:
                label = {"inverted": "inverted k=1", rename: "inverted"}.get(label, label)
            by_n = rows.setdefault((*key, label), {})
            n = int(parts[1])
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
            "width": float(np.mean([c[2] for c in cells])), "n": sorted(cells_by_n)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--as-inverted", default=None)
    ap.add_argument("--level", type=float, default=0.9, help="read only the runs at this level")
    ap.add_argument("--markdown", action="store_true", help="also a summary table (docs)")
    args = ap.parse_args()
    rows = parse(args.paths, args.as_inverted, args.level)
    auto, measured = {}, {}
    for fam, p in sorted({(f, q) for f, q, _ in rows}):
        print(f"\n{fam}, p = {p}")
        best = None
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
            if m in CANDIDATES and not sun_p2_short:
                rank = (s["short"] == 0, -s["width"] if s["short"] == 0 else s["min"])
                if best is None or rank > best[0]:
                    best = (rank, m)
        if best:
            auto[(fam, p)] = best[1]
            print(f"  -> auto: {best[1]}")
    if args.markdown:
        methods = ["inverted", "inverted k=1", "sun"]
        print("\n| family | p | `auto` | " + " | ".join(f"{m}: min % / width" for m in methods)
              + " | `auto`: cells in 87–93 % | samples per cell (n) |")
        print("|---" * (len(methods) + 5) + "|")
        for (fam, p), m_auto in sorted(auto.items()):
            cells = []
            for m in methods:
                by_n = rows.get((fam, p, m))
                cells.append("–" if by_n is None else
                             "{:.1f} / {:.4f}".format(100 * summary(by_n)["min"],
                                                      summary(by_n)["width"]))
            s = summary(rows[(fam, p, m_auto)])
            ks = ", ".join(f"{_samples(cs)} ({n})"
                           for n, cs in sorted(rows[(fam, p, m_auto)].items()))
            print(f"| {fam} | {p} | {m_auto} | " + " | ".join(cells)
                  + f" | {s['near']} of {s['cells']} | {ks} |")
    print("\nAUTO = {")
    for (f, p), m in sorted(auto.items()):
        print(f"    ({f!r}, {p}): {m!r},")
    print("}\nMEASURED_MIN_COVERAGE = {")
    for (f, m, p), (c, k) in sorted(measured.items()):
        if " " not in m:
            print(f"    ({f!r}, {m!r}, {p}): ({c:.3f}, {k}),")
    print("}")


if __name__ == "__main__":
    main()
