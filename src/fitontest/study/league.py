"""The league (docs/methods/10-results-and-tables.md §10.5): a switch of any study
config that adds the cross-fitted evaluators and the peers' to its evaluators, so that every table,
interval and verdict of the run scores them beside ours.

``--config league=true`` on the default, tabular or real-data config:
:func:`apply_league` (called by the workflow before its config checks) appends
:data:`CROSS_FITTED` and :data:`PEERS` to ``evaluation.evaluators`` (and to
``synthetic.evaluators`` where the synthetic study is on), turns on the
peers' own intervals (:data:`OWN_INTERVALS`, in ``per_family_n_boot``; not on
real data, which has no truth to cover) and
lists the added evaluators in ``batch.late``, so that a finished run's batches
keep their members and files.
"""
from __future__ import annotations

from typing import Any, MutableMapping

#: our fit-on-test families cross-fitted (docs/methods/03-binary-families.md §3.11): isotonic, beta,
#: PL and the binning families; PL3 and Platt are registered too, left out for time
CROSS_FITTED = ("cf_isotonic", "cf_beta", "cf_pl_ce", "cf_ece_es15", "cf_ece_ew15",
                "cf_ece_es_cv")
#: the peers' estimators, from their own packages (docs/methods/03-binary-families.md §3.12)
PEERS = ("probmetrics_catboost", "probmetrics_isotonic", "probmetrics_ts", "ucal_debiased",
         "relplot_smece", "netcal_ace", "torchmetrics_ece", "venn_abers", "probcal_skce")
#: replicates of the intervals the peers' packages give (relplot fixes its 100)
OWN_INTERVALS = {"ucal_debiased": 100, "relplot_smece": 100}


def league_evaluators() -> list[str]:
    """Every evaluator the league adds, in table order."""
    return [*CROSS_FITTED, *PEERS]


def _extend(names: list, added: list[str]) -> list:
    return list(names) + [n for n in added if n not in names]


def _with_own_intervals(block: MutableMapping[str, Any] | None) -> dict:
    block = dict(block or {})
    per = dict(block.get("per_family_n_boot") or {})
    block["per_family_n_boot"] = {**OWN_INTERVALS, **per}
    return block


def apply_league(config: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """``config`` with the league's evaluators added where ``league`` is true
    (in place; unchanged otherwise). A missing peer package is a
    :class:`~fitontest.study.config.ConfigError` naming the extra, before any job."""
    if not config.get("league"):
        return config
    from fitontest.core.extras import missing
    from .config import ConfigError

    lacking = missing("peers")
    if lacking:
        raise ConfigError(f"config key 'league': the peers' evaluators need {', '.join(lacking)}"
                          ", not installed: pip install 'fitontest[peers]'")
    added = league_evaluators()
    if config.get("pseudo_real", True) and "evaluation" in config:
        ev = config["evaluation"]
        ev["evaluators"] = _extend(ev.get("evaluators") or [], added)
        if config.get("data_source") != "logits":      # real data: no truth to cover
            ev["interval"] = _with_own_intervals(ev.get("interval"))
    syn = config.get("synthetic") or {}
    if syn.get("enabled"):
        syn["evaluators"] = _extend(syn.get("evaluators") or [], added)
        syn["interval"] = _with_own_intervals(syn.get("interval"))
    batch = config.setdefault("batch", {})
    batch["late"] = _extend(batch.get("late") or [], added)
    return config
