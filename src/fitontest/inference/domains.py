"""Where a method's coverage (or size) was measured, and what it was there.

A ``valid`` flag (of a CE interval, a reliability band, a test of calibration,
the evaluator chooser's interval) is a claim about a measured error rate, and
only holds where it was measured. Each such benchmark writes its measured
domain as package data, ``fitontest/inference/measured/<name>.json`` (never
constants typed into modules), naming the measured file it summarises; the
code reads it here, and ``tests/test_domains.py`` ties each data file to its
measured file.

A data file::

    {"measured_file": "benchmarks/measured/band_coverage.md",
     "written_by": "python benchmarks/coverage_checks/band_coverage.py --write-domain",
     "quantity": "coverage",            # or "size": the rate a test rejects a true null
     "methods": {KEY: {"domain": {"level": [0.8, 0.9, 0.95],
                                  "n": {"min": 50, "max": 20000},
                                  SETTING: [allowed values] or {"min": .., "max": ..}},
                       "cells": {"0.9": [min coverage, samples of that cell], ...},
                       "laws": "what the data were (documentation)"}}}

A setting given as a list holds the measured points themselves: a value
between two of them is outside (the chooser's ``n``: measured at a few sizes,
nothing claimed between them). A range ``{"min", "max"}`` is for a method
whose claim covers the values between its measured points by a guarantee of
its own (the ``monotone`` band's finite-sample one) or by a measured trend.

:meth:`Measured.validity` answers for one use: None (with the reason) where
the level, n or a setting lies outside the domain -- "coverage not measured
here" --; else False when the worst measured cell at that level is
significantly short (coverage more than 2 Monte Carlo SEs below
``level - SHORTFALL``; size more than 2 SEs above ``alpha + SHORTFALL``),
True otherwise.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np

#: how far a measured cell may fall short of its nominal level before a method
#: is called invalid there (after 2 Monte Carlo SEs): the project's tolerance,
#: declared, not fitted (90 % intervals and bands that cover 87 % are valid)
SHORTFALL = 0.03


@dataclass(frozen=True)
class Validity:
    """``valid`` (True / False / None) and the one line that says why."""

    valid: bool | None
    why: str


def _matches(value, allowed) -> bool:
    """``allowed``: a list of values, or a range ``{"min": a, "max": b}`` (either open)."""
    if isinstance(allowed, dict):
        return ((allowed.get("min") is None or value >= allowed["min"])
                and (allowed.get("max") is None or value <= allowed["max"]))
    return value in allowed


def _spec(allowed) -> str:
    if isinstance(allowed, dict):
        return f"{allowed.get('min', '')}..{allowed.get('max', '')}"
    return ", ".join(map(str, allowed))


class Measured:
    """One measured-domain data file (module docstring)."""

    def __init__(self, data: dict, name: str = ""):
        self.name = name
        self.measured_file = data["measured_file"]
        self.quantity = data.get("quantity", "coverage")
        self.methods = data["methods"]
        self.written_by = data.get("written_by", "")

    def has(self, key: str) -> bool:
        return key in self.methods

    def domain(self, key: str) -> dict | None:
        entry = self.methods.get(key)
        return None if entry is None else entry["domain"]

    def cell(self, key: str, level: float) -> tuple[float, int] | None:
        """(worst measured coverage or size, its samples) of ``key`` at ``level``."""
        entry = self.methods.get(key)
        if entry is None:
            return None
        for lv, got in entry["cells"].items():
            if abs(float(lv) - level) < 1e-9:
                return float(got[0]), int(got[1])
        return None

    def validity(self, key: str, *, level: float, n: int, **settings) -> Validity:
        """Validity of ``key`` used at nominal ``level`` (a test: its alpha) on
        ``n`` points with ``settings`` (module docstring)."""
        where = f"({self.measured_file})"
        dom = self.domain(key)
        if dom is None:
            return Validity(None, f"{key}: {self.quantity} not measured {where}")
        out = []
        levels = dom.get("level", [])
        if not any(abs(level - lv) < 1e-9 for lv in levels):
            out.append(f"level {level:g} (measured at {', '.join(f'{v:g}' for v in levels)})")
        for name, value in {"n": n, **settings}.items():
            if name in dom and not _matches(value, dom[name]):
                out.append(f"{name} = {value!r} (measured: {_spec(dom[name])})")
        if out:
            return Validity(None, f"{self.quantity} not measured here: " + "; ".join(out)
                            + f" {where}")
        got = self.cell(key, level)
        if got is None:
            return Validity(None, f"{self.quantity} not measured at level {level:g} {where}")
        rate, k = got
        if self.quantity == "size":
            alpha = level
            se = np.sqrt(alpha * (1 - alpha) / k)
            if rate - 2 * se > alpha + SHORTFALL:
                return Validity(False, f"size measured at {rate:.1%} (of {k} samples) "
                                       f"against a nominal {alpha:g} {where}")
            return Validity(True, f"size within its nominal {alpha:g} where measured {where}")
        se = np.sqrt(level * (1 - level) / k)
        if rate + 2 * se < level - SHORTFALL:
            return Validity(False, f"coverage measured at {rate:.1%} (of {k} samples) in "
                                   f"some cell at level {level:g} {where}")
        return Validity(True, f"coverage measured to hold at level {level:g} {where}")


@lru_cache(maxsize=None)
def measured(name: str) -> Measured:
    """The data file ``fitontest/inference/measured/<name>.json``."""
    path = resources.files("fitontest.inference").joinpath("measured", f"{name}.json")
    if not path.is_file():          # nothing measured (yet): every flag None
        return Measured({"measured_file": f"no measured file ({name}.json)", "methods": {}},
                        name)
    return Measured(json.loads(path.read_text()), name)


def write(path, data: dict) -> None:
    """Write a measured-domain data file (for the benchmarks that measure one),
    keys sorted, so that a rerun with the same numbers changes nothing."""
    from ..core.io import write_text

    write_text(path, json.dumps(data, indent=1, sort_keys=True) + "\n")


__all__ = ["Measured", "Validity", "measured", "write", "SHORTFALL"]
