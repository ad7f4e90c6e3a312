"""Moved: the cross-validation helpers have their home in
:mod:`fitontest.core.selection`.

The names first published here still resolve, with a ``DeprecationWarning``
naming their home (:data:`fitontest.core.moved.MOVED`, issue 58).
"""
from .core.moved import moved

__getattr__, __dir__ = moved(__name__)
