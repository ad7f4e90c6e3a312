"""The league switch (``league: true``, fitontest.study.league, docs/methods/10-results-and-tables.md
§10.5): what it adds to a config, and a tiny study run with it, whose finished
base run keeps its files while the league's evaluators are added."""
import numpy as np
import pandas as pd
import pytest

from conftest import load_config, run_snakemake
from test_cli import bench_config, job_counts
from fitontest.study.schema import with_network
from fitontest.study.config import ConfigError
from fitontest.study.league import CROSS_FITTED, OWN_INTERVALS, PEERS, apply_league


def test_the_switch_adds_every_league_evaluator_once(monkeypatch):
    monkeypatch.setattr("fitontest.core.extras.missing", lambda extra: [])   # installed or not
    cfg = load_config()
    assert apply_league(dict(cfg)) == cfg                      # off: unchanged
    cfg["league"] = True
    cfg["evaluation"]["evaluators"].append("cf_isotonic")       # listed already: kept once
    out = apply_league(cfg)
    ev = out["evaluation"]["evaluators"]
    assert ev[:18] == load_config()["evaluation"]["evaluators"] + ["cf_isotonic"]
    assert set(CROSS_FITTED) | set(PEERS) <= set(ev) and len(ev) == len(set(ev))
    assert set(CROSS_FITTED) | set(PEERS) <= set(out["synthetic"]["evaluators"])
    assert out["batch"]["late"] == [*CROSS_FITTED, *PEERS]
    # the peers' own intervals join the config's own per-family replicates
    assert out["evaluation"]["interval"]["per_family_n_boot"] == {**OWN_INTERVALS, "isotonic": 100}
    assert out["synthetic"]["interval"]["per_family_n_boot"] == {**OWN_INTERVALS, "isotonic": 100,
                                                                 "smece": 100}
    assert apply_league(out) == out                            # idempotent


def test_real_data_gets_no_intervals_and_a_missing_extra_stops_the_run(monkeypatch):
    monkeypatch.setattr("fitontest.core.extras.missing", lambda extra: [])
    cfg = load_config("real.yaml")
    cfg["league"] = True
    out = apply_league(cfg)
    assert "per_family_n_boot" not in out["evaluation"]["interval"]
    assert set(PEERS) <= set(out["evaluation"]["evaluators"])
    monkeypatch.setattr("fitontest.core.extras.missing", lambda extra: ["catboost"])
    with pytest.raises(ConfigError, match=r"'league'.*catboost.*fitontest\[peers\]"):
        apply_league({**load_config(), "league": True})


def tiny_config() -> dict:
    """test_cli's tiny study (one 1-epoch network, 4000 hold-out points), batched,
    with an interval for the peers' own intervals to fill."""
    cfg = bench_config()
    cfg["exp"] = "league"
    # one subset size: the league's fifteen evaluators fit every subset, and what is
    # checked (finished batches kept, every evaluator's values) needs no second size
    cfg["evaluation"]["sizes"] = [300]
    cfg["evaluation"]["evaluators"].append("smece")
    cfg["evaluation"]["interval"] = {"level": 0.9, "method": "auto", "n_boot": 40}
    cfg["synthetic"]["interval"] = {"n_boot": 40}
    cfg["batch"] = {"evaluators": 16, "calibrators": 8}
    cfg["family_params"] = {"cf_pl_ce": {"params": {"max_epochs": 30}}}
    return cfg


