#!/usr/bin/env bash
# Smoke test of an installed fitontest (a wheel or an sdist in a fresh virtual
# environment with the core dependencies only): the command, the library, the
# type marker, and the named error of a family whose extra is missing.
# Usage: .ci/smoke.sh VENV/bin
set -euo pipefail
BIN=$(cd "$1" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"          # away from the source tree: the installed package is tested

"$BIN/fitontest" --help > /dev/null
"$BIN/fitontest" families | grep -q "^smece "
"$BIN/python" - <<'PY'
import json, pathlib, subprocess, sys
import numpy as np
import fitontest
from fitontest.core.extras import MissingExtraError

root = pathlib.Path(fitontest.__file__).parent
assert "site-packages" in str(root), root
assert (root / "py.typed").is_file(), "py.typed missing"
assert (root / "report" / "claims.yaml").is_file(), "package data missing"

rng = np.random.default_rng(0)
z = 2 * rng.normal(size=(1000, 3))
y = rng.integers(0, 3, 1000)
np.savez("pred.npz", logits=z, labels=y)
out = subprocess.run([str(pathlib.Path(sys.executable).with_name("fitontest")), "evaluate",
                      "pred.npz", "--evaluator", "ece_es15", "--json"],
                     capture_output=True, text=True, check=True)
got = json.loads(out.stdout)[0]["estimate"]
ref = fitontest.evaluate(z, y, from_logits=True, evaluator="ece_es15").estimate
assert abs(got - ref) < 1e-12, (got, ref)

bad = subprocess.run([str(pathlib.Path(sys.executable).with_name("fitontest")), "evaluate",
                      "pred.npz", "--evaluator", "temps"], capture_output=True, text=True)
assert bad.returncode == 2 and bad.stderr.count("\n") == 1, bad

try:
    import numba  # noqa: F401
except ImportError:
    try:
        fitontest.families.get("pl_ce").fit(rng.uniform(size=200), rng.integers(0, 2, 200))
    except MissingExtraError as err:
        assert "fitontest[fast]" in str(err), err
    else:
        raise AssertionError("pl_ce fitted without numba")
print(f"smoke test passed: fitontest {fitontest.__version__} at {root}")
PY
