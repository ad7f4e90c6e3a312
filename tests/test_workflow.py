"""A tiny real run of the Snakemake workflow and what reads it (the shipped configs'
dry runs: test_workflow_configs.py)."""
import re
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest
import yaml

from conftest import REPO, load_config, run_snakemake, snakemake_cmd

pytestmark = pytest.mark.workflow

def job_counts(stdout: str) -> dict[str, int]:
    """Stage -> job count from Snakemake's 'Job stats' table; a batched stage's
    rules (evaluate_batch1, ...) count as the stage (evaluate)."""
    rules = {}     # (the table may be printed twice: once per stream)
    for line in stdout.splitlines():
        m = re.match(r"^(\w+)\s+(\d+)$", line.strip())
        if m and m.group(1) != "total":
            rules[m.group(1)] = int(m.group(2))
    counts = {}
    for rule, n in rules.items():
        stage = re.sub(r"_batch\d+$", "", rule)
        counts[stage] = counts.get(stage, 0) + n
    return counts


def tiny_config() -> dict:
    cfg = load_config()
    cfg.update(
        exp="tiny",
        split={"n_train": 1500, "n_val": 600, "n_holdout": 4000, "seed": 0},
        archs={"net": {"model": cfg["archs"]["resnet"]["model"], "recipe": "small",
                       "overrides": {"epochs": 1}}},
        # two networks of the one architecture: the networks are the clusters
        training={**cfg["training"], "seeds": [0, 1]},
        tasks={"car": 1, "confidence": None},
        calibrators={"multiclass": ["none", "temps"], "binary": ["isotonic", "platt"],
                     "draws": 3},
        truth=["isotonic", "posterior", "es100_slope1"],
        evaluation={"calibrators": ["none", "temps", "isotonic", "platt"],
                    "sizes": [300, 800], "seeds": [0],
                    "evaluators": ["ece_es15", "isotonic"],
                    "external_evaluators": ["ece_ew10_external"],
                    "ranked_calibrators": ["none", "temps", "isotonic", "platt"]},
        synthetic={"enabled": True, "shapes": ["square", "stairs"], "ce_levels": [0.0, 0.05],
                   "sizes": [300], "seeds": [0],
                   # ece_es_cv: a cross-validated family with intervals (its worlds
                   # resample rows shorter than the doubled sample, see bincounts)
                   "evaluators": ["ece_es15", "isotonic", "ece_es_cv"],
                   "interval": {"level": 0.9, "method": "auto", "n_boot": 40,
                                "per_family_n_boot": {"isotonic": 40}},
                   "n_test": 20000},
    )
    return cfg


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("tiny")
    out = run_snakemake(workdir, "--cores", "2", config=tiny_config(), timeout=900)
    assert out.returncode == 0, (out.stdout[-3000:], out.stderr[-5000:])
    return workdir / "results" / "tiny"


def test_tiny_run_scores_cover_the_grid(tiny_run):
    cfg = tiny_config()
    scores = pd.read_parquet(tiny_run / "scores.parquet")
    ev = cfg["evaluation"]
    evaluators = ev["evaluators"] + ev["external_evaluators"]
    got = set(map(tuple, scores[["arch", "task", "calibrator", "evaluator"]].drop_duplicates()
                  .to_numpy()))
    want = {(a, t, c, e) for a in cfg["archs"] for t in cfg["tasks"]
            for c in ev["calibrators"] for e in evaluators}
    assert got == want
    assert set(scores["network"]) == {"net", "net-s1"}
    assert len(scores) == (len(want) * 2 * len(ev["sizes"]) * len(ev["seeds"])
                           * len(cfg["truth"]))
    for col in ["ce_est", "true_ce", "ce_error", "cmee", "cmee_sq"]:
        vals = scores[col].to_numpy()
        assert np.isfinite(vals).all() and (vals >= 0).all(), col
    # fit_seconds is optional in the external contract
    internal = scores[scores.evaluator.isin(ev["evaluators"])]
    assert (internal.fit_seconds >= 0).all()
    assert (scores[["true_ce", "cmee"]] <= 1).all().all()


