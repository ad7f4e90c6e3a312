"""The per-rule summary of Snakemake benchmark files, on hand-made files."""
import pandas as pd
import pytest

from fitontest.study.jobstats import main, summarise

HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def write(path, *rows):
    """rows: (wall s, max_rss MB, cpu s)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEADER + "".join(f"{s}\t0:00:00\t{rss}\t1\t1\t1\t0\t0\t50\t{cpu}\n"
                                     for s, rss, cpu in rows))


@pytest.fixture
def results(tmp_path):
    b = tmp_path / "benchmarks"
    write(b / "split.tsv", (2.0, 100.5, 1.5))
    write(b / "evaluate/net/ece_es15.tsv", (10.0, 300.0, 18.0))
    write(b / "evaluate/net/isotonic.tsv", (30.0, 250.0, 50.0))
    write(b / "evaluate/other/isotonic.tsv", (20.0, 900.0, 25.0))
    # a job benchmarked with two repeats counts once: mean times, largest memory
    write(b / "truth/net/car.tsv", (4.0, 50.0, 3.0), (6.0, 70.0, 5.0))
    return tmp_path


def test_summary_per_rule(results):
    got = summarise(results)
    assert list(got.columns) == ["jobs", "cpu_s", "wall_s", "max_wall_s", "max_rss_mb"]
    want = pd.DataFrame({"jobs": [3, 1, 1], "cpu_s": [93.0, 4.0, 1.5],
                         "wall_s": [60.0, 5.0, 2.0], "max_wall_s": [30.0, 5.0, 2.0],
                         "max_rss_mb": [900.0, 70.0, 100.5]},
                        index=pd.Index(["evaluate", "truth", "split"], name="rule"))
    pd.testing.assert_frame_equal(got, want, check_dtype=False)


def test_unmeasured_values_are_missing_not_zero(tmp_path):
    path = tmp_path / "benchmarks/train/net.tsv"
    path.parent.mkdir(parents=True)
    path.write_text(HEADER + "7.5\t0:00:07\t-\t-\t-\t-\t-\t-\t-\t-\n")
    got = summarise(tmp_path)
    assert got.loc["train", "wall_s"] == 7.5 and pd.isna(got.loc["train", "max_rss_mb"])


def test_bad_input_names_the_problem(tmp_path):
    with pytest.raises(ValueError, match="no benchmarks folder"):
        summarise(tmp_path)
    (tmp_path / "benchmarks").mkdir()
    with pytest.raises(ValueError, match="no benchmark files"):
        summarise(tmp_path)
    (tmp_path / "benchmarks/x.tsv").write_text("a\tb\n1\t2\n")
    with pytest.raises(ValueError, match="not a Snakemake benchmark"):
        summarise(tmp_path)


def test_main_prints_every_rule(results, capsys):
    assert main([str(results)]) == 0
    out = capsys.readouterr().out
    assert all(rule in out for rule in ("evaluate", "truth", "split"))
    assert "5 jobs" in out


def test_fitontest_jobs_command_prints_the_summary(results):
    import os
    import subprocess
    import sys
    from pathlib import Path

    src = Path(__file__).resolve().parents[1] / "src"
    out = subprocess.run([sys.executable, "-m", "fitontest.cli", "jobs", str(results)],
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(src)})
    assert out.returncode == 0, out.stderr
    evaluate = next(line for line in out.stdout.splitlines() if line.startswith("evaluate"))
    assert evaluate.split()[1:3] == ["3", "93.0"]
    assert "5 jobs" in out.stdout


# ------------------------------------------------------------- extrapolation
def grid_config(archs, tasks, evaluators, seeds, n_holdout=1000):
    return {"archs": {a: {} for a in archs}, "tasks": {t: None for t in tasks},
            "split": {"n_val": 100, "n_holdout": n_holdout},
            "calibrators": {"multiclass": ["temps"], "binary": ["platt", "pl3_ce"]},
            "truth": ["isotonic", "es100_flat"],
            "evaluation": {"calibrators": ["platt", "temps"], "sizes": [10, 30],
                           "seeds": list(range(seeds)), "evaluators": evaluators}}


#: CPU seconds of one unit of work (one fit, one task, one calibrated model)
UNIT = {"ece_es15": 0.5, "pl3_ce": 7.0, "none": 1.0, "temps": 3.0, "platt": 0.2}


def measured_run(tmp_path, cfg):
    """Benchmark files of a run of ``cfg`` whose jobs cost exactly UNIT per unit."""
    b = tmp_path / "benchmarks"
    tasks, n_cal, seeds = len(cfg["tasks"]), 4, len(cfg["evaluation"]["seeds"])
    for arch in cfg["archs"]:
        for ev in cfg["evaluation"]["evaluators"]:
            write(b / f"evaluate/{arch}/{ev}.tsv", (1, 100, UNIT[ev] * tasks * 2 * seeds))
        for cal in ["none", "temps"]:
            write(b / f"calibrate_multiclass/{arch}/{cal}.tsv", (1, 100, UNIT[cal]))
        for cal in ["platt", "pl3_ce"]:
            write(b / f"calibrate_binary/{arch}/{cal}.tsv", (1, 100, UNIT[cal] * tasks))
        for task in cfg["tasks"]:
            write(b / f"truth/{arch}/{task}.tsv", (1, 300, 0.25 * n_cal * 2))
        write(b / f"train/{arch}.tsv", (50, 900, 60))
    return tmp_path


def test_extrapolation_recovers_the_cost_of_a_bigger_grid(tmp_path):
    from fitontest.study.jobstats import extrapolate

    small = grid_config(["a"], ["car", "conf"], ["ece_es15", "pl3_ce"], seeds=2)
    big = grid_config(["x", "y", "z"], ["car", "cat", "dog", "conf"], ["ece_es15", "pl3_ce"],
                      seeds=5)
    got = extrapolate(measured_run(tmp_path, small), small, big)
    # the target's grid, costed unit by unit
    evaluate = 3 * (0.5 + 7.0) * 4 * 2 * 5
    assert got.loc["evaluate", "target_cpu_s"] == pytest.approx(evaluate)
    assert got.loc["evaluate", "target_jobs"] == 6
    assert got.loc["calibrate_binary", "target_cpu_s"] == pytest.approx(3 * (0.2 + 7.0) * 4)
    assert got.loc["calibrate_multiclass", "target_cpu_s"] == pytest.approx(3 * (1.0 + 3.0))
    assert got.loc["truth", "target_cpu_s"] == pytest.approx(3 * 4 * 0.25 * 4 * 2)
    assert got.loc["truth", "target_jobs"] == 12
    assert pd.isna(got.loc["train", "target_cpu_s"]) and "network" in got.loc["train", "note"]
    assert got.loc["truth", "max_rss_mb"] == 300


def test_extrapolation_refuses_other_sizes_and_unmeasured_methods(tmp_path):
    from fitontest.study.jobstats import extrapolate

    small = grid_config(["a"], ["car"], ["ece_es15"], seeds=1)
    run = measured_run(tmp_path, small)
    with pytest.raises(ValueError, match="split.n_holdout"):
        extrapolate(run, small, grid_config(["a"], ["car"], ["ece_es15"], 1, n_holdout=5000))
    with pytest.raises(ValueError, match=r"evaluate: no measured job for \['pl3_ce'\]"):
        extrapolate(run, small, grid_config(["a"], ["car"], ["ece_es15", "pl3_ce"], 1))


def test_fitontest_jobs_scale_prints_the_prediction(tmp_path, capsys):
    import yaml

    small = grid_config(["a"], ["car"], ["ece_es15"], seeds=1)
    big = grid_config(["a", "b"], ["car"], ["ece_es15"], seeds=3)
    (tmp_path / "small.yaml").write_text(yaml.safe_dump(small))
    (tmp_path / "big.yaml").write_text(yaml.safe_dump(big))
    run = measured_run(tmp_path / "run", small)
    assert main([str(run), "--scale", str(tmp_path / "small.yaml"), str(tmp_path / "big.yaml")]) == 0
    out = capsys.readouterr().out
    evaluate = next(line for line in out.splitlines() if line.startswith("evaluate"))
    assert evaluate.split()[1:3] == ["1", "1.0"] and "6.0" in evaluate  # 2 archs x 3 seeds x 0.5 x 2
    assert "train (network and device)" in out


def test_shipped_rehearsal_measurements_cover_the_paper_grid():
    """benchmarks/measured/rehearsal (config/README.md) rehearses every method
    of config/paper.yaml at its data sizes: the extrapolation runs, and adding a
    method to the paper config without rehearsing it fails here."""
    from pathlib import Path

    from fitontest.study.jobstats import extrapolate

    repo = Path(__file__).resolve().parents[1]
    got = extrapolate(repo / "benchmarks/measured/rehearsal", repo / "config/rehearsal.yaml",
                      repo / "config/paper.yaml")
    assert got.loc["evaluate", "target_jobs"] == 66
    assert got.loc["calibrate_binary", "target_jobs"] == 30
    assert got.loc["truth", "target_jobs"] == 12
    # the paper grid costs more than the rehearsal in every scaled rule
    scaled = got.dropna(subset=["target_cpu_s"])
    assert (scaled.target_cpu_s > scaled.cpu_s).all()


def test_extrapolation_refuses_a_batched_run(tmp_path):
    from fitontest.study.jobstats import extrapolate

    small = grid_config(["a"], ["car"], ["ece_es15", "pl3_ce"], seeds=1)
    run = measured_run(tmp_path, small)
    with pytest.raises(ValueError, match="batch sizes 1"):
        extrapolate(run, {**small, "batch": {"evaluators": 16, "calibrators": 1}}, small)


def test_controller_record_counts_its_own_and_its_childrens_cpu(results, capsys):
    """record_controller (the Snakefile's onsuccess) writes this process's CPU
    and its waited-for children's; `fitontest jobs` prints them apart."""
    import resource
    import subprocess
    import sys

    from fitontest.study.jobstats import record_controller

    burn = "s = 0\nfor i in range(3_000_000): s += i"
    subprocess.run([sys.executable, "-c", burn], check=True)
    exec(burn)
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    record_controller(results / "benchmarks" / "controller.tsv")
    row = pd.read_csv(results / "benchmarks" / "controller.tsv", sep="\t").iloc[0]
    assert row.cpu_time >= own.ru_utime + own.ru_stime - 0.01 > 0
    assert row.jobs_cpu_time >= kids.ru_utime + kids.ru_stime - 0.01 > 0
    assert row.s > 0 and row.max_rss > 0
    assert main([str(results)]) == 0
    out = capsys.readouterr().out
    assert "5 jobs" in out                    # the controller is not a job
    assert f"controller {row.cpu_time:.1f} CPU-s" in out
    assert f"processes {row.jobs_cpu_time:.1f} CPU-s" in out
