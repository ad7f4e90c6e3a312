"""Cross-validation helpers: :mod:`fitontest.core.selection`, whose public names are
re-exported here, where they were first published."""
from .core.selection import (complexity_rule, kfold_indices)

__all__ = ["complexity_rule", "kfold_indices"]
