"""Versioned, validated state files (the evolver, the surface, the trainer's SEAL state).

A resumed run must not continue from a file it misread: a field with the wrong type used to
surface much later as a crash in ``Evolver.update()``, a missing key was filled in silently. So
every format carries ``format`` and ``format_version``, is checked against a JSON Schema on
load, and every error is a :class:`StateFileError` that names the file and the field.
Files written before versioning (no ``format_version``) read as version 1.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from jsonschema import Draft202012Validator


#: The bounds on every data file read here (state files, a run folder's JSON and JSON Lines, a
#: YAML config): its size in bytes, the nesting of its values and their number, counted as a
#: reader walks them (a YAML alias counts each time it is used). Past one, a StateFileError.
MAX_FILE_BYTES = 64 << 20
MAX_FILE_DEPTH = 64
MAX_FILE_VALUES = 4_000_000


class StateFileError(ValueError):
    """A state or data file that cannot be used: unreadable, too large or deep, not JSON,
    another format, or invalid."""


def read_text(path: str | Path, what: str) -> str:
    """The text of ``path``, at most :data:`MAX_FILE_BYTES`; an error naming the file otherwise."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise StateFileError(f"{what} file {path}: cannot be read ({e.strerror or e})") from None
    if len(data) > MAX_FILE_BYTES:
        raise StateFileError(f"{what} file {path}: larger than {MAX_FILE_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise StateFileError(f"{what} file {path}: not UTF-8 text (byte {e.start})") from None


def read_json(path: str | Path, what: str) -> Any:
    """The JSON in ``path``; a missing, unreadable, truncated, too large or too deep file is an
    error naming it."""
    return parse_json(read_text(path, what), f"{what} file {path}")


def _loads(text: str, source: str) -> Any:
    """``json.loads`` whose every failure is a StateFileError naming ``source``."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise StateFileError(f"{source}: not valid JSON ({e.msg} at line {e.lineno} column {e.colno}); "
                             "truncated or corrupt?") from None
    except RecursionError:
        raise StateFileError(f"{source}: nested deeper than {MAX_FILE_DEPTH} levels") from None
    except ValueError as e:
        raise StateFileError(f"{source}: not usable JSON ({type(e).__name__}: {e})") from None


def parse_json(text: str, source: str) -> Any:
    data = _loads(text, source)
    check_bounds(data, source)
    return data


def read_json_lines(path: str | Path, what: str) -> list[tuple[int, Any]]:
    """``(line number, value)`` for every non-blank line of a JSON Lines file, within the same
    bounds as a JSON file (the values of all lines counted together); a bad line is an error
    naming the file and the line."""
    budget = MAX_FILE_VALUES
    out = []
    for n, line in enumerate(read_text(path, what).splitlines(), 1):
        if not line.strip():
            continue
        value = _loads(line, f"{path}:{n}")
        budget -= check_bounds(value, f"{path}:{n}", budget)
        out.append((n, value))
    return out


def read_yaml(path: str | Path, what: str) -> Any:
    """The YAML in ``path`` (``safe_load``) within the bounds of every data file: PyYAML recurses
    per nesting level, and an alias multiplies what every later walk of the value visits."""
    import yaml

    text = read_text(path, what)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise StateFileError(f"{what} {path}: not valid YAML ({e})") from None
    except RecursionError:
        raise StateFileError(f"{what} {path}: nested deeper than {MAX_FILE_DEPTH} levels") from None
    check_bounds(data, f"{what} {path}")
    return data


def check_bounds(data: Any, source: str, budget: int | None = None) -> int:
    """The number of values in ``data`` (a parsed file), or a StateFileError when it nests
    deeper than :data:`MAX_FILE_DEPTH` or holds more than ``budget`` values. Iterative, and
    stops at the bound, so neither a deep nor an aliased value can take the stack or the clock."""
    budget = MAX_FILE_VALUES if budget is None else budget
    stack, seen = [(data, 0)], 0
    while stack:
        item, depth = stack.pop()
        seen += 1
        if seen > budget:
            raise StateFileError(f"{source}: more than {MAX_FILE_VALUES} values")
        if depth > MAX_FILE_DEPTH:
            raise StateFileError(f"{source}: nested deeper than {MAX_FILE_DEPTH} levels")
        if isinstance(item, dict):
            stack.extend((k, depth + 1) for k in item)
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, (list, tuple, set)):
            stack.extend((v, depth + 1) for v in item)
    return seen


def check(data: Any, schema: Mapping[str, Any], source: str, fmt: str, version: int,
          prefix: str = "") -> dict[str, Any]:
    """``data`` if it is this format at this version and satisfies ``schema``, else an error that
    names ``source`` and the first offending field (as a JSON path, after ``prefix`` when ``data``
    is a part of the file, e.g. ``"weigher/"``)."""
    if not isinstance(data, dict):
        where = f"field {prefix.rstrip('/')!r} is not a JSON object" if prefix else "expected a JSON object"
        raise StateFileError(f"{source}: {where}, got {type(data).__name__}")
    found = data.get("format", fmt)
    if found != fmt:
        raise StateFileError(f"{source}: field '{prefix}format' is {found!r}, expected {fmt!r}")
    got = data.get("format_version", 1)
    if got != version:
        raise StateFileError(f"{source}: field '{prefix}format_version' is {got!r}; this version of seal_envs "
                             f"reads {fmt} version {version}")
    errors = sorted(Draft202012Validator(schema).iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        e = errors[0]
        field = "/".join([prefix.rstrip("/")] * bool(prefix) + list(map(str, e.absolute_path))) or "(top level)"
        raise StateFileError(f"{source}: field '{field}' is invalid: {e.message[:300]}")
    return data


def counts(value_type: str = "integer", minimum: float | None = 0) -> dict[str, Any]:
    """Schema of a JSON object of numbers (counters, levels, rates)."""
    item: dict[str, Any] = {"type": value_type}
    if minimum is not None:
        item["minimum"] = minimum
    return {"type": "object", "additionalProperties": item}
