"""One home per name in the docs (issue 58): README.md, the guide and the
methods (docs/**/*.md) and the API reference (docs/api/*.rst) write every
public name at its home, never at an address it moved from.

The old addresses are the one table :data:`fitontest.core.moved.MOVED`
(old module -> {name: home module}); it is read here without importing the
shims, so a page is checked against the table, not against what a shim
happens to re-export. A page fails on

- a dotted old address, ``fitontest.intervals.ce_interval`` (whatever the
  text around it: prose, a code span, a code block);
- an import of a moved name from its old module, ``from fitontest.metrics
  import ce_interval`` (one line or parenthesised over several);
- a moved name reached through an old module imported under a short name,
  ``from fitontest import metrics`` then ``metrics.ce_interval``;
- a module that is only a shim now (the home of no name, and its file defines
  no function or class), named as a module: ``fitontest.intervals``,
  ``from fitontest import bands``;
- ``fitontest.api.``: the front door is ``fitontest.evaluate``, never the
  module behind it.

The message names the file and line of each, with the home to write instead.
"""
from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import pytest

from fitontest.core.moved import MOVED

REPO = Path(__file__).resolve().parents[1]


def doc_files(repo: Path = REPO) -> list[Path]:
    """README.md, every Markdown page under docs/ and the API reference's pages."""
    return [repo / "README.md", *sorted((repo / "docs").rglob("*.md")),
            *sorted((repo / "docs" / "api").glob("*.rst"))]


