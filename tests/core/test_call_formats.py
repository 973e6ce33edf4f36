"""Tool calls in the formats of the main open model families: read into calls, spelled back, and
call-like text that does not parse is a format error, never a plain answer (issue 18)."""

import gymnasium as gym
import pytest

import seal_envs  # noqa: F401
from seal_envs.agents import OracleAgent, run_episode
from seal_envs.core.call_formats import CALL_FORMATS, CALL_MARKER_TOKENS
from seal_envs.core.calls import FormatError, parse_action
from seal_envs.core.types import ToolCall

BALANCE = ToolCall("get_balance", {"account_id": "ACC-1001"})
TRANSFER = ToolCall("transfer", {"from_account": "ACC-1001", "to_account": "ACC-1002", "amount": 25.5})
SCHEMAS = {"transfer": {"properties": {"from_account": {"type": "string"}, "to_account": {"type": "string"},
                                       "amount": {"type": "number"}}},
           "get_balance": {"properties": {"account_id": {"type": "string"}}}}

NATIVE = [  # (family, text the model writes, the calls, the text kept before them)
    ("llama3", '<|python_tag|>{"name": "get_balance", "parameters": {"account_id": "ACC-1001"}}', [BALANCE], ""),
    ("llama3 parallel", '<|python_tag|>{"name": "get_balance", "parameters": {"account_id": "ACC-1001"}}; '
     '{"name": "transfer", "parameters": {"from_account": "ACC-1001", "to_account": "ACC-1002", "amount": 25.5}}',
     [BALANCE, TRANSFER], ""),
    ("mistral v3", '[TOOL_CALLS][{"name": "get_balance", "arguments": {"account_id": "ACC-1001"}}]', [BALANCE], ""),
    ("mistral v11", '[TOOL_CALLS]get_balance[ARGS]{"account_id": "ACC-1001"}[TOOL_CALLS]transfer[CALL_ID]a1b2c3d4e'
     '[ARGS]{"from_account": "ACC-1001", "to_account": "ACC-1002", "amount": 25.5}', [BALANCE, TRANSFER], ""),
    ("function tag", 'I will check.<function=get_balance>{"account_id": "ACC-1001"}</function>', [BALANCE],
     "I will check."),
    ("qwen3-coder", "<tool_call>\n<function=transfer>\n<parameter=from_account>\nACC-1001\n</parameter>\n"
     "<parameter=to_account>\nACC-1002\n</parameter>\n<parameter=amount>\n25.5\n</parameter>\n</function>\n"
     "</tool_call>", [TRANSFER], ""),
    ("hermes", '<tool_call>{"name": "get_balance", "arguments": {"account_id": "ACC-1001"}}</tool_call>', [BALANCE], ""),
]


@pytest.mark.parametrize("family, text, calls, before", NATIVE, ids=[n[0] for n in NATIVE])
def test_each_family_reads_as_calls(family, text, calls, before):
    parsed = parse_action(text, SCHEMAS)
    assert list(parsed.calls) == calls and parsed.text == before


def test_xml_values_are_typed_by_the_schema_and_stay_text_without_one():
    text = NATIVE[5][1]
    assert parse_action(text, SCHEMAS).calls[0].arguments["amount"] == 25.5
    assert parse_action(text).calls[0].arguments["amount"] == "25.5"  # no schema: the text the model wrote
    string_id = '<function=get_balance><parameter=account_id>1001</parameter></function>'
    assert parse_action(string_id, SCHEMAS).calls[0].arguments["account_id"] == "1001"  # a string stays a string


@pytest.mark.parametrize("text", [
    '<|python_tag|>{"name": "get_balance", "parameters": ',          # cut off
    "<|python_tag|>",                                                  # nothing after the tag
    "[TOOL_CALLS]get_balance",                                         # no [ARGS]
    '[TOOL_CALLS]get_balance[ARGS]{"account_id": "A"}{"x": 1}',        # two argument objects
    "[TOOL_CALLS][{'name': 'get_balance'}]",                           # Python, not JSON
    "<function=get_balance>{account_id: 1}</function>",                # not JSON
    "<function=get_balance>{}",                                        # not closed
    "<tool_call><function=transfer><parameter=amount>5</function></tool_call>",  # parameter not closed
    "<function=transfer>amount=5</function>",                          # neither JSON nor parameters
    '<|python_tag|>{"parameters": {}}',                                # no name
], ids=lambda t: t[:40])
def test_call_like_text_that_does_not_parse_is_a_format_error(text):
    with pytest.raises(FormatError):
        parse_action(text, SCHEMAS)


@pytest.mark.parametrize("name", [n for n, f in CALL_FORMATS.items() if f.spell is not None])
def test_every_spelling_reads_back(name):
    spelled = CALL_FORMATS[name].spell([BALANCE, TRANSFER])
    assert list(parse_action(spelled, SCHEMAS).calls) == [BALANCE, TRANSFER]


@pytest.mark.parametrize("name", [n for n, f in CALL_FORMATS.items() if f.spell is not None])
def test_the_oracle_in_every_format_solves_tasks(name):
    """End to end through env.step: the backend types XML values by its own tool schemas."""
    env = gym.make("seal/ToolUse-v0", call_format=name)
    for seed in range(12):
        reward, info, _ = run_episode(env, OracleAgent(call_format=name), seed=seed)
        assert reward == 1.0 and {lb["label"] for lb in info["step_labels"]} == {"ok"}, (name, seed)


def test_the_prompt_and_the_feedback_ask_for_the_format_in_use():
    for name, fmt in CALL_FORMATS.items():
        env = gym.make("seal/ToolUse-Bank-v0", call_format=name)
        _, info = env.reset(seed=0)
        assert fmt.instruction in info["new_messages"][0]["content"]
        for other in CALL_FORMATS.values():
            if other.name != name:
                assert other.instruction not in info["new_messages"][0]["content"]
        env.unwrapped.surface = env.unwrapped.surface.apply(seal_envs.SurfacePatch("recovery", "format_error", 1, "t"))
        _, _, _, _, info = env.step("<|python_tag|>{")
        assert info["step_label"]["label"] == "format_error" and env.unwrapped.messages[-1]["content"].endswith(fmt.example)
    with pytest.raises(ValueError, match="unknown call format"):
        gym.make("seal/ToolUse-v0", call_format="xml")


def test_marker_tokens_name_every_family_marker():
    assert {"<|python_tag|>", "[TOOL_CALLS]", "[ARGS]"} <= set(CALL_MARKER_TOKENS)
