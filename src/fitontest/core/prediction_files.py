"""Reading a model's predictions and labels from files (`fitontest evaluate`,
and the workflow's logit files, fitontest.data.logits).

.npz / .npy / .csv / .parquet, the suffix in any case. A file that is not
what its suffix says, a missing key or column, or a missing optional reader
(pyarrow for .parquet) is one ValueError naming the file, the problem and
the way out; nothing here writes.

Array names: shared prediction files use a handful of names, so an array not
named on the command line is looked for among :data:`PRED_KEYS` and a label
array among :data:`LABEL_KEYS` (any case). One match is used (and said);
two matches are an error that lists both, never a silent pick.

Probabilities or logits: rows that are non-negative and sum to 1 within
:func:`row_sum_tolerance` of their dtype are probabilities
(:func:`looks_like_probabilities`); :func:`log_probabilities` turns them into
logits whose softmax gives them back.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

#: names a label array goes by in shared prediction files (matched in any case)
LABEL_KEYS = ("labels", "label", "y", "y_true", "target", "targets", "ground_truth")
#: names a prediction array goes by (probabilities or logits; matched in any case)
PRED_KEYS = ("probs", "probabilities", "predictions", "logits", "scores")
#: prediction names that say what the array holds; the others ("predictions",
#: "scores") are probabilities when their rows are (:func:`looks_like_probabilities`)
#: and logits otherwise
PROB_NAMES, LOGIT_NAMES = ("probs", "probabilities"), ("logits",)
#: the names the CLI documented first: reading them is not worth a line on stderr
_PLAIN = {"probs", "logits", "labels"}
#: how far from 1 a probability row may sum at least (the workflow's
#: fitontest.study.tasks.ROW_SUM_ATOL), widened for low-precision dtypes
ROW_SUM_ATOL = 1e-4
#: machine epsilon of the float dtypes probabilities arrive in (bfloat16 is
#: torch's / ml_dtypes'; numpy has none of its own)
_EPS = {"bfloat16": 2.0 ** -7, "float16": 2.0 ** -10, "float32": 2.0 ** -23}
#: a zero probability's stand-in before the log: float32's smallest normal
#: number (log = -87.3), as the workflow stores logits in float32
PROB_FLOOR = float(np.finfo(np.float32).tiny)
#: table columns that are neither predictions nor labels (dropped)
ID_COLUMNS = ("id", "ids", "index", "idx", "sample", "sample_id", "image", "image_id",
              "unnamed: 0")
FORMATS = ".npz, .npy, .csv or .parquet"


def row_sum_tolerance(dtype, n_classes: int) -> float:
    """How far from 1 a row of ``n_classes`` entries of ``dtype`` may sum:
    :data:`ROW_SUM_ATOL`, or the rounding of ``n_classes`` entries of a
    low-precision dtype where that is wider (float16: about 1e-3 per entry)."""
    name = str(dtype).removeprefix("torch.")
    return max(ROW_SUM_ATOL, n_classes * _EPS.get(name, 0.0))


def probability_rows(a) -> np.ndarray:
    """Per row of an (n, K) array: is it non-negative, finite and summing to 1
    within :func:`row_sum_tolerance` of its dtype? A 1-D array (a binary
    model's P(class 1)) counts as probabilities where it lies in [0, 1]."""
    a = np.asarray(a)
    x = a.astype(np.float64)
    if x.ndim == 1:
        return np.isfinite(x) & (x >= 0) & (x <= 1)
    atol = row_sum_tolerance(a.dtype, x.shape[1])
    ok = np.isfinite(x).all(axis=1) & (x >= 0).all(axis=1)
    return ok & (np.abs(x.sum(axis=1) - 1.0) <= atol)


def looks_like_probabilities(a) -> bool:
    """True when every row of ``a`` is a probability vector (:func:`probability_rows`).

    >>> looks_like_probabilities([[0.2, 0.8], [1.0, 0.0]]), looks_like_probabilities([[2.0, -1.0]])
    (True, False)
    """
    rows = probability_rows(a)
    return bool(rows.size) and bool(rows.all())


def log_probabilities(p) -> np.ndarray:
    """float64 logits of probability rows: ``log(max(p, PROB_FLOOR))``.

    Their softmax is ``p`` renormalised (exactly ``p`` for rows summing to 1);
    a zero becomes :data:`PROB_FLOOR` (log -87.3), not minus infinity.

    >>> log_probabilities([[0.5, 0.5, 0.0]]).round(2)
    array([[ -0.69,  -0.69, -87.34]])
    """
    return np.log(np.maximum(np.asarray(p, dtype=np.float64), PROB_FLOOR))


def guess_name(names, candidates, what: str, where: str, choose: str) -> str | None:
    """The one name of ``names`` among ``candidates`` (any case), None if none.

    Two or more matches raise ValueError listing them: ``where`` names the
    file, ``choose`` how to pick one (``--labels-key``, ``logits.keys.labels``)."""
    found = [n for n in names if str(n).lower() in candidates]
    if len(found) > 1:
        raise ValueError(f"{where}: {len(found)} arrays could be the {what}: "
                         f"{', '.join(map(repr, found))}; name one with {choose}")
    return found[0] if found else None


def _read_table(path: Path):
    import pandas as pd

    if path.suffix.lower() == ".parquet":
        try:
            return pd.read_parquet(path)
        except ImportError:
            raise ValueError(f"{path.name}: reading .parquet needs pyarrow: pip install "
                             "pyarrow (or save the predictions as .npz or .csv)") from None
        except Exception as err:            # pyarrow's errors share no base class
            raise ValueError(f"{path.name} is not a readable .parquet file "
                             f"({type(err).__name__}: {err})") from None
    try:
        return pd.read_csv(path)
    except (UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise ValueError(f"{path.name} is not a readable .csv file "
                         f"({type(err).__name__}: {err})") from None


def _load_numpy(path: Path, what: str):
    """``np.load`` of a .npz / .npy with one ValueError for a file that is not one."""
    suffix = path.suffix.lower()
    with open(path, "rb") as f:
        head = f.read(6)
    if head[:4] != b"PK\x03\x04" and head != b"\x93NUMPY":
        raise ValueError(f"{path.name} is neither an .npz (zip) nor an .npy file: it does not "
                         f"start like one; the accepted formats are {FORMATS}")
    try:
        obj = np.load(path, allow_pickle=False)
        if isinstance(obj, np.lib.npyio.NpzFile):
            with obj:
                return {k: obj[k] for k in obj.files}      # reads (and checks) every array
        return obj
    except Exception as err:    # zipfile.BadZipFile, EOFError, OSError, ValueError, ...
        raise ValueError(f"{path.name} is not a readable {suffix} file ({what}); "
                         f"it may be truncated or of another format "
                         f"({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''})"
                         ) from None


def _table_predictions(frame, label_col, path: Path):
    """The prediction columns of a table: every column but the label and id
    columns; one column is a binary model's P(class 1)."""
    drop = [c for c in frame.columns
            if c == label_col or str(c).strip().lower() in ID_COLUMNS]
    pred = frame.drop(columns=drop)
    if pred.shape[1] == 0:
        raise ValueError(f"{path.name}: no prediction columns (columns: {list(frame.columns)})")
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    text = [c for c in pred.columns
            if not is_numeric_dtype(pred[c].dtype) or is_bool_dtype(pred[c].dtype)]
    if text:
        raise ValueError(f"{path.name}: column(s) {text} are not numeric; keep one column per "
                         f"class (plus the label column and an id column named one of "
                         f"{list(ID_COLUMNS[:4])})")
    arr = pred.to_numpy()
    return arr[:, 0] if arr.shape[1] == 1 else arr


def _is_logits(name: str, pred) -> bool:
    """Whether the prediction array ``name`` holds logits: by its name where
    that says (probs, probabilities / logits), else by its rows."""
    if name.lower() in LOGIT_NAMES:
        return True
    if name.lower() in PROB_NAMES:
        return False
    return not looks_like_probabilities(pred)


def read_predictions(path, labels=None, labels_key=None, key=None, say=None):
    """(predictions, labels, is_logits) from .npz / .npy / .csv / .parquet (see --help).

    Array names not given are guessed (module doc); ``say`` (a callable
    taking one line) hears which names were read where the guess went beyond
    ``probs`` / ``logits`` and ``labels``."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"prediction file {str(path)!r} does not exist")
    suffix = path.suffix.lower()
    y, is_logits = None, False
    if suffix == ".npz":
        d = _load_numpy(path, "predictions")
        if not isinstance(d, dict):
            raise ValueError(f"{path.name} holds one array, not an .npz archive: name it .npy")
        keys = list(d)
        pred_key = key or guess_name(keys, PRED_KEYS, "predictions", path.name, "--key")
        if pred_key is None:
            two_d = [k for k in keys if d[k].ndim == 2]
            if len(two_d) != 1:
                raise ValueError(f"{path.name}: name the prediction array with --key "
                                 f"(keys: {keys}; recognised: {', '.join(PRED_KEYS)})")
            pred_key = two_d[0]
        if pred_key not in d:
            raise ValueError(f"{path.name} has no key {pred_key!r} (keys: {keys})")
        pred = d[pred_key]
        lk = labels_key
        if labels is None:
            lk = labels_key or guess_name(keys, LABEL_KEYS, "labels", path.name, "--labels-key")
            if lk is None or lk not in d:
                raise ValueError(f"{path.name}: no labels; pass --labels FILE or "
                                 f"--labels-key KEY (keys: {keys}; recognised: "
                                 f"{', '.join(LABEL_KEYS)})")
            y = d[lk]
        if key is not None:                 # named by the user: its name alone decides
            is_logits = key.lower() in LOGIT_NAMES
        else:
            is_logits = _is_logits(pred_key, pred)
        if key is None and not (pred_key in _PLAIN and (lk is None or lk in _PLAIN)):
            kind = "logits" if is_logits else "probabilities"
            why = ("" if pred_key.lower() in PROB_NAMES + LOGIT_NAMES else
                   " (its rows are not probabilities)" if is_logits else
                   " (its rows are probabilities)")
            labelled = f" and {lk!r} as labels" if lk is not None and labels_key is None else ""
            if say is not None:
                say(f"read {pred_key!r} as {kind}{why}{labelled} "
                    "(--key / --labels-key choose others)")
    elif suffix == ".npy":
        pred = _load_numpy(path, "predictions")
        if isinstance(pred, dict):
            raise ValueError(f"{path.name} is an .npz archive: name it .npz")
    elif suffix in (".csv", ".parquet"):
        frame = _read_table(path)
        lk = labels_key or guess_name(frame.columns, LABEL_KEYS, "labels", path.name,
                                      "--labels-key")
        if labels is None:
            if lk is None or lk not in frame.columns:
                raise ValueError(f"{path.name}: no label column; pass --labels FILE or "
                                 f"--labels-key COLUMN (columns: {list(frame.columns)})")
            y = frame[lk].to_numpy()
        pred = _table_predictions(frame, lk, path)
    else:
        raise ValueError(f"unsupported prediction file type {suffix!r}: use {FORMATS}")
    if labels is not None:
        y = read_labels(labels, labels_key)
    if y is None:
        raise ValueError(f"{path.name} holds no labels: pass --labels FILE")
    return pred, y, is_logits


def read_labels(path, key=None):
    """The labels of ``path``: .npy, .npz (``key`` or labels / label / y), a
    .csv / .parquet column (``key``, labels / label / y, or the first), text."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"labels file {str(path)!r} does not exist")
    suffix = path.suffix.lower()
    if suffix in (".npy", ".npz"):
        d = _load_numpy(path, "labels")
        if not isinstance(d, dict):
            return d
        k = key or guess_name(list(d), LABEL_KEYS, "labels", path.name, "--labels-key")
        if k is None or k not in d:
            raise ValueError(f"{path.name}: pass --labels-key (keys: {list(d)})")
        return d[k]
    if suffix in (".csv", ".parquet"):
        frame = _read_table(path)
        k = key or guess_name(frame.columns, LABEL_KEYS, "labels", path.name,
                              "--labels-key") or frame.columns[0]
        if k not in frame.columns:
            raise ValueError(f"{path.name} has no column {k!r} (columns: {list(frame.columns)})")
        return frame[k].to_numpy()
    try:
        return np.loadtxt(path)
    except (ValueError, UnicodeDecodeError) as err:
        raise ValueError(f"{path.name}: labels must be .npy, .npz, .csv, .parquet or a text "
                         f"file of numbers ({type(err).__name__})") from None