def _is_shim(module: str) -> bool:
    """A module whose file defines no function or class: only forwards to homes."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return False
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    return not any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                   for node in tree.body)


def shim_modules(moved: dict = MOVED) -> set[str]:
    """The old modules that are only shims: home of no name, and no definitions."""
    homes = {home for names in moved.values() for home in names.values()}
    return {module for module in moved if module not in homes and _is_shim(module)}


#: ``from MODULE import a, b as c`` or ``from MODULE import (\n a,\n b)``
_FROM = re.compile(r"\bfrom\s+([\w.]+)\s+import\s+(\([^)]*\)|[^\n]*)")
#: ``import MODULE as short``
_IMPORT_AS = re.compile(r"\bimport\s+([\w.]+)\s+as\s+(\w+)")


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _imported(group: str) -> list[tuple[str, str]]:
    """(name, the name it is bound to) of an import list."""
    out = []
    for item in group.strip("()").replace("\n", " ").split(","):
        words = item.split("#")[0].split()
        if words:
            out.append((words[0], words[2] if len(words) == 3 and words[1] == "as" else words[0]))
    return out


def old_addresses(text: str, moved: dict = MOVED, shims: set | None = None
                  ) -> list[tuple[int, str, str]]:
    """(line, what the text writes, the home to write instead) of every old
    address in ``text``."""
    shims = shim_modules(moved) if shims is None else shims
    found = []
    for old, names in moved.items():
        for name, home in names.items():
            for m in re.finditer(r"(?<![\w.])" + re.escape(f"{old}.{name}") + r"(?!\w)", text):
                found.append((_line(text, m.start()), f"{old}.{name}", f"{home}.{name}"))
    for m in _FROM.finditer(text):
        module, names = m.group(1), _imported(m.group(2))
        for name, bound in names:
            dotted = f"{module}.{name}"
            if name in moved.get(module, {}):
                found.append((_line(text, m.start()), f"from {module} import {name}",
                              f"from {moved[module][name]} import {name}"))
            elif dotted in shims:
                found.append((_line(text, m.start()), f"from {module} import {name}",
                              "the homes of its names (fitontest.core.moved.MOVED)"))
            if dotted in moved:          # a short name for an old module: its uses
                found += _short_uses(text, bound, dotted, moved)
    for m in _IMPORT_AS.finditer(text):
        if m.group(1) in moved:
            found += _short_uses(text, m.group(2), m.group(1), moved)
    for module in shims:
        for m in re.finditer(r"(?<![\w.])" + re.escape(module) + r"(?![\w])(?!\.\w)", text):
            found.append((_line(text, m.start()), module,
                          "the homes of its names (fitontest.core.moved.MOVED)"))
    for m in re.finditer(r"(?<![\w.])fitontest\.api\.", text):
        found.append((_line(text, m.start()), "fitontest.api.",
                      "fitontest.evaluate / fitontest.EvaluationResult (the package top)"))
    return sorted(set(found))


def _short_uses(text: str, short: str, module: str, moved: dict) -> list[tuple[int, str, str]]:
    out = []
    for name, home in moved[module].items():
        for m in re.finditer(r"(?<![\w.])" + re.escape(f"{short}.{name}") + r"(?!\w)", text):
            out.append((_line(text, m.start()), f"{short}.{name} ({module})", f"{home}.{name}"))
    return out


@pytest.mark.parametrize("path", doc_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_the_docs_write_every_name_at_its_home(path):
    found = old_addresses(path.read_text(encoding="utf-8"))
    assert not found, "\n".join(f"{path.relative_to(REPO)}:{line}: {old} -> write {home}"
                                for line, old, home in found)


def test_the_pages_checked_are_the_docs():
    """README, the guide, the methods and the API reference are all read (a glob
    that stopped matching would pass everything)."""
    rel = {p.relative_to(REPO).as_posix() for p in doc_files()}
    assert "README.md" in rel and "docs/api/cli.rst" in rel and "docs/api/evaluate.rst" in rel
    for folder in ("docs/guide/", "docs/methods/"):
        assert sum(r.startswith(folder) for r in rel) >= 5, folder
    assert MOVED and all(names for names in MOVED.values())


def test_the_command_line_is_documented_in_fitontest_cli():
    """The command line lives in fitontest_cli; its reference page renders the
    parser from there, and no page names the shim fitontest.cli."""
    page = (REPO / "docs" / "api" / "cli.rst").read_text(encoding="utf-8")
    assert re.search(r":module:\s+fitontest_cli\.parser\b", page)
    named = [f"{p.relative_to(REPO)}:{_line(t, m.start())}" for p in doc_files()
             for t in [p.read_text(encoding="utf-8")]
             for m in re.finditer(r"(?<![\w.])fitontest\.cli(?!\w)", t)]
    assert not named, named


# --- the check itself can fail ---------------------------------------------------------

TABLE = {"fitontest.intervals": {"ce_interval": "fitontest.inference.intervals"},
         "fitontest.metrics": {"ce_interval": "fitontest.inference.intervals",
                               "calibration_test": "fitontest.inference.calibration_tests"}}


def _check(text, shims=frozenset({"fitontest.intervals"})):
    return [(line, old) for line, old, _ in old_addresses(text, TABLE, set(shims))]


def test_it_finds_dotted_old_addresses_and_not_their_homes():
    assert _check("x\n`fitontest.metrics.ce_interval(s, y)`\n") == [
        (2, "fitontest.metrics.ce_interval")]
    assert _check("`fitontest.inference.intervals.ce_interval` and "
                  "`fitontest.metrics.ce_estimate`") == []
    # a longer name that starts like a moved one is another name
    assert _check("fitontest.metrics.ce_interval_width") == []


def test_it_finds_imports_of_moved_names():
    assert _check("from fitontest.metrics import ce_estimate, ce_interval\n") == [
        (1, "from fitontest.metrics import ce_interval")]
    assert _check("a\nfrom fitontest.metrics import (\n    ce_estimate,\n"
                  "    calibration_test as ct,\n)\n") == [
        (2, "from fitontest.metrics import calibration_test")]
    assert _check("from fitontest.inference.intervals import ce_interval\n") == []


def test_it_finds_moved_names_reached_through_a_short_name():
    text = ("from fitontest import families, metrics\n\n"
            "metrics.ce_estimate(s, c)\nmetrics.ce_interval(x)\n")
    assert _check(text) == [(4, "metrics.ce_interval (fitontest.metrics)")]
    assert _check("import fitontest.metrics as M\nM.calibration_test(s, y)\n") == [
        (2, "M.calibration_test (fitontest.metrics)")]
    # without the import, a word.name is not an address
    assert _check("metrics.ce_interval") == []


def test_it_finds_shim_modules_and_the_module_behind_the_front_door():
    assert _check("the `fitontest.intervals` docstring\nfrom fitontest import intervals\n") == [
        (1, "fitontest.intervals"), (2, "from fitontest import intervals")]
    assert _check("fitontest.api.evaluate(p, y)") == [(1, "fitontest.api.")]
    assert _check("fitontest.evaluate(p, y); .. automodule:: fitontest.api") == []


def test_a_module_with_definitions_is_not_a_shim():
    assert not _is_shim("fitontest.api")
    assert not _is_shim("fitontest.no_such_module")
