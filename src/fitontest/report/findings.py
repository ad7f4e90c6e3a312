"""Which of the paper's conclusions does this run reproduce?

Each conclusion of the paper (Sections 7-9: Tables 2, 3 and 4) is a *claim*
declared as data in ``claims.yaml`` (next to this module): an id, the paper's
wording, its source, and a small test — the tidy frame (``scores``,
``calibrators`` or ``synthetic``, columns in :mod:`fitontest.schema`), a
measure (a value column, or ``spearman`` as in Table 4), an optional row
filter and disaggregation, and one of a few check kinds (:data:`CHECKS`).
:func:`evaluate_claims` runs every claim on the main truth's rows and gives
it one of three verdicts — **supported** (the claimed order is significant
under the policy), **contradicted** (the opposite order is significant) or
**not distinguishable** — or **not testable** (a method absent, a single
test size, ...), with the point order of the means beside it (*holds* /
*does not hold*: never a verdict by itself) and the evidence;
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
from .checks import (ALPHA, CHECKS, CONTRADICTED, SPEARMAN, SUPPORTED, UNDECIDED, Evidence,
                     NotTestable, Orders, Outcome, check_kind)
from .claims import FRAMES, Claim, _apply_filter, filter_words, load_claims
from .frames import resolve_ranked_calibrators, select_truth, spearman_by_group

HOLDS, FAILS, NOT_TESTABLE = "holds", "does not hold", "not testable"
#: ``status``: the verdict (SUPPORTED, CONTRADICTED, UNDECIDED or NOT_TESTABLE);
#: ``point``: whether the claimed order holds for the means (HOLDS / FAILS; "" if not testable)
REPORT_COLUMNS = ["id", "source", "paper", "precise", "status", "point", "evidence",
                  "significance", "note", "check", "frame", "measure", "truth"]


# ---------------------------------------------------------------------------
# evaluation and the report


def _main_truth(frame: pd.DataFrame, wanted: str) -> str | None:
    return policy.pick_truth(frame["truth"] if "truth" in frame.columns else (), wanted)


def evidence_for(claim: Claim, frames: Mapping[str, pd.DataFrame | None], *,
                 truth: str | None = None, ranked_calibrators: Sequence[str] | None = None,
                 orders: Orders | None = None) -> tuple[Evidence, str | None]:
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
    inference = policy.inference_for(claim.frame, measure, f)
    missing = [k for k in inference.units if k not in f.columns]
    if missing:
        raise NotTestable(f"the unit keys {missing} are not columns of the rows")
    return Evidence(rows=f, entity=claim.entity, measure=measure,
                    lower_is_better=claim.lower_is_better, inference=inference, by=claim.by,
                    **({} if orders is None else {"orders": orders})), used


def evaluate_claims(claims: Sequence[Claim], scores: pd.DataFrame | None = None,
                    calibrators: pd.DataFrame | None = None,
                    synthetic: pd.DataFrame | None = None, *, truth: str | None = None,
                    ranked_calibrators: Sequence[str] | None = None,
                    orders: Orders | None = None) -> pd.DataFrame:
    """One row per claim (columns :data:`REPORT_COLUMNS`), in the claims' order.

    ``truth``: the main truth estimator of the real-data frames (default
    :data:`.policy.MAIN_TRUTH`, else the first present); ``ranked_calibrators``: the
    calibrators Spearman ranks across (as the tables); ``orders``: the
    "significantly better" matrix of a clusters x methods frame (default: the
    tables' :func:`.stats.pairwise_better`; :mod:`.checks` docstring).
    """
    frames = {"scores": scores, "calibrators": calibrators, "synthetic": synthetic}
    out = []
    for c in claims:
        used = None
        try:
            ev, used = evidence_for(c, frames, truth=truth if c.frame != "synthetic" else None,
                                    ranked_calibrators=ranked_calibrators, orders=orders)
            o: Outcome = CHECKS[c.check].func(ev, c.params)
            status, point, text, sig = (o.verdict, HOLDS if o.point else FAILS, o.evidence,
                                        o.significance)
        except NotTestable as e:
            status, point, text, sig = NOT_TESTABLE, "", str(e), "n/a"
        out.append({"id": c.id, "source": c.source, "paper": c.paper, "precise": c.precise(),
                    "status": status, "point": point, "evidence": text, "significance": sig,
                    "note": c.note,
                    "check": c.check, "frame": c.frame, "measure": c.measure,
                    "truth": used or ""})
    return pd.DataFrame(out, columns=REPORT_COLUMNS)


def _cell(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def headline(findings: pd.DataFrame) -> str:
    """The verdict counts: supported, contradicted, not distinguishable, not testable."""
    n = findings["status"].value_counts()
    return (f"{len(findings)} claims: **{n.get(SUPPORTED, 0)} supported**, "
            f"**{n.get(CONTRADICTED, 0)} contradicted**, {n.get(UNDECIDED, 0)} not "
            f"distinguishable, {n.get(NOT_TESTABLE, 0)} not testable with this config")


def findings_markdown(findings: pd.DataFrame, exp: str = "") -> str:
    truths = ", ".join(t for t in pd.unique(findings["truth"]) if t)
    lines = [
        f"# Findings{f' of `{exp}`' if exp else ''}: which of the paper's conclusions this run "
        f"reproduces", "",
        f"{headline(findings)}. Truth estimator: {truths or 'none'}.", "",
        "Each row is one conclusion of Kängsepp, Valk & Kull (2025): the paper's words, the "
        "precise test run on this run's tidy frames, the **verdict**, and the evidence. "
        "*Supported*: the claimed order is significant — paired t-tests of every pair of "
        "methods over the independent clusters of the run's design (those of the tables, "
        "named in each row), Holm-corrected, α = 0.05, read as simultaneous rank bounds; "
        "*contradicted*: the opposite order is significant; *not distinguishable*: neither "
        "(the run cannot tell, which is not a failure of the claim). *Point order* says "
        "whether the means alone order as claimed (the tables' cell means, errors ×1000, "
        "rank 1 = best); it is never a verdict by itself. Claims are declared in "
        "`src/fitontest/report/claims.yaml`.",
        "",
        "| id | source | the paper says | tested as | verdict | point order | evidence "
        "| significant orders |",
        "|:---|:---|:---|:---|:---|:---|:---|:---|"]
    for r in findings.itertuples():
        precise = r.precise + (f" *{r.note}*" if r.note else "")
        lines.append("| " + " | ".join(_cell(x) for x in (
            f"`{r.id}`", r.source, r.paper, precise, f"**{r.status}**", r.point or "–",
            r.evidence, r.significance)) + " |")
    return "\n".join(lines) + "\n"


def write_findings(findings: pd.DataFrame, md_path, csv_path, exp: str = "") -> None:
    """Write ``findings.md`` and ``findings.csv`` atomically."""
    write_text(md_path, findings_markdown(findings, exp))
    write_text(csv_path, findings.to_csv(index=False))


__all__ = ["Claim", "CHECKS", "Evidence", "FRAMES", "Orders", "Outcome", "NotTestable",
           "check_kind", "headline", "SUPPORTED", "CONTRADICTED", "UNDECIDED",
           "load_claims", "filter_words", "ALPHA",
           "evaluate_claims", "evidence_for", "findings_markdown", "write_findings",
           "HOLDS", "FAILS", "NOT_TESTABLE"]
