"""The ``fitontest`` command (README, "Evaluate your own predictions").

- ``fitontest evaluate PRED``: CE estimates of a model's K-class predictions
  (:func:`fitontest.evaluate`) with one or more evaluators, as a table or JSON;
  ``--plot`` draws the smooth reliability diagram;
- ``fitontest families``: every registered family and multi-class calibrator;
- ``fitontest bench NAME_OR_MODULE[:CLASS]``: scores one evaluator on the
  synthetic and the pseudo-real study through the Snakemake workflow (reusing
  every finished result) and ranks it among the others.
"""
from __future__ import annotations

import argparse
import copy
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from .study import jobstats

LABEL_KEYS = ("labels", "label", "y")
PRED_KEYS = ("probs", "probabilities", "logits", "scores")


# ------------------------------------------------------------------- reading
def _read_table(path: Path):
    import pandas as pd

    return pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)


def read_predictions(path, labels=None, labels_key=None, key=None):
    """(predictions, labels, is_logits) from .npz / .npy / .csv / .parquet (see --help)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"prediction file {str(path)!r} does not exist")
    suffix = path.suffix.lower()
    y, is_logits = None, False
    if suffix == ".npz":
        with np.load(path) as d:
            keys = list(d.keys())
            pred_key = key or next((k for k in PRED_KEYS if k in d), None)
            if pred_key is None:
                two_d = [k for k in keys if d[k].ndim == 2]
                if len(two_d) != 1:
                    raise ValueError(f"{path.name}: name the prediction array with --key "
                                     f"(keys: {keys})")
                pred_key = two_d[0]
            if pred_key not in d:
                raise ValueError(f"{path.name} has no key {pred_key!r} (keys: {keys})")
            pred = d[pred_key]
            is_logits = pred_key == "logits"
            lk = labels_key or next((k for k in LABEL_KEYS if k in d), None)
            if labels is None:
                if lk is None or lk not in d:
                    raise ValueError(f"{path.name}: no labels; pass --labels FILE or "
                                     f"--labels-key KEY (keys: {keys})")
                y = d[lk]
    elif suffix == ".npy":
        pred = np.load(path)
    elif suffix in (".csv", ".parquet"):
        frame = _read_table(path)
        lk = labels_key or next((k for k in LABEL_KEYS if k in frame.columns), None)
        if labels is None:
            if lk is None or lk not in frame.columns:
                raise ValueError(f"{path.name}: no label column; pass --labels FILE or "
                                 f"--labels-key COLUMN (columns: {list(frame.columns)})")
            y = frame[lk].to_numpy()
        pred = frame.drop(columns=[lk] if lk in frame.columns else []).to_numpy()
    else:
        raise ValueError(f"unsupported prediction file type {suffix!r}: use .npz, .npy, "
                         ".csv or .parquet")
    if labels is not None:
        y = read_labels(labels, labels_key)
    if y is None:
        raise ValueError(f"{path.name} holds no labels: pass --labels FILE")
    return pred, y, is_logits


def read_labels(path, key=None) -> np.ndarray:
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"labels file {str(path)!r} does not exist")
    suffix = path.suffix.lower()
    if suffix == ".npy":
        return np.load(path)
    if suffix == ".npz":
        with np.load(path) as d:
            k = key or next((k for k in LABEL_KEYS if k in d), None)
            if k is None or k not in d:
                raise ValueError(f"{path.name}: pass --labels-key (keys: {list(d.keys())})")
            return d[k]
    if suffix in (".csv", ".parquet"):
        frame = _read_table(path)
        k = key or next((k for k in LABEL_KEYS if k in frame.columns), frame.columns[0])
        return frame[k].to_numpy()
    return np.loadtxt(path)


# ------------------------------------------------------------------ evaluate
def _fmt(v):
    return "-" if v is None else f"{v:.6f}"


def _interval(iv):
    return "-" if iv is None else f"[{iv.lo:.6f}, {iv.hi:.6f}]"


def result_table(results) -> str:
    rows = [("evaluator", "mode", "class", "p", "estimate", "debiased", "hyper", "interval")]
    for r in results:
        rows.append((r.evaluator, r.mode, "all" if r.per_class else "-", str(r.p),
                     _fmt(r.estimate), _fmt(r.debiased), _fmt(r.hyper), _interval(r.interval)))
        for k, c in r.per_class.items():
            if len(r.per_class) > 1:
                rows.append(("", "", str(k), "", _fmt(c.estimate), _fmt(c.debiased),
                             _fmt(c.hyper), _interval(c.interval)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def cmd_evaluate(args) -> int:
    from .api import class_probabilities, evaluate, to_numpy
    from .study import tasks

    pred, y, is_logits = read_predictions(args.pred, args.labels, args.labels_key, args.key)
    from_logits = args.from_logits or is_logits
    p = "max" if args.p == "max" else int(args.p)
    results = [evaluate(pred, y, evaluator=name, mode=args.mode, classes=args.classes, p=p,
                        from_logits=from_logits, interval=args.interval)
               for name in (args.evaluator or ["ece_es_cv"])]
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        from .core.io import atomic_path
        from .report.figures.smooth import smooth_reliability_diagram

        probs = class_probabilities(pred, from_logits)
        if args.mode == "confidence" or not results[0].per_class:
            s, yb = tasks.confidence(probs, to_numpy(y, "labels"))
            title = "confidence (top label)"
        else:
            k = next(iter(results[0].per_class))
            s, yb = tasks.one_vs_rest(probs, to_numpy(y, "labels"), k)
            title = f"class {k} vs rest"
        ax = smooth_reliability_diagram(s, yb, title=title)
        with atomic_path(args.plot) as tmp:
            ax.figure.savefig(tmp, format=Path(args.plot).suffix.lstrip(".") or "png",
                              dpi=120, bbox_inches="tight")
    if args.json:
        print(json.dumps([r.to_dict() for r in results], indent=2))
    else:
        print(result_table(results))
        if args.plot:
            print(f"reliability diagram: {args.plot}")
    return 0


# ------------------------------------------------------------------ families
def family_rows() -> list[tuple[str, str, str]]:
    from . import families, multiclass

    def first_line(obj):
        doc = (obj.__doc__ or "").strip()
        return doc.splitlines()[0].strip() if doc else ""

    rows = []
    for name in families.names():
        cls = families.entry(name)
        kind = "map" if getattr(cls, "provides_map", True) else "estimate-only"
        defaults = families.FAMILIES.defaults(name)
        extra = f" [{', '.join(f'{k}={v}' for k, v in defaults.items())}]" if defaults else ""
        rows.append((name, f"binary, {kind}", first_line(cls) + extra))
    for name in multiclass.names():
        rows.append((name, "multi-class calibrator", first_line(multiclass.entry(name))))
    return rows


def cmd_families(args) -> int:
    rows = family_rows()
    if args.json:
        print(json.dumps([dict(zip(("name", "kind", "description"), r)) for r in rows],
                         indent=2))
        return 0
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    for name, kind, desc in rows:
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
    """``base`` with ``name`` added to the evaluators (and ``spec`` to the plugins)."""
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
    return cfg


def ranking(frame, value: str, inference):
    """Per evaluator: the tables' cell (mean over the policy's independent
    clusters, 95 % interval), rank (1 = smallest) and whether it is not
    significantly worse than any other (the tables' markers)."""
    import pandas as pd

    from .report.aggregate import aggregate_units
    from .report.stats import significance_markers

    cells = aggregate_units(frame, value, [], inference.units, clusters=inference.clusters)
    out = pd.DataFrame({"mean": cells.mean.iloc[0], "lo": cells.lo.iloc[0],
                        "hi": cells.hi.iloc[0]}).dropna(subset=["mean"])
    out["rank"] = out["mean"].rank(method="min").astype(int)
    wide = next(iter(cells.units.values()))[out.index]
    out["tied"] = significance_markers(wide, min_clusters=inference.min_clusters)\
        .reindex(out.index).fillna(False)
    return out


def bench_report(frame, name: str, title: str, truth: str | None) -> str:
    from .report import policy

    truth = policy.pick_truth(frame["truth"], truth)
    f = frame[frame["truth"] == truth]
    synthetic = "shape" in f.columns
    inference = policy.inference_for("synthetic" if synthetic else "scores")
    units = inference.clusters
    over = ("shape, CE level, size and seed" if synthetic
            else "model, task, calibrator, size and seed")
    cmee, err = ranking(f, "cmee", inference), ranking(f, "ce_error", inference)
    evaluators = sorted(set(f["evaluator"]), key=lambda e: (
        cmee["mean"].get(e, np.inf), e))
    lines = [f"{title} (truth: {truth}; means over every {over}; 95 % interval over the "
             f"independent clusters ({', '.join(units)}); * = not significantly worse than "
             f"any other)",
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
        def where(m, what):
            if name not in m.index:
                return f"no {what}"
            verdict = ("best or tied with it" if m.loc[name, "tied"]
                       else "significantly worse than the best")
            return f"{what} rank {m.loc[name, 'rank']} of {len(m)} ({verdict})"
        lines.append(f"{name}: {where(cmee, 'CMEE')}, {where(err, 'CE error')}")
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
                           args.truth if "synthetic" not in target else None))
    return 0


