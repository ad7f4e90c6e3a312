"""Column contracts of the tidy result files every table is built from.

``scores.parquet`` (evaluators): one row per
(arch, network, task, calibrator, evaluator, size, seed, truth): ``arch`` is the
architecture, ``network`` one network of it (its training seed,
:mod:`fitontest.study.networks`). ``truth`` names the
true-map estimator the row was scored against, so each table can be built
under every truth estimator by filtering one column.

``calibrators.parquet`` (post-hoc calibrators on the hold-out): one row per
(arch, network, task, calibrator, truth).

A frame written before the ``network`` column existed has one network per
architecture: :func:`with_network` fills it in.

Synthetic rows (``synthetic_scores.parquet``) use the evaluator columns with
``shape`` and ``ce_level`` in place of (arch, task, calibrator) and
``truth = "exact"``.
"""
from __future__ import annotations

SCORE_KEYS = ["arch", "network", "task", "calibrator", "evaluator", "size", "seed", "truth"]
SCORE_VALUES = [
    "ce_est",              # estimate without debiasing: plug-in mean |c_hat(s_i) - s_i|
                           # on the subset (smECE, KCE: their own estimate)
    "ce_est_sq",           # same, squared
    "ce_est_debiased",     # debiased estimate where the family has one, else NaN
    "ce_est_debiased_sq",
    "ce_used",             # what the CE tables use: debiased where available, else plug-in
    "ce_used_sq",
    "true_ce",             # mean |s_i - c(s_i)| over the subset under this truth
    "true_ce_sq",
    "ce_error",            # |ce_used - true_ce|
    "ce_error_sq",         # |ce_used_sq - true_ce_sq|
    "cmee",                # mean |c_hat(s) - c(s)| over the whole hold-out (tables use this)
    "cmee_sq",
    "cmee_subset",         # the same over the subset points only
    "cmee_subset_sq",
    "ce_lo",               # bootstrap interval of ce_used (L1) on the subset; NaN where none
    "ce_hi",
    "ci_level",            # its nominal level; NaN where no interval was computed
    "true_ce_pop",         # population CE the interval targets (pseudo-real: mean |s - c(s)|
                           # over the whole hold-out; synthetic: the exact CE level)
    "hyper",               # chosen hyper-parameter (bins, pieces, ...) or NaN
    "fit_seconds",
]
SCORE_COLUMNS = SCORE_KEYS + SCORE_VALUES
#: Optional design column of ``scores.parquet`` (one value per run): how the
#: test subsets were drawn, ``independent`` (per (arch, task, seed)) or
#: ``paper`` (per seed, shared by every arch and task); docs/methods/06-truth-and-scores.md §6.2.
#: A frame without it is read as ``paper``, the conservative design
#: (:func:`fitontest.report.policy.design_of`).
SCORE_DESIGN = "subsets"

CALIBRATOR_KEYS = ["arch", "network", "task", "calibrator", "truth"]
CALIBRATOR_VALUES = [
    "kind",        # "none", "multiclass" or "binary"
    "ceac",        # mean |c_hat_i - c'(c_hat_i)|: CE after calibration (Table 2)
    "ceac_sq",
    "cmee",        # mean |c_hat(s_i) - c(s_i)| against the truth of the uncalibrated scores
    "cmee_sq",
    "accuracy",    # hold-out accuracy of the calibrated binary scores thresholded at 1/2
]
CALIBRATOR_COLUMNS = CALIBRATOR_KEYS + CALIBRATOR_VALUES
#: Optional key of ``calibrators.parquet``: the validation draw the row's
#: calibrator was fitted on (0 = the validation split; 1, 2, ... = further
#: disjoint draws, docs/methods/06-truth-and-scores.md §6.4). Absent: one fit per network.
CALIBRATOR_DRAW = "draw"

SYNTHETIC_KEYS = ["shape", "ce_level", "evaluator", "size", "seed", "truth"]
SYNTHETIC_COLUMNS = SYNTHETIC_KEYS + SCORE_VALUES


def with_network(frame):
    """``frame`` with a ``network`` column: as it is where it has one; else
    (a frame of one network per architecture, written before the column
    existed) the architecture's name, placed after ``arch`` (and in the
    rows where it is missing)."""
    if frame is None or "arch" not in frame.columns:
        return frame
    if "network" in frame.columns:
        missing = frame["network"].isna()
        return frame.assign(network=frame["network"].where(~missing, frame["arch"])) \
            if missing.any() else frame
    out = frame.copy()
    out.insert(out.columns.get_loc("arch") + 1, "network", out["arch"])
    return out
