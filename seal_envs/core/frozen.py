"""Immutable JSON values: what the env hands out without copying.

Why: the conversation and the tool list are read at every step by rollouts, agents and
wrappers, and copying them into every ``info`` was most of a step's cost (issue 27). A value
that cannot be changed can be shared by the env and every reader, and episodes stay isolated
because nobody can write through what they were given. ``FrozenDict`` is a ``dict`` and
``FrozenList`` a ``list`` (so ``json.dumps``, chat templates, ``isinstance`` and ``==`` against
plain JSON accept them) whose mutators raise. ``thaw`` gives a plain, mutable deep copy for a
caller who wants to edit.
"""

from __future__ import annotations

from typing import Any

from .types import JSON_SCALARS

__all__ = ["FrozenDict", "FrozenList", "freeze", "thaw"]


def _refuse(self, *args, **kwargs):
    raise TypeError("this value is shared and read-only; thaw() it (or dict() / list() it) for a copy to change")


class _Shared:
    """What both read-only containers share: copying one gives itself (nothing can change it),
    and pickling one gives a read-only one back."""

    __slots__ = ()
    _plain: type  # the built-in container it is read-only over

    def __copy__(self):
        return self

    def __deepcopy__(self, memo: dict):
        return self

    def __reduce__(self):
        return (type(self), (self._plain(self),))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._plain.__repr__(self)})"


class FrozenDict(_Shared, dict):
    """A read-only ``dict``; hashable neither by design nor by accident (values may be lists)."""

    __slots__ = ()
    _plain = dict
    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _refuse
    __ior__ = _refuse


class FrozenList(_Shared, list):
    """A read-only ``list``: equal to the plain list it was made from, as JSON parsed back is."""

    __slots__ = ()
    _plain = list
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse


def freeze(value: Any) -> Any:
    """``value`` with every dict a :class:`FrozenDict` and every list or tuple a
    :class:`FrozenList` (already frozen parts are kept, not rebuilt)."""
    if isinstance(value, (FrozenDict, FrozenList)):
        return value
    if isinstance(value, dict):
        return FrozenDict({k: freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return FrozenList(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """A plain deep copy: dicts and lists again, the caller's to change. Scalars are tested
    inline: a call per string was most of a thaw."""
    if isinstance(value, dict):
        return {k: v if type(v) in JSON_SCALARS else thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [v if type(v) in JSON_SCALARS else thaw(v) for v in value]
    return value
