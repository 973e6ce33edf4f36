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
