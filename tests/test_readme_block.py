"""The user guide's "What the default shows" block (docs/guide/findings.md,
which the README links to) is generated from a run's files."""
import numpy as np
import pandas as pd
import pytest

from fitontest.report import findings as F
from fitontest.report import readme
from fitontest.inference.stats import t_bounds
from fitontest.study.schema import SCORE_COLUMNS


def synthetic_run(tmp_path):
    """A results folder with findings.{md,csv} and Table 3's interval file."""
    rng = np.random.default_rng(0)
    rows = [{"arch": "net", "task": "car", "calibrator": "none", "size": 1000, "seed": s,
             "truth": "isotonic", "evaluator": e, "cmee": v + rng.normal(0, 0.002)}
            for s in range(30) for e, v in (("pl_ce", 0.010), ("pl3_ce", 0.0101),
                                              ("beta", 0.02), ("ece_es15", 0.03))]
    scores = pd.DataFrame(rows).reindex(columns=SCORE_COLUMNS).assign(subsets="independent")
    out = F.evaluate_claims(F.load_claims(), scores=scores)
    F.write_findings(out, tmp_path / "findings.md", tmp_path / "findings.csv", exp="x")
    means = scores.groupby("evaluator")["cmee"].agg(["mean", "std", "size"]) * [1000, 1000, 1]
    lo, hi = t_bounds(means["mean"], means["std"], means["size"])
    ci = pd.DataFrame({"group": readme.ALL_ROW, "column": means.index, "mean": means["mean"],
                       "ci_lo": lo, "ci_hi": hi, "n_units": 30, "best": False,
                       "not_worse": means.index.isin(["pl_ce", "pl3_ce"])})
    (tmp_path / "tables").mkdir()
    ci.to_csv(tmp_path / readme.TABLE3, index=False)
    return out, ci


def test_the_generated_block_is_what_the_renderer_gives(tmp_path):
    out, ci = synthetic_run(tmp_path)
    doc = tmp_path / "README.md"
    doc.write_text(f"# t\n\nbefore\n{readme.BEGIN}\nold numbers\n{readme.END}\nafter\n")
    assert readme.main([str(tmp_path), "--readme", str(doc), "--run", "a run"]) == 0
    text = doc.read_text()
    block = text.split(readme.BEGIN + "\n")[1].split(readme.END)[0]
    assert block == readme.render(out, ci, "a run")
    assert text.startswith("# t\n\nbefore\n") and text.endswith(f"{readme.END}\nafter\n")
    assert "old numbers" not in text
    # the block states the run's own counts and every claim
    assert F.headline(out) in block
    for c in out["id"]:
        assert f"`{c}`" in block
    assert "marks 2 of its 4 evaluators significantly worse" in block


def test_the_guide_has_the_one_block_and_bad_markers_are_an_error():
    """The block lives in one place, the page the module rewrites by default: a
    second copy (the README's, before issue 58) would go stale unseen."""
    from pathlib import Path
    repo = Path(__file__).parents[1]
    text = (repo / readme.PAGE).read_text()
    assert text.count(readme.BEGIN) == 1 and text.count(readme.END) == 1
    others = [p for p in [repo / "README.md", *(repo / "docs").rglob("*.md")]
              if p != repo / readme.PAGE and readme.BEGIN in p.read_text()]
    assert not others, others
    # the README sends a newcomer to it
    assert "docs/guide/findings.md" in (repo / "README.md").read_text()
    with pytest.raises(ValueError, match="expected one"):
        readme.replace_block("no markers", "x")


def test_the_snapshot_holds_every_number_the_block_quotes(tmp_path):
    """With --snapshot the block cites a file holding each of its numbers, as
    tests/test_docs_ledger.py requires of the docs."""
    from test_docs_ledger import NUMBER, prose

    synthetic_run(tmp_path)
    doc, snap = tmp_path / "README.md", tmp_path / "default_run.md"
    doc.write_text(f"{readme.BEGIN}\n{readme.END}\n")
    assert readme.main([str(tmp_path), "--readme", str(doc), "--snapshot", str(snap)]) == 0
    block, held = doc.read_text(), snap.read_text()
    assert f"(the run's numbers: {snap})" in block
    quoted = NUMBER.findall(prose(block))
    assert quoted and all(n in held for n in quoted), [n for n in quoted if n not in held]
    # a number edited away from the run is not in the snapshot
    assert "987.6" not in held


def test_beside_puts_each_claim_of_two_runs_in_one_row():
    a = pd.DataFrame({"id": ["c1", "c2"], "paper": ["one", "two"],
                      "status": ["supported", "not distinguishable"], "point": ["holds", "does not hold"]})
    b = pd.DataFrame({"id": ["c2"], "paper": ["two"], "status": ["not testable"], "point": [""]})
    rows = readme.beside(a, b, ("`x`", "`y`")).splitlines()
    assert rows[0] == "| claim | the paper says | `x` | `y` |"
    assert rows[2] == "| `c1` | one | **supported** (holds) | – |"
    assert rows[3] == "| `c2` | two | not distinguishable (does not hold) | not testable |"
