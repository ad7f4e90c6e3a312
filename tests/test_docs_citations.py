"""Every citation of the methods resolves: ``docs/methods/FILE.md §N`` names a
file of docs/methods/ that holds a heading numbered N.

The methods are one file per chapter (docs/methods/README.md is the index).
Headings are ``# N. Title`` (a chapter), ``## N.M Title`` and ``### N.M.K
Title`` (the §11 files start at ``## 11.M``). A citation is a chapter's path
followed by one or more section numbers (``§3.10``, ``§2-§4``, ``§4.1-§4.4``,
``§10.2, §11.4``); every number named must be a heading *of that file*. The old
single file (``docs/methods.md``) is cited nowhere, and every bare ``§N`` inside
the chapters is a heading of one of them.
"""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
METHODS = ROOT / "docs" / "methods"

_HEADING = re.compile(r"^#{1,4}\s+(\d+(?:\.\d+)*)\.?(?=\s)", re.MULTILINE)
_NUMBER = r"§\d+(?:\.\d+)*"
_CITATION = re.compile(r"docs/methods/([\w.-]+\.md)\s+(" + _NUMBER + r"(?:\s*(?:-|–|,|and)\s*"
                       + _NUMBER + r")*)")
_SECTION = re.compile(r"§(\d+(?:\.\d+)*)")
_STALE = re.compile(r"docs/methods\.md")


def headings(text: str) -> set[str]:
    """Section numbers of the numbered headings of ``text``."""
    return set(_HEADING.findall(text))


def chapters() -> dict[str, set[str]]:
    """{file name: its section numbers} of docs/methods/."""
    return {p.name: headings(p.read_text(encoding="utf-8")) for p in sorted(METHODS.glob("*.md"))}


def cited(text: str) -> list[tuple[str, str]]:
    """(file, section number) of every ``docs/methods/FILE.md §...`` citation in ``text``."""
    return [(name, n) for name, group in _CITATION.findall(text)
            for n in _SECTION.findall(group)]


def unresolved(text: str, known: dict[str, set[str]]) -> list[str]:
    return [f"{name} §{n}" for name, n in cited(text) if n not in known.get(name, set())]


def _source_files():
    """Text files of the repository that may cite the methods (not this test, whose
    examples cite missing sections on purpose)."""
    for folder in ("src", "tests", "workflow", "config", "benchmarks", "docs"):
        for p in sorted((ROOT / folder).rglob("*")):
            if (p.is_file() and p.suffix in {".py", ".smk", ".md", ".yaml", ".rst", ".json"}
                    and p.resolve() != Path(__file__).resolve()
                    and "history" not in p.relative_to(ROOT).parts):
                yield p
    yield from (ROOT / name for name in ("README.md", "Snakefile") if (ROOT / name).exists())


def test_the_parser_finds_headings_and_citations():
    text = "# 2. Binning\n## 2.10 Ten\n### 2.10.1 Deeper\n## 3 no dot\n"
    assert headings(text) == {"2", "2.10", "2.10.1", "3"}
    src = ("see docs/methods/02-binning.md §2.10), docs/methods/x.md §2-§4 and "
           "docs/methods/y.md §10.2, §11.4; docs/methods/README.md notation")
    assert cited(src) == [("02-binning.md", "2.10"), ("x.md", "2"), ("x.md", "4"),
                          ("y.md", "10.2"), ("y.md", "11.4")]
    # a citation of a missing section, or of a section in another file, is reported
    known = {"a.md": {"2", "3.10"}, "b.md": {"3.11"}}
    assert unresolved("docs/methods/a.md §3.11 and docs/methods/a.md §2", known) == ["a.md §3.11"]
    assert unresolved("docs/methods/c.md §2", known) == ["c.md §2"]


def test_the_chapters_have_their_sections():
    known = chapters()
    assert "README.md" in known and "references.md" in known
    every = set().union(*known.values())
    assert {str(n) for n in range(1, 15)} - {"11"} <= every
    assert {"3.9", "3.10", "3.12", "11.1", "11.6", "11.9", "14.3"} <= every
    # each section has one home
    homes = [n for ns in known.values() for n in ns]
    assert len(homes) == len(set(homes)), "a section number heads two places"


def test_citations_resolve():
    known = chapters()
    n_cited, problems, stale = 0, [], []
    for path in _source_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        n_cited += len(cited(text))
        problems += [f"{path.relative_to(ROOT)}: {c}" for c in unresolved(text, known)]
        stale += [str(path.relative_to(ROOT))] if _STALE.search(text) else []
    assert n_cited > 100          # the scan does see the code's citations
    assert not problems, "citations of sections their file does not hold:\n" + "\n".join(problems)
    assert not stale, "citations of the old docs/methods.md:\n" + "\n".join(stale)


def test_bare_section_references_inside_the_chapters_resolve():
    known = chapters()
    every = set().union(*known.values())
    missing = sorted({f"{p.name}: §{n}" for p in METHODS.glob("*.md")
                      for n in _SECTION.findall(p.read_text(encoding="utf-8"))
                      if n not in every})
    assert not missing, "references to missing sections: " + ", ".join(missing)
