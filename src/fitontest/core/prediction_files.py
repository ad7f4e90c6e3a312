"""Reading a model's predictions and labels from files (`fitontest evaluate`).

.npz / .npy / .csv / .parquet, the suffix in any case. A file that is not
what its suffix says, a missing key or column, or a missing optional reader
(pyarrow for .parquet) is one ValueError naming the file, the problem and
the way out; nothing here writes.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

LABEL_KEYS = ("labels", "label", "y")
PRED_KEYS = ("probs", "probabilities", "logits", "scores")
#: table columns that are neither predictions nor labels (dropped)
ID_COLUMNS = ("id", "ids", "index", "idx", "sample", "sample_id", "image", "image_id",
              "unnamed: 0")
FORMATS = ".npz, .npy, .csv or .parquet"


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


def read_predictions(path, labels=None, labels_key=None, key=None):
    """(predictions, labels, is_logits) from .npz / .npy / .csv / .parquet (see --help)."""
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
        pred = _load_numpy(path, "predictions")
        if isinstance(pred, dict):
            raise ValueError(f"{path.name} is an .npz archive: name it .npz")
    elif suffix in (".csv", ".parquet"):
        frame = _read_table(path)
        lk = labels_key or next((k for k in LABEL_KEYS if k in frame.columns), None)
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
        k = key or next((k for k in LABEL_KEYS if k in d), None)
        if k is None or k not in d:
            raise ValueError(f"{path.name}: pass --labels-key (keys: {list(d)})")
        return d[k]
    if suffix in (".csv", ".parquet"):
        frame = _read_table(path)
        k = key or next((k for k in LABEL_KEYS if k in frame.columns), frame.columns[0])
        if k not in frame.columns:
            raise ValueError(f"{path.name} has no column {k!r} (columns: {list(frame.columns)})")
        return frame[k].to_numpy()
    try:
        return np.loadtxt(path)
    except (ValueError, UnicodeDecodeError) as err:
        raise ValueError(f"{path.name}: labels must be .npy, .npz, .csv, .parquet or a text "
                         f"file of numbers ({type(err).__name__})") from None
