"""Methods layer: binary calibration-map families (calibrators and evaluators
alike), multi-class calibrators, CE metrics and their bootstrap intervals.
Imports only the foundation (``fitontest.core``)."""
