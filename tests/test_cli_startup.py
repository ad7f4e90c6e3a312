"""The console script's entry point (``fitontest_cli``) answers ``--help`` and
usage errors before the library is imported; the commands
(:mod:`fitontest_cli.commands`) import it when they run. Timings are benchmarks/speed/startup.py's;
these tests check what is imported, not how long it takes."""
import ast
import json
import os
import subprocess
import sys
import tomllib

import numpy as np
import pytest

import fitontest_cli
from conftest import REPO

ENTRY = REPO / "src" / "fitontest_cli"

#: run main() as the installed console script does, then report on stderr (its
#: last line) what the interpreter had imported by then
PROBE = """
import json, sys
from fitontest_cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as stop:
    code = stop.code
sys.stdout.flush()
loaded = sorted({m.split(".")[0] for m in sys.modules})
print(json.dumps({"code": code, "loaded": loaded}), file=sys.stderr)
"""


def probe(*args):
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    out = subprocess.run([sys.executable, "-c", PROBE, *map(str, args)], capture_output=True,
                         text=True, env=env, timeout=120)
    report = json.loads(out.stderr.strip().splitlines()[-1])
    return out, report["code"], set(report["loaded"])


@pytest.mark.parametrize("args, code", [
    (["--help"], 0), (["evaluate", "--help"], 0), (["families", "--help"], 0),
    (["bench", "--help"], 0), ([], 2), (["evaluate"], 2), (["--bogus"], 2),
    (["evaluate", "p.npz", "--p", "3"], 2)])
def test_help_and_usage_errors_import_no_library(args, code):
    out, got, loaded = probe(*args)
    assert got == code, out.stderr
    assert "usage: fitontest" in out.stdout + out.stderr
    assert not loaded & {"fitontest", "numpy", "scipy", "sklearn", "pandas", "matplotlib"}


def test_a_command_imports_the_library_once_it_runs(tmp_path):
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "p.npz", probs=rng.dirichlet(np.ones(4), 300),
             labels=rng.integers(0, 4, 300))
    out, code, loaded = probe("evaluate", tmp_path / "p.npz", "--evaluator", "ece_es15")
    assert code == 0, out.stderr
    assert {"fitontest", "numpy", "sklearn"} <= loaded
    # evaluate without --plot needs no plotting library
    assert "matplotlib" not in loaded
    assert out.stdout.splitlines()[2].startswith("ece_es15")


@pytest.mark.parametrize("args", [["families", "--json"], ["evaluate", "{npz}", "--json"],
                                  ["evaluate", "{npz}", "--evaluator", "nosuch"],
                                  ["evaluate", "{npz}", "--mode", "ovr"]])
def test_the_old_address_runs_what_the_entry_point_runs(args, tmp_path, capsys):
    """``fitontest.cli.main`` (before issue 58) warns, naming its home, and is
    the entry point itself: the same status, stdout and stderr."""
    rng = np.random.default_rng(1)
    np.savez(tmp_path / "p.npz", probs=rng.dirichlet(np.ones(3), 200),
             labels=rng.integers(0, 3, 200))
    argv = [a.format(npz=tmp_path / "p.npz") for a in args]
    from fitontest import cli

    with pytest.deprecated_call(match="fitontest.cli.main is deprecated: its home is "
                                "fitontest_cli"):
        old_main = cli.main
    outputs = []
    for main in (fitontest_cli.main, old_main):
        code = main(argv)
        outputs.append((code, *capsys.readouterr()))
    assert outputs[0] == outputs[1]
    assert outputs[0][0] in (0, 2)


def test_the_parser_is_shared_and_snakemake_arguments_pass_through():
    from fitontest import cli

    with pytest.deprecated_call(match="its home is fitontest_cli.parser"):
        assert cli.build_parser is fitontest_cli.build_parser
    args = fitontest_cli.parse_args(["bench", "smece", "--cores", "1", "--", "--dry-run"])
    assert (args.command, args.target, args.cores, args.snakemake_args) == \
        ("bench", "smece", 1, ["--dry-run"])


def test_the_entry_package_imports_only_the_standard_library_at_module_level():
    """The static side of the first test: a module-level import of anything but
    the standard library or the package itself would slow every --help. (The
    commands, in the subpackage ``commands``, import the library: they run
    after the parse.)"""
    for path in ENTRY.glob("*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [] if node.level else [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                assert top in sys.stdlib_module_names or top == "__future__", \
                    f"{path.name} imports {name} at module level"


def test_the_console_script_is_the_entry_package_and_is_packaged():
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())
    module, func = meta["project"]["scripts"]["fitontest"].split(":")
    assert (module, func) == ("fitontest_cli", "main")
    assert callable(getattr(fitontest_cli, func))
    setuptools = pytest.importorskip("setuptools")
    find = meta["tool"]["setuptools"]["packages"]["find"]
    found = setuptools.find_packages(str(REPO / find["where"][0]),
                                     include=find.get("include", ("*",)))
    assert {"fitontest", "fitontest_cli"} <= set(found)
