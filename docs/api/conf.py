"""Sphinx configuration of the API reference (docs/api; built in CI with -W).

Build: ``sphinx-build -W --keep-going -b html docs/api build/docs`` (the
``docs`` extra installs Sphinx, numpydoc and sphinx-argparse). The pages of
the families and the multi-class calibrators are generated from the
registries at build time (:mod:`registry_pages`), so a new family appears
with its one-line summary and parameters without editing a page.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "src"))
sys.path.insert(0, str(HERE))

import fitontest  # noqa: E402
import registry_pages  # noqa: E402

project = "fitontest"
author = "fitontest contributors"
release = version = fitontest.__version__
extensions = ["sphinx.ext.autodoc", "numpydoc", "sphinxarg.ext"]
exclude_patterns = ["_build"]
html_theme = "alabaster"
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"show-inheritance": False}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
suppress_warnings = ["config.cache"]


def escape_bars(app, what, name, obj, options, lines):
    """The docstrings write absolute values as plain text (|x - y|), which
    reStructuredText would read as substitutions: escape the bars (numpydoc
    keeps its own tables of ``=`` and ``-`` lines untouched)."""
    for i, line in enumerate(lines):
        parts = line.split("``")       # odd parts are inline literals: left as they are
        lines[i] = "``".join(p if k % 2 else p.replace("\\|", "|").replace("|", "\\|")
                             for k, p in enumerate(parts))


def setup(app):
    app.connect("builder-inited", lambda app: registry_pages.write(HERE / "generated"))
    app.connect("autodoc-process-docstring", escape_bars, priority=100)
