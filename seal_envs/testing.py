"""Conformance checks, public so that authors of new domains test theirs as the project does.

Each check raises ``AssertionError`` with a message that says what broke. The project's own
tests call them over the whole registry (``tests/test_registry.py``).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import warnings
from typing import Any, Iterable, Iterator

import gymnasium as gym
from gymnasium.utils.env_checker import check_env

from seal_envs.agents import OracleAgent, RandomAgent, run_episode
from seal_envs.env import END_INFO_KEYS, INFO_KEYS


def check_contract(env_id: str, seeds: Iterable[int] = (0, 1, 2), **kwargs: Any) -> None:
    """Gymnasium's checker, the documented info keys, and rewards that exist on every ending."""
    env = gym.make(env_id, **kwargs)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*render fps.*")
        check_env(env.unwrapped, skip_render_check=True)
    for seed in seeds:
        obs, info = env.reset(seed=seed)
        assert env.observation_space.contains(obs), f"{env_id}: reset observation is outside the space"
        assert set(INFO_KEYS) <= set(info), f"{env_id}: reset info lacks {set(INFO_KEYS) - set(info)}"
        for agent in (OracleAgent(), RandomAgent(seed)):
            reward, info, _ = run_episode(env, agent, seed=seed)
            missing = set(INFO_KEYS + END_INFO_KEYS) - set(info)
            assert not missing, f"{env_id}: final info lacks {missing}"
            assert len(info["turn_labels"]) == len(env.unwrapped.steps), f"{env_id}: one label per action"
            assert 0.0 <= reward <= 1.0
    short = gym.make(env_id, max_steps=1, **kwargs)
    _, info = short.reset(seed=0)
    _, reward, terminated, truncated, info = short.step('{"name": "nope", "arguments": {}}')
    assert terminated or truncated, f"{env_id}: max_steps=1 must end the episode"
    assert "verification" in info, f"{env_id}: a truncated episode must still be verified"


def episode_digest(env_id: str, seeds: Iterable[int], agent: str = "oracle", **kwargs: Any) -> str:
    """A hash of every observation, reward and verdict of some episodes: equal digests mean
    byte-identical episodes."""
    env = gym.make(env_id, **kwargs)
    h = hashlib.sha256()
    for seed in seeds:
        bot = OracleAgent() if agent == "oracle" else RandomAgent(seed)
        bot.reset()
        obs, info = env.reset(seed=seed)
        h.update(obs.encode())
        done = False
        while not done:
            obs, reward, terminated, truncated, info = env.step(bot.act(env, info))
            h.update(obs.encode())
            done = terminated or truncated
        h.update(json.dumps([reward, info["verification"], info["turn_labels"]], sort_keys=True).encode())
    return h.hexdigest()


def check_determinism(env_id: str, seeds: Iterable[int] = range(5), **kwargs: Any) -> None:
    """The same seeds give byte-identical episodes here and in a fresh process."""
    seeds = list(seeds)
    for agent in ("oracle", "random"):
        here = episode_digest(env_id, seeds, agent, **kwargs)
        assert here == episode_digest(env_id, seeds, agent, **kwargs), f"{env_id}: not deterministic in-process"
        code = ("import seal_envs, sys; from seal_envs.testing import episode_digest; "
                f"print(episode_digest({env_id!r}, {seeds!r}, {agent!r}, **{kwargs!r}))")
        other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                               env={**os.environ, "PYTHONHASHSEED": "12345"}).stdout.strip()
        assert here == other, f"{env_id}: a fresh process gives different episodes for the same seeds"


def every_episode(env_id: str, agent_factory, splits: Iterable[str], **kwargs: Any) -> Iterator[tuple[float, dict]]:
    """``(reward, final info)`` of ``agent_factory()`` on every task of every split."""
    env = gym.make(env_id, **kwargs).unwrapped
    for split in splits:
        for index in range(len(env.task_set.with_split(split))):
            reward, info, _ = run_episode(env, agent_factory(), options={"split": split, "index": index})
            yield reward, info


def check_oracle_solves_all(env_id: str, splits: Iterable[str] = ("train", "test", "ood"), **kwargs: Any) -> int:
    """The oracle earns reward 1 with only ``ok`` labels on every task of every split."""
    played = 0
    for reward, info in every_episode(env_id, OracleAgent, splits, **kwargs):
        labels = {lb["label"] for lb in info["turn_labels"]}
        failed = [c["name"] for c in info["verification"]["checks"] if not c["passed"]]
        assert reward == 1.0 and labels == {"ok"}, (
            f"{env_id}: oracle failed {info['task_id']}: checks {failed}, labels {sorted(labels)}")
        played += 1
    return played


class DoNothingAgent:
    """Answers every user turn without calling a tool."""

    def reset(self) -> None:
        pass

    def act(self, env: gym.Env, info: dict) -> str:
        return "OK, done."


def check_do_nothing_fails(env_id: str, splits: Iterable[str] = ("train", "test", "ood"), **kwargs: Any) -> int:
    """No task may be passed by an agent that does nothing: every task needs work the verifier sees."""
    played = 0
    for reward, info in every_episode(env_id, DoNothingAgent, splits, **kwargs):
        assert reward == 0.0, f"{env_id}: {info['task_id']} passes without a single call"
        played += 1
    return played
