"""Argument validation against a tool's JSON Schema, with messages that name the parameter."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Mapping

from jsonschema import Draft202012Validator

from .types import canonical_json


@dataclass(frozen=True)
class ArgumentError:
    """The first problem with a call's arguments: which parameter and what was wrong."""

    param: str | None
    problem: str  # missing_required | wrong_type | bad_enum | extra_argument | invalid_value
    message: str


@lru_cache(maxsize=512)
def _validator(schema_json: str) -> Draft202012Validator:
    return Draft202012Validator(json.loads(schema_json))


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _describe(error, tool: str) -> ArgumentError:
    path = [str(p) for p in error.absolute_path]
    param = path[0] if path else None
    where = f"parameter '{'.'.join(path)}' of {tool}" if path else f"arguments of {tool}"
    if error.validator == "required":
        missing = [r for r in error.validator_value if r not in (error.instance or {})]
        name = missing[0] if missing else None
        return ArgumentError(name, "missing_required", f"missing required parameter '{name}' of {tool}")
    if error.validator == "additionalProperties":
        allowed = set(error.schema.get("properties", {}))
        extra = sorted(k for k in error.instance if k not in allowed)
        name = extra[0] if extra else None
        return ArgumentError(
            name, "extra_argument",
            f"unexpected parameter '{name}' for {tool}; it accepts {sorted(allowed) or 'no parameters'}",
        )
    if error.validator == "type":
        expected = error.validator_value
        return ArgumentError(
            param, "wrong_type",
            f"{where} must be of type {expected}, got {type(error.instance).__name__} {_short(error.instance)}",
        )
    if error.validator == "enum":
        return ArgumentError(
            param, "bad_enum",
            f"{where} must be one of {error.validator_value}, got {_short(error.instance)}",
        )
    return ArgumentError(param, "invalid_value", f"{where} is invalid: {error.message}")


def _non_finite(value: Any, path: tuple[str, ...] = ()) -> tuple[tuple[str, ...], float] | None:
    """The path of the first NaN or infinity in ``value`` (arguments are depth-bounded by the
    parser, so the recursion is too)."""
    if isinstance(value, float) and not math.isfinite(value):
        return path, value
    items = value.items() if isinstance(value, Mapping) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = _non_finite(item, path + (str(key),))
        if found is not None:
            return found
    return None


def validate_arguments(tool: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> ArgumentError | None:
    """None when the arguments satisfy the schema; else the most useful single error.

    Errors are ordered so that a missing required parameter is reported before a type problem:
    that is the order in which an agent can fix them. NaN and infinities are refused whatever
    the schema says (JSON has no spelling for them, and every comparison with NaN is false, so
    a NaN amount would pass a ``amount > limit`` check and poison the state it reaches).
    """
    bad = _non_finite(dict(arguments))
    if bad is not None:
        path, value = bad
        return ArgumentError(path[0] if path else None, "invalid_value",
                             f"parameter '{'.'.join(path)}' of {tool} must be a finite number, got {value}")
    validator = _validator(canonical_json(dict(schema)))
    errors = list(validator.iter_errors(dict(arguments)))
    if not errors:
        return None
    rank = {"required": 0, "additionalProperties": 1, "type": 2, "enum": 3}
    errors.sort(key=lambda e: (rank.get(e.validator, 9), list(map(str, e.absolute_path))))
    return _describe(errors[0], tool)
