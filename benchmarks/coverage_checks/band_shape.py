"""Does the ``monotone`` band say when the map it assumes non-decreasing turns down?
(docs/methods/11-tests-and-bands.md §11.9; issue 56.)

The ``monotone`` band holds every non-decreasing map; on a map that turns down
it can miss. ``reliability_band`` therefore runs
``fitontest.inference.monotone_band.monotonicity_test`` and, where it rejects
at alpha = 1 - level, gives ``valid=None`` (no claim) instead of its measured
flag. This script measures, on the figures' grid, at the figures' levels 0.8 /
0.9 / 0.95 and n = 50 ... 20000 (labels y ~ Bernoulli(c(s))):

- **size**: how often the test rejects a non-decreasing map (the tuning shapes
  of band_coverage.py, constant maps -- the least favourable: the permutation
  null is exact there -- and a step map), at alpha 0.2 / 0.1 / 0.05;
- **power and coverage** on maps that turn down: per level, how often the band
  missed the map (ungated), how often the test rejected, how often the band
  claimed ``valid=True`` (not rejected) and how often it held the map when it
  claimed so. Two sets: the *tuning* maps, on which the test's number of score
  groups (``shape_groups``) was chosen (the diagonal rising to a peak and
  falling by 0.05-0.3, a step map with one step lowered, narrow dips), and
  *held-out* maps never looked at before this run (a hump, an over-confident
  top on confidence-like scores, a sawtooth, a narrow bump, histogram-binning
  calibrators' scores whose bins' means swap order);
- **cost** of the test at n = 1000 and 20000 (wall and CPU seconds).

    python benchmarks/coverage_checks/band_shape.py --reps 100 --size-reps 200 --workers 2 \\
        --out benchmarks/measured/band_coverage.md      # its section of that file
    python benchmarks/coverage_checks/band_shape.py --cost
    python benchmarks/coverage_checks/band_shape.py --pilot --reps 50 --n 1000,3000,20000 \
        --workers 2 --out benchmarks/measured/band_coverage.md   # the groups' pilot

``--out`` replaces the section between the markers BEGIN / END of the file
(appending it the first time; the pilot: its own markers); without it the
tables are only printed. ``--pilot`` reruns the pilot that set the test's
number of score groups: the power of ``monotonicity_test`` with 8, 16 and 32
groups and with the rule ``shape_groups`` on the tuning maps.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import zlib
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import Callable

import numpy as np
from scipy.stats import beta as beta_dist

from fitontest import families
from fitontest.data import synthetic
from fitontest.inference.monotone_band import monotone_band, monotonicity_test, shape_groups

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))
from common import commit  # noqa: E402  (benchmarks/common.py)
LEVELS = (0.8, 0.9, 0.95)
BEGIN = "<!-- band_shape: maps that turn down (benchmarks/coverage_checks/band_shape.py) -->"
END = "<!-- band_shape: end -->"
PILOT = ("<!-- band_shape: pilot of the groups -->", "<!-- band_shape: pilot end -->")
PILOT_GROUPS = (8, 16, 32, None)          # None: the rule, shape_groups(n)


@dataclass
class Map:
    """A score law and its true map: ``draw(n, rng) -> (s, c(s))``, ``cmap(grid)``;
    ``group``: "monotone", "tuning" or "held-out"."""

    name: str
    group: str
    draw: Callable
    cmap: Callable


def _on_u(name, group, c, law=lambda rng, n: rng.random(n)):
    def draw(n, rng):
        s = law(rng, n)
        return s, c(s)
    return Map(name, group, draw, c)


def _step(x, v):
    return lambda s: v[np.clip(np.searchsorted(x, np.asarray(s), side="right") - 1, 0,
                               x.size - 1)]


def monotone_maps() -> list[Map]:
    out = []
    for law, (a, b) in {"U": (1, 1), "Beta(2,5)": (2, 5)}.items():
        def lw(rng, n, a=a, b=b):
            return rng.random(n) if a == b == 1 else rng.beta(a, b, n)
        out.append(_on_u(f"identity under {law}", "monotone", lambda s: s, lw))
    for shape in synthetic.SHAPES:
        f, cm = synthetic.forward(shape, 0.1), synthetic.true_map(shape, 0.1)

        def draw(n, rng, f=f):
            c = rng.random(n)
            return f(c), c
        out.append(Map(f"{shape} 0.1 under U", "monotone", draw, cm))
    for v in (0.1, 0.5):
        out.append(_on_u(f"constant {v:g}", "monotone", lambda s, v=v: np.full_like(s, v)))
    lev = synthetic.true_map("sqrt", 0.1)((np.arange(5) + 0.5) / 5)
    out.append(_on_u("sqrt 0.1 averaged over 5 bins", "monotone",
                     _step(np.arange(5) / 5, lev)))
    return out


def _down(peak, end):
    return lambda s: np.where(s <= peak, s, peak - (s - peak) * (peak - end) / (1 - peak))


def tuning_maps() -> list[Map]:
    """The maps the test's group rule was chosen on (issue 56's map first)."""
    lev = (np.arange(10) + 0.5) / 10
    low = lev.copy()
    low[6] -= 0.2
    out = [_on_u(f"up to {p:g}, down to {e:g}", "tuning", _down(p, e))
           for p, e in ((0.7, 0.4), (0.7, 0.5), (0.7, 0.6), (0.7, 0.65), (0.5, 0.3))]
    out.append(_on_u("10 steps, the 7th 0.2 low", "tuning", _step(np.arange(10) / 10, low)))
    for depth, width in ((0.2, 0.05), (0.3, 0.1)):
        out.append(_on_u(f"dip of {depth:g} (width {width:g})", "tuning",
                         lambda s, d=depth, w=width:
                         np.clip(s - d * np.maximum(0, 1 - np.abs(s - 0.5) / w), 0, 1)))
    return out


def binned_calibrator(shape: str, bins: int, fit_n: int, seed: int) -> Map:
    """Histogram binning (equal-count bins) fitted on ``fit_n`` points of a
    synthetic world (CE 0.1, c ~ U(0, 1)): a score is its bin's label mean, so
    where two bins' means swap order the map of the scores turns down; the map
    at each value: E[c | bin] (quadrature), labels drawn from c itself."""
    f = synthetic.forward(shape, 0.1)
    rng = np.random.default_rng(seed)
    c0 = rng.random(fit_n)
    s0, y0 = f(c0), (rng.random(fit_n) < c0).astype(float)
    edges = np.quantile(s0, np.linspace(0, 1, bins + 1)[1:-1])
    b0 = np.searchsorted(edges, s0)
    means = np.bincount(b0, weights=y0, minlength=bins) / np.bincount(b0, minlength=bins)
    q = (np.arange(200_000) + 0.5) / 200_000
    bq = np.searchsorted(edges, f(q))
    truth = np.bincount(bq, weights=q, minlength=bins) / np.bincount(bq, minlength=bins)
    order = np.argsort(means, kind="stable")
    values, first = np.unique(means[order], return_index=True)
    # tied means are one score: its map is the mean of c over the tied bins
    wq = np.bincount(bq, minlength=bins)[order]
    tv = np.add.reduceat(truth[order] * wq, first) / np.add.reduceat(wq, first)
    drops = int(np.sum(np.diff(tv) < 0))

    def draw(n, rng):
        c = rng.random(n)
        return means[np.searchsorted(edges, f(c))], c
    return Map(f"histogram binning ({bins} bins, fit on {fit_n}) of {shape}: "
               f"{drops} of {values.size - 1} steps down", "held-out", draw, _step(values, tv))


def held_out_maps() -> list[Map]:
    def top(rng, n):          # confidence-like scores, piled near 1
        return 0.5 + 0.5 * rng.beta(4.0, 1.0, n)
    return [
        _on_u("hump 0.1 + 0.8 sin(pi s)", "held-out", lambda s: 0.1 + 0.8 * np.sin(np.pi * s)),
        _on_u("over-confident top: s, down 0.08 over the top 0.1", "held-out",
              lambda s: s - 0.8 * np.maximum(0.0, s - 0.9), top),
        _on_u("sawtooth: 4 stairs, each falling 0.1", "held-out",
              lambda s: 0.2 + 0.2 * np.floor(np.minimum(4 * s, 3.999))
              - 0.1 * (4 * s - np.floor(np.minimum(4 * s, 3.999)))),
        _on_u("bump +0.15 at 0.3 (width 0.05)", "held-out",
              lambda s: np.clip(s + 0.15 * np.exp(-((s - 0.3) / 0.05) ** 2), 0, 1)),
        binned_calibrator("beta1", 15, 300, 3), binned_calibrator("sqrt", 15, 1000, 4),
    ]


# ------------------------------------------------------------------ one cell
_MAPS: list[Map] = []        # set before the pool forks: its workers inherit them


def run_cell(job):
    """(counts, CPU s) of one (map, n) cell: per level, samples where the band
    missed the map, where the test rejected at 1 - level, where the band
    claimed valid and held, and where it claimed valid (size cells: rejections
    only)."""
    mi, n, reps, seed = job
    m = _MAPS[mi]
    c0 = time.process_time()
    acc = {lv: np.zeros(4, int) for lv in LEVELS}
    for r in range(reps):
        rng = np.random.default_rng([seed, zlib.crc32(m.name.encode()), n, r])
        s, c = m.draw(n, rng)
        y = (rng.random(n) < c).astype(np.float64)
        p = monotonicity_test(s, y, seed=r).pvalue
        grid = np.linspace(s.min(), s.max(), 201)
        for lv in LEVELS:
            rejected = p <= 1.0 - lv
            if m.group == "monotone":
                acc[lv] += (0, rejected, 0, 0)
                continue
            lo, hi, _, g = monotone_band(s, y, grid, lv, default_grid=True)
            v = m.cmap(g)
            held = bool(np.all((lo <= v) & (v <= hi)))
            acc[lv] += (not held, rejected, held and not rejected, not rejected)
    return {lv: a.tolist() for lv, a in acc.items()}, time.process_time() - c0


def pilot_cell(job):
    """Rejections at alpha 0.1 of one tuning map's cell with each of PILOT_GROUPS."""
    mi, n, reps, seed = job
    m = _MAPS[mi]
    c0 = time.process_time()
    got = [0] * len(PILOT_GROUPS)
    for r in range(reps):
        rng = np.random.default_rng([seed, zlib.crc32(m.name.encode()), n, r])
        s, c = m.draw(n, rng)
        y = (rng.random(n) < c).astype(np.float64)
        for i, g in enumerate(PILOT_GROUPS):
            got[i] += monotonicity_test(s, y, n_groups=g, seed=r).pvalue <= 0.1
    return got, time.process_time() - c0


