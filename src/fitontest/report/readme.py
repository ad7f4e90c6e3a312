"""The user guide's "What the default shows" block, generated from a run's results.

The block sits between :data:`BEGIN` and :data:`END` in :data:`PAGE`
(``docs/guide/findings.md``; the README links to it);
:func:`render` writes it from the run's ``findings.csv`` (the headline
counts, the claims table) and Table 3's interval file
(``tables/table3_cmee.ci.csv``: the "all" row in words), so that no number in
it is typed::

    python -m fitontest.report.readme results/default            # rewrite docs/guide/findings.md
    python -m fitontest.report.readme results/default --print    # print the block

``--beside OTHER`` prints instead the claims of the two runs side by side
(docs/guide/tabular.md, "Do the paper's conclusions travel?"): each claim's verdict and,
in brackets, its point order.

``--snapshot benchmarks/measured/default_run.md`` also keeps the run's own
numbers in a committed file (Table 3's "all" row, ``findings.md``), which the
block cites, so every number in it is in a file the docs test reads
(tests/test_docs_ledger.py).
"""
from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from fitontest.core.io import write_text
from .findings import FAILS, HOLDS, headline

BEGIN = "<!-- what-the-default-shows: begin (python -m fitontest.report.readme) -->"
END = "<!-- what-the-default-shows: end -->"
#: the page whose block :func:`main` rewrites by default
PAGE = Path("docs") / "guide" / "findings.md"
TABLE3 = Path("tables") / "table3_cmee.ci.csv"
ALL_ROW = "overall / all"


def _cell(r) -> str:
    half = (r.ci_hi - r.ci_lo) / 2
    return f"`{r.column}` ({r.mean:.1f} ± {half:.1f})"


def table3_words(ci: pd.DataFrame, cite: str = "") -> str:
    """Table 3's "all" row in words: the columns marked significantly worse
    (the three worst named) and the set not distinguishable from the best."""
    row = ci[ci["group"] == ALL_ROW].dropna(subset=["mean"]).sort_values("mean")
    if row.empty:
        return ""
    keep = row[row["not_worse"].astype(bool)]
    worse = row[~row["not_worse"].astype(bool)].sort_values("mean", ascending=False)
    k = int(row["n_units"].max())
    named = ", ".join(_cell(r) for r in worse.head(3).itertuples())
    return (f"Table 3's \"all\" row ({k} independent clusters) marks {len(worse)} of its "
            f"{len(row)} evaluators significantly worse than another"
            + (f" — {named} the worst" if named else "")
            + f" — and leaves {', '.join(_cell(r) for r in keep.itertuples())} as the set "
            f"not distinguishable from the best (CMEE ×1000, mean ± 95 % half-width"
            + (f"; {cite}" if cite else "") + ").")


def render(findings: pd.DataFrame, table3: pd.DataFrame | None = None, run: str = "",
           cite: str = "") -> str:
    """The block (without the markers): headline, Table 3's "all" row, claims table;
    ``cite``: the snapshot file that holds the run's numbers."""
    lines = [f"{run + ': ' if run else ''}{headline(findings)}"
             + (f" (the run's numbers: {cite})" if cite else "") + "."]
    if table3 is not None:
        words = table3_words(table3, cite)
        if words:
            lines += ["", words]
    lines += ["", "| id | the paper says | verdict | margin | point order | what it would take |",
              "|:---|:---|:---|:---|:---|:---|"]
    for r in findings.astype(object).fillna("").itertuples():
        status = r.status if r.status not in ("supported", "contradicted", "equivalent") \
            else f"**{r.status}**"
        point = r.point if r.point in (HOLDS, FAILS) else "–"
        lines.append(f"| `{r.id}` | {r.paper} | {status} | {r.margin or '–'} | {point} | "
                     f"{str(r.takes).replace('|', '/') or '–'} |")
    return "\n".join(lines) + "\n"


