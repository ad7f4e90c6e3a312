"""Write the reference pages of the two registries (families, multi-class
calibrators) from the registries themselves: every registered name with its
one-line summary (the class docstring's first line), the parameters it is
registered with, and each class once with its full docstring and signature."""
from __future__ import annotations

from pathlib import Path

from fitontest import families, multiclass

PAGES = {
    "families": (families, families.FAMILIES, "Calibration-map families (the evaluators)",
                 "A calibration-map family fitted on validation data is a binary "
                 "calibrator; fitted on test data it is an evaluator of the calibration "
                 "error (CE). Get one with ``fitontest.families.get(name, **params)``; "
                 "the parameters below are those the name is registered with, any other "
                 "parameter of the class may be passed too. ``fitontest families`` lists "
                 "the same names."),
    "multiclass": (multiclass, multiclass.MULTICLASS, "Multi-class calibrators",
                   "Post-hoc calibrators on K-class logits: "
                   "``fitontest.multiclass.get(name, **params).fit(logits, labels)``, or "
                   "``fitontest.CalibratedClassifier(clf, method=name)``."),
}


def summary(cls) -> str:
    doc = (cls.__doc__ or "").strip()
    return doc.splitlines()[0].strip() if doc else ""


def page(module, registry, title: str, intro: str) -> str:
    names = registry.names()
    classes = list(dict.fromkeys(registry.entry(n) for n in names))
    lines = [title, "=" * len(title), "", intro, "",
             ".. list-table::", "   :header-rows: 1", "   :widths: 15 50 20 15", "",
             "   * - name", "     - summary", "     - registered parameters", "     - class"]
    for name in names:
        cls = registry.entry(name)
        params = ", ".join(f"``{k}={v!r}``" for k, v in registry.defaults(name).items())
        lines += [f"   * - ``{name}``", f"     - {summary(cls)}", f"     - {params or '-'}",
                  f"     - :class:`{cls.__name__} <{cls.__module__}.{cls.__qualname__}>`"]
    lines += ["", "Look-up", "-------", ""]
    for fn in ("get", "names", "entry"):
        lines += [f".. autofunction:: {module.__name__}.{fn}", ""]
    lines += ["Classes", "-------", ""]
    for cls in classes:
        registered = ", ".join(f"``{n}``" for n in names if registry.entry(n) is cls)
        members = [m for m in ("fit", "predict", "predict_proba", "ce_estimate")
                   if callable(getattr(cls, m, None))]
        lines += [f".. autoclass:: {cls.__module__}.{cls.__qualname__}",
                  f"   :members: {', '.join(members)}", "",
                  f"   Registered as {registered}.", ""]
    return "\n".join(lines) + "\n"


def write(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for stem, spec in PAGES.items():
        text = page(*spec)
        target = directory / f"{stem}.rst"
        if not target.exists() or target.read_text() != text:   # unchanged: no rebuild
            target.write_text(text)
