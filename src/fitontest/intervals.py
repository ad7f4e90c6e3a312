"""CE intervals: :mod:`fitontest.inference.intervals` (docs/methods/11-intervals.md §11.1), whose
public names are re-exported here, where they were first published."""
from .inference.intervals import (AUTO, CEInterval, INVERTED_ALPHA_SCALE,
                                  IntervalCoverageWarning, METHODS, WORLD_T, batched,
                                  bootstrap_indices, bootstrap_interval, ce_interval,
                                  interval_from, interval_settings, invert, inverted_level,
                                  largest_ce, reference_gap, refit_replicates,
                                  registered_name, replicate_estimates, resolve_method,
                                  sun_interval, sun_se, world_replicates, world_reps)

__all__ = ["AUTO", "CEInterval", "INVERTED_ALPHA_SCALE", "IntervalCoverageWarning", "METHODS",
           "WORLD_T", "batched", "bootstrap_indices", "bootstrap_interval", "ce_interval",
           "interval_from", "interval_settings", "invert", "inverted_level", "largest_ce",
           "reference_gap", "refit_replicates", "registered_name", "replicate_estimates",
           "resolve_method", "sun_interval", "sun_se", "world_replicates", "world_reps"]
