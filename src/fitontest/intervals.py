"""Moved: the CE intervals' home is :mod:`fitontest.inference.intervals`;
``WORLD_T``, ``reference_gap``, ``largest_ce``, ``world_replicates`` and
``world_reps`` are homed in :mod:`fitontest.inference.worlds`.

The names first published here still resolve, with a ``DeprecationWarning``
naming their home (:data:`fitontest.core.moved.MOVED`, issue 58).
"""
from .core.moved import moved

__getattr__, __dir__ = moved(__name__)
