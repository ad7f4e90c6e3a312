"""What a prediction array holds: probabilities, logits, or what its rows cannot settle.

The one place that decides (docs/methods/01-binary-tasks.md §1.1): :func:`fitontest.evaluate`,
:func:`fitontest.choose_evaluator`, :class:`fitontest.CalibratedClassifier`,
:func:`fitontest.metrics.reliability_band`, the ``fitontest`` command and the
workflow's logit source (:mod:`fitontest.data.logits`) all call :func:`read`.

The rule, by the rows and never by an array's name (``kind="auto"``):

- every entry in [0, 1] and every row summing to 1 within what the array's
  storage can lose (:func:`storage_tolerance`): **probabilities**, each row
  brought to sum to 1 (:func:`to_simplex`; said, with the largest deviation,
  when it exceeds :data:`ROW_SUM_ATOL`);
- most rows probability vectors (:data:`MOST`) but some not -- an entry
  below 0 or above 1, a row of zeros, a row far from 1: **corrupted rows**,
  a ValueError naming them. A logit row is almost never a probability
  vector, so such an array is probabilities with bad rows, never logits;
- otherwise a negative entry anywhere (below -1e-6, :data:`SLACK`):
  **logits** (log-probabilities included), as probabilities are never
  negative;
- anything else (every entry non-negative, but an entry above 1 or a row
  far from summing to 1: shifted or ReLU logits, percentages, multi-label
  sigmoids): **ambiguous**, a ValueError naming the array and the switch that
  settles it (``from_logits`` / ``--kind`` / ``logits.kind``).

A 1-D array is a binary model's P(class 1) (or its logit): values in [0, 1]
are probabilities, negative values logits, non-negative values above 1
ambiguous; all but a few in [0, 1] (:data:`MOST_1D`) is an error naming the
others. A declared kind (``"probabilities"``, ``"logits"``) that the rows
contradict stops with one ValueError: negative "probabilities" (naming the
rows), or "logits" most of whose rows are probability vectors (their softmax
is a squashed, near-uniform model: every CE would be wrong). Declared
probabilities are renormalised whatever their row sums (a percentage table
reads right); a row summing to 0 is an error.

>>> r = read([[0.2, 0.8], [0.5, 0.5]])
>>> r.kind, r.by
('probabilities', 'rows')
>>> read([[2.0, -1.0]]).kind
'logits'
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# the checks called through their module, so that each is one function to patch or count
from . import validation

#: the kinds a caller may declare; ``auto`` lets the rows decide
KINDS = ("auto", "probabilities", "logits")
#: the deviation of a row sum from 1 above which bringing the rows to 1 is said
#: (:meth:`Reading.note`). Not a rule of what probabilities are: that is
#: :func:`storage_tolerance`'s, the one rule every reader shares
#: (:func:`fitontest.tasks.check_probs` included)
ROW_SUM_ATOL = 1e-4
#: relative precision of half-precision storage: float16 rounds to 2^-11 of a
#: value, doubled for a second rounding (a softmax in float32, then float16,
#: then text); the floor of every tolerance, since a float16 array written to
#: .csv comes back as float64
HALF_PRECISION = 2.0 ** -10
#: the same for bfloat16 (8 bits of mantissa: 2^-8, doubled)
BFLOAT16_PRECISION = 2.0 ** -7
#: the rounding to d decimals that is recognised (d = 2 .. 8): an array whose
#: every entry is a multiple of 10^-d loses at most half of 10^-d an entry
DECIMALS = range(2, 9)
#: a zero probability's stand-in before the log: float32's smallest normal
#: number (log -87.3), as the workflow stores logits in float32
PROB_FLOOR = float(np.finfo(np.float32).tiny)
#: per-entry slack for float32 arithmetic and subnormal half-precision values
_TINY = 2.0 ** -24
#: how far outside [0, 1] a probability may stray by arithmetic (``1 - p`` of a
#: float32 p, a softmax rounded up): clipped, not read as a sign of logits.
#: Log-probabilities are never confused by it: all but the top entry of a row
#: lie far below -1e-6
SLACK = 1e-6
#: the share of an (n, K) array's rows that, being probability vectors, makes
#: the array probabilities (its other rows corrupted): a row of logits is a
#: probability vector only by a coincidence of K values (about 1 row in 500
#: for K = 2 logits rounded to 2 decimals), so half the rows never happens by chance
MOST = 0.5
#: the same for a 1-D array, whose values lie in [0, 1] by chance far more
#: often (a weak binary model's logits: a tenth to a third of them); a logit
#: array with 19 in 20 values in [0, 1] is a near-constant model either way,
#: and the error names the switch
MOST_1D = 0.95
#: how many bad rows an error lists by name
SHOWN = 8


@dataclass(frozen=True)
class Switch:
    """How an entry point lets its user declare the kind (named in the errors)."""

    logits: str
    probabilities: str


#: the switches of the Python API, the command line and the workflow's config
API = Switch("from_logits=True", "from_logits=False")
CLI = Switch("--kind logits", "--kind probabilities")
WORKFLOW = Switch("logits.kind: logits", "logits.kind: probabilities")


def to_numpy(x, name: str = "predictions") -> np.ndarray:
    """numpy view of an array, a pandas object or a torch tensor (any device;
    bfloat16 as float32, which holds it exactly). torch is never imported. A
    conversion only: what the values must be is the caller's check
    (:func:`fitontest.core.validation.check_array_real` and the checks above it)."""
    if type(x).__module__.split(".")[0] == "torch" and hasattr(x, "detach"):
        x = x.detach().cpu()
        if str(x.dtype) == "torch.bfloat16":      # numpy has no bfloat16
            x = x.float()
        return x.numpy()
    if hasattr(x, "to_numpy"):                     # pandas DataFrame / Series
        return x.to_numpy()
    return np.asarray(x)


def decimals(x: np.ndarray) -> int | None:
    """The smallest d in :data:`DECIMALS` such that every entry of ``x`` is a
    multiple of 10^-d (probabilities rounded to d decimals, as a .csv export or
    ``np.round(p, d)`` leaves them), None if there is none. A sample decides
    first, so that unrounded arrays cost one pass over 1,000 entries a d."""
    flat = np.ravel(x)
    head = flat[:1000]
    for d in DECIMALS:
        scale = 10.0 ** d
        # 1e-6 of the last place: parsing "0.1235" gives the nearest double,
        # a few ulps of the scaled value off the grid, never 1e-6 of a place
        if np.all(np.abs(head * scale - np.round(head * scale)) <= 1e-6) and \
                np.all(np.abs(flat * scale - np.round(flat * scale)) <= 1e-6):
            return d
    return None


def _bfloat16_exact(x: np.ndarray) -> bool:
    """Every entry a bfloat16 number (the low 16 bits of its float32 zero)?"""
    f = x.astype(np.float32)
    return bool(np.array_equal(f.astype(np.float64), x)) and \
        not (f.view(np.uint32) & np.uint32(0xFFFF)).any()


def storage_tolerance(x: np.ndarray, dtype=None) -> tuple[float, str]:
    """(tolerance, what): how far from 1 a row of ``x`` (n, K) may sum and still
    be probabilities as stored, and the storage that allows it.

    ``rel + K * (half_unit + 2^-24)``: ``rel`` is :data:`HALF_PRECISION`
    (:data:`BFLOAT16_PRECISION` for bfloat16 values), ``half_unit`` half of
    10^-d for entries rounded to d decimals (:func:`decimals`), else 0. Each
    term bounds what one entry's storage moves it, so a row of true
    probabilities always passes."""
    tol, what, _ = _storage(x, dtype)
    return tol, what


def _storage(x: np.ndarray, dtype=None) -> tuple[float, str, int | None]:
    """:func:`storage_tolerance` and the decimals it found (:func:`decimals`)."""
    k = 1 if x.ndim == 1 else x.shape[1]
    name = str(dtype).removeprefix("torch.") if dtype is not None else ""
    rel, what = HALF_PRECISION, name if name in ("float16", "bfloat16") else ""
    if name == "bfloat16" or (name != "float16" and x.size and _bfloat16_exact(x)):
        rel, what = BFLOAT16_PRECISION, "bfloat16"
    d = decimals(x) if x.size else None
    half_unit = 0.0 if d is None else 0.5 * 10.0 ** -d
    if d is not None:
        what = f"rounded to {d} decimals"
    return rel + k * (half_unit + _TINY), what, d


@dataclass(frozen=True)
class Reading:
    """What :func:`read` found: ``kind`` (``probabilities`` or ``logits``),
    decided ``by`` the rows or ``declared``; ``probs`` (n, K) float64 rows
    summing to 1 (the probabilities brought to sum 1, or the softmax of the
    logits; a 1-D input as its two columns); ``deviation`` the largest
    |row sum - 1| of probabilities as given, ``tolerance`` and ``storage``
    what the rule allowed them and why; ``moved`` the largest change of an
    entry on the way to ``probs``, ``shifted`` whether rows were shifted
    (:func:`to_simplex`) rather than divided by their sums, ``rounding`` how
    far rounding to decimals may have moved an entry (half a unit of the last
    decimal; 0 for other storage); ``where`` the array's name."""

    kind: str
    by: str
    probs: np.ndarray
    values: np.ndarray
    deviation: float = 0.0
    tolerance: float = 0.0
    storage: str = ""
    where: str = "predictions"
    moved: float = 0.0
    shifted: bool = False
    rounding: float = 0.0

    def logits(self) -> np.ndarray:
        """float64 logits whose softmax gives :attr:`probs`: the logits as
        given, or ``log(max(p, PROB_FLOOR))`` of the probabilities (a zero
        becomes log 1.2e-38 = -87.3, not minus infinity)."""
        if self.kind == "logits" and self.values.ndim == 2:
            return self.values
        return log_probabilities(self.probs)

    def note(self) -> str | None:
        """One line worth saying, or None: rows that missed 1 by more than
        :data:`ROW_SUM_ATOL` (rounding, low precision, declared probabilities
        off 1), how they were brought to 1 and how far that moved an entry."""
        if self.kind != "probabilities" or self.deviation <= ROW_SUM_ATOL:
            return None
        why = (f", within the {self.tolerance:.2g} that {self.storage or 'storage'} allows"
               if self.by == "rows" else " (declared probabilities)")
        if not self.shifted:
            return (f"{self.where}: rows renormalised to sum to 1 (largest |row sum - 1| "
                    f"{self.deviation:.3g}{why})")
        return (f"{self.where}: rows shifted to sum to 1, to the nearest probability rows "
                f"(largest |row sum - 1| {self.deviation:.3g}{why}; no entry moved more than "
                f"{self.moved:.2g}, where the rounding moved each by up to {self.rounding:.2g})")


