"""Docs quote files: every measured number in README.md, config/README.md and
docs/ comes from a committed file (issue 47).

The ledger is the text itself: a paragraph (or a list item, or a table with
the paragraph that introduces it) that quotes measured numbers names the file
that holds them -- ``benchmarks/measured/...`` -- and each decimal number it
quotes must appear, as written, in one of the files it names. A number is a
*measurement* when a unit of measure follows it (%, s, CPU-s, min, h, or ±
and × 1e-3 for a mean and its error); a block quoting one must name a file.
Numbers in code spans, math spans and fenced code are commands, formulas and
printed output, not quotes.

Editing a quoted number away from its file, or quoting a measurement without
naming the file, fails here (tests/test_docs_ledger.py lists the block).
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import REPO

#: a file a block may cite: the benchmarks' measured files
CITE = re.compile(r"benchmarks/measured/[A-Za-z0-9_./-]*[A-Za-z0-9_-]\.(?:md|txt|json|csv)")
#: a decimal number, not part of a version, a section number or a path
NUMBER = re.compile(r"(?<![\w.§/-])[-+−]?\d+\.\d+(?![\d.]*\d)(?!\.\d)")
#: a decimal number followed by a unit of measure: a measurement
MEASURED = re.compile(r"(?<![\w.§/-])\d+\.\d+\s*(?:%|s\b|CPU|min\b|h\b|±|×\s*1e|x\s*1e)")


def doc_files() -> list[Path]:
    return [REPO / "README.md", REPO / "config" / "README.md",
            *sorted((REPO / "docs").rglob("*.md"))]


def blocks(text: str):
    """(first line number, block) of every paragraph / list / table, fenced code skipped."""
    out, cur, start, fence = [], [], 0, False
    for i, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        if fence:
            continue
        if not line.strip():
            if cur:
                out.append((start, "\n".join(cur)))
                cur = []
        else:
            if not cur:
                start = i
            cur.append(line)
    if cur:
        out.append((start, "\n".join(cur)))
    return out


def prose(block: str) -> str:
    """The block without code spans and math spans."""
    block = re.sub(r"`[^`]*`", " ", block)
    return re.sub(r"\$[^$]*\$", " ", block)


def ledger(path: Path):
    """(line, cited files, numbers not found in them, measurements without a file)."""
    previous: list[str] = []
    for line, block in blocks(path.read_text(encoding="utf-8")):
        cites = CITE.findall(block)
        table = block.lstrip().startswith("|")
        if table and not cites:
            cites = previous                # a table quotes what its paragraph cites
        if not table:
            previous = cites
        text = prose(block)
        if cites:
            held = [(REPO / c).read_text(encoding="utf-8") if (REPO / c).is_file() else ""
                    for c in cites]
            missing = [n for n in NUMBER.findall(text)
                       if not any(n.replace("−", "-").lstrip("+") in h for h in held)]
            yield line, cites, missing, []
        else:
            yield line, [], [], MEASURED.findall(text)


@pytest.mark.parametrize("path", doc_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_quoted_number_is_in_the_file_it_cites(path):
    bad = [(line, cites, missing) for line, cites, missing, _ in ledger(path) if missing]
    assert not bad, "\n".join(f"{path.name}:{line}: {missing} not in {cites}"
                              for line, cites, missing in bad)


@pytest.mark.parametrize("path", doc_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_measurement_names_its_file(path):
    bad = [(line, found) for line, _, _, found in ledger(path) if found]
    assert not bad, "\n".join(f"{path.name}:{line}: {found} quoted without a measured file"
                              for line, found in bad)


def test_the_ledger_fails_a_number_edited_away_from_its_file(tmp_path, monkeypatch):
    measured = tmp_path / "benchmarks" / "measured"
    measured.mkdir(parents=True)
    (measured / "x.md").write_text("coverage 91.8 % of 110 samples\n")
    doc = tmp_path / "README.md"
    doc.write_text("It held the map in 91.8 % of the samples (benchmarks/measured/x.md).\n")
    monkeypatch.setattr(__import__(__name__), "REPO", tmp_path)
    assert [m for *_, m, _ in ledger(doc)] == [[]]
    doc.write_text("It held the map in 92.8 % of the samples (benchmarks/measured/x.md).\n")
    assert [m for *_, m, _ in ledger(doc)] == [["92.8"]]
    doc.write_text("It held the map in 91.8 % of the samples.\n")
    assert [f for *_, f in ledger(doc)] == [["91.8 %"]]
