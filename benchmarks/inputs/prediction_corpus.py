"""Prediction files as people export them, read by every entry point (issue 46).

Generates a corpus of K-class predictions stored the usual ways -- K in
{2, 10, 100, 1000}; probabilities exact, rounded to 2 / 3 / 4 / 6 decimals
and float16; logits raw, shifted (+3), shifted to a zero minimum per row
(non-negative: no rule can tell them from probabilities-like scores),
temperature-scaled and log-softmax; exact probabilities with corrupted rows
(row 1 holding 1.2 and -0.2, 1 % of the rows so, row 1 NaN, row 1 all zeros:
issue 56); each in an .npz under one of the common array names (the names
rotate, so probabilities also sit under ``logits`` and logits under
``probs``), a .csv written by pandas and a .parquet -- and reads each file
through the three entry points:

- the API: the array loaded as a user would (``np.load``, ``pd.read_csv``,
  ``pd.read_parquet``) and handed to ``fitontest.evaluate``;
- the CLI: ``fitontest evaluate FILE --json`` (in this process);
- the workflow's logit source: ``fitontest.data.logits.load`` (one-pair file,
  split in halves; the rows put back in order).

For each: the kind it read (or its error), the class probabilities it leads
to, and the top-label ECE (ece_es15) beside the exact one (the unrounded
probabilities). A *silent misread* is a file read without error as the wrong
kind; a non-negative logit file must stop with the error that names the
switch; a corrupted file must stop with an error naming its bad rows
(``rows named``: the count and the first of them). The entry points *agree*
on a file when they read the same kind and
probabilities equal to 1e-9: the workflow stores logits (the log of the
probabilities), so its softmax returns them to within a few ulps, and an
equal-size-bin ECE may move a tied score across a bin edge on such a
difference (printed as the ECE spread).

Rounded rows (issue 56): probabilities rounded to 3 / 4 decimals miss 1 by
up to K half-units; the door brings them to 1 by the nearest shift
(fitontest.core.predictions.to_simplex). For K = 10 / 100 / 1000, the
corpus model and a flatter one (logits halved: more mass in classes that
round to 0), the second table gives ``ece_es_cv`` of the exact rows, of the
door's reading, of the rows divided by their sums (the rule before) and of
the top-label confidences as stored, with the largest move of a
confidence by the door beside the rounding's half-unit.

    python benchmarks/inputs/prediction_corpus.py [--n 2000] [--k 2,10,100,1000]
        [--out benchmarks/measured/prediction_corpus.md]
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import log_softmax, softmax

#: (variant, what the array truly holds); "ambiguous": a clear error is the right outcome
VARIANTS = (("exact", "probabilities"), ("round2", "probabilities"),
            ("round3", "probabilities"), ("round4", "probabilities"),
            ("round6", "probabilities"), ("float16", "probabilities"),
            ("logits", "logits"), ("shifted", "logits"), ("nonneg", "ambiguous"),
            ("temp", "logits"), ("logsoftmax", "logits"),
            ("bad1row", "corrupted"), ("bad1pct", "corrupted"), ("nanrow", "corrupted"),
            ("zerorow", "corrupted"))
STORAGE = ("npz", "csv", "parquet")
NAMES = ("probs", "probabilities", "predictions", "logits", "scores")
LABEL_NAMES = ("labels", "label", "y", "y_true", "target")
EVALUATOR = "ece_es15"
#: the rounding comparison's evaluator (the chooser's default pick, issue 56's number)
ROUND_EVALUATOR = "ece_es_cv"


def model(k: int, n: int, seed: int = 0):
    """(logits, labels): an over-confident K-class model (labels drawn from the
    softmax of the logits at temperature 1.5), peaked enough that small
    classes round to 0."""
    rng = np.random.default_rng([seed, k])
    z = rng.normal(size=(n, k)) * (2.0 + np.log(k))
    z[np.arange(n), rng.integers(0, k, n)] += 3.0
    q = softmax(z / 1.5, axis=1)
    y = (rng.random(n)[:, None] > np.cumsum(q, axis=1)[:, :-1]).sum(axis=1)
    return z, y.astype(np.int64)


def bad_rows(name: str, n: int) -> np.ndarray:
    """The rows a corrupted variant spoils (sorted; empty for the others)."""
    if name == "bad1pct":
        return np.sort(np.random.default_rng([7, n]).choice(n, max(1, n // 100),
                                                             replace=False))
    return np.array([1]) if name in ("bad1row", "nanrow", "zerorow") else np.array([], int)


def variant(name: str, z: np.ndarray) -> np.ndarray:
    """The array a user would hold after exporting logits ``z`` as ``name``."""
    p = softmax(z, axis=1)
    if name == "exact":
        return p
    if name in ("bad1row", "bad1pct", "nanrow", "zerorow"):
        rows = bad_rows(name, len(p))
        p[rows] = 0.0
        if name == "nanrow":
            p[rows, 0] = np.nan
        elif name != "zerorow":
            p[rows, 0], p[rows, 1] = 1.2, -0.2           # still summing to 1
        return p
    if name.startswith("round"):
        return np.round(p, int(name[5:]))
    if name == "float16":
        return p.astype(np.float16)
    if name == "logits":
        return z
    if name == "shifted":
        return z + 3.0
    if name == "nonneg":
        return z - z.min(axis=1, keepdims=True)
    if name == "temp":
        return z / 2.0
    if name == "logsoftmax":
        return log_softmax(z, axis=1)
    raise ValueError(name)


def truth(name: str, z: np.ndarray) -> np.ndarray:
    """The probabilities the right reading of ``variant(name, z)`` gives."""
    return softmax(z / 2.0 if name == "temp" else z, axis=1)


def write(path: Path, storage: str, a: np.ndarray, y: np.ndarray, i: int) -> Path:
    """Store ``a`` and ``y`` as a user would; the npz names rotate with ``i``."""
    path = path.with_suffix("." + storage)
    if storage == "npz":
        np.savez(path, **{NAMES[i % len(NAMES)]: a, LABEL_NAMES[i % len(LABEL_NAMES)]: y})
    else:
        frame = pd.DataFrame(a, columns=[f"p{j}" for j in range(a.shape[1])]).assign(label=y)
        if storage == "csv":
            frame.to_csv(path, index=False)
        else:
            frame.to_parquet(path, index=False)
    return path


def _outcome(fn):
    """(kind or "error", probabilities or None, ECE or None, message) of one
    entry point's reading."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn()
    except ValueError as err:
        return "error", None, None, str(err).splitlines()[0]


