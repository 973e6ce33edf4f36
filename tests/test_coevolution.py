"""CoEvolution, the one owner of co-evolution: merged counts give the same patches everywhere;
surfaces and curriculum reach plain envs, lists of envs and vector envs alike."""

from __future__ import annotations

import gymnasium as gym
import pytest

import seal_envs  # noqa: F401
from seal_envs import CoEvolution
from seal_envs.agents import OracleAgent, run_episode
from seal_envs.core.evolver import Count, Evolver

KW = {"raise_threshold": 0.2, "fade_threshold": 0.0, "min_episodes": 1}


def infos(broken: bool, seeds=(3, 4)):
    env = gym.make("seal/ToolUse-v0")
    mutate = (lambda planned, turn, task: ['<tool_call>{"name": x</tool_call>', *planned]) if broken else None
    return [run_episode(env, OracleAgent(mutate), seed=s)[1] for s in seeds]


def test_rank_order_does_not_matter_and_state_round_trips():
    a, b = CoEvolution(KW), CoEvolution(KW)
    p0, p1 = CoEvolution.count(infos(True)), CoEvolution.count(infos(False))
    patches_a, patches_b = a.step([p0, p1]), b.step([p1, p0])
    assert patches_a == patches_b and patches_a  # format errors raise the recovery channel
    assert a.surface == b.surface and a.surface.version == len(patches_a)
    c = CoEvolution(KW)
    c.load_state_dict(a.state_dict())
    assert c.surface == a.surface and c.evolver.state_dict() == a.evolver.state_dict()


def test_apply_sets_surface_and_curriculum_weights_but_skips_frozen_envs():
    co = CoEvolution({**KW, "curriculum": True}, curriculum=True)
    co.step([CoEvolution.count(infos(True))])
    train, frozen = gym.make("seal/ToolUse-v0"), gym.make("seal/ToolUse-v0", evaluation=True)
    co.apply([train, frozen])
    assert train.unwrapped.surface == co.surface and co.surface.version > 0
    assert train.unwrapped.task_weights is not None
    assert frozen.unwrapped.surface.version == 0 and frozen.unwrapped.task_weights is None


def test_surface_is_kept_when_only_the_curriculum_runs():
    co = CoEvolution(KW, evolve_surface=False, curriculum=True)
    co.step([CoEvolution.count(infos(True))])
    assert co.surface.version == 0 and co.evolver.updates == 1


def test_counts_are_typed_and_add_up():
    finished = infos(True)
    counts = CoEvolution.count(finished)
    assert all(isinstance(k, Count) for k in counts)
    assert sum(n for k, n in counts.items() if k.kind == "episodes") == 2
    malformed = sum(lb["label"] == "format_error" for info in finished for lb in info["step_labels"])
    assert counts[Count("label", scope="format_error")] == malformed > 0
    assert CoEvolution.count(infos(True) + infos(False)) == counts + CoEvolution.count(infos(False))
    for key in counts:
        assert Count.parse(key.spelled()) == key


def test_a_plain_gymnasium_loop_evolves_through_one_object():
    """The loop a user writes: play, hand the finished infos over, give the env the new surface."""
    co = CoEvolution(Evolver(window=1, min_episodes=1, raise_threshold=0.2, fade_threshold=0.0))
    env = gym.make("seal/ToolUse-v0")
    patches = co.evolve(infos(True))
    co.apply(env)
    assert patches and env.unwrapped.surface == co.surface
    assert not hasattr(env.unwrapped, "evolve") and not hasattr(env.unwrapped, "evolver")  # envs only show


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_vector_envs_get_the_same_surface(mode):
    co = CoEvolution(KW)
    co.evolve(infos(True))
    envs = gym.make_vec("seal/ToolUse-v0", num_envs=2, vectorization_mode=mode)
    try:
        co.apply(envs)
        assert envs.get_attr("surface") == (co.surface, co.surface) and co.surface.version > 0
        evaluation = gym.make_vec("seal/ToolUse-v0", num_envs=2, vectorization_mode=mode, evaluation=True)
        co.apply(evaluation)  # evaluation copies keep the canonical surface
        assert [s.version for s in evaluation.get_attr("surface")] == [0, 0]
        evaluation.close()
    finally:
        envs.close()
