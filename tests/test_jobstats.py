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
    out = subprocess.run([sys.executable, "-m", "fitontest_cli", "jobs", str(results)],
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


# ------------------------------------------------------------- the GPU and the node
def test_gpu_projection_reads_the_measured_rates_file(tmp_path):
    """The training hours of config/paper.yaml come from the rates file: a
    longer compile setup moves them by exactly that much, a faster graph turns
    the path (and the hours) to the graph's."""
    import json
    from pathlib import Path

    from fitontest.study.jobstats import gpu_projection
    from fitontest.vision.fast_auto import load_rates

    repo = Path(__file__).resolve().parents[1]
    paper = repo / "config/paper.yaml"
    data = json.loads(json.dumps(load_rates().data))
    rates = tmp_path / "rates.json"
    rates.write_text(json.dumps(data))
    base = gpu_projection(paper, rates)
    r110 = data["networks"]["resnet110"]["paths"]
    assert base.loc["resnet110", "path"] == "compile+graph"
    assert base.loc["resnet110", "train_s"] == pytest.approx(
        r110["compile+graph"]["setup_s"] + 200 * (45000 // 128) * r110["compile+graph"]["s_per_step"])
    assert base.loc["resnet110", "export_s"] == pytest.approx(1_005_000 / data["export_img_s"])

    r110["compile+graph"]["setup_s"] += 40.0        # still paid back within the recipe
    rates.write_text(json.dumps(data))
    moved = gpu_projection(paper, rates)
    assert moved.loc["resnet110", "path"] == "compile+graph"
    assert moved.loc["resnet110", "train_s"] == pytest.approx(base.loc["resnet110", "train_s"] + 40)
    assert (moved.drop("resnet110").train_s == base.drop("resnet110").train_s).all()

    r110["graph"]["s_per_step"] = r110["compile+graph"]["s_per_step"] / 2
    rates.write_text(json.dumps(data))
    turned = gpu_projection(paper, rates)
    assert turned.loc["resnet110", "path"] == "graph"
    assert turned.loc["resnet110", "train_s"] < base.loc["resnet110", "train_s"]
    assert turned.loc["resnet110", "eager_s"] == base.loc["resnet110", "eager_s"]


def test_node_wall_schedules_gpu_jobs_then_each_networks_cpu_work():
    from fitontest.study.jobstats import node_wall

    gpu = pd.DataFrame({"train_s": [100.0, 200.0], "export_s": [10.0, 10.0]})
    # 2 networks x 1500 CPU-s: the first's drains on 3 cores during the second's
    # 210 s (630 CPU-s; 870 left), then 870 + 1500 over 4 cores
    got = node_wall(gpu, 3000.0, longest_cpu_s=50.0, other_s=5.0, cores=4)
    assert got["gpu_s"] == 320.0 and got["tail_s"] == pytest.approx((870 + 1500) / 4)
    assert got["wall_s"] == pytest.approx(320 + 592.5 + 5)
    # a long job ends the run after the spread work would
    assert node_wall(gpu, 3000.0, longest_cpu_s=900.0, cores=64)["tail_s"] == 900.0


def test_jobs_scale_prints_gpu_hours_from_the_rates_given(tmp_path, capsys):
    """`fitontest jobs --scale ... --rates FILE`: measured and projected named,
    the hours from the file given."""
    import json
    from pathlib import Path

    from fitontest.vision.fast_auto import load_rates

    repo = Path(__file__).resolve().parents[1]
    args = [str(repo / "benchmarks/measured/rehearsal"), "--scale",
            str(repo / "config/rehearsal.yaml"), str(repo / "config/paper.yaml")]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "measured: s_per_epoch" in out and "projected" in out and "one node, 1 GPU + 16 cores" in out
    data = json.loads(json.dumps(load_rates().data))
    for net in data["networks"].values():
        for path in net["paths"].values():
            path["s_per_step"] *= 2
    (tmp_path / "slow.json").write_text(json.dumps(data))
    assert main(args + ["--rates", str(tmp_path / "slow.json")]) == 0
    slow = capsys.readouterr().out

    def hours(text):
        line = next(x for x in text.splitlines() if x.startswith("3 trainings"))
        return float(line.split()[2])

    assert hours(slow) > 1.8 * hours(out)
