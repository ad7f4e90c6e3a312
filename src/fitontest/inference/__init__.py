"""The inference layer: what makes a number of this project carry a measured error rate.

- :mod:`.intervals` -- CE intervals (``ce_interval``; docs/methods/11-intervals.md §11.1-§11.3);
- :mod:`.bands`, :mod:`.monotone_band` -- bands for the calibration map
  (``reliability_band``; §11.9);
- :mod:`.calibration_tests` -- tests of perfect calibration (``calibration_test``; §11.8);
- :mod:`.worlds` -- worlds with a known map shaped like the data (§14.1), shared by
  the ``inverted`` interval and the chooser;
- :mod:`.choose`, :mod:`.candidates` -- the evaluator chooser on binary tasks (§14.2;
  the front door is :func:`fitontest.choose_evaluator`);
- :mod:`.stats` -- the tables' statistics: cluster t-intervals, Holm, the
  significance markers, Friedman and Nemenyi (§11.4-§11.6), also the chooser's;
- what they share: :mod:`.domains` (the measured domain behind every ``valid``
  flag, package data in ``measured/``), :mod:`.sizes` (the reference map's bin
  rule, the block size of redrawn label matrices).

The package sits in the methods layer (docs/architecture.md): it imports the
families and the foundation, never the study, report or front-door layers.
Its modules are the homes of their names: the older addresses
(``fitontest.intervals``, ``fitontest.bands``, ``fitontest.calibration_tests``,
``fitontest.worlds``, the interval names of ``fitontest.metrics``) warn and
point here (:data:`fitontest.core.moved.MOVED`).
"""
