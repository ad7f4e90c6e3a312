"""``fitontest evaluate PRED`` and ``fitontest choose PRED``: CE estimates,
intervals and calibration-test p-values of a model's K-class predictions
(:func:`fitontest.evaluate`), with ``--plot`` the smooth reliability diagram;
which evaluator to trust on them (:func:`fitontest.choose_evaluator`).
"""
from __future__ import annotations

import json
import os
import sys
import warnings
from pathlib import Path

import fitontest
from fitontest import families
from fitontest.api import AUTO
from fitontest.core.io import atomic_path
from fitontest.core.prediction_files import read_predictions
from fitontest.core.predictions import to_numpy

# the reliability diagram (matplotlib) and its tasks: imported by --plot alone,
# which evaluate without --plot never pays for

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
    from fitontest.report.figures.smooth import smooth_reliability_diagram
    from fitontest import tasks

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
        results = [fitontest.evaluate(probs, y, evaluator=name, mode=args.mode,
                                      classes=args.classes, p=p, from_logits=False,
                                      interval=args.interval,
                                      test=None if args.test == "none" else args.test)
                   for name in names]
        for r in results:               # auto: which number this is, and why
            if r.note:
                print(r.note, file=sys.stderr if args.json else sys.stdout, flush=True)
        if plot:
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


def cmd_choose(args) -> int:
    reading, y = read_predictions(args.pred, args.labels, args.labels_key, args.key, args.kind,
                                  say=lambda line: print(f"fitontest choose: {line}",
                                                         file=sys.stderr))
    choice = fitontest.choose_evaluator(reading.probs, y, criterion=args.criterion,
                                        mode=args.mode, classes=args.classes, p=int(args.p),
                                        from_logits=False, candidates=args.candidate,
                                        with_pl=args.with_pl, n_worlds=args.worlds,
                                        seed=args.seed, interval=args.interval or None,
                                        n_jobs=args.jobs)
    print(json.dumps(choice.to_dict(), indent=2) if args.json else choice.table())
    return 0


__all__ = ["cmd_evaluate", "cmd_choose", "result_table", "validity_notes", "check_plot_path"]
