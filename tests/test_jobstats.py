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
