"""``fitontest bench NAME_OR_MODULE[:CLASS]``: one evaluator scored on the
synthetic and pseudo-real studies through the workflow (Snakemake), ranked
among the others with the tables' tests."""
from __future__ import annotations

import copy
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

from fitontest import families
from fitontest.core.io import atomic_path
from fitontest.core.registry import absolute_spec, use_plugins
from fitontest.inference.stats import pairwise_better, rank_bounds

# pandas, yaml and the report / study layers: imported by the command that uses them
# (the report layer loads the claims; `fitontest bench` is the only user)

def resolve_evaluator(target: str) -> tuple[str, str | None]:
    """(registered name, plugin spec or None) of a name or ``module[:Class]``."""
    if target in families.names():
        return target, None
    spec = absolute_spec(target)
    before = set(families.names())
    try:
        obj = use_plugins([spec])[0]
    except ValueError as err:
        raise ValueError(f"{target!r} is neither a registered family nor a loadable "
                         f"plugin: {err}") from None
    if isinstance(obj, type):
        names = [n for n in families.names() if families.entry(n) is obj]
    else:
        names = sorted(set(families.names()) - before)
    if len(names) != 1:
        raise ValueError(f"{target!r} registers {len(names)} families ({names}); name one "
                         "as MODULE:CLASS")
    return names[0], spec


def bench_config(base: dict, name: str, spec: str | None) -> dict:
    """``base`` with ``name`` added to the evaluators, in a job of its own
    (config ``batch.alone``), and ``spec`` to the plugins."""
    cfg = copy.deepcopy(base)
    if spec is not None:
        plugins = list(cfg.get("plugins") or [])
        cfg["plugins"] = plugins + ([spec] if spec not in plugins else [])
    if cfg.get("pseudo_real", True) and "evaluation" in cfg:
        ev = cfg["evaluation"].setdefault("evaluators", [])
        if name not in ev:
            ev.append(name)
    syn = cfg.get("synthetic") or {}
    if syn.get("enabled"):
        ev = syn.setdefault("evaluators", [])
        if name not in ev:
            ev.append(name)
    # a job of its own: the batches of the finished run stay as they were
    alone = cfg.setdefault("batch", {}).setdefault("alone", [])
    if name not in alone:
        alone.append(name)
    return cfg


def ranking(frame, value: str, inference):
    """Per evaluator: the tables' cell (mean over the policy's independent
    clusters, 95 % interval), rank (1 = smallest), simultaneous rank bounds
    (``rank_lo``, ``rank_hi``) from the tables' pairwise tests and whether it
    is not significantly worse than any other (``tied``: the tables' markers)."""
    import pandas as pd

    from fitontest.report.aggregate import aggregate_units

    cells = aggregate_units(frame, value, [], inference.units, clusters=inference.clusters)
    out = pd.DataFrame({"mean": cells.mean.iloc[0], "lo": cells.lo.iloc[0],
                        "hi": cells.hi.iloc[0]}).dropna(subset=["mean"])
    out["rank"] = out["mean"].rank(method="min").astype(int)
    wide = next(iter(cells.units.values()))[out.index]
    b = rank_bounds(pairwise_better(wide, min_clusters=inference.min_clusters))
    out["rank_lo"], out["rank_hi"] = b["lo"], b["hi"]
    out["tied"] = out["rank_lo"] == 1
    out["clusters"] = len(wide)
    return out


def bench_verdict(m, name: str, what: str, inference, claim=None) -> str:
    """The verdict on "``name`` is the best" (as the findings, four outcomes):
    supported when it is significantly better than every other evaluator,
    contradicted when another is significantly better, equivalent when every
    evaluator not significantly worse than another is within the margin of
    it, else not distinguishable; with its simultaneous rank bounds.
    ``claim``: the findings' row (:func:`.report.findings.best_claim`)."""
    if name not in m.index:
        return f"no {what}"
    r = m.loc[name]
    lo, hi = int(r["rank_lo"]), int(r["rank_hi"])
    bounds = f"{lo}" if lo == hi else f"{lo}–{hi}"
    status = claim["status"] if claim is not None else None
    if r["clusters"] < inference.min_clusters:
        verdict = (f"not distinguishable: {r['clusters']} independent clusters, a test "
                   f"needs {inference.min_clusters}")
    elif status == "equivalent":
        verdict = claim["significance"].split(" (α")[0]
    elif hi == 1:
        verdict = "supported as the best: significantly better than every other"
    elif lo > 1:
        verdict = f"contradicted: {lo - 1} evaluator(s) significantly better"
    else:
        verdict = "not distinguishable from the best"
    return f"{what} rank {r['rank']} of {len(m)}, simultaneous rank bounds {bounds} ({verdict})"


