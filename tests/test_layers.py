"""The package reads as layers: a module imports only from its own layer or
those below it (docs/architecture.md).

Every module under src/fitontest and src/fitontest_cli (the command line, the
top layer) is parsed with ``ast``; every ``fitontest``
import -- absolute or relative, at module level or inside a function -- is
resolved to the module it names and both ends are mapped to a layer by
:data:`LAYERS`. An import from a lower layer to a higher one fails, and so
does a module the table does not place. Imports made by name at run time
(``importlib``: the registries' package scan, the lazy names of
``fitontest/__init__``) are not seen.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = "fitontest"
#: the command line: a package of its own, above the library's front door
CLI = "fitontest_cli"
SRC = Path(__file__).resolve().parents[1] / "src" / PACKAGE
CLI_SRC = SRC.parent / CLI

#: lowest layer first; an entry names a module or a package (and everything in it).
#: The methods sit in their packages (``families``, ``multiclass``, ``inference``,
#: ``tasks``); ``metrics``, the estimators the families use, in the foundation; the
#: older addresses (``intervals``, ``bands``, ... : shims that import nothing above
#: core/moved.py) where they were; the workflow's layers in folders beneath
#: (docs/architecture.md); the command line, ``fitontest_cli``, above everything.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("foundation", ("core", "metrics")),
    ("methods", ("families", "multiclass", "inference", "tasks", "intervals", "worlds",
                 "selection", "calibration_tests", "bands")),
    ("data", ("data", "models")),
    ("vision", ("vision",)),
    ("study", ("study",)),
    ("report", ("report",)),
    ("front door", ("api", "results", "choose", "cli", "calibrated_classifier", "__init__")),
    ("command line", (CLI,)),
]


def layer_of(module: str) -> int | None:
    """Index in :data:`LAYERS` of ``module`` (dotted, relative to the package;
    the package's own ``__init__`` is ``"__init__"``), None if unplaced."""
    for i, (_, entries) in enumerate(LAYERS):
        if any(module == e or module.startswith(e + ".") for e in entries):
            return i
    return None


def package_sources(root: Path = SRC, prefix: str = "") -> dict[str, tuple[str, bool]]:
    """module name -> (source, is_package) for every .py file under ``root``;
    ``prefix``: the package name the modules are given under (``fitontest_cli``),
    "" for fitontest's own (named relative to it)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        name = ".".join(([prefix] if prefix else []) + parts)
        out[name or "__init__"] = (path.read_text(), is_package)
    return out


def all_sources() -> dict[str, tuple[str, bool]]:
    """The library's modules and the command line's, as one graph."""
    return {**package_sources(), **package_sources(CLI_SRC, CLI)}


def _relative(dotted: str) -> str | None:
    """``fitontest.x.y`` -> ``x.y``; ``fitontest`` -> ``__init__``;
    ``fitontest_cli...`` as it is; other packages None."""
    if dotted == PACKAGE:
        return "__init__"
    if dotted.startswith(PACKAGE + "."):
        return dotted[len(PACKAGE) + 1:]
    if dotted == CLI or dotted.startswith(CLI + "."):
        return dotted
    return None


def imported_modules(module: str, source: str, is_package: bool,
                     known: set[str]) -> set[str]:
    """The package modules ``module`` imports (relative names). ``from X import
    name`` counts as X.name where that is a module in ``known``, else as X."""
    here = [] if module == "__init__" else module.split(".")
    root = [] if here[:1] == [CLI] else [PACKAGE]
    package = root + (here if is_package else here[:-1])
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(filter(None, (_relative(a.name) for a in node.names)))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            rel = _relative(target)
            if rel is None:
                continue
            for alias in node.names:
                sub = alias.name if rel == "__init__" else f"{rel}.{alias.name}"
                found.add(sub if sub in known else rel)
    return found


def violations(sources: dict[str, tuple[str, bool]]) -> list[str]:
    """Every unplaced module and every import from a lower layer to a higher one."""
    known = set(sources)
    problems = [f"{m}: not placed in any layer (add it to LAYERS in tests/test_layers.py)"
                for m in sorted(sources) if layer_of(m) is None]
    for module, (source, is_package) in sorted(sources.items()):
        low = layer_of(module)
        if low is None:
            continue
        for target in sorted(imported_modules(module, source, is_package, known)):
            high = layer_of(target)
            if high is not None and high > low:
                problems.append(f"{module} ({LAYERS[low][0]}) imports {target} "
                                f"({LAYERS[high][0]})")
    return problems


# ------------------------------------------------------------------------ tests
def test_every_module_is_placed_and_imports_only_downward():
    sources = all_sources()
    assert len(sources) > 50, f"found only {len(sources)} modules under {SRC}"
    assert {f"{CLI}.commands", f"{CLI}.parser"} <= set(sources)
    problems = violations(sources)
    assert not problems, "layer violations:\n" + "\n".join(problems)


def cli_imports(source: str) -> list[str]:
    """Every import statement of ``source`` naming fitontest_cli (anywhere: at
    module level, in a function, relative ones cannot reach it)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] == CLI]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module \
                and node.module.split(".")[0] == CLI:
            found.append(node.module)
    return found


