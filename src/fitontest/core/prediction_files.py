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

Probabilities or logits: never by the array's name; the rows decide, or the
``kind`` the user declares (:func:`fitontest.core.predictions.read`, the rule
every entry point shares).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

#: names a label array goes by in shared prediction files (matched in any case)
LABEL_KEYS = ("labels", "label", "y", "y_true", "target", "targets", "ground_truth")
#: names a prediction array goes by (probabilities or logits; matched in any case)
PRED_KEYS = ("probs", "probabilities", "predictions", "logits", "scores")
#: the names the CLI documented first: reading them is not worth a line on stderr
_PLAIN = {"probs", "logits", "labels"}
#: table columns that are neither predictions nor labels (dropped)
ID_COLUMNS = ("id", "ids", "index", "idx", "sample", "sample_id", "image", "image_id",
              "unnamed: 0")
FORMATS = ".npz, .npy, .csv or .parquet"
#: the suffixes read as tables (one column per class and a label column)
TABLES = (".csv", ".parquet")


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


def _reason(reading) -> str:
    """Why the rows settled the kind, for the line that says so."""
    if reading.by == "declared":
        return " (declared)"
    return (" (negative entries: probabilities never are)" if reading.kind == "logits" else
            " (every row non-negative and summing to 1)")


def read_table(path, labels_key=None, need_labels: bool = True, choose: str = "--labels-key"):
    """(predictions, labels or None, label column) of a .csv / .parquet table:
    one column per class (one column: P(class 1)), the label column named
    ``labels_key`` or one of :data:`LABEL_KEYS`, id columns dropped. ``choose``
    names the switch that picks the label column (in errors)."""
    path = Path(path)
    frame = _read_table(path)
    lk = labels_key or guess_name(frame.columns, LABEL_KEYS, "labels", path.name, choose)
    y = None
    if need_labels:
        if lk is None or lk not in frame.columns:
            raise ValueError(f"{path.name}: no label column; name it with {choose} "
                             f"(columns: {list(frame.columns)})")
        y = frame[lk].to_numpy()
    return _table_predictions(frame, lk, path), y, lk


def read_predictions(path, labels=None, labels_key=None, key=None, kind: str = "auto",
                     say=None):
    """(:class:`~fitontest.core.predictions.Reading`, labels) of .npz / .npy /
    .csv / .parquet (see --help).

    Array names not given are guessed (module doc); what the predictions hold
    is decided by their rows, or by ``kind`` (``--kind``), never by the name.
    ``say`` (a callable taking one line) hears one line when there is something
    to say: names guessed beyond ``probs`` / ``logits`` and ``labels``, a kind
    the name does not suggest, rows renormalised."""
    from . import predictions

    path = Path(path)
    if not path.is_file():
        raise ValueError(f"prediction file {str(path)!r} does not exist")
    suffix = path.suffix.lower()
    y, pred_key, lk = None, None, None
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
        if labels is None:
            lk = labels_key or guess_name(keys, LABEL_KEYS, "labels", path.name, "--labels-key")
            if lk is None or lk not in d:
                raise ValueError(f"{path.name}: no labels; pass --labels FILE or "
                                 f"--labels-key KEY (keys: {keys}; recognised: "
                                 f"{', '.join(LABEL_KEYS)})")
            y = d[lk]
    elif suffix == ".npy":
        pred = _load_numpy(path, "predictions")
        if isinstance(pred, dict):
            raise ValueError(f"{path.name} is an .npz archive: name it .npz")
    elif suffix in TABLES:
        pred, y, lk = read_table(path, labels_key, need_labels=labels is None)
    else:
        raise ValueError(f"unsupported prediction file type {suffix!r}: use {FORMATS}")
    if labels is not None:
        y = read_labels(labels, labels_key)
    if y is None:
        raise ValueError(f"{path.name} holds no labels: pass --labels FILE")
    where = f"{path.name} ({pred_key!r})" if pred_key else path.name
    reading = predictions.read(pred, kind, where=where, switch=predictions.CLI)
    if say is not None:
        parts = []
        low = (pred_key or "").lower()
        named = low in ("probs", "probabilities", "logits")
        suggests = None if not named else "logits" if low == "logits" else "probabilities"
        guessed = key is None and pred_key is not None and (
            pred_key not in _PLAIN or (labels_key is None and lk is not None
                                       and lk not in _PLAIN))
        if guessed or (suggests is not None and suggests != reading.kind):
            parts.append(f"read {pred_key!r} as {reading.kind}{_reason(reading)}")
            if lk is not None and labels_key is None and lk not in _PLAIN:
                parts[-1] += f" and {lk!r} as labels"
            parts[-1] += " (--key / --labels-key choose others; --kind declares the kind)"
        note = reading.note()
        if note:
            parts.append(note)
        if parts:
            say("; ".join(parts))
    return reading, y


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