def pilot(maps, ns, reps, seed, workers) -> tuple[str, float]:
    _MAPS[:] = maps
    jobs = [(i, n, reps, seed) for n in sorted(ns, reverse=True) for i in range(len(maps))]
    if workers > 1:
        with ProcessPoolExecutor(workers, mp_context=get_context("fork")) as ex:
            res = list(ex.map(pilot_cell, jobs))
    else:
        res = [pilot_cell(j) for j in jobs]
    by = {(maps[i].name, n): r[0] for (i, n, _, _), r in zip(jobs, res)}
    head = " | ".join(f"G = {g}" if g else "the rule" for g in PILOT_GROUPS)
    lines = [f"| tuning map | n | {head} |", "|---|---|" + "---|" * len(PILOT_GROUPS)]
    for m in maps:
        for n in ns:
            lines.append(f"| {m.name} | {n} | " + " | ".join(_pct(k, reps) for k in by[(m.name, n)])
                         + " |")
    return "\n".join(lines), sum(r[1] for r in res)


def run(maps, ns, reps_for, seed, workers):
    _MAPS[:] = maps
    jobs = [(i, n, reps_for(mp), seed) for n in sorted(ns, reverse=True)
            for i, mp in enumerate(maps)]
    if workers > 1:
        with ProcessPoolExecutor(workers, mp_context=get_context("fork")) as ex:
            res = list(ex.map(run_cell, jobs))
    else:
        res = [run_cell(j) for j in jobs]
    for (i, n, _, _), (_, cpu) in zip(jobs, res):
        print(f"{maps[i].name} n={n}: {cpu:.0f} CPU-s", flush=True)
    return {(maps[i].name, n): (maps[i], reps, r[0]) for (i, n, reps, _), r in zip(jobs, res)}, \
        sum(r[1] for r in res)


