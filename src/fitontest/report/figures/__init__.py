"""The figures (matplotlib, Agg backend), one module per kind.

- :mod:`.reliability`: reliability diagrams in four styles (Figure 4);
- :mod:`.maps`: fit-on-test diagram (Figure 5), logit-logit plot (Figure 7);
- :mod:`.shapes`: the synthetic shapes (Figure 8);
- :mod:`.study`: ranking of calibrators (Figure 15), summary by test size;
- :mod:`.cd`: critical-difference diagram of a table's Friedman blocks;
- :mod:`.smooth`: smooth reliability diagram (smECE map) with a bootstrap band;
- :mod:`.output`: :func:`~.output.save` and the figure sets of the workflow.

Every plotting function takes ``ax=None`` (a new figure is made) and returns
the Axes it drew on (``synthetic_shapes_figure`` returns an array of Axes).
"""
import matplotlib

matplotlib.use("Agg")   # headless; every submodule imports this package first
