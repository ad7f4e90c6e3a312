"""The `fitontest` command, run as a subprocess."""
import json
import os
import re
import subprocess
import sys
import tomllib

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy.special import softmax

import fitontest
from conftest import REPO, load_config


def run_cli(*args, cwd=None, timeout=120):
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    return subprocess.run([sys.executable, "-m", "fitontest_cli", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout)


@pytest.fixture
def npz(tmp_path):
    rng = np.random.default_rng(0)
    z = rng.normal(size=(1200, 3)) * 2
    y = rng.integers(0, 3, 1200)
    path = tmp_path / "pred.npz"
    np.savez(path, logits=z, labels=y)
    return path, z, y


def test_console_script_is_declared():
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert meta["project"]["scripts"]["fitontest"] == "fitontest_cli:main"


def test_evaluate_json_equals_the_library(npz, tmp_path):
    path, z, y = npz
    out = run_cli("evaluate", path, "--evaluator", "ece_es15", "--evaluator", "smece",
                  "--mode", "classwise", "--json", "--plot", tmp_path / "rd.png")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    for row, name in zip(got, ["ece_es15", "smece"]):
        ref = fitontest.evaluate(z, y, evaluator=name, mode="classwise", from_logits=True)
        assert row["evaluator"] == name
        assert row["estimate"] == pytest.approx(ref.estimate, abs=1e-12)
        assert [row["per_class"][str(k)]["estimate"] for k in range(3)] == pytest.approx(
            [ref.per_class[k].estimate for k in range(3)], abs=1e-12)
    assert (tmp_path / "rd.png").stat().st_size > 1000


def test_evaluate_table_from_csv_and_npy(npz, tmp_path):
    _, z, y = npz
    p = softmax(z, axis=1)
    frame = pd.DataFrame(p, columns=["a", "b", "c"]).assign(label=y)
    frame.to_csv(tmp_path / "pred.csv", index=False)
    np.save(tmp_path / "p.npy", p)
    np.save(tmp_path / "y.npy", y)
    ref = fitontest.evaluate(p, y, evaluator="ece_es15")
    for args in (["evaluate", tmp_path / "pred.csv"],
                 ["evaluate", tmp_path / "p.npy", "--labels", tmp_path / "y.npy"]):
        out = run_cli(*args, "--evaluator", "ece_es15")
        assert out.returncode == 0, out.stderr
        line = next(l for l in out.stdout.splitlines() if l.startswith("ece_es15"))
        assert float(line.split()[4]) == pytest.approx(ref.estimate, abs=1e-6)


def test_evaluate_errors_are_named(npz, tmp_path):
    path, z, y = npz
    np.save(tmp_path / "p.npy", softmax(z, axis=1))
    out = run_cli("evaluate", tmp_path / "p.npy")
    assert out.returncode == 2 and "--labels" in out.stderr
    np.savez(tmp_path / "bad.npz", probs=np.ones((4, 3)), labels=np.zeros(4, int))
    out = run_cli("evaluate", tmp_path / "bad.npz")
    assert out.returncode == 2 and "sum to 1" in out.stderr
    out = run_cli("evaluate", path, "--evaluator", "platt", "--p", "max")
    assert out.returncode == 2 and "not defined" in out.stderr


def test_families_lists_every_family():
    out = run_cli("families")
    assert out.returncode == 0, out.stderr
    names = {line.split()[0] for line in out.stdout.splitlines() if line.strip()}
    from fitontest import families, multiclass
    assert set(families.names()) | set(multiclass.names()) <= names
    assert re.search(r"^smece\s+binary, map\s+Smooth ECE", out.stdout, re.M)
    assert re.search(r"^kce\s+binary, estimate-only", out.stdout, re.M)


def test_families_are_grouped_with_plain_one_line_summaries(capsys):
    import fitontest_cli
    from fitontest import families, multiclass

    assert fitontest_cli.main(["families"]) == 0
    out = capsys.readouterr().out
    head, evaluators, calibrators = out.split("\n\n")
    for abbreviation in ("CE = calibration error", "PL = piecewise linear",
                         "CMEE = calibration-map estimation error", "ES / EW = equal-size"):
        assert abbreviation in " ".join(head.split())
    rows = {line.split()[0]: line for line in (evaluators + "\n" + calibrators).splitlines()
            if not line.endswith(":")}
    assert {r.split()[0] for r in evaluators.splitlines()[1:]} == set(families.names())
    assert {r.split()[0] for r in calibrators.splitlines()[1:]} == set(multiclass.names())
    for name, line in rows.items():
        cls = families.entry(name) if name in families.names() else multiclass.entry(name)
        summary = cls.__doc__.strip().splitlines()[0]
        assert summary in line, name                       # printed in full
        assert "module docstring" not in summary and "``" not in summary, name
        assert summary.endswith("."), name                 # a sentence, not cut


def test_every_option_of_every_command_has_help():
    import fitontest_cli

    parser = fitontest_cli.build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    assert set(commands) >= {"evaluate", "families", "bench", "jobs"}
    for name, sub in commands.items():
        for action in sub._actions:
            assert action.help, f"fitontest {name} {action.option_strings or action.dest}"
    assert "runs the snakemake workflow" in commands["bench"].format_help().lower()


USER_MODULE = '''
import numpy as np
from fitontest.families import CalibrationFamily


class Shrunk(CalibrationFamily):
    """The identity pulled towards the mean label."""

    def __init__(self, shrink=0.1):
        self.shrink = shrink

    def _fit(self, s, y):
        self.mean_ = float(np.mean(y))

    def _predict(self, s):
        return (1 - self.shrink) * s + self.shrink * self.mean_
'''


def bench_config() -> dict:
    cfg = load_config()
    cfg.update(
        exp="bench",
        split={"n_train": 1500, "n_val": 600, "n_holdout": 4000, "seed": 0},
        archs={"net": {"model": cfg["archs"]["resnet"]["model"], "recipe": "small",
                       "overrides": {"epochs": 1}}},
        training={**cfg["training"], "seeds": [0]},       # one network: a quick bench
        tasks={"car": 1, "confidence": None},
        calibrators={"multiclass": ["none", "temps"], "binary": ["platt"]},
        truth=["isotonic"],
        evaluation={"calibrators": ["none", "temps", "platt"], "sizes": [300, 800],
                    "seeds": [0], "evaluators": ["ece_es15", "isotonic"],
                    "external_evaluators": [], "ranked_calibrators": ["none", "temps", "platt"]},
        synthetic={"enabled": True, "shapes": ["square"], "ce_levels": [0.0, 0.05],
                   "sizes": [300], "seeds": [0], "evaluators": ["ece_es15", "isotonic"],
                   "n_test": 20000},
        report={"figures": "none"},
    )
    return cfg


def job_counts(text: str) -> dict:
    block = text.split("Job stats:")[1].split("total")[0]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", block, re.M)}


# slow: the study run from an empty directory first (train, export, ...: 35 s alone);
# bench on a finished study, the same ranking line, runs in the default set
# (test_workflow.py's test_bench_ranks_a_user_module_on_a_finished_run)
@pytest.mark.slow
@pytest.mark.workflow
def test_bench_ranks_a_user_module_reusing_finished_results(tmp_path):
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(bench_config()))
    (tmp_path / "my_evaluator.py").write_text(USER_MODULE)
    common = ["--configfile", "cfg.yaml", "--snakefile", REPO / "Snakefile", "--cores", "2"]
    first = run_cli("bench", "ece_ew15", *common, cwd=tmp_path, timeout=900)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert "train" in job_counts(first.stdout + first.stderr)
    second = run_cli("bench", "my_evaluator.py:Shrunk", *common, cwd=tmp_path, timeout=900)
    out = second.stdout + second.stderr
    assert second.returncode == 0, out[-5000:]
    # the study ran before: only the new evaluator's jobs (and the collections) run
    assert job_counts(out) == {"evaluate": 1, "synthetic_evaluate": 1,
                               "collect_scores": 1, "synthetic_collect": 1}
    assert re.search(r"Shrunk: CMEE rank [123] of 3, simultaneous rank bounds [123](–[123])? "
                     r"\((supported|contradicted|equivalent|not distinguishable)[^)]*\); "
                     r"CE error rank [123] of 3", second.stdout), second.stdout[-2000:]
    scores = pd.read_parquet(tmp_path / "results/bench/scores.parquet")
    mine = scores[(scores.evaluator == "Shrunk") & (scores.truth == "isotonic")]
    assert len(mine) == 2 * 3 * 2     # tasks x calibrators x sizes
    table = second.stdout.split("pseudo-real study")[1]
    row = next(l for l in table.splitlines() if l.startswith("Shrunk"))
    assert float(row.split()[1]) == pytest.approx(mine.cmee.mean(), abs=1e-5)


