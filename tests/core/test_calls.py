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


def _circular():
    d = {"role": "assistant", "tool_calls": [{"function": {"name": "a", "arguments": {}}}]}
    d["tool_calls"][0]["function"]["arguments"]["me"] = d
    return d


def _deep(k):
    v = 1
    for _ in range(k):
        v = {"a": v}
    return v


@pytest.mark.parametrize("bad, fragment", [
    ('{"name": "a", "arguments": {"x": ' + "9" * 5000 + "}}", "number is too long"),
    ('{"name": "a", "arguments": {"x": ' + str(2**300) + "}}", "larger than 256 bits"),
    ('[{"name": "a", "arguments": {"x": ' + "[" * 3000 + "]" * 3000 + "}}]", "nested deeper"),
    ('{"name": "a", "arguments": ' + json.dumps(_deep(40)) + "}", "nested deeper than 32"),
    ("x" * 8193, "limit is 8192"),
    (json.dumps([{"name": "a", "arguments": {}}] * 65), "limit is 64"),
    ('<tool_call>{"name": "a", "arguments": {}}</tool_call>' * 65, "limit is 64"),
    ({"role": "assistant", "content": None, 1: 2}, "keys must be strings"),
    ({"tool_calls": [{"name": "a", "arguments": {"x": {1, 2}}}]}, "set is not JSON data"),
    ({"tool_calls": [{"name": "a", "arguments": {"x": b"raw"}}]}, "bytes is not JSON data"),
    ({"tool_calls": [{"name": "a", "arguments": {"x": (1, 2)}}]}, "tuple is not JSON data"),
    ({"tool_calls": [{"name": "a", "arguments": {"x": 10**5000}}]}, "larger than 256 bits"),
    ({"tool_calls": [{"name": "a", "arguments": '{"x": ' + "9" * 5000 + "}"}]}, "number is too long"),
    ({"tool_calls": [{"name": "a", "arguments": _deep(5000)}]}, "nested deeper"),
    ({"content": "x" * 9000}, "larger than 8192"),
    (_circular(), "nested deeper"),
])
def test_out_of_bounds_and_non_json_actions_are_format_errors(bad, fragment):
    """Every limit and every non-JSON value is a FormatError, never ValueError, TypeError or
    RecursionError escaping from json, str(int) or a recursive walk."""
    with pytest.raises(FormatError, match=fragment):
        parse_action(bad)


def test_values_at_the_limits_parse():
    edge = {"x": 2**256 - 1, "deep": _deep(30), "nan": float("nan")}
    p = parse_action({"tool_calls": [{"name": "a", "arguments": edge}]})
    assert p.calls[0].arguments["x"] == 2**256 - 1  # NaN parses: validation refuses it (schema_violation)
    assert len(parse_action(json.dumps([{"name": "a", "arguments": {}}] * 64)).calls) == 64


def test_bare_call_dict_and_list_of_them_are_calls():
    """The dict most tool-calling code builds is a call, never an empty message (issue 20)."""
    call = {"name": "a", "arguments": {"x": 1}}
    assert parse_action(call) == parse_action(json.dumps(call))
    assert parse_action(call).calls == (ToolCall("a", {"x": 1}),)
    assert parse_action({"name": "a", "arguments": '{"x": 1}'}).calls == (ToolCall("a", {"x": 1}),)
    assert parse_action([call, {"name": "b", "parameters": {}}]).calls == (ToolCall("a", {"x": 1}), ToolCall("b", {}))
    entry = {"id": "c1", "type": "function", "function": {"name": "a", "arguments": "{}"}}
    assert parse_action(entry).calls == (ToolCall("a", {}),)
    assert parse_action([entry]).calls == (ToolCall("a", {}),)


@pytest.mark.parametrize("bad, fragment", [
    ({"foo": 1}, "neither a call nor a message"),
    ({}, "neither a call nor a message"),
    ({"arguments": {}}, "neither a call nor a message"),
    ({"role": "user", "content": "hi"}, "role 'assistant'"),
    ({"role": "assistant", "content": "x", "tool_call": []}, "unexpected key"),
    ({"role": "assistant", "function_call": {"name": "a", "arguments": "{}"}}, "tool_calls"),
    ({"name": "a", "arguments": {}, "extra": 1}, "unexpected key"),
    ([], "empty list of calls"),
    ([{"name": "a", "arguments": {}}, 2], "expected an object"),
    (("a",), "got tuple"),
    (None, "got NoneType"),
    (42, "got int"),
    (b"hi", "got bytes"),
])
def test_other_dicts_and_types_name_the_accepted_shapes(bad, fragment):
    with pytest.raises(FormatError, match=fragment) as e:
        parse_action(bad)
    if fragment.startswith(("neither", "got")):
        assert "a call dict" in str(e.value) and "assistant message dict" in str(e.value)


def _blocks_by_regex(action: str):
    """The lazy regex the block walk replaced (issue 16): the reference for its behaviour."""
    import re

    pattern = re.compile(r"<tool_call>(.*?)(</tool_call>|$)", re.DOTALL)
    found = list(pattern.finditer(action))
    unclosed = bool(found) and not found[-1].group(2)
    bodies = [m.group(1) for m in (found[:-1] if unclosed else found)]
    return bodies, unclosed, None if unclosed else pattern.sub("", action)


