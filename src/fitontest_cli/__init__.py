"""The ``fitontest`` command line, all of it: the console script, its parser
(:mod:`fitontest_cli.parser`) and its commands (:mod:`fitontest_cli.commands`).
It parses the command line first and imports the library after.

``import fitontest`` costs about a second, nearly all of it scikit-learn
(``sklearn.base`` imports scipy.stats and pandas): the package re-exports
:class:`fitontest.CalibratedClassifier` and :func:`fitontest.evaluate`, whose
families are scikit-learn estimators, and Python runs a package's
``__init__`` before any of its submodules. So the entry point lives in this
separate top-level package, shipped in the same wheel, which imports only the
standard library: ``fitontest --help``, ``fitontest COMMAND --help`` and usage
errors are answered by :mod:`fitontest_cli.parser` alone, and the library is
imported once a command runs (:func:`fitontest_cli.commands.run`). The
library never imports this package: it sits above the front door. ``fitontest``'s own
public names stay plain re-exports of real modules (no lazy module
attributes, no import hooks).

``fitontest evaluate`` then needs scikit-learn, which sets its floor:
``benchmarks/speed/startup.py`` measures both.
"""
from __future__ import annotations

from .parser import build_parser, parse_args


def main(argv=None) -> int:
    """Run ``fitontest`` with ``argv`` (default ``sys.argv[1:]``); the exit status."""
    args = parse_args(argv)            # --help and usage errors exit here, nothing imported
    from .commands import run          # the library: numpy, scikit-learn, the registries

    return run(args)


__all__ = ["main", "build_parser", "parse_args"]
