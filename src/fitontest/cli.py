"""Moved: the command line is the package ``fitontest_cli`` (the console
script, :mod:`fitontest_cli.parser`, :mod:`fitontest_cli.commands`), which the
library never imports.

The names first published here still resolve, with a ``DeprecationWarning``
naming their home (:data:`fitontest.core.moved.MOVED` holds them as strings,
so this module imports nothing of ``fitontest_cli``).
"""
import sys

from .core.moved import moved

__getattr__, __dir__ = moved("fitontest.cli")

if __name__ == "__main__":         # python -m fitontest.cli, the older spelling
    import importlib
    import warnings

    warnings.warn("python -m fitontest.cli is deprecated: run python -m fitontest_cli "
                  "(or the fitontest command)", DeprecationWarning, stacklevel=1)
    sys.exit(importlib.import_module("fitontest_cli").main())
