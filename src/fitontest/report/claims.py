"""The paper's conclusions as data: :class:`Claim`, read from ``claims.yaml``
(:func:`load_claims`), and the row filters a claim may carry."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

import pandas as pd
import yaml

from fitontest.study.schema import (CALIBRATOR_COLUMNS, CALIBRATOR_KEYS, SCORE_COLUMNS, SCORE_KEYS,
                                    SYNTHETIC_COLUMNS, SYNTHETIC_KEYS)
from . import policy
from .checks import CHECKS, SPEARMAN, NotTestable, _pct
from .equivalence import Margin

# keys, columns and the compared column of each tidy frame
FRAMES = {"scores": (SCORE_KEYS, SCORE_COLUMNS, "evaluator"),
          "calibrators": (CALIBRATOR_KEYS, CALIBRATOR_COLUMNS, "calibrator"),
          "synthetic": (SYNTHETIC_KEYS, SYNTHETIC_COLUMNS, "evaluator")}
FILTER_OPS = ("not", "above", "below", "quantile_above", "quantile_below")


@dataclass(frozen=True)
class Claim:
    id: str
    paper: str
    source: str
    frame: str
    measure: str
    check: str
    params: Mapping[str, Any]
    filter: Mapping[str, Any] = field(default_factory=dict)
    by: tuple[tuple[str, ...], ...] = ()
    better: str | None = None
    note: str = ""
    margin: Margin | None = None    # equivalence margin (checks with a fourth outcome)

    @property
    def lower_is_better(self) -> bool:
        if self.better is None:
            return self.measure != SPEARMAN
        return self.better == "lower"

    @property
    def measure_words(self) -> str:
        if self.measure == SPEARMAN:
            return ("Spearman correlation between estimated and true CE (across "
                    f"{'calibrators' if self.frame == 'scores' else 'CE levels'}, per group)")
        return self.measure

    @property
    def entity(self) -> str:
        return FRAMES[self.frame][2]

    def precise(self) -> str:
        """The tested statement, in words, generated from the check and its parameters."""
        text = CHECKS[self.check].describe(self, self.params)
        words = filter_words(self.filter)
        return f"{text}{f' (rows: {words})' if words else ''}."

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Claim":
        if not isinstance(d, Mapping):
            raise ValueError(f"a claim must be a mapping, got {d!r}")
        name = d.get("id", "?")
        required = ("id", "paper", "source", "frame", "measure", "check")
        optional = ("params", "filter", "by", "better", "note", "margin")
        missing = [k for k in required if k not in d]
        unknown = sorted(set(d) - set(required) - set(optional))
        if missing or unknown:
            raise ValueError(f"claim {name!r}: missing keys {missing}, unknown keys {unknown}")
        if not re.fullmatch(r"\w+", str(name)):
            raise ValueError(f"claim id {name!r}: use letters, digits and underscores")
        if d["frame"] not in FRAMES:
            raise ValueError(f"claim {name!r}: frame must be one of {sorted(FRAMES)}, "
                             f"got {d['frame']!r}")
        keys, columns, entity = FRAMES[d["frame"]]
        if d["measure"] != SPEARMAN and d["measure"] not in columns:
            raise ValueError(f"claim {name!r}: measure {d['measure']!r} is not a column of "
                             f"the {d['frame']} frame nor {SPEARMAN!r}")
        if d["measure"] == SPEARMAN and d["frame"] == "calibrators":
            raise ValueError(f"claim {name!r}: {SPEARMAN!r} ranks calibrators by the "
                             f"evaluators' estimates: use the scores frame")
        if d["check"] not in CHECKS:
            raise ValueError(f"claim {name!r}: unknown check {d['check']!r}; "
                             f"known: {sorted(CHECKS)}")
        params = dict(d.get("params") or {})
        CHECKS[d["check"]].validate(name, params)
        filt = dict(d.get("filter") or {})
        for col, cond in filt.items():
            if col not in columns:
                raise ValueError(f"claim {name!r}: filter column {col!r} is not a column of "
                                 f"the {d['frame']} frame")
            if isinstance(cond, Mapping) and (len(cond) != 1 or next(iter(cond)) not in FILTER_OPS):
                raise ValueError(f"claim {name!r}: filter on {col!r} must be a value, a list or "
                                 f"one of {{{', '.join(FILTER_OPS)}: ...}}, got {cond!r}")
        by = tuple(tuple([g] if isinstance(g, str) else g) for g in (d.get("by") or ()))
        bad = [c for g in by for c in g if c not in keys or c in (entity, "truth")]
        if bad:
            raise ValueError(f"claim {name!r}: 'by' columns {bad} are not keys of the "
                             f"{d['frame']} frame (other than {entity} and truth)")
        if d.get("better") not in (None, "lower", "higher"):
            raise ValueError(f"claim {name!r}: better must be 'lower' or 'higher'")
        # fixed before the run: declared, else the measure's default (policy.margin_for)
        margin = Margin.parse(d.get("margin", policy.margin_for(d["measure"])),
                              f"claim {name!r}: margin")
        if not CHECKS[d["check"]].equivalence:
            if "margin" in d and margin is not None:
                raise ValueError(f"claim {name!r}: check {d['check']!r} has no equivalence "
                                 f"outcome, so no margin (checks with one: "
                                 f"{sorted(k for k, c in CHECKS.items() if c.equivalence)})")
            margin = None
        return cls(id=str(name), paper=str(d["paper"]), source=str(d["source"]),
                   frame=d["frame"], measure=d["measure"], check=d["check"], params=params,
                   filter=filt, by=by, better=d.get("better"), note=str(d.get("note") or ""),
                   margin=margin)


def load_claims(path: str | Path | None = None) -> list[Claim]:
    """The claims of a YAML file (default: the paper's, ``claims.yaml``)."""
    if path is None:
        text = resources.files("fitontest.report").joinpath("claims.yaml").read_text("utf-8")
    else:
        text = Path(path).read_text(encoding="utf-8")
    entries = yaml.safe_load(text)
    if not isinstance(entries, list) or not entries:
        raise ValueError(f"{path or 'claims.yaml'}: expected a non-empty list of claims")
    claims = [Claim.from_dict(e) for e in entries]
    ids = [c.id for c in claims]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ValueError(f"{path or 'claims.yaml'}: duplicate claim ids {dup}")
    return claims


def filter_words(filt: Mapping[str, Any]) -> str:
    out = []
    for col, cond in filt.items():
        if isinstance(cond, Mapping):
            (op, v), = cond.items()
            if op == "not":
                out.append(f"{col} ≠ {_names(v)}")
            elif op in ("above", "below"):
                out.append(f"{col} {'>' if op == 'above' else '<'} {v}")
            else:
                out.append(f"{col} {'≥' if op == 'quantile_above' else '≤'} "
                           f"its {_pct(v)} quantile")
        else:
            out.append(f"{col} = {_names(cond)}")
    return "; ".join(out)


def _names(v) -> str:
    return " or ".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)


def _apply_filter(f: pd.DataFrame, filt: Mapping[str, Any]) -> pd.DataFrame:
    for col, cond in filt.items():
        if col not in f.columns:
            raise NotTestable(f"the {col!r} column is absent")
        x = f[col]
        if isinstance(cond, Mapping):
            (op, v), = cond.items()
            if op == "not":
                keep = ~x.isin(v if isinstance(v, (list, tuple)) else [v])
            elif op in ("above", "below"):
                keep = (x > v) if op == "above" else (x < v)
            else:
                cut = pd.to_numeric(x, errors="coerce").quantile(float(v))
                keep = (x >= cut) if op == "quantile_above" else (x <= cut)
        else:
            keep = x.isin(cond if isinstance(cond, (list, tuple)) else [cond])
        f = f[keep.to_numpy()]
    return f

