"""How often the reliability bands (fitontest.inference.bands) hold the true calibration map
on the grid the figures draw (docs/methods/11-tests-and-bands.md §11.9), and the domain file the
band's ``valid`` flag reads.

Worlds (score law, true map c), labels y ~ Bernoulli(c(s)):

- tuning set (WORLD_BAND_SCALE is chosen here, ``--tune-k``): the identity (CE 0)
  and the five synthetic shapes of fitontest.data.synthetic at CE 0.1, c ~ U(0, 1)
  or Beta(2, 5), s = f_a(c);
- held-out set (the run of record): the study's own networks' calibrated hold-out
  scores, confidence and one-vs-rest, from a finished default run (``--results``,
  results/default): after a smooth calibrator (none, temps) with the map their
  ``posterior`` truth gives, centred (linear between the truth's isotonic blocks),
  and after ``isotonic`` / ``scaling_binning`` (a few hundred / ten distinct
  scores) with the truth's value at each score; synthetic step maps on
  continuous scores (a shape's map averaged over 5 or 10 equal-width bins; an
  isotonic fit's step map); and the scores a binned or isotonic calibrator
  fitted on 1000 points of a synthetic world gives, with their exact map
  (E[c | s] by quadrature, labels drawn from the underlying c).

Grid: the band's default, 201 points from the sample's smallest to its largest
score (plus the ends' jumps for monotone), as reliability_band draws it in the
figures and the CLI's --plot; a discrete score law's map is taken as the step
through its values (the map a binned or isotonic calibrator draws). Per cell
(world, n) and level 0.8 / 0.9 / 0.95: simultaneous coverage (share of samples
whose band holds the map on the whole grid), pointwise coverage and mean width.
Two candidate rules for switching ``auto`` away from ``world`` are recorded per
sample: R1, few distinct scores (at most n / 2), and R2, the world band's fit
leaves the monotone band somewhere.

    python benchmarks/coverage_checks/band_coverage.py --tune-k --seed 7 --reps 40 [--workers 2]
    python benchmarks/coverage_checks/band_coverage.py --reps 100 --tuning-reps 40 --peer-reps 8 \
        --workers 2 --results results/default [--out FILE]
    python benchmarks/coverage_checks/band_coverage.py --write-domain      # bands.json from the .md
    python benchmarks/coverage_checks/band_coverage.py --cost

``--write-domain`` derives src/fitontest/inference/measured/bands.json from the run of
record's worst-cell table in benchmarks/measured/band_coverage.md (marked MARK).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import time
import warnings
import zlib
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import Callable

import numpy as np
from scipy.stats import beta as beta_dist

from fitontest import families
from fitontest.inference.bands import (_BUILDERS, SIMULTANEOUS, WORLD_BAND_SCALE, WORLD_BAND_WORLDS,
                             BandCoverageWarning, world_ends, world_parts)
from fitontest.inference import domains
from fitontest.data import synthetic
from fitontest.inference.monotone_band import monotone_band

REPO = Path(__file__).resolve().parents[2]
MEASURED = REPO / "benchmarks" / "measured" / "band_coverage.md"
DOMAIN = REPO / "src" / "fitontest" / "inference" / "measured" / "bands.json"
MARK = "<!-- bands domain: worst cells of the run of record -->"
LEVELS = (0.8, 0.9, 0.95)
LAWS = {"U": (1.0, 1.0), "Beta(2,5)": (2.0, 5.0)}
MAIN = ("monotone", "monotone_dyadic", "world")
PEERS = ("clopper_pearson", "clopper_pearson_bonferroni", "bootstrap", "family_bootstrap")
#: the option values the run used (the defaults): part of each method's domain
SETTINGS = {"monotone": {"n_groups": [None]}, "monotone_dyadic": {"n_groups": [None]},
            "world": {"n_boot": [WORLD_BAND_WORLDS], "family": ["reference"], "params": [None]},
            "clopper_pearson": {"n_bins": [15]}, "clopper_pearson_bonferroni": {"n_bins": [15]},
            "bootstrap": {"n_bins": [15], "n_boot": [200]},
            "family_bootstrap": {"n_boot": [200], "family": ["isotonic"], "params": [None]}}
KS = np.round(np.arange(1.0, 2.501, 0.05), 2)


@dataclass
class World:
    """A score law and its true map: ``draw(n, rng) -> (s, c(s))``, ``cmap(grid)``."""

    name: str
    group: str                   # "tuning", "network", "step", "discrete"
    draw: Callable
    cmap: Callable


def _seed(name: str) -> int:
    return zlib.crc32(name.encode())


def _law(law, rng, n):
    a, b = LAWS[law]
    return rng.random(n) if law == "U" else rng.beta(a, b, n)


def shape_world(shape: str, ce: float, law: str) -> World:
    sh = "square" if shape == "identity" else shape
    f, cm = synthetic.forward(sh, ce), synthetic.true_map(sh, ce)

    def draw(n, rng):
        c = _law(law, rng, n)
        return f(c), c
    return World(f"{shape} {ce:g} under {law}", "tuning", draw, cm)


def tuning_worlds() -> list[World]:
    out = [shape_world("identity", 0.0, law) for law in LAWS]
    return out + [shape_world(sh, 0.1, law) for sh in synthetic.SHAPES for law in LAWS]


def _step(x: np.ndarray, v: np.ndarray):
    """Right-continuous step through the points (x_j, v_j) (x sorted): v at the
    largest x_j <= s, v_0 below x_0."""
    return lambda s: v[np.clip(np.searchsorted(x, np.asarray(s), side="right") - 1, 0, x.size - 1)]


def binned_map_world(shape: str, bins: int, law: str) -> World:
    """Continuous scores s ~ law, c(s) = a shape's map averaged over the equal-width
    bin of s (the map a histogram binning leaves, as a function of the score)."""
    cm = synthetic.true_map(shape, 0.1)
    u = (np.arange(bins)[:, None] + (np.arange(2000) + 0.5)[None, :] / 2000) / bins
    level = cm(u).mean(axis=1)
    edges = np.arange(bins) / bins
    c = _step(edges, level)
    return World(f"{shape} 0.1 averaged over {bins} bins, {law}", "step",
                 lambda n, rng: (lambda s: (s, c(s)))(_law(law, rng, n)), c)


def isotonic_map_world(law: str, fit_n: int = 300) -> World:
    """Continuous scores, c = the step map of isotonic regression fitted on
    ``fit_n`` points of beta2 at CE 0.1 (a calibrator's map)."""
    s, y, _ = synthetic.sample("beta2", 0.1, fit_n, 11)
    fam = families.get("isotonic").fit(s, y)
    x = np.sort(s)
    c = _step(x, np.clip(fam.predict(x), 0.0, 1.0))
    return World(f"isotonic step map (fit on {fit_n}), {law}", "step",
                 lambda n, rng: (lambda t: (t, c(t)))(_law(law, rng, n)), c)


def calibrated_scores_world(shape: str, law: str, calibrator: str) -> World:
    """Discrete scores: a ``calibrator`` fitted on 1000 points of (s = f(c), y ~
    Bernoulli(c)), c ~ law, applied to fresh scores; the map at each of its values
    is E[c | value] (quadrature over c), labels drawn from c itself."""
    f = synthetic.forward(shape, 0.1)
    rng = np.random.default_rng(12)
    c0 = _law(law, rng, 1000)
    cal = families.get(calibrator).fit(f(c0), (rng.random(1000) < c0).astype(int))
    a, b = LAWS[law]
    q = (np.arange(200_000) + 0.5) / 200_000
    w = beta_dist.pdf(q, a, b)
    atoms_of_q = cal.predict(f(q))
    atoms, inv = np.unique(atoms_of_q, return_inverse=True)
    truth = np.bincount(inv, weights=w * q) / np.bincount(inv, weights=w)
    c = _step(atoms, truth)

    def draw(n, rng):
        cc = _law(law, rng, n)
        return cal.predict(f(cc)), cc
    return World(f"{calibrator} scores of {shape} 0.1, {law}", "discrete", draw, c)


def network_world(results: Path, arch: str, task: str, calibrator: str) -> World:
    """The study's hold-out scores of (arch, task, calibrator), resampled; map:
    the run's ``posterior`` truth (isotonic regression of the known posterior
    on the scores), centred for a smooth calibrator (linear between the mean
    scores of its blocks), its value per distinct score for a discrete one."""
    cal = np.load(results / "calibrated" / arch / task / f"{calibrator}.npz")
    tru = np.load(results / "truth" / arch / task / f"{calibrator}.npz")
    s, t = np.asarray(cal["holdout_scores"], float), np.asarray(tru["posterior"], float)
    order = np.argsort(s, kind="stable")
    s, t = s[order], t[order]
    values, inv = np.unique(s, return_inverse=True)
    discrete = values.size < s.size / 10
    if discrete:
        v = np.bincount(inv, weights=t) / np.bincount(inv)
        cmap = _step(values, v)
        at = v[inv]
    else:
        block = np.concatenate(([0], np.cumsum(np.diff(t) != 0)))
        cnt = np.bincount(block)
        bs, bv = np.bincount(block, weights=s) / cnt, np.bincount(block, weights=t) / cnt

        def cmap(g, bs=bs, bv=bv):
            return np.interp(g, bs, bv)
        at = cmap(s)

    def draw(n, rng):
        i = rng.integers(0, s.size, n)
        return s[i], at[i]
    return World(f"{arch} {task} {calibrator}", "network" if not discrete else "discrete",
                 draw, cmap)


NETWORK = (("resnet", "confidence", "none"), ("resnet", "car", "temps"),
           ("densenet", "confidence", "temps"), ("densenet", "cat", "none"),
           ("wrn", "cat", "temps"), ("wrn", "car", "none"),
           ("resnet", "confidence", "isotonic"), ("densenet", "car", "isotonic"),
           ("wrn", "confidence", "scaling_binning"), ("resnet", "cat", "scaling_binning"))


def held_out_worlds(results: Path | None) -> list[World]:
    out = [binned_map_world("sqrt", 5, "U"), binned_map_world("beta1", 10, "Beta(2,5)"),
           isotonic_map_world("U"),
           calibrated_scores_world("sqrt", "U", "scaling_binning"),
           calibrated_scores_world("beta1", "Beta(2,5)", "isotonic")]
    if results is not None:
        out += [network_world(results, *key) for key in NETWORK]
    return out


# ------------------------------------------------------------------ one cell
def _inside(lo, hi, v):
    return (lo <= v) & (v <= hi)


_WORLDS: list[World] = []        # set before the pool forks: its workers inherit them


def run_cell(job):
    """Rows of one (world, n) cell over its samples (run in a worker)."""
    wi, n, reps, peer_reps, seed, tune = job
    world = _WORLDS[wi]
    c0 = time.process_time()
    acc: dict = {}

    def add(method, level, held, pointwise, width):
        a = acc.setdefault((method, level), [0, 0.0, 0.0, 0])
        a[0] += bool(held)
        a[1] += float(pointwise)
        a[2] += float(width)
        a[3] += 1
    need = {lv: [] for lv in LEVELS}
    r1 = r2 = 0
    for r in range(reps):
        rng = np.random.default_rng([seed, _seed(world.name), n, r])
        s, c = world.draw(n, rng)
        y = (rng.random(n) < c).astype(np.float64)
        grid = np.linspace(s.min(), s.max(), 201)
        truth = world.cmap(grid)
        parts = world_parts(s, y, grid, seed=r)
        r1 += np.unique(s).size <= n / 2
        fired = False
        for lv in LEVELS:
            # the band the figures draw (default grid plus the ends' jumps); its
            # values at the grid points themselves serve world's ends and rule R2
            bands = {m: monotone_band(s, y, grid, lv, default_grid=True, dyadic=m != "monotone")
                     for m in ("monotone", "monotone_dyadic")}
            lo, hi, _, g2 = bands["monotone"]
            at = np.searchsorted(g2, grid)
            mg = (lo[at], hi[at])
            wlo, whi = world_ends(s, y, grid, lv, parts, outer=mg)
            ok = _inside(wlo, whi, truth)
            add("world", lv, ok.all(), ok.mean(), np.mean(whi - wlo))
            half = parts.half_width(lv)
            inner = parts.inner
            k_need = np.max(np.abs(truth - parts.centre)[inner] / half[inner], initial=0.0)
            need[lv].append(k_need if _inside(mg[0], mg[1], truth)[~inner].all() else np.inf)
            fired |= bool(np.any(~_inside(mg[0], mg[1], parts.centre)) and lv == 0.9)
            if tune:
                continue
            for m, (lo, hi, _, g2) in bands.items():
                ok = _inside(lo, hi, world.cmap(g2))
                add(m, lv, ok.all(), ok.mean(), np.mean(hi - lo))
            if r < peer_reps and world.group != "tuning":
                for m in PEERS:
                    if m == "family_bootstrap" and n > 3000:
                        continue
                    # the builder itself: reliability_band reads the domain this run writes
                    lo, hi = _BUILDERS[m](s, y, grid, lv, seed=r)[:2]
                    ok = _inside(lo, hi, truth)
                    add(m, lv, ok.all(), ok.mean(), np.mean(hi - lo))
        r2 += fired
    rows = [dict(world=world.name, group=world.group, n=n, method=m, level=lv,
                 simultaneous=a[0] / a[3], pointwise=a[1] / a[3], width=a[2] / a[3], reps=a[3])
            for (m, lv), a in acc.items()]
    rule = dict(world=world.name, group=world.group, n=n, r1=r1 / reps, r2=r2 / reps, reps=reps)
    return rows, rule, {lv: np.array(v) for lv, v in need.items()}, time.process_time() - c0


def run(worlds, args, tune=False):
    # the largest n first: the pool's last jobs are then the short ones
    _WORLDS[:] = worlds
    jobs = [(i, n, args.tuning_reps if w.group == "tuning" and not tune else args.reps,
             args.peer_reps, args.seed, tune)
            for n in sorted(args.n, reverse=True) for i, w in enumerate(worlds)]
    out = []
    if args.workers > 1:
        with ProcessPoolExecutor(args.workers, mp_context=get_context("fork")) as ex:
            for res, job in zip(ex.map(run_cell, jobs), jobs):
                out.append(res)
                print(f"{worlds[job[0]].name} n={job[1]}: {res[3]:.0f} CPU-s", flush=True)
    else:
        for job in jobs:
            out.append(run_cell(job))
            print(f"{worlds[job[0]].name} n={job[1]}: {out[-1][3]:.0f} CPU-s", flush=True)
    return out


# ------------------------------------------------------------------ reports
def _pct(v):
    return f"{100 * v:.1f}"


def tune_table(results) -> str:
    """Per k: the smallest cell's coverage at each level; the chosen k."""
    lines = ["| k | " + " | ".join(f"smallest cell at {lv:g} (its cell)" for lv in LEVELS) + " |",
             "|---|" + "---|" * len(LEVELS)]
    chosen = None
    for k in KS:
        worst = {}
        for lv in LEVELS:
            cov = [(np.mean(need[lv] <= k), f"{job_name}, n = {n}")
                   for (job_name, n), need in results.items()]
            worst[lv] = min(cov)
        lines.append(f"| {k:.2f} | " + " | ".join(f"{_pct(worst[lv][0])} ({worst[lv][1]})"
                                                  for lv in LEVELS) + " |")
        if chosen is None and all(worst[lv][0] >= lv for lv in LEVELS):
            chosen = k
    lines.append(f"\nchosen k (smallest with every tuning cell >= its level): {chosen}")
    return "\n".join(lines)


def cell_table(rows, rules) -> str:
    """One row per (world, n): simultaneous % of monotone / dyadic / world at each level."""
    by = {(r["world"], r["n"], r["method"], r["level"]): r for r in rows}
    lines = ["| world | set | n | " + " | ".join(f"{m} {lv:g}" for m in MAIN for lv in LEVELS)
             + " | width mono / world (0.9) | R1 % | R2 % |",
             "|---|---|---|" + "---|" * (3 * len(MAIN) + 3)]
    for ru in rules:
        key = (ru["world"], ru["n"])
        cells = [_pct(by[key + (m, lv)]["simultaneous"]) for m in MAIN for lv in LEVELS]
        wm, ww = by[key + ("monotone", 0.9)]["width"], by[key + ("world", 0.9)]["width"]
        lines.append(f"| {ru['world']} | {ru['group']} | {ru['n']} | " + " | ".join(cells)
                     + f" | {wm:.3f} / {ww:.3f} | {_pct(ru['r1'])} | {_pct(ru['r2'])} |")
    return "\n".join(lines)


SETS = ("tuning", "network", "step", "discrete")


def summary_table(rows) -> str:
    """Per method, set of worlds and n: the smallest simultaneous coverage over
    the set's worlds at each level, and the mean width at 0.9."""
    lines = ["| method | set | n | " + " | ".join(f"smallest % at {lv:g}" for lv in LEVELS)
             + " | mean width at 0.9 |", "|---|---|---|" + "---|" * (len(LEVELS) + 1)]
    for m in MAIN:
        for grp in SETS:
            for n in sorted({r["n"] for r in rows}):
                mine = [r for r in rows if r["method"] == m and r["group"] == grp and r["n"] == n]
                if not mine:
                    continue
                low = [_pct(min(r["simultaneous"] for r in mine if r["level"] == lv))
                       for lv in LEVELS]
                width = np.mean([r["width"] for r in mine if r["level"] == 0.9])
                lines.append(f"| {m} | {grp} | {n} | " + " | ".join(low) + f" | {width:.3f} |")
    return "\n".join(lines)


def worst_table(rows, ns) -> str:
    """Per method and level: the worst cell of the coverage the method claims."""
    lines = [MARK, "| method | claims | level | n | worst % | samples | cell | mean width |",
             "|---|---|---|---|---|---|---|---|"]
    for m in MAIN + PEERS:
        key = "simultaneous" if SIMULTANEOUS[m] else "pointwise"
        for lv in LEVELS:
            mine = [r for r in rows if r["method"] == m and r["level"] == lv]
            if not mine:
                continue
            w = min(mine, key=lambda r: (r[key], -r["reps"]))
            nn = sorted({r["n"] for r in mine})
            lines.append(f"| {m} | {key} | {lv:g} | {nn[0]}-{nn[-1]} | {_pct(w[key])} | "
                         f"{w['reps']} | {w['world']}, n = {w['n']} | "
                         f"{np.mean([r['width'] for r in mine]):.3f} |")
    return "\n".join(lines)


def rule_table(rules) -> str:
    """Per set: how often each rule would switch (R1: few distinct scores; R2: the
    world fit leaves the monotone band)."""
    lines = ["| set | n | R1 fired % | R2 fired % | cells |", "|---|---|---|---|---|"]
    for grp in SETS:
        for n in sorted({r["n"] for r in rules}):
            mine = [r for r in rules if r["group"] == grp and r["n"] == n]
            if mine:
                lines.append(f"| {grp} | {n} | {_pct(np.mean([r['r1'] for r in mine]))} | "
                             f"{_pct(np.mean([r['r2'] for r in mine]))} | {len(mine)} |")
    return "\n".join(lines)


# ------------------------------------------------------------------ domain file
def read_worst(text: str) -> list[dict]:
    """The worst-cell table after :data:`MARK` in the measured file."""
    if text.count(MARK) != 1:
        raise ValueError(f"{MEASURED}: expected one domain table marked {MARK!r}")
    out = []
    for line in text.split(MARK, 1)[1].strip().splitlines()[2:]:
        if not line.startswith("|"):
            break
        m, claims, lv, nn, worst, k, cell, _ = [c.strip() for c in line.strip("|").split("|")]
        lo, hi = (int(v) for v in nn.split("-"))
        out.append(dict(method=m, claims=claims, level=float(lv), n_min=lo, n_max=hi,
                        worst=float(worst) / 100, samples=int(k), cell=cell))
    return out


def domain_data(text: str) -> dict:
    methods: dict = {}
    for r in read_worst(text):
        e = methods.setdefault(r["method"], {"domain": {"level": [], "grid": ["default"],
                                                        **SETTINGS[r["method"]]},
                                             "cells": {}, "laws": LAWS_NOTE})
        e["domain"]["level"].append(r["level"])
        e["domain"]["n"] = {"min": r["n_min"], "max": r["n_max"]}
        e["cells"][f"{r['level']:g}"] = [round(r["worst"], 4), r["samples"]]
    return {"measured_file": "benchmarks/measured/band_coverage.md",
            "written_by": "python benchmarks/coverage_checks/band_coverage.py --write-domain",
            "quantity": "coverage", "methods": methods}


LAWS_NOTE = ("the synthetic shapes (tuning set, fresh seeds) and, held out, the default run's "
             "networks' calibrated hold-out scores (confidence, one-vs-rest; none / temps / "
             "isotonic / scaling_binning), synthetic step maps and binned / isotonic "
             "calibrators' scores; the figures' default grid. Shape: non-decreasing maps; "
             "monotone, monotone_dyadic and world are gated by the test of monotonicity "
             "(valid None where it rejects at 1 - level; its size and power and the band on "
             "maps that turn down: the section 'Maps that turn down', written by "
             "benchmarks/coverage_checks/band_shape.py)")


# ------------------------------------------------------------------ cost
def cost(args) -> str:
    lines = ["| method | n | wall s | CPU s |", "|---|---|---|---|"]
    for n in args.cost_n:
        s, y, _ = synthetic.sample("sqrt", 0.05, n, args.seed)
        for m in MAIN + PEERS:
            w0, c0 = time.perf_counter(), time.process_time()
            _BUILDERS[m](s, y, np.linspace(s.min(), s.max(), 201), 0.9, default_grid=True)
            lines.append(f"| {m} | {n} | {time.perf_counter() - w0:.3f} | "
                         f"{time.process_time() - c0:.3f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=150)
    ap.add_argument("--tuning-reps", type=int, default=50,
                    help="samples per cell of the tuning shapes in the run of record")
    ap.add_argument("--peer-reps", type=int, default=10)
    ap.add_argument("--n", default="50,200,1000,3000,20000")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--results", default=None, help="a finished default run (results/default)")
    ap.add_argument("--tune-k", action="store_true")
    ap.add_argument("--write-domain", action="store_true")
    ap.add_argument("--cost", action="store_true")
    ap.add_argument("--cost-n", default="1000,10000,100000")
    ap.add_argument("--only", default=None, help="worlds whose name contains this")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    args.n = [int(v) for v in args.n.split(",")]
    args.cost_n = [int(v) for v in args.cost_n.split(",")]
    if args.write_domain:
        domains.write(DOMAIN, domain_data(MEASURED.read_text()))
        print(f"wrote {DOMAIN.relative_to(REPO)} from {MEASURED.relative_to(REPO)}")
        return 0
    warnings.simplefilter("ignore", BandCoverageWarning)   # we are measuring it
    w0 = time.perf_counter()
    if args.cost:
        text, cpu = cost(args), time.process_time()
    elif args.tune_k:
        res = run(tuning_worlds(), args, tune=True)
        text = tune_table({(r[0][0]["world"], r[0][0]["n"]): r[2] for r in res})
        cpu = sum(r[3] for r in res)
    else:
        worlds = held_out_worlds(Path(args.results) if args.results else None)
        worlds = tuning_worlds() + worlds
        if args.only:
            worlds = [w for w in worlds if args.only in w.name]
        res = run(worlds, args)
        order = {w.name: i for i, w in enumerate(worlds)}
        res.sort(key=lambda r: (order[r[1]["world"]], r[1]["n"]))
        rows = [row for r in res for row in r[0]]
        rules = [r[1] for r in res]
        text = "\n\n".join([worst_table(rows, args.n), summary_table(rows), rule_table(rules),
                            cell_table(rows, rules)])
        cpu = sum(r[3] for r in res)
    text += (f"\n\nworld: {WORLD_BAND_WORLDS} worlds, WORLD_BAND_SCALE = {WORLD_BAND_SCALE}; "
             f"wall {time.perf_counter() - w0:.0f} s, CPU {cpu:.0f} s (pid {os.getpid()}, "
             f"{args.workers} worker(s); shared machine, indicative)")
    print(text)
    if args.out:
        with open(args.out, "a") as fh:
            fh.write(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
