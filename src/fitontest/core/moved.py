"""Names whose one home moved: the older address keeps working and warns.

Every public name has one home, the module that defines it (the front door's
names excepted: their home is the package ``fitontest``; docs/architecture.md).
:data:`MOVED` is the one table of the older addresses; a module that used to
publish a name ends in

>>> __getattr__, __dir__ = moved("fitontest.intervals")

a module ``__getattr__`` (PEP 562; no import hook, no finder): a name in the
table is fetched from its home, with a ``DeprecationWarning`` that names it.

>>> import warnings
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     f = __getattr__("ce_interval")
>>> print(caught[0].message)
fitontest.intervals.ce_interval is deprecated: its home is
fitontest.inference.intervals (use fitontest.inference.intervals.ce_interval)

The table is plain data (strings only) so that the docs' tests read it
without importing a shim, and so that ``fitontest.cli`` names its homes in
``fitontest_cli`` without importing that package.
"""
from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from typing import Any

_INTERVALS = "fitontest.inference.intervals"
_WORLDS = "fitontest.inference.worlds"
_TESTS = "fitontest.inference.calibration_tests"
_BANDS = "fitontest.inference.bands"
_MONOTONE = "fitontest.inference.monotone_band"
_WORLD_BAND = "fitontest.inference.world_band"
_CHOOSE = "fitontest.inference.choose"
_METRICS = "fitontest.metrics"
_CLI = "fitontest_cli"


def _all(home: str, *names: str) -> dict[str, str]:
    return dict.fromkeys(names, home)


#: old module -> {public name: its home module}. A home is the module that
#: defines the name (``fitontest`` for the front door's names), never another
#: re-export; tests/test_moved.py checks each one.
MOVED: dict[str, dict[str, str]] = {
    # the estimators moved up from core into the public module (issue 58)
    "fitontest.core.calibration_error": _all(
        _METRICS, "check_p", "true_ce", "ce_estimate", "cmee", "ceac", "spearman",
        "folded_normal_mean", "debiased_bin_terms", "debiased_ece", "median_heuristic",
        "kce"),
    # metrics keeps the estimators; its re-exports of the inference package moved
    "fitontest.metrics": {
        **_all(_INTERVALS, "ce_interval", "CEInterval"),
        **_all(_TESTS, "calibration_test", "CalibrationTestResult"),
        **_all(_BANDS, "reliability_band", "ReliabilityBand"),
        **_all(_MONOTONE, "monotone_band_test")},
    "fitontest.intervals": {
        **_all(_INTERVALS, "AUTO", "CEInterval", "INVERTED_ALPHA_SCALE",
               "IntervalCoverageWarning", "METHODS", "batched", "bootstrap_indices",
               "bootstrap_interval", "ce_interval", "interval_from", "interval_settings",
               "invert", "inverted_level", "refit_replicates", "registered_name",
               "replicate_estimates", "resolve_method", "sun_interval", "sun_se"),
        **_all(_WORLDS, "WORLD_T", "largest_ce", "reference_gap", "world_replicates",
               "world_reps")},
    "fitontest.calibration_tests": _all(
        _TESTS, "CalibrationTestResult", "METHODS", "calibration_test", "consistency_null",
        "cumulative_differences", "range_bm_sf", "sup_abs_bm_sf", "sup_bm_sf", "tcal_grid"),
    "fitontest.bands": {
        **_all(_BANDS, "AUTO", "AUTO_REASON", "BandCoverageWarning", "METHODS",
               "ReliabilityBand", "SIMULTANEOUS", "band_method", "band_validity",
               "reliability_band"),
        **_all(_MONOTONE, "default_groups", "dyadic_runs", "monotone_band_test",
               "score_groups"),
        **_all(_WORLD_BAND, "WORLD_BAND_SCALE", "WORLD_BAND_WORLDS", "WorldParts",
               "world_ends", "world_parts")},
    "fitontest.worlds": _all(
        _WORLDS, "GENERATORS", "RULE_OUT_ALPHA", "WORLD_T", "generator_map", "largest_ce",
        "plausible_maps", "population_ce", "reference_gap", "scaled_maps",
        "world_replicates", "world_reps", "world_sample"),
    "fitontest.selection": _all("fitontest.core.selection", "complexity_rule",
                                "kfold_indices"),
    # choose_evaluator stays defined in fitontest/choose.py (home: fitontest);
    # the chooser's rule and its constants live in the inference package
    "fitontest.choose": {
        **_all(_CHOOSE, "CRITERIA", "DEBIAS_SD", "DEFAULT_CANDIDATES", "ENSEMBLE",
               "FALLBACK", "FALLBACK_ALPHA", "MAP_CANDIDATES", "PL_CANDIDATES",
               "EvaluatorScore", "fallback_test", "recommended_interval"),
        **_all("fitontest.inference.candidates", "RANK_TEMPERATURES", "world_losses"),
        "EvaluatorChoice": "fitontest"},
    # the command line is one package, fitontest_cli (string homes: no module
    # of fitontest imports it)
    "fitontest.cli": {
        "main": _CLI, "build_parser": f"{_CLI}.parser", "parse_args": f"{_CLI}.parser",
        "run": f"{_CLI}.commands", "COMMANDS": f"{_CLI}.commands",
        **_all(f"{_CLI}.commands.evaluate", "validity_notes", "result_table",
               "check_plot_path", "cmd_evaluate", "cmd_choose"),
        **_all(f"{_CLI}.commands.families", "ABBREVIATIONS", "family_rows", "cmd_families"),
        **_all(f"{_CLI}.commands.bench", "resolve_evaluator", "bench_config", "ranking",
               "bench_verdict", "bench_report", "find_snakefile", "cmd_bench"),
        **_all(f"{_CLI}.commands.jobs", "cmd_jobs", "cmd_pins")},
    # the front door's module re-exported the predictions' converter
    "fitontest.api": {"to_numpy": "fitontest.core.predictions",
                      "EvaluationResult": "fitontest", "TaskResult": "fitontest.results"},
    # the multi-class -> binary reduction moved from the study layer into the
    # library layer, where every front door reaches it
    "fitontest.study.tasks": {
        **_all("fitontest.tasks", "CONFIDENCE", "ONE_VS_REST", "TASKS", "check_probs",
               "confidence", "one_vs_rest", "reduce", "reduce_all", "task_kind",
               "validate_tasks"),
        "ROW_SUM_ATOL": "fitontest.core.predictions"},
}


def moved(module: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """(``__getattr__``, ``__dir__``) of the module ``module``, whose old names
    :data:`MOVED` maps to their homes: a shim does
    ``__getattr__, __dir__ = moved(__name__)``."""
    try:
        homes = MOVED[module]
    except KeyError:
        raise KeyError(f"{module!r} has no entry in fitontest.core.moved.MOVED") from None

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        # stacklevel 2: the line that used the old address, not this function
        warnings.warn(f"{module}.{name} is deprecated: its home is {home} (use "
                      f"{home}.{name})", DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(home), name)

    def __dir__() -> list[str]:
        return sorted(set(vars(importlib.import_module(module))) | set(homes))

    return __getattr__, __dir__


__all__ = ["MOVED", "moved"]