def load(results: str | Path) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """The run's ``findings.csv`` and Table 3's interval file (None if absent)."""
    results = Path(results)
    t3 = results / TABLE3
    return (pd.read_csv(results / "findings.csv", keep_default_na=False),
            pd.read_csv(t3) if t3.is_file() else None)


def snapshot(results: str | Path, table3: pd.DataFrame | None, run: str = "") -> str:
    """The run's numbers the block quotes, as a measured file: Table 3's "all"
    row (``table3``, mean and 95 % half-width as the block prints them, and
    unrounded) and the run's ``findings.md`` verbatim."""
    results = Path(results)
    lines = ["# What the default shows: the run behind the guide's block", "",
             f"Written by `python -m fitontest.report.readme {results} --snapshot FILE`"
             + (f"; run: {run}" if run else "") + ".", ""]
    if table3 is not None:
        row = table3[table3["group"] == ALL_ROW].dropna(subset=["mean"]).sort_values("mean")
        lines += [f"## Table 3, row \"{ALL_ROW}\" (CMEE ×1000; `{TABLE3}`)", "",
                  "| column | mean | ± half-width | mean (unrounded) | lo | hi | clusters "
                  "| not significantly worse |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        lines += [f"| {r.column} | {r.mean:.1f} | {(r.ci_hi - r.ci_lo) / 2:.1f} | {r.mean!r} | "
                  f"{r.ci_lo!r} | {r.ci_hi!r} | {int(r.n_units)} | {bool(r.not_worse)} |"
                  for r in row.itertuples()]
        lines.append("")
    findings = results / "findings.md"
    if findings.is_file():
        lines += ["## findings.md", "", findings.read_text(encoding="utf-8").strip(), ""]
    return "\n".join(lines)


def replace_block(text: str, block: str) -> str:
    """``text`` with the part between the markers replaced by ``block``."""
    if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
        raise ValueError(f"expected one {BEGIN!r} before one {END!r}")
    head, rest = text.split(BEGIN)
    _, tail = rest.split(END)
    return f"{head}{BEGIN}\n{block}{END}{tail}"


def _verdict(r) -> str:
    status = f"**{r.status}**" if r.status in ("supported", "contradicted", "equivalent") \
        else r.status
    return status if r.status == "not testable" else f"{status} ({r.point})"


def beside(a: pd.DataFrame, b: pd.DataFrame, names: tuple[str, str]) -> str:
    """The claims of two runs' ``findings.csv`` side by side, as a Markdown table."""
    b = b.set_index("id")
    lines = [f"| claim | the paper says | {names[0]} | {names[1]} |", "|---|---|---|---|"]
    lines += [f"| `{r.id}` | {r.paper} | {_verdict(r)} | "
              f"{_verdict(b.loc[r.id]) if r.id in b.index else '–'} |" for r in a.itertuples()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fitontest.report.readme", description=__doc__
                                 .splitlines()[0])
    ap.add_argument("results", help="results/<exp> of a finished run")
    ap.add_argument("--readme", default=str(PAGE), help="the file whose block to rewrite")
    ap.add_argument("--run", default="", help="words naming the run (date, clusters)")
    ap.add_argument("--print", action="store_true", help="print the block, write nothing")
    ap.add_argument("--snapshot", default="", help="also write the run's numbers to this "
                    "file (e.g. benchmarks/measured/default_run.md), which the block cites")
    ap.add_argument("--beside", default="", help="print the claims of this run's and "
                    "another run's (results/<exp>) findings side by side, write nothing")
    args = ap.parse_args(argv)
    findings, table3 = load(args.results)
    if args.beside:
        other, _ = load(args.beside)
        print(beside(findings, other, (f"`{Path(args.results).name}`",
                                       f"`{Path(args.beside).name}`")), end="")
        return 0
    block = render(findings, table3, args.run, args.snapshot)
    if args.print:
        print(block, end="")
        return 0
    if args.snapshot:
        write_text(Path(args.snapshot), snapshot(args.results, table3, args.run))
    path = Path(args.readme)
    write_text(path, replace_block(path.read_text(encoding="utf-8"), block))
    print(f"rewrote the block of {path} from {args.results}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
