"""A :class:`~fitontest.report.table.Table` as a standalone HTML page.

Snakemake's HTML report shows HTML files inline but offers Markdown only as
a download, so the ``tables`` rule also writes the main tables as
``NAME.html`` (:func:`fitontest.report.write.write_all`) for
``snakemake --report``. The cells are those of the Markdown rendering
(mean ± half-width of the 95 % interval, the row rank in parentheses, the
best cell **bold**, cells not significantly worse underlined);
docs/guide/reading-the-tables.md explains them.
"""
from __future__ import annotations

import html
import re

from .table import AVG_RANK, Table

_STYLE = ("body{font-family:sans-serif;font-size:14px;margin:1em}"
          "table{border-collapse:collapse}"
          "th,td{padding:2px 8px;border-bottom:1px solid #ddd;white-space:nowrap}"
          "td.num{text-align:right}th{border-bottom:2px solid #444}"
          "tr.section td{font-style:italic;background:#f3f3f3}"
          "tr.avg td{border-top:2px solid #444;font-style:italic}")


def title(name: str) -> str:
    """``table3_cmee`` -> ``Table 3 (table3_cmee)``; other names as they are."""
    m = re.match(r"table(\d+)_", name)
    return f"Table {m.group(1)} ({name})" if m else name


def report_group(name: str) -> str:
    """The subcategory of table ``name`` in ``snakemake --report``: ``Table 2``
    .. ``Table 4`` (with their L2, by-model and standard-deviation variants),
    ``Synthetic study``, ``Interval coverage``, ``Hyper-parameters``."""
    m = re.match(r"table(\d+)_", name)
    if m:
        return f"Table {m.group(1)}"
    if "coverage" in name:
        return "Interval coverage"
    if name.startswith("synthetic"):
        return "Synthetic study"
    if name.startswith("hyper"):
        return "Hyper-parameters"
    return "Other tables"


def _cell(markdown: str) -> str:
    """A Markdown cell of :meth:`Table.to_markdown` (``**best**``,
    ``<u>not worse</u>``) as HTML, everything else escaped."""
    text = html.escape(markdown, quote=False)
    text = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", text)
    return re.sub(r"&lt;u&gt;(.+?)&lt;/u&gt;", r"<u>\1</u>", text)


def table_html(table: Table) -> str:
    """A complete HTML document: title, caption (with the table's notes) and
    the table with section rows and the "avg. rank" row."""
    labels, rows = table._cells(latex=False)
    cols = [html.escape(str(c)) for c in table.values.columns]
    head = "".join(f"<th>{c}</th>" for c in [html.escape(table._row_header())] + cols)
    body = []
    last_section = None
    for (section, label), cells in zip(labels, rows):
        if section and section != last_section:
            body.append(f'<tr class="section"><td colspan="{len(cols) + 1}">'
                        f"{html.escape(section)}</td></tr>")
        last_section = section or last_section
        cls = ' class="avg"' if label == AVG_RANK else ""
        tds = "".join(f'<td class="num">{_cell(c)}</td>' for c in cells)
        body.append(f"<tr{cls}><td>{html.escape(str(label))}</td>{tds}</tr>")
    name = html.escape(title(table.name))
    return "\n".join([
        "<!DOCTYPE html>",
        f'<html><head><meta charset="utf-8"><title>{name}</title>',
        f"<style>{_STYLE}</style></head><body>",
        f"<h2>{name}</h2>",
        f"<p>{html.escape(table.full_caption())}</p>",
        f"<table><thead><tr>{head}</tr></thead>",
        "<tbody>", *body, "</tbody></table>",
        "</body></html>",
    ]) + "\n"
