"""``python -m fitontest_cli``: the console script without its installed wrapper."""
import sys

from . import main

sys.exit(main())