def test_tiny_run_external_evaluator_matches_textbook_ece(tiny_run):
    """The example external rule is EW-10 ECE: check it against the formula."""
    scores = pd.read_parquet(tiny_run / "scores.parquet")
    row = scores[(scores.evaluator == "ece_ew10_external") & (scores.truth == "isotonic")
                 & (scores.calibrator == "none") & (scores.task == "car")
                 & (scores["size"] == 300)].iloc[0]
    from fitontest.core.io import load_npz, load_subsets

    d = load_npz(tiny_run / "calibrated/net/car/none.npz")
    pos = load_subsets(tiny_run / "data/subsets/net/car.npz")[(300, 0)]
    s, y = d["holdout_scores"][pos], d["holdout_labels"][pos].astype(float)
    b = np.minimum((s * 10).astype(int), 9)
    ece = sum(abs(s[b == k].sum() - y[b == k].sum()) for k in range(10)) / len(s)
    assert row.ce_est == pytest.approx(ece, abs=1e-6)


def test_tiny_run_tables_contain_every_evaluator(tiny_run):
    cfg = tiny_config()
    tables = tiny_run / "tables"
    md = {p.name: p.read_text() for p in tables.glob("*.md")}
    assert md, "no Markdown tables written"
    cmee_tables = [t for n, t in md.items() if "cmee" in n and "synthetic" not in n]
    assert cmee_tables
    for ev in cfg["evaluation"]["evaluators"] + cfg["evaluation"]["external_evaluators"]:
        assert any(ev in t for t in cmee_tables), ev
    assert any("synthetic" in n for n in md), "no synthetic tables"
    assert list(tables.glob("*.csv")) and list(tables.glob("*.tex"))


def test_tiny_run_calibrator_metrics_and_figures(tiny_run):
    cal = pd.read_parquet(tiny_run / "calibrators.parquet")
    assert set(cal.calibrator) == {"none", "temps", "isotonic", "platt"}
    assert np.isfinite(cal[["ceac", "cmee"]].to_numpy()).all()
    # the uncalibrated model: calibrated scores = uncalibrated, so CEAC == CMEE
    none = cal[cal.calibrator == "none"]
    assert np.allclose(none.ceac, none.cmee)
    assert list((tiny_run / "figures").glob("*.png"))


def test_tiny_run_report_holds_tables_figures_and_findings(tiny_run):
    """`snakemake --report` on the finished run: the HTML tables, CD diagrams,
    figures and findings.md are embedded (as base64 data URIs)."""
    import base64

    workdir = tiny_run.parent.parent
    report = workdir / "report.html"
    out = run_snakemake(workdir, "--report", str(report), config=tiny_config())
    assert out.returncode == 0, out.stderr[-3000:]
    embedded = {name: (mime, base64.b64decode(data)) for mime, name, data in re.findall(
        r"data:([\w/+.-]+);charset=[\w-]+;filename=([^;\"]+);base64,([A-Za-z0-9+/=]+)",
        report.read_text(encoding="utf-8"))}
    mime, page = embedded["table3_cmee.html"]
    assert mime == "text/html"
    assert b"Table 3" in page and b"CMEE of the evaluators" in page and b"<table>" in page
    cd = [n for n in embedded if n.endswith(".cd.png")]
    figures = [n for n in embedded if n.endswith(".png") and n not in cd]
    assert cd and figures, sorted(embedded)
    assert all(embedded[n][1].startswith(b"\x89PNG") for n in cd + figures)
    assert b"# " in embedded["findings.md"][1]


# every rule of the run: `fitontest jobs` accounts for the whole of it
RULES = ["split", "train", "export_logits", "calibrate_multiclass", "calibrate_binary",
         "calibrator_draws",
         "truth", "evaluate", "synthetic_evaluate", "ece_ew10_external", "score_external",
         "collect_scores", "calibrator_metrics", "synthetic_collect", "tables", "figures",
         "findings", "controller"]


