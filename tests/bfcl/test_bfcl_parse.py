"""BFCL's Python call syntax: parsed with ast, literals only, positional arguments named."""

import pytest

from seal_envs.bfcl.parse import PyCall, parse_bfcl_action, parse_python_calls, to_tool_call
from seal_envs.core.calls import FormatError
from seal_envs.core.types import ToolCall

SIGS = {"sort": ("file_name",), "mv": ("source", "destination"), "ls": ("a",)}


def test_single_call_and_list_of_calls():
    assert parse_python_calls("cd(folder='document')") == [PyCall("cd", (), {"folder": "document"})]
    calls = parse_python_calls("[cd(folder='a'), ls(a=True), mv(source='x', destination=\"y\")]")
    assert [c.name for c in calls] == ["cd", "ls", "mv"]
    assert calls[1].kwargs == {"a": True}


def test_literals():
    (call,) = parse_python_calls("f(a=-1, b=+2.5, c=None, d=[1, (2, 3)], e={'k': [True]}, g='x(y)')")
    assert call.kwargs == {"a": -1, "b": 2.5, "c": None, "d": [1, [2, 3]], "e": {"k": [True]}, "g": "x(y)"}


def test_code_fence_and_empty_list():
    assert parse_python_calls("```python\n[pwd()]\n```") == [PyCall("pwd")]
    assert parse_python_calls("[]") == []


@pytest.mark.parametrize("text", ["Done.", "The file is moved.", "42", "Sure (I think) it works", "", "hello"])
def test_prose_is_not_a_call(text):
    assert parse_python_calls(text) is None


@pytest.mark.parametrize("text", [
    "cd(folder=x)", "cd(folder=open('f'))", "os.system('ls')", "cd(folder='a' + 'b')",
    "cd(**{'folder': 'a'})", "cd(*['a'])", "ls(a=true)", "f(a={[1]: 2})", "cd(folder='a', folder='b')",
])
def test_non_literal_call_syntax_is_a_format_error(text):
    with pytest.raises(FormatError):
        parse_python_calls(text)


def test_positional_arguments_follow_the_signature():
    assert to_tool_call(PyCall("sort", ("r.pdf",)), SIGS) == ToolCall("sort", {"file_name": "r.pdf"})
    assert to_tool_call(PyCall("mv", ("a",), {"destination": "b"}), SIGS) == ToolCall("mv", {"source": "a", "destination": "b"})
    with pytest.raises(FormatError, match="at most 1"):
        to_tool_call(PyCall("sort", ("a", "b")), SIGS)
    with pytest.raises(FormatError, match="both by position and by name"):
        to_tool_call(PyCall("sort", ("a",), {"file_name": "b"}), SIGS)
    assert to_tool_call(PyCall("nope", (1,)), SIGS) == ToolCall("nope", {"_0": 1})


def test_every_core_format_still_parses():
    hermes = '<tool_call>{"name": "sort", "arguments": {"file_name": "a"}}</tool_call>'
    assert parse_bfcl_action(hermes, SIGS).calls == (ToolCall("sort", {"file_name": "a"}),)
    assert parse_bfcl_action('{"name": "ls", "arguments": {}}', SIGS).calls == (ToolCall("ls", {}),)
    assert parse_bfcl_action("[sort('a')]", SIGS).calls == (ToolCall("sort", {"file_name": "a"}),)
    assert parse_bfcl_action("[]", SIGS).is_answer
    assert parse_bfcl_action("All done.", SIGS).text == "All done."
    with pytest.raises(FormatError):
        parse_bfcl_action('{"name": "ls", "arguments": ', SIGS)


@pytest.mark.parametrize("text, fragment", [
    ("cd(folder=0x" + "f" * 2000 + ")", "larger than 256 bits"),
    ("cd(folder=" + "-" * 2000 + "1)", "nested deeper"),
    ("cd(folder={1: 2})", "keys must be strings"),
    ("[" + ", ".join(["pwd()"] * 65) + "]", "limit is 64"),
])
def test_python_calls_past_the_limits_are_format_errors(text, fragment):
    with pytest.raises(FormatError, match=fragment):
        parse_bfcl_action(text, {"cd": ("folder",), "pwd": ()})


def test_python_infinity_parses_and_is_refused_by_validation():
    from seal_envs.bfcl.backend import BFCLBackend

    (call,) = parse_bfcl_action("power(base=1e999, exponent=2)", {}).calls
    event = BFCLBackend({"involved_classes": ["MathAPI"], "initial_config": {}}).execute(call)
    assert (event.kind, event.param) == ("schema_violation", "base")
