"""Sphinx configuration of the documentation: the user guide (docs/guide), the
API reference (docs/api), the methods (docs/methods) and the notes beside them,
one project rooted at docs/ (built in CI with -W).

Build (as CI does): ``sphinx-build -E -W --keep-going -q -b html docs build/docs``
(the ``docs`` extra installs Sphinx, myst-parser, numpydoc and sphinx-argparse). The Markdown
pages are read by myst-parser, so they read the same on GitHub and in the built
site; the reStructuredText pages of docs/api are the API reference. The pages of
the families and the multi-class calibrators are generated from the registries
at build time (:mod:`registry_pages`), so a new family appears with its
one-line summary and parameters without editing a page.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE / "api"))

import fitontest  # noqa: E402
import registry_pages  # noqa: E402

project = "fitontest"
author = "fitontest contributors"
release = version = fitontest.__version__
extensions = ["myst_parser", "sphinx.ext.autodoc", "numpydoc", "sphinxarg.ext"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
# docs/README.md is the folder's index on GitHub; index.md is the site's
exclude_patterns = ["_build", "README.md"]
html_theme = "alabaster"
# Markdown: $...$ and $$...$$ math, heading anchors as GitHub writes them, so that
# a link to page.md#a-heading resolves on GitHub and in the built site alike
myst_enable_extensions = ["dollarmath"]
myst_heading_anchors = 4
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
    app.connect("builder-inited", lambda app: registry_pages.write(HERE / "api" / "generated"))
    app.connect("autodoc-process-docstring", escape_bars, priority=100)