def test_tiny_run_benchmarks_every_job(tiny_run):
    """Each job leaves a Snakemake benchmark; the summary reads them all."""
    from fitontest.study.jobstats import read_benchmarks, summarise

    cfg = tiny_config()
    bench = tiny_run / "benchmarks"
    archs = ["net", "net-s1"]          # the networks: the architecture at training seeds 0, 1
    want = {bench / "split.tsv"}
    want |= {bench / f"train/{a}.tsv" for a in archs}
    want |= {bench / f"export_logits/{a}.tsv" for a in archs}
    # the tiny config's methods of each stage share one job (batch sizes of the default)
    want |= {bench / f"calibrate_multiclass/{a}/batch1.tsv" for a in archs}
    want |= {bench / f"calibrate_binary/{a}/batch1.tsv" for a in archs}
    want |= {bench / f"truth/{a}.tsv" for a in archs}      # batched: a network's tasks
    want |= {bench / f"calibrator_draws/{a}.tsv" for a in archs}
    want |= {bench / f"evaluate/{a}/batch1.tsv" for a in archs}
    want |= {bench / "synthetic_evaluate/batch1.tsv"}
    external = [(a, t, c) for a in archs for t in cfg["tasks"]
                for c in cfg["evaluation"]["calibrators"]]
    want |= {bench / f"ece_ew10_external/{a}/{t}/{c}.tsv" for a, t, c in external}
    want |= {bench / f"score_external/{a}/{t}/{c}/ece_ew10_external.tsv" for a, t, c in external}
    want |= {bench / f"{rule}.tsv" for rule in ("collect_scores", "calibrator_metrics",
                                                "synthetic_collect", "tables", "figures",
                                                "findings", "controller")}
    missing = sorted(str(p.relative_to(bench)) for p in want if not p.is_file())
    assert not missing, missing
    table = summarise(tiny_run)
    assert set(table.index) == set(RULES)
    assert table.loc["evaluate", "jobs"] == len(archs)
    rows = read_benchmarks(tiny_run)
    assert table.jobs.sum() == len(want) == len(rows)
    # measured, not placeholders: every job took time, training used the CPU
    assert (rows.s > 0).all() and (table.max_rss_mb > 0).all()
    assert table.loc["train", "cpu_s"] > 0


def test_tiny_run_is_deterministic_in_its_split(tiny_run, tmp_path):
    """Re-running the split rule alone gives the same subsets; each task has its
    own (the independent design), and the scores record that design."""
    from fitontest.core.io import load_subsets

    out = run_snakemake(tmp_path, "--cores", "1", "results/tiny/data/subsets/net/car.npz",
                        config=tiny_config())
    assert out.returncode == 0, out.stderr[-3000:]
    a = load_subsets(tiny_run / "data/subsets/net/car.npz")
    b = load_subsets(tmp_path / "results/tiny/data/subsets/net/car.npz")
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    other = sorted((tiny_run / "data/subsets/net").glob("*.npz"))
    assert len(other) == len(tiny_config()["tasks"]) >= 2
    c = load_subsets(other[0] if other[0].stem != "car" else other[1])
    assert not np.array_equal(a[(300, 0)], c[(300, 0)])
    assert set(pd.read_parquet(tiny_run / "scores.parquet")["subsets"]) == {"independent"}