def via_api(path: Path):
    import fitontest
    from fitontest.core import predictions

    if path.suffix == ".npz":
        with np.load(path) as d:
            pred = d[next(k for k in d.files if k in NAMES)]
            y = d[next(k for k in d.files if k in LABEL_NAMES)]
    else:
        frame = pd.read_csv(path) if path.suffix == ".csv" else pd.read_parquet(path)
        pred, y = frame.drop(columns="label"), frame["label"]
    r = predictions.read(pred)                   # what evaluate's class_probabilities reads
    return r.kind, r.probs, fitontest.evaluate(pred, y, evaluator=EVALUATOR,
                                               test=None).estimate, ""


def via_cli(path: Path):
    import fitontest_cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = fitontest_cli.main(["evaluate", str(path), "--evaluator", EVALUATOR, "--test",
                                   "none", "--json"])
    if code != 0:
        return ("error", None, None,
                err.getvalue().strip().removeprefix("fitontest evaluate: error: "))
    from fitontest.core.prediction_files import read_predictions

    r = read_predictions(path)[0]               # the same reading, for its kind
    return r.kind, r.probs, json.loads(out.getvalue())[0]["estimate"], err.getvalue().strip()


def via_workflow(path: Path):
    import fitontest
    from fitontest.data import logits

    f = logits.load(path, split={"n_val": 0.5, "seed": 0})
    n = sum(len(f.data[p][1]) for p in ("val", "test"))
    perm = np.random.default_rng([0, 0]).permutation(n)
    z = np.empty((n, f.data["val"][0].shape[1]))
    y = np.empty(n, dtype=np.int64)
    z[perm[:len(f.data["val"][1])]], y[perm[:len(f.data["val"][1])]] = f.data["val"]
    z[perm[len(f.data["val"][1]):]], y[perm[len(f.data["val"][1]):]] = f.data["test"]
    est = fitontest.evaluate(z, y, evaluator=EVALUATOR, from_logits=True, test=None).estimate
    return f.kind, softmax(z, axis=1), est, "; ".join(f.notes)


ENTRY_POINTS = {"api": via_api, "cli": via_cli, "workflow": via_workflow}


def corpus(directory: Path, n: int, ks, seed: int = 0):
    """Yield (file, k, variant, true kind, exact ECE) for every corpus file
    written under ``directory``."""
    import fitontest

    i = 0
    for k in ks:
        z, y = model(k, n, seed)
        for name, kind in VARIANTS:
            exact = fitontest.evaluate(truth(name, z), y, evaluator=EVALUATOR,
                                       test=None).estimate
            a = variant(name, z)
            for storage in STORAGE:
                path = write(directory / f"k{k}_{name}", storage, a, y, i)
                i += 1
                yield path, k, name, kind, exact


def names_rows(msg: str, rows: np.ndarray, n: int) -> bool:
    """Does an error name the bad rows: their count and the first eight?"""
    return f"{len(rows)} of {n} rows" in msg and all(
        re.search(rf"\brow {i}\b", msg) for i in rows[:8])