def test_tool_call_blocks_split_text_as_the_old_regex_did():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from seal_envs.core.calls import _tool_call_blocks

    pieces = st.sampled_from(["<tool_call>", "</tool_call>", "{}", " ", "\n", "a", "<tool", "call>", "</", "x\n"])

    @settings(max_examples=400, deadline=None, derandomize=True)
    @given(st.lists(pieces, max_size=12))
    def check(parts):
        action = "".join(parts)
        bodies, unclosed, outside = _tool_call_blocks(action)
        ref_bodies, ref_unclosed, ref_outside = _blocks_by_regex(action)
        assert (bodies, unclosed) == (ref_bodies, ref_unclosed)
        if not unclosed:
            assert outside == ref_outside

    check()


@pytest.mark.parametrize("action, error", [
    ('<tool_call>{"name": "a", "arguments": {}}</tool_call> <tool_call>{"name": "b"', "block 1 is not closed"),
    ('<tool_call>{"name": "a", "arguments": {}}\n', "block 0 is not closed"),
    ('<tool_call>{"name": "a", "arguments": </tool_call><tool_call>', "block 0"),  # the parse error comes first
])
def test_unclosed_and_broken_blocks_are_named_by_index(action, error):
    with pytest.raises(FormatError, match=error):
        parse_action(action)


def test_text_around_blocks_is_kept_in_order():
    parsed = parse_action('Sure. <tool_call>{"name": "a", "arguments": {}}</tool_call> Then <tool_call>'
                          '{"name": "b", "arguments": {"x": 1}}</tool_call> done.')
    assert [c.name for c in parsed.calls] == ["a", "b"] and parsed.text == "Sure.  Then  done."


def _outcome(action):
    try:
        return parse_action(action)
    except FormatError as e:
        return f"FormatError: {e}"


def test_json_the_limits_cannot_reach_skips_the_walk_and_parses_the_same(monkeypatch):
    """``within_limits`` lets JSON that cannot break a limit skip the walk that enforces them:
    every action, near each limit and past it, parses to the same calls or the same error as it
    does when every value is walked."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from seal_envs.core import calls

    deep = '{"name": "f", "arguments": {"a": ' + "[" * 31 + "1" + "]" * 31 + "}}"
    deeper = '{"name": "f", "arguments": {"a": ' + "[" * 40 + "1" + "]" * 40 + "}}"
    edge = [deep, deeper, '{"name": "f", "arguments": {"n": ' + "9" * 77 + "}}",
            '{"name": "f", "arguments": {"n": ' + "9" * 80 + "}}", '{"name": "f", "arguments": {"s": "\\ud800"}}',
            '{"name": "f", "arguments": {"s": "caf\\u00e9"}}', '{"name": "f", "arguments": {"s": "café"}}',
            '{"name": "f", "arguments": "{\\"x\\": [1, 2]}"}', '[{"name": "f", "arguments": {}}, {"name": "g"}]',
            '{"name": "f", "arguments": {"s": "' + "x" * 5000 + '"}}', '{"name": "f", "arguments": [1]}']
    scalars = st.one_of(st.integers(-(10 ** 90), 10 ** 90), st.floats(allow_nan=False), st.booleans(), st.none(),
                        st.text(max_size=8))
    values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                          max_leaves=12)

    def both(text):
        fast = _outcome(text)
        with monkeypatch.context() as m:
            m.setattr(calls, "within_limits", lambda t: False)
            walked = _outcome(text)
        assert fast == walked, text
        return fast

    for text in edge:
        for action in (text, f"<tool_call>{text}</tool_call>"):
            both(action)
    assert not isinstance(both(deep), str) and "nested deeper" in both(deeper)
    assert "256 bits" in both(edge[3]) and "surrogate" in both(edge[4])

    @settings(max_examples=300, deadline=None, derandomize=True)
    @given(st.dictionaries(st.text(max_size=4), values, max_size=4))
    def any_arguments(arguments):
        both(f"<tool_call>{json.dumps({'name': 'f', 'arguments': arguments}, ensure_ascii=False)}</tool_call>")
        both(json.dumps({"name": "f", "arguments": arguments}))

    any_arguments()


def test_a_calls_dict_is_its_canonical_json_read_back():
    """``ToolCall.to_dict`` skips the JSON round trip for flat arguments; nested or not, it gives
    what reading back the canonical spelling gives: keys sorted at every level, plain types."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from seal_envs.core.types import canonical_json

    scalars = st.one_of(st.integers(), st.floats(), st.booleans(), st.none(), st.text(max_size=6))
    values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
                          max_leaves=8)

    @settings(max_examples=300, deadline=None, derandomize=True)
    @given(st.dictionaries(st.text(max_size=4), values, max_size=5))
    def same(arguments):
        d = ToolCall("f", arguments).to_dict()
        expected = {"name": "f", "arguments": json.loads(canonical_json(arguments))}
        assert json.dumps(d) == json.dumps(expected)  # nan-safe, order-sensitive
        assert list(d["arguments"]) == sorted(arguments)
        assert d["arguments"] is not arguments

    same()


def test_text_json_spells_values_as_json_dumps_without_ascii_escapes():
    """``text_json`` reuses one encoder; what a transcript shows must stay ``json.dumps(v,
    ensure_ascii=False)`` for every value, including non-ASCII text, NaN and nested data."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from seal_envs.core.types import text_json

    scalars = st.one_of(st.integers(), st.floats(), st.booleans(), st.none(), st.text(max_size=6))
    values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
                          max_leaves=8)

    @settings(max_examples=300, deadline=None, derandomize=True)
    @given(values)
    def same(value):
        assert text_json(value) == json.dumps(value, ensure_ascii=False)

    same()
    assert text_json({"city": "Zürich"}) == '{"city": "Zürich"}'
