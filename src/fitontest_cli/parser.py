"""The command line of ``fitontest``: every subcommand, option and help text.

Only the standard library is imported here, so that ``fitontest --help``, every
``fitontest COMMAND --help`` and every usage error are answered before numpy,
scikit-learn or the library itself is loaded (:mod:`fitontest_cli`). The
commands themselves are :mod:`fitontest_cli.commands`.
"""
from __future__ import annotations

import argparse
import sys


def add_kind(parser: argparse.ArgumentParser) -> None:
    """--kind and its older spelling --from-logits (= --kind logits)."""
    parser.add_argument("--kind", choices=["auto", "probabilities", "logits"], default=None,
                        help="what PRED holds: auto (default) lets the rows decide (a negative "
                        "entry: logits; rows in [0, 1] summing to 1 within their rounding: "
                        "probabilities); probabilities (rows renormalised) or logits (a "
                        "softmax, a sigmoid for one column) declare it; rows that contradict "
                        "the declared kind are an error")
    parser.add_argument("--from-logits", action="store_true",
                        help="the same as --kind logits")


def build_parser() -> argparse.ArgumentParser:
    """The parser of every subcommand (also rendered in the API reference)."""
    parser = argparse.ArgumentParser(
        prog="fitontest", description="Evaluate classifier calibration in the fit-on-test "
        "view: CE estimates of your predictions, the registered evaluators and calibrators, "
        "and the study's workflow.",
        epilog="fitontest COMMAND --help documents each command. Bad input exits with "
        "status 2 and one line on stderr.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    ev = sub.add_parser(
        "evaluate", help="CE (calibration error) estimates of a model's K-class predictions",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Estimate the calibration error (CE) of a model's K-class predictions "
        "with one or\nmore evaluators (fitontest families lists them); the same numbers as "
        "fitontest.evaluate.\n\nPRED formats:\n"
        "  .npz      keys probs | probabilities | predictions | logits | scores (or --key)\n"
        "            and labels | label | y | y_true | target | targets | ground_truth (or\n"
        "            --labels-key), in any case; two candidates are an error (a guessed\n"
        "            name is said on stderr)\n"
        "  .npy      an n x K array (or n values: a binary model's P(class 1)); labels\n"
        "            from --labels\n"
        "  .csv / .parquet\n"
        "            one column per class (one column: P(class 1)) and a label column\n"
        "            named as in .npz (or --labels-key); columns named id, index, idx,\n"
        "            sample, sample_id, image, image_id are ignored\n\n"
        "Probabilities or logits: the rows decide, never the name. Rows in [0, 1] summing\n"
        "to 1 within what their storage loses (rounding to d decimals, float16, bfloat16)\n"
        "are probabilities, brought to sum to 1; probability rows but for a few are an\n"
        "error naming the others; otherwise a negative entry makes them logits, and any\n"
        "other non-negative array is an error until --kind says which.\n"
        "Bad input: one line on stderr, exit status 2, nothing written.")
    ev.add_argument("pred", metavar="PRED", help="predictions: .npz, .npy, .csv or .parquet "
                    "(formats above)")
    ev.add_argument("--labels", metavar="FILE",
                    help="labels file (.npy, .npz, .csv, .parquet or text), when PRED has none")
    ev.add_argument("--labels-key", metavar="KEY",
                    help="npz key or table column of the labels (default: the one of labels, "
                    "label, y, y_true, target, targets, ground_truth)")
    ev.add_argument("--key", metavar="KEY", help="npz key of the predictions (default: the one of "
                    "probs, probabilities, predictions, logits, scores, or the only 2-D array)")
    ev.add_argument("--evaluator", action="append", metavar="NAME",
                    help="a calibration-map family from `fitontest families` (repeatable; "
                    "default ece_es_cv), or auto: the one `fitontest choose` recommends for "
                    "these data (one line says which and why)")
    ev.add_argument("--mode", choices=["confidence", "classwise", "ovr"], default="confidence",
                    help="binary task(s) to evaluate: confidence = the top label (default); "
                    "classwise = every class vs the rest, averaged; ovr = the classes named "
                    "by --classes vs the rest")
    ev.add_argument("--classes", type=int, nargs="+", metavar="K",
                    help="class indices for --mode classwise (default all) or ovr (required "
                    "for K > 2)")
    ev.add_argument("--p", choices=["1", "2", "max"], default="1",
                    help="the CE's norm: 1 (absolute, default), 2 (squared) or max (the "
                    "maximum CE; binning families only)")
    add_kind(ev)
    ev.add_argument("--interval", type=float, metavar="LEVEL",
                    help="add a bootstrap interval at this level (e.g. 0.9)")
    ev.add_argument("--test", choices=["kuiper", "ks", "tcal", "consistency", "none"],
                    default="kuiper", help="test of perfect calibration whose p-value is "
                    "printed (Bonferroni over classes in the 'all' row): kuiper (default), ks "
                    "(O(n log n)), tcal, consistency (Monte Carlo, around the evaluator), none")
    ev.add_argument("--plot", metavar="OUT.png",
                    help="also write the smooth reliability diagram of the confidence task "
                    "(ovr / classwise: of the first class) to this image file")
    ev.add_argument("--json", action="store_true", help="print JSON instead of a table")

    ch = sub.add_parser(
        "choose", help="which evaluator to trust on these predictions: each candidate's "
        "expected error in worlds shaped like the data",
        description="Recommend the evaluator for these predictions (fitontest.choose_evaluator,"
        " docs/methods/14-chooser.md §14): worlds shaped like the data (the scores resampled, "
        "true maps the data cannot rule out, labels redrawn at the same n) score every candidate "
        "against a known truth; the table gives each one's expected CE error and CMEE with "
        "Monte Carlo SEs, * marks those not significantly worse than any other, and the "
        "recommended one's estimate and interval on the data follow. PRED formats and input "
        "options as `fitontest evaluate`.")
    ch.add_argument("pred", metavar="PRED", help="predictions: .npz, .npy, .csv or .parquet")
    ch.add_argument("--labels", metavar="FILE", help="labels file, when PRED has none")
    ch.add_argument("--labels-key", metavar="KEY", help="npz key or table column of the labels")
    ch.add_argument("--key", metavar="KEY", help="npz key of the predictions")
    ch.add_argument("--mode", choices=["confidence", "classwise", "ovr"], default="confidence",
                    help="binary task(s), as `fitontest evaluate` (default confidence)")
    ch.add_argument("--classes", type=int, nargs="+", metavar="K",
                    help="class indices for --mode classwise / ovr")
    ch.add_argument("--p", choices=["1", "2"], default="1", help="the CE's norm (default 1)")
    add_kind(ch)
    ch.add_argument("--criterion", choices=["ce", "map", "ranking"], default="ce",
                    help="what the recommendation minimises: ce = the absolute error of the "
                    "CE estimate (default), map = CMEE (the map's error), ranking = 1 - Spearman "
                    "across temperature-scaled versions of the scores (5x the cost)")
    ch.add_argument("--candidate", action="append", metavar="NAME",
                    help="a candidate evaluator (repeatable; default: the binning, "
                    "parametric, isotonic and smooth families)")
    ch.add_argument("--with-pl", action="store_true",
                    help="also PL and PL3 (pl_ce, pl3_ce; slow, needs fitontest[fast])")
    ch.add_argument("--worlds", type=int, default=40,
                    help="number of worlds (default 40; the SE falls as 1/sqrt)")
    ch.add_argument("--seed", type=int, default=0, help="seed of the worlds (default 0)")
    ch.add_argument("--interval", type=float, default=0.9, metavar="LEVEL",
                    help="level of the recommended evaluator's CE interval (default 0.9; 0: "
                    "none)")
    ch.add_argument("--jobs", type=int, default=1, help="processes over the worlds (default 1)")
    ch.add_argument("--json", action="store_true", help="print JSON instead of a table")

    fa = sub.add_parser("families", help="list the evaluators (calibration-map families) and "
                        "the multi-class calibrators, one line each",
                        description="Every registered calibration-map family (an evaluator "
                        "when fitted on test data, a binary calibrator when fitted on "
                        "validation data) and every multi-class calibrator, with its one-line "
                        "summary and the parameters its name is registered with.")
    fa.add_argument("--json", action="store_true",
                    help="print JSON (name, kind, description) instead of text")

    be = sub.add_parser("bench", help="score one evaluator on both studies and rank it (RUNS "
                        "THE SNAKEMAKE WORKFLOW: minutes to hours)",
                        description="Warning: this runs the Snakemake workflow of the study "
                        "(needs the workflow extra and the repository's Snakefile); on the "
                        "default config a first run takes tens of minutes, and every job it "
                        "starts writes under --directory. TARGET: a registered family name, "
                        "or a module of yours (path/to/module.py or an importable module, "
                        "optionally :ClassName) that registers one. Runs the workflow (only "
                        "the jobs the evaluator adds, when the same exp has run before) and "
                        "ranks the evaluator by mean CMEE (calibration-map estimation error) "
                        "and mean CE-estimation error. Extra arguments after -- go to "
                        "Snakemake (e.g. -- --dry-run).")
    be.add_argument("target", metavar="TARGET",
                    help="a family name or MODULE[:CLASS] registering one")
    be.add_argument("--configfile", help="workflow config (default: config/config.yaml)")
    be.add_argument("--cores", type=int, default=2, help="cores Snakemake may use (default 2)")
    be.add_argument("--directory", help="working directory of the run (default: here)")
    be.add_argument("--snakefile", help="the workflow's Snakefile (default: ./Snakefile or "
                    "the repository's)")
    be.add_argument("--truth", help="truth estimator of the pseudo-real ranking "
                    "(default isotonic)")

    jo = sub.add_parser("jobs", help="per-rule jobs, CPU time, wall time and peak memory of a "
                        "run (from its Snakemake benchmark files)")
    jo.add_argument("results_dir", help="results/<exp> of a finished (or partial) run")
    jo.add_argument("--scale", nargs=2, metavar=("RUN_CONFIG", "TARGET_CONFIG"),
                    help="predict the CPU time of TARGET_CONFIG's grid from this run of "
                         "RUN_CONFIG (equal data sizes: a rehearsal; config/README.md), its "
                         "networks' GPU time from the measured rates, and the wall on one GPU node")
    jo.add_argument("--rates", help="measured GPU rates for --scale (default: the package's, "
                    "benchmarks/measured/gpu_fast_path_h200.md)")
    jo.add_argument("--cores", type=int, default=16, help="the GPU node's cores for --scale "
                    "(default 16)")
    pi = sub.add_parser("pins", help="the CPU pins that give the same bytes on any x86-64 "
                        "CPU, what took in this process, the host and the library versions")
    pi.add_argument("--env", action="store_true", help="print them as `export NAME=value` "
                    "lines, to set before Python starts (docs/reproducibility.md)")
    return parser


def parse_args(argv=None) -> argparse.Namespace:
    """The parsed command line (``argv``, default ``sys.argv[1:]``). Arguments
    after ``--`` go to Snakemake (``fitontest bench ... -- --dry-run``) and are
    returned as ``snakemake_args``. ``--help`` and usage errors exit here
    (status 0 / 2), as argparse does."""
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = []
    if "--" in argv:                       # fitontest bench ... -- SNAKEMAKE ARGS
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1:]
    parser = build_parser()
    args = parser.parse_args(argv)
    args.snakemake_args = extra
    if getattr(args, "from_logits", False):
        if args.kind not in (None, "logits"):
            parser.error(f"--from-logits contradicts --kind {args.kind}")
        args.kind = "logits"
    if hasattr(args, "kind") and args.kind is None:
        args.kind = "auto"
    return args
