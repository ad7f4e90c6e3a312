"""The paper's tables and figures from the tidy result frames.

- :mod:`.frames`: ordering, truth / task selection, Spearman per group;
- :mod:`.stats`: intervals, significance markers, Friedman test;
- :mod:`.aggregate`: tidy frame -> wide table of cell means, intervals, units;
- :mod:`.table`: the :class:`~.table.Table` object and its CSV / Markdown / LaTeX;
- :mod:`.specs`: the paper's tables declared as data, and their builder;
- :mod:`.coverage`: coverage of the evaluators' CE intervals;
- :mod:`.html_table`: a table as an HTML page (for ``snakemake --report``);
- :mod:`.write`: every table (and the critical-difference diagrams) to disk;
- :mod:`.figures`: the figures, one module per kind.
"""
