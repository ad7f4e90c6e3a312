"""The paper's tables and figures from the tidy result frames.

- :mod:`.policy`: the statistics policy: units, independent clusters and
  population of each kind of table, main truth, scale, interval and markers;
- :mod:`.frames`: ordering, truth / task selection, Spearman per group;
- :mod:`.stats`: intervals, significance markers, Friedman test;
- :mod:`.aggregate`: tidy frame -> wide table of cell means, intervals, units;
- :mod:`.table`: the :class:`~.table.Table` object and its CSV / Markdown / LaTeX;
- :mod:`.specs`: the paper's tables declared as data, and their builder;
- :mod:`.coverage`: coverage of the evaluators' CE intervals;
- :mod:`.html_table`: a table as an HTML page (for ``snakemake --report``);
- :mod:`.write`: every table (and the critical-difference diagrams) to disk;
- :mod:`.claims`, :mod:`.checks`, :mod:`.findings`: the paper's claims, the
  check kinds, and which claims a run reproduces;
- :mod:`.simulate`, :mod:`.verdicts`: synthetic score frames with the study's
  dependence, and the measured error rates of the verdicts (A/A, coverage,
  replication);
- :mod:`.figures`: the figures, one module per kind.
"""