def log_probabilities(p) -> np.ndarray:
    """float64 logits of probability rows: ``log(max(p, PROB_FLOOR))``.

    Their softmax is ``p`` renormalised (exactly ``p`` for rows summing to 1).

    >>> log_probabilities([[0.5, 0.5, 0.0]]).round(2)
    array([[ -0.69,  -0.69, -87.34]])
    """
    return np.log(np.maximum(np.asarray(p, dtype=np.float64), PROB_FLOOR))


def to_simplex(x) -> np.ndarray:
    """The nearest probability rows (Euclidean) to the rows of ``x``:
    ``max(x - theta, 0)`` with one ``theta`` a row (the sort-based projection
    of Held, Wolfe and Crowder 1974; Duchi et al. 2008, fig. 1).

    Why not divide by the row sum: rounding to d decimals moves every entry by
    up to u = half of 10^-d *whatever its size*, so a K = 1000 row rounded to
    3 decimals can miss 1 by 0.03 and division would raise its top entry by 3 %,
    far beyond u. When some probability row lies within u of every entry of
    ``x`` (the true row does), the projection moves no entry by more than u, and
    it keeps the order of the entries (so the predicted class).

    >>> to_simplex([[0.6, 0.6, 0.0], [0.4, 0.5, 0.0]]).round(4)
    array([[0.5   , 0.5   , 0.    ],
           [0.4333, 0.5333, 0.0333]])
    """
    x = np.asarray(x, dtype=np.float64)
    u = -np.sort(-x, axis=1)                               # each row descending
    css = np.cumsum(u, axis=1) - 1.0
    ks = np.arange(1, x.shape[1] + 1)
    rho = np.count_nonzero(u - css / ks > 0, axis=1)       # the entries kept positive
    theta = css[np.arange(x.shape[0]), rho - 1] / rho
    return np.maximum(x - theta[:, None], 0.0)


