"""Which of the paper's conclusions does this run reproduce?

Each conclusion of the paper (Sections 7-9: Tables 2, 3 and 4) is a *claim*
declared as data in ``claims.yaml`` (next to this module): an id, the paper's
wording, its source, and a small test — the tidy frame (``scores``,
``calibrators`` or ``synthetic``, columns in :mod:`fitontest.schema`), a
measure (a value column, or ``spearman`` as in Table 4), an optional row
filter and disaggregation, and one of a few check kinds (:data:`CHECKS`).
:func:`evaluate_claims` runs every claim on the main truth's rows and gives
it one of four verdicts — **supported** (the claimed order is significant
under the policy), **contradicted** (the opposite order is significant),
**equivalent** (the compared means within the claim's margin, by TOST:
docs/methods/11-verdicts.md §11.5.1) or **not distinguishable**, with what would decide
it (docs/methods/11-verdicts.md §11.5.2) — or **not testable** (a method absent, a single
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
from fitontest.study.schema import with_network
from . import policy
from .checks import (ALPHA, CHECKS, CONTRADICTED, EQUIVALENT, SPEARMAN, SUPPORTED, UNDECIDED,
                     Evidence, NotTestable, Orders, Outcome, check_kind)
from .claims import FRAMES, Claim, _apply_filter, filter_words, load_claims
from .frames import resolve_ranked_calibrators, select_truth, spearman_by_group
from .projection import Takes, knob

HOLDS, FAILS, NOT_TESTABLE = "holds", "does not hold", "not testable"
#: what would decide a claim left not distinguishable (docs/methods/11-verdicts.md §11.5.2):
#: the outcome the observed means lead to, the factor on the clusters, the
#: clusters now and then, the config knob, its value now and then, the added CPU
TAKES_COLUMNS = ["takes_outcome", "takes_factor", "clusters_now", "clusters_needed",
                 "takes_knob", "knob_now", "knob_new", "takes_cpu_s"]
#: ``status``: the verdict (SUPPORTED, CONTRADICTED, UNDECIDED or NOT_TESTABLE);
#: ``point``: whether the claimed order holds for the means (HOLDS / FAILS; "" if not testable)
REPORT_COLUMNS = ["id", "source", "paper", "precise", "status", "point", "evidence",
                  "significance", "margin", "takes", "note", "check", "frame", "measure",
                  "truth", "population", "takes_cpu", *TAKES_COLUMNS]
#: the columns that hold this run's timings: not in findings.csv (the same bytes
#: on every run of a config), in findings_cost.md
TIMINGS = ["takes_cpu", "takes_cpu_s"]


# ---------------------------------------------------------------------------
# evaluation and the report


def _main_truth(frame: pd.DataFrame, wanted: str) -> str | None:
    return policy.pick_truth(frame["truth"] if "truth" in frame.columns else (), wanted)


def evidence_for(claim: Claim, frames: Mapping[str, pd.DataFrame | None], *,
                 truth: str | None = None, ranked_calibrators: Sequence[str] | None = None,
                 orders: Orders | None = None) -> tuple[Evidence, str | None]:
    """The claim's rows under the main truth (or NotTestable); also returns that truth."""
    f = with_network(frames.get(claim.frame))
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
                    margin=claim.margin,
                    **({} if orders is None else {"orders": orders})), used


