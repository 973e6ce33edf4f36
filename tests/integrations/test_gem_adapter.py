"""SEAL's ids through GEM's own API (gem-llm): episodes, vector envs keeping the final info."""

import gymnasium as gym
import pytest

gem = pytest.importorskip("gem")

import seal_envs  # noqa: E402
import seal_envs.integrations.gem as seal_gem  # noqa: E402
from seal_envs import CANONICAL, CoEvolution, SurfacePatch  # noqa: E402
from seal_envs.agents import OracleAgent, run_episode  # noqa: E402
from seal_envs.core.evolver import Count  # noqa: E402
from seal_envs.integrations import SurfaceChannel  # noqa: E402

ENV = "seal/ToolUse-Bank-v0"


def oracle(task_seed: int, env_id: str = ENV) -> tuple[str, list[str]]:
    """A task and the oracle's actions for it, played in-process: replayed through GEM they must pass."""
    _, info, actions = run_episode(gym.make(env_id), OracleAgent(), seed=task_seed)
    return info["task_id"], actions


def test_every_seal_id_is_registered_with_gem():
    from gem.envs.registration import ENV_REGISTRY

    assert set(seal_envs.registered_ids()) <= set(ENV_REGISTRY)
    assert seal_gem.register_all() == seal_envs.registered_ids(with_arguments=True)  # again: no duplicate error
    assert "seal/MCP-v0" in ENV_REGISTRY


def test_an_episode_through_gem_make_ends_with_the_record():
    task_id, actions = oracle(3)
    env = gem.make(ENV, seed=0)
    obs, info = env.reset(task_id=task_id)
    assert isinstance(obs, str) and info["task_id"] == task_id
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
    assert terminated and reward == 1.0
    assert info["seal"]["verdict"]["passed"] and info["seal"]["step_labels"] == info["step_labels"]
    assert CoEvolution.count([info["seal"]]) == CoEvolution.count([info])


def test_bad_actions_are_labelled_turns_and_seeds_pick_tasks():
    env = gem.make(ENV, seed=5, max_steps=3)
    _, first = env.reset()
    _, again = gem.make(ENV, seed=5).reset()
    assert first["task_id"] == again["task_id"]                          # the constructor seed picks the first task
    for action in (None, 3.5, {"tool": "x"}):
        _, reward, terminated, truncated, info = env.step(action)
        assert info["step_label"]["label"] == "format_error"
    assert truncated and reward == 0.0 and info["seal"]["step_labels"][0]["label"] == "format_error"


@pytest.mark.parametrize("async_mode", [False, True])
def test_a_vector_env_keeps_the_final_info_through_autoreset(async_mode):
    """GEM's SAME_STEP autoreset returns the reset's info on the last step; the reset's info
    carries the episode's last info as final_info."""
    (t0, a0), (t1, a1) = oracle(3), oracle(8)
    envs = gem.make_vec([ENV, ENV], seed=0, async_mode=async_mode)
    envs.reset()
    for env, task_id in zip(envs.envs, (t0, t1)):       # the oracle's tasks, by id
        env.reset(task_id=task_id)
    plans, finals = [list(a0), list(a1)], [None, None]
    for _ in range(max(len(a0), len(a1))):
        actions = {i: plans[i].pop(0) for i in range(2) if plans[i]}
        _, rewards, terminated, truncated, infos = envs.step(actions)
        for (i, info), done, reward in zip(zip(actions, infos), terminated | truncated, rewards):
            if done:
                assert "verdict" not in info and info["task_id"] != (t0, t1)[i]   # GEM: the new episode's info
                finals[i] = info["final_info"]
                assert reward == 1.0
    assert [f["seal"]["task_id"] for f in finals] == [t0, t1]
    assert all(f["seal"]["verdict"]["passed"] for f in finals)
    assert CoEvolution.count(f["seal"] for f in finals)[Count("episodes", "bank")] == 2


def test_gem_envs_show_the_channel_surface_at_reset(tmp_path):
    channel = SurfaceChannel(tmp_path / "s.json")
    env = gem.make(ENV, seed=0, surface_channel=tmp_path / "s.json")
    assert env.reset()[1]["surface_version"] == 0
    channel.publish(CANONICAL.apply(SurfacePatch("recovery", "format_error", 1)))
    assert env.reset()[1]["surface_version"] == 1
    test_env = gem.make(ENV, seed=0, surface_channel=tmp_path / "s.json", split="test")
    assert test_env.reset()[1]["surface_version"] == 0                   # evaluation stays canonical


def test_bfcl_ids_come_through_gem_too():
    pytest.importorskip("bfcl_eval")
    env = gem.make("seal/BFCL-MultiTurn-Base-v0", seed=0, max_steps=2)
    _, info = env.reset()
    _, again = env.reset(task_id=info["task_id"])                # a BFCL task id from a dataset row
    assert again["task_id"] == info["task_id"]
    env.step("I cannot do that.")
    *_, truncated, last = env.step("Done.")
    assert last["seal"]["task_id"] == info["task_id"] and "verdict" in last["seal"]