def test_no_library_module_imports_the_command_line():
    """The command line sits on the library, never under it: no module of
    src/fitontest imports fitontest_cli (fitontest/cli.py, the old address,
    names its homes as strings in core/moved.py)."""
    problems = {m: got for m, (src, _) in package_sources().items()
                if (got := cli_imports(src))}
    assert not problems, f"modules of fitontest importing {CLI}: {problems}"
    assert cli_imports("def f():\n    from fitontest_cli.commands import run\n") == \
        ["fitontest_cli.commands"]
    assert cli_imports("import fitontest_cli as c\nimport fitontest.cli\n") == [CLI]


def test_an_upward_import_inside_a_function_is_reported():
    """A methods module importing the study layer, relatively and from inside
    a function, plus an absolute one from foundation to report."""
    sources = {
        "families": ("", True),
        "families.base": ("def f():\n    from ..study import experiment\n", False),
        "study": ("", True),
        "study.experiment": ("from ..families import base\n", False),
        "core": ("", True),
        "core.io": ("import fitontest.report.table as t\n", False),
        "report": ("", True),
        "report.table": ("", False),
    }
    assert violations(sources) == [
        "core.io (foundation) imports report.table (report)",
        "families.base (methods) imports study.experiment (study)",
    ]


def test_from_package_import_submodule_resolves_to_the_submodule():
    """``from fitontest import api`` in a foundation module names the front
    door's ``api``, not the package ``__init__``."""
    sources = {"__init__": ("", True), "api": ("", False), "core": ("", True),
               "core.validation": ("from fitontest import api\nfrom . import io\n", False),
               "core.io": ("", False)}
    assert violations(sources) == ["core.validation (foundation) imports api (front door)"]


def test_the_command_line_sits_above_the_front_door():
    """fitontest_cli may import the front door; a library module importing the
    command line (absolutely) is reported; the command line's own relative
    imports resolve inside it."""
    sources = {"__init__": ("", True), "api": ("", False), "core": ("", True),
               "core.io": ("def f():\n    import fitontest_cli.commands\n", False),
               "fitontest_cli": ("from .commands import run\n", True),
               "fitontest_cli.commands": ("from fitontest import api\n"
                                          "from .. import parser\n", True),
               "fitontest_cli.parser": ("", False)}
    assert imported_modules("fitontest_cli", *sources["fitontest_cli"], set(sources)) == \
        {"fitontest_cli.commands"}
    assert imported_modules("fitontest_cli.commands", *sources["fitontest_cli.commands"],
                            set(sources)) == {"api", "fitontest_cli.parser"}
    assert violations(sources) == ["core.io (foundation) imports fitontest_cli.commands "
                                   "(command line)"]


def test_an_unplaced_module_is_reported():
    sources = {"core": ("", True), "core.io": ("", False),
               "newthing": ("from .core.io import atomic_path\n", False)}
    assert violations(sources) == [
        "newthing: not placed in any layer (add it to LAYERS in tests/test_layers.py)"]


@pytest.mark.parametrize("module, layer", [("families.pl.trainer", "methods"),
                                           ("report.figures.cd", "report"),
                                           ("data.synthetic", "data"),
                                           ("vision.train", "vision"),
                                           ("core", "foundation"),
                                           ("metrics", "foundation"),
                                           ("tasks", "methods"),
                                           ("__init__", "front door"),
                                           ("fitontest_cli.commands.bench",
                                            "command line")])
