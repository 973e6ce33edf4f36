"""Argument validation against a tool's JSON Schema, with messages that name the parameter.

Every call is validated, so the cost matters (issue 16): a schema is compiled once per schema
object (not re-spelt as canonical JSON every call), and a call goes first through a fast check
compiled from the schema, which answers "valid" only for arguments the full validator accepts
(a subset of JSON Schema: type, enum, properties, required, additionalProperties, items and the
numeric and length bounds; anything else it leaves to the full validator). Invalid or unsure
arguments take the full ``jsonschema`` path, which alone words the error.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable

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


Check = Callable[[Any], bool]
_ANNOTATIONS = frozenset({"description", "title", "default", "examples", "$comment"})
# Exact Python types of JSON data (arguments are parsed JSON) that a JSON Schema type surely
# accepts; a float for "integer" (1.0 is one to jsonschema) is left to the full validator.
_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "integer": (int,), "number": (int, float),
                                       "boolean": (bool,), "object": (dict,), "array": (list,),
                                       "null": (type(None),)}


_BOUNDS: dict[str, Callable[[Any, Any], bool]] = {
    "minimum": lambda v, b: v >= b, "maximum": lambda v, b: v <= b,
    "exclusiveMinimum": lambda v, b: v > b, "exclusiveMaximum": lambda v, b: v < b}


def _never(value: Any) -> bool:
    return False


def _fast_check(schema: Any) -> Check:
    """A function that returns True only when ``schema`` surely accepts the value; False means
    "ask the full validator". Keywords outside the supported subset make it always say False."""
    if schema is True or (isinstance(schema, Mapping) and not set(schema) - _ANNOTATIONS):
        return lambda value: True
    if not isinstance(schema, Mapping):
        return _never
    fused = _object_check(schema)
    if fused is not None:
        return fused
    checks: list[Check] = []
    for key, want in schema.items():
        if key in _ANNOTATIONS:
            continue
        if key == "type":
            names = [want] if isinstance(want, str) else want if isinstance(want, list) else None
            if not names or any(n not in _TYPES for n in names):
                return _never
            allowed = tuple(t for n in names for t in _TYPES[n])
            checks.append(lambda v, allowed=allowed: type(v) in allowed)
        elif key == "enum":
            if not isinstance(want, list) or not want or len({type(x) for x in want}) != 1 or type(want[0]) not in (str, int):
                return _never
            kind, values = type(want[0]), frozenset(want)
            checks.append(lambda v, kind=kind, values=values: type(v) is kind and v in values)
        elif key == "properties":
            if not isinstance(want, Mapping):
                return _never
            props = {name: _fast_check(sub) for name, sub in want.items()}
            checks.append(lambda v, props=props: type(v) is not dict or all(
                props[k](x) for k, x in v.items() if k in props))
        elif key == "required":
            if not isinstance(want, list):
                return _never
            names = tuple(want)
            checks.append(lambda v, names=names: type(v) is not dict or all(n in v for n in names))
        elif key == "additionalProperties":
            known = frozenset(schema.get("properties", {})) if isinstance(schema.get("properties", {}), Mapping) else None
            if known is None or "patternProperties" in schema:
                return _never
            extra = _fast_check(want) if want is not False else None
            checks.append(lambda v, known=known, extra=extra: type(v) is not dict or all(
                k in known or (extra is not None and extra(x)) for k, x in v.items()))
        elif key == "items":
            if not isinstance(want, Mapping):
                return _never
            item = _fast_check(want)
            checks.append(lambda v, item=item: type(v) is not list or all(item(x) for x in v))
        elif key in _BOUNDS:
            if type(want) not in (int, float):
                return _never
            checks.append(lambda v, bound=want, holds=_BOUNDS[key]: type(v) not in (int, float) or holds(v, bound))
        elif key in ("minLength", "maxLength"):
            if type(want) is not int:
                return _never
            checks.append(lambda v, n=want, least=key == "minLength": type(v) is not str or (
                len(v) >= n if least else len(v) <= n))
        else:
            return _never
    if len(checks) == 1:  # the usual parameter ({"type": ...} and a description): no wrapper
        return checks[0]
    return lambda value: all(check(value) for check in checks)


_OBJECT_KEYS = frozenset({"type", "properties", "required", "additionalProperties"})


def _object_check(schema: Mapping[str, Any]) -> Check | None:
    """The usual parameters schema (an object with properties, required and
    additionalProperties) as one loop: what the per-keyword checks of :func:`_fast_check` answer
    together, without a closure and a generator per keyword (3% of a bank step's instructions).
    ``None`` for any other schema."""
    if schema.get("type") != "object" or not set(schema) - _ANNOTATIONS <= _OBJECT_KEYS:
        return None
    props, required = schema.get("properties", {}), schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if not isinstance(props, Mapping) or not isinstance(required, list):
        return None
    checks = {name: _fast_check(sub) for name, sub in props.items()}
    names = tuple(required)
    more = None if extra is False else _fast_check(extra)

    def check(value: Any) -> bool:
        if type(value) is not dict:
            return False
        for key, item in value.items():
            sub = checks.get(key)
            if sub is None:
                if more is None or not more(item):
                    return False
            elif not sub(item):
                return False
        return all(n in value for n in names)

    return check


_COMPILED: dict[int, tuple[Mapping[str, Any], Check, Draft202012Validator]] = {}


def _compiled(schema: Mapping[str, Any]) -> tuple[Mapping[str, Any], Check, Draft202012Validator]:
    """The fast check and the full validator of a schema object, made once. Keyed by identity
    (tool specs live as long as their class); the entry holds the schema, so its id cannot be
    reused while the entry is there, and the table is emptied if it ever fills."""
    entry = _COMPILED.get(id(schema))
    if entry is None or entry[0] is not schema:
        if len(_COMPILED) >= 4096:
            _COMPILED.clear()
        entry = (schema, _fast_check(schema), _validator(canonical_json(dict(schema))))
        _COMPILED[id(schema)] = entry
    return entry


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
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:  # the usual leaves, at once
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return path, value
    if kind is dict or isinstance(value, Mapping):  # the exact type skips the ABC check
        items = value.items()
    else:
        items = enumerate(value) if isinstance(value, list) else ()
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
    arguments = dict(arguments)
    bad = _non_finite(arguments)
    if bad is not None:
        path, value = bad
        return ArgumentError(path[0] if path else None, "invalid_value",
                             f"parameter '{'.'.join(path)}' of {tool} must be a finite number, got {value}")
    _, fast, validator = _compiled(schema)
    if fast(arguments):
        return None
    errors = list(validator.iter_errors(arguments))
    if not errors:
        return None
    rank = {"required": 0, "additionalProperties": 1, "type": 2, "enum": 3}
    errors.sort(key=lambda e: (rank.get(e.validator, 9), list(map(str, e.absolute_path))))
    return _describe(errors[0], tool)


def _says_integer(schema: Any) -> bool:
    kind = schema.get("type") if isinstance(schema, Mapping) else None
    return kind == "integer" or (isinstance(kind, list) and "integer" in kind and "number" not in kind)


def schema_typed(schema: Any, value: Any) -> Any:
    """``value`` (arguments that passed :func:`validate_arguments`) with every integer-valued
    float where ``schema`` says integer made an ``int``. JSON Schema counts ``2.0`` as an
    integer, so it passes validation, but a backend that slices or ranges with it fails
    (bank's ``get_transactions(limit=2.0)`` was an "internal error"): what the schema lets
    through must reach the backend as the type the schema names. Walks only as deep as the
    schema describes."""
    if type(value) is float:
        return int(value) if value.is_integer() and _says_integer(schema) else value
    if not isinstance(schema, Mapping):
        return value
    if type(value) is dict:
        props = schema.get("properties")
        if not isinstance(props, Mapping):
            return value
        return {k: schema_typed(props[k], v) if k in props else v for k, v in value.items()}
    if type(value) is list and isinstance(schema.get("items"), Mapping):
        return [schema_typed(schema["items"], v) for v in value]
    return value
