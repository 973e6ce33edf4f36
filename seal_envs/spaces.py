"""A ``Text`` space for free-form model text that survives ``AsyncVectorEnv`` shared memory.

``AsyncVectorEnv`` reads its shared observation buffer once, at construction, and afterwards
returns (a copy of) that object, relying on numpy views to see new data. Gymnasium's ``Text``
reader returns a tuple of ``str``, a snapshot, so every later observation comes back as the
empty strings of the fresh buffer, with no error. :class:`UnicodeText` registers its own
shared-memory functions: code points in an ``int32`` buffer, read through a live view whose
deep copy is a plain tuple of strings. ``gym.make_vec(..., vectorization_mode="async")`` then
returns exactly what ``"sync"`` does.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
from gymnasium.spaces import Text
from gymnasium.vector.utils import shared_memory as _shm

# Every printable character of the Basic Multilingual Plane plus the usual whitespace.
PRINTABLE = "".join(
    ch for ch in map(chr, range(0x20, 0x10000)) if ch.isprintable() and not 0xD800 <= ord(ch) <= 0xDFFF
) + "\n\t\r"


def _holdable(ch: str) -> bool:
    return ch in "\n\t\r" or (ch.isprintable() and ord(ch) < 0x10000)


def _unholdable_pattern() -> re.Pattern:
    """One character class of everything :func:`_holdable` refuses: the gaps between the
    code points of :data:`PRINTABLE` (which holds exactly the holdable characters)."""
    ranges, nxt = [], 0
    for code in sorted(map(ord, PRINTABLE)):
        if code > nxt:
            ranges.append((nxt, code - 1))
        nxt = code + 1
    ranges.append((nxt, 0x10FFFF))
    return re.compile("[" + "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in ranges) + "]")


_UNHOLDABLE: re.Pattern | None = None
#: The ASCII characters :func:`_holdable` refuses: the controls but tab, newline and return.
_ASCII_CONTROLS = bytes([*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F])
_ASCII_UNHOLDABLE = re.compile(b"[" + re.escape(_ASCII_CONTROLS) + b"]")


def sanitize(text: str, max_length: int) -> str:
    """Map what the space cannot hold to U+FFFD and cut to ``max_length``.

    One regular-expression pass in C (the pattern is built on first use, in milliseconds): the
    character-by-character loop it replaces cost most of a reset, since every observation
    holds a newline and so was never ``isprintable`` as a whole."""
    global _UNHOLDABLE
    if text.isascii():  # most text: 30 control characters, looked for as bytes
        raw = text.encode("ascii")
        # deleting them is a table lookup a byte in C, 7x faster than a regex search of the
        # text (a reset's observation of BFCL's tools is 10-20 kB)
        if len(raw.translate(None, _ASCII_CONTROLS)) != len(raw):
            text = _ASCII_UNHOLDABLE.sub(b"\xef\xbf\xbd", raw).decode()
    else:
        if _UNHOLDABLE is None:
            _UNHOLDABLE = _unholdable_pattern()
        text = _UNHOLDABLE.sub("\ufffd", text)
    return text if len(text) <= max_length else text[: max_length - 1] + "\u2026"


class UnicodeText(Text):
    """``Text`` over every printable BMP character. The charset tables (tens of thousands of
    entries) are built once per process and shared, so making an env costs no time for them."""

    _tables: tuple | None = None

    def __init__(self, max_length: int = 1 << 16, *, min_length: int = 0, seed=None):
        if UnicodeText._tables is None:
            full = Text(1, min_length=0, charset=PRINTABLE)
            UnicodeText._tables = (full._char_set, full._char_list, full._char_index, full._char_str)
        super().__init__(max_length=max_length, min_length=min_length, charset="a", seed=seed)
        self._char_set, self._char_list, self._char_index, self._char_str = UnicodeText._tables

    def __repr__(self) -> str:
        """One line: ``Text``'s own repr lists the whole charset (55,000 characters)."""
        return f"UnicodeText(max_length={self.max_length}, min_length={self.min_length}, charset=printable BMP)"


@_shm.create_shared_memory.register(UnicodeText)
def _create(space: UnicodeText, n: int = 1, ctx=None):
    import multiprocessing as mp

    return (ctx or mp).Array(np.dtype(np.int32).char, n * (space.max_length + 1))


class SharedTextView(Sequence):
    """The strings in a shared buffer, decoded on access; ``deepcopy`` gives a tuple."""

    def __init__(self, data: np.ndarray):
        self._data = data

    def __len__(self) -> int:
        return len(self._data)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return tuple(self[j] for j in range(*i.indices(len(self))))
        row = self._data[i]
        return row[1 : 1 + row[0]].tobytes().decode("utf-32-le")

    def __deepcopy__(self, memo) -> tuple[str, ...]:
        return tuple(self)

    def __eq__(self, other) -> bool:
        return tuple(self) == tuple(other) if isinstance(other, Sequence) else NotImplemented

    def __repr__(self) -> str:
        return f"SharedTextView({tuple(self)!r})"


@_shm.read_from_shared_memory.register(UnicodeText)
def _read(space: UnicodeText, shared_memory, n: int = 1) -> SharedTextView:
    return SharedTextView(np.frombuffer(shared_memory.get_obj(), dtype=np.int32).reshape((n, space.max_length + 1)))


@_shm.write_to_shared_memory.register(UnicodeText)
def _write(space: UnicodeText, index: int, value: str, shared_memory) -> None:
    size = space.max_length + 1
    dest = np.frombuffer(shared_memory.get_obj(), dtype=np.int32)[index * size : (index + 1) * size]
    codes = np.frombuffer(value.encode("utf-32-le"), dtype=np.int32) if value else np.zeros(0, np.int32)
    dest[0] = len(codes)
    dest[1 : 1 + len(codes)] = codes

