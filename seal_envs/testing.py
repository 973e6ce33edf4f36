"""Conformance checks, public so that authors of new domains test theirs as the project does.

Each check raises ``AssertionError`` with a message that says what broke. The project's own
tests call them over the whole registry (``tests/test_registry.py``).

:func:`check_surface_invariance` holds a domain to the promise the whole design rests on: a
surface changes what the agent is shown, never what the tools do, the state, the reward or the
verdict. A domain passes it by rendering only through the ``Surface`` (never reading it in a
backend, generator or verifier).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import warnings
from typing import Any, Iterable, Iterator, Mapping

import gymnasium as gym
from gymnasium.utils.env_checker import check_env

from seal_envs.agents import OracleAgent, RandomAgent, run_episode
from seal_envs.core.surface import MAX_LEVEL, Surface, SurfacePatch
from seal_envs.core.types import ERROR_KINDS, ToolCall, canonical_json
from seal_envs.env import CHANGED_INFO_KEYS, END_INFO_KEYS, INFO_KEYS


def check_contract(env_id: str, seeds: Iterable[int] = (0, 1, 2), **kwargs: Any) -> None:
    """Gymnasium's checker, the documented info keys, and rewards that exist on every ending."""
    env = gym.make(env_id, **kwargs)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*render fps.*")
        check_env(env.unwrapped, skip_render_check=True)
    for seed in seeds:
        obs, info = env.reset(seed=seed)
        assert env.observation_space.contains(obs), f"{env_id}: reset observation is outside the space"
        assert set(info) == {*INFO_KEYS, *CHANGED_INFO_KEYS}, f"{env_id}: reset info keys {sorted(info)}"
        for agent in (OracleAgent(), RandomAgent(seed)):
            _, info = env.reset(seed=seed)
            agent.reset()
            done = False
            while not done:
                _, reward, terminated, truncated, info = env.step(agent.act(env, info))
                done = terminated or truncated
                expected = {*INFO_KEYS, *END_INFO_KEYS} if done else set(INFO_KEYS)
                assert set(info) - set(CHANGED_INFO_KEYS) == expected - set(CHANGED_INFO_KEYS), (
                    f"{env_id}: info keys {sorted(info)}, documented {sorted(expected)}")
            assert len(info["step_labels"]) == len(env.unwrapped.steps), f"{env_id}: one label per action"
            assert 0.0 <= reward <= 1.0
    short = gym.make(env_id, max_steps=1, **kwargs)
    _, info = short.reset(seed=0)
    _, reward, terminated, truncated, info = short.step('{"name": "nope", "arguments": {}}')
    assert terminated or truncated, f"{env_id}: max_steps=1 must end the episode"
    assert "verdict" in info, f"{env_id}: a truncated episode must still be verified"


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
        h.update(json.dumps([reward, info["verdict"], info["step_labels"]], sort_keys=True).encode())
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
        labels = {lb["label"] for lb in info["step_labels"]}
        failed = [c["name"] for c in info["verdict"]["checks"] if not c["passed"]]
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


# -- surface invariance --------------------------------------------------------------------
#: What a surface may change: the text shown (observations, rendered messages and tools) and
#: what the info says of the surface itself. Every other key of every ``info`` must be identical.
SURFACE_KEYS = ("messages", "new_messages", "tools", "surface_version", "surface_canonical")


def fully_patched_surface(tools: Iterable[str]) -> Surface:
    """The surface that changes the most text: the observation-lite preset under every channel
    at its top level for each of ``tools`` and for every error kind."""
    patches = [SurfacePatch(channel, name, MAX_LEVEL[channel]) for name in sorted(tools)
               for channel in ("affordance", "constraint")]
    patches += [SurfacePatch("recovery", kind, MAX_LEVEL["recovery"]) for kind in ERROR_KINDS]
    return Surface(preset="observation_lite").apply_all(patches)


def _stumble(planned: list, turn: int, task: Any) -> list:
    """The reference plan with an error before each call (a cut call, an unknown tool, a call
    without arguments), so the recovery channel renders every kind of feedback it can."""
    out: list = []
    for k, action in enumerate(planned):
        if isinstance(action, ToolCall):
            out.append(('<tool_call>{"name": "' + action.name + '"', ToolCall(action.name + "s", action.arguments),
                        ToolCall(action.name, {}))[k % 3])
        out.append(action)
    return out


def _semantics(info: Mapping[str, Any], state: Any) -> str:
    return canonical_json({"info": {k: v for k, v in info.items() if k not in SURFACE_KEYS}, "state": state})


def check_surface_invariance(env_id: str, seeds: Iterable[int] = (0, 1, 2), **kwargs: Any) -> int:
    """The same actions played under the canonical surface and under :func:`fully_patched_surface`
    give identical tool calls, results, events, states, labels, rewards and verdicts after every
    step; only the observation, the rendered ``messages`` and ``tools``, ``surface_version`` and
    ``surface_canonical`` may differ. Three agents per seed: the oracle, a random agent and an
    oracle that stumbles (every error kind's feedback). ``env_id`` must make a train env (an evaluation env refuses a
    patched surface by design). Returns the number of steps compared."""
    compared = 0
    canonical = gym.make(env_id, **kwargs)
    for seed in seeds:
        for agent in (OracleAgent(), RandomAgent(seed), OracleAgent(mutate=_stumble)):
            agent.reset()
            shown, info = canonical.reset(seed=seed)
            base = canonical.unwrapped
            patched = gym.make(env_id, surface=fully_patched_surface(base.specs), **kwargs)
            shown_p, other = patched.reset(seed=seed)
            where = f"{env_id} seed {seed} {type(agent).__name__}"
            assert shown != shown_p, f"{where}: the patched surface changed nothing shown (did it reach the env?)"
            done = False
            while not done:
                assert _semantics(info, base.backend.comparable_state()) == _semantics(
                    other, patched.unwrapped.backend.comparable_state()), (
                    f"{where}, step {compared}: the surface changed what happened, not only what is shown")
                action = agent.act(canonical, info)
                _, reward, terminated, truncated, info = canonical.step(action)
                _, reward_p, terminated_p, truncated_p, other = patched.step(action)
                assert (reward, terminated, truncated) == (reward_p, terminated_p, truncated_p), (
                    f"{where}, step {compared}: reward or ending differs under the patched surface")
                compared += 1
                done = terminated or truncated
            assert _semantics(info, base.backend.comparable_state()) == _semantics(
                other, patched.unwrapped.backend.comparable_state()), f"{where}: the final verdict or labels differ"
            patched.close()
    canonical.close()
    return compared
