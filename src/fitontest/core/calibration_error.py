"""Moved: the estimators' home is :mod:`fitontest.metrics` (issue 58); the
names this module published warn and point there (:mod:`fitontest.core.moved`)."""
from fitontest.core.moved import moved

__getattr__, __dir__ = moved(__name__)
