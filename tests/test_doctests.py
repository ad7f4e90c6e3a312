"""The Examples of the public docstrings run (numpydoc form; the API
reference in docs/api shows them). A module's examples that need data they do
not make are marked ``# doctest: +SKIP`` there."""
import doctest
import importlib

import pytest

PUBLIC = ["fitontest", "fitontest.api", "fitontest.metrics", "fitontest.calibrated_classifier",
          "fitontest.families", "fitontest.multiclass", "fitontest.inference.intervals",
          "fitontest.core.moved", "fitontest.core.extras",
          "fitontest.core.prediction_files", "fitontest.core.predictions"]


@pytest.mark.parametrize("name", PUBLIC)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
                             verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed"


def test_the_front_door_has_examples():
    """evaluate and CalibratedClassifier show (and so test) their use."""
    import fitontest

    finder = doctest.DocTestFinder()
    for obj in (fitontest.evaluate, fitontest.CalibratedClassifier):
        examples = [ex for t in finder.find(obj) for ex in t.examples
                    if not ex.options.get(doctest.SKIP)]
        assert len(examples) >= 5, obj
