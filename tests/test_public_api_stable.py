"""Every public name importable before the inference package (issue 51) is
importable after it, from the same module: the list below is what these modules
exported at the commit before the move (their ``__all__``; for modules without one,
the names they defined), typed out once so that a name that disappears fails here.
Since issue 58 most of these addresses are older ones: they warn and name the
home (fitontest.core.moved.MOVED).

Two names of the landed ``fitontest.bands`` were dropped on purpose earlier, by issue
47: ``MEASURED_MIN_COVERAGE`` (typed-in coverage, replaced by the measured domain
that ``band_validity`` reads) and ``world_half_width`` (replaced by ``world_parts``).
"""
import importlib
import warnings

import pytest

from fitontest.core.moved import MOVED

PUBLIC = {
    "fitontest": ["CalibratedClassifier", "EvaluationResult", "EvaluatorChoice",
        "__version__", "choose_evaluator", "evaluate"],
    "fitontest.api": ["EvaluationResult", "MODES", "TaskResult", "binary_tasks",
        "class_probabilities", "evaluate", "evaluate_binary", "max_calibration_error",
        "to_numpy"],
    "fitontest.metrics": ["CEInterval", "CalibrationTestResult", "ReliabilityBand",
        "calibration_test", "ce_estimate", "ce_interval", "ceac", "cmee",
        "debiased_bin_terms", "debiased_ece", "folded_normal_mean", "kce", "median_heuristic",
        "monotone_band_test", "reliability_band", "spearman", "true_ce"],
    "fitontest.intervals": ["AUTO", "CEInterval", "INVERTED_ALPHA_SCALE",
        "IntervalCoverageWarning", "METHODS", "WORLD_T", "batched", "bootstrap_indices",
        "bootstrap_interval", "ce_interval", "interval_from", "interval_settings", "invert",
        "inverted_level", "largest_ce", "reference_gap", "refit_replicates",
        "registered_name", "replicate_estimates", "resolve_method", "sun_interval", "sun_se",
        "world_replicates", "world_reps"],
    "fitontest.bands": ["AUTO", "AUTO_REASON", "BandCoverageWarning", "METHODS",
        "ReliabilityBand", "SIMULTANEOUS", "WORLD_BAND_SCALE", "WORLD_BAND_WORLDS",
        "WorldParts", "band_method", "band_validity", "default_groups", "dyadic_runs",
        "monotone_band_test", "reliability_band", "score_groups", "world_ends", "world_parts"],
    "fitontest.calibration_tests": ["CalibrationTestResult", "METHODS", "calibration_test",
        "consistency_null", "cumulative_differences", "range_bm_sf", "sup_abs_bm_sf",
        "sup_bm_sf", "tcal_grid"],
    "fitontest.worlds": ["GENERATORS", "RULE_OUT_ALPHA", "WORLD_T", "generator_map",
        "largest_ce", "plausible_maps", "population_ce", "reference_gap", "scaled_maps",
        "world_replicates", "world_reps", "world_sample"],
    "fitontest.choose": ["CRITERIA", "DEBIAS_SD", "DEFAULT_CANDIDATES", "ENSEMBLE",
        "EvaluatorChoice", "EvaluatorScore", "MAP_CANDIDATES", "PL_CANDIDATES",
        "RANK_TEMPERATURES", "choose_evaluator", "world_losses"],
    "fitontest.selection": ["complexity_rule", "kfold_indices"],
    "fitontest.calibrated_classifier": ["CalibratedClassifier", "LOG_FLOOR", "MODES"],
}


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_every_public_name_is_still_importable(module):
    """Still there: defined (or lazily exported) at that address, or an older
    address of issue 58 that warns and gives its home's object (tests/test_moved.py)."""
    mod = importlib.import_module(module)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        missing = [n for n in PUBLIC[module] if not hasattr(mod, n)]
    assert not missing, f"{module} lost {missing}"
    old = MOVED.get(module, {})
    unlisted = [n for n in PUBLIC[module] if n not in old and n not in getattr(mod, "__all__", ())
                and n not in vars(mod)]
    assert not unlisted, f"{module}: {unlisted} neither defined there nor in MOVED"
