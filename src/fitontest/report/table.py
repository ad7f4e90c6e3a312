"""The :class:`Table` object and its CSV, Markdown and LaTeX renderings.

Layout (as in the paper): evaluators (or calibrators) are the **columns**,
aggregation groups are the **rows**. Within each row the columns are ranked
(1 = best; ties share the average rank; NaN cells get no rank) and a final
row "avg. rank" averages each column's ranks. Undefined cells show "–"
("--" in LaTeX).

A cell with an interval shows ``mean ± half-width`` of its 95 % interval (just
the mean when the interval is undefined); the best cell of a row is **bold**
and every cell not significantly worse than it is underlined (``<u>..</u>`` in
Markdown, ``\\underline`` in LaTeX). The CSV files: ``NAME.csv`` the displayed
means (wide, full precision), ``NAME.ranks.csv`` the ranks and "avg. rank",
``NAME.ci.csv`` one line per cell (long format: group, column, mean, ci_lo,
ci_hi, n_units, best, not_worse) for tables with intervals.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

AVG_RANK = "avg. rank"
DASH_MD = "–"
DASH_TEX = "--"


@dataclass
class Table:
    """A table of numbers with per-row ranks, intervals and markers.

    ``values``: rows = groups (a plain index, or a two-level MultiIndex whose
    first level is a section), columns = evaluators or calibrators; numbers
    as displayed (already scaled). ``ranks``, ``lo``, ``hi``, ``n_units``,
    ``best``, ``not_worse``: same shape, or None where the table has none.
    ``blocks``: blocks x columns matrix of the Friedman test and the
    critical-difference diagram (None: no test).
    """

    values: pd.DataFrame
    ranks: pd.DataFrame | None
    name: str
    caption: str
    lower_is_better: bool = True
    scale: float = 1000.0
    decimals: int | None = None     # None: chosen from the magnitude of the values
    notes: list[str] = field(default_factory=list)
    lo: pd.DataFrame | None = None
    hi: pd.DataFrame | None = None
    n_units: pd.DataFrame | None = None
    best: pd.DataFrame | None = None
    not_worse: pd.DataFrame | None = None
    blocks: pd.DataFrame | None = None
    friedman_p: float = float("nan")
    bracket: bool = False           # show intervals as [lo, hi] (asymmetric ones)

    @property
    def avg_rank(self) -> pd.Series | None:
        """Mean rank of each column over the rows where it is ranked."""
        if self.ranks is None:
            return None
        return self.ranks.mean(axis=0, skipna=True)

    def ranks_with_average(self) -> pd.DataFrame | None:
        if self.ranks is None:
            return None
        r = self.ranks.copy()
        r.index = flat_index(r.index)
        avg = self.avg_rank.to_frame().T
        avg.index = [AVG_RANK]
        return pd.concat([r, avg])

    def renamed(self, name: str, caption: str | None = None) -> "Table":
        return replace(self, name=name, caption=self.caption if caption is None else caption)

    def full_caption(self) -> str:
        return " ".join([self.caption, *self.notes]).strip()

    def intervals_long(self) -> pd.DataFrame | None:
        """One line per cell: group, column, mean, ci_lo, ci_hi, n_units, best, not_worse."""
        if self.lo is None:
            return None
        parts = {"mean": self.values, "ci_lo": self.lo, "ci_hi": self.hi,
                 "n_units": self.n_units, "best": self.best, "not_worse": self.not_worse}
        r, c = self.values.shape
        out = pd.DataFrame({"group": np.repeat(flat_index(self.values.index).to_numpy(), c),
                            "column": np.tile(self.values.columns.to_numpy(), r)})
        for k, v in parts.items():
            out[k] = v.to_numpy().ravel()     # row-major: (group, column) as above
        return out

    # -- rendering ------------------------------------------------------
    def _decimals(self) -> int:
        if self.decimals is not None:
            return self.decimals
        v = np.abs(self.values.to_numpy(dtype=np.float64).ravel())
        v = v[np.isfinite(v) & (v > 0)]
        if v.size == 0:
            return 1
        return int(np.clip(2 - math.floor(math.log10(float(np.median(v)))), 0, 4))

    def _cells(self, latex: bool) -> tuple[list[tuple[str, str]], list[list[str]]]:
        """Row (section, label) pairs and formatted cells, avg-rank row last."""
        dec = self._decimals()
        dash = DASH_TEX if latex else DASH_MD
        labels = row_labels(self.values.index)
        shape = self.values.shape

        def arr(frame, default):   # one numpy array per part: .iat per cell is slow
            return np.full(shape, default, dtype=object) if frame is None else frame.to_numpy()
        v, r = self.values.to_numpy(), arr(self.ranks, None)
        lo, hi = arr(self.lo, np.nan), arr(self.hi, np.nan)
        best, tie = arr(self.best, False), arr(self.not_worse, False)
        rows = []
        for i in range(shape[0]):
            cells = []
            for j in range(shape[1]):
                mark = "best" if best[i, j] else "tie" if tie[i, j] else ""
                half = (lo[i, j], hi[i, j]) if self.bracket else (hi[i, j] - lo[i, j]) / 2
                cells.append(fmt_cell(v[i, j], r[i, j], half, mark, dec, latex, dash))
            rows.append(cells)
        if self.ranks is not None:
            labels.append(("", AVG_RANK))
            rows.append([dash if not np.isfinite(a) else f"{a:.2f}" for a in self.avg_rank])
        return labels, rows

    def _row_header(self) -> str:
        names = [n for n in self.values.index.names if n is not None]
        if isinstance(self.values.index, pd.MultiIndex):
            names = names[1:]
        return " / ".join(str(n) for n in names)

    def to_markdown(self) -> str:
        labels, rows = self._cells(latex=False)
        cols = [str(c) for c in self.values.columns]
        out = [f"**{self.name}** — {self.full_caption()}", "",
               "| " + " | ".join([self._row_header()] + cols) + " |",
               "|" + "|".join([":---"] + ["---:"] * len(cols)) + "|"]
        last_section = None
        for (section, label), cells in zip(labels, rows):
            if section and section != last_section:
                out.append("| " + " | ".join([f"**{section}**"] + [""] * len(cols)) + " |")
            last_section = section or last_section
            lab = f"*{label}*" if label == AVG_RANK else str(label)
            out.append("| " + " | ".join([lab] + cells) + " |")
        return "\n".join(out) + "\n"

    def to_latex(self) -> str:
        labels, rows = self._cells(latex=True)
        cols = [tex_escape(str(c)) for c in self.values.columns]
        ncol = len(cols) + 1
        body = [r"\toprule",
                " & ".join([tex_escape(self._row_header())] + cols) + r" \\",
                r"\midrule"]
        last_section = None
        for (section, label), cells in zip(labels, rows):
            if label == AVG_RANK:
                body.append(r"\midrule")
            elif section and section != last_section:
                if last_section is not None:
                    body.append(r"\midrule")
                body.append(rf"\multicolumn{{{ncol}}}{{l}}{{\textit{{{tex_escape(section)}}}}} \\")
            last_section = section or last_section
            body.append(" & ".join([tex_escape(str(label))] + cells) + r" \\")
        body.append(r"\bottomrule")
        tabular = [rf"\begin{{tabular}}{{l{'r' * len(cols)}}}", *body, r"\end{tabular}"]
        if len(cols) > 8:
            tabular = [r"\resizebox{\linewidth}{!}{%", *tabular, "}"]
        return "\n".join([
            "% generated by fitontest.report; needs \\usepackage{booktabs,graphicx}",
            r"\begin{table}[t]",
            r"\centering",
            rf"\caption{{{tex_escape(self.full_caption())}}}",
            rf"\label{{tab:{self.name}}}",
            *tabular,
            r"\end{table}",
        ]) + "\n"


def fmt_rank(r: float) -> str:
    return f"{r:.0f}" if float(r).is_integer() else f"{r:.1f}"


def fmt_cell(v, r, half, mark: str, dec: int, latex: bool, dash: str) -> str:
    """``mean ± half`` (half omitted when NaN; a (lo, hi) pair shows as
    ``mean [lo, hi]``), the rank, and the marker (``mark``: "best" bold,
    "tie" underlined, "" plain)."""
    if v is None or not np.isfinite(v):
        return dash
    num = f"{v:.{dec}f}"
    if isinstance(half, tuple):
        if np.all(np.isfinite(half)):
            num += f" [{half[0]:.{dec}f}, {half[1]:.{dec}f}]"
    elif half is not None and np.isfinite(half):
        num += (r" \pm " if latex else " ± ") + f"{half:.{dec}f}"
    if latex:
        num = {"best": rf"\mathbf{{{num}}}", "tie": rf"\underline{{{num}}}"}.get(mark, num)
        rank = "" if r is None or not np.isfinite(r) else f"_{{{fmt_rank(r)}}}"
        return f"${num}{rank}$"
    num = {"best": f"**{num}**", "tie": f"<u>{num}</u>"}.get(mark, num)
    return num if r is None or not np.isfinite(r) else f"{num} ({fmt_rank(r)})"


_TEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
                "^": r"\textasciicircum{}", "–": "--", "×": r"$\times$", "|": r"$|$",
                "−": "-", "±": r"$\pm$", "χ": r"$\chi$", "²": r"\textsuperscript{2}",
                "α": r"$\alpha$",
                "≥": r"$\geq$"}


def tex_escape(s: str) -> str:
    return "".join(_TEX_SPECIAL.get(ch, ch) for ch in s)


def label(v) -> str:
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return str(int(v))
    return str(v)


def row_labels(index: pd.Index) -> list[tuple[str, str]]:
    if isinstance(index, pd.MultiIndex):
        return [(label(t[0]), " / ".join(label(x) for x in t[1:])) for t in index]
    return [("", label(v)) for v in index]


def flat_index(index: pd.Index) -> pd.Index:
    if isinstance(index, pd.MultiIndex):
        return pd.Index([" / ".join(label(x) for x in t) for t in index])
    return pd.Index([label(v) for v in index])


def sections(parts) -> pd.DataFrame:
    """Stack wide tables into one with a (section, group) MultiIndex."""
    frames = []
    for lab, wide in parts:
        w = wide.copy()
        w.index = pd.MultiIndex.from_tuples(
            [(lab, rl) for _, rl in row_labels(w.index)], names=["section", "group"])
        frames.append(w)
    return pd.concat(frames)


def to_csv(frame: pd.DataFrame) -> str:
    """Wide frame -> CSV text, the row labels as leading column(s)."""
    f = frame.copy()
    if isinstance(f.index, pd.MultiIndex):
        f = f.reset_index()
    else:
        f.index = flat_index(f.index)
        f.index.name = frame.index.name or "group"
        f = f.reset_index()
    return f.to_csv(index=False, float_format="%.10g", na_rep="")
