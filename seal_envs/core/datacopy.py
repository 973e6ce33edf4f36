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
import math
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


def _is_json(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` is JSON data that ``repr`` spells as a Python literal of itself: exact
    dicts with string keys, lists, strings, ints, bools, None and finite floats."""
    if depth > 64:
        return False
    kind = type(value)
    if kind is dict:
        return all(type(k) is str and _is_json(v, depth + 1) for k, v in value.items())
    if kind is list:
        return all(_is_json(v, depth + 1) for v in value)
    if kind is float:
        return math.isfinite(value)
    return value is None or kind in (str, int, bool)


class FrozenData:
    """A plain-data value stored once and handed out as fresh deep copies (:meth:`copy`), so
    a cache can be shared by every env and episode while each caller may change its copy.

    JSON data (what a cache of rendered tools holds) is compiled into the code of its own
    literal: a copy is then one evaluation that builds fresh dicts and lists around the same
    immutable strings and numbers, two to three times faster than ``marshal``, which copies
    the strings too. Objects shared inside the value come out as separate copies. Anything
    else is kept as a :class:`Snapshot`."""

    __slots__ = ("_code", "_snapshot")

    def __init__(self, value: Any):
        self._code = self._snapshot = None
        if _is_json(value):
            try:
                self._code = compile(repr(value), "<frozen data>", "eval")
            except (SyntaxError, RecursionError, MemoryError, ValueError):
                self._code = None
        if self._code is None:
            self._snapshot = Snapshot(value)

    def __reduce__(self):  # a code object does not pickle: an env that holds one still must
        return (FrozenData, (self.copy(),))

    def copy(self) -> Any:
        if self._code is not None:
            return eval(self._code, {"__builtins__": {}})  # a literal: builds data, runs nothing
        return self._snapshot.restore()
