"""Tests of calibration: :mod:`fitontest.inference.calibration_tests` (docs/methods/11-tests-and-bands.md
§11.8), whose public names are re-exported here, where they were first published."""
from .inference.calibration_tests import (CalibrationTestResult, METHODS, calibration_test,
                                          consistency_null, cumulative_differences,
                                          range_bm_sf, sup_abs_bm_sf, sup_bm_sf, tcal_grid)

__all__ = ["CalibrationTestResult", "METHODS", "calibration_test", "consistency_null",
           "cumulative_differences", "range_bm_sf", "sup_abs_bm_sf", "sup_bm_sf", "tcal_grid"]
