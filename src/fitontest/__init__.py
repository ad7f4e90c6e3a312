"""fitontest: evaluate classifier calibration in the fit-on-test view.

A calibration-map family fitted on validation data is a post-hoc calibrator;
fitted on test data it is an evaluator. Both come from one registry:

>>> from fitontest import families, metrics
>>> fam = families.get("ece_es15").fit(scores, labels)      # doctest: +SKIP
>>> metrics.ce_estimate(scores, fam.predict(scores), p=1)   # doctest: +SKIP
"""
__version__ = "0.1.0"
