"""One address per public name (issue 58): every older address in
:data:`fitontest.core.moved.MOVED` still resolves, warns ``DeprecationWarning``
naming the name's home and gives the home's very object; every home defines
the name; and no top-level module of fitontest publishes a name it does not
define without being in the table."""
from __future__ import annotations

import ast
import importlib
import inspect
import warnings
from pathlib import Path

import pytest

import fitontest
from fitontest.core.moved import MOVED, moved

SRC = Path(__file__).resolve().parents[1] / "src" / "fitontest"
ENTRIES = sorted((old, name, home) for old, names in MOVED.items()
                 for name, home in names.items())


def test_the_table_is_not_empty_and_names_the_issue_58_moves():
    assert len(ENTRIES) > 100
    assert {"fitontest.core.calibration_error", "fitontest.intervals", "fitontest.bands",
            "fitontest.calibration_tests", "fitontest.worlds", "fitontest.selection",
            "fitontest.choose", "fitontest.cli", "fitontest.metrics"} <= set(MOVED)


@pytest.mark.parametrize("old, name, home", ENTRIES)
def test_the_old_address_warns_naming_the_home_and_is_the_same_object(old, name, home):
    module = importlib.import_module(old)
    with pytest.warns(DeprecationWarning) as caught:
        got = getattr(module, name)
    messages = [str(w.message) for w in caught]
    assert f"{old}.{name} is deprecated: its home is {home} (use {home}.{name})" in messages
    # the warning points at the line that used the old address, not at moved()
    assert all(Path(w.filename).name == Path(__file__).name for w in caught)
    assert got is getattr(importlib.import_module(home), name)


def _defined_at_module_level(path: Path, name: str) -> bool:
    """``name`` assigned, defined or declared by a top-level statement of ``path``
    (for constants, whose objects carry no ``__module__``)."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
            return True
        targets = (node.targets if isinstance(node, ast.Assign)
                   else [node.target] if isinstance(node, ast.AnnAssign) else [])
        for t in targets:
            elts = t.elts if isinstance(t, ast.Tuple) else [t]
            if any(isinstance(e, ast.Name) and e.id == name for e in elts):
                return True
    return False


@pytest.mark.parametrize("old, name, home", ENTRIES)
def test_every_home_defines_its_name(old, name, home):
    """A home is where the name is defined, not another re-export (the front
    door's names: their home is the package ``fitontest``, which lists them)."""
    assert home not in MOVED or name not in MOVED[home], f"{home}.{name} is itself old"
    if home == "fitontest":
        assert name in fitontest.__all__
        return
    module = importlib.import_module(home)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)   # a home never warns
        obj = getattr(module, name)
    if inspect.isfunction(obj) or inspect.isclass(obj):
        assert obj.__module__ == home, f"{home}.{name} is defined in {obj.__module__}"
    else:
        assert _defined_at_module_level(Path(inspect.getfile(module)), name), \
            f"{home} does not define {name}"


@pytest.mark.parametrize("old", sorted(MOVED))
def test_a_shim_holds_none_of_its_old_names(old):
    """An old name the module still holds is found before ``__getattr__`` runs:
    it would resolve without the warning."""
    module = importlib.import_module(old)
    held = sorted(set(MOVED[old]) & set(vars(module)))
    assert not held, f"{old} still binds {held}: they would not warn"
    assert set(MOVED[old]) <= set(dir(module))


def test_from_import_of_an_old_name_warns_at_the_importing_line():
    with pytest.deprecated_call(match="fitontest.intervals.ce_interval is deprecated: its "
                                "home is fitontest.inference.intervals") as caught:
        from fitontest.intervals import ce_interval
    from fitontest.inference.intervals import ce_interval as home
    assert ce_interval is home
    assert Path(caught[0].filename).name == Path(__file__).name


def test_unknown_names_and_modules_are_errors_naming_them():
    getattr_, _ = moved("fitontest.intervals")
    with pytest.raises(AttributeError, match="'fitontest.intervals' has no attribute 'nope'"):
        getattr_("nope")
    with pytest.raises(KeyError, match="fitontest.nowhere"):
        moved("fitontest.nowhere")


# ------------------------------------------------ no silent second address
def silent_reexports(source: str, module: str) -> list[str]:
    """Names a top-level module publishes without defining them: a name in
    ``__all__`` not defined there, and a public name imported from fitontest at
    module level that the module never uses (a re-export in all but name)."""
    tree = ast.parse(source)
    defined, imported, exported = set(), set(), []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for e in (t.elts if isinstance(t, ast.Tuple) else [t]):
                    if isinstance(e, ast.Name):
                        defined.add(e.id)
                        if e.id == "__all__":
                            exported = [c.value for c in node.value.elts]
        elif isinstance(node, ast.ImportFrom) and (
                node.level or (node.module or "").split(".")[0] == "fitontest"):
            imported.update(a.asname or a.name for a in node.names)
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Load)}
    problems = [f"{module}.__all__ lists {n}, defined elsewhere" for n in exported
                if n not in defined]
    problems += [f"{module} imports {n} and does not use it" for n in sorted(imported)
                 if not n.startswith("_") and n not in used and n not in defined
                 and not (SRC / f"{n}.py").exists() and not (SRC / n).is_dir()]
    return problems


def test_no_top_level_module_publishes_a_name_it_does_not_define():
    """A module at the package top either defines its public names or is an
    old address whose names are in MOVED (a shim that imports none of them)."""
    problems = []
    for path in sorted(SRC.glob("*.py")):
        if path.stem == "__init__":
            continue               # the front door's lazy names: fitontest.__all__
        problems += silent_reexports(path.read_text(), f"fitontest.{path.stem}")
    assert not problems, "\n".join(problems) + "\n(define the name, or move it to its " \
        "home and list the old address in fitontest.core.moved.MOVED)"


def test_the_re_export_check_can_fail():
    """The form every re-export module had before issue 58 is caught both ways."""
    reexport = ("from .inference.intervals import CEInterval, ce_interval\n"
                "__all__ = ['CEInterval', 'ce_interval']\n")
    assert silent_reexports(reexport, "fitontest.x") == [
        "fitontest.x.__all__ lists CEInterval, defined elsewhere",
        "fitontest.x.__all__ lists ce_interval, defined elsewhere",
        "fitontest.x imports CEInterval and does not use it",
        "fitontest.x imports ce_interval and does not use it"]
    used = ("from .inference.choose import check_settings\n"
            "def f():\n    return check_settings()\n__all__ = ['f']\n")
    assert silent_reexports(used, "fitontest.x") == []