def evaluate_claims(claims: Sequence[Claim], scores: pd.DataFrame | None = None,
                    calibrators: pd.DataFrame | None = None,
                    synthetic: pd.DataFrame | None = None, *, truth: str | None = None,
                    ranked_calibrators: Sequence[str] | None = None,
                    orders: Orders | None = None,
                    costs: Mapping[str, float] | None = None,
                    scope: str = "architectures") -> pd.DataFrame:
    """One row per claim (columns :data:`REPORT_COLUMNS`), in the claims' order.

    ``truth``: the main truth estimator of the real-data frames (default
    :data:`.policy.MAIN_TRUTH`, else the first present); ``ranked_calibrators``: the
    calibrators Spearman ranks across (as the tables); ``orders``: the
    "significantly better" matrix of a clusters x methods frame (default: the
    tables' :func:`.stats.pairwise_better`; :mod:`.checks` docstring); ``costs``:
    CPU seconds per rule of this run (:func:`fitontest.study.jobstats.summarise`),
    to price what would decide the claims left not distinguishable; ``scope``:
    what the verdicts generalise to (:func:`.policy.with_scope`).
    """
    frames = {"scores": policy.with_scope(scores, scope),
              "calibrators": policy.with_scope(calibrators, scope), "synthetic": synthetic}
    out = []
    for c in claims:
        used, takes, population = None, {}, ""
        try:
            ev, used = evidence_for(c, frames, truth=truth if c.frame != "synthetic" else None,
                                    ranked_calibrators=ranked_calibrators, orders=orders)
            population = ev.inference.population
            o: Outcome = CHECKS[c.check].func(ev, c.params)
            status, point, text, sig = (o.verdict, HOLDS if o.point else FAILS, o.evidence,
                                        o.significance)
            if o.takes is not None:
                takes = what_it_takes(ev, o.takes, c.frame, costs)
        except NotTestable as e:
            status, point, text, sig = NOT_TESTABLE, "", str(e), "n/a"
        out.append({"id": c.id, "source": c.source, "paper": c.paper, "precise": c.precise(),
                    "status": status, "point": point, "evidence": text, "significance": sig,
                    "margin": c.margin.words() if c.margin else "",
                    "takes": takes_words(takes), "takes_cpu": takes_words(takes, cpu=True),
                    "note": c.note,
                    "check": c.check, "frame": c.frame, "measure": c.measure,
                    "truth": used or "", "population": population,
                    **{k: takes.get(k, np.nan) for k in TAKES_COLUMNS}})
    return pd.DataFrame(out, columns=REPORT_COLUMNS)


def what_it_takes(ev: Evidence, takes: Takes, frame: str,
                  costs: Mapping[str, float] | None = None) -> dict:
    """A claim's :class:`.projection.Takes` as clusters, the config knob and
    CPU (:data:`TAKES_COLUMNS`; docs/methods/11-verdicts.md §11.5.2)."""
    now = len(ev.cells([]).units.get("all", ()))
    out = {"takes_outcome": takes.outcome, "takes_factor": takes.factor, "clusters_now": now,
           "clusters_needed": float(np.ceil(now * takes.factor - 1e-9))
           if np.isfinite(takes.factor) else np.inf}
    k = knob(frame, ev.inference.clusters, ev.rows, takes.factor, costs)
    return {**out, "takes_knob": k["knob"], "knob_now": k["now"], "knob_new": k["new"],
            "takes_cpu_s": k["cpu_s"], "_clusters": policy.words(ev.inference.clusters)}


def takes_words(t: Mapping, cpu: bool = False) -> str:
    """One line: the outcome the means lead to and the clusters and knob it
    takes; with ``cpu`` also the CPU at this run's measured cost — a timing,
    kept out of ``findings.md`` / ``.csv`` so that they are the same bytes on
    every run (``findings_cost.md`` holds it)."""
    if not t:
        return ""
    if not t["takes_outcome"]:
        return "never at 80 % power: the observed means do not differ"
    words = (f"{t['takes_outcome']} at {policy.POWER:.0%} power with "
             f"{t['clusters_needed']:.0f} independent {t['_clusters']} clusters "
             f"(now {t['clusters_now']})")
    if t["takes_knob"]:
        words += f": {t['takes_knob']} {t['knob_now']:.0f} → {t['knob_new']:.0f}"
        if cpu and np.isfinite(t["takes_cpu_s"]):
            words += f", +{t['takes_cpu_s']:,.0f} CPU-s at this run's cost"
    return words


