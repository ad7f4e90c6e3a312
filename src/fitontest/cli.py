"""The ``fitontest`` command (README, "Evaluate your own predictions").

- ``evaluate PRED``: CE estimates and calibration-test p-values of a model's
  K-class predictions (:func:`fitontest.evaluate`); ``--plot`` draws the smooth
  reliability diagram; ``choose PRED``: which evaluator to trust on them;
- ``families``: every registered family and multi-class calibrator;
- ``bench NAME_OR_MODULE[:CLASS]``: one evaluator scored on the synthetic and
  pseudo-real studies through the workflow, ranked among the others;
- ``jobs RESULTS``: a run's jobs, CPU, wall and memory; ``pins``: the CPU pins.

The command line is :mod:`fitontest_cli.parser` (standard library only: the
console script answers ``--help`` and usage errors before scikit-learn is
imported); :func:`run` runs a parsed command.
"""
from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from fitontest_cli.parser import build_parser, parse_args  # noqa: F401  (re-exported)

from .core.prediction_files import read_predictions

# matplotlib, pandas and the workflow's modules: imported by the commands that use them


# ------------------------------------------------------------------ evaluate
def _fmt(v):
    return "-" if v is None else f"{v:.6f}"


#: an interval's mark in the table: coverage not measured here / measured short
_MARK = {None: "?", False: "!", True: ""}


def _interval(iv):
    return "-" if iv is None else f"[{iv.lo:.6f}, {iv.hi:.6f}]{_MARK[iv.valid]}"


def _pvalue(r):
    return "-" if r.pvalue is None else f"{r.pvalue:.6f}{_MARK[r.pvalue_valid]}"


def validity_notes(results) -> list[str]:
    """One line per mark of the table: why an interval or p-value is marked
    ``?`` (coverage / size not measured here) or ``!`` (measured short)."""
    out = {}
    for r in results:
        for x in [r, *r.per_class.values()]:
            if x.interval is not None and x.interval.valid is not True:
                out.setdefault(f"{_MARK[x.interval.valid]} {r.evaluator}: interval: "
                               f"{x.interval.validity_note}", None)
            if x.pvalue is not None and x.pvalue_valid is not True:
                out.setdefault(f"{_MARK[x.pvalue_valid]} p-value: {x.pvalue_note}", None)
    return list(out)


