"""Which of the paper's conclusions does this run reproduce?

Each conclusion of the paper (Sections 7-9: Tables 2, 3 and 4) is a *claim*
declared as data in ``claims.yaml`` (next to this module): an id, the paper's
wording, its source, and a small test — the tidy frame (``scores``,
``calibrators`` or ``synthetic``, columns in :mod:`fitontest.schema`), a
measure (a value column, or ``spearman`` as in Table 4), an optional row
filter and disaggregation, and one of a few check kinds (:data:`CHECKS`).
:func:`evaluate_claims` runs every claim on the main truth's rows and marks it
**holds**, **does not hold** or **not testable** (a method absent, a single
test size, ...), with the evidence (means, ranks, significance);
:func:`write_findings` writes ``findings.md`` and ``findings.csv``.

Adding a claim: append an entry to ``claims.yaml`` (its header lists the keys
and filter conditions), or pass your own list to :func:`evaluate_claims`
(``load_claims(path)`` reads any YAML file of the same form)::

    - id: my_isotonic_beats_platt
      paper: Isotonic approximates the true map better than Platt.
      source: my study
      frame: scores
      measure: cmee
      check: ahead_of
      params: {ahead: [isotonic], behind: [platt]}

Modules: :mod:`.claims` (the claims and their filters), :mod:`.checks` (the
check kinds and the evidence they see; their semantics), this module (running
the claims and the report); the statistics follow :mod:`.policy`, as the
tables do.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from fitontest.core.io import write_text
from . import policy
from .checks import ALPHA, CHECKS, SPEARMAN, Evidence, Markers, NotTestable, check_kind
from .claims import FRAMES, Claim, _apply_filter, filter_words, load_claims
from .frames import resolve_ranked_calibrators, select_truth, spearman_by_group

HOLDS, FAILS, NOT_TESTABLE = "holds", "does not hold", "not testable"
REPORT_COLUMNS = ["id", "source", "paper", "precise", "status", "evidence", "significance",
                  "note", "check", "frame", "measure", "truth"]


# ---------------------------------------------------------------------------
# evaluation and the report


def _main_truth(frame: pd.DataFrame, wanted: str) -> str | None:
    return policy.pick_truth(frame["truth"] if "truth" in frame.columns else (), wanted)


def evidence_for(claim: Claim, frames: Mapping[str, pd.DataFrame | None], *,
                 truth: str | None = None, ranked_calibrators: Sequence[str] | None = None,
                 markers: Markers | None = None) -> tuple[Evidence, str | None]:
    """The claim's rows under the main truth (or NotTestable); also returns that truth."""
    f = frames.get(claim.frame)
    if f is None or f.empty:
        raise NotTestable(f"no {claim.frame} rows in this run")
    used = _main_truth(f, truth or policy.main_truth(claim.frame))
    f = select_truth(f, used)
    f = _apply_filter(f, claim.filter)
    if f.empty:
        raise NotTestable(f"no rows with {filter_words(claim.filter)}")
    measure = claim.measure
    if measure == SPEARMAN:
        item = "calibrator" if claim.frame == "scores" else "ce_level"
        items = (resolve_ranked_calibrators(f["calibrator"], ranked_calibrators)[0]
                 if item == "calibrator" else None)
        f = spearman_by_group(f, item=item, items=items)
    else:
        f = f.assign(**{measure: pd.to_numeric(f[measure], errors="coerce")})
    f = f[np.isfinite(f[measure].to_numpy(dtype=np.float64))]
    if f.empty:
        raise NotTestable(f"{measure} is undefined on every matching row")
    inference = policy.inference_for(claim.frame, measure)
    missing = [k for k in inference.units if k not in f.columns]
    if missing:
        raise NotTestable(f"the unit keys {missing} are not columns of the rows")
    return Evidence(rows=f, entity=claim.entity, measure=measure,
                    lower_is_better=claim.lower_is_better, inference=inference, by=claim.by,
                    markers=markers), used