def _row(x: np.ndarray, i: int) -> str:
    return np.array2string(x[i], precision=4, threshold=6)


def _named(rows: np.ndarray, label) -> str:
    """The first :data:`SHOWN` of ``rows`` by their labels, and how many more."""
    shown = ", ".join(label(int(i)) for i in rows[:SHOWN])
    return shown + (f" and {rows.size - SHOWN} more" if rows.size > SHOWN else "")


def _as_float(a, where: str, label) -> tuple[np.ndarray, object]:
    raw = validation.check_array_real(to_numpy(a, where), where)
    if raw.ndim == 2 and raw.shape[1] == 1:
        raw = raw[:, 0]                       # one column: a binary model's P(class 1)
    if raw.ndim not in (1, 2):
        raise ValueError(f"{where} must be an (n, K) array of K-class predictions or (n,) "
                         f"values of a binary model, got shape {raw.shape}")
    if raw.shape[0] == 0:
        raise ValueError(f"{where} is empty (0 rows)")
    # C order: row sums (and so the renormalised bits) must not depend on the layout a
    # reader left (a pandas frame is column-major), or tied scores split differently
    x = np.ascontiguousarray(raw, dtype=np.float64)
    bad = ~np.isfinite(x) if x.ndim == 1 else ~np.isfinite(x).all(axis=1)
    if bad.any():
        rows = np.flatnonzero(bad)
        raise ValueError(f"{where} contain NaN or infinity in {rows.size} of {x.shape[0]} "
                         f"rows: {_named(rows, label)}")
    dtype = getattr(a, "dtype", raw.dtype)
    return x, dtype


