"""``fitontest families``: every registered calibration-map family (the
evaluators) and every multi-class calibrator, with a one-line summary."""
from __future__ import annotations

import json
import textwrap

from fitontest import families, multiclass

#: printed once above the list, so that the one-line summaries can abbreviate
ABBREVIATIONS = (
    "CE = calibration error; ECE = expected calibration error (the binning estimator); "
    "smECE = smooth ECE; KCE = kernel calibration error; ES / EW = equal-size / "
    "equal-width bins; CV = cross-validation; PL = piecewise linear (PL3: piecewise linear "
    "in logit space); KDE = kernel density estimate; MSE = mean squared error; loss=ce = "
    "cross-entropy (log-loss) training loss; ODIR = off-diagonal and intercept "
    "regularisation; CMEE = calibration-map estimation error (the workflow's score of an "
    "evaluator).")


def _summary(obj) -> str:
    """The first line of a docstring (the one-line summary), plain text."""
    doc = (obj.__doc__ or "").strip()
    return doc.splitlines()[0].strip().replace("``", "") if doc else ""


def _params(defaults: dict) -> str:
    return f" ({', '.join(f'{k}={v}' for k, v in defaults.items())})" if defaults else ""


def family_rows() -> list[tuple[str, str, str]]:
    """(name, kind, description) of every registered family, then every
    multi-class calibrator; the description is the class's one-line summary
    with the parameters the name is registered with."""
    rows = []
    for name in families.names():
        cls = families.entry(name)
        kind = "binary, map" if cls.provides_map else "binary, estimate-only"
        rows.append((name, kind, _summary(cls) + _params(families.FAMILIES.defaults(name))))
    for name in multiclass.names():
        rows.append((name, "multi-class calibrator",
                     _summary(multiclass.entry(name))
                     + _params(multiclass.MULTICLASS.defaults(name))))
    return rows


def cmd_families(args) -> int:
    rows = family_rows()
    if args.json:
        print(json.dumps([dict(zip(("name", "kind", "description"), r)) for r in rows],
                         indent=2))
        return 0
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    print(textwrap.fill(ABBREVIATIONS, 100))
    groups = [("Evaluators: binary calibration-map families (fitontest evaluate --evaluator "
               "NAME; also binary calibrators)", lambda kind: kind.startswith("binary")),
              ("Multi-class calibrators (CalibratedClassifier(method=NAME), the workflow's "
               "calibrators; not evaluators)", lambda kind: not kind.startswith("binary"))]
    for title, member in groups:
        print(f"\n{title}:")
        for name, kind, desc in rows:
            if member(kind):
                print(f"{name.ljust(w0)}  {kind.ljust(w1)}  {desc}")
    return 0


__all__ = ["cmd_families", "family_rows", "ABBREVIATIONS"]