def test_layer_of_matches_packages_by_prefix(module, layer):
    assert LAYERS[layer_of(module)][0] == layer
    assert layer_of("familiesX") is None


# --------------------------------------------------------------- import cycles
def module_level_imports(module: str, source: str, is_package: bool,
                         known: set[str]) -> set[str]:
    """Like :func:`imported_modules`, but only the imports run when the module
    loads (top-level statements, ``try``/``if`` bodies; not functions)."""
    tree = ast.parse(source)
    top = []
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            top.append(node)
        elif isinstance(node, (ast.If, ast.Try)):
            stack.extend(node.body + node.orelse + getattr(node, "finalbody", [])
                         + [s for h in getattr(node, "handlers", []) for s in h.body])
    stub = ast.unparse(ast.Module(body=top, type_ignores=[]))
    return imported_modules(module, stub, is_package, known)


def import_cycles(sources: dict[str, tuple[str, bool]],
                  deferred: bool = False) -> list[list[str]]:
    """Strongly connected components (size > 1, or a self-loop) of the
    module-level import graph (Tarjan); with ``deferred``, imports inside
    functions count too (a circle of modules that need each other, even if
    Python can load them)."""
    known = set(sources)
    edges = imported_modules if deferred else module_level_imports
    graph = {m: sorted(edges(m, src, pkg, known) - {m} & known)
             for m, (src, pkg) in sources.items()}
    index, low, on, stack, out = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle():
    cycles = import_cycles(all_sources())
    assert not cycles, f"import cycles: {cycles}"


def test_no_import_cycle_through_deferred_imports():
    """No two modules need each other, not even through an import inside a
    function (families/pl/family.py and trainer.py did; the inference package
    and the front door's chooser must not)."""
    cycles = import_cycles(all_sources(), deferred=True)
    assert not cycles, f"import cycles through deferred imports: {cycles}"
    circle = {"families.pl.family": ("def f():\n    from .trainer import T\n", False),
              "families.pl.trainer": ("from .family import evaluate_map\n", False),
              "families": ("", True), "families.pl": ("", True)}
    assert import_cycles(circle) == []
    assert import_cycles(circle, deferred=True) == [["families.pl.family",
                                                     "families.pl.trainer"]]


def test_a_cycle_is_reported():
    sources = {"metrics": ("from .intervals import ce_interval\n", False),
               "intervals": ("from .families import base\n", False),
               "families": ("", True),
               "families.base": ("from .. import metrics\n", False),
               "core": ("", True),
               "core.io": ("def f():\n    from fitontest import metrics\n", False)}
    assert import_cycles(sources) == [["families.base", "intervals", "metrics"]]


def test_public_modules_are_real_modules_in_a_fresh_interpreter():
    """``fitontest.families.base`` etc. are the modules themselves: the name
    ``sys.modules`` holds is the module's own, no finder of ours is installed."""
    import subprocess
    import sys
    code = (
        "import sys, importlib\n"
        "names = ['fitontest.families.base', 'fitontest.families', 'fitontest.metrics',\n"
        "         'fitontest.multiclass', 'fitontest.inference.intervals', 'fitontest.data.synthetic',\n"
        "         'fitontest.models']\n"
        "for n in names:\n"
        "    m = importlib.import_module(n)\n"
        "    assert sys.modules[n] is m and m.__name__ == n == m.__spec__.name, n\n"
        "assert not [f for f in sys.meta_path if type(f).__module__.startswith('fitontest')]\n"
        "import fitontest.metrics as M\n"
        "assert 'ce_interval' in dir(M) and 'true_ce' in M.__all__\n"
        "assert M.true_ce.__module__ == 'fitontest.metrics'\n"
        "from fitontest.families.base import CalibrationFamily\n"
        "from fitontest import families\n"
        "assert isinstance(families.get('ece_es15'), CalibrationFamily)\n"
        "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_no_module_is_over_500_lines():
    """Short modules named for what they hold (issue 51): a module past 500 lines
    is two topics."""
    src = Path(__file__).resolve().parents[1] / "src"
    long = {str(p.relative_to(src)): n for p in src.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 500}
    assert not long, f"modules over 500 lines: {long}"