def _corrupted(x, where, bad, label, what: str, fix: str) -> ValueError:
    """The error of an array whose rows are probabilities but for ``bad``."""
    rows = np.flatnonzero(bad)
    first = int(rows[0])
    shown = f"{_row(x, first)} (sum {x[first].sum():.6g})" if x.ndim == 2 else f"{x[first]:.6g}"
    return ValueError(f"{where}: {rows.size} of {x.shape[0]} rows are not {what}, though the "
                      f"other {x.shape[0] - rows.size} are: {_named(rows, label)}; "
                      f"{label(first)} is {shown}. {fix}")


def _read_binary(x, kind, where, switch, label) -> Reading:
    """A 1-D array: a binary model's P(class 1), or its logit."""
    from .validation import sigmoid

    outside = (x < -SLACK) | (x > 1 + SLACK)
    negative, above = bool((x < -SLACK).any()), bool((x > 1 + SLACK).any())
    if kind == "auto":
        if outside.any() and outside.mean() <= 1 - MOST_1D:
            raise _corrupted(x, where, outside, label, "probabilities (in [0, 1])",
                             f"Correct or drop them; if the array holds logits of "
                             f"P(class 1), set {switch.logits}")
        if not negative and above:
            raise ValueError(f"{where}: cannot tell probabilities from logits: every value is "
                             f"non-negative but some exceed 1 (max {x.max():.6g}); set "
                             f"{switch.logits} (logits of P(class 1)) or pass P(class 1) in "
                             "[0, 1]")
        kind, by = ("logits" if negative else "probabilities"), "rows"
    else:
        by = "declared"
    if kind == "probabilities":
        if negative or above:
            rows = np.flatnonzero(outside)
            raise ValueError(f"{where} holds a binary model's P(class 1) and must lie in "
                             f"[0, 1]: {rows.size} of {x.size} values do not "
                             f"({_named(rows, label)}; range {x.min():.6g} .. {x.max():.6g}); "
                             f"for logits set {switch.logits}")
        p1 = np.clip(x, 0.0, 1.0)
    else:
        if by == "declared" and not (negative or above):
            import warnings
            warnings.warn(f"{where}: declared logits ({switch.logits}) but every value lies in "
                          "[0, 1]; if they are P(class 1), the CE of their sigmoid is not the "
                          "model's: drop the switch", UserWarning, stacklevel=4)
        p1 = sigmoid(x)
    return Reading(kind, by, np.column_stack([1.0 - p1, p1]), x, where=where)