def verdict(kind: str, got: str, msg: str = "", rows=(), n: int = 0) -> str:
    """right / clear error / rows named / SILENT MISREAD of one reading."""
    if got == "error":
        if kind == "corrupted":
            return "rows named" if names_rows(msg, np.asarray(rows), n) else "rows unnamed"
        return "clear error" if kind == "ambiguous" else "refused"
    if kind == "corrupted":
        return "SILENT MISREAD"
    return "right" if got == kind else "SILENT MISREAD"


def run(n: int, ks, seed: int = 0, directory: Path | None = None) -> pd.DataFrame:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for path, k, name, kind, exact in corpus(Path(directory or tmp), n, ks, seed):
            row = {"file": path.name, "K": k, "variant": name, "storage": path.suffix[1:],
                   "truth": kind, "exact_ece": exact}
            probs = {}
            for ep, fn in ENTRY_POINTS.items():
                got, probs[ep], est, msg = _outcome(lambda: fn(path))
                row.update({ep: got, f"{ep}_ece": est, f"{ep}_msg": msg,
                            f"{ep}_verdict": verdict(kind, got, msg, bad_rows(name, n), n)})
            read = [q for q in probs.values() if q is not None]
            row["probs_diff"] = (max(float(np.abs(q - read[0]).max()) for q in read)
                                 if len(read) == len(probs) else np.nan)
            rows.append(row)
    return pd.DataFrame(rows)


def rounding(n: int, ks=(10, 100, 1000), digits=(3, 4), seed: int = 0) -> pd.DataFrame:
    """One row per (model, K, d): ``ROUND_EVALUATOR`` of the exact rows, of the
    door's reading of the rounded rows, of the rounded rows divided by their
    sums, and of the top-label confidences as stored; the row sums and the
    largest move of a confidence by the door."""
    import fitontest
    from fitontest.api import evaluate_binary
    from fitontest.core import predictions

    def ece(p, y):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fitontest.evaluate(p, y, evaluator=ROUND_EVALUATOR, test=None).estimate

    rows = []
    for model_name, scale in (("corpus", 1.0), ("flat", 0.5)):
        for k in ks:
            z, y = model(k, n, seed)
            p = softmax(scale * z, axis=1)
            for d in digits:
                r = np.round(p, d)
                door = predictions.read(r).probs
                top = np.arange(n), r.argmax(axis=1)
                rows.append({
                    "model": model_name, "K": k, "d": d, "sum_min": r.sum(axis=1).min(),
                    "sum_max": r.sum(axis=1).max(), "exact": ece(p, y), "door": ece(r, y),
                    "divided": ece(r / r.sum(axis=1, keepdims=True), y),
                    "stored": evaluate_binary(ROUND_EVALUATOR, r[top],
                                              (top[1] == y).astype(int)).estimate,
                    "moved": float(np.abs(door[top] - r[top]).max()),
                    "divided_moved": float(np.abs(1 / r.sum(axis=1) - 1).max()),
                    "half_unit": 0.5 * 10.0 ** -d})
    return pd.DataFrame(rows)


