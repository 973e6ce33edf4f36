"""A value nested 10 to 100,000 levels deep, in every call format and action shape (issue 30).

Every parser on the action path must read a shallow value as a call and turn a deep one into a
``format_error`` turn, never an exception (a typed ``<parameter=...>`` value used to raise
``RecursionError`` out of ``step``, and a BFCL Python call nested past the parser read as an
answer), in bounded time. The depths are a handful, so the test takes about a second.
"""

import json
import time

import gymnasium as gym
import pytest

import seal_envs
from seal_envs.bfcl import loader
from seal_envs.core.calls import MAX_DEPTH

DEPTHS = (10, 100, 1_000, 10_000, 100_000)
STEP_SECONDS = 2.0
TOOL, PARAM = "get_transactions", "limit"  # an integer parameter: XML values are typed as JSON


def nested_text(depth: int, kind: str) -> str:
    return "[" * depth + "1" + "]" * depth if kind == "list" else '{"a": ' * depth + "1" + "}" * depth


def nested_value(depth: int, kind: str):
    value = 1
    for _ in range(depth):  # built iteratively: no recursion at any depth
        value = [value] if kind == "list" else {"a": value}
    return value


def arguments_text(depth, kind):
    return '{"account_id": "x", "%s": %s}' % (PARAM, nested_text(depth, kind))


TEXT_FORMATS = {
    "hermes": lambda d, k: '<tool_call>{"name": "%s", "arguments": %s}</tool_call>' % (TOOL, arguments_text(d, k)),
    "json_object": lambda d, k: '{"name": "%s", "arguments": %s}' % (TOOL, arguments_text(d, k)),
    "json_list": lambda d, k: '[{"name": "%s", "arguments": %s}]' % (TOOL, arguments_text(d, k)),
    "qwen3_coder": lambda d, k: (f"<tool_call>\n<function={TOOL}>\n<parameter=account_id>\nx\n</parameter>\n"
                                 f"<parameter={PARAM}>\n{nested_text(d, k)}\n</parameter>\n</function>\n</tool_call>"),
    "qwen3_coder_bare": lambda d, k: f"<function={TOOL}><parameter={PARAM}>{nested_text(d, k)}</parameter></function>",
    "function_tag": lambda d, k: f"<function={TOOL}>{arguments_text(d, k)}</function>",
    "llama3": lambda d, k: '<|python_tag|>{"name": "%s", "parameters": %s}' % (TOOL, arguments_text(d, k)),
    "mistral_v3": lambda d, k: '[TOOL_CALLS][{"name": "%s", "arguments": %s}]' % (TOOL, arguments_text(d, k)),
    "mistral_v11": lambda d, k: f"[TOOL_CALLS]{TOOL}[ARGS]{arguments_text(d, k)}",
}
DICT_SHAPES = {
    "call_dict": lambda v: {"name": TOOL, "arguments": {"account_id": "x", PARAM: v}},
    "call_dict_json_arguments": lambda v: {"name": TOOL, "arguments": json.dumps({"account_id": "x", PARAM: v})},
    "openai_entry": lambda v: {"id": "c1", "type": "function",
                               "function": {"name": TOOL, "arguments": {"account_id": "x", PARAM: v}}},
    "message": lambda v: {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": TOOL, "arguments": {"account_id": "x", PARAM: v}}}]},
    "list_of_calls": lambda v: [{"name": TOOL, "arguments": {"account_id": "x", PARAM: v}}],
}
_ENVS: dict = {}


def env_for(env_id):
    if env_id not in _ENVS:
        _ENVS[env_id] = gym.make(env_id, max_steps=4).unwrapped
    return _ENVS[env_id]


def check(env, action, depth):
    env.reset(seed=0)
    start = time.perf_counter()
    _, _, _, _, info = env.step(action)
    elapsed = time.perf_counter() - start
    assert elapsed < STEP_SECONDS, f"a step took {elapsed:.2f} s"
    label = info["step_label"]["label"]
    if depth <= MAX_DEPTH // 2:
        assert label != "format_error" and info["tool_calls"], info["step_label"]  # read as a call
    else:
        assert label == "format_error", info["step_label"]
        assert info["events"] == [] and len(env.steps) == 1


def test_every_call_format_is_covered():
    from seal_envs.core.call_formats import CALL_FORMATS

    spelled = {"hermes", "qwen3_coder", "llama3", "mistral", "function_tag"}
    assert spelled | {"chat_template"} == set(CALL_FORMATS)  # chat_template has no syntax of its own
    assert all(any(name.startswith(f) for name in TEXT_FORMATS) for f in spelled)


@pytest.mark.parametrize("kind", ["list", "object"])
@pytest.mark.parametrize("fmt", sorted(TEXT_FORMATS))
def test_text_formats_at_every_depth(fmt, kind):
    env = env_for("seal/ToolUse-Bank-v0")
    for depth in DEPTHS:
        check(env, TEXT_FORMATS[fmt](depth, kind), depth)


@pytest.mark.parametrize("kind", ["list", "object"])
@pytest.mark.parametrize("shape", sorted(DICT_SHAPES))
def test_dict_shapes_at_every_depth(shape, kind):
    env = env_for("seal/ToolUse-Bank-v0")
    for depth in DEPTHS:
        if shape == "call_dict_json_arguments" and depth > 500:  # json.dumps itself recurses
            action = {"name": TOOL, "arguments": arguments_text(depth, kind)}
        else:
            action = DICT_SHAPES[shape](nested_value(depth, kind))
        check(env, action, depth)


@pytest.mark.skipif(not loader.available(), reason="bfcl-eval is not installed")
@pytest.mark.parametrize("kind", ["list", "object", "sign"])
def test_bfcl_python_calls_at_every_depth(kind):
    env = env_for("seal/BFCL-MultiTurn-Base-v0")
    for depth in DEPTHS:
        value = ("-" * depth + "1" if kind == "sign" else
                 "[" * depth + "1" + "]" * depth if kind == "list" else "{'a': " * depth + "1" + "}" * depth)
        env.reset(seed=0)
        start = time.perf_counter()
        _, _, _, _, info = env.step(f"[ls(a={value})]")
        assert time.perf_counter() - start < STEP_SECONDS
        label = info["step_label"]["label"]
        if kind == "sign":  # one number however many signs, until the syntax tree is too deep to read
            assert label != "format_error" if depth <= 100 else label == "format_error", (depth, info["step_label"])
        elif depth <= MAX_DEPTH // 2:
            assert label != "format_error" and info["tool_calls"], info["step_label"]
        else:
            assert label == "format_error", (depth, info["step_label"])


def test_the_registered_ids_all_parse_through_these_parsers():
    """Every id's backend reads actions with ``parse_action`` (BFCL adds its Python syntax on top)."""
    for env_id in seal_envs.registered_ids():
        env = env_for(env_id)
        env.reset(seed=0)
        assert env.step("<tool_call>" + "[" * 3000 + "</tool_call>")[4]["step_label"]["label"] == "format_error"
