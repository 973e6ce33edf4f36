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


class StateFileError(ValueError):
    """A state file that cannot be used: unreadable, not JSON, another format, or invalid."""


def read_json(path: str | Path, what: str) -> Any:
    """The JSON in ``path``; a missing, unreadable or truncated file is an error naming it."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise StateFileError(f"{what} file {path}: cannot be read ({e.strerror or e})") from None
    return parse_json(text, f"{what} file {path}")


def parse_json(text: str, source: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise StateFileError(f"{source}: not valid JSON ({e.msg} at line {e.lineno} column {e.colno}); "
                             "truncated or corrupt?") from None
    except (ValueError, RecursionError) as e:
        raise StateFileError(f"{source}: not usable JSON ({type(e).__name__}: {e})") from None


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
