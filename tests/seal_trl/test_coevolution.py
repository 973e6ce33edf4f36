"""CoEvolution: merged counts give the same patches everywhere; surfaces and curriculum reach envs."""

from __future__ import annotations

import gymnasium as gym
import pytest

import seal_envs  # noqa: F401
from seal_envs.agents import OracleAgent, run_episode

pytest.importorskip("torch")

from seal_trl.coevolution import CoEvolution  # noqa: E402

KW = {"raise_threshold": 0.2, "fade_threshold": 0.0, "min_episodes": 1}


def infos(broken: bool, seeds=(3, 4)):
    env = gym.make("seal/ToolUse-v0")
    mutate = (lambda planned, turn, task: ['<tool_call>{"name": x</tool_call>', *planned]) if broken else None
    return [run_episode(env, OracleAgent(mutate), seed=s)[1] for s in seeds]


def test_rank_order_does_not_matter_and_state_round_trips():
    a, b = CoEvolution(KW), CoEvolution(KW)
    p0, p1 = CoEvolution.local_pending(infos(True)), CoEvolution.local_pending(infos(False))
    patches_a, patches_b = a.step([p0, p1]), b.step([p1, p0])
    assert patches_a == patches_b and patches_a  # format errors raise the recovery channel
    assert a.surface == b.surface and a.surface.version == len(patches_a)
    c = CoEvolution(KW)
    c.load_state_dict(a.state_dict())
    assert c.surface == a.surface and c.evolver.state_dict() == a.evolver.state_dict()


def test_apply_sets_surface_and_curriculum_weights_but_skips_frozen_envs():
    co = CoEvolution({**KW, "curriculum": True}, curriculum=True)
    co.step([CoEvolution.local_pending(infos(True))])
    train, frozen = gym.make("seal/ToolUse-v0"), gym.make("seal/ToolUse-v0", evaluation=True)
    co.apply([train, frozen])
    assert train.unwrapped.surface == co.surface and co.surface.version > 0
    assert train.unwrapped.task_weights is not None
    assert frozen.unwrapped.surface.version == 0 and frozen.unwrapped.task_weights is None


def test_surface_is_kept_when_only_the_curriculum_runs():
    co = CoEvolution(KW, evolve_surface=False, curriculum=True)
    co.step([CoEvolution.local_pending(infos(True))])
    assert co.surface.version == 0 and co.evolver.updates == 1
