"""Deep copies of plain data at C speed.

States, results and references are plain data (dicts, lists, tuples, sets, strings, numbers,
None). ``copy.deepcopy`` walks them in Python and was most of a step's and of a task
generation's time (issue 16); a ``marshal`` round trip makes the same copy in C, 5 to 15 times
faster. ``marshal`` writes only exact built-in types, with shared and repeated objects kept
shared, dict order kept and floats bit for bit; it refuses anything else (an object, a
subclass such as ``OrderedDict`` or an ``IntEnum``), and those values fall back to
``copy.deepcopy``, so a copy is always exactly what ``deepcopy`` would give.
"""

from __future__ import annotations

import copy
import marshal
import pickle
from typing import Any


class Snapshot:
    """A frozen copy of a value taken now; :meth:`restore` returns a fresh deep copy of it.

    Taking one costs a ``marshal.dumps`` (no objects are built), restoring a ``loads``: the
    cheap side is taken before every call, the dear one only when a call fails."""

    __slots__ = ("_data", "_copy")

    def __init__(self, value: Any):
        try:
            self._data, self._copy = marshal.dumps(value), None
        except ValueError:  # not plain data: keep a deep copy, copy it again on restore
            self._data, self._copy = None, copy.deepcopy(value)

    def restore(self) -> Any:
        return marshal.loads(self._data) if self._data is not None else copy.deepcopy(self._copy)


def deep_copy(value: Any) -> Any:
    """``copy.deepcopy(value)``, through ``marshal`` when the value is plain data."""
    try:
        return marshal.loads(marshal.dumps(value))
    except ValueError:
        return copy.deepcopy(value)


def deep_copy_objects(value: Any) -> Any:
    """A deep copy of plain data and of objects that keep Python's default copy protocol
    (``__reduce_ex__``, ``__getstate__``/``__setstate__``), which ``deepcopy`` follows too:
    marshal for plain data, else a ``pickle`` round trip, which rebuilds the same objects in C
    (shared objects stay shared). Only for values whose classes define no ``__deepcopy__``
    (bfcl-eval's API classes: a ``random.Random`` state of 625 integers walked in Python was
    most of a BFCL reset). Anything pickle refuses falls back to ``copy.deepcopy``."""
    try:
        return marshal.loads(marshal.dumps(value))
    except ValueError:
        pass
    try:
        return pickle.loads(pickle.dumps(value, pickle.HIGHEST_PROTOCOL))
    except (pickle.PicklingError, TypeError, AttributeError, ValueError, RecursionError):
        return copy.deepcopy(value)


class ObjectSnapshot:
    """A :class:`Snapshot` of plain data and objects (what :func:`deep_copy_objects` copies):
    taking one is a ``pickle.dumps``, and only :meth:`restore` builds objects, so a snapshot
    taken before every call and seldom restored costs the cheap half."""

    __slots__ = ("_data", "_copy")

    def __init__(self, value: Any):
        try:
            self._data, self._copy = pickle.dumps(value, pickle.HIGHEST_PROTOCOL), None
        except (pickle.PicklingError, TypeError, AttributeError, ValueError, RecursionError):
            self._data, self._copy = None, copy.deepcopy(value)

    def restore(self) -> Any:
        return pickle.loads(self._data) if self._data is not None else copy.deepcopy(self._copy)