def test_tiny_run_replicates_table2_over_validation_draws(tiny_run):
    """calibrators.draws: 3 gives every calibrator of every network rows of
    draws 1, 2 and 3 (the validation split's own fits, draw 0, are not among
    them: docs/methods/06-truth-and-scores.md §6.4), and Table 2's cells are
    over the networks, the draws nested within them."""
    cal = pd.read_parquet(tiny_run / "calibrators.parquet")
    per = cal.groupby(["network", "task", "calibrator", "truth"])["draw"].apply(sorted)
    assert per.map(lambda d: d == [1, 2, 3]).all()
    assert set(cal["network"]) == {"net", "net-s1"} and set(cal["arch"]) == {"net"}
    ci = pd.read_csv(tiny_run / "tables" / "table2_ceac.ci.csv")
    assert (ci["n_units"] == 2).all()          # 2 networks, their 3 draws within each
    caption = (tiny_run / "tables" / "table2_ceac.md").read_text()
    assert "networks of these architectures trained by this recipe" in caption


def test_tiny_run_findings_report_every_claim(tiny_run):
    from fitontest.report.findings import (CONTRADICTED, FAILS, HOLDS, NOT_TESTABLE,
                                           SUPPORTED, UNDECIDED, load_claims)

    ids = [c.id for c in load_claims()]
    found = pd.read_csv(tiny_run / "findings.csv", keep_default_na=False)
    assert list(found["id"]) == ids
    assert set(found["status"]) <= {SUPPORTED, CONTRADICTED, UNDECIDED, NOT_TESTABLE}
    assert (found["evidence"] != "").all()
    status = found.set_index("id")["status"]
    point = found.set_index("id")["point"]
    # the tiny grid runs neither PL nor PL3, and one network: those claims cannot be tested
    assert status["t3_pl_best"] == NOT_TESTABLE and point["t3_pl_best"] == ""
    # ... but isotonic vs ES-15 vs the external EW-10 is decided from the scores; two
    # networks of one architecture: 2 clusters, too few for a verdict
    assert point["t4_isotonic_ranks_best_ovr"] in (HOLDS, FAILS)
    assert status["t4_isotonic_ranks_best_ovr"] == UNDECIDED
    md = (tiny_run / "findings.md").read_text()
    assert all(f"`{i}`" in md for i in ids)


def test_tiny_run_synthetic_intervals_of_every_listed_family(tiny_run):
    """Every synthetic evaluator with replicates (ece_es15 and ece_es_cv batched,
    isotonic listed) gets a non-negative interval at the configured level: the
    cross-validated one included (its worlds once crashed in bincounts)."""
    syn = pd.read_parquet(tiny_run / "synthetic_scores.parquet")
    for ev in ["ece_es15", "ece_es_cv", "isotonic"]:
        rows = syn[syn.evaluator == ev]
        assert len(rows) > 0, ev
        assert rows.ce_hi.notna().all() and (rows.ce_lo >= 0).all(), ev
        assert (rows.ce_lo <= rows.ce_hi).all() and (rows.ci_level == 0.9).all(), ev


def _npz_equal(a, b) -> bool:
    """Two npz files hold the same arrays (their zip entries carry the write time)."""
    with np.load(a) as x, np.load(b) as y:
        return x.files == y.files and all(np.array_equal(x[k], y[k]) for k in x.files)


@pytest.mark.parametrize("scope", ["one network", pytest.param("whole study",
                                                                marks=pytest.mark.slow)])
