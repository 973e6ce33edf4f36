"""MultiTurnRollout: lockstep generate calls, token layout, budgets, template deltas."""

from __future__ import annotations

import re

import gymnasium as gym
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import seal_envs  # noqa: E402,F401
from seal_helpers import ScriptedPolicy, small_model  # noqa: E402
from seal_trl.play.chat import ChatRenderer  # noqa: E402
from seal_trl.play.rollout import MultiTurnRollout, end_episode  # noqa: E402


def play(tok, n=6, seeds=None, **kwargs):
    policy = ScriptedPolicy(tok)
    rollout = MultiTurnRollout(tok, policy, **{"max_episode_steps": 8, "max_new_tokens": 96, **kwargs})
    policy.rollout = rollout
    envs = [gym.make("seal/ToolUse-v0", max_steps=8) for _ in range(n)]
    results = rollout.run(envs, seeds or [3, 3, 3, 4, 4, 4][:n])
    return rollout, policy, envs, results


def test_one_generate_call_per_turn_for_all_active_episodes(tok):
    rollout, policy, _, results = play(tok)
    turns = [r.num_steps for r in results]
    assert max(turns) >= 2 and len(set(turns)) > 1  # multi-turn episodes of different lengths
    assert policy.calls == max(turns) == rollout.last_stats["generate_calls"]
    # call k serves exactly the episodes that still run at turn k
    assert policy.batch_sizes == [sum(t > k for t in turns) for k in range(max(turns))]
    assert sum(policy.batch_sizes) == sum(turns)  # one call per episode per turn would make this many calls


def test_tokens_are_the_rendered_conversation_with_model_and_env_parts(tok):
    _, _, envs, results = play(tok)
    for env, res in zip(envs, results):
        assert len(res.completion_ids) == len(res.env_mask) == len(res.step_index)
        assert res.env_mask == [int(t >= 0) for t in res.step_index]
        assert sorted(set(res.step_index) - {-1}) == list(range(res.num_steps))
        assert len(res.step_labels) == res.num_steps and "verdict" in res.info
        # prompt + completion is exactly the template rendering of the whole conversation
        rendered = tok.apply_chat_template(res.info["messages"], tools=res.info["tools"], tokenize=False)
        assert tok.decode(res.prompt_ids + res.completion_ids) == rendered
        model_text = tok.decode([t for t, m in zip(res.completion_ids, res.env_mask) if m])
        assert "<|tool|>" not in model_text and "<|user|>" not in model_text
    passed = [r.passed for r in results]
    assert passed == [True, True, False, True, True, False]  # oracle, format error then oracle, give up


def test_token_budget_ends_the_episode_with_a_diagnosis(tok):
    _, _, _, results = play(tok, n=3, seeds=[3, 3, 3], max_completion_length=40)
    for res in results:
        assert len(res.completion_ids) <= 40
        assert res.info["step_labels"] and "verdict" in res.info
    assert any(r.budget_truncated for r in results)
    assert all(not r.passed for r in results if r.budget_truncated)


def test_end_episode_runs_the_verifier(tok):
    env = gym.make("seal/ToolUse-v0")
    env.reset(seed=3)
    env.step("<tool_call>{\"name\": \"nope\", \"arguments\": {}}</tool_call>")
    reward, info = end_episode(env)
    assert reward == 0.0 and not info["verdict"]["passed"]
    assert len(info["step_labels"]) == 1 and info["step_labels"][0]["label"] == "unknown_tool"


def test_real_model_rollout_counts_calls(tok):
    model = small_model(tok)
    rollout = MultiTurnRollout(tok, model, max_episode_steps=2, max_new_tokens=4, max_completion_length=32)
    envs = [gym.make("seal/ToolUse-v0", max_steps=2) for _ in range(2)]
    results = rollout.run(envs, [1, 1])
    assert rollout.generate_calls == max(r.num_steps for r in results)
    assert all(len(r.completion_ids) <= 32 and r.info["step_labels"] for r in results)
    assert results[0].logprobs is None


