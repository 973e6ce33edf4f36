"""The verifiers v1 environment (verifiers 0.4.0) played against a local OpenAI-compatible server
that serves the shipped default agent, with the subprocess runtime (no sandbox, no uv)."""

from __future__ import annotations

import asyncio

import pytest

vf = pytest.importorskip("verifiers.v1")
pytest.importorskip("transformers")

from default_agent import ChatServer, StandInChannel  # noqa: E402

from seal_envs.testing import fully_patched_surface  # noqa: E402


@pytest.fixture(scope="module")
def server():
    s = ChatServer()
    yield s
    s.close()


def make_env(**taskset):
    from verifiers.v1.utils.loaders import environment_class

    from seal_envs.integrations.verifiers import SealEnv

    cls = environment_class("seal-verifiers")  # what vf-eval resolves from the taskset id
    assert cls is SealEnv
    from seal_envs.integrations.verifiers import SealEnvConfig

    config = SealEnvConfig.model_validate({
        "taskset": {"id": "seal-verifiers", "env_kwargs": {"domains": ["bank"], "max_steps": 2}, **taskset},
        "player": {"runtime": {"type": "subprocess"}, "max_turns": 14}})
    return cls(config)


def play(env, tasks, server, channel=None):
    from verifiers.v1.clients import ModelContext
    from verifiers.v1.configs.client import EvalClientConfig

    env.channel = channel
    ctx = ModelContext(model="default", client=EvalClientConfig(base_url=server.url, api_key_var="SEAL_TEST_KEY"))

    async def main():
        async with env.serving():
            return [await env.run_episode(t, ctx) for t in tasks]

    return asyncio.run(main())


def test_tasks_play_to_a_verdict_on_the_channels_surface_and_bad_rows_are_failed_episodes(server, monkeypatch):
    monkeypatch.setenv("SEAL_TEST_KEY", "local")
    from seal_envs.integrations.verifiers import SealData, SealTask

    assert [t.data.info["task_id"] for t in make_env(split="test", count=2).taskset] == \
        ["bank/test/d1/100000", "bank/test/d2/100001"]
    env = make_env(split="train", count=1)  # each turn relaunches the chat program: keep episodes short
    channel = StandInChannel()
    version = channel.publish(fully_patched_surface(["get_balance", "transfer"]))
    bad = SealTask(SealData(name="bad", info={"env_id": "seal/ToolUse-v0", "task_id": "bank/train/d9/x"}),
                   env.taskset.config.task)
    good, failed = play(env, [next(iter(env.taskset)), bad], server, channel)
    assert not good.errors and not failed.errors, (good.errors, failed.errors)
    record = good.traces[0].info["seal"]
    assert record["task_id"] == "bank/train/d1/0" and record["surface_version"] == version
    assert "verdict" in record and record["steps"] == len(record["step_labels"]) == 2  # max_steps
    assert good.traces[0].reward == record["reward"]
    opening = server.requests[0]["messages"]
    assert opening[0]["role"] == "system" and "Tools (one JSON schema per line)" in opening[0]["content"]
    assert opening[1]["role"] == "user" and len(server.requests) == 3  # two actions, then the failed row's turn
    assert "row_error" in failed.traces[0].info["seal"] and failed.traces[0].reward == 0.0
