import json

import pytest

from seal_envs.core.calls import FormatError, format_calls_hermes, parse_action
from seal_envs.core.types import ToolCall


def test_json_object():
    p = parse_action('{"name": "get_balance", "arguments": {"account_id": "ACC-1"}}')
    assert p.calls == (ToolCall("get_balance", {"account_id": "ACC-1"}),) and p.text == ""


def test_json_list_parallel_and_parameters_alias():
    p = parse_action('[{"name": "a", "arguments": {}}, {"name": "b", "parameters": {"x": 1}}]')
    assert [c.name for c in p.calls] == ["a", "b"] and p.calls[1].arguments == {"x": 1}


def test_hermes_blocks_keep_text():
    text = 'Let me check.\n<tool_call>{"name": "a", "arguments": {"x": 1}}</tool_call>\n<tool_call>{"name": "b", "arguments": "{\\"y\\": 2}"}</tool_call>'
    p = parse_action(text)
    assert [c.name for c in p.calls] == ["a", "b"] and p.calls[1].arguments == {"y": 2}
    assert p.text == "Let me check."


def test_openai_message_dict():
    msg = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "a", "arguments": json.dumps({"x": 1})}}]}
    assert parse_action(msg).calls == (ToolCall("a", {"x": 1}),)
    assert parse_action({"role": "assistant", "content": "hello"}).text == "hello"


def test_plain_text_is_an_answer():
    p = parse_action("Your balance is 100.")
    assert p.is_answer and p.text == "Your balance is 100."


@pytest.mark.parametrize("bad, fragment", [
    ('{"name": "a", "arguments": {', "invalid JSON"),
    ('<tool_call>{"name": "a"', "not closed"),
    ('</tool_call>', "without an opening"),
    ('{"arguments": {}}', "missing the tool 'name'"),
    ('{"name": "a", "arguments": [1]}', "must be an object"),
    ('{"name": "a", "arguments": "{oops"}', "not valid JSON"),
    ('[]', "empty list"),
    ('{"name": "a", "arguments": {}, "extra": 1}', "unexpected key"),
    ('[{"name": "a"}, 2]', "expected an object"),
])
def test_format_errors_are_precise(bad, fragment):
    with pytest.raises(FormatError, match=fragment):
        parse_action(bad)


def test_non_text_action_is_format_error():
    with pytest.raises(FormatError):
        parse_action(42)


def test_hermes_round_trip():
    calls = (ToolCall("a", {"x": "é"}), ToolCall("b", {}))
    assert parse_action(format_calls_hermes(calls)).calls == calls