def test_batch_sizes_change_the_jobs_not_the_results(tiny_run, tmp_path, scope):
    """The tiny study with a job per method (batch 1) against the tiny run, whose
    methods share jobs. One network (the default set): each method's own files
    (calibrated scores, truths, score rows, the synthetic rows), the same arrays
    and rows in the same order (fit_seconds aside: a timing). The whole study (the
    slow set): the same tables, calibrator rows and score rows, byte for byte and
    in the same order.

    The batch-1 run starts from a copy of the tiny run's split, networks and
    logits (no batch setting reaches those stages); every file the batched
    stages write, and every file compared below, is removed first, so that all
    of it is computed anew by the batch-1 jobs."""
    cfg = tiny_config()
    cfg["batch"] = {"evaluators": 1, "calibrators": 1}
    work = tmp_path / "w"
    shutil.copytree(tiny_run.parents[1], work, symlinks=True)
    single = work / "results" / "tiny"
    kept = {"data", "models", "logits"}
    for path in single.iterdir():
        if path.name not in kept:
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    ev, syn = cfg["evaluation"], cfg["synthetic"]
    calibrators = list(dict.fromkeys(["none", *cfg["calibrators"]["multiclass"],
                                      *cfg["calibrators"]["binary"]]))
    if scope == "one network":
        arrays = [f"{stage}/net/{t}/{c}.npz" for stage in ("calibrated", "truth")
                  for t in cfg["tasks"] for c in calibrators]
        frames = ([f"scores/net/{e}.parquet" for e in ev["evaluators"]]
                  + [f"synthetic/{s}/{e}.parquet" for s in syn["shapes"]
                     for e in syn["evaluators"]])
        files, n_net = [], 1
    else:
        arrays, files, n_net = [], ["tables", "findings.csv"], 2
        frames = ["scores.parquet", "synthetic_scores.parquet", "calibrators.parquet"]
    out = run_snakemake(work, "--cores", "2",
                        *(f"results/tiny/{name}" for name in arrays + frames + files),
                        config=cfg, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    counts = job_counts(out.stdout + out.stderr)
    # a job per method; the reused stages did not run again
    assert counts["evaluate"] == n_net * len(ev["evaluators"])
    assert counts["calibrate_binary"] == n_net * len(cfg["calibrators"]["binary"])
    assert counts["calibrate_multiclass"] == n_net * len(cfg["calibrators"]["multiclass"])
    assert counts["synthetic_evaluate"] == len(syn["shapes"]) * len(syn["evaluators"])
    assert not {"split", "train", "export_logits"} & set(counts), counts
    for name in arrays:
        assert _npz_equal(tiny_run / name, single / name), name
    for name in frames:
        a, b = pd.read_parquet(tiny_run / name), pd.read_parquet(single / name)
        pd.testing.assert_frame_equal(a.drop(columns="fit_seconds", errors="ignore"),
                                      b.drop(columns="fit_seconds", errors="ignore"),
                                      check_exact=True)
    if scope == "whole study":
        tables = sorted(p.relative_to(single) for p in (single / "tables").rglob("*")
                        if p.is_file() and p.suffix in (".csv", ".md", ".tex", ".html"))
        assert tables
        for rel in tables:
            assert (tiny_run / rel).read_bytes() == (single / rel).read_bytes(), rel
        assert (tiny_run / "findings.csv").read_bytes() == (single / "findings.csv").read_bytes()


def test_rerun_incomplete_after_a_killed_batch_reruns_only_it(tiny_run, tmp_path):
    """A run killed while a batched evaluate job runs (the tiny run, its batch's
    files and everything after them removed): --rerun-incomplete redoes that one
    job and what reads its files, nothing else (the other stages stay done)."""
    import os
    import signal
    import time

    work = tmp_path / "w"
    shutil.copytree(tiny_run.parents[1], work, symlinks=True)
    res = work / "results/tiny"
    batch = [res / f"scores/net/{e}.parquet" for e in tiny_config()["evaluation"]["evaluators"]]
    for path in batch + [res / "scores.parquet", res / "findings.md", res / "findings.csv"]:
        path.unlink()
    shutil.rmtree(res / "tables"), shutil.rmtree(res / "figures")
    log = work / "logs/tiny/evaluate/net/batch1.log"
    log.unlink()                             # the job writes it anew once it runs
    cmd = snakemake_cmd() + ["-s", str(REPO / "Snakefile"), "-d", str(work), "--cores", "1",
                             "--configfile", str(work / "test-config.yaml")]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 300
    while not (log.is_file() and "/" in log.read_text()) and proc.poll() is None:
        assert time.monotonic() < deadline, "the batch job never started"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)      # the controller and the job with it
    proc.wait()
    assert not any(p.exists() for p in batch)
    cfg = yaml.safe_load((work / "test-config.yaml").read_text())
    assert run_snakemake(work, "--unlock", "--cores", "1", config=cfg).returncode == 0
    out = run_snakemake(work, "-n", "--cores", "1", "--rerun-incomplete", config=cfg)
    assert out.returncode == 0, out.stderr[-3000:]
    counts = job_counts(out.stdout + out.stderr)
    assert counts.pop("evaluate") == 1
    assert set(counts) == {"collect_scores", "tables", "figures", "findings", "all"}, counts