class CharTokenizer:
    """A character-level stand-in for a Qwen3-like template: turns end with ``<E>`` and a newline,
    and ``<think>...</think>`` is dropped from every assistant message but the last one, so the
    rendering is not prefix-stable."""

    eos_token = "<E>"
    eos_token_id = 0

    def apply_chat_template(self, messages, tools=None, tokenize=False, add_generation_prompt=False):
        parts = []
        for i, m in enumerate(messages):
            content = m.get("content") or ""
            if m["role"] == "assistant" and i < len(messages) - 1:
                content = re.sub(r"<think>.*?</think>", "", content)
            parts.append(f"<{m['role']}>{content}<E>\n")
        return "".join(parts) + ("<assistant>" if add_generation_prompt else "")

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [ord(c) for c in text]}


def test_delta_starts_after_the_end_token_and_falls_back_when_not_prefix_stable():
    renderer = ChatRenderer(CharTokenizer())
    history = [{"role": "user", "content": "hi"}]
    new = [{"role": "tool", "content": "42"}]
    plain = renderer.delta_ids(history, {"role": "assistant", "content": "call"}, new, None)
    assert "".join(map(chr, plain)) == "\n<tool>42<E>\n<assistant>"  # the newline was never generated
    assert renderer.fallbacks["token"] == 1
    thinking = renderer.delta_ids(history, {"role": "assistant", "content": "<think>hmm</think>call"}, new, None)
    assert thinking == plain and renderer.fallbacks["messages"] == 1


class ToolsChangeEnv(gym.Env):
    """Two actions; a tool appears after the first (like a tool that only shows at a later turn)."""

    observation_space = action_space = gym.spaces.Text(64)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.messages = [{"role": "user", "content": "go"}]
        self.tools = [{"type": "function", "function": {"name": "a", "parameters": {}}}]
        return "", {"new_messages": list(self.messages), "tools": list(self.tools)}

    def step(self, action):
        new = [{"role": "assistant", "content": action}, {"role": "user", "content": "more"}]
        self.messages += new
        done = len(self.messages) > 3
        info = {"new_messages": new}  # the env contract: what changed, and tools only when they did
        if not done:
            self.tools = self.tools + [{"type": "function", "function": {"name": "b", "parameters": {}}}]
            info["tools"] = list(self.tools)
        if done:
            info |= {"verdict": {"passed": True}, "step_labels": [{"label": "ok"}, {"label": "ok"}]}
        return "", float(done), done, False, info


def test_a_changed_tool_list_is_announced_in_the_env_tokens(tok):
    said = tok("ok", add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    rollout = MultiTurnRollout(tok, lambda prompts, n: [said for _ in prompts], max_episode_steps=4, max_new_tokens=8)
    (res,) = rollout.run([ToolsChangeEnv()], [0])
    env_text = tok.decode([t for t, m in zip(res.completion_ids, res.env_mask) if not m])
    assert "The available tools changed" in env_text and '"name": "b"' in env_text
    assert res.num_steps == 2 and res.passed and rollout.generate_calls == 2


def test_delta_is_the_token_suffix_for_a_prefix_stable_template(tok):
    renderer = ChatRenderer(tok)
    history = [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}]
    assistant = {"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": "get_balance", "arguments": "{\"account_id\": \"ACC-1\"}"}}]}
    new = [{"role": "tool", "content": "{\"balance\": 3}"}, {"role": "user", "content": "thanks"}]
    delta = renderer.delta_ids(history, assistant, new, None)
    assert tok.decode(delta) == '<|tool|>{"balance": 3}<|end|><|user|>thanks<|end|><|assistant|>'
    assert renderer.fallbacks["token"] == 1


def test_chat_templates_render_the_read_only_tools_as_plain_copies():
    """info["tools"] holds the env's shared read-only schemas; a chat template renders them
    character for character as it renders plain copies (the shipped agent's and the tiny one)."""
    from seal_envs.core.frozen import thaw
    from seal_trl.agent.tiny import load_model_and_tokenizer

    env = gym.make("seal/ToolUse-v0")
    for name in ("default", "tiny"):
        _, tok = load_model_and_tokenizer(name)
        for seed in range(5):
            _, info = env.reset(seed=seed)
            shared = tok.apply_chat_template(info["new_messages"], tools=info["tools"], tokenize=False)
            assert shared == tok.apply_chat_template(info["new_messages"], tools=thaw(info["tools"]), tokenize=False)
            assert all(t["function"]["name"] in shared for t in info["tools"])  # the tools reached the prompt
