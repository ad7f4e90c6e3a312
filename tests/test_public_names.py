"""The public modules keep the short names the README documents
(``fitontest.families`` ...) although they live in layer folders."""
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

import fitontest
from fitontest import _public

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", REPO / "config" / "README.md", *sorted((REPO / "docs").glob("*.md"))]


@pytest.mark.parametrize("short", sorted(_public.PUBLIC))
def test_short_name_is_the_layer_module_itself(short):
    real = importlib.import_module(f"fitontest.{_public.PUBLIC[short]}")
    assert importlib.import_module(f"fitontest.{short}") is real
    assert getattr(fitontest, short) is real
    assert real.__spec__.name == real.__name__ == f"fitontest.{_public.PUBLIC[short]}"


def test_submodule_through_short_name_is_not_a_second_copy():
    from fitontest.families import FAMILIES, register
    from fitontest.families.base import CalibrationFamily
    from fitontest.methods.families import base

    assert CalibrationFamily is base.CalibrationFamily
    assert sys.modules["fitontest.families.base"] is base
    assert base.__spec__.name == "fitontest.methods.families.base"

    @register("_short_name_probe")
    class Probe(CalibrationFamily):
        def _fit(self, s, y):
            pass

        def _predict(self, s):
            return s

    try:
        from fitontest.methods import families
        assert isinstance(families.get("_short_name_probe"), Probe)
    finally:
        FAMILIES._entries.pop("_short_name_probe", None)
        FAMILIES._defaults.pop("_short_name_probe", None)


def test_unknown_module_under_a_short_name_is_a_clear_import_error():
    with pytest.raises(ModuleNotFoundError, match="fitontest.methods.families.nothing"):
        importlib.import_module("fitontest.families.nothing")
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        fitontest.nothing


def test_short_names_work_in_a_fresh_interpreter():
    code = ("from fitontest.families.base import CalibrationFamily; import fitontest.families as f;"
            "import fitontest.methods.families.base as b; assert CalibrationFamily is b.CalibrationFamily;"
            "assert f.get('isotonic').__class__.__module__ == 'fitontest.methods.families.isotonic'")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def _resolve(dotted: str):
    parts = dotted.split(".")
    for k in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:k]))
        except ModuleNotFoundError:
            continue
        for attr in parts[k:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(dotted)


def test_every_dotted_name_the_docs_mention_resolves():
    names = set()
    for doc in DOCS:
        names |= set(re.findall(r"`(fitontest(?:\.\w+)+)", doc.read_text()))
    names.discard("fitontest.yaml")
    assert len(names) >= 10, names
    for name in sorted(names):
        assert _resolve(name) is not None, name