# ------------------------------------------------------------------ tables
def _pct(k, of):
    return f"{100 * k / of:.1f}" if of else "-"


def size_table(res, ns) -> str:
    lines = ["| non-decreasing map | " + " | ".join(f"n = {n}" for n in ns) + " |",
             "|---|" + "---|" * len(ns)]
    names = list(dict.fromkeys(k[0] for k in res))
    for name in names:
        cells = []
        for n in ns:
            _, reps, acc = res[(name, n)]
            cells.append(" / ".join(_pct(acc[lv][1], reps) for lv in LEVELS))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    worst = {lv: max(res[k][2][lv][1] / res[k][1] for k in res) for lv in LEVELS}
    return "\n".join(lines) + "\n\nLargest rejection rate over these maps and n: " + ", ".join(
        f"{100 * worst[lv]:.1f} % at alpha {1 - lv:.2g}" for lv in LEVELS)


def power_table(res, ns) -> str:
    lines = ["| map that turns down | set | n | samples | " + " | ".join(
        f"{lv:g}: missed / rejected / claimed / held when claimed" for lv in LEVELS) + " |",
             "|---|---|---|---|" + "---|" * len(LEVELS)]
    order = {name: i for i, name in enumerate(dict.fromkeys(k[0] for k in res))}
    for (name, n), (m, reps, acc) in sorted(res.items(), key=lambda kv: (order[kv[0][0]],
                                                                         kv[0][1])):
        cells = [f"{_pct(a[0], reps)} / {_pct(a[1], reps)} / {_pct(a[3], reps)} / "
                 f"{_pct(a[2], a[3])}" for a in (acc[lv] for lv in LEVELS)]
        lines.append(f"| {name} | {m.group} | {n} | {reps} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def worst_table(res, ns) -> str:
    """Per set, n and level: the smallest share held when claimed (its map) and
    the share of all samples claimed valid and missed."""
    lines = ["| set | n | level | smallest % held when claimed (its map; claims) | "
             "largest % claimed and missed (its map) |", "|---|---|---|---|---|"]
    for grp in ("tuning", "held-out"):
        for n in ns:
            mine = [(k, v) for k, v in res.items() if v[0].group == grp and k[1] == n]
            for lv in LEVELS:
                held = [(a[2] / a[3], k[0], a[3]) for k, (_, r, acc) in mine
                        for a in [acc[lv]] if a[3]]
                bad = [((a[3] - a[2]) / r, k[0]) for k, (_, r, acc) in mine for a in [acc[lv]]]
                h = min(held) if held else (float("nan"), "-", 0)
                b = max(bad)
                lines.append(f"| {grp} | {n} | {lv:g} | {100 * h[0]:.1f} ({h[1]}; {h[2]}) | "
                             f"{100 * b[0]:.1f} ({b[1]}) |")
    return "\n".join(lines)


def cost(ns, repeat=5) -> str:
    lines = ["| n | groups | wall s (median of 5) | CPU s (median of 5) |", "|---|---|---|---|"]
    for n in ns:
        rng = np.random.default_rng(n)
        s = rng.random(n)
        y = (rng.random(n) < s).astype(int)
        walls, cpus = [], []
        for r in range(repeat):
            w0, c0 = time.perf_counter(), time.process_time()
            monotonicity_test(s, y, seed=r)
            walls.append(time.perf_counter() - w0)
            cpus.append(time.process_time() - c0)
        lines.append(f"| {n} | {shape_groups(n)} | {np.median(walls):.3f} | "
                     f"{np.median(cpus):.3f} |")
    return "\n".join(lines)




def relative(path: str) -> str:
    """``path`` from the repository root, or its name alone outside it (no
    developer's absolute path in a measured file)."""
    p = Path(path).resolve()
    return str(p.relative_to(REPO)) if p.is_relative_to(REPO) else p.name


def write_section(path: Path, text: str, marks=(BEGIN, END)) -> None:
    begin, end = marks
    old = path.read_text() if path.is_file() else ""
    block = f"{begin}\n{text}\n{end}"
    if begin in old and end in old:
        new = old.split(begin, 1)[0] + block + old.split(end, 1)[1]
    else:
        new = old.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(new)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=100, help="samples per cell of a map that "
                    "turns down")
    ap.add_argument("--size-reps", type=int, default=200, help="samples per cell of a "
                    "non-decreasing map")
    ap.add_argument("--n", default="50,200,1000,3000,20000")
    ap.add_argument("--seed", type=int, default=56)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--cost", action="store_true", help="time the test only")
    ap.add_argument("--pilot", action="store_true", help="the pilot of the number of groups")
    ap.add_argument("--cost-n", default="1000,20000")
    ap.add_argument("--out", help="the measured file whose section this run replaces")
    a = ap.parse_args(argv)
    ns = [int(v) for v in a.n.split(",")]
    w0, c0 = time.perf_counter(), time.process_time()
    if a.cost:
        print(cost([int(v) for v in a.cost_n.split(",")]))
        print(f"\nwall {time.perf_counter() - w0:.1f} s, CPU {time.process_time() - c0:.1f} s "
              f"(commit {commit()})")
        return 0
    if a.pilot:
        table, cpu = pilot(tuning_maps(), ns, a.reps, a.seed, a.workers)
        text = "\n\n".join([
            "### Pilot: the test's number of score groups (tuning maps only)",
            f"`python benchmarks/coverage_checks/band_shape.py --pilot --reps {a.reps} --n {a.n} "
            f"--seed {a.seed} --workers {a.workers}` at commit {commit()}; wall "
            f"{time.perf_counter() - w0:.0f} s, CPU {time.process_time() - c0 + cpu:.0f} s. "
            f"% of {a.reps} samples rejected at alpha 0.1 with G groups (G = 8, 16, 32) "
            "and with the rule G = n^(1/3) between 8 and 32 that the test uses (chosen "
            "after a first look at these maps; the held-out maps were not used).", table])
        print(text)
        if a.out:
            write_section(Path(a.out), text, PILOT)
        return 0
    size, cpu1 = run(monotone_maps(), ns, lambda m: a.size_reps, a.seed, a.workers)
    turn, cpu2 = run(tuning_maps() + held_out_maps(), ns, lambda m: a.reps, a.seed, a.workers)
    costs = cost([int(v) for v in a.cost_n.split(",")])
    cmd = (f"python benchmarks/coverage_checks/band_shape.py --reps {a.reps} --size-reps "
           f"{a.size_reps} --n {a.n} --seed {a.seed} --workers {a.workers}"
           + (f" --out {relative(a.out)}" if a.out else ""))
    text = "\n\n".join([
        "## Maps that turn down: the test of monotonicity that gates `valid`",
        f"`{cmd}` at commit {commit()}; wall {time.perf_counter() - w0:.0f} s, CPU "
        f"{time.process_time() - c0 + (cpu1 + cpu2 if a.workers > 1 else 0):.0f} s "
        f"({a.workers} worker(s), pid {os.getpid()}). Grid: the figures' (201 points plus "
        "the ends' jumps); the test: `monotonicity_test` at its defaults (G = n^(1/3) "
        "score groups, between 8 and 32; 999 permutations), the gate at alpha = 1 - level.",
        "### Size: rejections of a non-decreasing map, % at alpha 0.2 / 0.1 / 0.05 "
        f"({a.size_reps} samples a cell)", size_table(size, ns),
        "### Worst cells over the maps that turn down", worst_table(turn, ns),
        "### Per map (% of samples): the band missed the map / the test rejected / the band "
        "claimed valid=True / it held the map when it claimed so", power_table(turn, ns),
        "### Cost of the test (one process)", costs])
    print(text)
    if a.out:
        write_section(Path(a.out), text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