def bench_report(frame, name: str, title: str, truth: str | None, costs=None) -> str:
    from fitontest.report import policy
    from fitontest.report.findings import best_claim

    truth = policy.pick_truth(frame["truth"], truth)
    f = policy.with_scope(frame[frame["truth"] == truth])
    synthetic = "shape" in f.columns
    inference = policy.inference_for("synthetic" if synthetic else "scores", frame=f)
    units = inference.clusters
    over = ("shape, CE level, size and seed" if synthetic
            else "network, task, calibrator, size and seed")
    cmee, err = ranking(f, "cmee", inference), ranking(f, "ce_error", inference)
    evaluators = sorted(set(f["evaluator"]), key=lambda e: (
        cmee["mean"].get(e, np.inf), e))
    k = int(max(cmee["clusters"].max() if len(cmee) else 0,
                err["clusters"].max() if len(err) else 0))
    lines = [f"{title} (truth: {truth}; means over every {over}; 95 % interval over the "
             f"{k} independent clusters {policy.words(units)}; * = not significantly worse than "
             f"any other: paired t-tests of all pairs, Holm, α = {policy.ALPHA})",
             f"{'evaluator':<22} {'CMEE':>9} {'95% interval':>21} {'rank':>5}  "
             f"{'CE error':>9} {'95% interval':>21} {'rank':>5}"]

    def cell(m, e):
        if e not in m.index:
            return f"{'-':>9} {'':>21} {'-':>5} "
        r = m.loc[e]
        iv = f"[{r['lo']:.5f}, {r['hi']:.5f}]" if np.isfinite(r["lo"]) else ""
        return f"{r['mean']:9.5f} {iv:>21} {r['rank']:5d}{'*' if r['tied'] else ' '}"

    for e in evaluators:
        mark = "  <-" if e == name else ""
        lines.append(f"{e:<22} {cell(cmee, e)} {cell(err, e)}{mark}")
    if name in f["evaluator"].values:
        claims = {what: best_claim(f, name, col, synthetic, truth, costs)
                  if name in m.index else None
                  for m, what, col in ((cmee, "CMEE", "cmee"), (err, "CE error", "ce_error"))}
        lines.append(f"{name}: {bench_verdict(cmee, name, 'CMEE', inference, claims['CMEE'])}; "
                     f"{bench_verdict(err, name, 'CE error', inference, claims['CE error'])}")
        # what would decide a verdict left open (docs/methods/11-verdicts.md §11.5.2)
        lines += [f"  {what}, what it would take: {c['takes_cpu']}" for what, c in claims.items()
                  if c is not None and c["status"] == "not distinguishable" and c["takes"]]
    return "\n".join(lines)


def _snakemake_exe() -> str:
    exe = Path(sys.executable).with_name("snakemake")
    if exe.exists():
        return str(exe)
    return shutil.which("snakemake") or "snakemake"


def find_snakefile(given) -> Path:
    candidates = [Path(given)] if given else [Path.cwd() / "Snakefile",
                                              Path(__file__).resolve().parents[3] / "Snakefile"]
    for c in candidates:
        if c.is_file():
            return c.resolve()
    raise ValueError("no Snakefile found: run from the fitontest repository or pass "
                     "--snakefile")


def cmd_bench(args) -> int:
    import pandas as pd
    import yaml

    from fitontest.study import jobstats

    name, spec = resolve_evaluator(args.target)
    snakefile = find_snakefile(args.snakefile)
    workdir = Path(args.directory or Path.cwd()).resolve()
    configfile = Path(args.configfile) if args.configfile else \
        snakefile.parent / "config" / "config.yaml"
    base = yaml.safe_load(configfile.read_text())
    cfg = bench_config(base, name, spec)
    exp = cfg["exp"]
    merged = workdir / ".fitontest" / f"bench-{exp}-{name}.yaml"
    merged.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(merged) as tmp:
        Path(tmp).write_text(yaml.safe_dump(cfg, sort_keys=False))
    targets = []
    if cfg.get("pseudo_real", True):
        targets.append(f"results/{exp}/scores.parquet")
    if (cfg.get("synthetic") or {}).get("enabled"):
        targets.append(f"results/{exp}/synthetic_scores.parquet")
    if not targets:
        raise ValueError(f"{configfile}: neither the pseudo-real nor the synthetic study is on")
    # every trigger but params: adding an evaluator changes the synthetic jobs'
    # params (they hold the evaluator list), which must not rerun them
    cmd = [_snakemake_exe(), *targets, "-s", str(snakefile), "-d", str(workdir), "--cores",
           str(args.cores), "--configfile", str(merged), "--rerun-incomplete",
           *args.snakemake_args, "--rerun-triggers", "mtime", "input", "software-env", "code"]
    print(f"fitontest bench: scoring {name!r} ({'plugin ' + spec if spec else 'registered'})"
          f" with config {merged}\n$ {' '.join(cmd)}", flush=True)
    done = subprocess.run(cmd, cwd=snakefile.parent)
    if done.returncode != 0:
        print(f"fitontest bench: Snakemake failed (exit {done.returncode})", file=sys.stderr)
        return done.returncode
    for target, title in zip(targets, ["pseudo-real study", "synthetic study"]
                             if cfg.get("pseudo_real", True) else ["synthetic study"]):
        print()
        print(bench_report(pd.read_parquet(workdir / target), name, title,
                           args.truth if "synthetic" not in target else None,
                           costs=jobstats.costs(workdir / "results" / exp)))
    return 0


__all__ = ["cmd_bench", "resolve_evaluator", "bench_config", "ranking", "bench_verdict",
           "bench_report", "find_snakefile"]
