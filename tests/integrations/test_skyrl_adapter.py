"""SEAL's ids through skyrl_gym's own API: one env per dataset row, per-row extras, metadata."""

import gymnasium as gym
import pytest

skyrl_gym = pytest.importorskip("skyrl_gym")

import seal_envs  # noqa: E402
import seal_envs.integrations.skyrl  # noqa: E402,F401
from seal_envs import CANONICAL, CoEvolution, SurfacePatch  # noqa: E402
from seal_envs.agents import OracleAgent, run_episode  # noqa: E402
from seal_envs.integrations import SurfaceChannel, task_row  # noqa: E402

ENV = "seal/ToolUse-Travel-v0"


def test_every_seal_id_is_registered_with_skyrl_gym():
    assert set(seal_envs.registered_ids()) <= set(skyrl_gym.registry)


def test_a_dataset_row_plays_its_task_and_the_last_metadata_is_the_record():
    _, info, actions = run_episode(gym.make(ENV), OracleAgent(), seed=11)
    row = task_row(ENV, info["task_id"])
    env = skyrl_gym.make(row["env_class"], env_config={"reward_mode": "progress"}, extras=row)
    chat, meta = env.init(row["prompt"])
    assert chat == row["prompt"] and meta["task_id"] == info["task_id"]
    outputs = [env.step(a) for a in actions]
    assert [o["done"] for o in outputs] == [False] * (len(actions) - 1) + [True]
    assert all(o["observations"] and {m["role"] for m in o["observations"]} <= {"tool", "user"} for o in outputs[:-1])
    last = outputs[-1]
    assert last["reward"] == 1.0 and last["metadata"]["verdict"]["passed"]
    assert last["metadata"]["step_labels"] == info["step_labels"]
    assert CoEvolution.count([last["metadata"]]) == CoEvolution.count([info])
    assert env.get_metrics() == {"success": 1.0, "progress": 1.0, "official_progress": 1.0,
                                 "steps": len(actions), "format_errors": 0}
    assert env.step("again")["done"]                                       # after the end: answered, not raised


def test_bad_actions_are_labelled_turns_and_max_turns_bounds_the_episode():
    env = skyrl_gym.make(ENV, env_config={}, extras={"extra_info": {"seed": 2}, "max_turns": 2})
    env.init([])
    first = env.step(12345)
    assert first["metadata"]["step_label"]["label"] == "format_error" and not first["done"]
    last = env.step('<tool_call>{"name": "nope"')
    assert last["done"] and last["metadata"]["step_labels"][1]["label"] == "format_error"
    assert env.get_metrics()["format_errors"] == 2 and env.get_metrics()["success"] == 0.0


def test_env_config_surface_channel_reaches_every_init(tmp_path):
    SurfaceChannel(tmp_path / "s.json").publish(CANONICAL.apply(SurfacePatch("constraint", "book_flight", 2)))
    config = {"surface_channel": str(tmp_path / "s.json")}
    env = skyrl_gym.make(ENV, env_config=config, extras={"seed": 0})
    chat, _ = env.init([])
    assert env.env.unwrapped.surface.version == 1 and "Policies you must follow" in chat[0]["content"]
    held_out = skyrl_gym.make(ENV, env_config={**config, "split": "test"}, extras={"seed": 0})
    held_out.init([])
    assert held_out.env.unwrapped.surface.version == 0