def rounding_lines(frame: pd.DataFrame) -> list[str]:
    lines = ["", f"## Rounded rows: `{ROUND_EVALUATOR}` of the exact rows and of the rounded "
             "ones", "", "Door: the door's reading (rows shifted to sum to 1); divided: rows "
             "divided by their sums (the rule before issue 56); as stored: the rounded "
             "top-label confidences, unchanged. Moved: the largest change of a confidence by "
             "the door; half-unit: the most rounding moved it; division's move: the largest "
             "relative change of a confidence by division.", "",
             "| model | K | decimals | row sums | exact | door | divided | as stored | "
             "moved | half-unit | division's move |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for _, r in frame.iterrows():
        lines.append(f"| {r.model} | {r.K} | {r.d} | {r.sum_min:.3f}–{r.sum_max:.3f} | "
                     f"{r.exact:.4f} | {r.door:.4f} | {r.divided:.4f} | {r.stored:.4f} | "
                     f"{r.moved:.1e} | {r.half_unit:.0e} | {100 * r.divided_moved:.1f} % |")
    worst = lambda c: 1e3 * (frame[c] - frame.exact).abs().max()
    lines += ["", f"- largest |ECE - exact ECE| (x 1e-3): door {worst('door'):.2f}, divided "
              f"{worst('divided'):.2f}, as stored {worst('stored'):.2f}; largest "
              f"|door - as stored| {1e3 * (frame.door - frame.stored).abs().max():.2f}",
              f"- the door moved a confidence by more than the rounding's half-unit in "
              f"**{int((frame.moved > frame.half_unit * (1 + 1e-9)).sum())}** of {len(frame)} "
              "cases"]
    return lines


def report(frame: pd.DataFrame, cmd: str, seconds: tuple[float, float],
           shifts: pd.DataFrame | None = None) -> str:
    eps = list(ENTRY_POINTS)
    verdicts = frame[[f"{e}_verdict" for e in eps]]
    agree = (frame[eps].nunique(axis=1) == 1) & \
        ((frame.api == "error") | (frame.probs_diff <= 1e-9))
    spread = frame[[f"{e}_ece" for e in eps]].apply(lambda r: np.ptp(r.to_numpy(float)),
                                                    axis=1)
    silent = int((verdicts == "SILENT MISREAD").to_numpy().sum())
    rounded = frame[frame.variant.isin(["round3", "round4", "round6"])]
    refused_rounded = int((rounded[[f"{e}_verdict" for e in eps]] != "right").to_numpy().sum())
    err = (frame["api_ece"] - frame["exact_ece"]).abs()
    corrupt = frame[frame.truth == "corrupted"]
    named = int((corrupt[[f"{e}_verdict" for e in eps]] == "rows named").to_numpy().sum())
    lines = [f"# Prediction files through the three entry points (`{cmd}`)", "",
             f"{len(frame)} files, {time.strftime('%Y-%m-%d')}, commit {commit()}; wall "
             f"{seconds[0]:.0f} s, {seconds[1]:.0f} CPU-s (this process) on {machine()}.", "",
             f"- silent misreads (read as the wrong kind, no error): **{silent}**",
             f"- corrupted-row files stopped by an error naming the bad rows: **{named}** of "
             f"{len(corrupt) * len(eps)} readings",
             f"- probabilities rounded to >= 3 decimals not read as probabilities: "
             f"**{refused_rounded}** of {len(rounded) * len(eps)} readings",
             f"- API, CLI and workflow agree (the same kind, probabilities equal to 1e-9): "
             f"**{int(agree.sum())} of {len(frame)}** files (largest difference of the "
             f"probabilities {frame.probs_diff.max():.1e}; ECE spread: 0 in "
             f"{int((spread < 1e-9).sum())} files, at most {1e3 * spread.max():.2f} x 1e-3, "
             "a tied score moved across an equal-size bin edge)",
             f"- largest |ECE - exact ECE| of a right reading, by variant (x 1e-3): " +
             ", ".join(f"{v} {1e3 * err[frame.variant == v].max():.2f}"
                       for v in frame.variant.unique() if frame.loc[frame.variant == v,
                                                                    "api"].ne("error").any()),
             "", "| file | K | truth | api | cli | workflow | exact ECE | ECE read | "
             "agree |", "|---|---|---|---|---|---|---|---|---|"]
    for (_, r), a in zip(frame.iterrows(), agree):
        ece = "-" if pd.isna(r.api_ece) else f"{r.api_ece:.4f}"
        lines.append(f"| {r.file} | {r.K} | {r.truth} | {r.api_verdict} | {r.cli_verdict} | "
                     f"{r.workflow_verdict} | {r.exact_ece:.4f} | {ece} | "
                     f"{'yes' if a else 'NO'} |")
    errors = frame[frame.api == "error"]
    if len(errors):
        lines += ["", "The errors (API wording; the CLI and the workflow name their own "
                  "switch):", ""]
        lines += [f"- `{r.file}`: {r.api_msg}" for _, r in errors.drop_duplicates(
            ["K", "variant"]).iterrows()]
    if shifts is not None:
        lines += rounding_lines(shifts)
    return "\n".join(lines) + "\n"


def machine() -> str:
    """The machine in words: its cores and its load when the report was written."""
    import os

    return (f"{os.cpu_count()} cores, load average "
            f"{', '.join(f'{x:.2f}' for x in os.getloadavg())} at the end")


def commit() -> str:
    """The repository's commit (short), with ``+`` when the code measured here (the
    package, this script) differs from it."""
    import subprocess

    def git(*args):
        return subprocess.run(["git", *args], capture_output=True, text=True,
                              cwd=Path(__file__).resolve().parent).stdout.strip()

    return (git("rev-parse", "--short", "HEAD") or "unknown") + \
        ("+" if git("status", "--porcelain", "--", "../../src", ".") else "")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--k", default="2,10,100,1000")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="")
    a = ap.parse_args(argv)
    t0, c0 = time.perf_counter(), time.process_time()
    frame = run(a.n, [int(k) for k in a.k.split(",")], a.seed)
    rounded = rounding(a.n, seed=a.seed)
    cmd = "python benchmarks/inputs/prediction_corpus.py" + "".join(
        f" {x}" for x in (argv if argv is not None else __import__("sys").argv[1:]))
    text = report(frame, cmd, (time.perf_counter() - t0, time.process_time() - c0), rounded)
    print(text)
    if a.out:
        Path(a.out).write_text(text)


if __name__ == "__main__":
    main()