def evaluate_claims(claims: Sequence[Claim], scores: pd.DataFrame | None = None,
                    calibrators: pd.DataFrame | None = None,
                    synthetic: pd.DataFrame | None = None, *, truth: str | None = None,
                    ranked_calibrators: Sequence[str] | None = None,
                    markers: Markers | None = None) -> pd.DataFrame:
    """One row per claim (columns :data:`REPORT_COLUMNS`), in the claims' order.

    ``truth``: the main truth estimator of the real-data frames (default
    :data:`.policy.MAIN_TRUTH`, else the first present); ``ranked_calibrators``: the
    calibrators Spearman ranks across (as the tables); ``markers``: the
    significance marker function (module docstring), None for "n/a".
    """
    frames = {"scores": scores, "calibrators": calibrators, "synthetic": synthetic}
    out = []
    for c in claims:
        used = None
        try:
            ev, used = evidence_for(c, frames, truth=truth if c.frame != "synthetic" else None,
                                    ranked_calibrators=ranked_calibrators, markers=markers)
            holds, text, sig = CHECKS[c.check].func(ev, c.params)
            status = HOLDS if holds else FAILS
        except NotTestable as e:
            status, text, sig = NOT_TESTABLE, str(e), "n/a"
        out.append({"id": c.id, "source": c.source, "paper": c.paper, "precise": c.precise(),
                    "status": status, "evidence": text, "significance": sig, "note": c.note,
                    "check": c.check, "frame": c.frame, "measure": c.measure,
                    "truth": used or ""})
    return pd.DataFrame(out, columns=REPORT_COLUMNS)


def _cell(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def findings_markdown(findings: pd.DataFrame, exp: str = "") -> str:
    counts = findings["status"].value_counts()
    truths = ", ".join(t for t in pd.unique(findings["truth"]) if t)
    lines = [
        f"# Findings{f' of `{exp}`' if exp else ''}: which of the paper's conclusions this run "
        f"reproduces", "",
        f"{len(findings)} claims: **{counts.get(HOLDS, 0)} hold**, "
        f"{counts.get(FAILS, 0)} do not hold, {counts.get(NOT_TESTABLE, 0)} not testable "
        f"with this config. Truth estimator: {truths or 'none'}.", "",
        "Each row is one conclusion of Kängsepp, Valk & Kull (2025): the paper's words, the "
        "precise test run on this run's tidy frames (the tables' cell means: over the "
        "independent clusters — the seeds; the networks for calibrators — of the unit means, "
        "rank 1 = best), the verdict and its evidence (errors ×1000 as in the tables). "
        "Significance is the tables' (paired t-tests of all pairs over the clusters named, "
        "Holm); \"not distinguishable\" when there are too few clusters to test, \"n/a\" "
        "when none was computed. Claims are declared in `src/fitontest/report/claims.yaml`.",
        "",
        "| id | source | the paper says | tested as | result | evidence | significance |",
        "|:---|:---|:---|:---|:---|:---|:---|"]
    for r in findings.itertuples():
        precise = r.precise + (f" *{r.note}*" if r.note else "")
        lines.append("| " + " | ".join(_cell(x) for x in (
            f"`{r.id}`", r.source, r.paper, precise, f"**{r.status}**", r.evidence,
            r.significance)) + " |")
    return "\n".join(lines) + "\n"


def write_findings(findings: pd.DataFrame, md_path, csv_path, exp: str = "") -> None:
    """Write ``findings.md`` and ``findings.csv`` atomically."""
    write_text(md_path, findings_markdown(findings, exp))
    write_text(csv_path, findings.to_csv(index=False))


__all__ = ["Claim", "CHECKS", "Evidence", "FRAMES", "Markers", "NotTestable", "check_kind",
           "load_claims", "filter_words", "ALPHA",
           "evaluate_claims", "evidence_for", "findings_markdown", "write_findings",
           "HOLDS", "FAILS", "NOT_TESTABLE"]
