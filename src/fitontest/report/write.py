"""Every table to disk: CSV, Markdown, LaTeX, and the critical-difference diagrams.

Output naming scheme (:func:`write_all`): every table ``NAME`` of
:data:`fitontest.report.specs.SPECS` is written for every truth estimator
``T`` present as ``NAME__T.{csv,ranks.csv,ci.csv,md,tex}``; the tables of the
main truth (:data:`.policy.MAIN_TRUTH`; the first truth present if it is
absent; :data:`.policy.SYNTHETIC_TRUTH` for synthetic tables) are also written without suffix as
``NAME.{...}``. ``NAME.csv`` holds the displayed numbers (already x 1000
where the caption says so) at full precision; ``NAME.ranks.csv`` the ranks
with the "avg. rank" row; ``NAME.ci.csv`` one line per cell with ``mean``,
``ci_lo``, ``ci_hi``, ``n_units``, ``best`` and ``not_worse`` (the markers);
files a table does not have are not written. For the tables with a Friedman
test (Table 2 CEAC, Table 3 CMEE, Table 4 CE error and Spearman) the main
truth's critical-difference diagram is ``NAME.cd.{pdf,png}``. The main
truth's tables are also ``NAME.html`` (:mod:`fitontest.report.html_table`;
what ``snakemake --report`` shows). An ``index.md`` listing every table is
written last.

Table names: ``table2_ceac``, ``table2_ceac_by_model`` (CEAC of every
calibrator, rows = task, or (model, task)), ``table2_cmee_binary``,
``table2_cmee_binary_by_model``; ``table3_cmee`` (sections overall, by
model, by size, by task) and the sections alone ``table3_cmee_overall``,
``_by_model``, ``_by_size``, ``_by_task``; ``table4_ce_error_ovr``,
``table4_ce_error_confidence``, ``table4_spearman_ovr``,
``table4_spearman_confidence`` (rows = size; "ovr" = every task except
``confidence``); ``hyper_mean_by_size``, ``hyper_mode_by_size``;
``synthetic_{cmee,ce_error,spearman}`` (sections = shape, rows = size) with
their ``_by_shape`` / ``_by_size`` versions; ``coverage_ovr``,
``coverage_confidence``, ``synthetic_coverage`` (only when the frames carry
CE intervals). L2 variants insert ``_sq`` after the measure
(``table3_cmee_sq_by_size``, ``table4_spearman_sq_ovr``); standard deviations
over seeds append ``_std`` (``table3_cmee_std``, ``table4_ce_error_ovr_std``).
A table whose input is missing is not written.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import pandas as pd

from fitontest.core.io import write_text
from .frames import truths
from .html_table import table_html
from .policy import MAIN_TRUTH, SYNTHETIC_TRUTH, with_scope
from .specs import build_tables
from .table import Table, to_csv


def write_table(table: Table, out_dir, name: str | None = None,
                html: bool = False) -> list[Path]:
    """Write ``{name}.csv``, ``.ranks.csv`` (if ranked), ``.ci.csv`` (if it has
    intervals), ``.md``, ``.tex`` and, with ``html``, ``.html`` into ``out_dir``
    atomically; returns the paths."""
    out_dir = Path(out_dir)
    name = name or table.name
    paths = [write_text(out_dir / f"{name}.csv", to_csv(table.values))]
    ranks = table.ranks_with_average()
    if ranks is not None:
        r = ranks.copy()
        r.index.name = "group"
        paths.append(write_text(out_dir / f"{name}.ranks.csv", r.reset_index().to_csv(
            index=False, float_format="%.10g", na_rep="")))
    ci = table.intervals_long()
    if ci is not None:
        paths.append(write_text(out_dir / f"{name}.ci.csv", ci.to_csv(
            index=False, float_format="%.10g", na_rep="")))
    paths.append(write_text(out_dir / f"{name}.md", table.to_markdown()))
    paths.append(write_text(out_dir / f"{name}.tex", table.to_latex()))
    if html:
        paths.append(write_text(out_dir / f"{name}.html", table_html(table)))
    return paths


def _main(present: list[str], main: str) -> str | None:
    if not present:
        return None
    return main if main in present else present[0]


def write_cd_diagram(table: Table, out_dir) -> list[Path]:
    """``{table.name}.cd.{pdf,png}`` when the table has a Friedman test with
    at least three methods over complete blocks (else nothing)."""
    from .figures.cd import critical_difference_diagram
    from .figures.output import save
    from ..inference.stats import complete_blocks

    if table.blocks is None:
        return []
    w = complete_blocks(table.blocks)
    if w.shape[1] < 3 or w.shape[0] < 2:
        return []
    ax = critical_difference_diagram(table.blocks, lower_is_better=table.lower_is_better,
                                     title=table.name)
    return save(ax.figure, Path(out_dir) / f"{table.name}.cd")


def write_all(scores: pd.DataFrame | None, calibrators: pd.DataFrame | None, out_dir,
              synthetic: pd.DataFrame | None = None,
              ranked_calibrators: Sequence[str] | None = None,
              main_truth: str = MAIN_TRUTH, cd_diagrams: bool = True,
              scope: str = "architectures") -> list[Path]:
    """Write every table under every truth (naming scheme in the module docstring).

    ``scope``: what the intervals generalise to (:func:`.policy.with_scope`).
    Returns the written paths; ``index.md`` (a list of the tables with their
    captions) is written last and is the final path.
    """
    out_dir = Path(out_dir)
    paths: list[Path] = []
    index: list[str] = ["# Tables", "",
                        "`NAME__TRUTH.*` exist for every truth estimator; `NAME.*` (no suffix) "
                        "are the main truth's. docs/guide/reading-the-tables.md explains the "
                        "intervals, markers and critical-difference diagrams.", ""]
    frames = {"scores": with_scope(scores, scope), "calibrators": with_scope(calibrators, scope),
              "synthetic": synthetic}

    def emit(tables: list[Table], truth: str, is_main: bool) -> None:
        for t in tables:
            paths.extend(write_table(t, out_dir, f"{t.name}__{truth}"))
            if is_main:
                paths.extend(write_table(t, out_dir, t.name, html=True))
                if cd_diagrams:
                    paths.extend(write_cd_diagram(t, out_dir))
            index.append(f"- `{t.name}__{truth}`{' (main: `' + t.name + '`)' if is_main else ''}: "
                         f"{t.full_caption()}")

    real = truths(scores, calibrators)
    main = _main(real, main_truth)
    for truth in real:
        emit(build_tables(frames, truth, ranked_calibrators=ranked_calibrators), truth,
             truth == main)
    syn = truths(synthetic)
    syn_main = _main(syn, SYNTHETIC_TRUTH)
    for truth in syn:
        emit(build_tables(frames, truth, sources=("synthetic",)), truth, truth == syn_main)
    paths.append(write_text(out_dir / "index.md", "\n".join(index) + "\n"))
    return paths