def result_table(results) -> str:
    rows = [("evaluator", "mode", "class", "p", "estimate", "debiased", "hyper", "interval",
             "p-value")]
    for r in results:
        rows.append((r.evaluator, r.mode, "all" if r.per_class else "-", str(r.p),
                     _fmt(r.estimate), _fmt(r.debiased), _fmt(r.hyper), _interval(r.interval),
                     _pvalue(r)))
        for k, c in r.per_class.items():
            if len(r.per_class) > 1:
                rows.append(("", "", str(k), "", _fmt(c.estimate), _fmt(c.debiased),
                             _fmt(c.hyper), _interval(c.interval), _pvalue(c)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def check_plot_path(path) -> Path:
    """The --plot target, checked before anything is computed or written: a
    format matplotlib writes, in a directory that exists (or can be made) and
    is writable."""
    import os

    path = Path(path)
    fmt = path.suffix.lower().lstrip(".")
    formats = ("png", "pdf", "svg", "jpg", "jpeg", "eps", "ps", "tif", "tiff", "webp")
    if fmt not in formats:
        raise ValueError(f"--plot {str(path)!r}: name the file with one of the image "
                         f"suffixes {', '.join('.' + f for f in formats)}")
    if path.is_dir():
        raise ValueError(f"--plot {str(path)!r} is a directory; name an image file")
    parent = next((d for d in [path.parent, *path.parent.parents] if d.exists()), Path("."))
    if not parent.is_dir():
        raise ValueError(f"--plot {str(path)!r}: {str(parent)!r} is a file, not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"--plot {str(path)!r}: directory {str(parent)!r} is not writable")
    return path


def _plot(probs, y, results, mode: str, path: Path) -> None:
    from .core.io import atomic_path
    from .report.figures.smooth import smooth_reliability_diagram
    from .study import tasks

    if mode == "confidence" or not results[0].per_class:
        s, yb = tasks.confidence(probs, y)
        title = "confidence (top label)"
    else:
        k = next(iter(results[0].per_class))
        s, yb = tasks.one_vs_rest(probs, y, k)
        title = f"class {k} vs rest"
    ax = smooth_reliability_diagram(s, yb, title=title, band=0.9)   # the map's 90 % band
    try:
        with atomic_path(path) as tmp:
            ax.figure.savefig(tmp, format=path.suffix.lower().lstrip("."), dpi=120,
                              bbox_inches="tight")
    except OSError as err:
        raise ValueError(f"--plot {str(path)!r}: cannot write ({err.strerror or err})") from None


def cmd_evaluate(args) -> int:
    import warnings

    from . import families
    from .api import AUTO, evaluate

    plot = check_plot_path(args.plot) if args.plot else None
    names = list(dict.fromkeys(args.evaluator or ["ece_es_cv"]))
    for name in names:                   # an unknown name fails before any work
        if name == AUTO:
            continue
        try:
            families.entry(name)
        except KeyError as err:
            raise ValueError(f"--evaluator {name}: {err} (evaluators are the calibration-map "
                             "families: `fitontest families` lists them)") from None
    reading, y = read_predictions(args.pred, args.labels, args.labels_key, args.key, args.kind,
                                  say=lambda line: print(f"fitontest evaluate: {line}",
                                                         file=sys.stderr))
    probs = reading.probs           # decided once (and said) above; declared from here on
    p = "max" if args.p == "max" else int(args.p)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = [evaluate(probs, y, evaluator=name, mode=args.mode, classes=args.classes, p=p,
                            from_logits=False, interval=args.interval,
                            test=None if args.test == "none" else args.test)
                   for name in names]
        for r in results:               # auto: which number this is, and why
            if r.note:
                print(r.note, file=sys.stderr if args.json else sys.stdout, flush=True)
        if plot:
            from .api import to_numpy
            _plot(probs, to_numpy(y, "labels"), results, args.mode, plot)
    for message in dict.fromkeys(str(w.message).splitlines()[0] for w in caught):
        print(f"fitontest evaluate: warning: {message}", file=sys.stderr)
    if args.json:
        print(json.dumps([r.to_dict() for r in results], indent=2))
    else:
        print(result_table(results))
        notes = validity_notes(results)
        if notes:
            print("\n".join(notes))
        if plot:
            print(f"reliability diagram: {plot}")
    return 0


# -------------------------------------------------------------------- choose


def cmd_choose(args) -> int:
    from .choose import choose_evaluator

    reading, y = read_predictions(args.pred, args.labels, args.labels_key, args.key, args.kind,
                                  say=lambda line: print(f"fitontest choose: {line}",
                                                         file=sys.stderr))
    choice = choose_evaluator(reading.probs, y, criterion=args.criterion, mode=args.mode,
                              classes=args.classes, p=int(args.p), from_logits=False,
                              candidates=args.candidate, with_pl=args.with_pl,
                              n_worlds=args.worlds, seed=args.seed,
                              interval=args.interval or None, n_jobs=args.jobs)
    print(json.dumps(choice.to_dict(), indent=2) if args.json else choice.table())
    return 0


# ------------------------------------------------------------------ families
#: printed once above the list, so that the one-line summaries can abbreviate
ABBREVIATIONS = (
    "CE = calibration error; ECE = expected calibration error (the binning estimator); "
    "smECE = smooth ECE; KCE = kernel calibration error; ES / EW = equal-size / "
    "equal-width bins; CV = cross-validation; PL = piecewise linear (PL3: piecewise linear "
    "in logit space); KDE = kernel density estimate; MSE = mean squared error; loss=ce = "
    "cross-entropy (log-loss) training loss; ODIR = off-diagonal and intercept "
    "regularisation; CMEE = calibration-map estimation error (the workflow's score of an "
    "evaluator).")


def _summary(obj) -> str:
    """The first line of a docstring (the one-line summary), plain text."""
    doc = (obj.__doc__ or "").strip()
    return doc.splitlines()[0].strip().replace("``", "") if doc else ""


def _params(defaults: dict) -> str:
    return f" ({', '.join(f'{k}={v}' for k, v in defaults.items())})" if defaults else ""


def family_rows() -> list[tuple[str, str, str]]:
    """(name, kind, description) of every registered family, then every
    multi-class calibrator; the description is the class's one-line summary
    with the parameters the name is registered with."""
    from . import families, multiclass

    rows = []
    for name in families.names():
        cls = families.entry(name)
        kind = "binary, map" if cls.provides_map else "binary, estimate-only"
        rows.append((name, kind, _summary(cls) + _params(families.FAMILIES.defaults(name))))
    for name in multiclass.names():
        rows.append((name, "multi-class calibrator",
                     _summary(multiclass.entry(name))
                     + _params(multiclass.MULTICLASS.defaults(name))))
    return rows


def cmd_families(args) -> int:
    import textwrap

    rows = family_rows()
    if args.json:
        print(json.dumps([dict(zip(("name", "kind", "description"), r)) for r in rows],
                         indent=2))
        return 0
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    print(textwrap.fill(ABBREVIATIONS, 100))
    groups = [("Evaluators: binary calibration-map families (fitontest evaluate --evaluator "
               "NAME; also binary calibrators)", lambda kind: kind.startswith("binary")),
              ("Multi-class calibrators (CalibratedClassifier(method=NAME), the workflow's "
               "calibrators; not evaluators)", lambda kind: not kind.startswith("binary"))]
    for title, member in groups:
        print(f"\n{title}:")
        for name, kind, desc in rows:
            if member(kind):
                print(f"{name.ljust(w0)}  {kind.ljust(w1)}  {desc}")
    return 0


# --------------------------------------------------------------------- bench
def resolve_evaluator(target: str) -> tuple[str, str | None]:
    """(registered name, plugin spec or None) of a name or ``module[:Class]``."""
    from . import families
    from .core.registry import absolute_spec, use_plugins

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

    from .report.aggregate import aggregate_units
    from .inference.stats import pairwise_better, rank_bounds

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
    from .report import policy
    from .report.findings import best_claim

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
    import shutil

    return shutil.which("snakemake") or "snakemake"


def find_snakefile(given) -> Path:
    candidates = [Path(given)] if given else [Path.cwd() / "Snakefile",
                                              Path(__file__).resolve().parents[2] / "Snakefile"]
    for c in candidates:
        if c.is_file():
            return c.resolve()
    raise ValueError("no Snakefile found: run from the fitontest repository or pass "
                     "--snakefile")


def cmd_bench(args) -> int:
    import pandas as pd
    import yaml

    from .core.io import atomic_path
    from .study import jobstats

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


# ---------------------------------------------------------------- jobs, pins
def cmd_jobs(args) -> int:
    from .study import jobstats

    return jobstats.run(args)


def cmd_pins(args) -> int:
    from .core import pins

    return pins.main(env=args.env)


# ---------------------------------------------------------------------- main
COMMANDS = {"evaluate": cmd_evaluate, "choose": cmd_choose, "families": cmd_families,
            "bench": cmd_bench, "jobs": cmd_jobs, "pins": cmd_pins}


def run(args) -> int:
    """Run the command parsed by :func:`fitontest_cli.parse_args`; the exit
    status. Bad input is one line on stderr and status 2."""
    from .core.extras import MissingExtraError

    try:
        return COMMANDS[args.command](args)
    except (ValueError, KeyError, MissingExtraError) as err:
        # one line: the message's first (a numpy or pandas message may run on)
        text = (str(err.args[0]) if type(err) is KeyError and err.args else str(err)).strip()
        line = text.splitlines()[0] if text else repr(err)
        print(f"fitontest {args.command}: error: {line}", file=sys.stderr)
        return 2
    except BrokenPipeError:                # `fitontest families | head`: not an error
        sys.stderr.close()
        return 0


def main(argv=None) -> int:
    """``fitontest`` in this process; the console script
    :func:`fitontest_cli.main` parses first, then imports the library."""
    return run(parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
