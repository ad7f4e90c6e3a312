"""The ``auto`` choice and the measured coverage table of fitontest.intervals,
derived from the coverage benchmark's output (docs/methods.md §11.3).

Reads one or more outputs of benchmarks/interval_coverage.py (markdown; later
files win for a repeated (family, p, method, n) row) and prints, per (family,
p), each method's smallest coverage over the (CE, n) cells, its samples per
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


def parse(paths, as_inverted: str | None = None, level: float = 0.9) -> dict:
    """{(family, p, method): {n: [(cov, se, width), ...]}} of every table row."""
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
            label = parts[0]
            if rename:
                label = {"inverted": "inverted k=1", rename: "inverted"}.get(label, label)
            rows.setdefault((*key, label), {})[int(parts[1])] = cells
    return rows


def _samples(cells) -> str:
    """Samples per cell, from the printed coverage and Monte Carlo SE (cells at
    0 or 100 % say nothing)."""
    k = [c[0] * (1 - c[0]) / c[1] ** 2 for c in cells if c[1] > 0]
    return str(int(round(np.median(k)))) if k else "?"


def summary(cells_by_n: dict) -> dict:
    cells = [c for cs in cells_by_n.values() for c in cs]
    cov = np.array([c[0] for c in cells])
    se = np.array([c[1] for c in cells])
    k = int(_samples(cells)) if _samples(cells) != "?" else 0
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