DECORATED = '''
from fitontest.families import register
from fitontest.families.isotonic import IsotonicFamily


@register("iso_plugin")
class IsoPlugin(IsotonicFamily):
    """Isotonic under another name."""
'''


def test_plugins_load_in_this_process_and_in_children(tmp_path):
    """use_plugins imports a module and exports it; a child process finds its family."""
    (tmp_path / "deco.py").write_text(DECORATED)
    (tmp_path / "plain.py").write_text(USER_MODULE)
    script = f'''
import json, os, subprocess, sys
from fitontest import families
from fitontest.core.registry import PLUGINS_ENV, use_plugins
use_plugins([{str(tmp_path / "deco.py")!r}, {str(tmp_path / "plain.py") + ":Shrunk"!r}])
assert "iso_plugin" in families.names() and "Shrunk" in families.names()
child = "from fitontest import families; print(sorted(families.names()))"
out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, check=True)
assert "'iso_plugin'" in out.stdout and "'Shrunk'" in out.stdout, out.stdout
print(len(json.loads(os.environ[PLUGINS_ENV])))
'''
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    env.pop("FITONTEST_PLUGINS", None)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "2"
    bad = subprocess.run([sys.executable, "-c", "from fitontest import families; families.names()"],
                         capture_output=True, text=True, timeout=120,
                         env={**env, "FITONTEST_PLUGINS": '["/nowhere/x.py"]'})
    assert bad.returncode != 0 and "does not exist" in bad.stderr