def test_bench_ranks_a_user_module_on_a_finished_run(tiny_run, tmp_path):
    """`fitontest bench` in a copy of the finished tiny study: only the user module's
    jobs (one per network, one per synthetic shape) and the collections run, and its
    line ranks it among the study's evaluators with the table's cell. (From an empty
    directory, the study run first: test_cli's slow bench test.)"""
    from test_cli import USER_MODULE, run_cli

    work = tmp_path / "w"
    shutil.copytree(tiny_run.parents[1], work, symlinks=True)
    (work / "my_evaluator.py").write_text(USER_MODULE)
    out = run_cli("bench", "my_evaluator.py:Shrunk", "--configfile", "test-config.yaml",
                  "--snakefile", REPO / "Snakefile", "--cores", "2", cwd=work, timeout=900)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-5000:]
    cfg = tiny_config()
    n_shapes = len(cfg["synthetic"]["shapes"])
    assert job_counts(text) == {"evaluate": 2, "synthetic_evaluate": n_shapes,
                                "collect_scores": 1, "synthetic_collect": 1}, job_counts(text)
    ev = cfg["evaluation"]
    n = len(ev["evaluators"]) + len(ev["external_evaluators"]) + 1
    assert re.search(rf"Shrunk: CMEE rank [1-{n}] of {n}, simultaneous rank bounds [1-{n}]"
                     rf"(–[1-{n}])? \((supported|contradicted|equivalent|not distinguishable)"
                     rf"[^)]*\); CE error rank [1-{n}] of {n}", out.stdout), out.stdout[-2000:]
    scores = pd.read_parquet(work / "results/tiny/scores.parquet")
    mine = scores[(scores.evaluator == "Shrunk") & (scores.truth == cfg["truth"][0])]
    assert len(mine) == 2 * len(cfg["tasks"]) * len(ev["calibrators"]) * len(ev["sizes"])
    table = out.stdout.split("pseudo-real study")[1]
    row = next(line for line in table.splitlines() if line.startswith("Shrunk"))
    assert float(row.split()[1]) == pytest.approx(mine.cmee.mean(), abs=1e-5)


def test_a_league_run_on_a_finished_run_adds_only_its_batch(tiny_run, tmp_path):
    """``league: true`` on the finished tiny study, dry: its batches are up to date, so
    only the league's late batch (per network, and the synthetic one) and the
    collections would run. (The league run itself: test_league's slow test.)"""
    for package in ("probmetrics", "catboost", "calibration", "relplot", "netcal",
                    "torchmetrics", "venn_abers", "probcal", "numba"):
        pytest.importorskip(package)
    work = tmp_path / "w"
    shutil.copytree(tiny_run.parents[1], work, symlinks=True)
    cfg = {**tiny_config(), "league": True}
    keep = ["--rerun-triggers", "mtime", "input", "software-env", "code"]
    dry = run_snakemake(work, "-n", "--cores", "2", *keep, config=cfg)
    assert dry.returncode == 0, dry.stderr[-3000:]
    rules = {}
    for line in (dry.stdout + dry.stderr).splitlines():
        m = re.match(r"^(\w+)\s+(\d+)$", line.strip())
        if m and m.group(1) != "total":
            rules[m.group(1)] = int(m.group(2))
    assert {k: v for k, v in rules.items() if "evaluate" in k} == {
        "evaluate_batch2": 2, "synthetic_evaluate_batch2": 1}, rules
    assert not {"split", "train", "export_logits", "truth", "calibrate_binary"} & set(rules)
