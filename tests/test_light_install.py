"""The core install (``pip install fitontest``, no extras): fitontest.evaluate,
`fitontest evaluate`, the families and the multi-class calibrators work
without torch, numba, pyarrow, snakemake or scikit-posthocs; a family whose
backend is missing names the extra to install.

The optional packages are blocked in a fresh interpreter by a meta-path
finder that raises ModuleNotFoundError for them, as for packages that are not
installed. CI also runs the core tests in a virtual environment with the core
dependencies only (.ci/run).
"""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from conftest import REPO

OPTIONAL = ("torch", "torchvision", "numba", "llvmlite", "pyarrow", "fastparquet",
            "snakemake", "scikit_posthocs", "statsmodels", "seaborn", "tqdm", "jsonschema",
            "pygments")

BLOCK = f"""
import importlib.abc, sys

class _NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {OPTIONAL!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, _NotInstalled())
"""


def run_core(code: str, *args: str, cwd=None) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter that cannot import the optional packages."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    return subprocess.run([sys.executable, "-c", BLOCK + textwrap.dedent(code), *args],
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


def test_the_blocker_blocks():
    out = run_core("import torch")
    assert out.returncode != 0 and "No module named 'torch'" in out.stderr


def test_evaluate_and_the_registries_need_no_extra():
    out = run_core("""
        import json, sys
        import numpy as np
        import fitontest
        from fitontest import families, multiclass, metrics
        rng = np.random.default_rng(0)
        z = rng.normal(size=(800, 3)) * 2
        y = rng.integers(0, 3, 800)
        r = fitontest.evaluate(z, y, from_logits=True, evaluator="ece_es15", mode="classwise")
        cal = multiclass.get("temps").fit(z, y)
        heavy = sorted(m for m in ("torch", "numba", "pyarrow", "snakemake") if m in sys.modules)
        print(json.dumps({"estimate": r.estimate, "families": families.names(),
                          "multiclass": multiclass.names(), "T": float(cal.temperature_),
                          "heavy": heavy}))
    """)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["heavy"] == []
    import fitontest
    from fitontest import families, multiclass
    rng = np.random.default_rng(0)
    z = rng.normal(size=(800, 3)) * 2
    y = rng.integers(0, 3, 800)
    ref = fitontest.evaluate(z, y, from_logits=True, evaluator="ece_es15", mode="classwise")
    assert got["estimate"] == pytest.approx(ref.estimate, abs=1e-12)
    assert got["families"] == families.names() and got["multiclass"] == multiclass.names()
    assert got["T"] == pytest.approx(multiclass.get("temps").fit(z, y).temperature_, rel=1e-9)


def test_the_command_needs_no_extra(tmp_path):
    rng = np.random.default_rng(1)
    p = rng.dirichlet(np.ones(3), 500)
    np.savez(tmp_path / "p.npz", probs=p, labels=rng.integers(0, 3, 500))
    out = run_core("""
        import sys
        import fitontest_cli
        code = fitontest_cli.main(sys.argv[1:])
        assert "torch" not in sys.modules and "numba" not in sys.modules
        sys.exit(code)
    """, "evaluate", str(tmp_path / "p.npz"), "--evaluator", "smece", "--plot",
        str(tmp_path / "rd.png"))
    assert out.returncode == 0, out.stderr
    assert "smece" in out.stdout and (tmp_path / "rd.png").stat().st_size > 1000


@pytest.mark.parametrize("name, extra", [("pl3_ce", "fast"), ("iop_oi", "torch")])
def test_a_missing_backend_names_its_extra(tmp_path, name, extra):
    out = run_core(f"""
        import numpy as np
        from fitontest import families, multiclass
        from fitontest.core.extras import MissingExtraError
        rng = np.random.default_rng(0)
        z = rng.normal(size=(300, 3))
        y = rng.integers(0, 3, 300)
        try:
            if {name!r} in families.names():
                families.get({name!r}).fit(rng.uniform(size=300), (y == 0).astype(float))
            else:
                multiclass.get({name!r}).fit(z, y)
        except MissingExtraError as err:
            print(err)
    """)
    assert out.returncode == 0, out.stderr
    assert f"pip install 'fitontest[{extra}]'" in out.stdout
    # the command says the same in one line, exit 2
    np.savez(tmp_path / "p.npz", probs=np.full((300, 2), 0.5),
             labels=np.arange(300) % 2)
    if name == "pl3_ce":
        cmd = run_core("""
            import sys
            import fitontest_cli
            sys.exit(fitontest_cli.main(sys.argv[1:]))
        """, "evaluate", str(tmp_path / "p.npz"), "--evaluator", name)
        assert cmd.returncode == 2 and cmd.stderr.count("\n") == 1, cmd.stderr
        assert "fitontest[fast]" in cmd.stderr


def test_the_extras_are_declared():
    import tomllib

    meta = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    core = " ".join(meta["dependencies"])
    for heavy in ("torch", "numba", "pyarrow", "snakemake", "scikit-posthocs"):
        assert heavy not in core
    extras = meta["optional-dependencies"]
    assert {"fast", "torch", "vision", "workflow", "slurm", "all", "test", "docs"} <= set(extras)
    from fitontest.core.extras import EXTRAS
    for extra, modules in EXTRAS.items():
        declared = " ".join(extras[extra]).replace("-", "_")
        for module in modules:
            assert module in declared


def test_the_tabular_classifiers_need_no_torch():
    """The tabular study's networks are scikit-learn classifiers: fitontest.models
    (the package of both registries) loads without torch (issue 37: every
    tabular_fit job imported torch for nothing)."""
    out = run_core("""
        import sys
        import numpy as np
        from fitontest.models import tabular
        from fitontest import models
        rng = np.random.default_rng(0)
        X, y = rng.normal(size=(200, 3)), rng.integers(0, 3, 200)
        z = tabular.log_proba(tabular.get("logreg").fit(X, y), X, 3)
        assert z.shape == (200, 3) and np.allclose(np.exp(z).sum(1), 1.0, atol=1e-5)
        assert callable(models.get) and "torch" not in sys.modules
        print("ok")
    """)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
