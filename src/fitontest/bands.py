"""Bands for the calibration map: :mod:`fitontest.inference.bands` and
:mod:`fitontest.inference.monotone_band` (docs/methods/11-tests-and-bands.md §11.9), whose public
names are re-exported here, where they were first published."""
from .inference.bands import (AUTO, AUTO_REASON, BandCoverageWarning, METHODS,
                              ReliabilityBand, SIMULTANEOUS, WORLD_BAND_SCALE,
                              WORLD_BAND_WORLDS, WorldParts, band_method, band_validity,
                              monotone_band_test, reliability_band, world_ends, world_parts)
from .inference.monotone_band import (default_groups, dyadic_runs, score_groups)

__all__ = ["AUTO", "AUTO_REASON", "BandCoverageWarning", "METHODS", "ReliabilityBand",
           "SIMULTANEOUS", "WORLD_BAND_SCALE", "WORLD_BAND_WORLDS", "WorldParts",
           "band_method", "band_validity", "default_groups", "dyadic_runs",
           "monotone_band_test", "reliability_band", "score_groups", "world_ends",
           "world_parts"]
