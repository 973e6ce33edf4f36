import pytest

from seal_envs.core.validation import validate_arguments
from seal_envs.domains.bank import BankBackend

SPEC = BankBackend.tool_specs()["set_alert"].parameters


def test_valid():
    assert validate_arguments("set_alert", SPEC, {"account_id": "A", "threshold": 5, "channel": "sms"}) is None


def test_missing_required_names_parameter():
    e = validate_arguments("set_alert", SPEC, {"account_id": "A", "channel": "sms"})
    assert (e.param, e.problem) == ("threshold", "missing_required") and "'threshold'" in e.message


def test_wrong_type_names_parameter_and_value():
    e = validate_arguments("set_alert", SPEC, {"account_id": "A", "threshold": "five", "channel": "sms"})
    assert (e.param, e.problem) == ("threshold", "wrong_type") and "integer" in e.message and '"five"' in e.message


def test_bad_enum_lists_allowed_values():
    e = validate_arguments("set_alert", SPEC, {"account_id": "A", "threshold": 5, "channel": "fax"})
    assert (e.param, e.problem) == ("channel", "bad_enum") and "'email', 'sms', 'push'" in e.message


def test_extra_argument():
    e = validate_arguments("set_alert", SPEC, {"account_id": "A", "threshold": 5, "channel": "sms", "x": 1})
    assert (e.param, e.problem) == ("x", "extra_argument")


def test_schema_generated_from_signature_and_docstring():
    spec = BankBackend.tool_specs()["get_transactions"]
    props = spec.parameters["properties"]
    assert spec.parameters["required"] == ["account_id"]
    assert props["limit"]["type"] == "integer" and "How many" in props["limit"]["description"]
    assert spec.description.startswith("Most recent transactions") and not spec.writes
    assert BankBackend.tool_specs()["transfer"].writes


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_numbers_are_schema_violations_whatever_the_schema(value):
    for schema in ({"type": "object", "properties": {"amount": {"type": "number"}}},
                   {"type": "object", "properties": {"amount": {}}},
                   {"type": "object"}):
        error = validate_arguments("transfer", schema, {"amount": value})
        assert error is not None and (error.param, error.problem) == ("amount", "invalid_value")
        assert "finite" in error.message
    nested = validate_arguments("t", {"type": "object"}, {"items": [{"price": value}]})
    assert nested.param == "items" and "items.0.price" in nested.message


def _every_schema() -> list[dict]:
    """Every tool schema of every native domain and of BFCL (if installed), the BFCL argument
    bounds, and a few hand-written shapes the tools do not use."""
    from seal_envs.domains import GENERATORS

    schemas = [s.parameters for g in GENERATORS.values() for s in g.backend.tool_specs().values()]
    try:
        from bfcl_eval.constants.executable_backend_config import MULTI_TURN_FUNC_DOC_FILE_MAPPING

        from seal_envs.bfcl.backend import ARGUMENT_LIMITS, _limits_schema, class_specs
    except ImportError:
        pass
    else:
        schemas += [s.parameters for c in MULTI_TURN_FUNC_DOC_FILE_MAPPING for s in class_specs(c).values()]
        schemas += [_limits_schema(t) for t in ARGUMENT_LIMITS]
    schemas += [
        {"type": "object", "properties": {"a": {"type": ["integer", "null"]}, "b": {"enum": [1, 2]},
                                          "c": {"type": "array", "items": {"type": "number", "exclusiveMaximum": 3}},
                                          "d": {"type": "string", "minLength": 2, "maxLength": 3}},
         "additionalProperties": {"type": "boolean"}},
        {"type": "object", "properties": {"p": {"type": "string", "pattern": "^x"}}, "required": ["p"]},
        {"properties": {"e": {"enum": ["a", 1]}, "f": {"const": 3}}},
    ]
    return schemas


def _random_value(rng, schema, depth=0):
    """Mostly values of the schema's own shape, often subtly off (1.0 for an integer, a bool for
    a number, out-of-range numbers, extra or missing keys)."""
    kinds = ["str", "int", "float", "intfloat", "bool", "none", "list", "dict"]
    t = schema.get("type") if isinstance(schema, dict) else None
    t = rng.choice(t) if isinstance(t, list) else t
    if rng.random() < 0.25 or t is None:
        kind = rng.choice(kinds)
    else:
        kind = {"string": "str", "integer": rng.choice(["int", "int", "intfloat"]), "number": rng.choice(["int", "float"]),
                "boolean": "bool", "null": "none", "array": "list", "object": "dict"}.get(t, "str")
    if isinstance(schema, dict) and "enum" in schema and rng.random() < 0.6:
        return rng.choice(schema["enum"])
    if kind == "str":
        return rng.choice(["", "x", "xy", "abc", "hello world", "A-1", "\u00e9t\u00e9"])
    if kind == "int":
        return rng.choice([-5000, -1, 0, 1, 2, 3, 7, 999, 1001, 10**20])
    if kind == "float":
        return rng.choice([-1.5, 0.0, 0.5, 2.5, 3.0, 1e300])
    if kind == "intfloat":
        return float(rng.choice([0, 1, 3, 1000]))
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "none":
        return None
    if kind == "list":
        items = schema.get("items", {}) if isinstance(schema, dict) else {}
        return [_random_value(rng, items, depth + 1) for _ in range(rng.randrange(4 if depth < 3 else 1))]
    props = schema.get("properties", {}) if isinstance(schema, dict) else {}
    out = {k: _random_value(rng, v, depth + 1) for k, v in props.items()
           if (k in schema.get("required", []) and rng.random() < 0.9) or rng.random() < 0.4}
    if rng.random() < 0.15:
        out[rng.choice(["zzz", "extra"])] = _random_value(rng, {}, depth + 1)
    return out


def test_fast_path_accepts_only_what_jsonschema_accepts():
    """The compiled fast check (issue 16) may say "valid" only where the full validator finds
    no error; on the random arguments below it must also say so for most valid ones."""
    import random

    from jsonschema import Draft202012Validator

    from seal_envs.core.validation import _fast_check

    rng = random.Random(0)
    fast_valid = full_valid = 0
    for schema in _every_schema():
        fast, full = _fast_check(schema), Draft202012Validator(schema)
        for _ in range(60):
            value = _random_value(rng, schema)
            ok = full.is_valid(value)
            if fast(value):
                assert ok, (schema, value)
                fast_valid += 1
            full_valid += ok
            if isinstance(value, dict):
                assert (validate_arguments("t", schema, value) is None) == ok, (schema, value)
    assert full_valid > 1000 and fast_valid > 0.9 * full_valid, (fast_valid, full_valid)


def test_a_schema_compiles_once():
    from seal_envs.core import validation

    validation._COMPILED.clear()
    for _ in range(3):
        validate_arguments("set_alert", SPEC, {"account_id": "A", "threshold": 5, "channel": "sms"})
        validate_arguments("set_alert", SPEC, {"account_id": "A", "channel": "sms"})
    assert list(validation._COMPILED) == [id(SPEC)]
