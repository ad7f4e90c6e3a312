"""The commands of ``fitontest``, run on a command line that
:mod:`fitontest_cli.parser` has parsed: one module per group of commands.

A command's module (and so the library) is imported when that command runs:
``fitontest pins`` does not load the evaluators, ``fitontest evaluate`` not
the workflow's report layer.
"""
from __future__ import annotations

import importlib
import sys

from fitontest.core.extras import MissingExtraError

#: command -> (module in this package, function)
COMMANDS = {"evaluate": ("evaluate", "cmd_evaluate"), "choose": ("evaluate", "cmd_choose"),
            "families": ("families", "cmd_families"), "bench": ("bench", "cmd_bench"),
            "jobs": ("jobs", "cmd_jobs"), "pins": ("jobs", "cmd_pins")}


def run(args) -> int:
    """Run the command parsed by :func:`fitontest_cli.parse_args`; the exit
    status. Bad input is one line on stderr and status 2."""
    module, function = COMMANDS[args.command]
    command = getattr(importlib.import_module(f"{__name__}.{module}"), function)
    try:
        return command(args)
    except (ValueError, KeyError, MissingExtraError) as err:
        # one line: the message's first (a numpy or pandas message may run on)
        text = (str(err.args[0]) if type(err) is KeyError and err.args else str(err)).strip()
        line = text.splitlines()[0] if text else repr(err)
        print(f"fitontest {args.command}: error: {line}", file=sys.stderr)
        return 2
    except BrokenPipeError:                # `fitontest families | head`: not an error
        sys.stderr.close()
        return 0


__all__ = ["COMMANDS", "run"]
