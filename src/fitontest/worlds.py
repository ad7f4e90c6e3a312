"""Worlds shaped like the data: :mod:`fitontest.inference.worlds` (docs/methods/14-chooser.md §14),
whose public names are re-exported here, where they were first published."""
from .inference.worlds import (GENERATORS, RULE_OUT_ALPHA, WORLD_T, generator_map, largest_ce,
                               plausible_maps, population_ce, reference_gap, scaled_maps,
                               world_replicates, world_reps, world_sample)

__all__ = ["GENERATORS", "RULE_OUT_ALPHA", "WORLD_T", "generator_map", "largest_ce",
           "plausible_maps", "population_ce", "reference_gap", "scaled_maps",
           "world_replicates", "world_reps", "world_sample"]
