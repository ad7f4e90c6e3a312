"""The public modules under their short names.

The package is laid out by layer (``core``, ``methods``, ``vision``, ``study``,
``report``; docs/architecture.md), but users and plugins import the public
modules by the short names the README documents: ``fitontest.families``,
``from fitontest.families.base import CalibrationFamily``,
``fitontest.multiclass.get``, ``fitontest.data.synthetic``. A short name is
the very module object of the layer folder (one class, one registry), not a
copy: the finder below hands the import system the already imported module.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

#: short name -> its module, relative to the package
PUBLIC = {
    "registry": "core.registry", "io": "core.io",
    "families": "methods.families", "multiclass": "methods.multiclass",
    "metrics": "methods.metrics", "intervals": "methods.intervals",
    "data": "vision.data", "models": "vision.models", "train": "vision.train",
    "tasks": "study.tasks", "truth": "study.truth", "config": "study.config",
}


def real_name(fullname: str) -> str | None:
    """``fitontest.families.base`` -> ``fitontest.methods.families.base``; None
    for a name that is not under a short name."""
    package, _, rest = fullname.partition(".")
    short, _, sub = rest.partition(".")
    if package != __package__ or short not in PUBLIC:
        return None
    return ".".join(filter(None, (package, PUBLIC[short], sub)))


class _ShortNames(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        real = real_name(fullname)
        return None if real is None else importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        module = importlib.import_module(real_name(spec.name))
        spec.loader_state = module.__spec__
        return module

    def exec_module(self, module):
        # the import system stamped the short name's spec on the real module: undo it
        module.__spec__ = module.__spec__.loader_state


def install() -> None:
    """First on the meta path: otherwise the path finder would load a second
    copy of ``fitontest.families.base`` from the real folder."""
    if not any(isinstance(f, _ShortNames) for f in sys.meta_path):
        sys.meta_path.insert(0, _ShortNames())