def _to_one(x, where, label, what: str, rounded: bool):
    """(rows summing to 1, largest entry change): rows that rounding to
    decimals explains are shifted (:func:`to_simplex`), others divided by
    their sums; a row summing to 0 is an error naming the rows."""
    sums = x.sum(axis=1)
    zero = np.flatnonzero(sums <= 0)
    if zero.size:
        raise ValueError(f"{where}: {zero.size} of {x.shape[0]} rows sum to 0 "
                         f"({_named(zero, label)}), so they cannot be brought to sum to 1"
                         f"{what}; store the probabilities with more precision, or drop them")
    # rows at 1 up to float64 summation (K ulps) are left bit for bit: reading read's own
    # output again (the CLI hands its probabilities on) must not move a tied score
    off = np.flatnonzero(np.abs(sums - 1.0) > x.shape[1] * np.finfo(np.float64).eps)
    probs = x.copy()
    if off.size:
        probs[off] = to_simplex(x[off]) if rounded else x[off] / sums[off, None]
    return probs, float(np.abs(probs - x).max()) if off.size else 0.0


def read(a, kind: str = "auto", *, where: str = "predictions", switch: Switch = API,
         row_label=None) -> Reading:
    """What the prediction array ``a`` holds, and its class probabilities.

    Parameters
    ----------
    a : array-like of shape (n, K) or (n,)
        Predictions: numpy, pandas or torch (any device, any float dtype).
    kind : {"auto", "probabilities", "logits"}
        ``auto``: the rows decide (module docstring); otherwise the declared
        kind, checked against the rows.
    where : str
        The array's name in messages (an argument, a file and its key).
    switch : Switch
        How the caller's user declares the kind (:data:`API`, :data:`CLI`,
        :data:`WORKFLOW`), named in the errors.
    row_label : callable, optional
        ``row_label(i)`` names row ``i`` in errors (default ``"row i"``; the
        workflow names the part of the file, ``"test row 3"``).

    Returns
    -------
    Reading

    Raises
    ------
    ValueError
        NaN or infinity, a wrong shape or dtype, corrupted rows among
        probability rows (naming them), ambiguous rows, a declared kind the
        rows contradict, a probability row summing to 0.
    """
    kind = validation.check_option("kind", kind, KINDS)
    label = row_label or (lambda i: f"row {i}")
    x, dtype = _as_float(a, where, label)
    if x.ndim == 1:
        return _read_binary(x, kind, where, switch, label)
    negative = (x < -SLACK).any(axis=1)
    sums = x.sum(axis=1)
    dev = np.abs(sums - 1.0)
    tol, what, d = _storage(x, dtype)
    in_unit = ~negative & ~(x > 1 + SLACK).any(axis=1)
    rows_ok = in_unit & (dev <= tol)
    most = rows_ok.mean() >= MOST
    vectors = f"probability vectors (entries in [0, 1], summing to 1 within {tol:.2g})"
    if kind == "auto":
        if most and not rows_ok.all():
            # non-negative rows off 1 may be meant (a row of counts): the switch renormalises
            rescue = not (negative | (sums <= 0))[~rows_ok].any()
            raise _corrupted(x, where, ~rows_ok, label, vectors,
                             "Correct or drop these rows (they are not logits: the others "
                             "are probabilities)" + (f", or set {switch.probabilities} to "
                                                     "renormalise them" if rescue else ""))
        if negative.any():
            kind = "logits"
        elif rows_ok.all():
            kind = "probabilities"
        else:
            bad = int(np.flatnonzero(~rows_ok)[0])
            why = (f"entries above 1 (max {x.max():.6g})" if not in_unit.all() else
                   f"{int((~rows_ok).sum())} of {x.shape[0]} rows do not sum to 1 within "
                   f"{tol:.2g} (what {what or 'float storage'} can lose)")
            raise ValueError(f"{where}: cannot tell probabilities from logits: every entry is "
                             f"non-negative, but {why}; {label(bad)} is {_row(x, bad)} (sum "
                             f"{sums[bad]:.6g}). Set {switch.logits} (e.g. shifted or ReLU "
                             f"logits) or {switch.probabilities} (rows renormalised)")
        by = "rows"
    else:
        by = "declared"
    if kind == "logits":
        if by == "declared" and most:
            which = ("every row is a probability vector" if rows_ok.all() else
                     f"{int(rows_ok.sum())} of {x.shape[0]} rows are probability vectors")
            raise ValueError(f"{where}: declared logits ({switch.logits}) but {which} "
                             f"(entries in [0, 1], summing to 1 within {tol:.2g}); the "
                             "softmax of probabilities is a squashed, near-uniform model and "
                             f"every CE would be wrong: set {switch.probabilities} (or auto)")
        from scipy.special import softmax

        return Reading("logits", by, softmax(x, axis=1), x, where=where)
    if negative.any() and most:
        raise _corrupted(x, where, negative, label, "non-negative", "Correct or drop these "
                         f"rows (declared probabilities, {switch.probabilities})")
    if negative.any():
        rows = np.flatnonzero(negative)
        raise ValueError(f"{where}: declared probabilities ({switch.probabilities}) but "
                         f"{label(int(rows[0]))} has a negative entry ({_row(x, rows[0])}; "
                         f"{rows.size} of {x.shape[0]} rows have one): these look like logits; "
                         f"set {switch.logits} (or auto)")
    x = np.maximum(x, 0.0)                      # what SLACK let through
    # rows rounded to decimals are shifted, never divided: dividing moves a large entry by
    # its share of the row's deficit, far more than the rounding moved it (to_simplex)
    d = d if rows_ok.all() else None           # decimals of the array as given
    probs, moved = _to_one(x, where, label, f" ({what})" if what else "", d is not None)
    return Reading("probabilities", by, probs, x, float(dev.max()), tol, what, where, moved,
                   d is not None, 0.0 if d is None else 0.5 * 10.0 ** -d)


def kind_from_logits(from_logits: bool | None) -> str:
    """The kind a ``from_logits`` argument declares: None lets the rows decide."""
    if from_logits is None:
        return "auto"
    if not isinstance(from_logits, (bool, np.bool_)):
        raise ValueError(f"from_logits must be True, False or None (let the rows decide), "
                         f"got {from_logits!r}")
    return "logits" if from_logits else "probabilities"


__all__ = ["read", "Reading", "Switch", "API", "CLI", "WORKFLOW", "KINDS", "ROW_SUM_ATOL",
           "PROB_FLOOR", "storage_tolerance", "decimals", "log_probabilities", "to_numpy",
           "kind_from_logits", "to_simplex", "MOST", "MOST_1D"]