# ---------------------------------------------------------------------- main
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fitontest", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    ev = sub.add_parser("evaluate", help="CE estimates of a model's K-class predictions",
                        description="PRED: .npz (keys probs | logits | scores, and labels; "
                        "'logits' implies --from-logits), .npy (an n x K array; labels via "
                        "--labels), .csv / .parquet (one column per class plus a label "
                        "column 'label' / 'labels' / 'y', or --labels-key).")
    ev.add_argument("pred", help="predictions: .npz, .npy, .csv or .parquet")
    ev.add_argument("--labels", help="labels file (.npy, .npz, .csv, .parquet, .txt)")
    ev.add_argument("--labels-key", help="key / column of the labels")
    ev.add_argument("--key", help="npz key of the predictions (default: probs, logits, ...)")
    ev.add_argument("--evaluator", action="append",
                    help="a registered family (repeatable; default ece_es_cv)")
    ev.add_argument("--mode", choices=["confidence", "classwise", "ovr"], default="confidence")
    ev.add_argument("--classes", type=int, nargs="+", help="classes for classwise / ovr")
    ev.add_argument("--p", choices=["1", "2", "max"], default="1",
                    help="1 (absolute), 2 (squared) or max (binning families)")
    ev.add_argument("--from-logits", action="store_true", help="the predictions are logits")
    ev.add_argument("--interval", type=float, metavar="LEVEL",
                    help="bootstrap interval at this level (e.g. 0.9)")
    ev.add_argument("--plot", metavar="OUT.png",
                    help="write the smooth reliability diagram of the confidence task "
                    "(ovr / classwise: of the first class)")
    ev.add_argument("--json", action="store_true", help="print JSON instead of a table")
    ev.set_defaults(func=cmd_evaluate)

    fa = sub.add_parser("families", help="list the registered families and calibrators")
    fa.add_argument("--json", action="store_true")
    fa.set_defaults(func=cmd_families)

    be = sub.add_parser("bench", help="score one evaluator on both studies and rank it",
                        description="TARGET: a registered family name, or a module of yours "
                        "(path/to/module.py or an importable module, optionally :ClassName) "
                        "that registers one. Runs the workflow (only the jobs the evaluator "
                        "adds, when the same exp has run before) and ranks the evaluator by "
                        "mean CMEE and mean CE-estimation error. Extra arguments after -- go "
                        "to Snakemake.")
    be.add_argument("target")
    be.add_argument("--configfile", help="workflow config (default: config/config.yaml)")
    be.add_argument("--cores", type=int, default=2)
    be.add_argument("--directory", help="working directory of the run (default: here)")
    be.add_argument("--snakefile", help="the workflow's Snakefile (default: found)")
    be.add_argument("--truth", help="truth estimator of the pseudo-real ranking "
                    "(default isotonic)")
    be.set_defaults(func=cmd_bench)

    jo = sub.add_parser("jobs", help="per-rule jobs, CPU time, wall time and peak memory of a "
                        "run (from its Snakemake benchmark files)")
    jo.add_argument("results_dir", help="results/<exp> of a finished (or partial) run")
    jo.add_argument("--scale", nargs=2, metavar=("RUN_CONFIG", "TARGET_CONFIG"),
                    help="predict the CPU time of TARGET_CONFIG's grid from this run of "
                         "RUN_CONFIG (equal data sizes: a rehearsal; config/README.md)")
    jo.set_defaults(func=lambda args: jobstats.main(
        [args.results_dir, *(["--scale", *args.scale] if args.scale else [])]))
    return parser


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = []
    if "--" in argv:                       # fitontest bench ... -- SNAKEMAKE ARGS
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1:]
    args = build_parser().parse_args(argv)
    args.snakemake_args = extra
    try:
        return args.func(args)
    except (ValueError, KeyError) as err:
        print(f"fitontest {args.command}: error: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:                # `fitontest families | head`: not an error
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