def best_claim(frame: pd.DataFrame, method: str, measure: str, synthetic: bool = False,
               truth: str | None = None, costs: Mapping[str, float] | None = None) -> pd.Series:
    """The row of the claim "``method`` has the lowest mean ``measure``" on a
    scores (or synthetic) frame: ``fitontest bench``'s verdict."""
    c = Claim.from_dict({"id": "bench", "paper": "", "source": "fitontest bench",
                         "measure": measure, "frame": "synthetic" if synthetic else "scores",
                         "check": "best", "params": {"method": method}})
    key = "synthetic" if synthetic else "scores"
    return evaluate_claims([c], truth=truth, costs=costs, **{key: frame}).iloc[0]


def _cell(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def headline(findings: pd.DataFrame) -> str:
    """The outcome counts: supported, contradicted, equivalent, not
    distinguishable, not testable."""
    n = findings["status"].value_counts()
    return (f"{len(findings)} claims: **{n.get(SUPPORTED, 0)} supported**, "
            f"**{n.get(CONTRADICTED, 0)} contradicted**, **{n.get(EQUIVALENT, 0)} equivalent**, "
            f"{n.get(UNDECIDED, 0)} not distinguishable, {n.get(NOT_TESTABLE, 0)} not testable "
            f"with this config")


def decisive_run(findings: pd.DataFrame, cpu: bool = False) -> list[str]:
    """Per config knob, a ladder: each value that decides more of the claims
    left not distinguishable (with a finite projection), the claims decided
    up to it and (``cpu``) its added CPU at this run's cost."""
    t = findings[(findings["status"] == UNDECIDED)
                 & findings["takes_knob"].astype(object).fillna("").ne("")]
    out = []
    for name, g in t.groupby("takes_knob", sort=True):
        g = g.assign(knob_new=g["knob_new"].astype(float)).sort_values("knob_new", kind="stable")
        now = float(g["knob_now"].iloc[0])
        for value, step in g.groupby("knob_new", sort=True):
            decided = g[g["knob_new"] <= value]
            added = float(step["takes_cpu_s"].iloc[0])
            out.append(f"`{name}` {now:.0f} → {value:.0f}: decides {len(decided)} of {len(g)} "
                       f"(+{', '.join(f'`{i}`' for i in step['id'])})"
                       + (f", +{added:,.0f} CPU-s at this run's cost"
                          if cpu and np.isfinite(added) else ""))
    return out


FOUR_OUTCOMES = (
    "*Supported*: the claimed order is significant — paired t-tests of every pair of "
    "methods over the independent clusters of the run's design (those of the tables, "
    "named in each row), Holm-corrected, α = 0.05, read as simultaneous rank bounds; "
    "*contradicted*: the opposite order is significant; *equivalent*: neither, and the "
    "compared means are shown within the claim's margin (declared before the run, "
    "printed in the row) by two one-sided tests over the same clusters, in one Holm "
    "family with the pairwise tests (e.g. \"the best\" whose rival is equivalent to it); "
    "*not distinguishable*: none of these (the run cannot tell, which is not a failure of "
    "the claim) — its row says what would decide it: the outcome the observed means lead "
    "to, the independent clusters at which that has 80 % power (from this run's own "
    "between-cluster variance), the config knob that adds them and its CPU at this run's "
    "cost per job (docs/methods/11-verdicts.md §11.5.1-§11.5.2).")


def findings_markdown(findings: pd.DataFrame, exp: str = "", pins: str = "") -> str:
    """``findings.md``; ``pins``: the line that says which CPU code made the
    run's numbers (:func:`fitontest.core.pins.statement`)."""
    truths = ", ".join(t for t in pd.unique(findings["truth"]) if t)
    populations = [f"- {src}: {pop}" for src, pop in findings[findings["population"].ne("")]
                   .drop_duplicates(["frame", "population"])[["frame", "population"]]
                   .itertuples(index=False)]
    lines = [
        f"# Findings{f' of `{exp}`' if exp else ''}: which of the paper's conclusions this run "
        f"reproduces", "",
        f"{headline(findings)}. Truth estimator: {truths or 'none'}.", "",
        *(["What the verdicts generalise to (their independent clusters: "
           "docs/methods/11-verdicts.md §11.4):", "", *populations, ""] if populations else []),
        *([pins, ""] if pins else []),
        "Each row is one conclusion of Kängsepp, Valk & Kull (2025): the paper's words, the "
        "precise test run on this run's tidy frames, the **verdict**, and the evidence. "
        + FOUR_OUTCOMES + " *Point order* says "
        "whether the means alone order as claimed (the tables' cell means, errors ×1000, "
        "rank 1 = best); it is never a verdict by itself. Claims are declared in "
        "`src/fitontest/report/claims.yaml`.",
        "",
        "| id | source | the paper says | tested as | margin | verdict | point order | evidence "
        "| significant orders | what it would take |",
        "|:---|:---|:---|:---|:---|:---|:---|:---|:---|:---|"]
    for r in findings.itertuples():
        precise = r.precise + (f" *{r.note}*" if r.note else "")
        lines.append("| " + " | ".join(_cell(x) for x in (
            f"`{r.id}`", r.source, r.paper, precise, r.margin or "–", f"**{r.status}**",
            r.point or "–", r.evidence, r.significance, r.takes or "–")) + " |")
    run = decisive_run(findings)
    if run:
        lines += ["", "## A run that would decide them", "",
                  "Each claim left not distinguishable at 80 % power, from this run's "
                  "variance components (docs/methods/11-verdicts.md §11.5.2); the knob's values in "
                  "ascending order, with the claims each adds (their CPU at this run's cost: "
                  "`findings_cost.md`):", "", *[f"- {x}" for x in run]]
    return "\n".join(lines) + "\n"


def cost_markdown(findings: pd.DataFrame, exp: str = "") -> str:
    """``findings_cost.md``: what deciding each open claim would cost at this
    run's measured CPU per job — a timing, so apart from the findings."""
    rows = findings[findings["takes_cpu"].astype(object).fillna("").ne("")]
    lines = [f"# What deciding the findings{f' of `{exp}`' if exp else ''} would cost", "",
             "At this run's measured CPU per job (its benchmark files; a timing, which "
             "differs between runs, so it is kept apart from `findings.md`).", ""]
    lines += [f"- `{r.id}`: {r.takes_cpu}" for r in rows.itertuples()]
    run = decisive_run(findings, cpu=True)
    if run:
        lines += ["", "## A run that would decide them", "", *[f"- {x}" for x in run]]
    return "\n".join(lines) + "\n"


def write_findings(findings: pd.DataFrame, md_path, csv_path, exp: str = "",
                   pins: str = "", cost_path=None) -> None:
    """Write ``findings.md``, ``findings.csv`` (without this run's timings:
    :data:`TIMINGS`) and, given ``cost_path``, ``findings_cost.md``, atomically."""
    write_text(md_path, findings_markdown(findings, exp, pins))
    if cost_path is not None:
        write_text(cost_path, cost_markdown(findings, exp))
    write_text(csv_path, findings.drop(columns=TIMINGS, errors="ignore").to_csv(index=False))


__all__ = ["Claim", "CHECKS", "Evidence", "FRAMES", "Orders", "Outcome", "NotTestable",
           "check_kind", "headline", "SUPPORTED", "CONTRADICTED", "UNDECIDED", "EQUIVALENT",
           "decisive_run", "what_it_takes", "takes_words", "TAKES_COLUMNS", "TIMINGS",
           "cost_markdown", "best_claim",
           "load_claims", "filter_words", "ALPHA",
           "evaluate_claims", "evidence_for", "findings_markdown", "write_findings",
           "HOLDS", "FAILS", "NOT_TESTABLE"]
