"""BFCL's Qwen function-calling prompt (issue 15): ``prompt_format="qwen_fc"`` and ``qwen_fc_prompt``
give, character for character, what bfcl-eval's own ``QwenFCHandler._format_prompt`` builds."""

from __future__ import annotations

import ast
import json
import pathlib

import pytest

pytest.importorskip("bfcl_eval")

import seal_envs  # noqa: E402
from seal_envs.agents import OracleAgent, run_episode  # noqa: E402
from seal_envs.bfcl.compare import format_call, ground_truth_trajectory  # noqa: E402
from seal_envs.bfcl.prompt import qwen_fc_prompt  # noqa: E402
from seal_envs.bfcl.source import BFCLTaskSet  # noqa: E402
from seal_envs.core.surface import surface_preset  # noqa: E402
from seal_envs.registration import make_bfcl_env  # noqa: E402


def bfcl_format_prompt():
    """bfcl-eval's ``QwenFCHandler._format_prompt``, read from its source: importing the handler
    pulls in its model-serving dependencies, which are not installed with --no-deps."""
    import bfcl_eval

    path = pathlib.Path(bfcl_eval.__file__).parent / "model_handler" / "local_inference" / "qwen_fc.py"
    tree = ast.parse(path.read_text())
    handler = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "QwenFCHandler")
    method = next(n for n in handler.body if isinstance(n, ast.FunctionDef) and n.name == "_format_prompt")
    method.decorator_list = []
    scope: dict = {"json": json}
    exec(compile(ast.Module(body=[method], type_ignores=[]), str(path), "exec"), scope)  # bfcl-eval's code, not model text
    return lambda messages, tools: scope["_format_prompt"](None, messages, tools)


def episode_messages(env, task):
    """Every prompt the agent sees in a ground-truth episode: the messages before each action."""
    _, info = env.reset(options={"task": task})
    prompts = [(env.unwrapped.messages, env.unwrapped.tools)]
    for calls in ground_truth_trajectory(task):
        for call in calls:
            *_, info = env.step(format_call(call))
            prompts.append((env.unwrapped.messages, env.unwrapped.tools))
        _, _, terminated, _, info = env.step("Done.")
        if not terminated:
            prompts.append((env.unwrapped.messages, env.unwrapped.tools))
    return prompts


@pytest.mark.parametrize("index", [0, 7, 60, 130, 250])
def test_prompts_equal_bfcl_evals_own(index):
    reference = bfcl_format_prompt()
    env = make_bfcl_env(split="train", prompt_format="qwen_fc").unwrapped
    task = BFCLTaskSet("train")[index]
    for messages, tools in episode_messages(env, task):
        assert messages[0]["role"] == "user"  # no system line of the env's own
        assert qwen_fc_prompt(messages, tools) == reference(messages, tools)


def test_observation_lite_note_becomes_the_system_text_before_the_tools():
    env = make_bfcl_env(split="train", prompt_format="qwen_fc", surface=surface_preset("observation_lite")).unwrapped
    _, info = env.reset(seed=0)
    assert info["new_messages"][0]["role"] == "system" and info["new_messages"][0]["content"].startswith("Observation note:")
    text = qwen_fc_prompt(info["new_messages"], info["tools"])
    assert text == bfcl_format_prompt()(info["new_messages"], info["tools"])
    assert text.index("Observation note:") < text.index("# Tools") and text.endswith("<|im_start|>assistant\n")


def test_edge_shapes_match_bfcl_eval():
    reference = bfcl_format_prompt()
    call = {"type": "function", "function": {"name": "ls", "arguments": "{}"}}
    cases = [
        [{"role": "user", "content": "hi"}],
        [{"role": "system", "content": "S"}, {"role": "user", "content": "hi"},
         {"role": "assistant", "content": "", "tool_calls": [call, call]},  # a repeated call: bfcl-eval's own newline rule
         {"role": "tool", "content": "a"}, {"role": "tool", "content": "b"},
         {"role": "assistant", "content": "<think>x</think>done"}],
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok", "tool_calls": [call]},
         {"role": "tool", "content": "r"}, {"role": "user", "content": "next"}],
    ]
    for messages in cases:
        for tools in ([], [{"type": "function", "function": {"name": "ls", "parameters": {}}}]):
            assert qwen_fc_prompt(messages, tools) == reference(messages, tools), messages


def test_the_native_envs_take_the_option_too():
    import gymnasium as gym

    env = gym.make("seal/ToolUse-Bank-v0", prompt_format="qwen_fc")
    reward, info, _ = run_episode(env, OracleAgent(), seed=1)
    assert reward == 1.0 and info["messages"][0]["role"] == "user"
    with pytest.raises(ValueError, match="prompt_format"):
        gym.make("seal/ToolUse-Bank-v0", prompt_format="llama")
    assert seal_envs  # registered
