"""From the worlds' losses to a ranking of the candidates (docs/methods/14-chooser.md §14).

The statistics of the chooser, apart from what it ranks and recommends
(:mod:`fitontest.inference.choose`): given the (W, 4, E) losses of E
candidates in W worlds (:func:`fitontest.inference.candidates.world_losses`:
|CE error|, CMEE, 1 - Spearman, signed CE error), each candidate's mean and
Monte Carlo SE of every loss over the worlds, its bias (mean signed CE error)
and the CE error once corrected by that bias where it is clear
(:func:`adjusted_signed`), and which candidates are not significantly worse
than any other (paired t over the worlds, Holm over all pairs:
:func:`fitontest.inference.stats.significance_markers`, the tables' rule).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

#: the rows of a ranking's ``mean`` and ``se``: the four losses of world_losses, then
#: the |CE error| once corrected by the bias (:func:`adjusted_signed`)
LOSSES = ("ce_error", "cmee", "ranking", "signed_ce_error", "adjusted_error")


def adjusted_signed(signed: np.ndarray, debias: bool, debias_sd: float
                    ) -> tuple[np.ndarray, np.ndarray]:
    """((W, E) signed CE errors, each corrected by the bias of the *other* worlds
    (leave-one-out: the correction's own noise stays in the loss) where the
    candidate's bias exceeds ``debias_sd`` world SDs, (E,) corrected flags)."""
    W = signed.shape[0]
    bias, sd = np.nanmean(signed, axis=0), np.nanstd(signed, axis=0, ddof=1)
    on = debias & (np.abs(bias) > debias_sd * sd)
    loo = (np.nansum(signed, axis=0)[None, :] - signed) / max(W - 1, 1)
    return signed - np.where(on[None, :], loo, 0.0), on


@dataclass(frozen=True)
class Ranking:
    """What :func:`rank` found: ``order`` the candidates' indices, best (lowest
    mean loss) first; ``mean`` and ``se`` (5, E) per loss (rows :data:`LOSSES`);
    ``tied`` (E,) not significantly worse than any other; ``corrected`` (E,)
    the estimate corrected by the bias; ``adjusted`` (W, E) the signed CE
    errors so corrected."""

    order: list[int]
    mean: np.ndarray
    se: np.ndarray
    tied: np.ndarray
    corrected: np.ndarray
    adjusted: np.ndarray


def rank(losses: np.ndarray, names: list[str], row: int, alpha: float, debias: bool,
         debias_sd: float, criterion: str | None = None) -> Ranking:
    """The candidates ``names`` ranked by the mean over the worlds of loss ``row``
    of :data:`LOSSES` (the bias-corrected CE error is row 4), with the
    "not significantly worse" flags at family-wise level ``alpha``. A candidate
    without that loss in some world (no map; could not be fitted) is ranked
    last and never tied; none with it in every world is an error naming
    ``criterion`` (default: the loss)."""
    import pandas as pd

    from .stats import significance_markers

    adjusted, on = adjusted_signed(losses[:, 3, :], debias, debias_sd)
    full = np.concatenate([losses, np.abs(adjusted)[:, None, :]], axis=1)    # (W, 5, E)
    with warnings.catch_warnings():         # all-NaN columns (no map): NaN, silently
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(full, axis=0)
        se = np.nanstd(full, axis=0, ddof=1) / np.sqrt(np.maximum(
            np.isfinite(full).sum(axis=0), 1))
    crit = full[:, row, :]
    usable = np.isfinite(crit).all(axis=0)
    if not usable.any():
        raise ValueError(f"no candidate has a {criterion or LOSSES[row]!r} loss in every world "
                         "(criterion 'map' needs evaluators with a map)")
    key = np.where(usable, mean[row], np.inf)
    tied = significance_markers(pd.DataFrame(np.where(usable, crit, np.nan), columns=names),
                                alpha=alpha).to_numpy() & usable
    order = sorted(range(len(names)), key=lambda j: (key[j], names[j]))
    return Ranking(order, mean, se, tied, on, adjusted)


__all__ = ["LOSSES", "Ranking", "adjusted_signed", "rank"]
