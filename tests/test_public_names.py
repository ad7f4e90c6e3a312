"""The public names the README and docs document are real modules and
attributes: every dotted ``fitontest.…`` name there resolves."""
import importlib
import re
from pathlib import Path

import pytest

import fitontest

REPO = Path(__file__).resolve().parents[1]
# the README, the config keys, and every page of docs/: the guide, the methods, the notes
DOCS = [REPO / "README.md", REPO / "config" / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


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


def test_front_door_names_are_plain_attributes():
    assert {"evaluate", "EvaluationResult", "CalibratedClassifier"} <= set(dir(fitontest))
    assert fitontest.evaluate.__module__ == "fitontest.api"
    with pytest.raises(AttributeError):
        _ = fitontest.nothing
    with pytest.raises(ModuleNotFoundError, match="fitontest.families.nothing"):
        importlib.import_module("fitontest.families.nothing")
