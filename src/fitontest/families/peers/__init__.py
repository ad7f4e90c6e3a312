"""The field's calibration-error estimators as evaluators, computed by their own
packages (docs/methods/03-binary-families.md §3.12): one module per package, each
registering its families with ``@register``; ``pip install "fitontest[peers]"`` installs them.

| family | package | estimate (p = 1 / p = 2) | map | own interval |
| --- | --- | --- | --- | --- |
| ``probmetrics_catboost``, ``probmetrics_isotonic``, ``probmetrics_ts`` | probmetrics | cross-fitted proper-L1 loss gain / half the Brier loss gain | no | no |
| ``ucal_debiased`` | uncertainty-calibration | debiased ES-15 L1 / debiased squared L2 | no | bootstrap |
| ``relplot_smece`` | relplot | smECE / none | its smoothed curve | bootstrap |
| ``netcal_ace`` | netcal | ACE / none | no | no |
| ``torchmetrics_ece`` | torchmetrics | EW-15 ECE / squared L2 ECE | no | no |
| ``venn_abers`` | venn-abers | plug-in of the IVAP map | the IVAP map | per score only |
| ``probcal_skce`` | probcal | signed root of the SKCE / the SKCE | no | no |

The packages are imported when a family is fitted, never by this package, so
``fitontest`` and its registry load without them; a missing one raises
:class:`~fitontest.core.extras.MissingExtraError` naming the extra.
"""  # noqa: E501  (a table: its rows are not wrapped)
from fitontest.core.registry import import_submodules

# every module here registers its families (a new peer is one module)
import_submodules(__name__, __path__)