# slow: two study runs, the league's fifteen evaluators fitted (60 s alone); the
# default set keeps the switch (above), the peers' families (test_peers.py,
# test_experiment.py) and the league's late batch on a finished run, dry
# (test_workflow.py's test_a_league_run_on_a_finished_run_adds_only_its_batch)
@pytest.mark.slow
@pytest.mark.workflow
def test_a_league_run_adds_its_evaluators_to_a_finished_run(tmp_path):
    for package in ("probmetrics", "catboost", "calibration", "relplot", "netcal",
                    "torchmetrics", "venn_abers", "probcal", "numba"):
        pytest.importorskip(package)
    cfg = tiny_config()
    base = run_snakemake(tmp_path, "--cores", "2", config=cfg, timeout=1200)
    assert base.returncode == 0, base.stderr[-3000:]
    keep = ["--rerun-triggers", "mtime", "input", "software-env", "code"]
    cfg["league"] = True
    dry = run_snakemake(tmp_path, "-n", "--cores", "2", *keep, config=cfg)
    assert dry.returncode == 0, dry.stderr[-3000:]
    # the finished batches are up to date: only the league's batch and the collections run
    jobs = job_counts(dry.stdout + dry.stderr)
    assert {k: v for k, v in jobs.items() if "evaluate" in k} == {
        "evaluate_batch2": 1, "synthetic_evaluate_batch2": 1}, jobs
    done = run_snakemake(tmp_path, "--cores", "2", *keep, config=cfg, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    scores = pd.read_parquet(tmp_path / "results/league/scores.parquet")
    league = [*CROSS_FITTED, *PEERS]
    assert set(league) <= set(scores["evaluator"])
    got = scores[scores["evaluator"].isin(league)].groupby("evaluator")
    assert got["ce_used"].apply(lambda v: np.isfinite(v).all()).all()
    with_map = {"venn_abers", "relplot_smece", *CROSS_FITTED}
    assert set(got["cmee"].apply(lambda v: np.isfinite(v).all()).loc[lambda x: x].index) == with_map
    assert set(got["ce_lo"].apply(lambda v: np.isfinite(v).all()).loc[lambda x: x].index) == \
        set(OWN_INTERVALS)
    syn = pd.read_parquet(tmp_path / "results/league/synthetic_scores.parquet")
    assert set(league) <= set(syn["evaluator"])
    # the tables name them
    table = (tmp_path / "results/league/tables/table4_ce_error_ovr.md").read_text()
    assert "probmetrics_catboost" in table and "cf_isotonic" in table


def test_the_league_table_ranks_marks_and_covers():
    """benchmarks/truth/league.py on a frame built to order: 'good' estimates the CE
    exactly, 'bad' misses by 0.02, 'peer' by 0.01 and carries an interval that
    covers in 3 of 4 calibrators; independent (model, task, seed) clusters."""
    from conftest import load_benchmark
    from fitontest.study.schema import SCORE_COLUMNS, SCORE_VALUES

    league = load_benchmark("league")
    rng = np.random.default_rng(0)
    rows = []
    for arch in ("a", "b", "c"):
        for task in ("car", "confidence"):
            for seed in range(2):
                for cal in ("none", "temps", "platt", "isotonic"):
                    true = 0.02 + 0.01 * rng.random()
                    for ev, miss in (("good", 0.0), ("bad", 0.02), ("probcal_skce", 0.01)):
                        r = {c: np.nan for c in SCORE_VALUES}
                        err = miss + 1e-4 * rng.random()
                        r.update(arch=arch, task=task, calibrator=cal, evaluator=ev, size=500,
                                 seed=seed, truth="isotonic", true_ce=true, ce_used=true + err,
                                 ce_error=err, ce_error_sq=err ** 2, cmee=err, fit_seconds=0.5,
                                 true_ce_sq=true ** 2, ce_used_sq=(true + err) ** 2)
                        if ev == "probcal_skce":
                            r.update(cmee=np.nan, ce_lo=true + (0.5 if cal == "isotonic" else -1.0),
                                     ce_hi=true + 1,
                                     ci_level=0.9, true_ce_pop=true)
                        rows.append(r)
    f = with_network(pd.DataFrame(rows))[SCORE_COLUMNS].assign(subsets="independent")
    table, note = league.league_table(f, "scores")
    assert list(table.index) == ["good", "probcal_skce", "bad"]
    assert table.loc["good", "CE error p=1"].endswith("r1*")
    assert table.loc["bad", "CE error p=1"].endswith("r3")          # significantly worse
    assert table.loc["probcal_skce", "kind"] == "peer" and table.loc["probcal_skce", "CMEE"] == "–"
    assert table.loc["probcal_skce", "coverage %"].startswith("75.0 [")
    assert table.loc["good", "coverage %"] == "–" and "12 independent clusters" in note
