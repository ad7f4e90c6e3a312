"""The Snakemake controller stays light: parsing the workflow imports no torch.

Every parse (the controller's, and each cluster job's re-parse) pays for the
modules the Snakefile's Python imports; torch alone took 2 s of them. The
check lists the rules (a full parse, config checks included; no rule runs) in
a fresh interpreter and reads its ``sys.modules`` at exit.
"""
import subprocess
import sys

from conftest import REPO

HEAVY = ("torch", "numba", "torchvision", "matplotlib")

_PROBE = """
import atexit, sys
atexit.register(lambda: print("HEAVY:" + ",".join(m for m in {heavy!r} if m in sys.modules)))
from snakemake.cli import main
sys.argv = ["snakemake", "--list-rules", "-s", {snakefile!r}, "-d", {workdir!r},
            "--configfile", {configfile!r}]
main()
"""


def test_parsing_the_workflow_imports_no_torch(tmp_path):
    code = _PROBE.format(heavy=HEAVY, snakefile=str(REPO / "Snakefile"), workdir=str(tmp_path),
                         configfile=str(REPO / "config" / "config.yaml"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=REPO, timeout=120)
    assert "rule all" in out.stdout or "all" in out.stdout.split(), out.stderr[-2000:]
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("HEAVY:")]
    assert line, out.stdout[-2000:] + out.stderr[-2000:]
    assert line[-1] == "HEAVY:", f"parsing the Snakefile imported {line[-1][6:]}"
