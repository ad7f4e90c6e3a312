"""Moved: the bands of the calibration map have their home in
:mod:`fitontest.inference.bands`; ``score_groups``, ``default_groups``,
``dyadic_runs`` and ``monotone_band_test`` in :mod:`fitontest.inference.monotone_band`;
``WorldParts``, ``world_parts``, ``world_ends``, ``WORLD_BAND_SCALE`` and
``WORLD_BAND_WORLDS`` in :mod:`fitontest.inference.world_band`.

The names first published here still resolve, with a ``DeprecationWarning``
naming their home (:data:`fitontest.core.moved.MOVED`, issue 58).
"""
from .core.moved import moved

__getattr__, __dir__ = moved(__name__)
