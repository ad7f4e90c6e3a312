"""benchmarks/README.md indexes every script: its question, the measured file
that holds what it measured (or why there is none) and its cost; the scripts
carry no developer's absolute paths; no folder shadows an installed package
(benchmarks/ is put on sys.path to import common.py)."""
from __future__ import annotations

import re
import subprocess
import sys

from conftest import REPO

BENCH = REPO / "benchmarks"
INDEX = BENCH / "README.md"
#: a row of an index table: | `FOLDER/NAME.py` | question | measured | cost |
ROW = re.compile(r"^\| `([\w/]+\.py)` \| ([^|]+) \| ([^|]+) \| ([^|]+) \|$", re.M)
MEASURED = re.compile(r"`((?:[\w-]+/)*[\w-]+\.(?:md|txt))`")


def rows() -> dict[str, tuple[str, str, str]]:
    return {m[0]: (m[1].strip(), m[2].strip(), m[3].strip())
            for m in ROW.findall(INDEX.read_text(encoding="utf-8"))}


def scripts() -> list[str]:
    return sorted(str(p.relative_to(BENCH)) for p in BENCH.glob("*/*.py"))


def test_every_script_has_a_row_and_every_row_a_script():
    indexed = rows()
    assert scripts(), "no scripts found"
    assert sorted(set(scripts()) - set(indexed)) == [], "scripts missing from benchmarks/README.md"
    assert sorted(set(indexed) - set(scripts())) == [], "rows naming no script"
    # no script at the top but the shared helpers and the recorder
    assert sorted(p.name for p in BENCH.glob("*.py")) == ["common.py", "record.py"]


def test_every_row_names_a_measured_file_that_exists_or_says_why_not():
    problems = []
    for script, (_question, measured, cost) in rows().items():
        if measured.startswith("none:"):
            continue                                  # the reason follows
        files = MEASURED.findall(measured)
        if not files:
            problems.append(f"{script}: no measured file and no reason")
        problems += [f"{script}: benchmarks/measured/{f} does not exist" for f in files
                     if not (BENCH / "measured" / f).is_file()]
        if not cost or cost == "—":
            problems.append(f"{script}: no cost")
    assert not problems, "\n".join(problems)


def test_the_index_check_can_fail(tmp_path, monkeypatch):
    fake = tmp_path / "README.md"
    fake.write_text("| `speed/x.py` | q | `no_such_file.md` | 1 s |\n"
                    "| `speed/y.py` | q | none: reads a run | — |\n")
    monkeypatch.setattr(sys.modules[__name__], "INDEX", fake)
    assert set(rows()) == {"speed/x.py", "speed/y.py"}
    try:
        test_every_row_names_a_measured_file_that_exists_or_says_why_not()
    except AssertionError as err:
        assert "no_such_file.md does not exist" in str(err) and "y.py" not in str(err)
    else:
        raise AssertionError("a missing measured file passed")


def test_no_script_defaults_to_a_developers_path():
    bad = [f"{p.relative_to(REPO)}:{i}" for p in BENCH.rglob("*.py")
           for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
           if re.search(r"""["'](/work/|/home/|/Users/)""", line)]
    assert not bad, bad


def test_no_folder_shadows_an_importable_package():
    folders = sorted(p.name for p in BENCH.iterdir() if p.is_dir() and p.name != "measured"
                     and not p.name.startswith((".", "_")))
    code = ("import importlib.util, sys; names = sys.argv[1:]; "
            "print(*[n for n in names if importlib.util.find_spec(n) is not None])")
    out = subprocess.run([sys.executable, "-c", code, *folders], cwd="/", text=True,
                         capture_output=True, check=True).stdout.split()
    assert folders and out == [], f"benchmarks/ folders named like installed packages: {out}"


def _recorder():
    import importlib.util

    spec = importlib.util.spec_from_file_location("record", BENCH / "record.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_recorder_keeps_the_output_and_writes_nothing_on_failure(tmp_path, monkeypatch):
    record = _recorder()
    monkeypatch.setattr(record, "REPO", tmp_path)
    (tmp_path / "benchmarks" / "x").mkdir(parents=True)
    (tmp_path / "benchmarks" / "measured").mkdir()
    (tmp_path / "benchmarks" / "x" / "s.py").write_text(
        "import sys\nprint('fit', sys.argv[1:], '1.5 s')\nsys.exit(int(sys.argv[-1] == 'fail'))\n")
    assert record.main(["x/s.py", "--", "--n", "a b"]) == 0
    text = (tmp_path / "benchmarks" / "measured" / "s.md").read_text()
    assert "`python benchmarks/x/s.py --n 'a b'`" in text          # the command, quoted
    assert "fit ['--n', 'a b'] 1.5 s" in text and "CPU-s" in text and "load average" in text
    out = tmp_path / "f.md"
    assert record.main(["x/s.py", "--out", str(out), "--", "fail"]) == 1
    assert not out.exists() and not list(tmp_path.rglob("*.tmp"))