@pytest.mark.workflow
def test_config_plugins_make_a_user_family_pass_the_config_checks(tmp_path):
    from conftest import run_snakemake

    (tmp_path / "deco.py").write_text(DECORATED)
    cfg = bench_config()
    cfg["batch"] = {"evaluators": 1, "calibrators": 1}    # a job per evaluator
    cfg["evaluation"]["evaluators"].append("iso_plugin")
    out = run_snakemake(tmp_path, "-n", "--cores", "1", config=cfg)
    text = out.stdout + out.stderr
    assert out.returncode != 0 and "unknown name(s) ['iso_plugin']" in text
    cfg["plugins"] = [str(tmp_path / "deco.py")]
    out = run_snakemake(tmp_path, "-n", "--cores", "1", config=cfg)
    assert out.returncode == 0, out.stderr[-3000:]
    assert job_counts(out.stdout + out.stderr)["evaluate"] == 3


def test_bench_report_marks_ties_and_intervals_over_units():
    from fitontest_cli.commands.bench import bench_report

    rng = np.random.default_rng(0)
    rows = []
    for arch in ("a", "b"):
        for task in ("t1", "t2"):
            for cal in ("c1", "c2", "c3"):
                for seed in range(3):
                    base = rng.normal(0.05, 0.01)
                    for ev, shift in (("good", 0.0), ("twin", 0.0), ("bad", 0.03)):
                        rows.append(dict(arch=arch, task=task, calibrator=cal, seed=seed,
                                         size=1000, truth="isotonic", evaluator=ev,
                                         cmee=base + shift, ce_error=base + shift))
    text = bench_report(pd.DataFrame(rows), "bad", "Pseudo-real", None)
    assert "bad: CMEE rank 3 of 3, simultaneous rank bounds 3 (contradicted: 2 evaluator(s) " \
           "significantly better)" in text
    assert "3 independent clusters (seed)" in text            # no design column: paper
    text = bench_report(pd.DataFrame(rows).assign(subsets="independent"), "good", "P", None)
    assert "12 independent clusters (network, task, seed)" in text
    # identical columns: "good is best" reads as what it is (the fourth outcome)
    assert "good: CMEE rank 1 of 3, simultaneous rank bounds 1–2 (equivalent: good and twin " \
           "within ±5 % of each other's mean cmee; the others significantly worse)" in text
    good = next(line for line in text.splitlines() if line.startswith("good"))
    twin = next(line for line in text.splitlines() if line.startswith("twin"))
    assert good.count("*") == 2 and twin.count("*") == 2      # identical columns: both tied
    assert "[" in good                                         # a 95 % interval over 36 units


def test_evaluate_prints_the_calibration_test_p_value(npz):
    path, z, y = npz
    out = run_cli("evaluate", path, "--evaluator", "ece_es15", "--json")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)[0]
    want = fitontest.evaluate(z, y, evaluator="ece_es15", from_logits=True)
    assert got["test"] == "kuiper" and got["pvalue"] == pytest.approx(want.pvalue)
    table = run_cli("evaluate", path, "--evaluator", "ece_es15", "--test", "none")
    assert table.returncode == 0 and "p-value" in table.stdout.splitlines()[0]


def test_bench_report_says_what_would_decide_an_open_verdict():
    from fitontest_cli.commands.bench import bench_report

    rng = np.random.default_rng(0)
    rows = [dict(arch=a, task=t, calibrator=c, seed=s, size=1000, truth="isotonic",
                 evaluator=ev, cmee=v, ce_error=v, subsets="independent")
            for a in ("a", "b") for t in ("t1", "t2") for c in ("c1", "c2") for s in range(3)
            for base in [rng.normal(0.05, 0.01)]
            for ev, shift in (("good", 0.0), ("twin", 0.001), ("bad", 0.03))
            for v in [base + shift + rng.normal(0, 0.004)]]
    text = bench_report(pd.DataFrame(rows), "good", "P", None, costs={"evaluate": 90.0})
    assert "(not distinguishable from the best)" in text
    line = next(x for x in text.splitlines() if x.startswith("  CMEE, what it would take:"))
    # a factor on the 12 clusters, as more seeds of 3, priced at 30 CPU-s a seed
    m = re.search(r"with (\d+) independent .* \(now 12\): evaluation\.seeds 3 → (\d+), "
                  r"\+([\d,]+) CPU-s", line)
    assert m, line
    k, seeds, cpu = int(m[1]), int(m[2]), int(m[3].replace(",", ""))
    assert seeds == -(-k // 4) and cpu == 30 * (seeds - 3)
