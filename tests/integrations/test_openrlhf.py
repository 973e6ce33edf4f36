"""The OpenRLHF agent (0.11.2, ``pip install --no-deps openrlhf aiohttp pylatexenc``) playing SEAL
episodes through OpenRLHF's own MultiTurnAgentExecutor loop, with a fake vLLM engine backed by
the shipped default agent."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("openrlhf.utils.agent")
pytest.importorskip("transformers")

from default_agent import ENV_KWARGS, PASSED, StandInChannel, generate, load  # noqa: E402

from seal_envs.testing import fully_patched_surface  # noqa: E402
from seal_envs.integrations import openrlhf as seal_openrlhf  # noqa: E402


class FakeEngine:
    """vLLM's ``AsyncLLMEngine.generate`` as OpenRLHF calls it, answered by the default agent."""

    def __init__(self, garbage: bool = False) -> None:
        self.prompts: list[list[int]] = []
        self.garbage = garbage

    async def generate(self, prompt_token_ids, sampling_params, multi_modal_data=None):
        _, tokenizer = load()
        self.prompts.append(list(prompt_token_ids))
        ids = tokenizer("{not a call", add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id] \
            if self.garbage else generate(prompt_token_ids, min(64, sampling_params.max_tokens))
        text = tokenizer.decode(ids, skip_special_tokens=True)
        finish = "stop" if ids and ids[-1] == tokenizer.eos_token_id else "length"
        return SimpleNamespace(outputs=[SimpleNamespace(token_ids=ids, text=text, finish_reason=finish, logprobs=None)])


@pytest.fixture(autouse=True)
def settings():
    seal_openrlhf.configure(env_kwargs=ENV_KWARGS, weighting={"mode": "step"})
    yield
    seal_openrlhf.SETTINGS.update(env_kwargs={}, channel=None, weighting=None)


def load_agent_file(tmp_path: Path):
    """OpenRLHF's ``_load_agent_executor`` (which imports ray and vllm, absent on CPU): the same steps."""
    path = tmp_path / "seal_agent.py"
    path.write_text("from seal_envs.integrations.openrlhf import AgentExecutor  # noqa: F401\n")
    spec = importlib.util.spec_from_file_location("agent_module", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    from openrlhf.utils.agent import AgentExecutorBase

    assert issubclass(module.AgentExecutor, AgentExecutorBase)
    return module.AgentExecutor()


def run(executor, label, engine=None, max_length=4096):
    _, tokenizer = load()
    params = SimpleNamespace(max_tokens=None, logprobs=None)
    return asyncio.run(executor.execute("ignored prompt", label, params, max_length, tokenizer, engine or FakeEngine()))


@pytest.mark.slow
def test_the_agent_file_plays_a_multi_turn_episode_through_openrlhfs_executor(tmp_path):
    executor = load_agent_file(tmp_path)
    task = next(t for t in PASSED if "/d3/" in t)
    engine = FakeEngine()
    out = run(executor, task, engine)
    record = out["seal"]
    assert record["task_id"] == task and record["verdict"]["passed"] and out["reward"] == 1.0
    assert len(out["action_ranges"]) == record["steps"] == len(engine.prompts) >= 2
    assert out["extra_logs"] == {"seal_passed": 1.0, "seal_progress": 1.0, "seal_steps": float(record["steps"]),
                                 "seal_format_errors": 0.0}
    # each generation continued exactly the token stream OpenRLHF trains on
    for (start, _), prompt in zip(out["action_ranges"], engine.prompts):
        assert out["observation_tokens"][:start] == prompt
    _, tokenizer = load()
    first = tokenizer.decode(out["observation_tokens"][: out["action_ranges"][0][0]])
    assert "# Tools" in first and first.endswith("<|assistant|>")  # the env's prompt, chat-templated
    weights = out["seal_token_weights"]
    assert len(weights) == len(out["observation_tokens"])
    inside = {i for s, e in out["action_ranges"] for i in range(s, e)}
    assert all(w == 0 for i, w in enumerate(weights) if i not in inside) and all(weights[i] > 0 for i in inside)


@pytest.mark.slow
def test_labels_pick_the_task_and_bad_ones_are_failed_episodes(tmp_path):
    executor = load_agent_file(tmp_path)
    by_json = run(executor, json.dumps({"task_id": PASSED[0], "env_id": "seal/ToolUse-v0"}))
    assert by_json["seal"]["task_id"] == PASSED[0]
    by_seed = run(executor, "5")
    assert by_seed["seal"]["task_id"] == run(executor, "5")["seal"]["task_id"]  # a seed picks the same task
    for label in ("bank/test/d9/none", "", "{broken", '{"seed": -1}', '{"env_id": "CartPole-v1"}'):
        out = run(executor, label)
        assert out["reward"] == 0.0 and "row_error" in out["seal"], label


def test_bad_output_is_a_labelled_turn_and_the_budget_ends_a_verified_episode(tmp_path):
    executor = load_agent_file(tmp_path)
    out = run(executor, PASSED[0], FakeEngine(garbage=True))
    assert {lb["label"] for lb in out["seal"]["step_labels"]} == {"format_error"}
    assert out["extra_logs"]["seal_format_errors"] == out["seal"]["steps"] > 0
    short = run(executor, PASSED[1], max_length=600)
    assert "verdict" in short["seal"] and len(short["observation_tokens"]) <= 600 + 64


def test_training_envs_show_the_channels_surface(tmp_path):
    channel = StandInChannel()
    assert channel.publish(fully_patched_surface(["get_balance", "transfer"])) > 0
    seal_openrlhf.configure(surface_channel=channel)
    executor = load_agent_file(tmp_path)
    train = run(executor, json.dumps({"split": "train", "index": 0}))
    assert train["seal"]["surface_version"] == channel.surface.version and channel.reads == 1
    assert run(executor, PASSED[0])["seal"]["surface_version"] == 0  # test tasks stay canonical
